#!/usr/bin/env python3
"""Validate sandboxer reports against docs/report.schema.json.

usage: validate-report.py [--schema SCHEMA] REPORT...   (REPORT "-" reads stdin)

Exit 0 when every report is valid, 1 when any is not (each error printed with its JSON
path), 2 on usage errors or unreadable files, 77 when the jsonschema module is missing
(the automake/meson "skip" status, so tests can skip rather than fail).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SCHEMA = os.path.join(HERE, "..", "..", "docs", "report.schema.json")


def load(path):
    if path == "-":
        return json.load(sys.stdin)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schema", default=DEFAULT_SCHEMA)
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args()

    try:
        import jsonschema
    except ImportError:
        print("validate-report: python3 module jsonschema not available "
              "(apt install python3-jsonschema)", file=sys.stderr)
        return 77

    try:
        schema = load(args.schema)
    except (OSError, ValueError) as e:
        print(f"validate-report: {args.schema}: {e}", file=sys.stderr)
        return 2
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)

    bad = 0
    for path in args.reports:
        try:
            doc = load(path)
        except (OSError, ValueError) as e:
            print(f"{path}: not JSON: {e}", file=sys.stderr)
            return 2
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors:
            where = "/".join(str(p) for p in e.absolute_path) or "(root)"
            print(f"{path}: {where}: {e.message}", file=sys.stderr)
        if errors:
            bad += 1
        else:
            print(f"{path}: valid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
