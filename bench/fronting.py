#!/usr/bin/env python3
"""fronting.py — what fronting costs: create → first exec result through a front node A (its unix
socket; A provisions on B over HTTPS, ext.sandboxer) against the same straight to B (HTTPS with
B's token), interleaved in one run so both see the same machine. Also an exec into a ready
sandbox both ways. Starts both servers with their own state (and stops them).

usage: bench/fronting.py [--n 100]
Prints p50 and p99 of each and the ratios (the goal: fronted ≤ 1.1× straight)."""
import argparse
import http.client
import json
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sbx-fronting-")
    procs = []
    try:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        pb = s.getsockname()[1]
        s.close()
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", tmp + "/key.pem", "-out", tmp + "/cert.pem"], check=True, capture_output=True)
        tok = subprocess.run([SBX, "token", "create", "--actor", "agt", "--name", "bench", "--state-dir", tmp + "/b"],
                             check=True, capture_output=True, text=True).stdout.strip()
        os.makedirs(tmp + "/sec")
        os.makedirs(tmp + "/reg")
        open(tmp + "/sec/b-token", "w").write(tok + "\n")
        open(tmp + "/reg/b.yaml", "w").write(
            "id: ext.b\nkind: sandboxer\nurl: https://127.0.0.1:%d\nauth: {secret: b-token}\n"
            "tls: {ca_file: %s/cert.pem}\ncapabilities: {isolation: [container, policy]}\n" % (pb, tmp))
        log = open(tmp + "/serve.log", "ab")
        for name, args in (("b", ["--listen", "127.0.0.1:%d" % pb, "--tls-cert", tmp + "/cert.pem", "--tls-key", tmp + "/key.pem"]),
                           ("a", ["--secrets-dir", tmp + "/sec", "--registry", tmp + "/reg", "--heartbeat-s", "1"])):
            env = dict(os.environ, SANDBOXER_RUNTIME_DIR=tmp + "/run-" + name)
            procs.append(subprocess.Popen([SBX, "serve", "--listen", "unix:%s/%s.sock" % (tmp, name), "--state-dir",
                                           tmp + "/" + name, "--stop-sandboxes"] + args, env=env, stdout=log, stderr=log))
        ctx = ssl.create_default_context(cafile=tmp + "/cert.pem")

        conns = {}

        def req(who, method, path, body=None):
            # one kept-alive connection per client, as a real one holds (A's to B is kept by A)
            for attempt in (0, 1):
                if who not in conns:
                    conns[who] = (http.client.HTTPSConnection("127.0.0.1", pb, timeout=120, context=ctx)
                                  if who == "b" else Unix(tmp + "/a.sock"))
                c = conns[who]
                h = {"Authorization": "Bearer " + tok} if who == "b" else {}
                try:
                    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
                    r = c.getresponse()
                    d = r.read()
                except (OSError, http.client.HTTPException):
                    c.close()
                    del conns[who]
                    if attempt:
                        raise
                    continue
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                    del conns[who]
                return r.status, json.loads(d) if d[:1] == b"{" else d

        for _ in range(200):
            try:
                if req("a", "GET", "/v1/extensions")[1]["items"][1]["health"]["ok"]:
                    break
            except (OSError, KeyError, IndexError, ValueError):
                pass
            time.sleep(0.1)
        route = {"route": {"strategy": "explicit", "fallback": ["ext.b"]}}
        first = {"a": [], "b": []}
        execs = {"a": [], "b": []}
        for i in range(a.n + 2):
            for who in (("a", "b") if i % 2 else ("b", "a")):
                t0 = time.perf_counter()
                s, rec = req(who, "POST", "/v1/sandboxes", route if who == "a" else {})
                s2, x = req(who, "POST", "/v1/sandboxes/%s/exec" % rec["id"], {"argv": ["true"]})
                t1 = time.perf_counter()
                if s != 201 or s2 != 200:
                    sys.exit("%s: create %s, exec %s: %s %s" % (who, s, s2, rec, x))
                t2 = time.perf_counter()
                req(who, "POST", "/v1/sandboxes/%s/exec" % rec["id"], {"argv": ["true"]})
                t3 = time.perf_counter()
                req(who, "DELETE", "/v1/sandboxes/%s" % rec["id"])
                if i >= 2:  # two rounds of warm-up
                    first[who].append((t1 - t0) * 1000)
                    execs[who].append((t3 - t2) * 1000)
        print("fronting: %d rounds, interleaved (B over HTTPS with its token, one kept-alive connection; "
              "A on its unix socket, to B over HTTPS on connections it keeps)" % a.n)
        print("| | p50 ms | p99 ms |")
        print("|---|---:|---:|")
        for label, d in (("create → first exec, straight to B", first["b"]), ("create → first exec, through A", first["a"]),
                         ("exec into a ready sandbox, straight to B", execs["b"]), ("exec into a ready sandbox, through A", execs["a"])):
            print("| %s | %.1f | %.1f |" % (label, statistics.median(d), pct(d, 99)))
        print("ratio create → first exec, through A / straight: p50 %.2f×, p99 %.2f×" %
              (statistics.median(first["a"]) / statistics.median(first["b"]), pct(first["a"], 99) / pct(first["b"], 99)))
        print("ratio exec, through A / straight: p50 %.2f×, p99 %.2f×" %
              (statistics.median(execs["a"]) / statistics.median(execs["b"]), pct(execs["a"], 99) / pct(execs["b"], 99)))
        # each round's two runs side by side: the median of their ratios is what a slow spell
        # of the host (it moves both) disturbs least
        print("median of each round's ratio (through A / straight, the same round): create → first exec %.2f×, "
              "exec %.2f×" % (statistics.median([x / y for x, y in zip(first["a"], first["b"])]),
                              statistics.median([x / y for x, y in zip(execs["a"], execs["b"])])))
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        print(tmp) if os.environ.get("KEEP") else shutil.rmtree(tmp, ignore_errors=True)


main()
