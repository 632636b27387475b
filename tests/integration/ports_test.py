#!/usr/bin/env python3
"""ports_test.py — a sandbox's ports through the real `sandboxer serve` (DESIGN.md, "Ports, PTYs,
sessions"; docs/api.md, "Ports"): HTTP (methods, bodies, queries, headers, chunked and large
answers) and WebSocket proxied to a server listening inside on 127.0.0.1; by path, by Host with
--domain, by a signed URL; who may (the tenant's token, the preview token, a signed URL; not
another tenant, not nobody; serve's credentials never reach the sandbox); the failures (nothing
listening: 502, a port out of range: 400, an expired or altered signed URL: 403). Prints TAP.
Run by test-ports.sh with the environment of test-sandboxes.sh."""
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandboxes_test as T  # noqa: E402 — the server, req() with validation, TAP
from pty_test import WS  # noqa: E402 — a WebSocket client over the unix socket

ok, is_, req = T.ok, T.is_, T.req
DOMAIN = "sbx.test"

SERVER = r'''
import base64, hashlib, json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.headers.get("Upgrade", "").lower() == "websocket":
            return self.ws()
        if self.path.startswith("/chunked"):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for part in (b"one,", b"two,", b"three"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.startswith("/big"):
            data = bytes(range(256)) * 4096
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        out = json.dumps({"method": self.command, "path": self.path, "body": body.decode("latin-1"),
                          "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Echo", "yes")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = any
    def ws(self):
        acc = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"] +
                                             "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", acc)
        self.end_headers()
        self.wfile.flush()
        while True:
            h = self.rfile.read(2)
            if len(h) < 2:
                return
            op, n = h[0] & 15, h[1] & 127
            if n == 126:
                n = int.from_bytes(self.rfile.read(2), "big")
            mask = self.rfile.read(4) if h[1] & 128 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if op == 8:
                self.wfile.write(b"\x88\x00")
                self.wfile.flush()
                return
            reply = b"echo:" + data
            self.wfile.write(bytes([0x80 | op, len(reply)]) + reply)
            self.wfile.flush()
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def raw_http(target, path, headers, timeout=20):
    """A GET with exactly these headers (Host among them): (status, head, body)."""
    s = socket.socket(socket.AF_UNIX) if target is None else socket.create_connection(target, timeout=timeout)
    s.settimeout(timeout)
    if target is None:
        s.connect(T.SOCK)
    h = "GET %s HTTP/1.1\r\nConnection: close\r\n" % path + "".join("%s: %s\r\n" % kv for kv in headers.items())
    s.sendall((h + "\r\n").encode())
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head else 0
    return status, head.decode(errors="replace"), body


def start_server(sid, port):
    s = req("PUT", "/v1/sandboxes/%s/files?path=/tmp/srv.py" % sid, SERVER)[0]
    # a long-lived exec: the request streams until the server ends; we do not wait for it
    req("POST", "/v1/sandboxes/%s/exec" % sid, {"argv": ["python3", "/tmp/srv.py", str(port)], "long_lived": True,
                                                "stream": True}, timeout=0.5)
    for _ in range(100):
        if req("GET", "/v1/sandboxes/%s/ports/%d/" % (sid, port))[0] in (200, 201):
            return s == 200
        time.sleep(0.05)
    return False


def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    tport = sock.getsockname()[1]
    sock.close()
    toks = {}
    for name, tenant in [("a", "default"), ("b", "elsewhere")]:
        out = subprocess.run([T.SBX, "token", "create", "--actor", "agt", "--name", name, "--tenant", tenant,
                              "--state-dir", T.ST, "--json"], env=T.ENV, capture_output=True, text=True)
        toks[name] = json.loads(out.stdout)["token"] if out.returncode == 0 else ""
    if not ok(T.start(["--listen", "127.0.0.1:%d" % tport, "--domain", DOMAIN]), "serve starts with --domain"):
        return
    tcp = ("127.0.0.1", tport)
    s, box = T.create(profile="profile.e2b")[:2]
    if not ok(s == 201, "a sandbox", box):
        return
    sid = box["id"]
    is_([box.get("home"), box.get("user")], ["/home/user", "user"], "the record names the profile's home and user")
    req("POST", "/v1/sandboxes/%s/exec" % sid, {"argv": ["sh", "-c", "head -c 3000000 /dev/zero > /tmp/m; i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"]})
    s, r, _ = req("GET", "/v1/sandboxes/%s/metrics" % sid)
    ok(s == 200 and r["cpu_count"] > 0 and r["memory_total_bytes"] > r["memory_used_bytes"] >= 0 and r["cpu_s"] > 0 and r["pids"] >= 0 and
       r["disk_total_bytes"] > 0 and r["disk_used_bytes"] >= 3000000 and 0 <= r["cpu_used_pct"] <= 100,
       "metrics: CPU, memory and scratch the sandbox used", r)
    s, r, _ = req("POST", "/v1/sandboxes/%s/metrics" % sid)
    is_(s, 405, "metrics: POST is 405")
    s, r, _ = req("PUT", "/v1/sandboxes/%s/metadata" % sid, {"team": "ports", "n": "1"})
    ok(s == 200 and r.get("metadata") == {"team": "ports", "n": "1"}, "PUT .../metadata replaces the metadata", r)
    s, r, _ = req("GET", "/v1/sandboxes?limit=10")
    for body, what in [({"a": 1}, "a value not a string"), ([1], "not an object"), ({"k%d" % i: "v" for i in range(65)}, "65 keys")]:
        s, r, _ = req("PUT", "/v1/sandboxes/%s/metadata" % sid, body)
        ok(s == 400 and r["error"]["message"], "metadata: %s is 400 with a message" % what, r)
    s, r, _ = req("POST", "/v1/sandboxes/%s/metadata" % sid, {})
    is_(s, 405, "metadata: POST is 405")
    s, plain = T.create()[:2]
    is_(plain.get("user") if s == 201 else s, "sandbox", "...the default profile's user is sandbox")
    if s == 201:
        req("DELETE", "/v1/sandboxes/" + plain["id"])
    base = "/v1/sandboxes/%s/ports/8000" % sid
    if not ok(start_server(sid, 8000), "a server inside listens on 127.0.0.1:8000 (a long-lived exec)"):
        return

    # ---- HTTP by path -------------------------------------------------------------------------
    s, r, h = req("GET", base + "/some/where?x=1&y=a%20b")
    ok(s == 200 and r.get("method") == "GET" and r.get("path") == "/some/where?x=1&y=a%20b",
       "GET: the path and the query as sent", r)
    ok(h.get("X-Echo") == "yes", "the answer's own headers come back", h)
    hd = r.get("headers", {}) if isinstance(r, dict) else {}
    ok(hd.get("host") == "localhost:8000" and hd.get("x-forwarded-prefix") == base,
       "the server sees Host localhost:PORT and the prefix it is served under", hd)
    s, r, _ = req("POST", base + "/p", b"a=1&b=\x00\xff", headers={"Content-Type": "application/x-www-form-urlencoded"})
    ok(s == 201 and r.get("body") == "a=1&b=\x00\xff" and r.get("method") == "POST",
       "POST: its status (201) and the body byte for byte", r)
    for m in ("PUT", "PATCH", "DELETE"):
        s, r, _ = req(m, base + "/m", "x")
        ok(s == 200 and r.get("method") == m, "%s is proxied" % m, r)
    s, r, _ = req("GET", base + "/chunked", raw=True)
    is_([s, r], [200, b"one,two,three"], "a chunked answer, de-chunked and passed on")
    s, r, _ = req("GET", base + "/big", raw=True)
    ok(s == 200 and r == bytes(range(256)) * 4096, "a 1 MiB answer, byte for byte", len(r))
    s, r, _ = req("GET", base)
    ok(s == 200 and r.get("path") == "/", "the port without a trailing slash is its /", r)

    # ---- failures -----------------------------------------------------------------------------
    s, r, _ = req("GET", "/v1/sandboxes/%s/ports/8001/" % sid)
    ok(s == 502 and "nothing listens" in r["error"]["message"], "a port nothing listens on: 502 with a message", r)
    for bad in ("0", "65536", "99999", "abc", "-1"):
        s, r, _ = req("GET", "/v1/sandboxes/%s/ports/%s/" % (sid, bad))
        ok(s == 400 and "65535" in r["error"]["message"], "port %s: 400" % bad, r)
    s, r, _ = req("GET", "/v1/sandboxes/sbx_0000000000000000/ports/8000/")
    is_(s, 404, "an unknown sandbox: 404")

    # ---- WebSocket ----------------------------------------------------------------------------
    w = WS(base + "/ws")
    ok(w.status == 101 and w.accept_ok, "a WebSocket upgrade reaches the server inside (its accept key)", w.head)
    if w.status == 101:
        w.send("hello", op=1)
        is_(w.recv(), (1, b"echo:hello"), "text frames both ways")
        w.send(b"\x00\x01bin", op=2)
        is_(w.recv(), (2, b"echo:\x00\x01bin"), "binary frames both ways")
        w.send(b"", op=8)
        is_(w.recv()[0], 8, "the close")
    w.close()

    # ---- by Host -------------------------------------------------------------------------------
    s, head, body = raw_http(None, "/by/host?q=1", {"Host": "8000-%s.%s" % (sid, DOMAIN)})
    r = json.loads(body) if s == 200 else {}
    ok(s == 200 and r.get("path") == "/by/host?q=1", "Host PORT-ID.DOMAIN routes to the port, the target as sent", head)
    s, head, _ = raw_http(None, "/", {"Host": "8001-%s.%s:80" % (sid, DOMAIN)})
    is_(s, 502, "by Host, nothing listening: 502")
    s, head, _ = raw_http(None, "/", {"Host": "70000-%s.%s" % (sid, DOMAIN)})
    is_(s, 400, "by Host, a port out of range: 400")

    # ---- who may ------------------------------------------------------------------------------
    A = {"Authorization": "Bearer " + toks["a"]}
    B = {"Authorization": "Bearer " + toks["b"]}
    s, r, _ = req("GET", base + "/who", headers=A, target=tcp)
    hd = r.get("headers", {}) if isinstance(r, dict) else {}
    ok(s == 200 and "authorization" not in hd, "the tenant's token reaches it over TCP; serve's token is not passed on", hd)
    s, r, _ = req("GET", base + "/", headers=B, target=tcp)
    is_(s, 404, "another tenant's token: 404")
    s, r, _ = req("GET", base + "/", target=tcp)
    ok(s == 401 and "preview token" in r["error"]["message"], "no credentials over TCP: 401 saying what would do", r)
    s, pv, _ = req("POST", "/v1/sandboxes/%s/previews" % sid, {"port": 8000, "expires_s": 60})
    ok(s == 200 and len(pv.get("token", "")) == 32 and pv.get("url") == "http://8000-%s.%s/" % (sid, DOMAIN) and
       "/v1/p/" in pv.get("signed_url", ""), "a preview link: url by Host (with --domain), token, signed URL", pv)
    P = {"X-Sandboxer-Preview-Token": pv.get("token", "")}
    s, r, _ = req("GET", base + "/pv", headers=P, target=tcp)
    hd = r.get("headers", {}) if isinstance(r, dict) else {}
    ok(s == 200 and "x-sandboxer-preview-token" not in hd, "the preview token stands for the owner; it is not passed on", hd)
    s, r, _ = req("GET", base + "/", headers={"X-Sandboxer-Preview-Token": "0" * 32}, target=tcp)
    is_(s, 401, "a wrong preview token: 401")
    s, head, body = raw_http(tcp, "/", {"Host": "8000-%s.%s" % (sid, DOMAIN), "x-daytona-preview-token": pv.get("token", "")})
    is_(s, 200, "by Host over TCP with Daytona's preview-token header")
    st = pv.get("signed_token", "")
    s, r, _ = req("GET", "/v1/p/%s/signed/x?k=v" % st, target=tcp)
    ok(s == 200 and r.get("path") == "/signed/x?k=v", "a signed URL needs no credentials", r)
    alt = st[:-1] + ("0" if st[-1:] != "0" else "1")
    s, r, _ = req("GET", "/v1/p/%s/" % alt, target=tcp)
    ok(s == 403 and "not valid" in r["error"]["message"], "an altered signed URL: 403", r)
    parts = st.split(".")
    if len(parts) == 4:
        other = ".".join([parts[0], "8001", parts[2], parts[3]])
        s, r, _ = req("GET", "/v1/p/%s/" % other, target=tcp)
        is_(s, 403, "a signed URL's port cannot be changed: 403")
    s, short, _ = req("POST", "/v1/sandboxes/%s/previews" % sid, {"port": 8000, "expires_s": 1})
    time.sleep(2.2)
    s, r, _ = req("GET", "/v1/p/%s/" % short.get("signed_token", "x"), target=tcp)
    ok(s == 403 and "expired" in r["error"]["message"], "an expired signed URL: 403 saying so", r)
    s, r, _ = req("DELETE", "/v1/sandboxes/%s/previews/%s" % (sid, st))
    ok(s == 200 and r.get("revoked") is True, "a signed URL revoked by its owner", r)
    s, r, _ = req("GET", "/v1/p/%s/" % st, target=tcp)
    ok(s == 403 and "expired by its owner" in r["error"]["message"], "a revoked signed URL: 403", r)
    for body, what in [({"port": 0}, "port 0"), ({"port": "80"}, "port a string"), ({"port": 80, "expires_s": -1}, "a negative expiry"),
                       ({"port": 80, "expires_s": 10**7}, "an expiry past a week"), ({"port": 80, "bogus": 1}, "an unknown key")]:
        s, r, _ = req("POST", "/v1/sandboxes/%s/previews" % sid, body)
        ok(s == 400 and r["error"]["message"], "previews: %s is 400" % what, r)
    s, r, _ = req("POST", "/v1/sandboxes/%s/previews" % sid, "{nope")
    is_(s, 400, "previews: malformed JSON is 400")
    s, r, _ = req("DELETE", "/v1/sandboxes/%s/previews/%s" % (sid, "x.y"))
    is_(s, 404, "revoking a token that is none: 404")

    # ---- sandboxer port-forward ------------------------------------------------------------------
    cli = [T.SBX, "port-forward", "--server", "unix:" + T.SOCK]
    pf = subprocess.Popen(cli + ["--json", sid, "8000", "0"], env=T.ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = pf.stdout.readline()
    try:
        info = json.loads(line)
    except ValueError:
        info = {}
    ok(info.get("sandbox_port") == 8000 and info.get("port", 0) > 0, "port-forward --json says where it listens", line)
    if info.get("port"):
        c = socket.create_connection(("127.0.0.1", info["port"]), timeout=10)
        c.sendall(b"GET /via/forward HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            d = c.recv(65536)
            if not d:
                break
            data += d
        c.close()
        ok(b" 200 " in data.split(b"\r\n")[0] and b'"/via/forward"' in data, "a local connection reaches the server inside, bytes untouched", data[:200])
        w = socket.create_connection(("127.0.0.1", info["port"]), timeout=10)
        w.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            d = w.recv(1)
            if not d:
                break
            head += d
        w.sendall(bytes([0x81, 0x82, 1, 2, 3, 4]) + bytes(b ^ [1, 2, 3, 4][i] for i, b in enumerate(b"hi")))
        is_(w.recv(64), bytes([0x81, 7]) + b"echo:hi", "a WebSocket through the forward")
        w.close()
    pf.terminate()
    pf.wait(10)
    pf = subprocess.Popen(cli + ["--json", sid, "8001", "0"], env=T.ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    info = json.loads(pf.stdout.readline() or "{}")
    if info.get("port"):
        c = socket.create_connection(("127.0.0.1", info["port"]), timeout=10)
        c.settimeout(10)
        ok(c.recv(100) == b"", "port-forward to a port nothing listens on: the connection is closed")
        c.close()
    pf.terminate()
    _, err = pf.communicate(timeout=10)
    ok("nothing listens on 127.0.0.1:8001" in err, "...saying why", err)
    for args, what in [([sid], "no PORT"), ([sid, "0"], "PORT 0"), ([sid, "70000"], "PORT 70000"), ([sid, "80", "x"], "LOCAL x"),
                       (["nope", "80"], "a bad id"), (["sbx_0000000000000000", "80"], "an unknown sandbox"),
                       (["--address", "::1", sid, "80"], "an address that is not IPv4")]:
        r = subprocess.run(cli + args, env=T.ENV, capture_output=True, text=True, timeout=20)
        ok(r.returncode == 125 and r.stderr.strip(), "port-forward with %s: exit 125 with a message" % what, r.stderr)

    # ---- a destroyed sandbox ------------------------------------------------------------------
    req("DELETE", "/v1/sandboxes/" + sid)
    s, r, _ = req("GET", base + "/")
    ok(s in (404, 410), "the port of a destroyed sandbox: 404/410", r)
    s, r, _ = req("GET", "/v1/p/%s/" % short.get("signed_token", "x"), target=tcp)
    is_(s, 403, "a signed URL is checked before the sandbox")


if __name__ == "__main__":
    try:
        main()
    finally:
        T.cleanup()
    print("1..%d" % T.n)
    if T.invalid:
        print("# bodies not matching docs/openapi.json:\n# " + "\n# ".join(T.invalid))
    sys.exit(1 if T.failed or T.invalid else 0)
