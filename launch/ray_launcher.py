#!/usr/bin/env python3
"""tuner's Ray launcher: starts a sweep's executors as actors on a Ray cluster.

`tuner sweep` (launch/ray_launcher.h, RayLauncher) runs this program with the Python that has
`ray` (executors.ray.python) and talks to it in JSON lines, one object a line, over its stdin and
stdout. It uses Ray's public API only: ray.init, one actor per executor created with
.options(name=, namespace=, num_cpus=, num_gpus=, memory=), ray.wait, ray.kill, ray.nodes,
ray.cluster_resources, ray.available_resources and ray.get_runtime_context. ADDRESS may be a
Ray Client address (ray://HOST:PORT): everything here works through Ray Client too.

Protocol, version 1. tuner to this program:
  {"op": "init", "version": 1, "name": STUDY, "address": ADDRESS, "num_cpus": C, "num_gpus": G,
   "memory": BYTES (optional), "runtime_env": {...} (optional), "tuner": PATH, "connect": ENDPOINT,
   "slots": N, "key": TEXT, "coordinator_key": TEXT, "infeasible_timeout": SECONDS}   first, once
  {"op": "start", "ids": ["ray-q3x9ab-1", ...]}   one executor each
  {"op": "stop", "ids": [...]}                    kills their actors
  {"op": "stop_all"}                              kills every actor; then stdin closes
This program to tuner:
  {"event": "ready", "version": 1, "message": "CPU 2, GPU 0, ..."}   ray.init succeeded
  {"event": "state", "id": ID, "state": "pending"|"running"|"exited", "node": ADDR,
   "actor_id": HEX, "reason": TEXT}
      "pending" when asked for, and again whenever why it waits changes ("reason": empty while
      Ray places it, else that no live node has what it asks for, or that the cluster does not
      have it free now); "running" once placed ("node" and Ray's "actor_id"); "exited" with
      why ("reason": the executor's exit status and last lines, or what Ray says of its
      actor's death).
  {"event": "log", "message": TEXT}
  {"event": "error", "message": TEXT}   it cannot go on; it kills its actors and exits 1
When its stdin closes (tuner ended, however) it kills every actor and exits.

Each executor's actor is named after its id, in the namespace "tuner" (ACTOR_NAMESPACE), so
that Ray's tools find it (`ray list actors --filter name=ID` where the cluster has Ray's
dashboard; ray.get_actor(ID, namespace="tuner")).

The keys ("key": the executors' .key file, "coordinator_key": the coordinator's .pub file) travel
inside Ray's own channel as the actor's arguments, never on a command line; on the node the actor
hands them to `tuner executor` through pipes it reads as /dev/fd/N, so no key is written to the
node's disk. The executor runs with a parent-death signal: when its actor dies (ray.kill, the
actor's owner gone), the executor gets SIGTERM and stops (its trials run again elsewhere).
"""

import json
import os
import queue
import signal
import sys
import threading
import time

PROTOCOL_VERSION = 1
# The last lines of an executor's output said when it ends.
OUTPUT_LINES = 10
# A pending executor whose resources some node has, but not free, is said after this long.
BUSY_NOTICE_SECONDS = 60
# How often why pending executors wait is looked at again (ray.nodes(), a call to the cluster).
PENDING_LOOK_SECONDS = 2
# A pending executor is said to wait for free resources only after this long: before, the
# resources missing may be the ones Ray took for it while its worker starts.
NOT_PLACED_SECONDS = 10
# How many times ray.init is tried in all when Ray Client's server fails to start a connection
# (its process for the connection can die as it starts on a loaded head; a new one usually lives).
CLIENT_INIT_TRIES = 3
# The Ray namespace of the executors' named actors.
ACTOR_NAMESPACE = "tuner"

# Runs in the executor's process before it becomes `tuner executor`: SIGTERM when the actor's
# process (its parent) dies, then exec. argv: PARENT_PID PROGRAM ARGS...
EXEC_WITH_PARENT_DEATH_SIGNAL = r"""
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
try:
    os.execv(sys.argv[2], sys.argv[2:])
except OSError as e:
    print("cannot run %s: %s" % (sys.argv[2], e.strerror), file=sys.stderr)
    sys.exit(127)
"""


