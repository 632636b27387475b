#!/usr/bin/env bash
# test-skills-serve.sh — signed skills in the control plane (DESIGN.md, "Signed skills";
# docs/skills.md, "In the control plane"): POST /v1/skills takes a signed skill as a tar and keeps
# it for the caller's tenant once verified; a changed file, an untrusted key, a symlink, a path
# outside, an oversize body are refused naming what is wrong, nothing kept; another tenant sees
# none of it; POST /v1/sandboxes {skill} makes the skill's sandbox, where its entrypoint runs;
# uploads, deletes and creates from a skill are in the audit log.
# shellcheck disable=SC2016 # python expressions in single quotes are meant literally
. "$(dirname "$0")/lib.sh"
require_backend native
command -v curl >/dev/null || skip_all "curl is needed"

ST=$SBX_TMP/state
export SANDBOXER_RUNTIME_DIR=$SBX_TMP/rt
SERVE_PID=
cleanup() {
        # a sandbox the checks left (a failure midway): the first server does not end them itself
        [ -n "${SID:-}" ] && [ -n "$SERVE_PID" ] && curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $TOK1" \
                "http://127.0.0.1:$PORT/v1/sandboxes/$SID"
        [ -n "$SERVE_PID" ] && kill -TERM "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
        sbx_cleanup
}
trap cleanup EXIT

K=$SBX_TMP/keys && mkdir -p "$K"
D=$SBX_TMP/hello
mkdir -p "$D/lib"
cat >"$D/skill.yaml" <<'YAML'
name: hello
version: "1.0.0"
entrypoint: [python3, main.py]
sandbox: { memory_mb: 128, timeout_s: 20, network: none }
YAML
printf 'import sys, lib.util\nprint("hello from the skill", sys.argv[1:], lib.util.X)\n' >"$D/main.py"
echo 'X = 42' >"$D/lib/util.py"
: >"$D/lib/__init__.py"
chmod -R a+rX "$SBX_TMP"

POL=$SBX_TMP/policy.yaml
cat >"$POL" <<YAML
version: 1
run_as: 65534
enforce: { best_effort: [memory_mb, cpus, scratch_mb, pids] }
skills: { trusted_keys: [$K/alice.pub] }
YAML

"$SANDBOXER" skill keygen --out "$K/alice" >/dev/null &&
        "$SANDBOXER" skill keygen --out "$K/mallory" >/dev/null &&
        "$SANDBOXER" skill sign "$D" --key "$K/alice" --json >"$SBX_TMP/sign.json" ||
        { echo "Bail out! cannot make keys or sign the test skill"; exit 1; }
DIGEST=$(json_get "$SBX_TMP/sign.json" 'd["digest"]')
KEYID=$(json_get "$SBX_TMP/sign.json" 'd["key_id"]')

TOK1=$("$SANDBOXER" token create --actor agt --name one --tenant t1 --state-dir "$ST" 2>/dev/null)
TOK2=$("$SANDBOXER" token create --actor agt --name two --tenant t2 --state-dir "$ST" 2>/dev/null)
mkdir -p "$ST/skills/.upload-XXstale/in" # what a server killed mid-upload leaves
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
# start_serve [OPTION]... — serve on PORT; 0 once it answers /healthz (at most 10 s)
start_serve() {
        "$SANDBOXER" serve --listen "127.0.0.1:$PORT" --state-dir "$ST" --policy "$POL" "$@" \
                >>"$SBX_TMP/serve.log" 2>&1 &
        SERVE_PID=$!
        sbx_started "$SERVE_PID"
        local i
        for ((i = 0; i < 100; i++)); do
                curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && return 0
                sleep 0.1
        done
        return 1
}

