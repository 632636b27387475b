#!/usr/bin/env python3
"""fronting_test.py — one node fronting others (ext.sandboxer): three `sandboxer serve` on
loopback. A fronts (its unix socket, and plain HTTP on loopback for the loop check); B and C are
back ends over HTTPS with their own certificates and tokens, reached by A through its registry.
Routes choose as the strategies say and explain agrees with create; the whole API passes through
(exec, streamed exec, files, TTL, the record); a provision that fails falls back to the next
candidate; a route that loops is refused; killing B fails its sandboxes (host_lost) and sends new
creates to C; B back again is told to destroy what A failed; A restarted keeps its sandboxes on C.
Every body A answers is validated against docs/openapi.json. Run by test-fronting.sh (TAP)."""
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandboxes_test as t  # noqa: E402 — its TAP, validation and unix-socket helpers

SBX, TMP, POLICY = t.SBX, t.TMP, t.POLICY
F = os.path.join(TMP, "fronting")
os.makedirs(F, exist_ok=True)
procs = {}
logs = {}


def port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cert(name, san=""):
    d = os.path.join(F, name)
    os.makedirs(d, exist_ok=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1" + san,
                    "-keyout", d + "/key.pem", "-out", d + "/cert.pem"], check=True, capture_output=True)
    return d + "/cert.pem", d + "/key.pem"


def token(name):
    st = os.path.join(F, name, "state")
    out = subprocess.run([SBX, "token", "create", "--actor", "agt", "--name", "front", "--state-dir", st],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


NODES = {}


def serve(name, args):
    d = os.path.join(F, name)
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, SANDBOXER_RUNTIME_DIR=os.path.join(d, "run"), SANDBOXER_STATE_DIR=os.path.join(d, "state"))
    if name == "A":  # test builds: a sandbox whose metadata has fail_local cannot start on A
        env["SANDBOXER_TEST_SPAWN_FAIL_META"] = "fail_local"
    a = [SBX, "serve", "--listen", "unix:" + os.path.join(d, "s.sock"), "--state-dir", os.path.join(d, "state"),
         "--heartbeat-s", "0.5", "--stop-sandboxes"] + args
    if POLICY:
        a += ["--policy", POLICY]
    logs[name] = open(os.path.join(d, "serve.log"), "ab")
    procs[name] = subprocess.Popen(a, env=env, stdout=logs[name], stderr=logs[name])
    for _ in range(200):
        s, _, _ = call(name, "GET", "/healthz", timeout=5)
        if s == 200:
            return True
        time.sleep(0.05)
    return False


def stop(name, sig=signal.SIGTERM):
    p = procs.pop(name, None)
    if p:
        p.send_signal(sig)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def call(name, method, path, body=None, headers=None, timeout=60, tcp=False):
    """(status, JSON or bytes, headers) from node name: A on its unix socket (validated), B and C
    over HTTPS with their tokens (tcp=True), or any node's socket."""
    n = NODES.get(name, {})
    h = dict(headers or {})
    if tcp:
        ctx = ssl.create_default_context(cafile=n["cert"])
        c = http.client.HTTPSConnection("127.0.0.1", n["port"], timeout=timeout, context=ctx)
        h["Authorization"] = "Bearer " + n["token"]
    else:
        c = t.Unix(os.path.join(F, name, "s.sock"), timeout)
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
    except Exception as e:  # noqa: BLE001 — a status of 0
        return 0, "request failed: %s" % e, {}
    finally:
        c.close()
    ctype = r.getheader("Content-Type") or ""
    if name == "A":
        t.validate(method, path, r.status, data, ctype)
    if ctype.startswith("application/json"):
        try:
            return r.status, json.loads(data), dict(r.getheaders())
        except ValueError:
            pass
    return r.status, data, dict(r.getheaders())


