# Copyright: sparkfleet contributors
# Apache License 2.0
"""Watch a spot (AWS) or preemptible (GCP) machine's interruption notice, and hand its work over
before the machine goes.

GCP: the metadata server's ``instance/preempted`` turns TRUE about 30 s before the machine stops;
``?wait_for_change=true`` holds the request until it changes. AWS: with an IMDSv2 token,
``/latest/meta-data/spot/instance-action`` answers 404 until the machine is to be stopped or
terminated, then ``{"action": ..., "time": ...}`` two minutes ahead. On a notice the watcher
writes a marker file under /run (gone at the next boot) so that a restarted watcher does not hand
over twice, decommissions the Spark worker (--spark-worker-json), runs its commands in order (the
role's: leave the Swarm, then any command that asks for a replacement), each limited to the time
left before the deadline, and then waits, until the deadline, for the worker's executors to leave.

    sparkfleet_spot_watcher.py --provider gcp|aws [--spark-worker-json URL] [--command 'CMD' ...]
"""

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request

GCP_URL = "http://metadata.google.internal/computeMetadata/v1"
AWS_URL = "http://169.254.169.254"
# What each provider promises between the notice and the end (GCP: 30 s; AWS: 2 minutes).
NOTICE_SECONDS = {"gcp": 30, "aws": 120}


def _log(message):
    print(json.dumps({"time": time.time(), "message": message}), flush=True)


def gcp_notice(base, timeout, etag):
    """(preempted, deadline, etag). The first question answers at once (a notice already given is
    not missed); the next ones wait for a change of the value read last (its ETag), up to timeout."""
    query = f"?wait_for_change=true&last_etag={etag}&timeout_sec={int(timeout)}" if etag else ""
    request = urllib.request.Request(f"{base}/instance/preempted{query}", headers={"Metadata-Flavor": "Google"})
    with urllib.request.urlopen(request, timeout=timeout + 10) as answer:
        return answer.read().decode().strip().upper() == "TRUE", None, answer.headers.get("ETag")