# api TOKEN METHOD PATH [CURL-ARG]... — sets CODE; the body in $SBX_TMP/body (and BODY).
api() {
        local tok=$1 method=$2 path=$3
        shift 3
        CODE=$(curl -s -o "$SBX_TMP/body" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $tok" \
                "$@" "http://127.0.0.1:$PORT$path")
        BODY=$(cat "$SBX_TMP/body")
}
LEAKS=
upload() { # TOKEN TARFILE
        api "$1" POST /v1/skills -H 'Content-Type: application/x-tar' --data-binary "@$2"
        [[ $BODY != *"$ST"* ]] || LEAKS+="$BODY "
}
# isd GOT WANT NAME DIAG... / liked GOT REGEX NAME DIAG... — is / like, with DIAG printed on failure
isd() { local g=$1 w=$2 n=$3; shift 3; [ "$g" = "$w" ]; ok $? "$n" || diag "     got: '$g'" "expected: '$w'" "$@"; }
liked() { local g=$1 w=$2 n=$3; shift 3; [[ $g =~ $w ]]; ok $? "$n" || diag "     got: '$g'" "expected to match: /$w/" "$@"; }
errmsg() { json_get "$SBX_TMP/body" 'd["error"]["message"]' 2>/dev/null; }
# valid METHOD PATH — the last answer matches docs/openapi.json (skipped without jsonschema)
BAD_SHAPES=
valid() {
        python3 -c 'import jsonschema' 2>/dev/null || return 0
        python3 "$SBX_SRC/tests/tools/validate-api.py" "$SBX_SRC/docs/openapi.json" "$1" "$2" "$CODE" "$SBX_TMP/body" >"$SBX_TMP/valid" 2>&1 ||
                BAD_SHAPES+="$1 $2 $CODE: $(head -c 300 "$SBX_TMP/valid"); "
}

plan 61

# the first server leaves its sandboxes running when it stops (re-adopted by the next, below)
start_serve
ok $? "serve starts" || { diag "$(cat "$SBX_TMP/serve.log")"; exit 1; }
[ ! -e "$ST/skills/.upload-XXstale" ]
ok $? "an upload cut short by the last server is cleaned up at start"

# ---- upload, list, get ----
tar -C "$D" -cf "$SBX_TMP/hello.tar" .
upload "$TOK1" "$SBX_TMP/hello.tar"
valid POST /v1/skills
isd "$CODE" 201 "POST /v1/skills: a signed skill's tar is taken (201)" "$BODY"
SKL=$(json_get "$SBX_TMP/body" 'd["id"]')
like "$SKL" '^skl_[0-9a-f]{16}$' "its id is skl_ and 16 hex digits"
is "$(json_get "$SBX_TMP/body" '[d["name"], d["version"], d["digest"], d["key_id"], d["tenant"], d["files"]]')" \
        "[\"hello\", \"1.0.0\", \"$DIGEST\", \"$KEYID\", \"t1\", 3]" \
        "the record names the skill, its digest (as skill sign said), its signer and tenant"
tar -C "$SBX_TMP" -cf "$SBX_TMP/hello-dir.tar" hello
upload "$TOK1" "$SBX_TMP/hello-dir.tar"
is "$CODE:$(json_get "$SBX_TMP/body" 'd["digest"]')" "201:$DIGEST" "a tar of the directory itself (tar -cf - hello) is taken too"
SKL2=$(json_get "$SBX_TMP/body" 'd["id"]')
api "$TOK1" GET /v1/skills
valid GET /v1/skills
is "$CODE:$(json_get "$SBX_TMP/body" '[i["id"] for i in d["items"]]')" "200:[\"$SKL\", \"$SKL2\"]" "GET /v1/skills lists the tenant's skills, oldest first"
api "$TOK1" GET "/v1/skills/$SKL"
valid GET '/v1/skills/{id}'
is "$CODE:$(json_get "$SBX_TMP/body" 'd["digest"]')" "200:$DIGEST" "GET /v1/skills/ID"

# ---- another tenant ----
api "$TOK2" GET "/v1/skills/$SKL"
valid GET '/v1/skills/{id}'
is "$CODE" 404 "another tenant's GET of the id: 404"
api "$TOK2" DELETE "/v1/skills/$SKL"
is "$CODE" 404 "another tenant's DELETE: 404"
api "$TOK2" GET /v1/skills
is "$CODE:$BODY" '200:{"items":[]}' "another tenant lists none"
api "$TOK2" POST /v1/sandboxes -H 'Content-Type: application/json' -d "{\"skill\": \"$SKL\"}"
is "$CODE:$(json_get "$SBX_TMP/body" 'd["error"]["field"]')" "404:skill" "another tenant's create {skill: ID}: 404"

# ---- refused uploads: nothing kept ----
n_skills() { find "$ST/skills" -mindepth 1 -maxdepth 1 | wc -l; }
N0=$(n_skills)
cp -a "$D" "$SBX_TMP/flipped"
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[0] ^= 1; open(p, "wb").write(b)' "$SBX_TMP/flipped/lib/util.py"
tar -C "$SBX_TMP/flipped" -cf "$SBX_TMP/flipped.tar" .
upload "$TOK1" "$SBX_TMP/flipped.tar"
valid POST /v1/skills
is "$CODE:$(json_get "$SBX_TMP/body" 'd["error"]["code"]')" "422:skill_rejected" "one byte flipped: 422"
like "$(errmsg)" 'lib/util.py: changed: its sha256 is [0-9a-f]{64}, the manifest says' "and the message names the file"
cp -a "$D" "$SBX_TMP/mallory"
"$SANDBOXER" skill sign "$SBX_TMP/mallory" --key "$K/mallory" >/dev/null
tar -C "$SBX_TMP/mallory" -cf "$SBX_TMP/mallory.tar" .
upload "$TOK1" "$SBX_TMP/mallory.tar"
is "$CODE" 422 "signed by an untrusted key: 422"
like "$(errmsg)" 'signed by key [0-9a-f]{16}, which is not a trusted key' "and the message names the key"
cp -a "$D" "$SBX_TMP/greedy"
printf 'name: hello\nversion: "1.0.0"\nentrypoint: [python3, main.py]\nsandbox: { network: allowlist, allowed_hosts: [evil.example.org] }\n' \
        >"$SBX_TMP/greedy/skill.yaml"
"$SANDBOXER" skill sign "$SBX_TMP/greedy" --key "$K/alice" >/dev/null
tar -C "$SBX_TMP/greedy" -cf "$SBX_TMP/greedy.tar" .
upload "$TOK1" "$SBX_TMP/greedy.tar"
liked "$CODE:$(errmsg)" "^422:.*evil.example.org.*(not allowed|egress_allowed)" "a skill asking for a host the policy does not allow: 422 naming it" "$BODY"
unsigned=$(cp -a "$D" "$SBX_TMP/unsigned" && sed -i '/^signature:/,$d' "$SBX_TMP/unsigned/skill.yaml" && tar -C "$SBX_TMP/unsigned" -cf - . | base64 -w0)
printf '%s' "$unsigned" | base64 -d >"$SBX_TMP/unsigned.tar"
upload "$TOK1" "$SBX_TMP/unsigned.tar"
liked "$CODE:$(errmsg)" "^422:skill: unsigned \(no signature: in skill.yaml\)" "an unsigned skill: 422, the message without the server's paths" "$BODY"
# tars no `tar` would make from a directory: python's tarfile writes them
python3 - "$SBX_TMP" "$D" <<'EOF'
import io, os, sys, tarfile
tmp, d = sys.argv[1:3]
def make(name, extra):
    with tarfile.open(os.path.join(tmp, name), "w") as t:
        t.add(d, arcname=".")
        extra(t)
def sym(t):
    i = tarfile.TarInfo("lib/passwd"); i.type = tarfile.SYMTYPE; i.linkname = "/etc/passwd"; t.addfile(i)
def dotdot(t):
    i = tarfile.TarInfo("../x"); i.size = 2; t.addfile(i, io.BytesIO(b"x\n"))
def absolute(t):
    i = tarfile.TarInfo("/tmp/x"); i.size = 2; t.addfile(i, io.BytesIO(b"x\n"))
def hard(t):
    i = tarfile.TarInfo("lib/h"); i.type = tarfile.LNKTYPE; i.linkname = "main.py"; t.addfile(i)
def badname(t):
    i = tarfile.TarInfo("lib/\udcffx.py"); i.size = 2; t.addfile(i, io.BytesIO(b"x\n"))
make("sym.tar", sym); make("dotdot.tar", dotdot); make("abs.tar", absolute); make("hard.tar", hard)
with tarfile.open(os.path.join(tmp, "badname.tar"), "w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape") as t:
    t.add(d, arcname=".")
    badname(t)
EOF
upload "$TOK1" "$SBX_TMP/sym.tar"
valid POST /v1/skills
is "$CODE:$(errmsg)" "400:tar entry 'lib/passwd': a symbolic link; a skill holds regular files and directories only, under its own directory" \
        "a tar with a symlink: 400 naming the entry"
upload "$TOK1" "$SBX_TMP/dotdot.tar"
like "$CODE:$(errmsg)" "^400:tar entry '../x': a '..' component" "a tar with ../x: 400 naming the entry"
upload "$TOK1" "$SBX_TMP/abs.tar"
like "$CODE:$(errmsg)" "^400:tar entry '/tmp/x': an absolute path" "a tar with an absolute path: 400"
upload "$TOK1" "$SBX_TMP/hard.tar"
like "$CODE:$(errmsg)" "^400:tar entry 'lib/h': a hard link" "a tar with a hard link: 400"
upload "$TOK1" "$SBX_TMP/badname.tar"
like "$CODE:$(errmsg)" "^400:tar entry 'lib/\\?x.py': a name that is not printable UTF-8" "a name that is not UTF-8: 400, shown safely"
printf 'not a tar at all\n' >"$SBX_TMP/junk"
upload "$TOK1" "$SBX_TMP/junk"
like "$CODE:$(errmsg)" "^400:the body is not an uncompressed tar archive" "a body that is no tar: 400"
gzip -c "$SBX_TMP/hello.tar" >"$SBX_TMP/hello.tar.gz"
upload "$TOK1" "$SBX_TMP/hello.tar.gz"
like "$CODE:$(errmsg)" "^400:the body is not an uncompressed tar archive" "a compressed tar: 400 (nothing expands past the body's size)"
truncate -s 65M "$SBX_TMP/big.tar"
upload "$TOK1" "$SBX_TMP/big.tar"
valid POST /v1/skills
is "$CODE:$(json_get "$SBX_TMP/body" 'd["error"]["code"]')" "413:payload_too_large" "a body over 64 MiB: 413"
like "$(errmsg)" '^the body is 68157440 bytes, over the' "refused by its Content-Length, before it is read"
truncate -s $((64 * 1024 * 1024 + 1)) "$SBX_TMP/big.tar" # within what a request may carry
upload "$TOK1" "$SBX_TMP/big.tar"
is "$CODE:$(errmsg)" "413:the skill's tar is 67108865 bytes, over 64 MiB" "one byte over 64 MiB: 413"
rm -f "$SBX_TMP/big.tar"
is "$(n_skills):$([ -e /tmp/x ] && echo leaked)" "$N0:" "nothing refused was kept, nothing written outside"

# ---- create {skill}, exec the entrypoint ----
api "$TOK1" POST /v1/sandboxes -H 'Content-Type: application/json' -d "{\"skill\": \"$SKL\", \"profile\": \"profile.default\"}"
is "$CODE:$(json_get "$SBX_TMP/body" 'd["error"]["field"]')" "400:profile" "create {skill, profile}: 400"
like "$(errmsg)" 'profile and skill' "naming both"
api "$TOK1" POST /v1/sandboxes -H 'Content-Type: application/json' -d "{\"skill\": \"$SKL\", \"network\": {\"egress\": [\"pkgs.example.test\"]}}"
liked "$CODE:$(json_get "$SBX_TMP/body" 'd["error"]["field"]'):$(errmsg)" "^400:network:network and skill" \
        "create {skill, network}: 400 (the manifest says what network the skill gets)" "$BODY"
api "$TOK1" POST /v1/sandboxes -H 'Content-Type: application/json' -d '{"skill": "skl_0000000000000000"}'
is "$CODE" 404 "create {skill: an unknown id}: 404"
# the policy of the create decides: a key no longer trusted refuses what it signed
cp "$POL" "$SBX_TMP/policy.saved"
sed -i "s|$K/alice.pub|$K/mallory.pub|" "$POL"
api "$TOK1" POST /v1/sandboxes -H 'Content-Type: application/json' -d "{\"skill\": \"$SKL2\"}"
liked "$CODE:$(errmsg)" "^422:skill: signed by key $KEYID, which is not a trusted key" \
        "create {skill} once its key is no longer trusted: 422 naming the key" "$BODY"
cp "$SBX_TMP/policy.saved" "$POL"
[ -d "$ST/sandboxes" ] && [ -z "$(find "$ST/sandboxes" -mindepth 1 -maxdepth 1 -newer "$SBX_TMP/policy.saved" 2>/dev/null)" ]
ok $? "and nothing of it is left in the state directory"
api "$TOK1" POST /v1/sandboxes -H 'Content-Type: application/json' -d "{\"skill\": \"$SKL\"}"
valid POST /v1/sandboxes
isd "$CODE" 201 "create {skill: ID}: 201" "$BODY"
SID=$(json_get "$SBX_TMP/body" 'd["id"]' 2>/dev/null || echo sbx_0000000000000000)
is "$(json_get "$SBX_TMP/body" 'd["skill"]')" \
        "{\"id\": \"$SKL\", \"name\": \"hello\", \"version\": \"1.0.0\", \"digest\": \"$DIGEST\", \"key_id\": \"$KEYID\"}" \
        "the sandbox's record carries the skill"
is "$(json_get "$SBX_TMP/body" '[d["profile"], d["workspace"], d["limits"]["memory_mb"], d["limits"]["timeout_s"]]')" \
        '["skill.hello", "/workspace", 128.0, 20.0]' "its profile is the skill's (profile.skill narrowed by the manifest)"
# the skill goes once its sandbox has its own copy: the sandbox is not touched
api "$TOK1" DELETE "/v1/skills/$SKL"
valid DELETE '/v1/skills/{id}'
is "$CODE:$(json_get "$SBX_TMP/body" 'd["id"]')" "200:$SKL" "DELETE /v1/skills/ID: 200 with the record"
api "$TOK1" GET "/v1/skills/$SKL"
is "$CODE" 404 "then it is gone"
api "$TOK1" POST "/v1/sandboxes/$SID/exec" -H 'Content-Type: application/json' \
        -d '{"argv": ["python3", "main.py", "a", "-b"]}'
isd "$CODE:$(json_get "$SBX_TMP/body" '[d["exit_code"], d["stdout"]]')" \
        "200:[0, \"hello from the skill ['a', '-b'] 42\\n\"]" \
        "an exec of the entrypoint in the skill's sandbox runs it (in the skill's directory: no cwd given)" "$BODY"
isd "$(json_get "$SBX_TMP/body" 'd["report"]["skill"]')" \
        "{\"name\": \"hello\", \"version\": \"1.0.0\", \"digest\": \"$DIGEST\", \"key_id\": \"$KEYID\"}" \
        "its report names the skill, as skill run's does" "$BODY"
python3 "$SBX_SRC/tests/tools/validate-report.py" <(json_get "$SBX_TMP/body" 'd["report"]') >"$SBX_TMP/vr" 2>&1
ok $? "and validates against the report schema" || diag "$(head -c 600 "$SBX_TMP/vr")"
EXE1=$(json_get "$SBX_TMP/body" 'd["exec_id"]')
api "$TOK1" GET "/v1/sandboxes/$SID/execs/$EXE1"
isd "$CODE:$(json_get "$SBX_TMP/body" 'd["report"]["skill"]["digest"]')" "200:$DIGEST" "so does the stored report" "$BODY"
api "$TOK1" PUT "/v1/sandboxes/$SID/network" -H 'Content-Type: application/json' -d '{"egress": ["pkgs.example.test"]}'
isd "$CODE:$(json_get "$SBX_TMP/body" 'd["error"]["field"]')" "409:network" "its network rules cannot be changed afterwards (409)" "$BODY"
api "$TOK1" POST "/v1/sandboxes/$SID/exec" -H 'Content-Type: application/json' \
        -d '{"argv": ["sh", "-c", "echo x >/workspace/main.py"]}'
[ "$CODE" = 200 ] && [ "$(json_get "$SBX_TMP/body" 'd["exit_code"]')" != 0 ]
ok $? "the skill's files are read-only in its sandbox" || diag "$BODY"
api "$TOK1" POST "/v1/sandboxes/$SID/recreate"
api "$TOK1" POST "/v1/sandboxes/$SID/exec" -H 'Content-Type: application/json' -d '{"argv": ["python3", "main.py"]}'
isd "$CODE:$(json_get "$SBX_TMP/body" '[d["exit_code"], d["stdout"]]')" "200:[0, \"hello from the skill [] 42\\n\"]" \
        "recreated, the sandbox still has the skill's files and profile" "$BODY"
# a restarted server re-adopts the skill's sandbox as it was, and recreates it from the files
kill -TERM "$SERVE_PID" && wait "$SERVE_PID"
start_serve --stop-sandboxes
ok $? "serve restarts (with --stop-sandboxes: this one ends them when it stops)" || diag "$(tail -5 "$SBX_TMP/serve.log")"
api "$TOK1" GET "/v1/sandboxes/$SID"
isd "$CODE:$(json_get "$SBX_TMP/body" '[d["state"], d["profile"], d["skill"]["id"]]')" "200:[\"ready\", \"skill.hello\", \"$SKL\"]" \
        "re-adopted: its record still names the skill" "$BODY"
api "$TOK1" POST "/v1/sandboxes/$SID/recreate"
api "$TOK1" POST "/v1/sandboxes/$SID/exec" -H 'Content-Type: application/json' -d '{"argv": ["python3", "main.py", "again"]}'
isd "$CODE:$(json_get "$SBX_TMP/body" '[d["exit_code"], d["stdout"]]')" "200:[0, \"hello from the skill ['again'] 42\\n\"]" \
        "recreated by the new server (its profile resolved again from the skill's): the entrypoint runs" "$BODY"
# on_violation: kill (profile.skill, as `skill run`): a network attempt ends the sandbox
api "$TOK1" POST "/v1/sandboxes/$SID/exec" -H 'Content-Type: application/json' \
        -d '{"argv": ["python3", "-c", "import socket; socket.create_connection((\"192.0.2.1\", 80), timeout=3)"]}'
NETRUN=$BODY
for ((i = 0; i < 100; i++)); do # the sandbox is ended as the exec's answer goes out
        api "$TOK1" GET "/v1/sandboxes/$SID"
        [[ $BODY =~ \"state\":\"(destroying|destroyed)\" ]] && break
        sleep 0.1
done
liked "$CODE:$(json_get "$SBX_TMP/body" 'd["state"]')" '^200:(destroying|destroyed)$' \
        "a network attempt from the skill ends its sandbox (on_violation: kill)" "the exec: $NETRUN" "$BODY"
api "$TOK1" DELETE "/v1/sandboxes/$SID"
is "$CODE" 200 "its sandbox is destroyed"
[ ! -e "$ST/sandboxes/$SID" ]
ok $? "and its copy of the skill with it"

# ---- audit ----
A=$ST/audit.log
is "$(python3 - "$A" "$SKL" "$SID" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
got = []
for l in lines:
    if l["action"] in ("skill.upload", "skill.delete") or (l["action"] == "sandbox.create" and l["target"] == sys.argv[3]):
        got.append("%s %s %s" % (l["action"], l["target"] if l["target"] in (sys.argv[2], sys.argv[3], "-") else "OTHER", l["outcome"]))
print("; ".join(got))
EOF
)" "skill.upload $SKL ok; skill.upload OTHER ok; skill.upload - refused; skill.upload - refused; skill.upload - refused; skill.upload - refused; skill.upload - refused; skill.upload - refused; skill.upload - refused; skill.upload - refused; skill.upload - refused; skill.upload - refused; skill.upload - refused; sandbox.create $SID ok; skill.delete $SKL ok" \
        "the audit log has each upload (refusals too), the create from the skill and the delete"
like "$(grep "\"sandbox.create\"" "$A" | grep "$SID")" "skill $SKL hello@1.0.0 digest $DIGEST key $KEYID" \
        "the create's audit line names the skill, its digest and signer"
grep '"skill.exec.end"' "$A" | grep "\"$SID\"" >"$SBX_TMP/runs"
isd "$(wc -l <"$SBX_TMP/runs")" 5 "each exec's end in the skill's sandbox is an audit line" \
        "$(cat "$SBX_TMP/runs")" "the network exec: $NETRUN"
like "$(head -1 "$SBX_TMP/runs")" "\"outcome\":\"exited\".*exec exe_[0-9a-f]{16} skill $SKL hello@1.0.0 digest $DIGEST: exit 0" \
        "naming the exec, the skill and its digest, and how it ended"
liked "$(sed -n 5p "$SBX_TMP/runs")" 'NetworkAccessViolation (denied|killed)' "a network attempt is in it, with what the fences did" \
        "the exec: $NETRUN"
printf 'x' >"$SBX_TMP/one"
api "$TOK1" POST /v1/skills -H 'Content-Type: text/plain' --data-binary "@$SBX_TMP/one"
valid POST /v1/skills
is "$CODE:$(json_get "$SBX_TMP/body" 'd["error"]["field"]')" "415:Content-Type" "an upload that says it is no tar: 415"
is "$BAD_SHAPES" "" "every answer above matches docs/openapi.json"
is "$LEAKS" "" "no upload's answer names the server's directories"
done_testing
