#!/usr/bin/env python3
"""deals.py — the cost of metering, credits and signing, in one run (issue 27):

  1. create → first exec result (`true`), credits on (serve --credits, ext.local priced, the
     tenant's balance ample) against off (the same server options otherwise), interleaved;
  2. a run on another node under a deal — POST /v1/peers/B/deals on A, then A's task followed to
     `accepted` (quote signed and verified, deal signed and submitted, B's bounded sandbox, the
     result signed, verified, accepted, both ledgers booked) — against the same work as a plain
     remote call: create, exec `true`, destroy on B over HTTP with a token, interleaved.

Starts its own servers with their own state (and stops them). usage: bench/deals.py [--n 100]
Prints p50 and p99 of each and the ratios (the goals: credits on ≤ 1.05× off; a deal ≤ 1.5× the
plain remote run)."""
import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
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


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Node:
    def __init__(self, tmp, name, extra=()):
        self.dir = os.path.join(tmp, name)
        self.state = os.path.join(self.dir, "state")
        self.sock = os.path.join(self.dir, "s.sock")
        self.port = free_port()
        self.extra = list(extra)
        os.makedirs(os.path.join(self.dir, "reg"), exist_ok=True)
        os.makedirs(os.path.join(self.dir, "sec"), exist_ok=True)
        with open(os.path.join(self.dir, "reg", "ext.local.yaml"), "w") as f:
            f.write("id: ext.local\nkind: local\npricing: {per_second: 0.002, per_creation: 0.01, per_cpu_second: 0.001}\n")
        self.token = subprocess.run([SBX, "token", "create", "--actor", "agt", "--name", "bench", "--tenant", "bench",
                                     "--state-dir", self.state], check=True, capture_output=True, text=True).stdout.strip()
        self.proc = None

    def start(self):
        env = dict(os.environ, SANDBOXER_RUNTIME_DIR=os.path.join(self.dir, "run"), SANDBOXER_STATE_DIR=self.state)
        log = open(os.path.join(self.dir, "serve.log"), "ab")
        self.proc = subprocess.Popen([SBX, "serve", "--listen", "unix:" + self.sock, "--listen", "127.0.0.1:%d" % self.port,
                                      "--state-dir", self.state, "--registry", os.path.join(self.dir, "reg"),
                                      "--secrets-dir", os.path.join(self.dir, "sec"), "--stop-sandboxes"] + self.extra,
                                     env=env, stdout=log, stderr=log)
        for _ in range(300):
            if self.call("GET", "/healthz")[0] == 200:
                return
            time.sleep(0.05)
        raise SystemExit("%s did not start (see %s/serve.log)" % (self.dir, self.dir))

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(30)

    def call(self, method, path, body=None, tcp=False):
        if tcp:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            h = {"Authorization": "Bearer " + self.token}
        else:
            c = Unix(self.sock)
            h = {}
        if body is not None:
            body = json.dumps(body)
            h["Content-Type"] = "application/json"
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
        except OSError:
            return 0, None
        finally:
            c.close()
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, data


def first_exec(node):
    """create → first exec result, as the tenant over TCP; destroyed after (not timed)."""
    t0 = time.perf_counter()
    s, sb = node.call("POST", "/v1/sandboxes", {"ttl_s": 60}, tcp=True)
    if s != 201:
        raise SystemExit("create: %s %s" % (s, sb))
    s, x = node.call("POST", "/v1/sandboxes/%s/exec" % sb["id"], {"argv": ["true"]}, tcp=True)
    dt = time.perf_counter() - t0
    if s != 200:
        raise SystemExit("exec: %s %s" % (s, x))
    node.call("DELETE", "/v1/sandboxes/" + sb["id"], tcp=True)
    return dt


def plain_remote(b):
    t0 = time.perf_counter()
    s, sb = b.call("POST", "/v1/sandboxes", {"ttl_s": 60}, tcp=True)
    s2, x = b.call("POST", "/v1/sandboxes/%s/exec" % sb["id"], {"argv": ["true"]}, tcp=True)
    s3, _ = b.call("DELETE", "/v1/sandboxes/" + sb["id"], tcp=True)
    dt = time.perf_counter() - t0
    if (s, s2, s3) != (201, 200, 200):
        raise SystemExit("plain remote run: %s %s %s" % (s, s2, s3))
    return dt