def events(name, sid, secs=2):
    """What the node's event stream of sandbox sid sends in secs (the stream does not end)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(secs)
    s.connect(os.path.join(F, name, "s.sock"))
    s.sendall(b"GET /v1/events?sandbox=" + sid.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    out = b""
    end = time.time() + secs
    try:
        while time.time() < end:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        pass
    s.close()
    return out


def wait(cond, secs=15):
    end = time.time() + secs
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    return cond()


def cand(rec, ext):
    for c in (rec.get("route") or rec).get("candidates") or []:
        if c.get("extension") == ext:
            return c
    return {}


def main():
    for name in ("B", "C"):
        NODES[name] = {"port": port()}
        # C also plays a hosted service through its E2B surface: host names PORT-ID.e2b.test
        NODES[name]["cert"], key = cert(name, ",DNS:*.e2b.test" if name == "C" else "")
        NODES[name]["token"] = token(name)
        ok = serve(name, ["--listen", "127.0.0.1:%d" % NODES[name]["port"], "--tls-cert", NODES[name]["cert"],
                          "--tls-key", key] + (["--domain", "e2b.test"] if name == "C" else []))
        if not ok:
            print("Bail out! serve %s did not start" % name)
            return
    NODES["A"] = {"port": port()}
    sec = os.path.join(F, "A", "secrets")
    reg = os.path.join(F, "A", "registry")
    os.makedirs(sec, exist_ok=True)
    os.makedirs(reg, exist_ok=True)
    NODES["A"]["token"] = token("A")
    for n, v in (("b-token", NODES["B"]["token"]), ("c-token", NODES["C"]["token"]), ("wrong-token", "sbx_nope"),
                 ("a-token", NODES["A"]["token"])):
        with open(os.path.join(sec, n), "w") as f:
            f.write(v + "\n")

    def entry(ext, url, secret, ca, price, regions):
        with open(os.path.join(reg, ext + ".yaml"), "w") as f:
            f.write("id: %s\nkind: sandboxer\nurl: %s\nauth: {secret: %s}\n%s"
                    "capabilities: {isolation: [container, policy], regions: [%s], pause: true, snapshot: true}\n"
                    "pricing: {per_second: %s}\n" % (ext, url, secret, "tls: {ca_file: %s}\n" % ca if ca else "",
                                                       regions, price))
    entry("ext.b", "https://127.0.0.1:%d" % NODES["B"]["port"], "b-token", NODES["B"]["cert"], "0.0002", "eu")
    entry("ext.c", "https://127.0.0.1:%d/" % NODES["C"]["port"], "c-token", NODES["C"]["cert"], "0.0001", "us")
    entry("ext.b-badkey", "https://127.0.0.1:%d" % NODES["B"]["port"], "wrong-token", NODES["B"]["cert"], "1", "eu")
    entry("ext.self", "http://127.0.0.1:%d" % NODES["A"]["port"], "a-token", None, "1", "moon")
    with open(os.path.join(reg, "ext.e2b.yaml"), "w") as f:  # C's E2B surface, as E2B's SDKs reach E2B
        f.write("id: ext.e2b\nkind: e2b\nurl: https://127.0.0.1:%d\ndomain: e2b.test\nconnect_to: 127.0.0.1:%d\n"
                "auth: {secret: e2b-key}\ntls: {ca_file: %s}\n"
                "capabilities: {isolation: [container, policy], regions: [hosted], pause: true}\n"
                "pricing: {per_second: 0.00005}\n" % (NODES["C"]["port"], NODES["C"]["port"], NODES["C"]["cert"]))
    with open(os.path.join(reg, "ext.daytona.yaml"), "w") as f:  # C's Daytona surface, as Daytona's SDK reaches it
        f.write("id: ext.daytona\nkind: daytona\nurl: https://127.0.0.1:%d/api\nauth: {secret: daytona-key}\n"
                "tls: {ca_file: %s}\ncapabilities: {isolation: [container, policy], regions: [hosted], pause: true}\n"
                "pricing: {per_second: 0.00007}\n" % (NODES["C"]["port"], NODES["C"]["cert"]))
    compose_setup(reg, sec)
    A_ARGS = ["--listen", "127.0.0.1:%d" % NODES["A"]["port"], "--secrets-dir", sec, "--registry", reg]
    t.ok(serve("A", A_ARGS), "A (the front) starts with ext.b, ext.c, ext.b-badkey and ext.self in its registry")

    # -- the registry's health and this node -----------------------------------------------------
    def healthy():
        s, d, _ = call("A", "GET", "/v1/extensions")
        h = {x["id"]: x["health"]["ok"] for x in d.get("items", [])} if s == 200 else {}
        return h if h.get("ext.b") and h.get("ext.c") and h.get("ext.e2b") and h.get("ext.daytona") else None
    h = wait(healthy, 20)
    t.ok(h and h.get("ext.b") and h.get("ext.c") and h.get("ext.e2b") and h.get("ext.daytona"),
         "A's probes find B, C and C's E2B and Daytona surfaces healthy over HTTPS (their certificates verified)", h)
    s, d, _ = call("A", "GET", "/v1/extensions")
    t.ok(s == 200 and not any("auth" in x or "tls" in x for x in d["items"]),
         "GET /v1/extensions does not show how an extension is reached (auth, tls)", d)
    s, node, _ = call("A", "GET", "/v1/node")
    a_node = node.get("node_id", "") if s == 200 else ""
    t.ok(s == 200 and a_node.startswith("node_") and len(a_node) == 37 and node.get("public_key"),
         "GET /v1/node: this node's id and public key", node)

    # -- explain, then create: the same choice ---------------------------------------------------
    route = {"strategy": "lowest-cost", "constraints": {"region": "eu"}}
    s, ex, _ = call("A", "POST", "/v1/route/explain", {"route": route})
    t.is_((s, ex.get("chosen") if s == 200 else ex), (200, "ext.b"), "explain lowest-cost in region eu: ext.b (ext.b-badkey costs more)")
    # an estimate ranks the same and prices each candidate: an hour costs its cost_per_hour
    s, es, _ = call("A", "POST", "/v1/estimate", {"route": route, "duration_s": 3600})
    per_hour = {c["extension"]: c["cost_per_hour"] for c in ex.get("candidates", []) if c.get("ok")}
    got = {i["extension"]: i["cost"] for i in es.get("items", [])} if s == 200 else {}
    t.ok(s == 200 and es["chosen"] == ex.get("chosen") and got and
         all(abs(got[k] - per_hour[k]) < 1e-6 for k in per_hour) and set(got) == set(per_hour) and
         all(abs(sum(i["breakdown"].values()) - i["cost"]) < 1e-5 for i in es["items"]),
         "POST /v1/estimate: the route's candidates priced for the duration (an hour: each one's cost_per_hour)", (es, ex))
    for body, field in (({"duration_s": 0}, "duration_s"), ({"duration_s": "1h"}, "duration_s"), ({}, "duration_s"),
                        ({"duration_s": 40e6}, "duration_s"), ({"duration_s": 60, "x": 1}, "x"),
                        ({"duration_s": 60, "route": {"strategy": "cheapest"}}, "route.strategy")):
        s, er, _ = call("A", "POST", "/v1/estimate", body)
        t.is_((s, er.get("error", {}).get("field") if isinstance(er, dict) else er), (400, field),
              "estimate %s: 400 naming %s" % (json.dumps(body), field))
    s, er, _ = call("A", "POST", "/v1/estimate", {"duration_s": 60, "profile": "nope"})
    t.is_(s, 422, "estimate for a profile that does not exist: 422")
    sock = "unix:" + os.path.join(F, "A", "s.sock")
    for args, says in ((["--duration", "0"], "--duration"), (["--duration", "soon"], "--duration"),
                       (["--duration", "1h", "--route", "[1]"], "--route"), (["--duration", "1h", "--route", "{"], "--route"),
                       ([], "usage"), (["--duration", "1h", "--profile", "nope"], "no profile named")):
        r = subprocess.run([SBX, "estimate", "--server", sock] + args, capture_output=True, text=True, timeout=30)
        t.ok(r.returncode != 0 and says in r.stderr and "Traceback" not in r.stderr,
             "sandboxer estimate %s: refused (exit %d) naming %s" % (" ".join(args), r.returncode, says), r.stderr)
    r = subprocess.run([SBX, "estimate", "--server", sock, "--duration", "2h", "--json"], capture_output=True, text=True, timeout=30)
    t.ok(r.returncode == 0 and json.loads(r.stdout).get("duration_s") == 7200,
         "sandboxer estimate --duration 2h --json: the server's answer", r.stdout + r.stderr)
    s, rec, _ = call("A", "POST", "/v1/sandboxes", {"route": route, "ttl_s": 600, "metadata": {"k": "v"}})
    sid = rec.get("id") if s == 201 else None
    t.ok(s == 201 and rec.get("extension") == "ext.b" and rec["route"]["chosen"] == "ext.b" and rec["state"] == "ready",
         "create with the same route: made on ext.b, as explain said", rec)
    cost = rec.get("cost") or {}
    t.ok(abs((cost.get("estimated") or -1) - 0.0002 * 600) < 1e-9 and cost.get("actual") is None and
         cost.get("currency") == "USD" and cost.get("rate", {}).get("per_second") == 0.0002,
         "its cost: estimated at ext.b's rate for its TTL (0.0002/s x 600 s), no actual while it lives", cost)
    s, brec, _ = call("B", "GET", "/v1/sandboxes/%s" % sid, tcp=True)
    t.ok(s == 200 and brec.get("id") == sid and (brec.get("front") or {}).get("node_id") == a_node,
         "B holds it under the same id and names A's node as its front", brec)

    # -- the API through the front ---------------------------------------------------------------
    s, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % sid, {"argv": ["sh", "-c", "echo hi from $(cat /etc/hostname | head -c 0)b; exit 3"]})
    t.ok(s == 200 and x.get("stdout") == "hi from b\n" and x.get("exit_code") == 3,
         "exec through A: B's answer (stdout, exit code)", x)
    s, raw, hd = call("A", "POST", "/v1/sandboxes/%s/exec" % sid, {"argv": ["sh", "-c", "echo one; echo two"], "stream": True})
    lines = [json.loads(line) for line in raw.splitlines() if line.strip()] if s == 200 and isinstance(raw, bytes) else []
    t.ok(s == 200 and hd.get("Content-Type", "").startswith("application/x-ndjson") and lines and
         "".join(e.get("data", "") for e in lines if e.get("type") == "stdout") == "one\ntwo\n" and
         lines[-1].get("type") == "end" and lines[-1].get("exit_code") == 0,
         "a streamed exec through A: B's NDJSON events as they come", raw[:600] if isinstance(raw, bytes) else raw)
    s, _, _ = call("A", "PUT", "/v1/sandboxes/%s/files?path=/tmp/f.txt" % sid, b"through the front\n")
    s2, got, _ = call("B", "GET", "/v1/sandboxes/%s/files?path=/tmp/f.txt" % sid, tcp=True)
    t.is_((s, s2, got), (200, 200, b"through the front\n"), "a file written through A is in B's sandbox")
    s, got, _ = call("A", "GET", "/v1/sandboxes/%s/files?path=/tmp/f.txt" % sid)
    t.is_((s, got), (200, b"through the front\n"), "and read back through A")
    before = rec["expires_at"]
    s, r2, _ = call("A", "POST", "/v1/sandboxes/%s/ttl" % sid, {"extend_s": 300})
    s2, b2, _ = call("B", "GET", "/v1/sandboxes/%s" % sid, tcp=True)
    t.ok(s == 200 and r2["expires_at"] > before and s2 == 200 and b2["expires_at"] > brec["expires_at"],
         "the TTL extended through A moves A's clock and B's", (r2, b2))
    s, r3, _ = call("A", "GET", "/v1/sandboxes/%s" % sid)
    t.ok(s == 200 and r3["extension"] == "ext.b" and r3["execs"] >= 2 and r3["metadata"] == {"k": "v"} and
         r3["reachability"]["exec_url"] == "/v1/sandboxes/%s/exec" % sid and r3["tenant"] == rec["tenant"],
         "the record through A: B's (its execs), under A's own keys (extension, tenant, reachability)", r3)
    s, e, _ = call("A", "GET", "/v1/sandboxes/%s/execs/exe_0123456789abcdef/attach" % sid)
    t.ok(s == 422 and "attach" in e.get("error", {}).get("message", ""),
         "an operation the extension lacks (a PTY's WebSocket) is 422 naming the capability", e)

    # -- idempotency, fallback, loops, constraints -----------------------------------------------
    k = {"Idempotency-Key": "fronted-1"}
    s1, i1, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.c"]}}, k)
    s2, i2, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.c"]}}, k)
    s3, c1, _ = call("C", "GET", "/v1/sandboxes/%s" % i1.get("id"), tcp=True)
    t.ok((s1, s2, s3) == (201, 200, 200) and i1["id"] == i2["id"] and c1.get("extension") == "ext.local",
         "an Idempotency-Key: the same sandbox again, made once on C", (s1, s2, s3, i1, i2))
    s, fb, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.b-badkey", "ext.c"]}})
    bad = cand(fb, "ext.b-badkey") if s == 201 else {}
    t.ok(s == 201 and fb["extension"] == "ext.c" and "401" in (bad.get("error") or ""),
         "a provision that fails (B refuses the token) falls back to the next candidate; the record keeps the error", fb)
    c_sid = fb.get("id")
    s, nf, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.b-badkey", "ext.c"],
                                                             "allow_fallbacks": False}})
    t.ok(s == 503 and nf["error"]["code"] == "provision_failed" and
         "401" in (cand(nf["error"], "ext.b-badkey").get("error") or "") and
         cand(nf["error"], "ext.c").get("why_not") == "allow_fallbacks is false",
         "allow_fallbacks false: 503 provision_failed, each candidate's error or reason", nf)
    # ext.local first and failing (A's test hook refuses sandboxes whose metadata has fail_local):
    # the next candidate takes the create; without fallbacks, 503
    s, lf, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.local", "ext.c"]},
                                                   "metadata": {"fail_local": "1"}})
    loc = cand(lf, "ext.local") if s == 201 else {}
    s2, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % lf.get("id", "x"), {"argv": ["echo", "fell back"]})
    t.ok(s == 201 and lf["extension"] == "ext.c" and "test hook" in (loc.get("error") or "") and s2 == 200 and
         x.get("stdout") == "fell back\n",
         "ext.local that cannot start it falls back to the next candidate (ext.c); its error kept in the record", (lf, x))
    call("A", "DELETE", "/v1/sandboxes/%s" % lf.get("id", "x"))
    s, lf, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.local", "ext.c"],
                                                             "allow_fallbacks": False}, "metadata": {"fail_local": "1"}})
    t.ok(s == 503 and lf["error"]["code"] == "provision_failed" and "test hook" in lf["error"]["message"],
         "and with allow_fallbacks false: ext.local's 503 as it was", lf)
    s, lp, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.self"]}})
    t.ok(s == 503 and "front that asks" in (cand(lp["error"], "ext.self").get("error") or ""),
         "a route that loops back to the front is refused by the back end (route_loop), named in the candidate's error", lp)
    s, nr, _ = call("A", "POST", "/v1/sandboxes", {"route": {"constraints": {"region": "mars"}}})
    cs = nr.get("error", {}).get("candidates", []) if s == 422 else []
    t.ok(s == 422 and nr["error"]["code"] == "no_route" and len(cs) >= 5 and all(c["why_not"] for c in cs),
         "a constraint nothing meets: 422 no_route with each candidate's reason", nr)
    s, e, _ = call("B", "POST", "/v1/sandboxes", {}, {"Sandboxer-Front": "node=bogus; sandbox=x"}, tcp=True)
    t.is_((s, e.get("error", {}).get("field") if isinstance(e, dict) else e), (400, "Sandboxer-Front"),
          "a malformed Sandboxer-Front header: 400 naming it")
    s, e, _ = call("B", "POST", "/v1/sandboxes", {}, {"Sandboxer-Front": "node=%s; sandbox=%s" % (a_node, sid)}, tcp=True)
    t.is_(s, 409, "a front asking for an id that is taken: 409")

    c_pauses()
    e2b_tests()
    daytona_tests()
    compose_tests()

    # lowest-latency: measured provision and first-exec times per extension, in that order
    s, ll, _ = call("A", "POST", "/v1/route/explain", {"route": {"strategy": "lowest-latency"}})
    cs = [c for c in ll.get("candidates", []) if c["ok"]] if s == 200 else []
    known = [c["latency_ms"] for c in cs if c["latency_ms"] is not None]
    b = cand(ll, "ext.b") if s == 200 else {}
    t.ok(s == 200 and len(known) >= 3 and known == sorted(known) and cs[0]["latency_ms"] == min(known) and
         cs[-1]["latency_ms"] is None and b.get("provision_ms") and b.get("first_exec_ms") and
         abs(b["latency_ms"] - (b["provision_ms"] + b["first_exec_ms"])) < 0.2 and ll["chosen"] == cs[0]["extension"],
         "lowest-latency ranks by the measured provision + first-exec time of each extension (unmeasured last)", ll)

    # -- B dies: its sandboxes fail, new creates go to C -----------------------------------------
    stop("B", signal.SIGKILL)
    def lost():
        s, r, _ = call("A", "GET", "/v1/sandboxes/%s" % sid)
        return r if s == 200 and r.get("reason") == "host_lost" else None
    r = wait(lost, 60)  # two missed probes at 0.5 s; a slow host under ASan takes longer
    t.ok(r and r["state"] in ("failed", "destroyed"), "B killed: its sandbox on A is failed with reason host_lost", r)
    ev = events("A", sid)
    t.ok(b"host_lost" in ev, "and its event stream says so", ev[-600:])
    s, nb, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.b", "ext.c"]}})
    t.ok(s == 201 and nb["extension"] == "ext.c" and "unhealthy" in (cand(nb, "ext.b").get("why_not") or ""),
         "a new create with ext.b first goes to C (ext.b passed over: unhealthy)", nb)
    s, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % nb.get("id"), {"argv": ["echo", "on c"]})
    t.is_((s, x.get("stdout") if isinstance(x, dict) else x), (200, "on c\n"), "and runs there")

    # -- B back: told to destroy what A failed (no split brain) ----------------------------------
    bc, bk = NODES["B"]["cert"], os.path.join(F, "B", "key.pem")
    t.ok(serve("B", ["--listen", "127.0.0.1:%d" % NODES["B"]["port"], "--tls-cert", bc, "--tls-key", bk]),
         "B restarted (its sandboxes re-adopted)")
    def gone_on_b():
        s, r, _ = call("B", "GET", "/v1/sandboxes/%s" % sid, tcp=True)
        return r if s in (200, 410) and isinstance(r, dict) and r.get("state") == "destroyed" or s == 410 else None
    t.ok(wait(gone_on_b, 20), "B back: A tells it to destroy the sandbox A had failed",
         call("B", "GET", "/v1/sandboxes/%s" % sid, tcp=True))

    # -- A restarted: its sandboxes on C are still its own ---------------------------------------
    planted = plant_hosted_orphans(a_node)
    stop("A", signal.SIGKILL)
    t.ok(serve("A", A_ARGS), "A killed and restarted")
    hosted_orphans_swept(planted)
    s, r, _ = call("A", "GET", "/v1/sandboxes/%s" % c_sid)
    s2, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % c_sid, {"argv": ["echo", "still"]})
    t.ok(s == 200 and r["state"] == "ready" and r["extension"] == "ext.c" and s2 == 200 and x["stdout"] == "still\n",
         "after A's restart its sandbox on C answers through it", (r, x))
    cli = subprocess.run([SBX, "exec", "--server", "unix:" + os.path.join(F, "A", "s.sock"), c_sid, "--", "sh", "-c",
                          "echo via the cli; exit 7"], capture_output=True, text=True, timeout=60)
    t.is_((cli.returncode, cli.stdout), (7, "via the cli\n"), "the CLI (sandboxer exec) through A, on C's sandbox")
    s, d, _ = call("A", "DELETE", "/v1/sandboxes/%s" % c_sid)
    cost = d.get("cost") or {} if isinstance(d, dict) else {}
    import calendar
    alive = time.time() - calendar.timegm(time.strptime(d.get("created_at", "1970-01-01T00:00:00")[:19], "%Y-%m-%dT%H:%M:%S")) \
        if isinstance(d, dict) else 0
    t.ok(isinstance(cost.get("actual"), float) and 0 < cost["actual"] <= 0.0001 * (alive + 2) + 1e-9 and
         cost["actual"] < cost["estimated"],
         "destroyed: its actual cost, ext.c's rate for the seconds it lived (%.0f s), less than estimated" % alive, (cost, alive))
    s2, cr, _ = call("C", "GET", "/v1/sandboxes/%s" % c_sid, tcp=True)
    t.ok(s == 200 and d["state"] == "destroyed" and (s2 == 410 or (isinstance(cr, dict) and cr.get("state") == "destroyed")),
         "destroy through A: destroyed on C too", (d, cr))
    # A dies mid-provision: B (stopped) holds the request; A killed; B goes on and makes it; A
    # restarted asks B about what it was provisioning, and adopts it
    import threading
    procs["B"].send_signal(signal.SIGSTOP)
    got = {}
    th = threading.Thread(target=lambda: got.update(r=call("A", "POST", "/v1/sandboxes", {
        "route": {"strategy": "explicit", "fallback": ["ext.b"]}, "metadata": {"orphan": "1"}}, timeout=30)))
    th.start()
    time.sleep(1.5)
    stop("A", signal.SIGKILL)
    procs["B"].send_signal(signal.SIGCONT)
    th.join(40)
    time.sleep(1.5)  # B makes it
    t.ok(serve("A", A_ARGS), "A killed mid-provision (B stopped), B continued, A restarted")
    s, ls, _ = call("A", "GET", "/v1/sandboxes")
    orph = [x for x in ls.get("items", []) if x.get("metadata", {}).get("orphan") == "1"] if s == 200 else []
    s2, bo, _ = call("B", "GET", "/v1/sandboxes/%s" % (orph[0]["id"] if orph else "x"), tcp=True)
    t.ok(len(orph) == 1 and orph[0]["state"] == "ready" and orph[0]["extension"] == "ext.b" and s2 == 200 and
         bo.get("state") in ("ready", "active") and (bo.get("front") or {}).get("node_id") == a_node,
         "the restarted front adopts the sandbox B made for it (same id, B names A as its front)", (orph, bo))
    s, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % (orph[0]["id"] if orph else "x"), {"argv": ["echo", "adopted"]})
    t.is_((s, x.get("stdout") if isinstance(x, dict) else x), (200, "adopted\n"), "and it runs through A")
    s, ls, _ = call("A", "GET", "/v1/sandboxes?state=ready")
    t.ok(s == 200 and {x["extension"] for x in ls["items"]} == {"ext.b", "ext.c"},
         "A's list shows its sandboxes wherever they are held", ls)
    # A stores its record while B makes the sandbox: one that dies in that instant leaves B a
    # sandbox naming A as its front that A has no record of. Planted here as such; B's own
    # sandbox (no front) and the one A adopted are spared; A restarted destroys the orphan on B.
    orphan = "sbx_" + os.urandom(8).hex()
    s, o, _ = call("B", "POST", "/v1/sandboxes", {}, tcp=True,
                   headers={"Sandboxer-Front": "node=%s; sandbox=%s" % (a_node, orphan)})
    s2, own, _ = call("B", "POST", "/v1/sandboxes", {}, tcp=True)
    s3, lf, _ = call("B", "GET", "/v1/sandboxes?front=%s" % a_node, tcp=True)
    t.ok(s == 201 and s2 == 201 and s3 == 200 and orphan in [x["id"] for x in lf["items"]] and
         own["id"] not in [x["id"] for x in lf["items"]],
         "B lists the sandboxes it holds for A (?front=NODE), not its own", (o, lf))
    stop("A", signal.SIGKILL)
    t.ok(serve("A", A_ARGS), "A killed and restarted with an orphan of its own on B")
    def orphan_gone():
        st, rec, _ = call("B", "GET", "/v1/sandboxes/%s" % orphan, tcp=True)
        return st == 410 or (isinstance(rec, dict) and rec.get("state") == "destroyed")
    gone = wait(orphan_gone)
    s2, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % (orph[0]["id"] if orph else "x"), {"argv": ["true"]})
    s3, ow, _ = call("B", "GET", "/v1/sandboxes/%s" % own["id"], tcp=True)
    t.ok(gone and s2 == 200 and s3 == 200 and ow.get("state") in ("ready", "active"),
         "the restarted front's sweep destroys its orphan on B and spares what it holds and B's own", (x, ow))
    call("B", "DELETE", "/v1/sandboxes/%s" % own["id"], tcp=True)
    s, _, _ = call("B", "POST", "/v1/sandboxes", {}, tcp=True,
                   headers={"Sandboxer-Front": "node=%s; sandbox=%s" % (a_node, orphan)})
    t.is_(s, 409, "an id that was destroyed is taken too: a front asking for it again gets 409")
    log = open(os.path.join(F, "A", "serve.log"), errors="replace").read()
    t.ok("remote_orphan_destroyed" in log and orphan in log, "A's log names the orphan it destroyed")
    t.ok(not t.invalid, "every body A answered matches docs/openapi.json (%d checked)" % t.validated[0], "\n".join(t.invalid[:10]))


C_PAUSES = [True, ""]


def c_pauses():
    """Whether C can pause a sandbox here at all (an unprivileged server has no freezer)."""
    s, r, _ = call("C", "POST", "/v1/sandboxes", {}, tcp=True)
    if s != 201:
        C_PAUSES[:] = [False, "create on C: %s" % s]
        return
    s, p, _ = call("C", "POST", "/v1/sandboxes/%s/pause" % r["id"], tcp=True)
    if s != 200:
        C_PAUSES[:] = [False, (p.get("error", {}).get("message", "") if isinstance(p, dict) else str(p))[:200]]
    call("C", "DELETE", "/v1/sandboxes/%s" % r["id"], tcp=True)


def e2b_tests():
    """ext.e2b: C's E2B surface reached as E2B's SDKs reach E2B (its API with X-API-KEY; envd at
    49983-ID.e2b.test by Host, over TLS, with the sandbox's access token)."""
    e2b = {"route": {"strategy": "explicit", "fallback": ["ext.e2b"]}, "ttl": "30m", "metadata": {"who": "e2b-test"}}
    s, nk, _ = call("A", "POST", "/v1/sandboxes", e2b)
    t.ok(s == 503 and "e2b-key" in (cand(nk["error"], "ext.e2b").get("error") or ""),
         "ext.e2b without the tenant's key (bring your own): the candidate fails naming the secret", nk)
    s, _, _ = call("A", "PUT", "/v1/secrets/e2b-key", NODES["C"]["token"].encode())
    t.is_(s, 201, "the tenant puts its own E2B key as a secret")
    s, rec, _ = call("A", "POST", "/v1/sandboxes", e2b)
    eid = rec.get("id") if s == 201 else "none"
    t.ok(s == 201 and rec["extension"] == "ext.e2b" and rec["backend"] == "e2b" and rec["state"] == "ready",
         "create routed to ext.e2b: made through E2B's API", rec)
    s, ls, _ = call("C", "GET", "/v1/sandboxes?state=ready", tcp=True)
    held = [x for x in ls.get("items", []) if x.get("metadata", {}).get("sandboxer_id") == eid] if s == 200 else []
    t.ok(len(held) == 1 and held[0]["metadata"].get("who") == "e2b-test",
         "C holds it, its E2B metadata naming the front's id (and the create's metadata)", ls)
    s, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % eid, {"argv": ["sh", "-c", "echo hi e2b; echo oops >&2; exit 3"]})
    t.ok(s == 200 and x.get("stdout") == "hi e2b\n" and x.get("stderr") == "oops\n" and x.get("exit_code") == 3
         and x.get("report") is None, "exec through A on ext.e2b: envd's process stream as the native answer", x)
    s, raw, hd = call("A", "POST", "/v1/sandboxes/%s/exec" % eid, {"argv": ["sh", "-c", "echo a; sleep 0.2; echo b"], "stream": True})
    lines = [json.loads(line) for line in raw.splitlines() if line.strip()] if s == 200 and isinstance(raw, bytes) else []
    t.ok(s == 200 and lines and lines[0]["type"] == "start" and
         "".join(e.get("data", "") for e in lines if e["type"] == "stdout") == "a\nb\n" and
         lines[-1]["type"] == "end" and lines[-1]["exit_code"] == 0,
         "a streamed exec on ext.e2b: NDJSON events as envd sends them", raw)
    s, _, _ = call("A", "PUT", "/v1/sandboxes/%s/files?path=/home/user/e.txt" % eid, b"\x00binary\xff")
    s2, got, _ = call("A", "GET", "/v1/sandboxes/%s/files?path=/home/user/e.txt" % eid)
    t.is_((s, s2, got), (200, 200, b"\x00binary\xff"), "a file written and read through envd's /files")
    s, _, _ = call("A", "GET", "/v1/sandboxes/%s/files?path=/home/user/none" % eid)
    t.is_(s, 404, "a file that is not there: 404")
    before = rec["expires_at"]
    s, r2, _ = call("A", "POST", "/v1/sandboxes/%s/ttl" % eid, {"extend_s": 600})
    s3, c2, _ = call("C", "GET", "/v1/sandboxes/%s" % held[0]["id"] if held else "/x", tcp=True)
    t.ok(s == 200 and r2["expires_at"] > before and s3 == 200 and c2["expires_at"] > held[0]["expires_at"],
         "the TTL through A is E2B's timeout on C", (r2, c2))
    s, e, _ = call("A", "GET", "/v1/sandboxes/%s/metrics" % eid)
    t.ok(s == 422 and "metrics" in e["error"]["message"], "what E2B has no call for (metrics): 422 naming it", e)
    if not C_PAUSES[0]:
        t.skip("pause on ext.e2b: C cannot pause here (%s)" % C_PAUSES[1])
        t.skip("resume on ext.e2b: C cannot pause here")
    else:
        s, p, _ = call("A", "POST", "/v1/sandboxes/%s/pause" % eid)
        s2, g, _ = call("A", "GET", "/v1/sandboxes/%s" % eid)
        t.ok(s == 200 and p["state"] == "paused" and s2 == 200 and g["state"] == "paused",
             "pause through A: E2B's pause, the record paused", (p, g))
        s, p, _ = call("A", "POST", "/v1/sandboxes/%s/resume" % eid)
        s2, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % eid, {"argv": ["cat", "/home/user/e.txt"]})
        t.ok(s == 200 and p["state"] == "ready" and s2 == 200 and x.get("encoding") == "base64" and
             x["stdout"] == "AGJpbmFyef8=", "resume: E2B's connect, and its files are still there", (p, x))
    s, d, _ = call("A", "DELETE", "/v1/sandboxes/%s" % eid)
    s2, c3, _ = call("C", "GET", "/v1/sandboxes/%s" % held[0]["id"] if held else "/x", tcp=True)
    t.ok(s == 200 and d["state"] == "destroyed" and (s2 == 410 or (isinstance(c3, dict) and c3.get("state") == "destroyed")),
         "destroy through A: E2B's kill, gone on C", (d, c3))


