"""The attacks of run_abuse_bench: hostile clients of `tuner serve-model`, each a loop of raw
HTTP/1.1 on its own sockets (Python's standard library only), run while wrk measures the
latency of ordinary clients.

  abuse_load.py body DATA_DIR ROWS OUT          a valid scoring body: ROWS Fashion-MNIST test
                                                images as [N, 1, 28, 28] pixels
  abuse_load.py attack CASE URL SECONDS BODY OUT
                                                runs one attack (or "all") for SECONDS (BODY: a
                                                valid body, for the attacks that need one) and
                                                writes what it saw as one JSON object to OUT
  abuse_load.py rss PID OUT                     samples the server's resident memory every
                                                0.2 s until stopped (SIGTERM), then writes the
                                                largest to OUT
  abuse_load.py table RESULTS.jsonl             the results as a table
"""

import gzip
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from urllib.parse import urlsplit

# What each attack sends; the server's limits (docs/serving.md) must refuse it early, cheaply,
# and without taking the ordinary clients' threads, memory or time.
CASES = {
    "many_keys": "a JSON object of 200,000 keys (2.2 MB), 2 senders in a loop",
    "wide_records": "dataframe_records: one record of 100,000 columns, 2 senders in a loop",
    "deep_nesting": "1,000,000 levels of nested arrays, 2 senders in a loop",
    "unfinished_bodies": "60 connections each announcing 63 MB and sending 8 MB of it, then idle",
    "slowloris": "400 connections sending a header byte every 5 s",
    "expect_continue": "Expect: 100-continue for 63 MB bodies never sent, 2 senders in a loop",
    "pipeline": "2,000 pipelined requests per connection, 2 connections in a loop",
}


def fail(message):
    print(f"abuse_load: {message}", file=sys.stderr)
    sys.exit(1)


def read_idx_images(path, count):
    with gzip.open(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 2051:
            fail(f"{path}: not an IDX image file")
        count = min(count, n)
        data = f.read(count * rows * cols)
    return [[list(data[(i * rows + r) * cols:(i * rows + r + 1) * cols]) for r in range(rows)]
            for i in range(count)]


def body(data_dir, rows, out):
    images = read_idx_images(os.path.join(data_dir, "t10k-images-idx3-ubyte.gz"), rows)
    with open(out, "w") as f:
        json.dump({"inputs": [[image] for image in images]}, f, separators=(",", ":"))


class Target:
    def __init__(self, url):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def connect(self, timeout=30):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def head(self, length, extra=""):
        return (f"POST /invocations HTTP/1.1\r\nHost: {self.host}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {length}\r\n{extra}\r\n").encode()


def read_status(s):
    """The status code of the next response on `s` (its head only), or None at a close."""
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return None
        data += chunk
    return int(data.split(b" ", 2)[1])


def read_response(s, pending=b""):
    """Reads one whole response (Content-Length framed); returns (status, bytes left over)."""
    data = pending
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            return status, b""
        rest += chunk
    return status, rest[length:]


class Tally:
    """What the attackers saw: answers by status, refusals' latency, connection errors."""

    def __init__(self):
        self.lock = threading.Lock()
        self.statuses = {}
        self.latencies = []
        self.errors = {}

    def answer(self, status, seconds):
        with self.lock:
            key = str(status) if status is not None else "closed"
            self.statuses[key] = self.statuses.get(key, 0) + 1
            self.latencies.append(seconds)

    def error(self, e):
        with self.lock:
            key = type(e).__name__
            self.errors[key] = self.errors.get(key, 0) + 1

    def summary(self):
        with self.lock:
            lat = sorted(self.latencies)
            pick = lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 1) if lat else None
            return {"answers": dict(self.statuses), "answer_ms_p50": pick(0.5),
                    "answer_ms_p99": pick(0.99), "connection_errors": dict(self.errors)}


def loop_senders(target, payload, until, tally, senders=2):
    def send():
        while time.time() < until:
            try:
                with target.connect() as s:
                    start = time.time()
                    s.sendall(target.head(len(payload), "Connection: close\r\n") + payload)
                    tally.answer(read_status(s), time.time() - start)
            except OSError as e:
                tally.error(e)
                time.sleep(0.05)
    return [threading.Thread(target=send, daemon=True) for _ in range(senders)]


def many_keys(target, until, tally, _valid):
    payload = ("{" + ",".join(f'"k{i}":0' for i in range(200_000)) + "}").encode()
    return loop_senders(target, payload, until, tally)


def wide_records(target, until, tally, _valid):
    record = "{" + ",".join(f'"c{i}":0' for i in range(100_000)) + "}"
    return loop_senders(target, ('{"dataframe_records":[' + record + "]}").encode(), until, tally)


def deep_nesting(target, until, tally, _valid):
    return loop_senders(target, b"[" * 1_000_000 + b"]" * 1_000_000, until, tally)


