"""Run a Python file in a Jupyter kernel as a notebook cell, and print what the cell printed.

The kernel is started from its kernelspec exactly as the notebook server starts it (jupyter_client's
KernelManager: the spec's argv and env, with ${VAR} filled in from this process's environment), so
the cell sees what a user's notebook sees. `jupyter run` would do the same but gives a cell only 10 s.

    python kernel_run.py --kernel pyspark-cluster --timeout 300 query.py

Exit 0 when the cell ran, 1 when it raised (the traceback is printed to stderr).
"""

import argparse
import pathlib
import sys

from jupyter_client.manager import start_new_kernel


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("file")
    args = parser.parse_args()
    code = pathlib.Path(args.file).read_text()

    manager, client = start_new_kernel(kernel_name=args.kernel, startup_timeout=120)
    failed = []

    def output(msg):
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            (sys.stdout if content["name"] == "stdout" else sys.stderr).write(content["text"])
        elif kind == "error":
            failed.append(content["ename"])
            sys.stderr.write("\n".join(content["traceback"]) + "\n")

    try:
        reply = client.execute_interactive(code, timeout=args.timeout, output_hook=output)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return 1 if failed or reply["content"]["status"] != "ok" else 0


if __name__ == "__main__":
    sys.exit(main())