def daytona_tests():
    """ext.daytona: C's Daytona surface reached as Daytona's SDK reaches Daytona (/api/sandbox with a
    bearer key; the toolbox at the URL toolbox-proxy-url answers, over TLS)."""
    s, _, _ = call("A", "PUT", "/v1/secrets/daytona-key", NODES["C"]["token"].encode())
    s, rec, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.daytona"]},
                                                     "metadata": {"who": "daytona-test"}})
    did = rec.get("id") if s == 201 else "none"
    t.ok(s == 201 and rec["extension"] == "ext.daytona" and rec["backend"] == "daytona" and rec["state"] == "ready",
         "create routed to ext.daytona: made through Daytona's API, waited on until started", rec)
    s, ls, _ = call("C", "GET", "/v1/sandboxes?state=ready", tcp=True)
    held = [x for x in ls.get("items", []) if x.get("metadata", {}).get("sandboxer_id") == did] if s == 200 else []
    t.is_(len(held), 1, "C holds it, its labels naming the front's id")
    s, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % did, {"argv": ["sh", "-c", "echo hi daytona; exit 4"]})
    t.ok(s == 200 and x.get("stdout") == "hi daytona\n" and x.get("exit_code") == 4,
         "exec through A on ext.daytona: the toolbox's process/execute as the native answer", x)
    s, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % did, {"argv": ["printf", "%s|", "a b", "it's", "$HOME"]})
    t.is_((s, x.get("stdout") if isinstance(x, dict) else x), (200, "a b|it's|$HOME|"),
          "argv reaches Daytona's shell word for word (each word quoted)")
    s, raw, hd = call("A", "POST", "/v1/sandboxes/%s/exec" % did, {"argv": ["echo", "streamed"], "stream": True})
    lines = [json.loads(line) for line in raw.splitlines() if line.strip()] if s == 200 and isinstance(raw, bytes) else []
    t.ok(s == 200 and [e["type"] for e in lines] == ["start", "stdout", "end"] and lines[1]["data"] == "streamed\n",
         "a streamed exec on ext.daytona: its events (at once: Daytona answers at the end)", raw)
    s, _, _ = call("A", "PUT", "/v1/sandboxes/%s/files?path=/home/daytona/d.txt" % did, b"to daytona\n")
    s2, got, _ = call("A", "GET", "/v1/sandboxes/%s/files?path=/home/daytona/d.txt" % did)
    t.is_((s, s2, got), (200, 200, b"to daytona\n"), "a file through the toolbox's bulk-upload and download")
    s, mr, _ = call("A", "PUT", "/v1/sandboxes/%s/metadata" % did, {"stage": "two"})
    s2, c2, _ = call("C", "GET", "/v1/sandboxes/%s" % held[0]["id"] if held else "/x", tcp=True)
    t.ok(s == 200 and mr["metadata"] == {"stage": "two"} and s2 == 200 and c2["metadata"].get("stage") == "two" and
         c2["metadata"].get("sandboxer_front", "").startswith("node_"),
         "metadata through A is Daytona's labels on C (still naming the front, for its sweep)", (mr, c2))
    if not C_PAUSES[0]:
        t.skip("pause on ext.daytona: C cannot pause here (%s)" % C_PAUSES[1])
    else:
        s, p, _ = call("A", "POST", "/v1/sandboxes/%s/pause" % did)
        s2, p2, _ = call("A", "POST", "/v1/sandboxes/%s/resume" % did)
        s3, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % did, {"argv": ["cat", "/home/daytona/d.txt"]})
        t.ok(s == 200 and p["state"] == "paused" and s2 == 200 and p2["state"] == "ready" and s3 == 200 and
             x["stdout"] == "to daytona\n", "pause and resume through A: Daytona's stop and start", (p, p2, x))
    s, d, _ = call("A", "DELETE", "/v1/sandboxes/%s" % did)
    s2, c3, _ = call("C", "GET", "/v1/sandboxes/%s" % held[0]["id"] if held else "/x", tcp=True)
    t.ok(s == 200 and d["state"] == "destroyed" and (s2 == 410 or (isinstance(c3, dict) and c3.get("state") == "destroyed")),
         "destroy through A: gone on C", (d, c3))


