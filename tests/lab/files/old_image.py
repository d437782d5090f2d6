"""Make an image that looks old: a copy of BASE whose creation time is CREATED and whose labels
are BASE's plus LABEL=VALUE (none when LABEL is empty), tagged TAG, on this host's Docker.

The pruning of old notebook images goes by the image's creation time and label; an image built
now cannot be old, so the test writes one: docker save, the image's configuration rewritten (its
ID is the configuration's hash), docker load.

Usage: old_image.py BASE TAG CREATED LABEL VALUE
"""

import hashlib
import io
import json
import subprocess
import sys
import tarfile


def main(base, tag, created, label, value):
    saved = subprocess.run(["docker", "save", base], check=True, stdout=subprocess.PIPE).stdout
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(saved)) as src, tarfile.open(fileobj=out, mode="w") as dst:
        manifest = json.load(src.extractfile("manifest.json"))
        config = json.load(src.extractfile(manifest[0]["Config"]))
        config["created"] = created
        labels = dict(config.get("config", {}).get("Labels") or {})
        if label:
            labels[label] = value
        config.setdefault("config", {})["Labels"] = labels
        data = json.dumps(config, separators=(",", ":")).encode()
        name = hashlib.sha256(data).hexdigest() + ".json"
        manifest = [dict(manifest[0], Config=name, RepoTags=[tag])]
        for member in src.getmembers():
            if member.name in ("manifest.json", "repositories") or member.name.endswith(".json") and "/" not in member.name:
                continue
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        for path, body in ((name, data), ("manifest.json", json.dumps(manifest).encode())):
            info = tarfile.TarInfo(path)
            info.size = len(body)
            dst.addfile(info, io.BytesIO(body))
    subprocess.run(["docker", "load"], check=True, input=out.getvalue(), stdout=subprocess.DEVNULL)
    print("sha256:" + name[:-5])


if __name__ == "__main__":
    main(*sys.argv[1:6])
