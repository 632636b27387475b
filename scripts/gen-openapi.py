#!/usr/bin/env python3
"""gen-openapi.py — writes docs/openapi.json, the OpenAPI 3.0 document of docs/api.md: python3 scripts/gen-openapi.py docs/openapi.json.
Edit the API here and in docs/api.md together; tests/integration/sandboxes_test.py validates every
response body against the generated document."""
import json
ts = {"type": "string", "format": "date-time"}
tsn = {"type": "string", "format": "date-time", "nullable": True}
err = {"$ref": "#/components/schemas/Error"}
def resp(desc, schema=None, ctype="application/json"):
    r = {"description": desc}
    if schema is not None:
        r["content"] = {ctype: {"schema": schema}}
    return r
def errs(*codes):
    names = {"400": "Bad input: malformed JSON, an unknown field, a wrong type or value (field names it)",
             "401": "TCP without a valid bearer token", "404": "No such sandbox (or another tenant's), route or file",
             "405": "Method not allowed", "409": "Not possible in the sandbox's state, or an Idempotency-Key reused with another body",
             "410": "The sandbox was destroyed", "413": "Body too large", "422": "Unknown profile, or a secret not in the store",
             "429": "A tenant quota or the sandbox's budget_s", "503": "The sandbox could not be started, or its supervisor is gone",
             "403": "Not allowed by the profile or the policy file (e.g. a long-lived exec: process.long_lived)",
             "426": "Not a WebSocket upgrade (attach is one)"}
    return {c: resp(names[c], err) for c in codes}
consumer = {"type": "object", "additionalProperties": False, "properties": {k: {"type": "string", "maxLength": 256} for k in ["harness", "session_id", "run_id", "job_id"]}}
strmap = {"type": "object", "additionalProperties": {"type": "string"}}
limits = {"type": "object", "additionalProperties": {"type": "number"},
          "required": ["timeout_s", "budget_s", "cpus", "memory_mb", "pids", "output_mb", "scratch_mb"]}
rules = {"type": "array", "maxItems": 256, "items": {"type": "string", "minLength": 1, "maxLength": 260},
         "description": "egress rules: \"host\", \"*.domain\", \"host:port\", an address or a CIDR (docs/network.md)"}
network = {"type": "object", "additionalProperties": False,
           "properties": {"egress": rules, "egress_deny": rules},
           "description": "a sandbox's egress rules: egress (allow, within the policy's network.egress_allowed) and "
                          "egress_deny (refused as denied_by_rule unless an egress rule covers them: allow beats deny)"}
states = ["requested", "provisioning", "ready", "active", "expired", "failed", "destroying", "destroyed"]
record = {"type": "object", "required": ["id", "state", "reason", "profile", "backend", "tenant", "consumer", "metadata",
                                          "created_at", "updated_at", "expires_at", "limits", "budget_s", "budget_used_s", "execs"],
          "properties": {
              "id": {"type": "string", "pattern": "^sbx_[0-9a-f]{16}$"},
              "state": {"type": "string", "enum": states},
              "reason": {"type": "string", "nullable": True},
              "profile": {"type": "string"},
              "backend": {"type": "string", "nullable": True},
              "tenant": {"type": "string"}, "actor": {"type": "string"},
              "consumer": {"type": "object", "additionalProperties": {"type": "string"}},
              "metadata": strmap,
              "network": {**network, "nullable": True,
                          "description": "the egress rules in force (null: a record from before they were kept)"},
              "created_at": ts, "updated_at": ts, "expires_at": tsn, "ttl_max_at": tsn,
              "idle_s": {"type": "number", "nullable": True}, "last_active_at": tsn,
              "budget_s": {"type": "number"}, "budget_used_s": {"type": "number"},
              "execs": {"type": "integer", "minimum": 0},
              "limits": limits,
              "scratch": {"type": "string", "nullable": True},
              "home": {"type": "string", "nullable": True,
                       "description": "the profile's filesystem.home: the sandbox's home directory, where HOME and "
                                      "the default cwd point; null without one"},
              "user": {"type": "string", "nullable": True,
                       "description": "the name of the sandbox's one user (uid 1000) inside: the profile's user "
                                      "(sandbox by default; user for E2B's templates, daytona for Daytona's)"},
              "workspace": {"type": "string", "nullable": True}}}
report = {"type": "object", "description": "The run report, schema sandboxer.report/v1 (docs/report.schema.json)",
          "required": ["schema", "id", "status", "exit", "violations", "usage"],
          "properties": {"schema": {"type": "string", "enum": ["sandboxer.report/v1"]},
                         "status": {"type": "string", "enum": ["exited", "signaled", "timeout", "memory_limit", "process_limit",
                                                                "output_limit", "violation", "cancelled", "setup_error"]},
                         "violations": {"type": "array", "items": {"type": "object", "required": ["kind", "action"]}}}}
