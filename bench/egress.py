#!/usr/bin/env python3
"""egress.py — what the egress proxy costs (docs/network.md): throughput and latency through it
against the same client going straight to the same server, all on loopback, in one run.

A server on the host's loopback sends N bytes on "GET N" and answers "PING" lines with "PONG".
The same client code runs three ways:
  direct       on the host, connecting to the server itself (no sandbox, no proxy);
  connect      inside `sandboxer run`, through the proxy by HTTP CONNECT (what HTTPS_PROXY gives);
  transparent  inside `sandboxer run`, connecting to the name as if there were no proxy: the
               sandbox's resolver and the redirected connect() take it to the proxy.
Measured inside the client, so the sandbox's start-up does not count: MB/s of a 256 MiB transfer
(median of 5), the round trip of one small message on an open connection (p50, p99 of 2,000),
and a new connection with one round trip (p50, p99 of 200). Prints a table with the ratios to
direct; not a test (it never fails on a slow result). The goal (issue 23): CONNECT >= 80 % of
direct throughput.

  python3 bench/egress.py [--mib 256] [--runs 5]
Environment: SANDBOXER (default build/src/cli/sandboxer)."""
import argparse, json, os, socket, statistics, subprocess, sys, tempfile, threading

CLIENT = r'''
import json, socket, statistics, sys, time
mode, host, port, mib, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def dial():
    if mode == "connect":
        s = socket.create_connection(("127.0.0.1", 3128))
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
        head = b""
        while b"\r\n\r\n" not in head:
            k = s.recv(1)
            if not k:
                raise SystemExit("proxy closed")
            head += k
        if b" 200 " not in head.split(b"\r\n")[0]:
            raise SystemExit(head.decode())
    else:
        s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s
buf = bytearray(1 << 20)
rates = []
for _ in range(runs):
    s = dial()
    want = mib << 20
    t = time.perf_counter()
    s.sendall(b"GET %d\n" % want)
    got = 0
    while got < want:
        k = s.recv_into(buf)
        if not k:
            break
        got += k
    rates.append(got / (1 << 20) / (time.perf_counter() - t))
    s.close()
s = dial()
rtt = []
f = s.makefile("rb")
for _ in range(2000):
    t = time.perf_counter()
    s.sendall(b"PING\n")
    f.readline()
    rtt.append((time.perf_counter() - t) * 1e6)
s.close()
conn = []
for _ in range(200):
    t = time.perf_counter()
    c = dial()
    c.sendall(b"PING\n")
    c.makefile("rb").readline()
    conn.append((time.perf_counter() - t) * 1e6)
    c.close()
q = lambda v, p: sorted(v)[min(len(v) - 1, int(len(v) * p))]
print(json.dumps({"mbps": statistics.median(rates), "rtt_p50": q(rtt, .5), "rtt_p99": q(rtt, .99),
                  "conn_p50": q(conn, .5), "conn_p99": q(conn, .99)}))
'''


def serve(lsock):
    block = b"x" * (1 << 20)

    def one(c):
        f = c.makefile("rb")
        try:
            for line in f:
                if line.startswith(b"GET "):
                    n = int(line[4:])
                    while n > 0:
                        k = min(n, len(block))
                        c.sendall(block[:k])
                        n -= k
                    c.shutdown(socket.SHUT_WR)
                    return
                c.sendall(b"PONG\n")
        except OSError:
            pass
        finally:
            c.close()

    while True:
        try:
            c, _ = lsock.accept()
        except OSError:
            return
        threading.Thread(target=one, args=(c,), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    sbx = os.environ.get("SANDBOXER", os.path.join(os.path.dirname(__file__), "..", "build/src/cli/sandboxer"))
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    port = ls.getsockname()[1]
    threading.Thread(target=serve, args=(ls,), daemon=True).start()

    d = tempfile.mkdtemp(prefix="sbx-egress-bench.")
    pol, prof, cli = (os.path.join(d, n) for n in ("policy.yaml", "profile.yaml", "client.py"))
    os.chmod(d, 0o755)
    with open(pol, "w") as f:
        f.write('version: 1\nrun_as: 65534\nenforce: { best_effort: [memory_mb, cpus, scratch_mb] }\n'
                'modes: { balanced: { limits: { timeout_s: 300, budget_s: 600 } } }\n'
                'network: { egress_allowed: ["bench.example.test"], hosts: { "bench.example.test": "127.0.0.1" } }\n')
    with open(prof, "w") as f:
        f.write('id: bench.egress\nversion: "1.0.0"\nnetwork: { egress: ["bench.example.test"] }\n')
    with open(cli, "w") as f:
        f.write(CLIENT)
    for p in (pol, prof, cli):
        os.chmod(p, 0o644)

    rows = {}
    args = [str(a.mib), str(a.runs)]
    out = subprocess.run([sys.executable, cli, "direct", "127.0.0.1", str(port)] + args,
                         capture_output=True, text=True, check=True).stdout
    rows["direct"] = json.loads(out)
    for mode in ("connect", "transparent"):
        r = subprocess.run([sbx, "run", "--policy", pol, "--profile", prof, "--backend", "native",
                            "--", "python3", "-c", CLIENT, mode, "bench.example.test", str(port)] + args,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("%s: sandboxer run failed (%d): %s" % (mode, r.returncode, r.stderr.strip()))
        rows[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    ls.close()

    base = rows["direct"]
    print("%-12s %10s %7s %10s %10s %12s %12s" % ("path", "MB/s", "x", "rtt p50", "rtt p99", "conn p50", "conn p99"))
    for k, v in rows.items():
        print("%-12s %10.0f %7.2f %8.0fus %8.0fus %10.0fus %10.0fus" % (
            k, v["mbps"], v["mbps"] / base["mbps"], v["rtt_p50"], v["rtt_p99"], v["conn_p50"], v["conn_p99"]))
    for k in ("connect", "transparent"):
        v = rows[k]
        print("%s: %.0f %% of direct throughput; +%.0f us a round trip (p50), +%.0f us a new connection (p50)" % (
            k, 100 * v["mbps"] / base["mbps"], v["rtt_p50"] - base["rtt_p50"], v["conn_p50"] - base["conn_p50"]))


if __name__ == "__main__":
    main()