COMPOSE = {}
COMPOSE_N = 12
PODMAN_ENV = {}


def plant_hosted_orphans(a_node):
    """A front that dies while E2B or Daytona is making its sandbox has no id of it to ask about:
    its record fails at restart, and the sweep finds what E2B's metadata and Daytona's labels name
    as this front's and destroys it there; what names another front stays. Planted before A's
    restart (hosted_orphans_swept checks after)."""
    key = NODES["C"]["token"]
    made = {}
    for name, other in (("e2b", False), ("e2b", True), ("daytona", False), ("daytona", True)):
        tags = {"sandboxer_front": "node_" + "0" * 32 if other else a_node, "sandboxer_id": "sbx_" + os.urandom(8).hex()}
        if name == "e2b":
            s, r, _ = call("C", "POST", "/sandboxes", {"templateID": "base", "timeout": 600, "metadata": tags}, tcp=True,
                           headers={"X-API-KEY": key})
            rid = r.get("sandboxID") if s in (200, 201) and isinstance(r, dict) else None
        else:
            s, r, _ = call("C", "POST", "/api/sandbox", {"labels": tags}, tcp=True)
            rid = r.get("id") if s in (200, 201) and isinstance(r, dict) else None
        made[(name, other)] = rid
    t.ok(all(made.values()), "orphans planted on C's E2B and Daytona surfaces (one of each naming another front)", made)
    return made