def unfinished_bodies(target, until, tally, _valid):
    def hold():
        try:
            s = target.connect()
        except OSError as e:
            tally.error(e)
            return
        with s:
            start = time.time()
            try:
                s.sendall(target.head(63 << 20))
                chunk = b"0" * (1 << 20)
                for _ in range(8):
                    s.sendall(chunk)
                s.settimeout(max(0.1, until - time.time()))
                # The server answers 503 when its buffers are full, else waits for the rest.
                tally.answer(read_status(s), time.time() - start)
            except socket.timeout:
                tally.answer("held open", time.time() - start)
            except (BrokenPipeError, ConnectionResetError):
                tally.answer("closed while sending", time.time() - start)
            except OSError as e:
                tally.error(e)
    return [threading.Thread(target=hold, daemon=True) for _ in range(60)]


def slowloris(target, until, tally, _valid):
    def drip(sockets):
        head = b"POST /invocations HTTP/1.1\r\nHost: x\r\nX-Slow: "
        sent = {id(s): 0 for s in sockets}
        while time.time() < until and sockets:
            for s in list(sockets):
                try:
                    s.send(head[sent[id(s)]:sent[id(s)] + 1] or b"a")
                    sent[id(s)] += 1
                except OSError as e:
                    tally.answer("cut", 0)
                    sockets.remove(s)
            time.sleep(min(5, max(0, until - time.time())))
        for s in sockets:
            tally.answer("held open", 0)
            s.close()

    def start():
        sockets = []
        for _ in range(400):
            try:
                sockets.append(target.connect())
            except OSError as e:
                tally.error(e)
        drip(sockets)
    return [threading.Thread(target=start, daemon=True)]


def expect_continue(target, until, tally, _valid):
    # The answer is "100 Continue" at once (the server will take the body), or a refusal; the
    # client then goes without sending a byte of it.
    def send():
        while time.time() < until:
            try:
                with target.connect() as s:
                    start = time.time()
                    s.sendall(target.head(63 << 20, "Expect: 100-continue\r\n"))
                    tally.answer(read_status(s), time.time() - start)
            except OSError as e:
                tally.error(e)
                time.sleep(0.05)
    return [threading.Thread(target=send, daemon=True) for _ in range(2)]


def pipeline(target, until, tally, valid):
    def send():
        while time.time() < until:
            try:
                with target.connect() as s:
                    start = time.time()
                    s.sendall(target.head(len(valid)) + valid + (target.head(len(valid)) + valid) * 1999)
                    left = b""
                    for _ in range(2000):
                        status, left = read_response(s, left)
                        if status is None:
                            break
                        tally.answer(status, time.time() - start)
            except OSError as e:
                tally.error(e)
                time.sleep(0.05)
    return [threading.Thread(target=send, daemon=True) for _ in range(2)]


ATTACKS = {"many_keys": many_keys, "wide_records": wide_records, "deep_nesting": deep_nesting,
           "unfinished_bodies": unfinished_bodies, "slowloris": slowloris,
           "expect_continue": expect_continue, "pipeline": pipeline}


def attack(case, url, seconds, valid_body, out):
    target = Target(url)
    with open(valid_body, "rb") as f:
        valid = f.read()
    until = time.time() + seconds
    cases = list(ATTACKS) if case == "all" else [case]
    tallies = {c: Tally() for c in cases}
    threads = []
    for c in cases:
        threads += ATTACKS[c](target, until, tallies[c], valid)
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, until - time.time()) + 5)
    with open(out, "w") as f:
        json.dump({c: tallies[c].summary() for c in cases}, f)


def rss(pid, out):
    largest = 0
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    while not stop.is_set():
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        largest = max(largest, int(line.split()[1]) * 1024)
        except OSError:
            break
        stop.wait(0.2)
    with open(out, "w") as f:
        json.dump({"rss_max_bytes": largest}, f)


def table(path):
    rows = [json.loads(line) for line in open(path)]
    runs = [r for r in rows if r.get("kind") == "run"]
    print(f"{'case':<18} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'p99 x':>6} {'errors':>6} "
          f"{'RSS MB':>7}  attackers' answers")
    for r in runs:
        answers = "; ".join(f"{c}: {s['answers']}" for c, s in r.get("attack", {}).items())
        print(f"{r['case']:<18} {r['requests_per_s']:>8.0f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
              f"{r['p99_ratio']:>6.2f} {r['errors']:>6} {r['server_rss_max_mb']:>7.0f}  {answers}")
    verdict = [r for r in rows if r.get("kind") == "verdict"]
    if verdict:
        print(verdict[-1]["text"])


def main(argv):
    if len(argv) >= 2:
        cmd, args = argv[1], argv[2:]
        if cmd == "body" and len(args) == 3:
            return body(args[0], int(args[1]), args[2])
        if cmd == "attack" and len(args) == 5 and (args[0] in ATTACKS or args[0] == "all"):
            return attack(args[0], args[1], float(args[2]), args[3], args[4])
        if cmd == "rss" and len(args) == 2:
            return rss(int(args[0]), args[1])
        if cmd == "table" and len(args) == 1:
            return table(args[0])
    fail("usage: see the module's docstring; cases: " + ", ".join(ATTACKS) + ", all")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
