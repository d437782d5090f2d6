"""What the autoscaler's entry points hand on: the observation the controller decides from
(roles/autoscaler/tasks/observe.yml), the pools' members (plan.yml), and the hosts the reading
play of playbooks/autoscale.yml runs on."""

import yaml

from conftest import ROOT, RoleRenderer

GROUPS = {"spark_masters": ["m1", "m2"], "swarm_managers": ["hub"], "hub": ["hub"],
          "spark_workers": ["w1", "w2", "g1"], "swarm_workers": ["w1", "w2", "g1", "w3"], "gpu_workers": ["g1"]}


def _task(entry_point, name):
    tasks = yaml.safe_load((ROOT / "roles" / "autoscaler" / "tasks" / f"{entry_point}.yml").read_text())
    (task,) = [t for t in tasks if t["name"] == name]
    return task


def test_the_leading_master_and_the_swarm_reach_the_controller():
    task = _task("observe", "Autoscaler | Hand what was read to the controller.")
    tasks = [{"ID": "t1", "Status": {"State": "pending"}}]
    hostvars = {
        "m1": {"__autoscaler_master": {"json": {"status": "STANDBY"}}},
        "m2": {"__autoscaler_master": {"json": {"status": "ALIVE", "workers": [{"host": "w1"}]}}},
        # A task skipped on a host registers no answer.
        "hub": {"__autoscaler_master": {"skipped": True}, "__autoscaler_swarm": {"tasks": tasks, "nodes": [{"ID": "n"}], "services": [{"ID": "s"}]}},
    }
    renderer = RoleRenderer("autoscaler", groups=GROUPS, hostvars=hostvars,
                            extra={"ansible_play_hosts": ["m1", "m2", "hub"], **task["vars"]})
    observed = renderer.string(task["ansible.builtin.set_fact"]["autoscaler_observed"], "m1")
    assert observed == {"spark_master": {"status": "ALIVE", "workers": [{"host": "w1"}]}, "yarn_metrics": {},
                        "swarm_tasks": tasks, "swarm_nodes": [{"ID": "n"}], "swarm_services": [{"ID": "s"}]}


def test_no_leading_master_gives_an_empty_answer():
    task = _task("observe", "Autoscaler | Hand what was read to the controller.")
    hostvars = {"m1": {"__autoscaler_master": {"json": {"status": "STANDBY"}}}, "m2": {"__autoscaler_master": {"failed": True}}}
    renderer = RoleRenderer("autoscaler", groups=GROUPS, hostvars=hostvars,
                            extra={"ansible_play_hosts": ["m1", "m2"], **task["vars"]})
    assert renderer.string(task["ansible.builtin.set_fact"]["autoscaler_observed"], "m1")["spark_master"] == {}


def test_the_pools_are_the_workers_by_machine_role():
    task = _task("plan", "Autoscaler | Decide and log the decision.")
    renderer = RoleRenderer("autoscaler", groups=GROUPS)
    pool_hosts = renderer.string(task["sparkfleet.cluster.autoscale_plan"]["pool_hosts"], "localhost")
    assert {pool: sorted(hosts) for pool, hosts in pool_hosts.items()} == {"worker": ["w1", "w2", "w3"], "gpu_worker": ["g1"]}


def test_the_reading_play_runs_where_the_state_is():
    play = yaml.safe_load((ROOT / "playbooks" / "autoscale.yml").read_text())[0]
    standalone = RoleRenderer(groups={**GROUPS, "yarn_resourcemanagers": ["m1"]})
    assert standalone.play_hosts(play["hosts"]) == ["hub", "m1", "m2"]
    yarn = RoleRenderer(groups={**GROUPS, "yarn_resourcemanagers": ["rm1", "rm2"]}, extra={"spark_cluster_manager": "yarn"})
    assert yarn.play_hosts(play["hosts"]) == ["hub", "rm1"]


def test_the_timer_runs_the_playbook_with_this_inventory():
    task = _task("main", "Autoscaler | Run the autoscaler on a timer.")
    extra = {"autoscaler_inventory": "/srv/fleet/inventories/prod", "autoscaler_project_dir": "/srv/fleet",
             "autoscaler_user": "ops", "ansible_playbook_python": "/srv/fleet/.venv/bin/python3"}
    (unit,) = RoleRenderer("autoscaler", extra=extra).string(task["vars"]["service_units"], "localhost")
    assert unit["exec_start"] == ("/srv/fleet/.venv/bin/ansible-playbook /srv/fleet/playbooks/autoscale.yml"
                                  " -i /srv/fleet/inventories/prod")
    assert (unit["user"], unit["working_directory"], unit["wanted"]) == ("ops", "/srv/fleet", True)
    assert unit["timer"]["on_calendar"] == "*:0/2"
    (dry,) = RoleRenderer("autoscaler", extra={**extra, "autoscaler_dry_run": True}).string(
        task["vars"]["service_units"], "localhost")
    assert dry["exec_start"].endswith(" -e autoscaler_dry_run=true")