def hosted_orphans_swept(made):
    def gone(rid):
        st, rec, _ = call("C", "GET", "/v1/sandboxes/%s" % rid, tcp=True)
        return st in (404, 410) or (isinstance(rec, dict) and rec.get("state") == "destroyed")
    ok = wait(lambda: gone(made[("e2b", False)]) and gone(made[("daytona", False)]))
    t.ok(ok and not gone(made[("e2b", True)]) and not gone(made[("daytona", True)]),
         "A restarted sweeps its orphans on E2B and Daytona (by metadata, by labels) and spares another front's",
         made)
    for k in (("e2b", True), ("daytona", True)):
        call("C", "DELETE", "/v1/sandboxes/%s" % made[k], tcp=True)


def compose_setup(reg, sec):
    """An sshd on loopback with keys made here, a compose bundle of two services (images built from
    a local Containerfile: busybox, no registry), and ext.compose in A's registry. Root only: the
    sshd logs in as root, whose podman runs the bundle."""
    need = [x for x in ("/usr/sbin/sshd", "/usr/bin/podman-compose", "/bin/busybox") if not os.path.exists(x)]
    if os.geteuid() != 0:
        COMPOSE["skip"] = "ext.compose-ssh: the test's sshd logs in as root (run as root)"
        return
    if "build-asan" in SBX:  # image builds, not our code's time: once, in the root pass
        COMPOSE["skip"] = "ext.compose-ssh: run once, against the plain build (its podman builds are slow)"
        return
    if need:
        COMPOSE["skip"] = "ext.compose-ssh: %s not installed (scripts/setup.sh installs them)" % ", ".join(need)
        return
    ldd = subprocess.run(["ldd", "/bin/busybox"], capture_output=True, text=True)
    if "not a dynamic executable" not in ldd.stdout + ldd.stderr:
        COMPOSE["skip"] = "ext.compose-ssh: /bin/busybox is not the static one (busybox-static)"
        return
    d = os.path.join(F, "ssh")
    os.makedirs(d, exist_ok=True)
    for k in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "%s/%s" % (d, k)], check=True)
    shutil_copy(d + "/client.pub", d + "/authorized_keys")
    p = port()
    with open(d + "/sshd_config", "w") as f:
        f.write("Port %d\nListenAddress 127.0.0.1\nHostKey %s/host\nPidFile %s/sshd.pid\n"
                "AuthorizedKeysFile %s/authorized_keys\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                "UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n"
                "SetEnv CONTAINERS_STORAGE_CONF=%s/storage.conf\n" % (p, d, d, d, d))
    with open(d + "/known_hosts", "w") as f:
        f.write("[127.0.0.1]:%d %s" % (p, open(d + "/host.pub").read()))
    os.makedirs("/run/sshd", exist_ok=True)
    logs["sshd"] = open(d + "/sshd.log", "ab")
    procs["sshd"] = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", d + "/sshd_config"], stdout=logs["sshd"], stderr=logs["sshd"])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", p), 1).close()
            break
        except OSError:
            time.sleep(0.05)
    b = os.path.join(F, "bundle")
    os.makedirs(b, exist_ok=True)
    shutil_copy("/bin/busybox", b + "/busybox")
    with open(b + "/Containerfile", "w") as f:
        f.write('FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\n'
                'RUN ["/bin/busybox", "mkdir", "-p", "/tmp"]\n')
    with open(b + "/compose.yaml", "w") as f:
        f.write("services:\n  web:\n    build: .\n    image: localhost/sbx-test-bundle\n"
                "    command: [\"httpd\", \"-f\", \"-p\", \"8080\", \"-h\", \"/\"]\n"
                "  worker:\n    image: localhost/sbx-test-bundle\n    depends_on: [web]\n"
                "    command: [\"sh\", \"-c\", \"echo worker up > /tmp/up; sleep 100000\"]\n")
    # podman's storage for this test alone (vfs under the test's dir: nothing left in the host's
    # store, and it works where the host's overlay cannot nest, as on an overlayfs root); the
    # sshd hands it to the sessions it starts (SetEnv)
    conf = os.path.join(d, "containers.conf")
    with open(conf, "w") as f:
        f.write('[containers]\ndefault_ulimits = ["nofile=%d:%d", "nproc=%d:%d"]\n' % (
            min(1048576, _hard(7)), min(1048576, _hard(7)), min(32768, _hard(6)), min(32768, _hard(6))))
    with open(os.path.join(d, "storage.conf"), "w") as f:
        f.write('[storage]\ndriver = "vfs"\ngraphroot = "%s/graph"\nrunroot = "%s/run"\n' % (d, d))
    PODMAN_ENV["CONTAINERS_STORAGE_CONF"] = os.path.join(d, "storage.conf")
    env = dict(os.environ, CONTAINERS_CONF=conf, **PODMAN_ENV)
    # can this host's podman build and run a container at all? (else: skipped, saying why)
    pb = subprocess.run(["podman", "build", "-q", "-t", "localhost/sbx-test-bundle", b], env=env, capture_output=True,
                        text=True, timeout=300)
    COMPOSE["built"] = pb.returncode == 0
    pr = subprocess.run(["podman", "run", "--rm", "--network", "none", "localhost/sbx-test-bundle", "true"], env=env,
                        capture_output=True, text=True, timeout=120) if pb.returncode == 0 else pb
    if pr.returncode != 0:
        COMPOSE["skip"] = "ext.compose-ssh: podman cannot build or run a container here: %s" % (
            (pr.stderr or pr.stdout).strip().splitlines() or ["?"])[-1][:200]
        return
    shutil_copy(d + "/client", os.path.join(sec, "compose-key"))
    with open(os.path.join(reg, "ext.compose.yaml"), "w") as f:
        f.write("id: ext.compose\nkind: compose-ssh\nauth: {secret: compose-key}\nknown_hosts: %s/known_hosts\n"
                "capabilities: {isolation: [container, policy], regions: [build]}\n" % d)
    COMPOSE.update(port=p, bundle=b, dir=d)


