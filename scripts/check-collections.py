#!/usr/bin/env python
"""Check that every collection pinned in requirements.yml is installed at that
version (the `ansible` bundle from requirements.txt provides them). Exit 1 and
say which are missing or differ; `ansible-galaxy collection install -r
requirements.yml` fixes it where Galaxy is reachable."""

import json
import subprocess
import sys

import yaml

wanted = {c["name"]: str(c["version"]) for c in yaml.safe_load(open("requirements.yml"))["collections"]}
listing = json.loads(subprocess.run(
    ["ansible-galaxy", "collection", "list", "--format", "json"],
    check=True, capture_output=True, text=True).stdout)
have = {}
for path_entries in listing.values():
    for name, info in path_entries.items():
        have.setdefault(name, info.get("version"))
bad = [f"{n} {v} (have {have.get(n, 'none')})" for n, v in wanted.items() if have.get(n) != v]
if bad:
    print("collections: not as pinned: " + ", ".join(bad), file=sys.stderr)
    sys.exit(1)
print("collections: " + ", ".join(f"{n} {v}" for n, v in wanted.items()))
