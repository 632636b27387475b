#!/usr/bin/env python3
"""serve.py — the control plane's figures, over HTTP on a unix socket, against a fresh
`sandboxer serve` this script starts (and stops) with its own state and runtime dirs:

  1. create-to-first-exec-result: POST /v1/sandboxes then POST .../exec ["true"], sequential,
     p50 / p90 / p99 (each sandbox destroyed after, untimed); exec into a ready sandbox against a
     bare spawn of `true` by the same client, and create-to-first-exec against `sandboxer run --
     true`, each pair interleaved round by round (ratio of medians, and paired);
  2. creates per second with C concurrent clients (then all destroyed);
  3. N idle sandboxes held at once (default 1000): the server's RSS growth, the memory of a
     supervisor + init pair (PSS, from /proc/PID/smaps_rollup), exec into a sample of them;
  4. the load test: C clients doing create → exec → destroy for D seconds: errors, and what is
     left afterwards (supervisors, inits, sockets, state dirs, server fds).

usage: bench/serve.py [--n-latency 200] [--clients 8] [--n-creates 400] [--idle 1000]
                      [--load-clients 64] [--load-seconds 60] [--only latency,creates,idle,load]
Prints figures; exits 1 when the load test saw an error or a leak."""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SBX = os.environ.get("SANDBOXER", os.path.join(ROOT, "build", "src", "cli", "sandboxer"))


class Unix(http.client.HTTPConnection):
    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.p = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.p)