exec_result = {"type": "object", "required": ["exec_id", "status", "exit_code", "signal", "stdout", "stderr", "encoding", "report"],
               "properties": {"exec_id": {"type": "string", "pattern": "^exe_[0-9a-f]{16}$"},
                              "status": report["properties"]["status"],
                              "exit_code": {"type": "integer", "nullable": True}, "signal": {"type": "integer", "nullable": True},
                              "stdout": {"type": "string"}, "stderr": {"type": "string"},
                              "encoding": {"type": "string", "enum": ["utf-8", "base64"]},
                              "report": {"$ref": "#/components/schemas/Report"}}}
exec_event = {"type": "object", "required": ["type"],
              "properties": {"type": {"type": "string", "enum": ["start", "stdout", "stderr", "violation", "end"]},
                             "exec_id": {"type": "string"}, "sandbox_id": {"type": "string"},
                             "data": {"type": "string"}, "encoding": {"type": "string", "enum": ["utf-8", "base64"]},
                             "violation": {"type": "object"}, "status": {"type": "string"},
                             "exit_code": {"type": "integer", "nullable": True}, "signal": {"type": "integer", "nullable": True},
                             "report": {"$ref": "#/components/schemas/Report"}, "error": {"$ref": "#/components/schemas/Error"}}}
exec_rec = {"type": "object", "required": ["exec_id", "status"],
            "properties": {"exec_id": {"type": "string"}, "status": {"type": "string"},
                           "exit_code": {"type": "integer", "nullable": True}, "started_at": tsn, "ended_at": tsn,
                           "argv": {"type": "array", "items": {"type": "string"}},
                           "report": {"allOf": [{"$ref": "#/components/schemas/Report"}], "nullable": True}}}
