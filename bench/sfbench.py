"""sparkfleet benchmark harness: lab clusters of 1 master + N workers, timed through ansible-runner.

For each size N it runs, once with the project's tuned configuration (ansible.cfg) and once with
plain Ansible defaults (environment overrides only: no pipelining, no fact cache, implicit
gathering, forks 5, linear strategy, Ansible's default ssh_args):

  cold     fresh containers (playbooks/lab.yml), then site.yml
  noop     site.yml again (nothing should change)
  replace  one worker container killed, then playbooks/replace_worker.yml -e worker=<it>
           (recreate, converge, wait until the master lists it ALIVE)

Per-task times come from ansible-runner's events. Figures, not assertions: nothing here fails
on a slow run. `bench/run --help` for the options; bench/README.md for the method.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
import os
import pathlib
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work"
RESULTS = ROOT / "bench" / "results"
FIGURES = ("cold", "noop", "replace")
RESULT_EVENTS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_skipped": "skipped",
    "runner_on_unreachable": "unreachable",
}
# Plain Ansible defaults, set through the environment (which beats ansible.cfg), so the
# baseline runs the same playbooks with the same configuration file.
BASELINE_ENV = {
    "ANSIBLE_PIPELINING": "False",
    "ANSIBLE_FORKS": "5",
    "ANSIBLE_STRATEGY": "linear",
    "ANSIBLE_GATHERING": "implicit",
    "ANSIBLE_CACHE_PLUGIN": "memory",
    "ANSIBLE_SSH_ARGS": "-C -o ControlMaster=auto -o ControlPersist=60s",
}


# --------------------------------------------------------------------------- event parsing
@dataclasses.dataclass
class TaskTiming:
    """One task of one run: wall time across hosts and the hosts' summed time."""

    play: str
    name: str
    first_start: float
    last_end: float
    host_seconds: float = 0.0
    hosts: int = 0
    items: int = 0
    status: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    @property
    def wall(self) -> float:
        return max(0.0, self.last_end - self.first_start)


def _ts(value) -> float | None:
    """ansible-runner's ISO timestamps ('2026-11-23T02:03:41.123456') as epoch seconds."""
    if not value:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).replace("Z", "+00:00")
    parsed = datetime.datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()


def task_label(event_data: dict) -> str:
    """'role : task' as profile_tasks prints it (the bare task name outside roles)."""
    task = event_data.get("task") or event_data.get("task_action") or "?"
    role = event_data.get("resolved_role") or event_data.get("role")
    return f"{role} : {task}" if role else str(task)


def parse_events(events) -> list[TaskTiming]:
    """Per-task timings from ansible-runner events (dicts as the runner's event handler or
    artifacts/<ident>/job_events/*.json give them), in the order the tasks first ran."""
    tasks: dict[tuple, TaskTiming] = {}
    for event in sorted(events, key=lambda e: e.get("counter", 0)):
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        if kind in RESULT_EVENTS or kind.startswith("runner_item_on_"):
            key = (data.get("play_uuid"), data.get("task_uuid"))
            start = _ts(data.get("start")) or _ts(event.get("created"))
            end = _ts(data.get("end")) or _ts(event.get("created"))
            timing = tasks.get(key)
            if timing is None:
                timing = tasks[key] = TaskTiming(play=data.get("play", ""), name=task_label(data),
                                                 first_start=start, last_end=end)
            if kind.startswith("runner_item_on_"):
                timing.items += 1
                continue
            timing.first_start = min(timing.first_start, start)
            timing.last_end = max(timing.last_end, end)
            duration = data.get("duration")
            timing.host_seconds += float(duration) if duration is not None else max(0.0, end - start)
            timing.hosts += 1
            status = RESULT_EVENTS[kind]
            if status == "ok" and (data.get("res") or {}).get("changed"):
                status = "changed"
            timing.status[status] += 1
    return list(tasks.values())


def run_stats(events) -> dict:
    """The play recap (playbook_on_stats): per-status host counts summed over hosts."""
    for event in events:
        if event.get("event") == "playbook_on_stats":
            data = event.get("event_data") or {}
            return {key: sum((data.get(key) or {}).values()) for key in
                    ("ok", "changed", "failures", "dark", "skipped", "rescued", "ignored")}
    return {}