class Client:
    def __init__(self, sock):
        self.sock = sock
        self.c = None

    def req(self, method, path, body=None):
        for attempt in range(2):
            if self.c is None:
                self.c = Unix(self.sock)
            try:
                self.c.request(method, path, body=json.dumps(body) if body is not None else None)
                r = self.c.getresponse()
                data = r.read()
                return r.status, json.loads(data) if data else None
            except (ConnectionError, http.client.HTTPException, socket.timeout):
                self.c.close()
                self.c = None
                if attempt:
                    raise
        return 0, None


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def pss_kb(pid):
    try:
        for line in open("/proc/%d/smaps_rollup" % pid):
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def procs(state):
    sv, init = [], []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
            st = open("/proc/%s/stat" % p).read()
        except OSError:
            continue
        if st[st.rindex(")") + 2] == "Z":
            continue
        if len(cmd) > 1 and (cmd[1] == b"supervise" or cmd[0].endswith(b"sandboxer-supervise")) and any(state.encode() in a for a in cmd):
            sv.append(int(p))
    for s in sv:
        try:
            kids = open("/proc/%d/task/%d/children" % (s, s)).read().split()
            init += [int(k) for k in kids]
        except OSError:
            pass
    return sv, init


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-latency", type=int, default=200)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--n-creates", type=int, default=400)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--load-clients", type=int, default=64)
    ap.add_argument("--load-seconds", type=float, default=60)
    ap.add_argument("--only", default="latency,creates,idle,load")
    ap.add_argument("--warm", type=int, default=4, help="warm pool size for the warm latency run (0: skip it)")
    a = ap.parse_args()
    only = set(a.only.split(","))

    tmp = tempfile.mkdtemp(prefix="sbx-bench-serve.")
    os.chmod(tmp, 0o755)
    state, run = os.path.join(tmp, "state"), os.path.join(tmp, "run")
    sock = os.path.join(run, "sandboxer.sock")
    env = dict(os.environ, SANDBOXER_RUNTIME_DIR=run, SANDBOXER_STATE_DIR=state)
    log = open(os.path.join(tmp, "serve.log"), "wb")
    args = [SBX, "serve", "--listen", "unix:" + sock, "--state-dir", state, "--quota-sandboxes", "0",
            "--quota-execs", "0"]
    if os.geteuid() != 0:
        pol = os.path.join(tmp, "policy.yaml")
        open(pol, "w").write(
            "version: 1\nmodes:\n  balanced:\n    limits: { timeout_s: 45, budget_s: 180, cpus: 2, memory_mb: 1024, "
            "pids: 256, output_mb: 10, scratch_mb: 512 }\n    backends: [native, landlock]\n  strict:\n    limits: "
            "{ timeout_s: 60, budget_s: 240, cpus: 2, memory_mb: 1536, pids: 128, output_mb: 10, scratch_mb: 512 }\n"
            "    backends: [microvm]\nenforce: { best_effort: [memory_mb, cpus, scratch_mb] }\n")
        args += ["--policy", pol]
    srv = subprocess.Popen(args, env=env, stdout=log, stderr=log)
    failed = False
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        time.sleep(0.1)
        c = Client(sock)
        print("sandboxer serve: %s, %d cores, %s" % (SBX, os.cpu_count(), "root" if os.geteuid() == 0 else "unprivileged"))

        if "latency" in only and a.warm > 0:
            # the same, against a second server keeping a warm pool
            wsock = os.path.join(run, "warm.sock")
            wsrv = subprocess.Popen([SBX, "serve", "--listen", "unix:" + wsock, "--state-dir", state + "-warm",
                                     "--warm-pool", str(a.warm), "--quota-sandboxes", "0"] + args[len(args) - 2:]
                                    if os.geteuid() != 0 else
                                    [SBX, "serve", "--listen", "unix:" + wsock, "--state-dir", state + "-warm",
                                     "--warm-pool", str(a.warm), "--quota-sandboxes", "0"],
                                    env=dict(env, SANDBOXER_RUNTIME_DIR=run + "-warm"), stdout=log, stderr=log)
            for _ in range(200):
                if os.path.exists(wsock):
                    break
                time.sleep(0.05)
            time.sleep(1.0)  # the pool fills
            wc = Client(wsock)
            ts = []
            for i in range(a.n_latency + 5):
                t0 = time.perf_counter()
                s, r = wc.req("POST", "/v1/sandboxes", {})
                s2, x = wc.req("POST", "/v1/sandboxes/%s/exec" % r["id"], {"argv": ["true"]})
                t1 = time.perf_counter()
                if s != 201 or s2 != 200 or x["exit_code"] != 0:
                    print("warm latency: error %s %s" % (s, s2))
                    failed = True
                if i >= 5:
                    ts.append((t1 - t0) * 1000)
                wc.req("DELETE", "/v1/sandboxes/" + r["id"])
                time.sleep(0.01)  # a sequential client's think time; the pool refills meanwhile
            print("create-to-first-exec-result, warm pool of %d (n=%d, 10 ms between): p50 %.2f ms, p90 %.2f ms, "
                  "p99 %.2f ms (min %.2f)" % (a.warm, len(ts), pct(ts, 50), pct(ts, 90), pct(ts, 99), min(ts)))
            wsrv.send_signal(signal.SIGTERM)
            wsrv.wait(30)

        if "latency" in only:
            ts = []
            for i in range(a.n_latency + 5):
                t0 = time.perf_counter()
                s, r = c.req("POST", "/v1/sandboxes", {})
                s2, x = c.req("POST", "/v1/sandboxes/%s/exec" % r["id"], {"argv": ["true"]})
                t1 = time.perf_counter()
                if s != 201 or s2 != 200 or x["exit_code"] != 0:
                    print("latency: error %s %s" % (s, s2))
                    failed = True
                if i >= 5:  # warm-up
                    ts.append((t1 - t0) * 1000)
                c.req("DELETE", "/v1/sandboxes/" + r["id"])
            print("create-to-first-exec-result, cold (n=%d): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms (min %.2f)" %
                  (len(ts), pct(ts, 50), pct(ts, 90), pct(ts, 99), min(ts)))
            # exec into a ready sandbox against a bare spawn of the same command by the same
            # client, one of each per round (the order alternating): the ratio of the medians
            # and the median of each round's own ratio (this host's speed drifts in minutes)
            ex, bare = [], []
            s, r = c.req("POST", "/v1/sandboxes", {})
            for i in range(a.n_latency + 10):
                pair = {}
                for what in (("exec", "bare") if i % 2 else ("bare", "exec")):
                    t0 = time.perf_counter()
                    if what == "exec":
                        s2, x = c.req("POST", "/v1/sandboxes/%s/exec" % r["id"], {"argv": ["true"]})
                        if s2 != 200 or x.get("exit_code") != 0:
                            print("exec: error %s %s" % (s2, x))
                            failed = True
                    else:
                        subprocess.run(["true"])
                    pair[what] = (time.perf_counter() - t0) * 1000
                if i >= 10:
                    ex.append(pair["exec"])
                    bare.append(pair["bare"])
            c.req("DELETE", "/v1/sandboxes/" + r["id"])
            paired = statistics.median(e / b for e, b in zip(ex, bare))
            print("exec into a ready sandbox (n=%d): p50 %.2f ms, p99 %.2f ms; a bare spawn of `true` by the same "
                  "client p50 %.2f ms: %.2fx (paired %.2fx)" % (len(ex), pct(ex, 50), pct(ex, 99), pct(bare, 50),
                                                               pct(ex, 50) / pct(bare, 50), paired))
            # create -> first exec (cold, destroyed after, untimed) against `sandboxer run -- true`
            cf, runs = [], []
            for i in range(a.n_latency // 2 + 5):
                pair = {}
                for what in (("create", "run") if i % 2 else ("run", "create")):
                    if what == "create":
                        t0 = time.perf_counter()
                        s, r2 = c.req("POST", "/v1/sandboxes", {})
                        s2, x = c.req("POST", "/v1/sandboxes/%s/exec" % r2["id"], {"argv": ["true"]})
                        pair[what] = (time.perf_counter() - t0) * 1000
                        c.req("DELETE", "/v1/sandboxes/" + r2["id"])
                    else:
                        t0 = time.perf_counter()
                        rr = subprocess.run([SBX, "run", "--", "true"], env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
                        pair[what] = (time.perf_counter() - t0) * 1000
                        if rr.returncode != 0:
                            print("sandboxer run: exit %d" % rr.returncode)
                            failed = True
                if i >= 5:
                    cf.append(pair["create"])
                    runs.append(pair["run"])
            paired = statistics.median(x / y for x, y in zip(cf, runs))
            print("create-to-first-exec-result, cold (n=%d): p50 %.2f ms; `sandboxer run -- true` p50 %.2f ms: "
                  "%.2fx (paired %.2fx)" % (len(cf), pct(cf, 50), pct(runs, 50), pct(cf, 50) / pct(runs, 50), paired))

        if "creates" in only:
            ids, errs, lock = [], [0], threading.Lock()
            per = a.n_creates // a.clients

            def worker():
                cl = Client(sock)
                for _ in range(per):
                    s, r = cl.req("POST", "/v1/sandboxes", {})
                    with lock:
                        if s == 201:
                            ids.append(r["id"])
                        else:
                            errs[0] += 1
            th = [threading.Thread(target=worker) for _ in range(a.clients)]
            t0 = time.perf_counter()
            [t.start() for t in th]
            [t.join() for t in th]
            dt = time.perf_counter() - t0
            print("creates: %d in %.2f s with %d clients = %.0f creates/s (%d errors)" %
                  (len(ids), dt, a.clients, len(ids) / dt, errs[0]))
            if errs[0]:
                failed = True
            t0 = time.perf_counter()
            chunks = [ids[i::a.clients] for i in range(a.clients)]

            def destroyer(lst):
                cl = Client(sock)
                for i in lst:
                    cl.req("DELETE", "/v1/sandboxes/" + i)
            th = [threading.Thread(target=destroyer, args=(ch,)) for ch in chunks]
            [t.start() for t in th]
            [t.join() for t in th]
            dt = time.perf_counter() - t0
            print("destroys: %d in %.2f s = %.0f/s" % (len(ids), dt, len(ids) / dt))

        if "idle" in only and a.idle > 0:
            base = rss_kb(srv.pid)
            ids, lock = [], threading.Lock()
            per = a.idle // a.clients

            def worker2():
                cl = Client(sock)
                for _ in range(per):
                    s, r = cl.req("POST", "/v1/sandboxes", {})
                    if s == 201:
                        with lock:
                            ids.append(r["id"])
            t0 = time.perf_counter()
            th = [threading.Thread(target=worker2) for _ in range(a.clients)]
            [t.start() for t in th]
            [t.join() for t in th]
            dt = time.perf_counter() - t0
            sv, init = procs(state)
            grown = rss_kb(srv.pid) - base
            sample = ids[:: max(1, len(ids) // 20)]
            good = 0
            for i in sample:
                s, x = c.req("POST", "/v1/sandboxes/%s/exec" % i, {"argv": ["echo", "ok"]})
                good += s == 200 and x["stdout"] == "ok\n"
            pss_sv = statistics.median([pss_kb(p) for p in sv[:50]]) if sv else 0
            pss_init = statistics.median([pss_kb(p) for p in init[:50]]) if init else 0
            rss_sv = statistics.median([rss_kb(p) for p in sv[:50]]) if sv else 0
            print("idle: %d sandboxes held (created in %.1f s), %d supervisors and %d inits alive; "
                  "server RSS +%.1f MiB; exec into %d of them: %d ok" %
                  (len(ids), dt, len(sv), len(init), grown / 1024.0, len(sample), good))
            print("per sandbox: supervisor PSS %d KiB (RSS %d KiB), init PSS %d KiB" % (pss_sv, rss_sv, pss_init))
            if good != len(sample) or len(ids) != per * a.clients:
                failed = True
            chunks = [ids[i::a.clients] for i in range(a.clients)]

            def destroyer2(lst):
                cl = Client(sock)
                for i in lst:
                    cl.req("DELETE", "/v1/sandboxes/" + i)
            th = [threading.Thread(target=destroyer2, args=(ch,)) for ch in chunks]
            [t.start() for t in th]
            [t.join() for t in th]

        if "load" in only and a.load_seconds > 0:
            fds0 = len(os.listdir("/proc/%d/fd" % srv.pid))
            stop_at = time.time() + a.load_seconds
            counts, errs, lock = [0], [], threading.Lock()

            def loader():
                cl = Client(sock)
                while time.time() < stop_at:
                    try:
                        s, r = cl.req("POST", "/v1/sandboxes", {})
                        if s != 201:
                            raise RuntimeError("create %s %s" % (s, r))
                        s, x = cl.req("POST", "/v1/sandboxes/%s/exec" % r["id"], {"argv": ["echo", "hi"]})
                        if s != 200 or x["stdout"] != "hi\n":
                            raise RuntimeError("exec %s %s" % (s, x))
                        s, d = cl.req("DELETE", "/v1/sandboxes/" + r["id"])
                        if s != 200 or d["state"] != "destroyed":
                            raise RuntimeError("destroy %s %s" % (s, d))
                        with lock:
                            counts[0] += 1
                    except Exception as e:  # noqa: BLE001 — counted
                        with lock:
                            errs.append(str(e)[:200])
            th = [threading.Thread(target=loader) for _ in range(a.load_clients)]
            t0 = time.perf_counter()
            [t.start() for t in th]
            [t.join() for t in th]
            dt = time.perf_counter() - t0
            time.sleep(0.5)
            sv, init = procs(state)
            socks = os.listdir(os.path.join(run, "sandboxes"))
            dirs = os.listdir(os.path.join(state, "sandboxes"))
            fds1 = len(os.listdir("/proc/%d/fd" % srv.pid))
            cg = subprocess.run("find /sys/fs/cgroup -maxdepth 4 -type d -name 'run_*' 2>/dev/null | wc -l",
                                shell=True, capture_output=True, text=True).stdout.strip()
            print("load: %d clients × %.0f s: %d create→exec→destroy cycles (%.0f/s), %d errors" %
                  (a.load_clients, dt, counts[0], counts[0] / dt, len(errs)))
            print("load leftovers: %d supervisors, %d inits, %d sockets, %d state dirs, server fds %d → %d, "
                  "run_* cgroups now %s" % (len(sv), len(init), len(socks), len(dirs), fds0, fds1, cg))
            for e in errs[:5]:
                print("  error: " + e)
            if errs or sv or init or socks or dirs or fds1 > fds0 + 2:
                failed = True
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(20)
        except subprocess.TimeoutExpired:
            srv.kill()
        sv, _ = procs(state)
        for p in sv:
            os.kill(p, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    print("result: %s" % ("FAILED" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
