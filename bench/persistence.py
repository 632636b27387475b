#!/usr/bin/env python3
"""persistence.py — what pause, resume, snapshots and restores cost (docs/performance.md), measured
against a `sandboxer serve` of its own (a private runtime and state dir, stopped with its sandboxes
at the end), over HTTP on its unix socket:

  - pause and resume of a native sandbox with a process running in it (medians of --runs pairs);
  - a snapshot of a workspace of source files (--mb MiB, default 100, in files of ~20 KiB of
    generated code-like text, each file different), its size and what it stored (zstd), then a
    sandbox created from it (create + the files written back) beside a plain create in the same run;
  - the second snapshot after one file changed: its time and what it stored (deduplication).

Prints a table; not a test (a slow figure never fails it).

  python3 bench/persistence.py [--runs N] [--mb MiB]
"""
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
import time

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=20)
ap.add_argument("--mb", type=int, default=100)  # within the default scratch_mb (512) of each sandbox
args = ap.parse_args()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SBX = os.environ.get("SANDBOXER", os.path.join(ROOT, "build", "src", "cli", "sandboxer"))
T = tempfile.mkdtemp()
SOCK = os.path.join(T, "s.sock")


class Unix(http.client.HTTPConnection):
    def __init__(self, timeout=600):
        super().__init__("sbx", timeout=timeout)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(SOCK)


def req(method, path, body=None):
    c = Unix()
    c.request(method, path, body=json.dumps(body) if body is not None else None)
    r = c.getresponse()
    d = r.read()
    c.close()
    return r.status, (json.loads(d) if d else None)


def timed(method, path, body=None):
    t0 = time.monotonic()
    s, j = req(method, path, body)
    return (time.monotonic() - t0) * 1000, s, j


with open(os.path.join(T, "profile.bench.yaml"), "w") as f:
    f.write('id: profile.bench\nversion: "1.0.0"\nextends: profile.default\n')
env = dict(os.environ, SANDBOXER_RUNTIME_DIR=os.path.join(T, "rt"), SANDBOXER_PROFILE_PATH=T)
LOG = open(os.path.join(T, "serve.log"), "wb")
srv = subprocess.Popen([SBX, "serve", "--listen", "unix:" + SOCK, "--state-dir", os.path.join(T, "st"),
                        "--stop-sandboxes"], env=env, stdout=LOG, stderr=LOG)
try:
    for _ in range(200):
        if os.path.exists(SOCK):
            break
        time.sleep(0.05)
    s, box = req("POST", "/v1/sandboxes", {"profile": "profile.bench"})
    if s != 201:
        sys.exit("create failed: %s" % box)
    sid = box["id"]
    # a process that runs all along (long-lived where the profile allows it; else a long exec in the background)
    import threading

    def bg(*a):
        try:
            req(*a)
        except Exception:  # noqa: BLE001 — it ends with the server
            pass
    threading.Thread(target=lambda: bg("POST", "/v1/sandboxes/%s/exec" % sid,
                                        {"argv": ["sh", "-c", "while :; do sleep 0.05; done"], "timeout_s": 40}),
                     daemon=True).start()
    time.sleep(0.5)
    pz, rs = [], []
    for _ in range(args.runs):
        ms, s, j = timed("POST", "/v1/sandboxes/%s/pause" % sid)
        if s != 200:
            sys.exit("pause: %s %s" % (s, j))
        pz.append(ms)
        ms, s, j = timed("POST", "/v1/sandboxes/%s/resume" % sid)
        rs.append(ms)
    # the workspace: code-like lines, each file its own
    gen = r'''
import os, random
root = os.environ["TMPDIR"] + "/ws"
words = "def class return import from self if else for while try except with as yield lambda None True False value result items data config path name index count buffer request response handler error".split()
random.seed(7); total = 0; i = 0; target = %d << 20
while total < target:
    d = "%%s/pkg%%03d" %% (root, i // 200); os.makedirs(d, exist_ok=True)
    lines = []
    for n in range(700):
        lines.append("    " * random.randint(0, 3) + " ".join(random.choice(words) for _ in range(random.randint(2, 9))) + "  # %%d" %% random.randint(0, 1 << 30))
    text = ("\n".join(lines) + "\n").encode()
    open("%%s/mod%%05d.py" %% (d, i), "wb").write(text)
    total += len(text); i += 1
print(i, total)
''' % args.mb
    s, j = req("POST", "/v1/sandboxes/%s/exec" % sid, {"argv": ["python3", "-c", gen]})
    nfiles, nbytes = (int(x) for x in j["stdout"].split())
    ms1, s, a = timed("POST", "/v1/sandboxes/%s/snapshot" % sid, {"name": "bench"})
    if s != 201:
        sys.exit("snapshot: %s %s" % (s, a))
    # restore beside a plain create, alternated
    rest, plain = [], []
    for k in range(3):
        ms, s, b = timed("POST", "/v1/sandboxes", {"snapshot": a["id"]})
        rest.append(ms)
        req("DELETE", "/v1/sandboxes/" + b["id"])
        ms, s, b = timed("POST", "/v1/sandboxes", {"profile": "profile.bench"})
        plain.append(ms)
        req("DELETE", "/v1/sandboxes/" + b["id"])
    req("POST", "/v1/sandboxes/%s/exec" % sid, {"argv": ["sh", "-c", "echo '# changed' >> $TMPDIR/ws/pkg000/mod00000.py"]})
    ms2, s, a2 = timed("POST", "/v1/sandboxes/%s/snapshot" % sid, {"name": "bench2"})
    med = statistics.median
    print("persistence (native backend, one run; medians)")
    print("  pause  (freeze, a process running): %6.2f ms   (%d runs)" % (med(pz), args.runs))
    print("  resume (thaw):                      %6.2f ms" % med(rs))
    print("  workspace: %d files, %.1f MiB of generated source" % (nfiles, nbytes / 1048576))
    print("  snapshot:  %7.0f ms, size %.1f MiB, stored %.1f MiB (zstd, ratio %.2f), consistent %s" %
          (ms1, a["size"] / 1048576, a["stored"] / 1048576, a["size"] / max(a["stored"], 1), a["consistent"]))
    print("  create from it: %7.0f ms   beside a plain create: %.0f ms (median of 3 each)" % (med(rest), med(plain)))
    print("  second snapshot after a 1-file change: %7.0f ms, stored %d bytes" % (ms2, a2["stored"]))
except Exception as ex:  # noqa: BLE001 — said with the server's last words
    print("persistence.py: %s; serve %s; its log ends:\n%s" % (ex, "exited %s" % srv.poll() if srv.poll() is not None else "runs",
          open(os.path.join(T, "serve.log"), "rb").read()[-1500:].decode(errors="replace")))
    sys.exit(1)
finally:
    srv.send_signal(signal.SIGTERM)
    try:
        srv.wait(30)
    except subprocess.TimeoutExpired:
        srv.kill()
    shutil.rmtree(T, ignore_errors=True)