def _hard(res):
    import resource
    h = resource.getrlimit(res)[1]
    return 1 << 30 if h == resource.RLIM_INFINITY else h


def shutil_copy(a, b):
    import shutil
    shutil.copyfile(a, b)
    os.chmod(b, 0o600 if "client" in a else 0o755)


def compose_running(project):
    out = subprocess.run(["podman", "ps", "--filter", "label=io.podman.compose.project=" + project, "--format",
                          "{{.Names}}"], capture_output=True, text=True,
                         env=dict(os.environ, **PODMAN_ENV)).stdout  # ps: the running ones
    return sorted(x + " running" for x in out.split("\n") if x)


def compose_tests():
    """ext.compose-ssh: a two-service bundle brought up and down over SSH."""
    if "skip" in COMPOSE:
        for _ in range(COMPOSE_N):
            t.skip(COMPOSE["skip"])
        return
    s, h, _ = call("A", "POST", "/v1/hosts", {"id": "h-loop", "extension": "ext.compose",
                                               "address": "ssh://root@127.0.0.1:%d" % COMPOSE["port"]})
    # its first health check (over SSH) before the creates: until then the route passes it over
    # as "not checked yet" (a slow host took longer than the first create: CI)
    end = time.time() + 60
    while time.time() < end:
        s, hl, _ = call("A", "GET", "/v1/hosts")
        hh = [x for x in (hl.get("items", []) if isinstance(hl, dict) else []) if x.get("id") == "h-loop"]
        if hh and (hh[0].get("health") or {}).get("checked_at"):
            break
        time.sleep(0.2)
    s, nb, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.compose"]},
                                                    "inputs": {"compose_bundle_ref": "/nonexistent/bundle"}}, timeout=300)
    t.ok(s == 503 and "no bundle at /nonexistent/bundle" in (cand(nb["error"], "ext.compose").get("error") or ""),
         "a bundle that is not on the host: provision_failed, the host's own words in the candidate's error", nb)
    s, rec, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.compose"]},
                                                     "inputs": {"compose_bundle_ref": COMPOSE["bundle"], "compose_service": "worker"}},
                     timeout=600)
    cid = rec.get("id") if s == 201 else "none"
    proj = cid.replace("_", "")
    t.ok(s == 201 and rec["extension"] == "ext.compose" and rec["host"] == "h-loop" and
         rec["reachability"].get("ssh") == "ssh://root@127.0.0.1:%d" % COMPOSE["port"],
         "create on ext.compose: the bundle up over SSH on the registered host, reachable by SSH", rec)
    t.is_(compose_running(proj), ["%s_web_1 running" % proj, "%s_worker_1 running" % proj],
          "both services run, their image built on the host from the bundle's Containerfile")
    s, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % cid, {"argv": ["sh", "-c", "cat /tmp/up; echo err >&2; exit 5"]})
    t.ok(s == 200 and x.get("stdout") == "worker up\n" and x.get("stderr") == "err\n" and x.get("exit_code") == 5,
         "exec through A runs in the bundle's worker service (stdout, stderr, exit code apart)", x)
    s, x, _ = call("A", "POST", "/v1/sandboxes/%s/exec" % cid, {"argv": ["printf", "%s|", "a b", "it's"], "env": {"K": "v 1"}})
    t.is_((s, x.get("stdout") if isinstance(x, dict) else x), (200, "a b|it's|"), "argv word for word over SSH")
    s, _, _ = call("A", "PUT", "/v1/sandboxes/%s/files?path=/tmp/c.txt" % cid, b"into the bundle\n")
    s2, got, _ = call("A", "GET", "/v1/sandboxes/%s/files?path=/tmp/c.txt" % cid)
    s3, _, _ = call("A", "GET", "/v1/sandboxes/%s/files?path=/tmp/none" % cid)
    t.is_((s, s2, got, s3), (200, 200, b"into the bundle\n", 404), "files in the service's container over SSH (404 when missing)")
    s, e, _ = call("A", "POST", "/v1/sandboxes/%s/snapshot" % cid)
    t.ok(s == 422 and "snapshot" in e["error"]["message"], "what a compose bundle has no call for: 422 naming it", e)
    s, d, _ = call("A", "DELETE", "/v1/sandboxes/%s" % cid, timeout=300)
    nets = subprocess.run(["podman", "network", "ls", "--format", "{{.Name}}"], capture_output=True, text=True,
                          env=dict(os.environ, **PODMAN_ENV)).stdout
    t.ok(s == 200 and d["state"] == "destroyed" and compose_running(proj) == [] and proj not in nets and
         not os.path.exists("/root/.sandboxer/bundles/" + proj),
         "destroy: the bundle down, its network and its copy gone from the host", (d, nets))
    # the host dies: its sandboxes fail; back again, it is told to take them down
    s, r2, _ = call("A", "POST", "/v1/sandboxes", {"route": {"strategy": "explicit", "fallback": ["ext.compose"]},
                                                    "inputs": {"compose_bundle_ref": COMPOSE["bundle"]}}, timeout=600)
    p2 = r2.get("id", "none").replace("_", "")
    t.ok(s == 201 and len(compose_running(p2)) == 2, "a second bundle up", r2)
    stop("sshd", signal.SIGKILL)
    def lost():
        s, r, _ = call("A", "GET", "/v1/sandboxes/%s" % r2.get("id"))
        return r if s == 200 and r.get("reason") == "host_lost" else None
    r = wait(lost, 60)  # two missed probes at 0.5 s; a slow host under ASan takes longer
    t.ok(r and r["state"] in ("failed", "destroyed"), "its host's sshd killed: the sandbox failed, host_lost", r)
    logs["sshd"] = open(COMPOSE["dir"] + "/sshd.log", "ab")
    procs["sshd"] = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", COMPOSE["dir"] + "/sshd_config"],
                                     stdout=logs["sshd"], stderr=logs["sshd"])
    t.ok(wait(lambda: compose_running(p2) == [], 60), "sshd back: A takes the failed sandbox's bundle down (no split brain)",
         compose_running(p2))
    t.ok(wait(lambda: not os.path.exists("/root/.sandboxer/bundles/" + p2), 30), "and its copy is gone from the host")


