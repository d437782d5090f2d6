"""Create one notebook user's home on shared storage: <root>/<NAME>, a real directory owned by the
notebook user's uid and gid, mode 0700. Installed by the sparkfleet.cluster.jupyterhub role as
/usr/local/lib/sparkfleet/notebook_home.py and run by /usr/local/sbin/sparkfleet-notebook-home (the
sparkfleet-notebook-home beside this file: /usr/bin/python3 -I, isolated from the caller's environment),
which the hub's unprivileged user may run as root through sudo, with exactly one argument, and nothing else.

    sparkfleet-notebook-home NAME

NAME is a JupyterHub user name: letters, digits and _ . @ -, not starting with a dot or a dash, no
"..", at most 64 characters. The settings are root's file /etc/sparkfleet/notebook-home.conf
(written by the role), never the caller's:

    root = /srv/sparkfleet/shared/home
    uid = 1000
    gid = 1000

A missing home is created; an existing one must be a real directory (a symbolic link or a file
there is refused) and gets the owner and mode back on itself only, never on what it holds. Exit 0
when the home is ready, 2 for a refused name or path, 1 for anything else.
"""

import os
import re
import stat
import sys

CONFIG = "/etc/sparkfleet/notebook-home.conf"
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")


class Refused(Exception):
    """A name or an existing path this helper will not touch."""


def check_name(name):
    if not NAME.fullmatch(name or "") or ".." in name:
        raise Refused(f"refused user name {name!r}: letters, digits and _ . @ - only, not starting with . or -, "
                      "no '..', at most 64 characters")
    return name


def read_config(path):
    """key = value lines; '#' starts a comment. As root, the file must be root's and writable by root only."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as handle:
        info = os.fstat(handle.fileno())
        if os.geteuid() == 0 and (info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
            raise Refused(f"{path} must belong to root and be writable by root only")
        values = {}
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                key, sep, value = line.partition("=")
                if not sep:
                    raise ValueError(f"{path}: not 'key = value': {line!r}")
                values[key.strip()] = value.strip()
    root, uid, gid = values.get("root", ""), values.get("uid", ""), values.get("gid", "")
    if not root.startswith("/") or not uid.isdigit() or not gid.isdigit() or int(uid) == 0:
        raise ValueError(f"{path}: needs an absolute root and numeric uid and gid (uid not 0)")
    return root, int(uid), int(gid)


def ensure_home(root, name, uid, gid):
    """Create <root>/<name> if missing; 'created' or 'exists'. Never follows a link at <root>/<name>."""
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            os.mkdir(name, 0o700, dir_fd=root_fd)
            outcome = "created"
        except FileExistsError:
            outcome = "exists"
        try:
            home_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root_fd)
        except OSError as err:
            # A symbolic link (ELOOP or ENOTDIR with O_NOFOLLOW), a file or anything else but a directory.
            raise Refused(f"{os.path.join(root, name)} exists and is not a real directory ({err.strerror})") from None
        try:
            info = os.fstat(home_fd)
            # The directory itself only: what the user keeps in it is theirs.
            if (info.st_uid, info.st_gid) != (uid, gid):
                os.fchown(home_fd, uid, gid)
            if stat.S_IMODE(info.st_mode) != 0o700:
                os.fchmod(home_fd, 0o700)
        finally:
            os.close(home_fd)
    finally:
        os.close(root_fd)
    return outcome


def main(argv, config=CONFIG):
    prog = "sparkfleet-notebook-home"
    if len(argv) != 1:
        print(f"usage: {prog} NAME", file=sys.stderr)
        return 2
    try:
        name = check_name(argv[0])
        root, uid, gid = read_config(config)
        outcome = ensure_home(root, name, uid, gid)
    except Refused as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    print(f"{os.path.join(root, name)} {outcome}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
