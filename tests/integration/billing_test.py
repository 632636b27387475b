#!/usr/bin/env python3
"""billing_test.py — meters, credits and the ledger (DESIGN.md, "Meters, credits and deals"), on
`sandboxer serve` nodes on loopback. Node P prices ext.local and enforces credits from its policy
file (billing.enforce; holds for the whole TTL); node W enforces them with --credits and a policy
whose holds cover 2 s at a time (billing.hold_s) with 1 s of grace; node F is a fresh install
(credits off). Checked: a fresh install never answers 402; 402 payment_required with the shortfall;
grants (and the bad ones: negative, zero, a string, another actor's); the hold is the estimate;
meters from the cgroup (CPU of a busy loop, memory, wall not counting a pause); the actual cost
from the meters; the settle (charge + release), once, across a kill -9; two creates racing for the
last credit (one wins); an extend raises the hold (or 402 and the TTL unchanged); a sandbox that
outruns its hold with no balance expires credits_exhausted after its grace; the ledger sums to
zero per transaction and per account, and `sandboxer audit verify` finds one altered byte;
Prometheus counters; every body against docs/openapi.json. Run by test-billing.sh (TAP)."""
import http.client
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandboxes_test as t  # noqa: E402 — its TAP, validation and unix-socket helpers

SBX, TMP, POLICY = t.SBX, t.TMP, t.POLICY
B = os.path.join(TMP, "billing")
os.makedirs(B, exist_ok=True)
procs, logs, ports, tokens = {}, {}, {}, {}
PRICE = {"per_second": 0.01, "per_creation": 0.05, "per_cpu_second": 0.02, "per_gib_second": 0.001}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def policy(name, billing):
    """The node's policy file: the test's (as an ordinary user) with a billing section, or just that."""
    base = open(POLICY).read() if POLICY else "version: 1\n"
    path = os.path.join(B, name + "-policy.yaml")
    with open(path, "w") as f:
        f.write(base + ("\n" if not base.endswith("\n") else "") + ("billing: %s\n" % billing if billing else ""))
    return path


def registry():
    d = os.path.join(B, "reg")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "ext.local.yaml"), "w") as f:
        f.write("id: ext.local\nkind: local\npricing: {%s}\n" % ", ".join("%s: %s" % kv for kv in PRICE.items()))
    return d


def serve(name, args, billing=None):
    d = os.path.join(B, name)
    os.makedirs(d, exist_ok=True)
    st = os.path.join(d, "state")
    if name not in ports:
        ports[name] = free_port()
        tokens[name] = {}
        for tenant in ("acme", "zeta", "race", "short"):
            out = subprocess.run([SBX, "token", "create", "--actor", "agt", "--name", tenant, "--tenant", tenant,
                                  "--state-dir", st], check=True, capture_output=True, text=True)
            tokens[name][tenant] = out.stdout.strip()
    env = dict(os.environ, SANDBOXER_RUNTIME_DIR=os.path.join(d, "run"), SANDBOXER_STATE_DIR=st)
    a = [SBX, "serve", "--listen", "unix:" + os.path.join(d, "s.sock"), "--listen", "127.0.0.1:%d" % ports[name],
         "--state-dir", st, "--policy", policy(name, billing), "--meter-interval", "0.3", "--stop-sandboxes"] + args
    logs[name] = open(os.path.join(d, "serve.log"), "ab")
    procs[name] = subprocess.Popen(a, env=env, stdout=logs[name], stderr=logs[name])
    for _ in range(200):
        s, _ = call(name, "GET", "/healthz", timeout=5)
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


def call(name, method, path, body=None, tenant=None, timeout=60):
    """(status, JSON or text) from node name: its unix socket (adm), or as tenant's agt token over TCP."""
    h = {}
    if tenant:
        c = http.client.HTTPConnection("127.0.0.1", ports[name], timeout=timeout)
        h["Authorization"] = "Bearer " + tokens[name][tenant]
    else:
        c = t.Unix(os.path.join(B, name, "s.sock"), timeout)
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
        h["Content-Type"] = "application/json"
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
    except Exception as e:  # noqa: BLE001 — a status of 0
        return 0, "request failed: %s" % e
    finally:
        c.close()
    ctype = r.getheader("Content-Type") or ""
    t.validate(method, path, r.status, data, ctype)
    if ctype.startswith("application/json"):
        try:
            return r.status, json.loads(data)
        except ValueError:
            pass
    return r.status, data.decode(errors="replace")


