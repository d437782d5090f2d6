"""The benchmark harness (bench/sfbench.py): event parsing and tables, on recorded
ansible-runner events (bench/samples/). No cluster, no timing assertions."""

import copy
import importlib.util
import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HARNESS = ROOT / "bench" / "sfbench.py"
SAMPLE = ROOT / "bench" / "samples" / "events-two-hosts.json"

# bench/ is not part of the built collection (galaxy.yml build_ignore).
pytestmark = pytest.mark.skipif(not HARNESS.exists(), reason="bench/ is not in this tree (built collection)")


@pytest.fixture(scope="module")
def sfbench():
    spec = importlib.util.spec_from_file_location("sparkfleet_bench", HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(name="events")
def fixture_events():
    return json.loads(SAMPLE.read_text())


def _by_name(timings):
    return {t.name: t for t in timings}


def test_one_timing_per_task_in_run_order(sfbench, events):
    timings = sfbench.parse_events(events)
    assert [t.name for t in timings] == [
        "Sample | A loop of three items.",
        "Sample | A changed task.",
        "Sample | A skipped task.",
        "Sample | A slow task.",
    ]
    assert all(t.hosts == 2 for t in timings)


def test_statuses_and_items(sfbench, events):
    timings = _by_name(sfbench.parse_events(events))
    assert timings["Sample | A loop of three items."].items == 6  # 3 items x 2 hosts
    assert timings["Sample | A loop of three items."].status == {"ok": 2}
    assert timings["Sample | A changed task."].status == {"changed": 2}
    assert timings["Sample | A skipped task."].status == {"skipped": 2}
    assert timings["Sample | A slow task."].items == 0


def test_wall_spans_the_hosts_and_host_seconds_sum_their_durations(sfbench, events):
    slow = _by_name(sfbench.parse_events(events))["Sample | A slow task."]
    # Recorded: h1 02:06:53.588230 -> 02:06:54.885292 (1.297062 s), h2 .604009 -> .560594 (0.956585 s).
    assert slow.wall == pytest.approx(54.885292 - 53.588230, abs=1e-6)
    assert slow.host_seconds == pytest.approx(1.297062 + 0.956585, abs=1e-6)


def test_events_out_of_order_give_the_same_result(sfbench, events):
    forward = sfbench.parse_events(events)
    backward = sfbench.parse_events(list(reversed(events)))
    assert [(t.name, t.wall, t.host_seconds, t.items) for t in forward] == \
           [(t.name, t.wall, t.host_seconds, t.items) for t in backward]


def test_unreachable_and_failed_results_are_counted(sfbench, events):
    extra = copy.deepcopy([e for e in events if e["event"] == "runner_on_ok"][-1])
    extra.update(event="runner_on_unreachable", counter=1000)
    extra["event_data"]["host"] = "h3"
    failed = copy.deepcopy(extra)
    failed.update(event="runner_on_failed", counter=1001)
    failed["event_data"]["host"] = "h4"
    slow = _by_name(sfbench.parse_events(events + [extra, failed]))["Sample | A slow task."]
    assert slow.status == {"ok": 2, "unreachable": 1, "failed": 1}
    assert slow.hosts == 4


def test_role_tasks_are_labelled_like_profile_tasks(sfbench):
    assert sfbench.task_label({"task": "Common | Install base packages.", "role": "common"}) == \
        "common : Common | Install base packages."
    assert sfbench.task_label({"task": "Lab | Go.", "role": "common",
                               "resolved_role": "sparkfleet.cluster.common"}) == "sparkfleet.cluster.common : Lab | Go."
    assert sfbench.task_label({"task_action": "ansible.builtin.setup"}) == "ansible.builtin.setup"


def test_recap(sfbench, events):
    # Ansible's recap counts changed results as ok too: 3 per host.
    assert sfbench.run_stats(events) == {"ok": 6, "changed": 2, "failures": 0, "dark": 0, "skipped": 2,
                                         "rescued": 0, "ignored": 0}
    assert sfbench.run_stats([]) == {}


def test_figures_table_has_ratios(sfbench):
    table = sfbench.figures_table([
        {"size": 2, "figure": "noop", "tuned": 20.0, "baseline": 50.0, "tasks": 80},
        {"size": 4, "figure": "cold", "tuned": 100.0, "baseline": None},
    ]).splitlines()
    assert table[0].startswith("| workers | figure | tuned s | baseline s | baseline/tuned")
    assert table[2] == "| 2 | noop | 20.0 | 50.0 | 2.50x | 80 | - |  |"
    assert table[3] == "| 4 | cold | 100.0 | - | - | - | - |  |"
    with_cpu = sfbench.figures_table([{"size": 2, "figure": "noop", "tuned": 20.0, "baseline": 40.0, "tasks": 80,
                                       "cpu": (31.25, 12.0)}]).splitlines()
    assert with_cpu[2] == "| 2 | noop | 20.0 | 40.0 | 2.00x | 80 | 31.2 / 12.0 |  |"


def test_figures_table_has_mitogen_columns_only_when_measured(sfbench):
    table = sfbench.figures_table([
        {"size": 2, "figure": "noop", "tuned": 20.0, "baseline": 50.0, "mitogen": 10.0, "tasks": 80},
        {"size": 2, "figure": "replace", "tuned": 30.0, "baseline": 45.0, "mitogen": None, "tasks": 90},
    ]).splitlines()
    assert table[0].startswith("| workers | figure | tuned s | baseline s | baseline/tuned | mitogen s | baseline/mitogen |")
    assert table[1].count("|") == table[0].count("|")
    assert table[2] == "| 2 | noop | 20.0 | 50.0 | 2.50x | 10.0 | 5.00x | 80 | - |  |"
    assert table[3] == "| 2 | replace | 30.0 | 45.0 | 1.50x | - | - | 90 | - |  |"


def test_cgroup_cpu_is_read_from_v2_or_v1(sfbench, tmp_path):
    v2 = tmp_path / "v2" / "system.slice" / "docker-abc.scope"
    v2.mkdir(parents=True)
    (v2 / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\n")
    assert sfbench._cgroup_cpu_seconds("abc", tmp_path / "v2") == pytest.approx(2.5)
    v1 = tmp_path / "v1" / "cpuacct" / "docker" / "abc"
    v1.mkdir(parents=True)
    (v1 / "cpuacct.usage").write_text("1500000000\n")
    assert sfbench._cgroup_cpu_seconds("abc", tmp_path / "v1") == pytest.approx(1.5)
    assert sfbench._cgroup_cpu_seconds("abc", tmp_path / "none") is None


def test_hosts_cpu_counts_a_recreated_container_from_its_start(sfbench):
    before = {"m": ("id-m", 10.0), "w1": ("id-w1", 5.0), "w2": ("id-old", 7.0)}
    after = {"m": ("id-m", 12.5), "w1": ("id-w1", 6.0), "w2": ("id-new", 3.0)}
    assert sfbench.hosts_cpu_used(before, after) == pytest.approx(2.5 + 1.0 + 3.0)
    assert sfbench.hosts_cpu_used(before, {}) is None


def test_tasks_table_lists_the_costliest_first(sfbench, events):
    lines = sfbench.tasks_table(sfbench.parse_events(events), count=2).splitlines()
    assert len(lines) == 4
    assert lines[2].startswith("| Sample | A loop of three items. | 3.7")
    assert lines[3].startswith("| Sample | A slow task. | 1.30 | 2.25 | 2 | 0 | ok 2 |")


def test_cost_groups_cover_every_task(sfbench, events):
    timings = sfbench.parse_events(events)
    groups = sfbench.group_costs(timings)
    assert set(groups) == {"loops", "other tasks"}
    assert sum(groups.values()) == pytest.approx(sum(t.wall for t in timings))


def test_baseline_is_plain_ansible_defaults(sfbench):
    assert sfbench.BASELINE_ENV["ANSIBLE_PIPELINING"] == "False"
    assert sfbench.BASELINE_ENV["ANSIBLE_FORKS"] == "5"
    assert sfbench.BASELINE_ENV["ANSIBLE_STRATEGY"] == "linear"
    assert sfbench.BASELINE_ENV["ANSIBLE_CACHE_PLUGIN"] == "memory"


def test_arguments(sfbench):
    args = sfbench.parse_args(["2", "--figures", "noop,replace"])
    assert args.sizes == [2] and args.figures == ["noop", "replace"]
    assert sfbench.parse_args([]).sizes == [2, 4]
    with pytest.raises(SystemExit):
        sfbench.parse_args(["--figures", "warp"])
    with pytest.raises(SystemExit):
        sfbench.parse_args(["0"])


def test_scaling_lines_compare_each_size_with_the_smallest(sfbench):
    rows = [{"size": 2, "figure": "noop", "tuned": 20.0}, {"size": 8, "figure": "noop", "tuned": 26.0},
            {"size": 2, "figure": "replace", "tuned": 50.0}]
    assert sfbench.scaling_lines(rows) == ["Scaling, noop (tuned): 8 workers 1.30x the time at 2", ""]
    assert sfbench.scaling_lines(rows[:1]) == []
