#!/usr/bin/env python3
"""A fragmenting workload for a key-value server (Debian's redis-server), with readings of the
server's own jemalloc statistics.

Run by scripts/real-server.sh against a server being recorded by `fragsim record`. Before each
reading it stores a marker value whose size no other request has (MARK_BASE + 4096 * i + 17
bytes), so the reading can be placed in the trace: the server's first allocation of at least
that size is the marker's, and the reading (`INFO memory`, read after the server's cron has
refreshed it) follows it within a few calls.

Writes one CSV line per reading to standard output:
reading,marker_bytes,allocated,active,resident
"""
import random
import time
import socket
import subprocess
import sys

MARK_BASE = 700_000
SIZES = [8, 20, 40, 72, 100, 150, 220, 300, 500, 800, 1500, 3000]


class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind in (b"+", b":"):
            return rest
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(1 << 16)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            return [self._reply() for _ in range(int(rest))]
        raise RuntimeError(f"unexpected reply {line!r}")

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def pipeline(self, commands, batch=500):
        for i in range(0, len(commands), batch):
            part = commands[i:i + batch]
            self.sock.sendall(b"".join(self.encode(*c) for c in part))
            for _ in part:
                self._reply()

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        return self._reply()


def read_stats(text):
    """jemalloc's statistics as `INFO memory` gives them: stats.allocated, active and resident,
    which the server reads by mallctl in its cron (every 100 ms). The workload waits for a cron
    run after the marker, so the reading is the state at one event of the server's idle cron.
    (`MEMORY MALLOC-STATS` is fresher but jemalloc allocates its 64 KiB print buffer
    internally, unrecorded, before it reads the epoch.)"""
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return [int(fields[k]) for k in ("allocator_allocated", "allocator_active",
                                     "allocator_resident")]


def main():
    sock, bench, n = sys.argv[1], sys.argv[2] == "bench", int(sys.argv[3])
    rng = random.Random(20261204)
    c = Client(sock)
    reading = [0]

    def take():
        i = reading[0]
        size = MARK_BASE + 4096 * i + 17
        c.call("SET", "__fragsim_mark", b"m" * size)
        # The server reads jemalloc in its cron (every 100 ms): two readings a cron or more
        # apart that agree on allocated and active are of the idle server after the marker
        # (a slow machine may not have run the cron yet after the first wait).
        stats = None
        for _ in range(20):
            time.sleep(0.25)
            now = read_stats(c.call("INFO", "memory").decode())
            if stats is not None and now[:2] == stats[:2]:
                break
            stats = now
        print(",".join(str(x) for x in [i, size] + now), flush=True)
        reading[0] += 1

    print("reading,marker_bytes,allocated,active,resident", flush=True)
    take()
    c.pipeline([("SET", f"k:{i}", b"v" * SIZES[i % len(SIZES)]) for i in range(n // 2)])
    take()
    c.pipeline([("SET", f"k:{i}", b"v" * SIZES[i % len(SIZES)]) for i in range(n // 2, n)])
    take()
    c.pipeline([("RPUSH", f"l:{i % 500}", b"e" * (16 + i % 200)) for i in range(n // 4)])
    c.pipeline([("HSET", f"h:{i % 1000}", f"f{i}", b"x" * (8 + i % 90)) for i in range(n // 4)])
    take()
    doomed = rng.sample(range(n), n // 2)
    c.pipeline([("DEL", f"k:{i}") for i in doomed])
    take()
    c.pipeline([("SET", f"m:{i}", b"w" * (24 + (i * 37) % 700)) for i in range(n * 3 // 10)])
    take()
    if bench:
        subprocess.run(["redis-benchmark", "-s", sock, "-c", "20", "-n", str(n * 3 // 10), "-r", str(n // 4),
                        "-d", "120", "-t", "set,get,lpush,hset", "-q"],
                       check=True, stdout=subprocess.DEVNULL)
    take()
    c.pipeline([("DEL", f"l:{i}") for i in range(0, 500, 2)])
    take()
    # jemalloc's own full statistics once the readings are over (this one allocates its print
    # buffer inside the allocator, unrecorded, so it comes last).
    if len(sys.argv) > 4:
        with open(sys.argv[4], "w") as f:
            f.write(c.call("MEMORY", "MALLOC-STATS").decode())


if __name__ == "__main__":
    main()
