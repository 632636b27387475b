#!/usr/bin/env python3
"""heartbeat_test.py — the hosts thread's heartbeat with an extension that never answers (a
listener that takes the connection and says nothing: every probe of it takes its whole 3 s):
the other extensions are still probed at every beat (each probe on a thread of its own, none
waited for), and a host added while that probe is under way is checked at once, not a beat
later (the add's wake-up is not slept through). Run by test-heartbeat.sh (TAP)."""
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandboxes_test as t  # noqa: E402 — its TAP and unix-socket helpers

SBX, TMP = t.SBX, t.TMP
D = os.path.join(TMP, "heartbeat")
os.makedirs(D, exist_ok=True)

# the silent one: connections taken and held, nothing said
silent = socket.socket()
silent.bind(("127.0.0.1", 0))
silent.listen(64)
accepted = []  # (time, socket)


def take():
    while True:
        try:
            c, _ = silent.accept()
        except OSError:
            return
        accepted.append((time.monotonic(), c))


threading.Thread(target=take, daemon=True).start()

# the plain one: an HTTP /healthz that answers, its hits counted
hits = []


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        hits.append(time.monotonic())
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
threading.Thread(target=plain.serve_forever, daemon=True).start()

reg = os.path.join(D, "registry")
os.makedirs(reg, exist_ok=True)
with open(os.path.join(reg, "silent.yaml"), "w") as f:
    f.write("id: ext.silent\nkind: sandboxer\nurl: https://127.0.0.1:%d\n" % silent.getsockname()[1])
with open(os.path.join(reg, "plain.yaml"), "w") as f:
    f.write("id: ext.plain\nkind: sandboxer\nurl: http://127.0.0.1:%d\n" % plain.server_address[1])

proc = None


def start(name, beat):
    global proc
    d = os.path.join(D, name)
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, SANDBOXER_RUNTIME_DIR=os.path.join(d, "run"), SANDBOXER_STATE_DIR=os.path.join(d, "state"))
    log = open(os.path.join(d, "serve.log"), "ab")
    proc = subprocess.Popen([SBX, "serve", "--listen", "unix:" + os.path.join(d, "s.sock"), "--state-dir",
                             os.path.join(d, "state"), "--registry", reg, "--heartbeat-s", str(beat)],
                            env=env, stdout=log, stderr=log)
    for _ in range(400):
        if req(name, "GET", "/healthz")[0] == 200:
            return True
        time.sleep(0.05)
    return False


def stop():
    global proc
    if proc:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc = None


def req(name, method, path, body=None):
    c = t.Unix(os.path.join(D, name, "s.sock"), 10)
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None)
        r = c.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, data
    except OSError as e:
        return 0, str(e)
    finally:
        c.close()


try:
    # 1. a beat every 0.5 s: ext.plain heard at every one, while ext.silent's probes hang 3 s each
    t.ok(start("p", 0.5), "serve starts with a registry of a silent and a plain extension, a beat every 0.5 s")
    time.sleep(0.5)
    t0 = time.monotonic()
    time.sleep(3.0)
    n = len([h for h in hits if t0 <= h <= t0 + 3.0])
    t.ok(n >= 4, "ext.plain is probed at every beat while ext.silent's probes take their 3 s (%d in 3 s)" % n,
         "hits in 3 s: %d (one after another, a round would take >= 3 s: at most 2)" % n)
    s, x = req("p", "GET", "/v1/extensions")
    items = {e["id"]: e for e in x.get("items", [])} if s == 200 else {}
    t.ok(items.get("ext.plain", {}).get("health", {}).get("ok") is True and
         items.get("ext.silent", {}).get("health", {}).get("ok") is False,
         "GET /v1/extensions: ext.plain healthy, ext.silent not", items)
    # (by the way: the server's spawner of supervisors ends with it)
    kids = []
    try:
        kids = [int(k) for k in open("/proc/%d/task/%d/children" % (proc.pid, proc.pid)).read().split()]
    except OSError:
        pass
    sp = [k for k in kids if b"--spawner-fd" in open("/proc/%d/cmdline" % k, "rb").read()]
    stop()
    for _ in range(100):
        if not any(os.path.exists("/proc/%d" % k) for k in sp):
            break
        time.sleep(0.05)
    t.ok(len(sp) == 1 and not any(os.path.exists("/proc/%d" % k) for k in sp),
         "the server's spawner of supervisors was its child, and ends with it", sp)

    # 2. a beat every 30 s: a host added while ext.silent's first probe is under way is checked now
    before = len(accepted)
    t.ok(start("k", 30), "serve starts again, a beat every 30 s")
    for _ in range(200):
        if len(accepted) > before:
            break
        time.sleep(0.02)
    live = socket.socket()
    live.bind(("127.0.0.1", 0))
    live.listen(8)
    s, h = req("k", "POST", "/v1/hosts", {"id": "h1", "extension": "ext.plain",
                                         "address": "127.0.0.1:%d" % live.getsockname()[1]})
    probing = len(accepted) > before and time.monotonic() - accepted[-1][0] < 2.5
    t.is_((s, probing), (201, True), "a host added while ext.silent's probe is under way: 201")
    hs, t1 = {}, time.monotonic()
    while time.monotonic() - t1 < 2.0:
        s, lst = req("k", "GET", "/v1/hosts")
        hs = {x["id"]: x["health"] for x in lst.get("items", [])} if s == 200 else {}
        if hs.get("h1", {}).get("checked_at"):
            break
        time.sleep(0.05)
    t.ok(hs.get("h1", {}).get("ok") is True,
         "it is checked within 2 s, not at the next beat 30 s later", hs)
    live.close()
finally:
    stop()
    plain.shutdown()
    silent.close()
print("1..%d" % t.n)
sys.exit(1 if t.failed else 0)
