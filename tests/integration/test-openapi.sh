#!/usr/bin/env bash
# test-openapi.sh — docs/openapi.json: generated from scripts/gen-openapi.py (no hand drift), every
# endpoint of docs/api.md in it, and the validator the integration tests use accepts what it
# should and rejects what it should not (so "every response matches" is not vacuous).
. "$(dirname "$0")/lib.sh"
DOC=$SBX_SRC/docs/openapi.json
V=$SBX_SRC/tests/tools/validate-api.py
python3 -c 'import jsonschema' 2>/dev/null || skip_all "python3-jsonschema is needed"

python3 "$SBX_SRC/scripts/gen-openapi.py" "$SBX_TMP/openapi.json"
cmp -s "$SBX_TMP/openapi.json" "$DOC"
ok $? "docs/openapi.json is what scripts/gen-openapi.py writes"
is "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["openapi"])' "$DOC")" 3.0.3 "OpenAPI 3.0.3"

# Every `METHOD /path` of docs/api.md's endpoint table is an operation of the document.
missing=$(python3 - "$SBX_SRC/docs/api.md" "$DOC" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[2]))
out = []
for m, p in re.findall(r"^\| `(GET|POST|PUT|DELETE) (/[^` ?]*)", open(sys.argv[1]).read(), re.M):
    if m.lower() not in doc["paths"].get(p, {}):
        out.append("%s %s" % (m, p))
print(" ".join(out))
PY
)
is "$missing" "" "every endpoint of docs/api.md is in the OpenAPI document"

rec='{"id":"sbx_0123456789abcdef","state":"ready","reason":"provisioned","profile":"profile.default","backend":"native","tenant":"default","consumer":{},"metadata":{},"created_at":"2026-11-22T09:00:00.000Z","updated_at":"2026-11-22T09:00:00.000Z","expires_at":"2026-11-22T13:00:00.000Z","limits":{"timeout_s":45,"budget_s":180,"cpus":2,"memory_mb":1024,"pids":256,"output_mb":10,"scratch_mb":512},"budget_s":180,"budget_used_s":0,"execs":0}'
printf '%s' "$rec" >"$SBX_TMP/good.json"
python3 "$V" "$DOC" GET '/v1/sandboxes/{id}' 200 "$SBX_TMP/good.json"
ok $? "the validator accepts a valid sandbox record"
printf '%s' "${rec/\"ready\"/\"sleeping\"}" >"$SBX_TMP/bad.json"
out=$(python3 "$V" "$DOC" GET '/v1/sandboxes/{id}' 200 "$SBX_TMP/bad.json")
rc=$?
is "$rc" 1 "the validator rejects a record with an unknown state"
like "$out" "state" "and says where"
printf '%s' '{"error":{"code":"not_found","message":"no sandbox"}}' >"$SBX_TMP/err.json"
python3 "$V" "$DOC" DELETE '/v1/sandboxes/{id}' 404 "$SBX_TMP/err.json"
ok $? "the validator accepts the error shape"
printf '%s' '{"error":"not_found"}' >"$SBX_TMP/err2.json"
python3 "$V" "$DOC" DELETE '/v1/sandboxes/{id}' 404 "$SBX_TMP/err2.json" >/dev/null
is "$?" 1 "and rejects another error shape"
printf '%s\n%s\n' '{"type":"start","exec_id":"exe_0123456789abcdef"}' '{"type":"teleport"}' >"$SBX_TMP/stream.ndjson"
python3 "$V" --ndjson "$DOC" POST '/v1/sandboxes/{id}/exec' 200 "$SBX_TMP/stream.ndjson" >/dev/null
is "$?" 1 "NDJSON: an unknown event type is rejected"
python3 "$V" "$DOC" GET /v1/nothing 200 "$SBX_TMP/good.json" >/dev/null
is "$?" 2 "an operation the document lacks: usage error (2)"
done_testing