def credits(name, tenant):
    s, c = call(name, "GET", "/v1/credits", tenant=tenant)
    return c if s == 200 else {}


def ledger(name):
    rows, cur = [], None
    while True:
        s, page = call(name, "GET", "/v1/ledger?limit=1000" + ("&cursor=" + cur if cur else ""))
        if s != 200:
            return rows
        rows += page["items"]
        cur = page["next_cursor"]
        if not cur:
            return rows


def sums(rows):
    """(each transaction's sum, each account's sum), in millionths."""
    tx, acct = {}, {}
    for r in rows:
        u = round(r["amount"] * 1e6)
        tx[r["tx"]] = tx.get(r["tx"], 0) + u
        acct[r["account"]] = acct.get(r["account"], 0) + u
    return tx, acct


def wait_gone(name, sid, tenant, secs=20):
    end = time.time() + secs
    while time.time() < end:
        s, r = call(name, "GET", "/v1/sandboxes/" + sid, tenant=tenant)
        if s == 200 and r["state"] == "destroyed":
            return r
        time.sleep(0.1)
    return r if s == 200 else {}


def approx(a, b, eps=1e-5):
    return a is not None and b is not None and abs(a - b) <= eps


def fresh_install():
    # -- F: credits off (a fresh install never answers 402), meters on --------------------------
    t.ok(serve("F", []), "F (no --credits, no billing in its policy) starts")
    s, c = call("F", "GET", "/v1/credits", tenant="acme")
    t.ok(s == 200 and c["enforced"] is False and c["balance"] == 0, "F: credits not enforced, balance 0", c)
    s, r = call("F", "POST", "/v1/sandboxes", {"ttl_s": 30}, tenant="acme")
    t.ok(s == 201, "F: a create with no credit at all is made (a fresh install never answers 402)", r)
    if s == 201:
        s, d = call("F", "DELETE", "/v1/sandboxes/" + r["id"], tenant="acme")
        t.ok(s == 200 and d["cost"]["actual"] == 0 and d["meters"]["final"] and d["meters"]["wall_s"] > 0,
             "F: ext.local at price 0 costs 0; its meters are final at its end", d)
    t.is_(sums(ledger("F"))[1], {}, "F: nothing in its ledger")
    stop("F")