def deal(a, b_id):
    t0 = time.perf_counter()
    s, r = a.call("POST", "/v1/peers/%s/deals" % b_id, {"offer": "profile.default", "argv": ["true"]})
    if s != 202:
        raise SystemExit("deal: %s %s" % (s, r))
    st = r["state"]
    while st not in ("accepted", "rejected", "failed"):
        s, t = a.call("GET", "/v1/tasks/%s?wait=10&state=%s" % (r["deal_id"], st))
        st = t["state"]
    dt = time.perf_counter() - t0
    if st != "accepted":
        raise SystemExit("deal ended %s: %s" % (st, t.get("reason")))
    return dt


def line(name, xs):
    print("  %-44s p50 %8.2f ms   p99 %8.2f ms   (n=%d)" % (name, pct(xs, 50) * 1000, pct(xs, 99) * 1000, len(xs)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    n = ap.parse_args().n
    tmp = tempfile.mkdtemp(prefix="sbx-deals-bench-")
    nodes = []
    try:
        on, off = Node(tmp, "on", ["--credits"]), Node(tmp, "off")
        a, b = Node(tmp, "A"), Node(tmp, "B")
        for x, y in ((a, b), (b, a)):  # each reaches the other with the other's token
            open(os.path.join(x.dir, "sec", "peer"), "w").write(y.token + "\n")
            with open(os.path.join(x.dir, "reg", "ext.peer.yaml"), "w") as f:
                f.write("id: ext.peer\nkind: sandboxer\nurl: http://127.0.0.1:%d\nauth: {secret: peer}\n"
                        "capabilities: {isolation: [container, policy], regions: [far]}\npricing: {per_second: 1}\n" % y.port)
        nodes = [on, off, a, b]
        for x in nodes:
            x.start()
        on.call("POST", "/v1/credits/grant", {"tenant": "bench", "amount": 1e9})
        ids = {}
        for x in (a, b):
            ids[x] = x.call("GET", "/v1/node")[1]
        for x, y in ((a, b), (b, a)):
            s, p = x.call("POST", "/v1/peers", {"node_id": ids[y]["node_id"], "public_key": ids[y]["public_key"],
                                                "url": "http://127.0.0.1:%d" % y.port, "credit_limit": 1e9, "extension": "ext.peer"})
            if s not in (200, 201):
                raise SystemExit("peer: %s %s" % (s, p))
        for _ in range(5):  # warm: caches, connections, the page cache
            first_exec(on), first_exec(off), plain_remote(b), deal(a, ids[b]["node_id"])
        r = {"on": [], "off": [], "plain": [], "deal": []}
        ratios_c, ratios_d = [], []
        for i in range(n):
            # each pair in both orders across rounds: neither always goes first
            if i % 2:
                x_on, x_off = first_exec(on), first_exec(off)
                x_plain, x_deal = plain_remote(b), deal(a, ids[b]["node_id"])
            else:
                x_off, x_on = first_exec(off), first_exec(on)
                x_deal, x_plain = deal(a, ids[b]["node_id"]), plain_remote(b)
            r["on"].append(x_on)
            r["off"].append(x_off)
            r["plain"].append(x_plain)
            r["deal"].append(x_deal)
            ratios_c.append(x_on / x_off)
            ratios_d.append(x_deal / x_plain)
        print("deals.py: %d rounds, interleaved (%s)" % (n, time.strftime("%Y-%m-%d %H:%M")))
        line("create → first exec, credits off", r["off"])
        line("create → first exec, credits on", r["on"])
        print("  credits on / off: p50 %.3f×  (median of paired ratios %.3f×; goal ≤ 1.05×)"
              % (pct(r["on"], 50) / pct(r["off"], 50), pct(ratios_c, 50)))
        line("plain remote run (create, exec, destroy on B)", r["plain"])
        line("deal: quote → accepted result (A asks B)", r["deal"])
        print("  deal / plain remote run: p50 %.3f×  (median of paired ratios %.3f×; goal ≤ 1.5×)"
              % (pct(r["deal"], 50) / pct(r["plain"], 50), pct(ratios_d, 50)))
    finally:
        for x in nodes:
            try:
                x.stop()
            except Exception:  # noqa: BLE001 — stopping what started
                pass
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