def top_tasks(timings, count=15):
    """The tasks that cost the most wall time."""
    return sorted(timings, key=lambda t: t.wall, reverse=True)[:count]


def group_costs(timings) -> dict:
    """Wall seconds by kind of work: fact gathering, package queries/installs, loops, the
    rest; the answer to 'where does the time go'."""
    groups = collections.Counter()
    for timing in timings:
        name = timing.name.lower()
        if "gather" in name or "facts" in name:
            kind = "facts"
        elif "apt" in name or "package" in name or "openjdk" in name or "install" in name:
            kind = "packages"
        elif timing.items:
            kind = "loops"
        else:
            kind = "other tasks"
        groups[kind] += timing.wall
    return dict(groups)


# --------------------------------------------------------------------------- CPU accounting
def controller_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: ansible-playbook and its
    forks, waited for by ansible-runner."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cgroup_cpu_seconds(container_id: str, root: pathlib.Path = pathlib.Path("/sys/fs/cgroup")) -> float | None:
    """CPU seconds a container's cgroup used so far (cgroup v2 cpu.stat, or v1 cpuacct.usage)."""
    for path in (root / "system.slice" / f"docker-{container_id}.scope" / "cpu.stat",
                 root / "docker" / container_id / "cpu.stat"):
        if path.exists():
            for line in path.read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    v1 = root / "cpuacct" / "docker" / container_id / "cpuacct.usage"
    if v1.exists():
        return int(v1.read_text()) / 1e9
    return None


def hosts_cpu(names) -> dict:
    """{container name: (id, CPU seconds)} of the lab's containers that exist."""
    out = {}
    for name in names:
        done = subprocess.run(["docker", "inspect", "--format", "{{.Id}}", name], capture_output=True, text=True,
                              check=False)
        if done.returncode == 0:
            cid = done.stdout.strip()
            used = _cgroup_cpu_seconds(cid)
            if used is not None:
                out[name] = (cid, used)
    return out


def hosts_cpu_used(before: dict, after: dict) -> float | None:
    """CPU seconds the hosts used between two readings; a container recreated in between (a
    replacement) counts from its start."""
    if not after:
        return None
    total = 0.0
    for name, (cid, used) in after.items():
        earlier = before.get(name)
        total += used - (earlier[1] if earlier and earlier[0] == cid else 0.0)
    return total


# --------------------------------------------------------------------------- tables
def ratio(baseline, tuned) -> str:
    if not baseline or not tuned:
        return "-"
    return f"{baseline / tuned:.2f}x"


