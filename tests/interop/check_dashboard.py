#!/usr/bin/env python3
"""optuna-dashboard reads a study file written here (see run_interop.sh).

  check_dashboard.py DB DUMP [TIMEOUT_S]

Starts optuna-dashboard (from the same virtual environment as this Python) on DB, on 127.0.0.1
and a free port; queries its HTTP API (/api/studies, /api/studies/<id>) and checks that every
study of DUMP (written by write_study) is listed with its directions, and its trials with their
numbers, states and params; stops the server. Exits 1 listing the differences, or when the
server does not answer within TIMEOUT_S (default 90) seconds.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return json.loads(r.read())


def main():
    db, dump_path = sys.argv[1], sys.argv[2]
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 90.0
    with open(dump_path) as f:
        dump = json.load(f)
    port = free_port()
    exe = os.path.join(os.path.dirname(sys.executable), "optuna-dashboard")
    server = subprocess.Popen(
        [exe, f"sqlite:///{db}", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    errors = []
    try:
        deadline = time.monotonic() + timeout
        studies = None
        while time.monotonic() < deadline:
            if server.poll() is not None:
                sys.exit("optuna-dashboard exited: " + server.stderr.read().decode()[-2000:])
            try:
                listing = get(port, "/api/studies")
                # "study_summaries" in optuna-dashboard 0.x; "studies" in some forks/versions.
                studies = listing.get("study_summaries", listing.get("studies"))
                if studies is None:
                    sys.exit(f"/api/studies answered without a study list: {listing}")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        if studies is None:
            sys.exit(f"optuna-dashboard did not answer on port {port} within {timeout} s")
        by_name = {s["study_name"]: s for s in studies}
        for expected in dump["studies"]:
            name = expected["name"]
            listed = by_name.get(name)
            if listed is None:
                errors.append(f"study {name} is not listed (listed: {sorted(by_name)})")
                continue
            directions = [d.lower() for d in listed.get("directions", [])]
            want = [d.lower() for d in expected["directions"]]
            if directions != want:
                errors.append(f"study {name}: directions {directions}, expected {want}")
            detail = get(port, f"/api/studies/{listed['study_id']}?after=0")
            trials = detail.get("trials", [])
            if len(trials) != len(expected["trials"]):
                errors.append(f"study {name}: {len(trials)} trials, expected "
                              f"{len(expected['trials'])}")
            for got, exp in zip(sorted(trials, key=lambda t: t["number"]), expected["trials"]):
                where = f"study {name} trial {exp['number']}"
                if got["number"] != exp["number"]:
                    errors.append(f"{where}: number {got['number']}")
                if got["state"].upper() != exp["state"].upper():
                    errors.append(f"{where}: state {got['state']}, expected {exp['state']}")
                got_params = {p["name"] for p in got.get("params", [])}
                if got_params != set(exp["params"]):
                    errors.append(f"{where}: params {sorted(got_params)}, expected "
                                  f"{sorted(exp['params'])}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    if errors:
        print("\n".join(errors))
        sys.exit(1)
    print(f"dashboard: {len(dump['studies'])} studies and their trials listed on port {port}")


if __name__ == "__main__":
    main()
