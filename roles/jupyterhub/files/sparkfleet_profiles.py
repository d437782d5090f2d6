"""Server sizes a user chooses from on the hub's spawn page (jupyterhub_profiles).

Each profile: name (the form's value), display_name, and what it reserves: cpu_limit, mem_limit
(default: jupyterhub_cpu_limit, jupyterhub_mem_limit), gpu_shares (a Swarm generic-resource
reservation of GPU shares), constraints (Swarm placement, added to every server's; default for a
profile with GPU shares: jupyterhub_gpu_constraints), groups (the JupyterHub groups allowed to
choose it; empty: everyone).
The hub offers a user only the profiles their groups allow, and checks the choice again when the
server starts: a form posted by hand cannot pick another. Loaded by jupyterhub_config.py from the
hub's configuration directory; pure functions, tested without a hub.
"""

import html


class ProfileError(Exception):
    """The user asked for a profile they may not use (the spawn is refused with this message)."""


def allowed(profiles, groups, admin=False):
    """The profiles a user in these groups may choose, in the administrator's order."""
    groups = set(groups)
    return [p for p in profiles if admin or not p.get("groups") or groups & set(p["groups"])]


def form(profiles):
    """The spawn page's form: one radio button per profile, the first checked; empty for one."""
    if len(profiles) < 2:
        return ""
    rows = []
    for index, profile in enumerate(profiles):
        name = html.escape(profile["name"], quote=True)
        label = html.escape(profile.get("display_name") or profile["name"])
        checked = " checked" if index == 0 else ""
        rows.append(
            f'<div class="radio"><label><input type="radio" name="profile" value="{name}"{checked}> {label}</label></div>'
        )
    return "<p>Choose the size of your server:</p>\n" + "\n".join(rows)


def from_form(formdata):
    """user_options from the posted form (JupyterHub gives each field as a list)."""
    return {"profile": (formdata.get("profile") or [""])[0]}


def choose(profiles, requested):
    """The profile to start with: the requested one among those allowed (the first when none was
    requested, e.g. a start through the API without options)."""
    if not profiles:
        raise ProfileError("no server size is allowed for you: ask an administrator")
    if not requested:
        return profiles[0]
    for profile in profiles:
        if profile["name"] == requested:
            return profile
    raise ProfileError(f"the server size {requested!r} is not one you may choose")


def _bytes(value):
    """A memory limit as JupyterHub's ByteSpecification reads it: a plain number of bytes must be an
    integer (a string is read as a number and a unit suffix: "4G")."""
    text = str(value).strip()
    return int(text) if text.isdigit() else text


def settings(profile, base_constraints, gpu_kind, defaults):
    """What the spawner sets for this profile: limits, and the Swarm's resources and placement.
    defaults: cpu_limit and mem_limit for a profile without its own, and gpu_constraints, the
    placement of a profile with GPU shares and no constraints of its own."""
    shares = int(profile.get("gpu_shares", 0) or 0)
    own = profile.get("constraints")
    constraints = list(own) if own is not None else (list(defaults.get("gpu_constraints", [])) if shares else [])
    return {
        "cpu_limit": float(profile.get("cpu_limit", defaults["cpu_limit"])),
        "mem_limit": _bytes(profile.get("mem_limit", defaults["mem_limit"])),
        "extra_resources_spec": {"generic_resources": {gpu_kind: shares}} if shares else {},
        "extra_placement_spec": {"constraints": list(base_constraints) + constraints},
    }