def seconds(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def figures_table(rows) -> str:
    """rows: dicts with size, figure, tuned, baseline (seconds or None), and optional notes; with
    `--mitogen` also mitogen (seconds), which adds its columns. A Markdown table (it reads as plain
    text too)."""
    mitogen = any("mitogen" in row for row in rows)
    head = "| workers | figure | tuned s | baseline s | baseline/tuned "
    rule = "|---:|---|---:|---:|---:"
    if mitogen:
        head += "| mitogen s | baseline/mitogen "
        rule += "|---:|---:"
    lines = [head + "| tasks (tuned) | CPU s tuned: controller / hosts | notes |", rule + "|---:|---:|---|"]
    for row in rows:
        cpu = row.get("cpu")
        cpu_text = f"{seconds(cpu[0])} / {seconds(cpu[1])}" if cpu else "-"
        line = (f"| {row['size']} | {row['figure']} | {seconds(row.get('tuned'))} | "
                f"{seconds(row.get('baseline'))} | {ratio(row.get('baseline'), row.get('tuned'))} | ")
        if mitogen:
            line += f"{seconds(row.get('mitogen'))} | {ratio(row.get('baseline'), row.get('mitogen'))} | "
        lines.append(line + f"{row.get('tasks', '-')} | {cpu_text} | {row.get('notes', '')} |")
    return "\n".join(lines)


def tasks_table(timings, count=15) -> str:
    lines = ["| task | wall s | host-sum s | hosts | items | status |", "|---|---:|---:|---:|---:|---|"]
    for timing in top_tasks(timings, count):
        status = ", ".join(f"{k} {v}" for k, v in sorted(timing.status.items()))
        lines.append(f"| {timing.name} | {timing.wall:.2f} | {timing.host_seconds:.2f} | {timing.hosts} | "
                     f"{timing.items} | {status} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- running
@dataclasses.dataclass
class Run:
    seconds: float
    status: str
    rc: int
    timings: list
    stats: dict
    # CPU seconds: the controller (ansible-playbook and its forks) and the lab's hosts (their
    # containers' cgroups: on a lab machine they share the controller's cores).
    controller_cpu: float | None = None
    hosts_cpu: float | None = None


class Bench:
    def __init__(self, args):
        self.args = args
        self.verbose = args.verbose
        self.fact_cache = ROOT / ".cache" / "facts"

    def log(self, message):
        print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)

    def inventory_dir(self, size) -> pathlib.Path:
        if self.args.existing:
            return pathlib.Path(self.args.existing).resolve()
        return WORK / f"lab-{size}" / "inventory"

    def config_env(self, config) -> dict:
        env = {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FORCE_COLOR": "0",
               # ansible-runner replaces the stdout callback; keep the table callback.
               "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"}
        if config == "baseline" and self.args.baseline == "ansible":
            env.update(BASELINE_ENV)
        elif config == "mitogen":
            import ansible_mitogen  # noqa: F401  pylint: disable=import-outside-toplevel,import-error
            env["ANSIBLE_STRATEGY_PLUGINS"] = str(pathlib.Path(ansible_mitogen.__file__).parent / "plugins" / "strategy")
            env["ANSIBLE_STRATEGY"] = "mitogen_linear"
        return env

    def playbook(self, config, playbook, size, extra=(), label=""):
        """Run one playbook through ansible-runner; returns a Run with the per-task timings."""
        import ansible_runner  # pylint: disable=import-outside-toplevel,import-error

        # A private data dir per run: ansible-runner keeps the arguments it was given in
        # <dir>/env/ (cmdline, envvars) and would read a previous run's --limit back.
        (WORK / "runner").mkdir(parents=True, exist_ok=True)
        private = pathlib.Path(tempfile.mkdtemp(prefix=re.sub(r"\W+", "-", f"{label or 'run'}-{config}-{size}") + "-", dir=WORK / "runner"))
        if config == "baseline" and self.args.baseline == "every-role":
            # The tuned configuration with the applied-state gate off: every role runs on every host.
            extra = list(extra) + ["-e", "sparkfleet_skip_unchanged=false"]
        cmdline = " ".join(shlex.quote(str(a)) for a in extra)
        kwargs = {
            "private_data_dir": str(private),
            "project_dir": str(ROOT),
            "playbook": str(ROOT / playbook),
            "inventory": str(self.inventory_dir(size)),
            "envvars": self.config_env(config),
            "cmdline": cmdline,
            "quiet": not self.verbose,
        }
        if config == "baseline":
            kwargs["fact_cache_type"] = "memory"
        else:
            # Absolute: ansible-runner would otherwise point jsonfile at its artifacts.
            kwargs["fact_cache_type"] = "jsonfile"
            kwargs["fact_cache"] = str(self.fact_cache)
        self.log(f"{label or playbook} [{config}, {size} workers] ansible-playbook {playbook} {cmdline}")
        hosts = self.hosts(size) if size != "existing" else self.existing_hosts()
        cpu_before, hosts_before = controller_cpu(), hosts_cpu(hosts)
        start = time.monotonic()
        runner = ansible_runner.run(**kwargs)
        elapsed = time.monotonic() - start
        events = list(runner.events)
        result = Run(seconds=elapsed, status=runner.status, rc=runner.rc, timings=parse_events(events),
                     stats=run_stats(events), controller_cpu=controller_cpu() - cpu_before,
                     hosts_cpu=hosts_cpu_used(hosts_before, hosts_cpu(hosts)))
        self.log(f"  -> {runner.status} rc={runner.rc} in {elapsed:.1f}s (CPU s: controller "
                 f"{seconds(result.controller_cpu)}, hosts {seconds(result.hosts_cpu)}) {result.stats}")
        if runner.rc != 0:
            failed = [t.name for t in result.timings if t.status.get("failed") or t.status.get("unreachable")]
            self.log(f"  failed tasks: {failed[:5]} (artifacts: {private}/artifacts)")
        return result

    def lab(self, size, extra=()):
        """playbooks/lab.yml with the project's configuration (its fact-cache clean-up is the
        project's); writes the size's inventory directory."""
        inv = self.inventory_dir(size)
        base = ["-i", str(ROOT / "inventories" / "lab"), "-e", f"lab_workers={size}", "-e", f"lab_inventory_dir={inv}",
                "-e", f"lab_baked_workers={'false' if self.args.no_bake else 'true'}"]
        cmd = ["ansible-playbook", str(ROOT / "playbooks" / "lab.yml")] + base + list(extra)
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
                   ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal" if not self.verbose else "default")
        env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env.get('PATH', '')}"
        self.log(f"lab [{size} workers] {' '.join(cmd[1:])}")
        start = time.monotonic()
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=not self.verbose, text=True, check=False)
        if done.returncode != 0:
            sys.stderr.write((done.stdout or "")[-4000:] + (done.stderr or "")[-2000:])
            raise SystemExit(f"bench: lab.yml failed for {size} workers")
        return time.monotonic() - start

    def bake(self):
        cmd = ["ansible-playbook", str(ROOT / "playbooks" / "bake.yml"), "-i", str(ROOT / "inventories" / "lab")]
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
        env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env.get('PATH', '')}"
        self.log("bake " + " ".join(cmd[1:]))
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=not self.verbose, text=True, check=False)
        if done.returncode != 0:
            sys.stderr.write((done.stdout or "")[-4000:] + (done.stderr or "")[-2000:])
            raise SystemExit("bench: bake.yml failed")

    def destroy(self, size):
        self.lab(size, ["-e", "lab_state=absent"])

    def worker_alive(self, worker, timeout=120):
        """Poll the master's JSON until `worker` is ALIVE. The lab publishes only the UI gateway's
        port: the JSON is read on the master itself (its UI port is open to loopback), with the UI
        token the spark role keeps there (Spark 4 asks for it)."""
        deadline = time.monotonic() + timeout
        read = ["docker", "exec", "sparkfleet-master", "python3", "-c",
                "import urllib.request; token = open('/etc/sparkfleet/spark-ui-token').read().strip(); "
                "ask = urllib.request.Request('http://127.0.0.1:8080/json/', headers={'Authorization': 'Bearer ' + token}); "
                "print(urllib.request.urlopen(ask, timeout=5).read().decode())"]
        while time.monotonic() < deadline:
            done = subprocess.run(read, capture_output=True, text=True, check=False)
            try:
                state = json.loads(done.stdout) if done.returncode == 0 else {}
            except ValueError:
                state = {}
            if any(w.get("host") == worker and w.get("state") == "ALIVE" for w in state.get("workers", [])):
                return True
            time.sleep(1)
        return False

    def measure(self, size, config):
        """The figures of one size and one configuration: {figure: (seconds, Run, note)}."""
        out = {}
        figures = self.args.figures
        site = self.args.playbook
        if "cold" in figures:
            # lab.yml forgets the cached facts of the containers it removes.
            self.destroy(size)
            self.lab(size)
            out["cold"] = self.record(config, size, "cold", self.playbook(config, site, size, label="cold"))
        if "cold" not in figures:
            # The cluster of this size, created when missing, and converged (untimed) with this
            # bench's inventory: a cluster left by make lab or another bench is converged with another,
            # and the no-op must follow a converge with the same inputs.
            missing = [h for h in self.hosts(size) if not self.container_exists(h)]
            self.lab(size)
            self.playbook("tuned", site, size, label="warm-up" + (f" (new: {', '.join(missing)})" if missing else ""))
        if "noop" in figures:
            run = self.playbook(config, site, size, label="noop")
            note = "" if run.stats.get("changed", 0) == 0 else f"changed={run.stats.get('changed')}"
            out["noop"] = self.record(config, size, "noop", run, note)
        if "replace" in figures:
            # A dead worker (docker kill: no shutdown), then the one command a user runs.
            worker = f"sparkfleet-worker-{size}"
            subprocess.run(["docker", "kill", worker], check=False, capture_output=True)
            extra = ["-e", f"worker={worker}", "-e", f"lab_inventory_dir={self.inventory_dir(size)}"]
            run = self.playbook(config, "playbooks/replace_worker.yml", size, extra, label="replace")
            alive = self.worker_alive(worker, timeout=5)
            note = "" if run.rc == 0 and alive else "; worker NOT ALIVE"
            out["replace"] = self.record(config, size, "replace", run, note.lstrip("; "))
        return out

    @staticmethod
    def container_exists(name):
        done = subprocess.run(["docker", "container", "inspect", name], capture_output=True, check=False)
        return done.returncode == 0

    def hosts(self, size):
        """The lab's hosts at this size: the inventory's hosts other than workers (the master, the hub)
        and workers 1..size (playbooks/lab.yml's lab_workers)."""
        listed = []
        for group in (yaml.safe_load((ROOT / "inventories" / "lab" / "hosts.yml").read_text())["all"]["children"]
                      .values()):
            listed += list((group or {}).get("hosts") or {})
        others = sorted(h for h in listed if not re.match(r"^sparkfleet-worker-\d+$", h))
        return others + [f"sparkfleet-worker-{i}" for i in range(1, size + 1)]

    def existing_hosts(self):
        """The inventory's hosts that are lab containers (--existing)."""
        done = subprocess.run(["ansible-inventory", "-i", str(self.inventory_dir("existing")), "--list"],
                              capture_output=True, text=True, check=False)
        try:
            return sorted(json.loads(done.stdout).get("_meta", {}).get("hostvars", {}))
        except ValueError:
            return []

    def record(self, config, size, figure, run, note=""):
        costs = ", ".join(f"{kind} {value:.1f}s" for kind, value in sorted(group_costs(run.timings).items()))
        self.artifact_tables.append((f"{figure}, {size} workers, {config}: {run.seconds:.1f}s, "
                                     f"{len(run.timings)} tasks, CPU s controller {seconds(run.controller_cpu)} / "
                                     f"hosts {seconds(run.hosts_cpu)}, recap {run.stats}",
                                     f"Task wall time by kind: {costs}.\n\n" + tasks_table(run.timings, 25)))
        if run.rc != 0:
            note = (note + "; " if note else "") + f"FAILED rc={run.rc}"
        return run.seconds, run, note

    def existing(self, configs):
        """The no-op figure on a running cluster (no containers created or removed)."""
        rows = []
        results = {config: self.playbook(config, self.args.playbook, "existing", label="noop") for config in configs}
        for config, run in results.items():
            self.record(config, "existing", "noop", run)
        tuned, base = results["tuned"], results.get("baseline")
        row = {"size": f"{self.args.existing} ({tuned.timings and max(t.hosts for t in tuned.timings)} hosts)",
               "figure": "noop", "tuned": tuned.seconds, "baseline": base.seconds if base else None,
               "tasks": len(tuned.timings), "cpu": (tuned.controller_cpu, tuned.hosts_cpu),
               "notes": "; ".join([f"{c} changed={r.stats.get('changed')}" for c, r in results.items()
                                   if r.stats.get("changed")]
                                  + [f"{c} FAILED rc={r.rc}" for c, r in results.items() if r.rc != 0])}
        if "mitogen" in results:
            row["mitogen"] = results["mitogen"].seconds
        rows.append(row)
        return rows

    def main(self):
        self.artifact_tables = []
        configs = (["tuned"] + (["baseline"] if self.args.baseline != "none" else [])
                   + (["mitogen"] if self.args.mitogen else []))
        if self.args.existing:
            self.report(self.existing(configs))
            return
        rows = []
        if not self.args.no_bake:
            # Untimed: the lab's workers (and a replaced one) start from the baked worker image, as
            # make lab's do; a no-op when the image of the current recipe exists.
            self.bake()
        for size in self.args.sizes:
            results = {}
            for config in configs:
                results[config] = self.measure(size, config)
            for figure in FIGURES:
                if figure not in self.args.figures:
                    continue
                tuned = results["tuned"].get(figure)
                base = results.get("baseline", {}).get(figure)
                notes = "; ".join(filter(None, [f"tuned: {tuned[2]}" if tuned and tuned[2] else "",
                                                f"baseline: {base[2]}" if base and base[2] else ""]))
                row = {"size": size, "figure": figure, "tuned": tuned[0] if tuned else None,
                       "baseline": base[0] if base else None,
                       "cpu": (tuned[1].controller_cpu, tuned[1].hosts_cpu) if tuned else None,
                       "tasks": len(tuned[1].timings) if tuned else "-", "notes": notes}
                if "mitogen" in results:
                    mito = results["mitogen"].get(figure)
                    row["mitogen"] = mito[0] if mito else None
                    if mito and mito[2]:
                        row["notes"] = "; ".join(filter(None, [notes, f"mitogen: {mito[2]}"]))
                rows.append(row)
            if not self.args.keep:
                self.destroy(size)
        self.report(rows)

    def report(self, rows):
        stamp = time.strftime("%Y%m%d-%H%M%S")
        command = "bench/run " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        table = figures_table(rows)
        lines = [f"# sparkfleet bench {stamp}", "", f"Reproduce: `{command}` (from {ROOT})", "",
                 f"Machine: {os.cpu_count()} CPUs, {platform_line()}", "", table, "",
                 "Baseline: " + BASELINE_LINES[self.args.baseline](), ""] + scaling_lines(rows)
        for title, tasks in self.artifact_tables:
            lines += [f"## {title}", "", tasks, ""]
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{stamp}.md"
        path.write_text("\n".join(lines))
        print("\n" + table + "\n")
        print("\n".join(scaling_lines(rows)))
        print(f"Written to {path.relative_to(ROOT)}; reproduce with: {command}")