class Output:
    """The protocol's output: this process's stdout as it started. What anything else prints
    (Ray's messages) goes to stderr."""

    def __init__(self):
        self._file = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        self._lock = threading.Lock()

    def send(self, **message):
        with self._lock:
            self._file.write(json.dumps(message) + "\n")
            self._file.flush()


def read_input(lines):
    """Puts each line of stdin on `lines`; None at its end."""
    for line in sys.stdin:
        line = line.strip()
        if line:
            lines.put(line)
    lines.put(None)


def describe(resources, also=()):
    """{"CPU": 2.0, "memory": 8e9} as "CPU 2, memory 7.5 GiB"; the names in `also` that it lacks
    as 0 ("GPU 0")."""
    resources = dict(resources)
    for name in also:
        resources.setdefault(name, 0)
    parts = []
    for name in sorted(resources):
        if name.startswith("node:") or name == "object_store_memory":
            continue
        value = resources[name]
        if name == "memory":
            parts.append("memory %.1f GiB" % (value / 2**30))
        else:
            parts.append("%s %g" % (name, value))
    return ", ".join(parts) if parts else "nothing"


def ray_error_reason(error):
    """What Ray says of an actor's death (ActorDiedError and the like) in one line: its message
    without the lines that only name the actor ("\tactor_id: ...")."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    names = ("class_name", "actor_id", "pid", "name", "namespace", "ip")
    said = [line for line in lines[1:] if line.split(":", 1)[0] not in names]
    return " ".join(lines[:1] + said) if lines else type(error).__name__


def make_executor_class(ray):
    @ray.remote(max_restarts=0)
    class TunerExecutor:
        """One `tuner executor` on the actor's node, for the actor's life."""

        def node(self):
            context = ray.get_runtime_context()
            return {"node_id": context.get_node_id(), "actor_id": context.get_actor_id() or ""}

        def run(self, argv, key_text, coordinator_key_text):
            import subprocess
            import tempfile

            key_fds = []
            for text in (key_text, coordinator_key_text):
                read_end, write_end = os.pipe()
                os.write(write_end, text.encode())  # a key file is far below a pipe's buffer
                os.close(write_end)
                key_fds.append(read_end)
            argv = argv + ["--key", "/dev/fd/%d" % key_fds[0],
                           "--coordinator-key", "/dev/fd/%d" % key_fds[1]]
            with tempfile.TemporaryFile() as output:
                process = subprocess.Popen(
                    [sys.executable, "-c", EXEC_WITH_PARENT_DEATH_SIGNAL, str(os.getpid())] + argv,
                    stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                    pass_fds=key_fds, start_new_session=True)
                for fd in key_fds:
                    os.close(fd)
                code = process.wait()
                output.seek(0)
                lines = output.read().decode(errors="replace").splitlines()
            lines = [line for line in lines if line.strip()][-OUTPUT_LINES:]
            return {"code": code, "output": lines}

    return TunerExecutor


class Launcher:
    def __init__(self, ray, init, out):
        self.ray = ray
        self.init = init
        self.out = out
        self.executor_class = make_executor_class(ray)
        self.resources = {"CPU": float(init.get("num_cpus", 1))}
        if init.get("num_gpus"):
            self.resources["GPU"] = float(init["num_gpus"])
        if init.get("memory"):
            self.resources["memory"] = float(init["memory"])
        # id -> {"actor", "node_ref", "run_ref", "since", "running", "said_busy", "reason"}
        self.executors = {}
        self.next_pending_look = 0.0

    def argv(self, executor_id):
        return [self.init["tuner"], "executor", "--connect", self.init["connect"],
                "--slots", str(self.init.get("slots", 1)), "--id", executor_id]

    def start(self, executor_id):
        options = {"name": executor_id, "namespace": ACTOR_NAMESPACE,
                   "num_cpus": self.resources["CPU"], "num_gpus": self.resources.get("GPU", 0)}
        if "memory" in self.resources:
            options["memory"] = self.resources["memory"]
        actor = self.executor_class.options(**options).remote()
        self.executors[executor_id] = {
            "actor": actor,
            "node_ref": actor.node.remote(),
            "run_ref": actor.run.remote(self.argv(executor_id), self.init["key"],
                                        self.init["coordinator_key"]),
            "since": time.monotonic(),
            "running": False,
            "said_busy": False,
            "reason": "",
        }
        self.out.send(event="state", id=executor_id, state="pending")

    def stop(self, executor_id, reason):
        executor = self.executors.pop(executor_id, None)
        if executor is None:
            return
        try:
            self.ray.kill(executor["actor"], no_restart=True)
        except Exception as e:  # an actor already gone
            self.out.send(event="log", message="ray.kill of %s: %s" % (executor_id, e))
        self.out.send(event="state", id=executor_id, state="exited", reason=reason)

    def stop_all(self, reason):
        for executor_id in list(self.executors):
            self.stop(executor_id, reason)

    def handle(self, message):
        op = message.get("op")
        if op == "start":
            for executor_id in message["ids"]:
                self.start(executor_id)
        elif op == "stop":
            for executor_id in message["ids"]:
                self.stop(executor_id, "stopped")
        elif op == "stop_all":
            self.stop_all("stopped: the study's run ended")
        else:
            self.out.send(event="log", message="unknown op %r ignored" % op)

    def look(self):
        """Says the executors that started or ended; raises RuntimeError for one that cannot be
        placed."""
        if not self.executors:
            return
        node_refs = {e["node_ref"]: i for i, e in self.executors.items() if not e["running"]}
        run_refs = {e["run_ref"]: i for i, e in self.executors.items()}
        refs = list(node_refs) + list(run_refs)
        done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in done:
            if ref in node_refs and node_refs[ref] in self.executors:
                executor_id = node_refs[ref]
                try:
                    placed = self.ray.get(ref)
                except Exception:
                    continue  # its run ends too, and says why
                self.executors[executor_id]["running"] = True
                self.out.send(event="state", id=executor_id, state="running",
                              node=self.node_address(placed["node_id"]),
                              actor_id=placed["actor_id"])
        for ref in done:
            if ref in run_refs and run_refs[ref] in self.executors:
                executor_id = run_refs[ref]
                try:
                    result = self.ray.get(ref)
                    reason = "tuner executor exited with code %d" % result["code"]
                    if result["code"] < 0:
                        reason = "tuner executor was killed by signal %d" % -result["code"]
                    if result["output"]:
                        reason += "; its output:\n    | " + "\n    | ".join(result["output"])
                except Exception as e:
                    reason = "its actor failed: %s" % ray_error_reason(e)
                executor = self.executors.pop(executor_id)
                try:
                    self.ray.kill(executor["actor"], no_restart=True)  # its resources freed
                except Exception:
                    pass  # the actor that failed is gone already
                self.out.send(event="state", id=executor_id, state="exited", reason=reason)
        now = time.monotonic()
        pending = [i for i, e in self.executors.items() if not e["running"]]
        if not pending or now < self.next_pending_look:
            return
        self.next_pending_look = now + PENDING_LOOK_SECONDS
        fits = self.fits()
        for executor_id in pending:
            executor = self.executors[executor_id]
            waited = now - executor["since"]
            reason = self.pending_reason(fits, waited) if waited >= PENDING_LOOK_SECONDS else ""
            if reason != executor["reason"]:
                executor["reason"] = reason
                self.out.send(event="state", id=executor_id, state="pending", reason=reason)
            if waited >= float(self.init.get("infeasible_timeout", 20)) and not fits:
                raise RuntimeError(
                    "Ray cannot place the executor %s of sweep '%s': it asks for %s, and no node "
                    "of the cluster has that much (waited %d s); the cluster has %s "
                    "(ray.cluster_resources()): lower executors.ray.cpus_per_executor, "
                    "gpus_per_executor or memory, or add nodes that have them"
                    % (executor_id, self.init.get("name", ""), describe(self.resources),
                       waited, describe(self.ray.cluster_resources(), self.resources)))
            if waited >= BUSY_NOTICE_SECONDS and not executor["said_busy"]:
                executor["said_busy"] = True
                self.out.send(event="log", message=(
                    "executor %s waits for resources (%s); free now: %s"
                    % (executor_id, describe(self.resources),
                       describe(self.ray.available_resources()))))

    def node_address(self, node_id):
        """The address by which Ray knows the node `node_id` (its NodeManagerAddress)."""
        for node in self.ray.nodes():
            if node.get("NodeID") == node_id:
                return node.get("NodeManagerAddress", node_id)
        return node_id

    def pending_reason(self, fits, waited):
        """Why an executor that Ray has not placed yet waits, as Ray's resources show it; empty
        while the cluster has what it asks for free, or it may be starting (NOT_PLACED_SECONDS)."""
        if not fits:
            return ("infeasible: it asks for %s, and no live node of the cluster has that much "
                    "(the cluster has %s)" % (describe(self.resources),
                                              describe(self.ray.cluster_resources(),
                                                       self.resources)))
        if waited < NOT_PLACED_SECONDS:
            return ""
        free = self.ray.available_resources()
        if all(free.get(name, 0) >= amount for name, amount in self.resources.items()):
            return ""
        # Ray's public API does not tell an actor that waits for resources from one whose
        # worker starts on resources it took: one whose worker takes longer than
        # NOT_PLACED_SECONDS to start is "not placed yet" too.
        return "not placed yet: it asks for %s, free now %s" % (
            describe(self.resources), describe(free, self.resources))

    def fits(self):
        """Whether some live node of the cluster has the resources one executor asks for."""
        for node in self.ray.nodes():
            if not node.get("Alive"):
                continue
            has = node.get("Resources", {})
            if all(has.get(name, 0) >= amount for name, amount in self.resources.items()):
                return True
        return False


def connect(ray, kwargs, out):
    """ray.init(**kwargs). Through Ray Client, a failure the server reports (it reached the
    cluster, but the server process it starts for this connection died) is tried again, up to
    CLIENT_INIT_TRIES in all, each retry said as a log event; any other failure is raised."""
    for attempt in range(1, CLIENT_INIT_TRIES + 1):
        try:
            ray.init(**kwargs)
            return
        except ConnectionAbortedError as e:
            if not kwargs["address"].startswith("ray://") or attempt == CLIENT_INIT_TRIES:
                raise
            out.send(event="log", message=(
                "ray.init(address=%r): Ray Client's server failed to start the connection "
                "(%s); trying again (%d of %d)" % (kwargs["address"], " ".join(str(e).split()),
                                                   attempt + 1, CLIENT_INIT_TRIES)))
            try:
                ray.shutdown()
            except Exception:
                pass
            time.sleep(attempt)


def main():
    out = Output()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # ends as when stdin closes
    first = sys.stdin.readline()
    try:
        init = json.loads(first)
    except ValueError:
        out.send(event="error", message="the Ray launcher expected its init line, got %r" % first)
        return 1
    if init.get("op") != "init" or init.get("version") != PROTOCOL_VERSION:
        out.send(event="error", message=(
            "the Ray launcher %s speaks version %d of its protocol, and this tuner another: "
            "install the two together" % (os.path.abspath(__file__), PROTOCOL_VERSION)))
        return 1
    try:
        import ray
    except ImportError as e:
        out.send(event="error", message=(
            "%s cannot import ray (%s): install it there (pip install ray) or give "
            "executors.ray.python, a Python that has it" % (sys.executable, e)))
        return 1
    address = init["address"]
    try:
        kwargs = {"address": address, "log_to_driver": False, "logging_level": "WARNING"}
        if init.get("runtime_env"):
            kwargs["runtime_env"] = init["runtime_env"]
        connect(ray, kwargs, out)
    except Exception as e:
        text = " ".join(str(e).split())
        out.send(event="error", message=(
            "ray.init(address=%r) failed: %s: %s; is a Ray cluster running there "
            "(executors.ray.address)?" % (address, type(e).__name__, text)))
        return 1
    launcher = Launcher(ray, init, out)
    out.send(event="ready", version=PROTOCOL_VERSION, message=describe(ray.cluster_resources()))

    lines = queue.Queue()
    threading.Thread(target=read_input, args=(lines,), daemon=True).start()
    try:
        while True:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                line = ""
            if line is None:
                break  # stdin closed: tuner is done or gone
            if line:
                launcher.handle(json.loads(line))
            launcher.look()
    except RuntimeError as e:  # said for tuner's user
        out.send(event="error", message=str(e))
        return 1
    except Exception as e:  # Ray's own (the cluster gone), or a line not of the protocol
        out.send(event="error", message="the Ray launcher failed: %s: %s"
                 % (type(e).__name__, " ".join(str(e).split())))
        return 1
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        launcher.stop_all("stopped: the study's run ended")
    return 0


if __name__ == "__main__":
    sys.exit(main())
