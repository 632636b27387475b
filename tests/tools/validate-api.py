#!/usr/bin/env python3
"""validate-api.py — check a response body of `sandboxer serve` against docs/openapi.json.

    validate-api.py [--ndjson] OPENAPI METHOD PATH_TEMPLATE STATUS BODY_FILE

PATH_TEMPLATE is the document's path (/v1/sandboxes/{id}/exec). The schema is the operation's
response for STATUS (application/json, or application/x-ndjson with --ndjson: each line is
checked). OpenAPI 3.0 `nullable` is turned into JSON Schema's type unions. Exit 0 valid, 1 invalid
(the reasons on stdout), 2 usage or a document without that operation. Also importable:
`load(path)` and `check(doc, method, template, status, body, ndjson)` → list of errors."""
import copy
import json
import sys

import jsonschema


def _fix(node):
    """OpenAPI 3.0 → JSON Schema (draft 4 semantics, which has boolean exclusiveMinimum)."""
    if isinstance(node, list):
        return [_fix(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _fix(v) for k, v in node.items() if k not in ("nullable", "format", "example")}
    if node.get("nullable"):
        if "type" in out and "$ref" not in out and "allOf" not in out:
            t = out["type"]
            out["type"] = (t if isinstance(t, list) else [t]) + ["null"]
            if "enum" in out:
                out["enum"] = out["enum"] + [None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    fixed = copy.deepcopy(doc)
    fixed["components"]["schemas"] = {k: _fix(v) for k, v in doc["components"]["schemas"].items()}
    return fixed


def _schema(doc, method, template, status, ctype):
    op = doc["paths"].get(template, {}).get(method.lower())
    if op is None:
        raise KeyError("no operation %s %s in the document" % (method, template))
    r = op["responses"].get(str(status)) or op["responses"].get("default")
    if r is None:
        raise KeyError("%s %s: status %s is not documented" % (method, template, status))
    content = r.get("content", {})
    if "*/*" in content and ctype not in content:  # whatever the server inside answered
        return {}
    if ctype not in content:
        raise KeyError("%s %s %s: no %s body documented" % (method, template, status, ctype))
    return _fix(content[ctype]["schema"])


def check(doc, method, template, status, body, ndjson=False):
    """The list of problems (empty: valid)."""
    try:
        schema = _schema(doc, method, template, status,
                         "application/x-ndjson" if ndjson else "application/json")
    except KeyError as e:
        return [e.args[0]]
    schema = dict(schema, components=doc["components"])
    v = jsonschema.Draft4Validator(schema)
    texts = body.decode("utf-8", "replace").splitlines() if ndjson else [body.decode("utf-8", "replace")]
    errors = []
    for i, t in enumerate(texts):
        if ndjson and not t.strip():
            continue
        try:
            inst = json.loads(t)
        except ValueError as e:
            errors.append("line %d: not JSON: %s" % (i + 1, e))
            continue
        for e in v.iter_errors(inst):
            where = "/".join(str(p) for p in e.absolute_path)
            errors.append("%s%s: %s" % ("line %d " % (i + 1) if ndjson else "", where or "(body)", e.message[:300]))
    return errors


def main(argv):
    nd = False
    if argv and argv[0] == "--ndjson":
        nd, argv = True, argv[1:]
    if len(argv) != 5:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    doc_path, method, template, status, body_file = argv
    doc = load(doc_path)
    with open(body_file, "rb") as f:
        body = f.read()
    errs = check(doc, method, template, status, body, nd)
    if errs and errs[0].startswith("no operation"):
        print(errs[0])
        return 2
    for e in errs:
        print(e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