BASELINE_LINES = {
    "ansible": lambda: " ".join(f"{k}={v}" for k, v in BASELINE_ENV.items()),
    "every-role": lambda: "the tuned configuration with -e sparkfleet_skip_unchanged=false (every role runs)",
    "none": lambda: "none (the tuned configuration only)",
}


def scaling_lines(rows) -> list:
    """How each tuned figure grows with the cluster: its seconds at each size over those at the
    smallest size of this invocation."""
    lines = []
    for figure in FIGURES:
        sized = [(r["size"], r["tuned"]) for r in rows if r["figure"] == figure and isinstance(r["size"], int) and r["tuned"]]
        if len(sized) > 1:
            (first, base), rest = sized[0], sized[1:]
            lines.append(f"Scaling, {figure} (tuned): " + ", ".join(
                f"{size} workers {ratio(value, base)} the time at {first}" for size, value in rest))
    return lines + ([""] if lines else [])


def platform_line() -> str:
    try:
        return subprocess.run(["ansible", "--version"], capture_output=True, text=True, check=False).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "ansible unknown"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="bench/run", description=__doc__.split("\n\n", 1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", type=int, default=[2, 4],
                        help="worker counts (1 master + N workers each; default: 2 4)")
    parser.add_argument("--figures", default=",".join(FIGURES),
                        help=f"comma-separated subset of {','.join(FIGURES)} (default: all)")
    parser.add_argument("--baseline", choices=["ansible", "every-role", "none"], default="ansible",
                        help="what the tuned configuration is compared with: plain Ansible defaults (ansible), or the "
                             "tuned configuration with the applied-state gate off (every-role: every role runs)")
    parser.add_argument("--mitogen", action="store_true",
                        help="also run with Mitogen's strategy (needs `pip install mitogen`; optional)")
    parser.add_argument("--keep", action="store_true", help="leave the last cluster running")
    parser.add_argument("--no-bake", action="store_true",
                        help="workers from the plain base image (default: the baked worker image, as make lab)")
    parser.add_argument("--playbook", default="site.yml",
                        help="the playbook converged and timed (default: site.yml); e.g. a subset of the layers")
    parser.add_argument("--existing", metavar="INVENTORY",
                        help="only the no-op figure, on the running cluster of INVENTORY (e.g. inventories/lab); "
                             "no container is created or removed")
    parser.add_argument("-v", "--verbose", action="store_true", help="show Ansible's output")
    args = parser.parse_args(argv)
    args.figures = [f for f in args.figures.split(",") if f]
    unknown = set(args.figures) - set(FIGURES)
    if unknown:
        parser.error(f"unknown figures {sorted(unknown)}; choose from {FIGURES}")
    if any(size < 1 for size in args.sizes):
        parser.error("every size needs at least one worker")
    if args.mitogen:
        try:
            import ansible_mitogen  # noqa: F401  pylint: disable=import-outside-toplevel,import-error,unused-import
        except ImportError:
            parser.error("--mitogen needs Mitogen for Ansible in the venv (pip install mitogen); it is optional")
    if not shutil.which("docker"):
        parser.error("docker is needed (make docker)")
    return args


if __name__ == "__main__":
    Bench(parse_args(sys.argv[1:])).main()
