#!/usr/bin/env python3
"""fake-docker-engine.py — a Docker-API engine that runs nothing and answers at once: for the
docker backend's tests (what it asks, in what order, and how it takes odd answers) and for
measuring what a client adds on top of an engine (bench/backends.sh's docker row).

    fake-docker-engine.py [OPTION]... SOCKET

A real engine's run (podman here: 60-450 ms, most of it runc) varies by far more than the 2 ms
to be measured; against this engine both sides get the same instant answers, and what is left is
the client's own cost.

It answers like podman's compatible service (the Libpod-Api-Version header) unless --docker:
_ping, the container list, create, attach (a raw stream: the command's output, then its end when
the container is started), start, wait, inspect, kill, delete, image inspect and import.
Anything else is a 404. Serves until killed.

  --docker          answer as Docker does (no Libpod-Api-Version header)
  --log FILE        append "METHOD PATH" per request, and "BODY <json>" after a create's
  --exit N          the command's exit status (default 0)
  --output TEXT     what the command writes to stdout (default nothing)
  --delay MS        the command runs this long after the start (default 0)
  --runs-on         inspect says the container still runs until a wait has been answered
                    (a command that closed its output and went on)
  --no-image        no image until one is imported (POST /images/create): create answers 404
  --bad-create      create answers 201 with a body that is not JSON
  --list JSON       the container list's answer (default [])
  --netns           each started container gets an init of its own: `unshare --net --pid --fork
                    sleep`, State.Pid while it runs (root only); the command "runs" once one byte
                    has come on the attached stdin (network.egress's gate): "GATE <byte>" and
                    "LISTEN <address:port>..." (the sockets listening in that network namespace)
                    go to the log
"""
import argparse
import json
import os
import socketserver
import subprocess
import threading
import time

opts = None
started = {}            # container id -> Event set by start
waited = set()
lock = threading.Lock()
count = [0]
have_image = [True]
holders = {}            # container id -> the Popen of unshare, its child the "init" (--netns)


def holder_pid(cid):
    """the pid of the sleep that unshare forked: PID 1 of its own pid namespace"""
    p = holders.get(cid)
    if not p:
        return 0
    for _ in range(100):
        try:
            with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.01)
    return 0


def listening(pid):
    """the TCP sockets listening in the network namespace of pid, as address:port"""
    out = []
    with open("/proc/%d/net/tcp" % pid) as f:
        for line in f.readlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A":
                a, port = local.split(":")
                out.append("%s:%d" % (".".join(str(int(a[i:i + 2], 16)) for i in (6, 4, 2, 0)), int(port, 16)))
    return out


def event(cid):
    with lock:
        return started.setdefault(cid, threading.Event())


def log(line):
    if opts.log:
        with lock, open(opts.log, "a") as f:
            f.write(line + "\n")


