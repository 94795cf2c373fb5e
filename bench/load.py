"""Load test with locust against a small cluster on this machine (bench/cluster.py).

N simulated users (default 50), half on each of the two web nodes, each uploading a small
document, waiting until it is indexed and asking a question whose answer it reads, streamed,
from the other web node (the fake chat server answers; see bench/locust_users.py). Everything
is on 127.0.0.1 and bounded: each user does its scenario once, within --timeout seconds.

    python bench/load.py --users 50 [--json-out load.json]

Prints JSON: requests/s, p50/p95 of upload→indexed and of question→first token, errors and the
number of answers received exactly (nothing lost or repeated). Exit 1 when any error occurred.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.chat import Load, control  # noqa: E402
from bench.cluster import Cluster  # noqa: E402
from bench.common import REPO, log, machine_info  # noqa: E402

ANSWER = ("Crane inspections are recorded every seven days [S1]; the interval in the notes is the one "
          "that applies, and the load test checks every character of this answer arrives once. [S1]")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=300, help="seconds one user's scenario may take")
    parser.add_argument("--chat-workers", type=int, default=20)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (nodes' logs)")
    args = parser.parse_args(argv)
    with Cluster(chat_workers=args.chat_workers, keep=args.keep) as cluster:
        cluster.setup_ai()
        tokens = cluster.users(args.users)
        control(cluster.fake_url, "script_chat",
                {"answers": [{"content": ANSWER, "piece_delay": 0.01}] * (args.users * 2)})
        config = {"web": cluster.web, "tokens": tokens, "answer": ANSWER, "timeout": args.timeout}
        log(f"{args.users} users on {cluster.web}")
        env = cluster.site.child_env(LOAD_CONFIG=json.dumps(config), LOG_LEVEL="WARNING")
        with Load() as load:
            run = subprocess.run([sys.executable, str(REPO / "bench" / "locust_users.py")], cwd=REPO, env=env,
                                 capture_output=True, text=True, timeout=args.timeout + 120)
        if run.returncode != 0 or not run.stdout.strip():
            raise SystemExit(f"locust run failed:\n{run.stderr[-4000:]}")
        measured = json.loads(run.stdout.strip().splitlines()[-1])
    result = {"benchmark": "load", "machine": machine_info(), "load_during_run": load.result, **measured,
              "goal_met": measured["errors"] == 0 and measured["answers_exact"] == args.users}
    out = json.dumps(result, indent=2)
    print(out)
    if args.json_out:
        args.json_out.write_text(out + "\n")
    return 0 if result["goal_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
