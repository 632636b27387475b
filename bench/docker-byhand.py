#!/usr/bin/env python3
"""docker-byhand.py — the docker backend's "by hand": the requests a person would send to the
engine to run sandboxer's container themselves, with sandboxer's own create body.

    docker-byhand.py RUNS SOCKET BODY_FILE -- SANDBOXER_COMMAND...

BODY_FILE holds the body of the create request sandboxer sent (SANDBOXER_DEBUG_ARGV=1 prints it).
By hand is: create (that body, a name of our own), attach (before start, as sandboxer does, so no
output is lost), start, the stream to its end (stdin closed), inspect (the exit code; a wait
only if it still runs), delete: the least a client must send. What sandboxer sends beyond those
(the engine's _ping, the leftover check) is its overhead, and is counted as such.

The by-hand side runs inside this process and its time is the requests alone; the sandboxer
side is a whole process (its start and exit, and this process's fork and exec of it), so the
comparison leans against sandboxer. The two alternate, pair after pair; prints
"median_sandboxer median_by_hand median_of_differences low high" in ms (low..high: the 95%
interval of that median), or "nan ..." when a run fails. PAIR_SETTLE (seconds, default 0) is
slept after each run.
"""
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import time

API = "/v1.41"


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def request(path, method, url, body=b"", ctype=None):
    """One request on a fresh connection (Connection: close); returns (status, body)."""
    s = connect(path)
    head = "%s %s HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n" % (method, url)
    if ctype:
        head += "Content-Type: %s\r\n" % ctype
    head += "Content-Length: %d\r\n\r\n" % len(body)
    s.sendall(head.encode() + body)
    data = b""
    while True:
        k = s.recv(65536)
        if not k:
            break
        data += k
    s.close()
    h, _, rest = data.partition(b"\r\n\r\n")
    status = int(h.split(b" ", 2)[1])
    if b"chunked" in h.lower():
        out, p = b"", rest
        while p:
            n, _, p = p.partition(b"\r\n")
            n = int(n, 16) if n.strip() else 0
            if n == 0:
                break
            out, p = out + p[:n], p[n + 2:]
        rest = out
    return status, rest


def by_hand(sock, body, name):
    st, r = request(sock, "POST", API + "/containers/create?name=" + name, body, "application/json")
    if st != 201:
        raise RuntimeError("create: %d %s" % (st, r[:200]))
    cid = json.loads(r)["Id"]
    a = connect(sock)
    a.sendall(("POST %s/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\n"
               "Host: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n"
               % (API, cid)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        k = a.recv(8192)
        if not k:
            raise RuntimeError("attach: closed")
        head += k
    st, r = request(sock, "POST", API + "/containers/%s/start" % cid)
    if st not in (204, 304):
        raise RuntimeError("start: %d %s" % (st, r[:200]))
    a.shutdown(socket.SHUT_WR)          # stdin: at its end
    while a.recv(65536):                # the output, to the end of the stream
        pass
    a.close()
    code = exited(sock, cid)
    if code is None:                    # it closed its output and runs on: wait for it
        st, r = request(sock, "POST", API + "/containers/%s/wait" % cid)
        code = json.loads(r)["StatusCode"] if st == 200 else -1
    request(sock, "DELETE", API + "/containers/%s?force=1" % cid)
    return code


def exited(sock, cid):
    """The exit code if the engine says the container has ended, else None."""
    st, r = request(sock, "GET", API + "/containers/%s/json" % cid)
    state = json.loads(r).get("State", {}) if st == 200 else {}
    return None if state.get("Running", True) else state.get("ExitCode")


def main():
    runs, sock, body_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    spec = json.load(open(body_file))
    # the owner label names this process, so that a sandboxer run's leftover check (which deletes
    # the containers of dead owners) leaves ours alone
    ns = os.stat("/proc/self/ns/pid").st_ino
    spec.setdefault("Labels", {})["io.sandboxer.owner"] = "%d.%x" % (os.getpid(), ns)
    body = json.dumps(spec).encode()
    # PAIR_SETTLE seconds after each run: what the engine does after a delete (podman's storage
    # clean-up) ends before the next run starts, instead of slowing whichever run comes next
    settle = float(os.environ.get("PAIR_SETTLE", "0"))
    ta, tb = [], []
    for n in range(runs + 3):
        t0 = time.perf_counter()
        ra = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode
        x = (time.perf_counter() - t0) * 1000
        time.sleep(settle)
        t0 = time.perf_counter()
        try:
            rb = by_hand(sock, body, "sandboxer-byhand-%d-%d" % (os.getpid(), n))
        except (OSError, RuntimeError, ValueError, KeyError) as err:
            print("docker-byhand.py: %s" % err, file=sys.stderr)
            rb = -1
        y = (time.perf_counter() - t0) * 1000
        time.sleep(settle)
        if ra != 0 or rb != 0:
            print("nan nan nan nan nan")
            return
        if n >= 3:
            ta.append(x)
            tb.append(y)
    d = sorted(x - y for x, y in zip(ta, tb))
    k = 1.96 * math.sqrt(len(d)) / 2  # the median's 95% interval: order statistics (sign test)
    lo, hi = d[max(0, math.floor(len(d) / 2 - k))], d[min(len(d) - 1, math.ceil(len(d) / 2 + k))]
    print("%.2f %.2f %.2f %.2f %.2f" % (statistics.median(ta), statistics.median(tb), statistics.median(d), lo, hi))


if __name__ == "__main__":
    main()