class Handler(socketserver.BaseRequestHandler):
    def reply(self, code, reason, body=b"", ctype="application/json"):
        head = "HTTP/1.1 %d %s\r\nApi-Version: 1.41\r\n" % (code, reason)
        if not opts.docker:
            head += "Libpod-Api-Version: 4.3.1\r\nServer: Libpod/4.3.1 (linux)\r\n"
        head += ("Content-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                 % (ctype, len(body)))
        self.request.sendall(head.encode() + body)

    def handle(self):
        s = self.request
        data = b""
        while b"\r\n\r\n" not in data:
            k = s.recv(65536)
            if not k:
                return
            data += k
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, url, _ = lines[0].split(" ", 2)
        clen = 0
        for l in lines[1:]:
            if l.lower().startswith("content-length:"):
                clen = int(l.split(":", 1)[1])
        while len(body) < clen:
            k = s.recv(65536)
            if not k:
                return
            body += k
        log("%s %s" % (method, url))
        path = url.split("?", 1)[0]
        parts = path.strip("/").split("/")
        if parts and parts[0].startswith("v"):
            parts = parts[1:]
        if path == "/_ping":
            return self.reply(200, "OK", b"OK", "text/plain; charset=utf-8")
        if parts == ["images", "create"] and method == "POST":
            have_image[0] = True
            return self.reply(200, "OK", b'{"status":"imported"}')
        if parts[:1] == ["images"] and method == "GET":
            if not have_image[0]:
                return self.reply(404, "Not Found", b'{"message":"no such image"}')
            return self.reply(200, "OK", b'{"Id":"sha256:0"}')
        if parts == ["containers", "json"]:
            return self.reply(200, "OK", (opts.list or "[]").encode())
        if parts == ["containers", "create"] and method == "POST":
            log("BODY " + body.decode())
            json.loads(body)     # a malformed body is the client's bug: fail loudly
            if not have_image[0]:
                return self.reply(404, "Not Found", b'{"message":"no such image: sandboxer-base:v1"}')
            if opts.bad_create:
                return self.reply(201, "Created", b"<html>surprise</html>", "text/html")
            with lock:
                count[0] += 1
                cid = "%064x" % count[0]
            return self.reply(201, "Created", json.dumps({"Id": cid, "Warnings": []}).encode())
        if len(parts) == 3 and parts[0] == "containers":
            cid, op = parts[1], parts[2]
            if op == "attach":
                s.sendall(b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream"
                          b"\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
                event(cid).wait(30)
                if opts.netns:
                    s.settimeout(10)
                    try:
                        gate = s.recv(1)
                    except OSError:
                        gate = b""
                    log("GATE %s" % gate.decode("latin-1"))
                    pid = holder_pid(cid)
                    log("LISTEN %s" % " ".join(listening(pid) if pid else []))
                    with lock:
                        p = holders.pop(cid, None)
                    if p:
                        p.kill()
                        p.wait()
                time.sleep(opts.delay / 1000.0)
                out = (opts.output or "").encode()
                if out:
                    s.sendall(bytes([1, 0, 0, 0]) + len(out).to_bytes(4, "big") + out)
                return           # the stream ends: the command has exited (or closed its output)
            if op == "start":
                if opts.netns:
                    with lock:
                        holders[cid] = subprocess.Popen(["unshare", "--net", "--pid", "--fork", "sleep", "30"])
                event(cid).set()
                return self.reply(204, "No Content")
            if op == "wait":
                with lock:
                    waited.add(cid)
                return self.reply(200, "OK", json.dumps({"StatusCode": opts.exit, "Error": None}).encode())
            if op == "json":
                running = opts.runs_on and cid not in waited
                pid = holder_pid(cid) if opts.netns else 0
                running = running or pid > 0
                # the command's arguments come back in an inspect: a client must not take them for
                # the state's keys
                return self.reply(200, "OK", json.dumps(
                    {"Id": cid, "Args": ["ExitCode", "Running", "OOMKilled"],
                     "State": {"Status": "running" if running else "exited", "Running": running, "Pid": pid,
                               "OOMKilled": False, "ExitCode": 0 if running else opts.exit,
                               "Health": {"Log": [{"ExitCode": 99}]}}}).encode())
            if op == "kill":
                return self.reply(204, "No Content")
        if len(parts) == 2 and parts[0] == "containers" and method == "DELETE":
            with lock:
                started.pop(parts[1], None)
                p = holders.pop(parts[1], None)
            if p:
                p.kill()
                p.wait()
            return self.reply(204, "No Content")
        return self.reply(404, "Not Found", b'{"message":"not here"}')


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = 64


def main():
    global opts
    ap = argparse.ArgumentParser(description="a Docker-API engine that runs nothing")
    ap.add_argument("socket")
    ap.add_argument("--docker", action="store_true")
    ap.add_argument("--log")
    ap.add_argument("--exit", type=int, default=0)
    ap.add_argument("--output")
    ap.add_argument("--delay", type=int, default=0)
    ap.add_argument("--runs-on", action="store_true")
    ap.add_argument("--no-image", action="store_true")
    ap.add_argument("--bad-create", action="store_true")
    ap.add_argument("--list")
    ap.add_argument("--netns", action="store_true")
    opts = ap.parse_args()
    have_image[0] = not opts.no_image
    try:
        os.unlink(opts.socket)
    except FileNotFoundError:
        pass
    with Server(opts.socket, Handler) as srv:
        os.chmod(opts.socket, 0o666)
        srv.serve_forever()


if __name__ == "__main__":
    main()
