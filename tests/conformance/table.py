"""table.py — `sandboxer doctor --json` on stdin → the capability table (capabilities.tsv) on stdout."""
import json
import sys

d = json.load(sys.stdin)
print("# capabilities.tsv - the declared capability table, checked in: backend, capability, yes|no")
print("# (level: the isolation level, - when not implemented), the mechanism or the reason. `sandboxer")
print("# doctor --json` must match it exactly (tests/integration/test-conformance.sh), and a conformance")
print("# case may be skipped on a backend only where this says no. Regenerate: tests/conformance/regen.sh")
print("backend\tcapability\tdeclared\thow")
for b, v in d["backends"].items():
    impl = v["implemented"]
    print("\t".join([b, "level", v["level"] if impl else "-", "implemented" if impl else "not implemented in this build of sandboxer"]))
    for c, cv in v["capabilities"].items():
        print("\t".join([b, c, "yes" if cv["yes"] else "no", cv["how"]]))