def bad_registry():
    """A registry entry that would send a token in the clear: serve refuses, naming the line."""
    reg = os.path.join(F, "badreg")
    os.makedirs(reg, exist_ok=True)
    with open(os.path.join(reg, "x.yaml"), "w") as f:
        f.write("id: ext.x\nkind: sandboxer\nurl: http://192.0.2.1:80\n")
    r = subprocess.run([SBX, "serve", "--listen", "unix:" + os.path.join(F, "bad.sock"), "--state-dir",
                        os.path.join(F, "badst"), "--registry", reg], capture_output=True, text=True, timeout=30)
    t.ok(r.returncode == 125 and "x.yaml:3" in r.stderr and "in the clear" in r.stderr,
         "a kind-sandboxer URL of plain http:// to a non-loopback address: serve refuses, naming file and line", r.stderr)
    with open(os.path.join(reg, "x.yaml"), "w") as f:
        f.write("id: ext.x\nkind: sandboxer\nurl: https://127.0.0.1:1\ntls: {pinned_key: abc}\n")
    r = subprocess.run([SBX, "serve", "--listen", "unix:" + os.path.join(F, "bad.sock"), "--state-dir",
                        os.path.join(F, "badst"), "--registry", reg], capture_output=True, text=True, timeout=30)
    t.ok(r.returncode == 125 and "pinned_key" in r.stderr, "a pinned key that is not sha256//BASE64: refused", r.stderr)
    bad = [("id: ext.x\nkind: e2b\nurl: https://api.e2b.test\n", "domain: required"),
           ("id: ext.x\nkind: compose-ssh\nurl: ssh://root@h:22\n", "known_hosts: required"),
           ("id: ext.x\nkind: compose-ssh\nurl: https://h\nknown_hosts: /etc/hostname\n", "ssh://USER@HOST"),
           ("id: ext.x\nkind: e2b\nurl: https://a\ndomain: d.test\nconnect_to: nocolon\n", "is not HOST:PORT"),
           ("id: ext.x\nkind: sandboxer\nurl: https://a\ntls: {ca_file: rel/ca.pem}\n", "not an absolute path"),
           ("id: ext.x\nkind: sandboxer\nurl: https://a\nauth: {secret: ../x}\n", "not a secret's name"),
           ("id: ext.x\nkind: sandboxer\nurl: https://a\nauth: {token: x}\n", "token"),
           ("id: ext.x\nkind: sandboxer\nurl: https://a\ncompose: yes\n", "compose")]
    for text, want in bad:
        with open(os.path.join(reg, "x.yaml"), "w") as f:
            f.write(text)
        r = subprocess.run([SBX, "serve", "--listen", "unix:" + os.path.join(F, "bad.sock"), "--state-dir",
                            os.path.join(F, "badst"), "--registry", reg], capture_output=True, text=True, timeout=30)
        t.ok(r.returncode == 125 and "x.yaml:" in r.stderr and want in r.stderr,
             "a registry entry that cannot be (%s): serve refuses, naming file and line" % want, r.stderr)
    for args, want in ((["--heartbeat-s", "abc"], "--heartbeat-s"), (["--heartbeat-s", "0"], "--heartbeat-s"),
                       (["--public-url", "ftp://x"], "--public-url")):
        r = subprocess.run([SBX, "serve", "--listen", "unix:" + os.path.join(F, "bad.sock"), "--state-dir",
                            os.path.join(F, "badst")] + args, capture_output=True, text=True, timeout=30)
        t.ok(r.returncode == 125 and want in r.stderr, "serve %s: refused, naming the option" % " ".join(args), r.stderr)
    s, e, _ = call("B", "POST", "/v1/sandboxes", {}, {"Sandboxer-Front": "node=%s; sandbox=sbx_0123" % ("node_" + "0" * 32)},
                   tcp=True)
    t.is_(s, 400, "a Sandboxer-Front naming a malformed sandbox id: 400")


try:
    main()
    bad_registry()
finally:
    for name in ["A"] + [x for x in procs if x != "A"]:  # the front first: it tells the back ends
        stop(name)
    if PODMAN_ENV:  # the test's own podman storage: containers gone, then the store itself
        penv = dict(os.environ, **PODMAN_ENV)
        subprocess.run(["podman", "rm", "-fa"], capture_output=True, env=penv)
        subprocess.run(["podman", "rmi", "-fa"], capture_output=True, env=penv)
        import shutil
        shutil.rmtree(os.path.join(COMPOSE.get("dir", F + "/ssh"), "graph"), ignore_errors=True)
        shutil.rmtree(os.path.join(COMPOSE.get("dir", F + "/ssh"), "run"), ignore_errors=True)
print("1..%d" % t.n)
sys.exit(1 if t.failed else 0)
