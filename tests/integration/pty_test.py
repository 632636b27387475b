#!/usr/bin/env python3
"""pty_test.py — execs on a terminal and long-lived execs through the real `sandboxer serve`
(DESIGN.md, "Ports, PTYs, sessions"; docs/long-lived.md): the sandbox's own /dev/pts, the
WebSocket attach (output, input, resize, the end), a PTY outliving its connection, input and
resize after the end (410), bad input, and how timeout_s and budget_s apply to long-lived execs.
Prints TAP. Run by test-pty.sh with the environment of test-sandboxes.sh; SBX_HOLD_S > 0 also
holds a PTY and a server for that many seconds (the issue's five minutes)."""
import base64
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandboxes_test as T  # noqa: E402 — the server, req() with validation, TAP

ok, is_, req = T.ok, T.is_, T.req
for name, text in {
    "profile.pty-budget": "extends: profile.e2b\nlimits: { budget_s: 2, timeout_s: 1 }\n",
}.items():
    with open(os.path.join(T.PROFILES, name + ".yaml"), "w") as f:
        f.write('id: %s\nversion: "1.0.0"\n%s' % (name, text))


class WS:
    """A WebSocket client over the unix socket: enough of RFC 6455 to test the server."""

    def __init__(self, path, headers=None, upgrade=True):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(20)
        self.s.connect(T.SOCK)
        key = base64.b64encode(os.urandom(16)).decode()
        h = "GET %s HTTP/1.1\r\nHost: localhost\r\n" % path
        if upgrade:
            h += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n" % key
        for k, v in (headers or {}).items():
            h += "%s: %s\r\n" % (k, v)
        self.s.sendall((h + "\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = self.s.recv(4096)
            if not d:
                break
            buf += d
        head, _, self.buf = buf.partition(b"\r\n\r\n")
        self.head = head.decode(errors="replace")
        self.status = int(head.split(b" ")[1]) if head else 0
        import hashlib
        want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.accept_ok = ("Sec-WebSocket-Accept: " + want) in self.head

    def send(self, data, op=2):
        if isinstance(data, str):
            data = data.encode()
        mask = os.urandom(4)
        n = len(data)
        hdr = bytes([0x80 | op])
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _take(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError
            self.buf += d
        r, self.buf = self.buf[:n], self.buf[n:]
        return r

    def recv(self):
        h = self._take(2)
        n = h[1] & 127
        if n == 126:
            n = struct.unpack(">H", self._take(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._take(8))[0]
        return h[0] & 15, self._take(n)

    def until(self, needle, timeout=10):
        """Output (binary frames) until needle; (output, text frames, closed)."""
        out, texts, t0 = b"", [], time.time()
        while needle not in out and time.time() - t0 < timeout:
            try:
                op, d = self.recv()
            except (EOFError, socket.timeout, OSError):
                return out, texts, True
            if op == 2:
                out += d
            elif op == 1:
                texts.append(d)
            elif op == 8:
                return out, texts, True
        return out, texts, False

    def close(self):
        self.s.close()


def tty_exec(sid, argv, cols=80, rows=24, **kw):
    body = dict(argv=argv, tty={"cols": cols, "rows": rows}, **kw)
    return req("POST", "/v1/sandboxes/%s/exec" % sid, body)[:2]


def main():
    if not ok(T.start(), "serve starts"):
        return
    s, box = T.create(profile="profile.e2b")[:2]
    if not ok(s == 201, "a sandbox of profile.e2b", box):
        return
    sid = box["id"]

    # ---- a terminal: the sandbox's own /dev/pts, its size, input, output -----------------------
    t0 = time.time()
    s, ex = tty_exec(sid, ["bash", "--norc", "-i"], cols=100, rows=30)
    ok(s == 201 and ex.get("status") == "running" and ex.get("tty") == {"cols": 100, "rows": 30} and
       ex.get("attach", "").endswith("/execs/%s/attach" % ex.get("exec_id")),
       "exec with tty: 201, running, its size and where to attach", ex)
    if s != 201:
        return
    eid = ex["exec_id"]
    w = WS(ex["attach"])
    ok(w.status == 101 and w.accept_ok, "attach: 101 and the right Sec-WebSocket-Accept", w.head)
    w.send("tty; stty size; echo ok-$((6*7))\n")
    out, _, _ = w.until(b"ok-42")
    rtt = time.time() - t0
    ok(b"ok-42" in out, "input in, output out", out[-300:])
    ok(b"/dev/pts/0" in out, "tty names the sandbox's own /dev/pts (a new devpts instance: pts 0)", out[-300:])
    ok(b"30 100" in out, "stty size: the rows and cols asked", out[-300:])
    w.send(json.dumps({"resize": {"cols": 120, "rows": 40}}), op=1)
    w.send("stty size\n")
    out, _, _ = w.until(b"40 120")
    ok(b"40 120" in out, "a resize text frame resizes", out[-200:])
    s, r = req("POST", "/v1/sandboxes/%s/execs/%s/resize" % (sid, eid), {"cols": 90, "rows": 20})[:2]
    is_(s, 200, "POST …/resize: 200")
    w.send("stty size\n")
    out, _, _ = w.until(b"20 90")
    ok(b"20 90" in out, "POST …/resize resized", out[-200:])
    # round trips: a keystroke to its echo, against a plain exec (figures for the closing note)
    rt = []
    w.until(b"\x00never", 0.3)  # what is still coming (a prompt) first
    for i in range(20):
        c = "QXZJKVWYqxzjkvwyQXZJ"[i].encode()
        t1 = time.time()
        w.send(c)
        o, _, _ = w.until(c, 5)
        rt.append(time.time() - t1)
    w.send("\x15")  # ^U: the line is dropped
    pe = []
    for i in range(10):
        t1 = time.time()
        req("POST", "/v1/sandboxes/%s/exec" % sid, {"argv": ["true"]})
        pe.append(time.time() - t1)
    rt.sort()
    pe.sort()
    print("# PTY keystroke→echo p50 %.2f ms; a plain exec of true p50 %.2f ms" % (rt[len(rt) // 2] * 1000, pe[len(pe) // 2] * 1000))
    w.close()  # dropped: the terminal lives on

    # ---- outliving its connection: input without a connection, then attach again -------------
    s, _ = req("POST", "/v1/sandboxes/%s/execs/%s/input" % (sid, eid), "echo again-$((1+1))\n")[:2]
    is_(s, 200, "input with nobody attached: 200")
    s, one = req("GET", "/v1/sandboxes/%s/execs/%s" % (sid, eid))[:2]
    ok(s == 200 and one.get("status") == "running", "GET …/execs/ID: running", one)
    w = WS(ex["attach"])
    out, _, _ = w.until(b"again-2")
    ok(w.status == 101 and b"again-2" in out, "attached again: what came meanwhile is replayed", out[-200:])
    w.send("exit 3\n")
    out, texts, closed = w.until(b"\x00never", 10)
    end = json.loads(texts[-1]) if texts else {}
    ok(closed and end.get("exit", {}).get("exit_code") == 3 and end["exit"].get("status") == "exited",
       "the end: a text frame {exit: {status, exit_code 3}} and a close", texts)
    w.close()
    s, r = req("POST", "/v1/sandboxes/%s/execs/%s/input" % (sid, eid), "x")[:2]
    ok(s == 410 and r["error"]["code"] == "gone", "input after the end: 410", r)
    s, r = req("POST", "/v1/sandboxes/%s/execs/%s/resize" % (sid, eid), {"cols": 10, "rows": 10})[:2]
    is_(s, 410, "resize after the end: 410")
    w = WS(ex["attach"])
    out, texts, closed = w.until(b"\x00never", 5)
    ok(w.status == 101 and b"again-2" in out and closed and texts, "attached after the end: the output, the end, a close", texts)
    w.close()
    s, one = req("GET", "/v1/sandboxes/%s/execs/%s" % (sid, eid))[:2]
    ok(s == 200 and one.get("exit_code") == 3 and one.get("report", {}).get("schema") == "sandboxer.report/v1",
       "GET …/execs/ID: the terminal exec's report", one)

    # ---- the CLI: sandboxer exec -t (our input its keyboard, its exit status ours) ------------
    import subprocess
    cli = subprocess.run([T.SBX, "exec", "-t", "--server", "unix:" + T.SOCK, sid, "--", "bash", "--norc", "-i"],
                         input=b"echo cli-$((3*4)); tty\nexit 4\n", capture_output=True, timeout=60, env=T.ENV)
    ok(cli.returncode == 4 and b"cli-12" in cli.stdout and b"/dev/pts/" in cli.stdout,
       "sandboxer exec -t: output, its own /dev/pts, its exit status ours (4)", (cli.returncode, cli.stdout[-300:], cli.stderr))
    cli = subprocess.run([T.SBX, "exec", "-t", "--stream", "--server", "unix:" + T.SOCK, sid, "--", "true"],
                         capture_output=True, timeout=60, env=T.ENV)
    ok(cli.returncode == 125 and b"--tty" in cli.stderr, "exec -t --stream: refused, 125", cli.stderr)

    # ---- bad input ---------------------------------------------------------------------------
    base = "/v1/sandboxes/%s" % sid
    for body, field, what in [
        ({"argv": ["sh"], "tty": {"cols": 0, "rows": 10}}, "tty", "cols 0"),
        ({"argv": ["sh"], "tty": {"cols": 10}}, "tty", "rows missing"),
        ({"argv": ["sh"], "tty": {"cols": 10, "rows": 10, "depth": 1}}, "tty.depth", "an unknown tty key"),
        ({"argv": ["sh"], "tty": [80, 24]}, "tty", "tty a list"),
        ({"argv": ["sh"], "tty": {"cols": 10, "rows": 10}, "stdin": "x"}, "stdin", "stdin with tty"),
        ({"argv": ["sh"], "tty": {"cols": 10, "rows": 10}, "stream": True}, "stream", "stream with tty"),
        ({"argv": ["sh"], "long_lived": "yes"}, "long_lived", "long_lived not a boolean"),
    ]:
        s, r = req("POST", base + "/exec", body)[:2]
        ok(s == 400 and r["error"].get("field") == field, "bad input: %s → 400 naming %s" % (what, field), r)
    s, ex2 = tty_exec(sid, ["sleep", "30"])
    if ok(s == 201, "another terminal exec", ex2):
        w = WS(ex2["attach"], upgrade=False)
        ok(w.status == 426, "attach without an Upgrade: 426", w.head)
        w.close()
        w = WS(ex2["attach"], headers={})
        w.close()
        s, r = req("POST", base + "/execs/%s/resize" % ex2["exec_id"], {"cols": 5000, "rows": 1})[:2]
        is_(s, 400, "resize to 5000 cols: 400")
        s, r = req("POST", base + "/execs/%s/resize" % ex2["exec_id"], "{nope")[:2]
        is_(s, 400, "resize with malformed JSON: 400")
        req("POST", base + "/execs/%s/input" % ex2["exec_id"], "\x03")  # ^C ends sleep
    w = WS(base + "/execs/exe_0000000000000000/attach")
    is_(w.status, 404, "attach to an unknown exec: 404")
    w.close()
    s, r = req("POST", base + "/exec", {"argv": ["true"]})[:2]
    s, r = req("POST", base + "/execs/%s/input" % r.get("exec_id", "exe_0000000000000000"), "x")[:2]
    is_(s, 404, "input to an exec without a terminal: 404")

    # ---- long-lived: allowed where the profile says so; no timeout; not in budget_s ---------
    s, d = T.create(profile="profile.default")[:2]
    if ok(s == 201, "a sandbox of profile.default", d):
        s, r = req("POST", "/v1/sandboxes/%s/exec" % d["id"], {"argv": ["true"], "long_lived": True})[:2]
        ok(s == 403 and "process.long_lived" in r["error"]["message"],
           "long_lived where the profile does not allow it: 403 naming process.long_lived", r)
        s, t = tty_exec(d["id"], ["sh", "-c", "echo bounded"])
        ok(s == 201, "a terminal where long-lived is not allowed: a bounded one (the profile's timeout_s)", t)
        req("DELETE", "/v1/sandboxes/%s" % d["id"])
    s, b = T.create(profile="profile.pty-budget")[:2]
    if ok(s == 201, "a sandbox with timeout_s 1, budget_s 2 and long-lived execs", b):
        bid = b["id"]
        s, t = tty_exec(bid, ["sh", "-c", "sleep 2.5; echo held"])
        w = WS(t["attach"]) if s == 201 else None
        out, texts, closed = w.until(b"\x00never", 15) if w else (b"", [], False)
        end = json.loads(texts[-1])["exit"] if texts else {}
        ok(b"held" in out and end.get("exit_code") == 0,
           "a terminal lives past timeout_s (2.5 s > 1 s): long-lived by default where allowed", (out, end))
        s, r = req("POST", "/v1/sandboxes/%s/exec" % bid, {"argv": ["sh", "-c", "sleep 1.5"], "long_lived": True})[:2]
        ok(s == 200 and r.get("exit_code") == 0, "long_lived: true without a terminal: no timeout either", r)
        s, rec = req("GET", "/v1/sandboxes/%s" % bid)[:2]
        ok(s == 200 and rec.get("budget_used_s", 9) < 1, "long-lived execs are not counted in budget_s", rec)
        s, r = req("POST", "/v1/sandboxes/%s/exec" % bid, {"argv": ["sh", "-c", "sleep 3"]})[:2]
        ok(s == 200 and r.get("status") == "timeout", "a bounded exec still has its timeout_s", r.get("status"))
        s, r = req("POST", "/v1/sandboxes/%s/exec" % bid,
                   {"argv": ["sh", "-c", "sleep 2"], "long_lived": True, "timeout_s": 0.5})[:2]
        ok(s == 200 and r.get("status") == "timeout", "a long-lived exec that asks a timeout_s has it", r.get("status"))
        if w:
            w.close()
        req("DELETE", "/v1/sandboxes/%s" % bid)

    hold = float(os.environ.get("SBX_HOLD_S", "0"))
    if hold > 0:
        hold_pty_and_server(sid, hold)
    else:
        T.skip("holding a PTY and a server (SBX_HOLD_S unset: test-long-lived.sh sets 300)")

    req("DELETE", "/v1/sandboxes/%s" % sid)
    if T.invalid:
        ok(False, "every response body matches docs/openapi.json", "\n".join(T.invalid[:10]))
    else:
        ok(T.validated[0] > 20, "every response body (%d) matches docs/openapi.json" % T.validated[0])


def hold_pty_and_server(sid, hold):
    """A terminal and a background server held for `hold` seconds: both answer all along."""
    s, sv = req("POST", "/v1/sandboxes/%s/exec" % sid, {"argv": ["python3", "-m", "http.server", "--bind", "127.0.0.1", "8765"],
                                                         "long_lived": True, "stream": True}, timeout=5)[:2]
    s, t = tty_exec(sid, ["bash", "--norc", "-i"])
    w = WS(t["attach"]) if s == 201 else None
    t0, rounds, good = time.time(), 0, 0
    while time.time() - t0 < hold:
        time.sleep(min(30, max(0, hold - (time.time() - t0))))
        rounds += 1
        w.send("echo tick-%d\n" % rounds)
        out, _, _ = w.until(("tick-%d" % rounds).encode() + b"\r\n", 10) if w else (b"", [], True)
        r = req("POST", "/v1/sandboxes/%s/exec" % sid,
                {"argv": ["python3", "-c", "import urllib.request as u;print(u.urlopen('http://127.0.0.1:8765/').status)"]})[1]
        if ("tick-%d" % rounds).encode() in out and isinstance(r, dict) and r.get("stdout", "").strip() == "200":
            good += 1
    ok(rounds > 0 and good == rounds, "a terminal and a server held %d s: both answered %d of %d times" % (hold, good, rounds))
    if w:
        w.close()


if __name__ == "__main__":
    try:
        main()
    finally:
        T.cleanup()
    print("1..%d" % T.n)
    sys.exit(1 if T.failed else 0)