schemas = {
    "Error": {"type": "object", "required": ["error"], "additionalProperties": False,
              "properties": {"error": {"type": "object", "required": ["code", "message"], "additionalProperties": False,
                                       "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "field": {"type": "string"}}}}},
    "SandboxRecord": record,
    "SandboxList": {"type": "object", "required": ["items", "next_cursor"],
                    "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/SandboxRecord"}},
                                   "next_cursor": {"type": "string", "nullable": True}}},
    "CreateRequest": {"type": "object", "additionalProperties": False,
                      "properties": {"profile": {"type": "string", "pattern": "^[a-z0-9._-]{1,200}$"},
                                     "ttl_s": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                                     "consumer": consumer, "metadata": strmap,
                                     "network": {**network, "description": "each list given replaces the profile's "
                                                 "(a sandbox with any rule has the egress proxy, so its rules can "
                                                 "change later)"}}},
    "ExecRequest": {"type": "object", "additionalProperties": False, "required": ["argv"],
                    "properties": {"argv": {"type": "array", "minItems": 1, "maxItems": 1024, "items": {"type": "string"}},
                                   "env": strmap, "cwd": {"type": "string"},
                                   "timeout_s": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                                   "stdin": {"type": "string"}, "stdin_encoding": {"type": "string", "enum": ["utf-8", "base64"]},
                                   "stream": {"type": "boolean"},
                                   "tty": {"type": "object", "additionalProperties": False, "required": ["cols", "rows"],
                                           "properties": {"cols": {"type": "integer", "minimum": 1, "maximum": 4096},
                                                          "rows": {"type": "integer", "minimum": 1, "maximum": 4096}}},
                                   "long_lived": {"type": "boolean"}}},
    "TtyExec": {"type": "object", "required": ["exec_id", "sandbox_id", "status", "tty", "attach"],
                "properties": {"exec_id": {"type": "string"}, "sandbox_id": {"type": "string"}, "status": {"type": "string", "enum": ["running"]},
                               "tty": {"type": "object", "required": ["cols", "rows"], "properties": {"cols": {"type": "integer"}, "rows": {"type": "integer"}}},
                               "attach": {"type": "string"}}},
    "Resize": {"type": "object", "additionalProperties": False, "required": ["cols", "rows"],
               "properties": {"cols": {"type": "integer", "minimum": 1, "maximum": 4096}, "rows": {"type": "integer", "minimum": 1, "maximum": 4096}}},
    "Ok": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}},
    "Metrics": {"type": "object", "required": ["sandbox_id", "timestamp", "cpu_count", "cpu_used_pct", "cpu_s", "memory_used_bytes",
                                               "memory_total_bytes", "disk_used_bytes", "disk_total_bytes", "pids"],
                "properties": {"sandbox_id": {"type": "string"}, "timestamp": ts, "cpu_count": {"type": "number"},
                               "cpu_used_pct": {"type": "number"}, "cpu_s": {"type": "number"},
                               **{k: {"type": "integer"} for k in ["memory_used_bytes", "memory_total_bytes", "disk_used_bytes", "disk_total_bytes", "pids"]}}},
    "PreviewRequest": {"type": "object", "additionalProperties": False, "required": ["port"],
                       "properties": {"port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                      "expires_s": {"type": "number", "minimum": 0, "maximum": 604800}}},
    "Preview": {"type": "object", "required": ["sandbox_id", "port", "url", "token"],
                "properties": {"sandbox_id": {"type": "string"}, "port": {"type": "integer"}, "url": {"type": "string"},
                               "token": {"type": "string"}, "signed_url": {"type": "string"}, "signed_token": {"type": "string"},
                               "expires_at": ts}},
    "ExecResult": exec_result, "ExecEvent": exec_event, "Report": report,
    "ExecRecord": exec_rec,
    "ExecList": {"type": "object", "required": ["items", "running"],
                 "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/ExecRecord"}},
                                "running": {"type": "array", "items": {"$ref": "#/components/schemas/ExecRecord"}}}},
    "FileWriteResult": {"type": "object", "required": ["path", "size"], "properties": {"path": {"type": "string"}, "size": {"type": "integer"}}},
    "TtlRequest": {"type": "object", "additionalProperties": False, "required": ["extend_s"],
                   "properties": {"extend_s": {"type": "number", "exclusiveMinimum": True, "minimum": 0}}},
    "Profiles": {"type": "object", "required": ["items"],
                 "properties": {"items": {"type": "array", "items": {"type": "object", "required": ["id"],
                                                                    "properties": {"id": {"type": "string"}, "version": {"type": "string", "nullable": True}}}}}},
    "Health": {"type": "object", "required": ["status"], "properties": {"status": {"type": "string", "enum": ["ok"]}}},
}
ref = lambda n: {"$ref": "#/components/schemas/" + n}
idp = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
portp = {"name": "port", "in": "path", "required": True, "schema": {"type": "integer"}}
paths = {
    "/healthz": {"get": {"operationId": "health", "responses": {"200": resp("Serving", ref("Health"))}}},
    "/metrics": {"get": {"operationId": "metrics", "responses": {"200": resp("Prometheus text", {"type": "string"}, "text/plain")}}},
    "/v1/profiles": {"get": {"operationId": "listProfiles", "responses": {"200": resp("The built-in profiles", ref("Profiles")), **errs("401")}}},
    "/v1/sandboxes": {
        "post": {"operationId": "createSandbox",
                 "parameters": [{"name": "Idempotency-Key", "in": "header", "schema": {"type": "string", "maxLength": 255}}],
                 "requestBody": {"content": {"application/json": {"schema": ref("CreateRequest")}}},
                 "responses": {"201": resp("Created, ready", ref("SandboxRecord")),
                               "200": resp("An Idempotency-Key replay: the same sandbox", ref("SandboxRecord")),
                               **errs("400", "401", "409", "413", "422", "429", "503")}},
        "get": {"operationId": "listSandboxes",
                "parameters": [{"name": k, "in": "query", "schema": {"type": "string"}} for k in
                               ["state", "profile", "harness", "session_id", "run_id", "job_id", "cursor"]] +
                              [{"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 500}}],
                "responses": {"200": resp("The caller's sandboxes", ref("SandboxList")), **errs("400", "401")}}},
    "/v1/sandboxes/{id}": {
        "parameters": [idp],
        "get": {"operationId": "getSandbox", "responses": {"200": resp("The record", ref("SandboxRecord")), **errs("401", "404")}},
        "delete": {"operationId": "destroySandbox",
                   "responses": {"200": resp("Destroyed (also when it already was): the final record", ref("SandboxRecord")), **errs("401", "404")}}},
    "/v1/sandboxes/{id}/exec": {
        "parameters": [idp],
        "post": {"operationId": "exec", "requestBody": {"required": True, "content": {"application/json": {"schema": ref("ExecRequest")}}},
                 "responses": {"201": resp("With tty: the exec runs on a terminal; attach to it", ref("TtyExec")),
                               "403": resp(errs("403")["403"]["description"], err),
                               "200": {"description": "The exec's result; with stream: true, NDJSON events",
                                       "content": {"application/json": {"schema": ref("ExecResult")},
                                                   "application/x-ndjson": {"schema": ref("ExecEvent")}}},
                               **errs("400", "401", "404", "409", "410", "413", "429", "503")}}},
    "/v1/sandboxes/{id}/execs": {"parameters": [idp], "get": {"operationId": "listExecs",
        "responses": {"200": resp("Execs that ended and those running", ref("ExecList")), **errs("401", "404")}}},
    "/v1/sandboxes/{id}/execs/{exec_id}": {"parameters": [idp, {"name": "exec_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "get": {"operationId": "getExec", "responses": {"200": resp("One exec, with its report", ref("ExecRecord")), **errs("401", "404")}}},
    "/v1/sandboxes/{id}/execs/{exec_id}/attach": {"parameters": [idp, {"name": "exec_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "get": {"operationId": "attachExec",
                "description": "A WebSocket to the exec's terminal: binary frames carry output out and input in; a text frame {\"resize\": {cols, rows}} resizes, other text is input; at the end a text frame {\"exit\": {status, exit_code, signal, report}} and a close. The last 64 KiB of output come first. Attach again by id: the terminal outlives its connections.",
                "responses": {"101": resp("Switching Protocols: the WebSocket"), **errs("401", "404", "426")}}},
    "/v1/sandboxes/{id}/execs/{exec_id}/input": {"parameters": [idp, {"name": "exec_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "post": {"operationId": "ptyInput", "requestBody": {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
                 "responses": {"200": resp("Written to the terminal", ref("Ok")), **errs("401", "404", "410")}}},
    "/v1/sandboxes/{id}/execs/{exec_id}/resize": {"parameters": [idp, {"name": "exec_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "post": {"operationId": "ptyResize", "requestBody": {"required": True, "content": {"application/json": {"schema": ref("Resize")}}},
                 "responses": {"200": resp("Resized", ref("Ok")), **errs("400", "401", "404", "410")}}},
    "/v1/sandboxes/{id}/files": {
        "parameters": [idp, {"name": "path", "in": "query", "required": True, "schema": {"type": "string"}}],
        "put": {"operationId": "putFile", "requestBody": {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
                "responses": {"200": resp("Written, inside the sandbox", ref("FileWriteResult")), **errs("400", "401", "404", "409", "410", "413", "503")}},
        "post": {"operationId": "postFile", "requestBody": {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
                 "responses": {"200": resp("Written (as PUT)", ref("FileWriteResult")), **errs("400", "401", "404", "409", "410", "413", "503")}},
        "get": {"operationId": "getFile", "responses": {"200": resp("The file's bytes", {"type": "string", "format": "binary"}, "application/octet-stream"),
                                                        "403": resp("The sandbox may not read it", err), **errs("400", "401", "404", "409", "410", "503")}}},
    "/v1/sandboxes/{id}/ttl": {"parameters": [idp], "post": {"operationId": "extendTtl",
        "requestBody": {"required": True, "content": {"application/json": {"schema": ref("TtlRequest")}}},
        "responses": {"200": resp("Extended (capped by ttl.max)", ref("SandboxRecord")), **errs("400", "401", "404", "409", "410")}}},
    "/v1/sandboxes/{id}/recreate": {"parameters": [idp], "post": {"operationId": "recreateSandbox",
        "responses": {"200": resp("Destroyed and provisioned again: the same id", ref("SandboxRecord")), **errs("401", "404", "409", "410", "503")}}},
    "/v1/sandboxes/{id}/metrics": {"parameters": [idp], "get": {"operationId": "getMetrics",
        "description": "What the sandbox uses now: its cgroup's CPU and memory, its processes, its scratch; cpu_used_pct is the share of its cpus used since the last call (or since it started). -1 where the host does not tell.",
        "responses": {"200": resp("One sample", ref("Metrics")), **errs("401", "404", "409", "410", "503")}}},
    "/v1/sandboxes/{id}/network": {"parameters": [idp], "put": {"operationId": "setNetwork",
        "description": "Replace a running sandbox's egress rules (the whole set: a list left out is empty); "
                       "connections made from now on are judged by them. 409 when the sandbox was made without "
                       "rules (it has no egress proxy); 403 for an allow rule outside the policy.",
        "requestBody": {"required": True, "content": {"application/json": {"schema": network}}},
        "responses": {"200": resp("The record, with the new rules", ref("SandboxRecord")),
                      **errs("400", "401", "403", "404", "409", "410")}}},
    "/v1/sandboxes/{id}/metadata": {"parameters": [idp], "put": {"operationId": "setMetadata",
        "description": "Replace the sandbox's metadata (at most 64 strings; what list filters and the SDKs' labels read).",
        "requestBody": {"required": True, "content": {"application/json": {"schema": strmap}}},
        "responses": {"200": resp("The record, with the new metadata", ref("SandboxRecord")), **errs("400", "401", "404", "409", "410")}}},
    "/v1/sandboxes/{id}/previews": {"parameters": [idp], "post": {"operationId": "previewLink",
        "description": "A link to a port of the sandbox: url (by Host with serve --domain, else by path) with token, the preview token that stands for the sandbox's owner on its ports (header X-Sandboxer-Preview-Token); with expires_s, also a signed URL that needs no credentials until then.",
        "requestBody": {"required": True, "content": {"application/json": {"schema": ref("PreviewRequest")}}},
        "responses": {"200": resp("The link", ref("Preview")), **errs("400", "401", "404")}}},
    "/v1/sandboxes/{id}/previews/{token}": {"parameters": [idp, {"name": "token", "in": "path", "required": True, "schema": {"type": "string"}}],
        "delete": {"operationId": "revokePreview", "description": "Expire a signed URL before its time.",
                   "responses": {"200": resp("Revoked", {"type": "object", "properties": {"revoked": {"type": "boolean"}}}), **errs("401", "404")}}},
    "/v1/sandboxes/{id}/ports/{port}/{path}": {"parameters": [idp, portp, {"name": "path", "in": "path", "required": True, "schema": {"type": "string"}}],
        **{m: {"operationId": "port" + m.capitalize(),
               "description": "Proxied to 127.0.0.1:PORT inside the sandbox (HTTP, and WebSocket upgrades): the server inside answers. Also reached by Host PORT-ID.DOMAIN with serve --domain, by a signed URL (/v1/p/TOKEN/...), or with the preview token instead of a bearer token.",
               "responses": {"default": resp("What the server inside answered", {}, "*/*"),
                             "400": resp("The port is not from 1 to 65535", err), "401": resp("No credentials: a bearer token, the preview token or a signed URL", err),
                             "403": resp("The sandbox's fences refuse the connection (a backend that denies TCP), or an expired or altered signed URL", err),
                             "404": resp("No such sandbox", err), "502": resp("Nothing listens on the port inside, or no HTTP answer", err),
                             "503": resp("The sandbox's supervisor is gone", err)}}
           for m in ("get", "post", "put", "patch", "delete")}},
    "/v1/p/{token}/{path}": {"parameters": [{"name": "token", "in": "path", "required": True, "schema": {"type": "string"}},
                                             {"name": "path", "in": "path", "required": True, "schema": {"type": "string"}}],
        **{m: {"operationId": "signed" + m.capitalize(), "security": [{}],
               "description": "A signed URL (POST /v1/sandboxes/{id}/previews with expires_s): the port it names, proxied as /v1/sandboxes/{id}/ports/{port}/{path} is, without other credentials until its expiry.",
               "responses": {"default": resp("What the server inside answered", {}, "*/*"),
                             "403": resp("Expired, revoked or altered", err), "404": resp("No such sandbox", err),
                             "502": resp("Nothing listens on the port inside", err), "503": resp("The sandbox's supervisor is gone", err)}}
           for m in ("get", "post", "put", "patch", "delete")}},
    "/v1/sandboxes/{id}/tunnel/{port}": {"parameters": [idp, portp], "get": {"operationId": "tunnel",
        "description": "With Upgrade: sandboxer-tcp: after the 101 the connection is a raw TCP pipe to 127.0.0.1:PORT inside the sandbox (sandboxer port-forward).",
        "responses": {"101": resp("Switching Protocols: the pipe"), "502": resp("Nothing listens on the port inside", err),
                      **errs("400", "401", "404", "426")}}},
    "/v1/events": {"get": {"operationId": "events",
        "parameters": [{"name": "sandbox", "in": "query", "schema": {"type": "string"}},
                       {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}}],
        "responses": {"200": resp("Server-sent events: id, event (sandbox.state | sandbox.exec | sandbox.ttl), data (JSON)",
                                  {"type": "string"}, "text/event-stream"), **errs("400", "401")}}},
}
doc = {"openapi": "3.0.3",
       "info": {"title": "sandboxer control plane", "version": "1.0.0",
                "description": "Persistent sandboxes behind one HTTP API (docs/api.md). Generated by scripts/gen-openapi.py."},
       "servers": [{"url": "http://localhost", "description": "the unix socket (peer uid is the actor) or a TCP listener (bearer tokens)"}],
       "components": {"schemas": schemas,
                      "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
       "security": [{}, {"bearer": []}],
       "paths": paths}
import sys
json.dump(doc, open(sys.argv[1], "w"), indent=1, sort_keys=False)
open(sys.argv[1], "a").write("\n")
