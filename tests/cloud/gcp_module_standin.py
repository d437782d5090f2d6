"""A stand-in for one google.cloud compute module (its name replaces __MODULE__).

The google.cloud modules hard-code https://compute.googleapis.com, so the tests cannot
point them at a local server. This stand-in takes the real module's place on the
collections path: it validates the task's arguments with an argument spec built from the
REAL module's DOCUMENTATION (unknown options, wrong types and bad choices fail as they
would there), records them, and keeps instances and firewall rules in a state directory,
answering with the recorded Compute API instance resource (tests/fixtures/gcp/instance.json)
filled in from the arguments; networks, subnetworks and service accounts are kept as their
arguments, like firewall rules. Existing resources are reported unchanged, as the real
modules do when nothing differs."""

import ast
import copy
import json
import os
import pathlib
import re

import yaml
from ansible.module_utils.basic import AnsibleModule

MODULE = "__MODULE__"
API = "https://www.googleapis.com/compute/v1/"
# The resources kept as their arguments, one state file each; a resource is unchanged when
# the arguments are the same as the kept ones.
STORES = {"gcp_compute_firewall": "firewalls.json", "gcp_compute_network": "networks.json",
          "gcp_compute_subnetwork": "subnetworks.json", "gcp_iam_service_account": "service_accounts.json"}
AUTH = {"auth_kind", "service_account_contents", "service_account_file", "service_account_email", "access_token",
        "scopes", "env_type"}


def _documented_options():
    path = pathlib.Path(os.environ["SPARKFLEET_GCP_REAL_MODULES"]) / f"{MODULE}.py"
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)["options"]
    raise RuntimeError(f"no DOCUMENTATION in {path}")


def _spec(options):
    out = {}
    for name, doc in options.items():
        spec = {"type": doc.get("type", "str")}
        for key in ("required", "choices", "aliases", "default", "no_log"):
            if key in doc:
                spec[key] = doc[key]
        if "elements" in doc:
            spec["elements"] = doc["elements"]
        if "suboptions" in doc:
            spec["options"] = _spec(doc["suboptions"])
            if spec["type"] == "list":
                spec.setdefault("elements", "dict")
        out[name] = spec
    return out


def _given(value):
    """The arguments as the task gave them: options it did not set (None) left out."""
    if isinstance(value, dict):
        return {k: _given(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_given(v) for v in value]
    return value


def _load(state, name, default):
    path = state / name
    return json.loads(path.read_text()) if path.exists() else default


def _save(state, name, data):
    (state / name).write_text(json.dumps(data, indent=1, sort_keys=True))


def _matches(resource, filters):
    for expression in filters or []:
        match = re.fullmatch(r"\s*labels\.([-\w]+)\s*=\s*\"?([-\w]+)\"?\s*", expression)
        if not match:
            raise ValueError(f"the stand-in does not understand the filter {expression!r}")
        if resource.get("labels", {}).get(match.group(1)) != match.group(2):
            return False
    return True


def _instance(params, project, number):
    resource = copy.deepcopy(json.loads((pathlib.Path(os.environ["SPARKFLEET_GCP_FIXTURES"]) / "instance.json").read_text()))
    zone = f"{API}projects/{project}/zones/{params['zone']}"
    boot = params["disks"][0]["initialize_params"]
    nic = params["network_interfaces"][0]
    resource.update({
        "id": str(4471163820133370000 + number),
        "name": params["name"],
        "zone": zone,
        "selfLink": f"{zone}/instances/{params['name']}",
        "machineType": f"{zone}/machineTypes/{params['machine_type']}",
        "labels": params["labels"],
        "tags": {"items": params["tags"]["items"], "fingerprint": "6smc4R4d39I="},
        "metadata": {"kind": "compute#metadata", "fingerprint": "Xv4wB0nQbWg=",
                     "items": [{"key": k, "value": v} for k, v in params["metadata"].items()]},
        "scheduling": {"onHostMaintenance": params["scheduling"]["on_host_maintenance"],
                       "automaticRestart": params["scheduling"]["automatic_restart"],
                       "preemptible": params["scheduling"]["preemptible"]},
    })
    resource["disks"][0]["diskSizeGb"] = str(boot["disk_size_gb"])
    resource["disks"][0]["source"] = f"{zone}/disks/{params['name']}"
    resource["networkInterfaces"][0]["networkIP"] = f"10.128.0.{10 + number}"
    resource["networkInterfaces"][0]["network"] = API + nic["network"]["selfLink"]
    if nic.get("subnetwork"):
        resource["networkInterfaces"][0]["subnetwork"] = API + nic["subnetwork"]["selfLink"]
    resource["serviceAccounts"] = [{"email": a["email"], "scopes": a.get("scopes", [])} for a in params.get("service_accounts") or []]
    if not nic.get("access_configs"):
        resource["networkInterfaces"][0]["accessConfigs"] = []
    resource.pop("guestAccelerators", None)
    if params.get("guest_accelerators"):
        resource["guestAccelerators"] = [{"acceleratorType": API + a["accelerator_type"], "acceleratorCount": a["accelerator_count"]}
                                         for a in params["guest_accelerators"]]
    return resource


def main():
    module = AnsibleModule(argument_spec=_spec(_documented_options()), supports_check_mode=True)
    params = module.params
    state = pathlib.Path(os.environ["SPARKFLEET_GCP_STANDIN_DIR"])
    given = {k: v for k, v in _given(params).items() if k not in AUTH}
    with (state / "calls.jsonl").open("a") as log:
        log.write(json.dumps({"module": MODULE, "params": given, "auth_kind": params["auth_kind"]}, sort_keys=True) + "\n")
    project = params["project"]
    if MODULE == "gcp_compute_instance_info":
        instances = _load(state, "instances.json", {})
        found = [r for r in instances.values() if r["zone"].endswith(f"/zones/{params['zone']}") and _matches(r, params["filters"])]
        module.exit_json(changed=False, resources=found)
    if MODULE == "gcp_compute_instance":
        instances = _load(state, "instances.json", {})
        exists = params["name"] in instances
        if params["state"] == "absent":
            if exists and not module.check_mode:
                del instances[params["name"]]
                _save(state, "instances.json", instances)
            module.exit_json(changed=exists)
        if exists:
            module.exit_json(changed=False, **instances[params["name"]])
        resource = _instance(params, project, len(_load(state, "created.json", [])))
        if not module.check_mode:
            instances[params["name"]] = resource
            _save(state, "instances.json", instances)
            _save(state, "created.json", _load(state, "created.json", []) + [params["name"]])
        module.exit_json(changed=True, **resource)
    if MODULE in STORES:
        store = STORES[MODULE]
        kept = _load(state, store, {})
        wanted = {k: v for k, v in given.items() if k not in ("state", "project")}
        if params["state"] == "absent":
            exists = params["name"] in kept
            if exists and not module.check_mode:
                del kept[params["name"]]
                _save(state, store, kept)
            module.exit_json(changed=exists)
        changed = kept.get(params["name"]) != wanted
        if changed and not module.check_mode:
            kept[params["name"]] = wanted
            _save(state, store, kept)
        module.exit_json(changed=changed, name=params["name"])
    module.fail_json(msg=f"no stand-in for {MODULE}")


if __name__ == "__main__":
    main()