def _aws_token(base):
    request = urllib.request.Request(f"{base}/latest/api/token", method="PUT",
                                     headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return answer.read().decode()


def aws_notice(base, _timeout, _etag):
    """AWS's spot instance action: (True, deadline, None) once announced, (False, None, None) before (404)."""
    request = urllib.request.Request(f"{base}/latest/meta-data/spot/instance-action",
                                     headers={"X-aws-ec2-metadata-token": _aws_token(base)})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            action = json.loads(answer.read().decode())
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return False, None, None
        raise
    when = datetime.datetime.strptime(action["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    return True, when.timestamp(), None


def _decommissionable(systemctl, proc_root):
    """The running spark-worker's PID when its JVM handles SIGPWR (Spark registers the handler with
    spark.decommission.enabled); SIGPWR's default action would kill a worker that does not."""
    shown = subprocess.run([systemctl, "show", "--property", "MainPID", "--value", "spark-worker"],
                           capture_output=True, text=True, check=False).stdout.strip()
    if not shown.isdigit() or shown == "0":
        return None
    try:
        with open(f"{proc_root}/{shown}/status", encoding="utf-8") as status:
            caught = next(int(line.split()[1], 16) for line in status if line.startswith("SigCgt:"))
    except (OSError, StopIteration, ValueError):
        return None
    return int(shown) if caught >> 29 & 1 else None


def _executors(url, token_file=None):
    """The worker's executors (None when its UI does not answer). Spark 4's UIs ask for the token the
    spark role keeps in token_file; without the file none is sent (Spark 3.5)."""
    try:
        with open(token_file or "", encoding="utf-8") as kept:
            headers = {"Authorization": f"Bearer {kept.read().strip()}"}
    except FileNotFoundError:
        headers = {}
    except OSError:
        return None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as answer:
            return len(json.loads(answer.read().decode()).get("executors", []))
    except (OSError, ValueError):
        return None


def decommission_spark(systemctl="systemctl", proc_root="/proc"):
    """Decommission the Spark worker as the spark role does before a restart (SIGPWR: the master
    gives it no more executors, they finish their tasks and hand their blocks over). True when
    signalled, else why not, for the log."""
    if _decommissionable(systemctl, proc_root) is None:
        return "spark-worker not running, or not decommissionable (no SIGPWR handler)"
    subprocess.run([systemctl, "kill", "--kill-who=main", "--signal=SIGPWR", "spark-worker"], check=False)
    return True


def wait_for_executors(worker_json, deadline, clock=time.time, sleep=time.sleep, token_file=None):
    """Wait, until the deadline, for the decommissioned worker's executors to leave."""
    while clock() < deadline:
        left = _executors(worker_json, token_file)
        if left == 0:
            return "decommissioned: no executor left"
        sleep(1)
    return "decommissioned: the deadline came first"


def run_commands(commands, deadline, clock=time.time):
    """Run each command with the time left before the deadline (at least 1 s); a failure or a
    timeout is logged and the next command still runs: leaving the Swarm matters even when the
    Spark worker could not be decommissioned. Returns [(command, exit status or 'timeout')]."""
    results = []
    for command in commands:
        left = max(deadline - clock(), 1)
        try:
            done = subprocess.run(shlex.split(command), timeout=left, check=False)
            results.append((command, done.returncode))
        except subprocess.TimeoutExpired:
            results.append((command, "timeout"))
        except OSError as error:
            results.append((command, f"error: {error}"))
        _log(f"ran {command!r}: {results[-1][1]}")
    return results


def watch(provider, base, commands, marker, poll=5, wait=300, clock=time.time, sleep=time.sleep, once=False,
          spark=None):
    """Wait for the notice, then decommission the Spark worker (spark: its /json/ as worker_json
    and decommission_spark's keyword arguments, or None), run the commands and wait for its
    executors to leave, once. Returns the results, or None when `once` and no notice came."""
    if os.path.exists(marker):
        _log(f"{marker} exists: the notice was handled already")
        return []
    ask = gcp_notice if provider == "gcp" else aws_notice
    etag = None
    while True:
        try:
            noticed, deadline, etag = ask(base, wait, etag)
        except (OSError, ValueError) as error:  # the metadata server unreachable for a moment
            _log(f"cannot read the interruption notice: {error}")
            etag = None
            if once:
                return None
            sleep(poll)
            continue
        if noticed:
            seen = clock()
            deadline = deadline or seen + NOTICE_SECONDS[provider]
            _log(f"interruption notice ({provider}): {deadline - seen:.0f} s left")
            # Written first: a watcher restarted half-way does not decommission twice.
            with open(marker, "w", encoding="utf-8") as out:
                json.dump({"noticed": seen, "deadline": deadline}, out)
            # The signal first, then the commands (leaving the Swarm moves the notebooks at once),
            # then the wait for the executors, which may take most of the notice.
            signalled = decommission_spark(spark["systemctl"], spark["proc_root"]) if spark else None
            ran = run_commands(commands, deadline, clock)
            if signalled is None:
                return ran
            done = (wait_for_executors(spark["worker_json"], deadline, clock, token_file=spark["token_file"])
                    if signalled is True else signalled)
            _log(f"spark: {done}")
            return [("spark-decommission", done)] + ran
        if once:
            return None
        # GCP's next question waits for a change; AWS's answers at once.
        if provider == "aws":
            sleep(poll)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--provider", choices=["gcp", "aws"], required=True)
    parser.add_argument("--metadata-url", help="the metadata server (default: the provider's)")
    parser.add_argument("--command", action="append", default=[], help="run on a notice, in order (repeat)")
    parser.add_argument("--marker", default="/run/sparkfleet-spot-notice.json")
    parser.add_argument("--poll", type=float, default=5, help="seconds between AWS's questions")
    parser.add_argument("--spark-worker-json", help="the Spark worker's /json/: decommission it first")
    parser.add_argument("--spark-ui-token-file", help="the token Spark's UIs ask for (the spark role's file)")
    parser.add_argument("--systemctl", default="systemctl")
    parser.add_argument("--proc", default="/proc")
    args = parser.parse_args(argv)
    base = args.metadata_url or (GCP_URL if args.provider == "gcp" else AWS_URL)
    spark = ({"worker_json": args.spark_worker_json, "systemctl": args.systemctl, "proc_root": args.proc,
              "token_file": args.spark_ui_token_file} if args.spark_worker_json else None)
    results = watch(args.provider, base, args.command, args.marker, poll=args.poll, spark=spark)
    # Done: the unit restarts the watcher on a failure only, and the marker keeps a manual
    # restart from handing over twice until the machine boots again.
    _log(f"handed over: {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