class Hook:
    """A billing webhook on loopback: the first two POSTs answered 500, the rest 204; each kept."""
    def __init__(self):
        import http.server
        hook = self
        self.got, self.lock = [], threading.Lock()

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with hook.lock:
                    hook.got.append((self.headers.get("Idempotency-Key"), body))
                    n = len(hook.got)
                self.send_response(500 if n <= 2 else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/billing" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


HOOK = None


def billing_export_checks(rows):
    """Every ledger transaction once in the file and at least once at the webhook (retried ones
    with the same key and body)."""
    txs = {r["tx"] for r in rows}
    path = os.path.join(B, "billing.ndjson")
    end = time.time() + 15
    while time.time() < end:
        lines = [json.loads(x) for x in open(path)] if os.path.exists(path) else []
        with HOOK.lock:
            hooked = {k for k, _ in HOOK.got if k}
        if {e["event_id"] for e in lines} >= txs and hooked >= txs:
            break
        time.sleep(0.2)
    ids = [e["event_id"] for e in lines]
    t.ok(set(ids) >= txs and all(round(sum(x["amount"] for x in e["entries"]) * 1e6) == 0 for e in lines),
         "--billing-export: each of the %d ledger transactions a line (its entries summing to zero)" % len(txs),
         sorted(txs - set(ids))[:5])
    dup = {i for i in ids if ids.count(i) > 1}
    same = all(len({json.dumps(e, sort_keys=True) for e in lines if e["event_id"] == d}) == 1 for d in dup)
    t.ok(same, "a line written twice (a kill between the write and its place kept) is the same event: "
         "at least once, by id (%d repeated)" % len(dup))
    with HOOK.lock:
        got = list(HOOK.got)
    keys = [k for k, _ in got]
    retried = keys[0] if got else None
    t.ok(hooked >= txs and keys.count(retried) >= 3 and len({b for k, b in got if k == retried}) == 1,
         "--billing-webhook: each event POSTed with its id as Idempotency-Key; the first, refused twice (500), "
         "sent again the same until taken", keys[:4])


def priced():
    global HOOK
    reg = registry()
    HOOK = Hook()
    bargs = ["--billing-export", os.path.join(B, "billing.ndjson"), "--billing-webhook", HOOK.url]
    t.ok(serve("P", ["--registry", reg] + bargs, "{enforce: true}"), "P (billing.enforce in its policy, ext.local priced) starts")
    s, c = call("P", "GET", "/v1/credits", tenant="acme")
    t.ok(s == 200 and c["enforced"] is True and c["balance"] == 0 and c["held"] == 0 and c["currency"] == "USD",
         "P: enforced, acme's balance 0", c)

    # -- 402 with the shortfall; nothing made ---------------------------------------------------
    s, est = call("P", "POST", "/v1/estimate", {"duration_s": 60}, tenant="acme")
    hold = est["items"][0]["cost"] if s == 200 else None
    s, r = call("P", "POST", "/v1/sandboxes", {"ttl_s": 60}, tenant="acme")
    e = r.get("error", {}) if isinstance(r, dict) else {}
    t.ok(s == 402 and e.get("code") == "payment_required" and approx(e.get("shortfall"), hold) and
         "short by" in e.get("message", ""), "no balance: 402 payment_required, the shortfall the estimate for the TTL", r)
    s, lst = call("P", "GET", "/v1/sandboxes", tenant="acme")
    t.ok(s == 200 and lst["items"] == [], "and nothing was made", lst)

    # -- grants: only an adm's, and only a positive number --------------------------------------
    for body, want, what in (({"tenant": "acme", "amount": -5}, 400, "a negative amount"),
                             ({"tenant": "acme", "amount": 0}, 400, "zero"),
                             ({"tenant": "acme", "amount": "10"}, 400, "a string"),
                             ({"tenant": "acme", "amount": 1e13}, 400, "more than 1e12"),
                             ({"amount": 10}, 400, "no tenant"),
                             ({"tenant": "acme", "amount": 1, "memo": "x"}, 400, "an unknown key")):
        s, r = call("P", "POST", "/v1/credits/grant", body)
        t.ok(s == want and r["error"]["code"] == "invalid_argument", "grant of %s: 400" % what, r)
    s, r = call("P", "POST", "/v1/credits/grant", "{not json")
    t.is_(s, 400, "a grant that is not JSON: 400")
    s, r = call("P", "POST", "/v1/credits/grant", {"tenant": "acme", "amount": 10}, tenant="acme")
    t.ok(s == 403, "a tenant cannot grant itself credits (403)", r)
    s, r = call("P", "POST", "/v1/credits/grant", {"tenant": "acme", "amount": 10, "note": "first"})
    t.ok(s == 200 and r["balance"] == 10 and r["tx"].startswith("tx_"), "an adm grants acme 10", r)
    s, r = call("P", "GET", "/v1/credits?tenant=zeta", tenant="acme")
    t.is_(s, 403, "acme cannot read zeta's credits")

    # -- the hold is the estimate; meters from the cgroup; the actual from the meters -----------
    s, sb = call("P", "POST", "/v1/sandboxes", {"ttl_s": 60}, tenant="acme")
    t.ok(s == 201 and approx(sb["cost"]["estimated"], hold), "a create with the balance: 201, its estimate the estimate's", sb)
    sid = sb.get("id", "")
    c = credits("P", "acme")
    t.ok(approx(c["held"], hold) and approx(c["balance"], 10 - hold), "its hold is that estimate, taken from the balance", c)
    s, x = call("P", "POST", "/v1/sandboxes/%s/exec" % sid,
                {"argv": ["sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"]}, tenant="acme")
    t.ok(s == 200 and x["exit_code"] == 0, "a busy loop runs in it", x)
    # a sample or two (the reaper's, once a second: on a slow host the loop's first may carry
    # no memory yet): asked until they are there, at most 8 s
    deadline = time.time() + 8
    time.sleep(0.8)
    while True:
        s, m = call("P", "GET", "/v1/meters?sandbox=" + sid, tenant="acme")
        it = m["items"][0] if s == 200 and m["items"] else {}
        if (it.get("cpu_s", 0) >= 0.2 and it.get("mem_mib_s", 0) > 0) or time.time() > deadline:
            break
        time.sleep(0.3)
    cgroup = ((x.get("report") or {}).get("host") or {}).get("cgroup", "none") if isinstance(x, dict) else "none"
    if cgroup == "none":  # a host that gives this caller no cgroup: nothing to sample CPU and memory from
        t.skip("the sandbox has no cgroup on this host (report host.cgroup none): no CPU or memory to meter")
        t.ok(it.get("wall_s", 0) >= 0.8 and it.get("creations") == 1, "GET /v1/meters: wall and one creation", m)
    else:
        t.ok(it.get("cpu_s", 0) >= 0.2 and it.get("mem_mib_s", 0) > 0 and it.get("wall_s", 0) >= 0.8 and
             it.get("creations") == 1 and it.get("final") is False,
             "GET /v1/meters: CPU seconds of the loop, memory MiB-seconds, wall, one creation (not final yet)", m)
    paused, _ = call("P", "POST", "/v1/sandboxes/%s/pause" % sid, tenant="acme")  # 409 where it cannot freeze
    time.sleep(1.0)
    if paused == 200:
        call("P", "POST", "/v1/sandboxes/%s/resume" % sid, tenant="acme")
    s, d = call("P", "DELETE", "/v1/sandboxes/" + sid, tenant="acme")
    mt = d.get("meters", {})
    want = PRICE["per_creation"] + PRICE["per_second"] * mt.get("wall_s", 0) + PRICE["per_cpu_second"] * mt.get("cpu_s", 0) + \
        PRICE["per_gib_second"] * mt.get("mem_mib_s", 0) / 1024
    t.ok(s == 200 and mt.get("final") and approx(d["cost"]["actual"], want, 2e-5) and (paused != 200 or d["cost"]["paused_s"] >= 0.9) and
         mt["wall_s"] < (time.time() - 0) and d["cost"]["actual"] < d["cost"]["estimated"],
         "destroyed: actual = creation + wall + CPU + memory from its meters, the paused second not in wall_s", d)
    c = credits("P", "acme")
    t.ok(approx(c["held"], 0) and approx(c["balance"], 10 - d["cost"]["actual"]),
         "settled: nothing held, the balance less its actual cost", c)
    rows = [r for r in ledger("P") if r["ref"] == sid]
    kinds = sorted((r["kind"], r["account"]) for r in rows)
    t.is_(kinds, sorted([("hold", "tenant:acme"), ("hold", "hold:acme"), ("charge", "hold:acme"), ("charge", "usage:ext.local"),
                         ("release", "hold:acme"), ("release", "tenant:acme")]),
          "its ledger rows: the hold, the charge to usage:ext.local and the release, each a pair")
    s, m = call("P", "GET", "/v1/meters?sandbox=" + sid, tenant="acme")
    t.ok(s == 200 and m["items"][0]["final"] and approx(m["items"][0]["cost"], d["cost"]["actual"]),
         "its stored meters: final, its actual cost", m)
    s, m = call("P", "GET", "/v1/meters?sandbox=" + sid, tenant="zeta")
    t.is_(s, 404, "another tenant does not see its meters")
    s, m = call("P", "GET", "/v1/meters?by=exec&sandbox=" + sid, tenant="acme")
    ex = m["items"][0] if s == 200 and m.get("items") else {}
    t.ok(len(m.get("items", [])) == 1 and ex.get("cpu_s", 0) >= 0.2 and ex.get("wall_s", 0) > 0 and ex.get("max_rss_mib", 0) > 0,
         "GET /v1/meters?by=exec: its one exec, CPU and peak memory from its report", m)
    s, m = call("P", "GET", "/v1/meters?by=exec&sandbox=" + sid, tenant="zeta")
    t.is_(s, 404, "nor its execs'")
    s, m = call("P", "GET", "/v1/meters?by=exec", tenant="acme")
    t.is_(s, 400, "by=exec without a sandbox: 400")
    s, m = call("P", "GET", "/v1/meters?by=tenant", tenant="acme")
    t.is_(s, 400, "by=tenant: 400")
    for q in ("cursor=abc", "cursor=-1", "limit=0", "limit=5000", "limit=x"):
        s, r = call("P", "GET", "/v1/ledger?" + q)
        t.ok(s == 400 and r["error"]["field"] == q.split("=")[0], "GET /v1/ledger?%s: 400 naming %s" % (q, q.split("=")[0]), r)
    for q, what in (("from=yesterday", "from"), ("to=2026-13-01T00:00:00Z", "to"), ("sandbox=../x", "sandbox")):
        s, r = call("P", "GET", "/v1/meters?" + q, tenant="acme")
        t.ok(s == 400 and r["error"].get("field") == what, "GET /v1/meters?%s: 400 naming %s" % (q, what), r)
    s, m = call("P", "GET", "/v1/meters?from=%d" % (time.time() + 3600), tenant="acme")
    t.ok(s == 200 and m["items"] == [], "nothing in a window after now", m)

    # -- an extend raises the hold; without the balance, 402 and the TTL unchanged -------------
    s, sb = call("P", "POST", "/v1/sandboxes", {"ttl_s": 30}, tenant="acme")
    sid = sb.get("id", "")
    held0 = credits("P", "acme")["held"]
    per_s = sb["cost"]["rate"]["per_second"] + sb["cost"]["rate"]["per_cpu_second"] * sb["cost"]["rate"]["cpus"] + \
        sb["cost"]["rate"]["per_gib_second"] * sb["cost"]["rate"]["memory_gib"]
    s, r = call("P", "POST", "/v1/sandboxes/%s/ttl" % sid, {"extend_s": 60}, tenant="acme")
    held1 = credits("P", "acme")["held"]
    t.ok(s == 200 and approx(held1 - held0, per_s * 60, 1e-3), "an extend of 60 s raises the hold by 60 s of its rate", (held0, held1, per_s))
    exp = r.get("expires_at")
    s, r = call("P", "POST", "/v1/sandboxes/%s/ttl" % sid, {"extend_s": 86400 * 30}, tenant="acme")
    s2, rec = call("P", "GET", "/v1/sandboxes/" + sid, tenant="acme")
    t.ok(s == 402 and r["error"]["code"] == "payment_required" and rec["expires_at"] == exp,
         "an extend the balance cannot hold: 402, its TTL unchanged", (r, rec.get("expires_at"), exp))

    # -- kill -9 with a hold; after the restart the hold is there and settles once --------------
    bal0 = credits("P", "acme")
    stop("P", signal.SIGKILL)
    t.ok(serve("P", ["--registry", reg] + bargs, "{enforce: true}"), "P killed (-9) and started again")
    c = credits("P", "acme")
    t.ok(approx(c["held"], bal0["held"]) and approx(c["balance"], bal0["balance"]), "the hold survived the kill", (bal0, c))
    s, d = call("P", "DELETE", "/v1/sandboxes/" + sid, tenant="acme")
    c = credits("P", "acme")
    t.ok(s == 200 and approx(c["held"], 0) and approx(c["balance"], bal0["balance"] + bal0["held"] - d["cost"]["actual"]),
         "destroyed after the restart: settled once (the balance back less its actual)", (c, d.get("cost")))

    # -- the CLI ------------------------------------------------------------------------------------
    srv = ["--server", "unix:" + os.path.join(B, "P", "s.sock")]

    def cli(*a):
        return subprocess.run([SBX] + list(a) + srv, capture_output=True, text=True, timeout=30)
    r = cli("credits", "--tenant", "acme")
    t.ok(r.returncode == 0 and "balance" in r.stdout and "USD" in r.stdout, "sandboxer credits --tenant acme", r.stdout + r.stderr)
    r = cli("credits", "grant", "zeta", "2.5", "--note", "cli", "--json")
    t.ok(r.returncode == 0 and json.loads(r.stdout)["balance"] == 2.5, "sandboxer credits grant zeta 2.5", r.stdout + r.stderr)
    for args, what in ((("credits", "grant", "zeta", "-1"), "a negative amount"), (("credits", "grant", "zeta", "ten"), "a word"),
                       (("credits", "grant", "zeta"), "no amount"), (("credits", "refund"), "an unknown subcommand"),
                       (("credits", "ledger", "--limit", "0"), "--limit 0"), (("meters", "--sandbox", "../x"), "a bad id"),
                       (("credits", "--note", "x"), "--note without grant")):
        r = cli(*args)
        t.ok(r.returncode != 0 and r.stderr.strip() and "unknown verb" not in r.stderr, "sandboxer %s: %s refused with a message" % (" ".join(args), what),
             r.stdout + r.stderr)
    r = cli("meters", "--tenant", "acme")
    t.ok(r.returncode == 0 and sid in r.stdout and "WALL_S" in r.stdout, "sandboxer meters --tenant acme: a table with its sandboxes", r.stdout + r.stderr)
    r = cli("credits", "ledger", "--limit", "2", "--json")
    t.ok(r.returncode == 0 and len(json.loads(r.stdout)["items"]) == 2 and json.loads(r.stdout)["next_cursor"] == "2",
         "sandboxer credits ledger --limit 2: a page and its cursor", r.stdout + r.stderr)
    r = cli("meters", "--from", "tomorrow")
    t.ok(r.returncode != 0 and "from" in r.stderr, "sandboxer meters --from tomorrow: the server's 400, naming from", r.stderr)

    # -- two creates racing for the last credit: one wins ---------------------------------------
    call("P", "POST", "/v1/credits/grant", {"tenant": "race", "amount": round(hold * 1.5, 6)})
    res = []

    def one():
        res.append(call("P", "POST", "/v1/sandboxes", {"ttl_s": 60}, tenant="race")[0])
    th = [threading.Thread(target=one) for _ in range(2)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    t.is_(sorted(res), [201, 402], "two creates racing for credit enough for one: one 201, one 402")
    c = credits("P", "race")
    t.ok(approx(c["held"], hold) and approx(c["balance"], hold * 0.5), "one hold taken, the balance never negative", c)
    s, lst = call("P", "GET", "/v1/sandboxes", tenant="race")
    for b in lst.get("items", []):
        call("P", "DELETE", "/v1/sandboxes/" + b["id"], tenant="race")

    # -- the ledger: every transaction and the whole sum to zero; the chain verified ------------
    rows = ledger("P")
    tx, acct = sums(rows)
    t.ok(rows and all(v == 0 for v in tx.values()) and sum(acct.values()) == 0 and
         acct.get("grants") == -round((12.5 + round(hold * 1.5, 6)) * 1e6) and acct.get("hold:acme", 0) == 0,
         "the ledger: each of %d transactions sums to zero; grants −%s; nothing left held" % (len(tx), 10 + hold * 1.5), acct)
    t.ok(all(r["seq"] == i + 1 for i, r in enumerate(rows)) and all(rows[i]["prev"] == rows[i - 1]["hash"] for i in range(1, len(rows))),
         "seq counts from 1, each row's prev its predecessor's hash")
    s, prom = call("P", "GET", "/metrics")
    t.ok(s == 200 and 'sandboxer_meter_creations_total{tenant="acme",extension="ext.local"} 2' in prom and
         "sandboxer_meter_cpu_seconds_total" in prom and "sandboxer_meter_cost_total" in prom,
         "Prometheus: the meter counters per tenant and extension", prom[-1500:] if isinstance(prom, str) else prom)
    billing_export_checks(rows)
    for args in (["--billing-webhook", "ftp://x"], ["--billing-export", ""], ["--meter-interval", "0"],
                 ["--meter-interval", "often"], ["--quote-ttl", "0.5"], ["--quote-ttl", "-3"]):
        r = subprocess.run([SBX, "serve", "--listen", "unix:" + os.path.join(B, "bad.sock"), "--state-dir",
                            os.path.join(B, "badst")] + args, capture_output=True, text=True, timeout=30)
        t.ok(r.returncode == 125 and args[0] in r.stderr, "serve %s %r: refused, naming the option" % tuple(args), r.stderr)
    st = os.path.join(B, "P", "state")
    stop("P")
    r = subprocess.run([SBX, "audit", "verify", "--state-dir", st], capture_output=True, text=True)
    t.ok(r.returncode == 0 and "ledger" in r.stdout, "sandboxer audit verify: the audit log and the ledger intact", r.stdout + r.stderr)
    db = sqlite3.connect(os.path.join(st, "sandboxer.db"))
    (a, amt), = db.execute("SELECT seq, amount FROM ledger WHERE kind = 'charge' LIMIT 1").fetchall()
    db.execute("UPDATE ledger SET amount = amount + 1 WHERE seq = ?", (a,))
    db.commit()
    r = subprocess.run([SBX, "audit", "verify", "--state-dir", st], capture_output=True, text=True)
    t.ok(r.returncode == 1 and ("row %d" % a) in (r.stdout + r.stderr), "one amount altered by a millionth: verify fails naming the row",
         r.stdout + r.stderr)
    db.execute("UPDATE ledger SET amount = ? WHERE seq = ?", (amt, a))
    db.execute("DELETE FROM ledger WHERE seq = 3")
    db.commit()
    r = subprocess.run([SBX, "audit", "verify", "--state-dir", st], capture_output=True, text=True)
    t.ok(r.returncode == 1 and "row 4" in (r.stdout + r.stderr), "a row removed: verify fails naming the row after it", r.stdout + r.stderr)
    db.close()


def windows():
    # -- W: --credits, holds of 2 s raised as it runs; no balance left: credits_exhausted ------
    reg = os.path.join(B, "reg-w")  # by wall time only: what it uses is what it holds at its rate
    os.makedirs(reg, exist_ok=True)
    with open(os.path.join(reg, "ext.local.yaml"), "w") as f:
        f.write("id: ext.local\nkind: local\npricing: {per_second: 0.1, per_creation: 0.05}\n")
    t.ok(serve("W", ["--registry", reg, "--credits"], "{hold_s: 2, grace_s: 1}"),
         "W (--credits; billing.hold_s 2, grace_s 1) starts")
    s, est2 = call("W", "POST", "/v1/estimate", {"duration_s": 2}, tenant="short")
    h2 = est2["items"][0]["cost"]
    call("W", "POST", "/v1/credits/grant", {"tenant": "short", "amount": round(h2 + 0.1, 6)})  # 3 s in all
    s, sb = call("W", "POST", "/v1/sandboxes", {"ttl_s": 300}, tenant="short")
    t.ok(s == 201, "a create holding 2 s of its rate", sb)
    sid = sb.get("id", "")
    c = credits("W", "short")
    t.ok(approx(c["held"], h2), "held: the estimate for 2 s, not for its 300 s TTL", c)
    t0 = time.time()
    d = wait_gone("W", sid, "short", 30)
    took = time.time() - t0
    rate = sb["cost"]["rate"]
    per_s = rate["per_second"] + rate["per_cpu_second"] * rate["cpus"] + rate["per_gib_second"] * rate["memory_gib"]
    t.ok(d.get("reason") == "credits_exhausted", "its usage outran its hold with no balance left: expired, credits_exhausted", d)
    c = credits("W", "short")
    t.ok(approx(c["held"], 0) and c["balance"] <= 0.000001 and c["balance"] >= -(per_s * 3),
         "settled: nothing held; the balance spent, at most the grace's worth below zero", (c, per_s))
    t.ok(3.9 <= took <= 15, "it ran its 3 s of credit and its grace (1 s), then went (took %.1f s)" % took)
    tx, acct = sums(ledger("W"))
    t.ok(all(v == 0 for v in tx.values()) and sum(acct.values()) == 0, "W's ledger balances", acct)
    stop("W")


try:
    fresh_install()
    priced()
    windows()
finally:
    for name in list(procs):
        stop(name)
t.ok(not t.invalid, "every body answered is as docs/openapi.json says (%d checked)" % t.validated[0], "\n".join(t.invalid[:10]))
print("1..%d" % t.n)
sys.exit(1 if t.failed else 0)
