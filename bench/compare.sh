#!/usr/bin/env bash
# compare.sh — one build of sandboxer against another, side by side in one run: `sandboxer run`
# start-up + teardown (one hyperfine run, both commands interleaved by hyperfine's own order,
# warmup, >= 100 runs each), then the control plane (bench/serve.py: create-to-first-exec,
# exec into a ready sandbox, creates per second) for each build in turn, ROUNDS times
# alternating (A B A B ...), so that a drift of the machine falls on both. Prints medians, the
# range over rounds, and the ratio after/before. Not a test: it never fails on a slow result.
#
#   bash bench/compare.sh --before REV [--after REV] [--rounds N (6)] [--runs N (200)] [--no-wait]
#
# `run` is measured in pairs of short hyperfine runs (order swapped each pair), the ratio taken
# within each pair. REV is a commit (the tree is checked out into .cache/bench/); --after defaults to the working
# tree. Both are built the same way (meson defaults, the musl dependencies of this checkout when
# it has them) into .cache/bench/. BENCH_MAX_LOAD (default 1.0): wait for the 1-minute load
# average to fall below it first (the machine may be shared), at most BENCH_WAIT_S (300) s.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BEFORE="" AFTER="" ROUNDS=6 RUNS=200 WAIT=1
while [ $# -gt 0 ]; do
        case $1 in
        --before) BEFORE=${2:?}; shift ;;
        --after) AFTER=${2:?}; shift ;;
        --rounds) ROUNDS=${2:?}; shift ;;
        --runs) RUNS=${2:?}; shift ;;
        --no-wait) WAIT=0 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        esac
        shift
done
[ -n "$BEFORE" ] || { echo "compare.sh: --before REV is required (see --help)" >&2; exit 2; }
[ "$RUNS" -ge 100 ] || { echo "compare.sh: --runs must be >= 100" >&2; exit 2; }
[ "$ROUNDS" -ge 1 ] || { echo "compare.sh: --rounds must be >= 1" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "compare.sh: hyperfine is needed (apt install hyperfine)" >&2; exit 2; }

CACHE=$ROOT/.cache/bench
mkdir -p "$CACHE"
opts=()
[ -d "$ROOT/.cache/musl/lib" ] && opts+=(-Dmusl_deps="$ROOT/.cache/musl")

# build NAME REV|"": the tree of REV (or this working tree) built into $CACHE/NAME-build
build() {
        local name=$1 rev=$2 src fresh=0 id
        if [ -n "$rev" ]; then
                src=$CACHE/$name-src
                id=$(git rev-parse --verify -q "$rev^{commit}") ||
                        { echo "compare.sh: '$rev' is not a commit here" >&2; exit 2; }
                # the tree of that commit, unpacked again only when another commit is asked for
                if [ "$(cat "$CACHE/$name.rev" 2>/dev/null)" != "$id" ]; then
                        rm -rf "$src" "$CACHE/$name-build"
                        mkdir -p "$src"
                        git archive "$rev" | tar -x -C "$src"
                        echo "$id" >"$CACHE/$name.rev"
                fi
        else
                src=$ROOT
                [ "$(cat "$CACHE/$name.rev" 2>/dev/null)" = worktree ] || fresh=1
                echo worktree >"$CACHE/$name.rev"
        fi
        echo "== building $name (${rev:-working tree})" >&2
        if [ ! -f "$CACHE/$name-build/build.ninja" ] || [ "$fresh" = 1 ]; then
                rm -rf "$CACHE/$name-build"
                meson setup "$CACHE/$name-build" "$src" "${opts[@]}" >"$CACHE/$name-setup.log" 2>&1 ||
                        { echo "compare.sh: meson setup failed ($CACHE/$name-setup.log)" >&2; exit 1; }
        fi
        ninja -C "$CACHE/$name-build" >"$CACHE/$name-ninja.log" 2>&1 ||
                { echo "compare.sh: the $name build failed ($CACHE/$name-ninja.log)" >&2; exit 1; }
}
build before "$BEFORE"
build after "$AFTER"
A=$CACHE/before-build/src/cli/sandboxer
B=$CACHE/after-build/src/cli/sandboxer

if [ "$WAIT" = 1 ]; then
        max=${BENCH_MAX_LOAD:-1.0} waited=0
        while awk -v m="$max" '{ exit !($1 >= m) }' /proc/loadavg && [ "$waited" -lt "${BENCH_WAIT_S:-300}" ]; do
                [ "$waited" = 0 ] && echo "waiting for the load average to fall below $max ..." >&2
                sleep 5
                waited=$((waited + 5))
        done
fi

echo "before: $BEFORE ($("$A" --version 2>/dev/null | head -1))"
echo "after:  ${AFTER:-working tree} ($("$B" --version 2>/dev/null | head -1))"
echo "host:   $(nproc) cores, $(uname -r), load $(cut -d' ' -f1 /proc/loadavg)"
echo

# ---- sandboxer run -----------------------------------------------------------------------------
# In pairs of short hyperfine runs, the order swapped each time: a machine that drifts (a VM's
# neighbours) moves both sides of a pair alike, and the ratio is taken within each pair.
pairs=10
per=$(( (RUNS + pairs - 1) / pairs ))
[ "$per" -ge 10 ] || per=10
rm -rf "$CACHE/run"
mkdir -p "$CACHE/run"
for i in $(seq 1 "$pairs"); do
        if [ $((i % 2)) = 1 ]; then order=(before after); else order=(after before); fi
        args=()
        for who in "${order[@]}"; do
                bin=$A
                [ "$who" = after ] && bin=$B
                args+=(-n "$who" "$bin run -- /bin/true")
        done
        hyperfine -N --warmup 5 --runs "$per" --export-json "$CACHE/run/$i.json" "${args[@]}" >/dev/null 2>&1 ||
                { echo "compare.sh: hyperfine failed" >&2; exit 1; }
done
python3 - "$CACHE/run" "$pairs" <<'PY'
import json, statistics, sys
d, pairs = sys.argv[1], int(sys.argv[2])
med = {"before": [], "after": []}
ratios = []
for i in range(1, pairs + 1):
    r = {x["command"]: x for x in json.load(open("%s/%d.json" % (d, i)))["results"]}
    for k in med:
        med[k].append(r[k]["median"] * 1000)
    ratios.append(r["after"]["median"] / r["before"]["median"])
n = len(json.load(open("%s/1.json" % d))["results"][0]["times"])
print("sandboxer run -- /bin/true (%d pairs of hyperfine runs, %d runs each side per pair, order swapped)" % (pairs, n))
for k in ("before", "after"):
    xs = med[k]
    print("  %-7s median %.2f ms  [%.2f-%.2f] over the pairs" % (k, statistics.median(xs), min(xs), max(xs)))
print("  after/before within a pair: median %.3f  [%.3f-%.3f]" % (statistics.median(ratios), min(ratios), max(ratios)))
PY
echo

# ---- the control plane -------------------------------------------------------------------------
out=$CACHE/serve
rm -rf "$out"
mkdir -p "$out"
for i in $(seq 1 "$ROUNDS"); do
        for who in before after; do
                bin=$A
                [ "$who" = after ] && bin=$B
                SANDBOXER=$bin python3 "$ROOT/bench/serve.py" --only latency,creates --n-latency 150 \
                        --n-creates 200 --warm 0 >"$out/$who.$i" 2>&1 ||
                        echo "compare.sh: serve.py failed for $who round $i ($out/$who.$i)" >&2
        done
done
python3 - "$out" "$ROUNDS" <<'EOF'
import re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
pats = {
    "create-to-first-exec p50 (ms)": r"cold \(n=\d+\): p50 ([\d.]+) ms",
    "exec into a ready sandbox p50 (ms)": r"exec into a ready sandbox \(n=\d+\): p50 ([\d.]+) ms",
    "creates per second (8 clients)": r"= (\d+) creates/s",
}
print("the control plane (bench/serve.py, %d rounds each, alternating)" % rounds)
print("  %-36s %18s %18s %s" % ("", "before", "after", "ratio [range]"))
for name, pat in pats.items():
    v = {}
    for who in ("before", "after"):
        xs = []
        for i in range(1, rounds + 1):
            try:
                m = re.search(pat, open("%s/%s.%d" % (out, who, i)).read())
            except OSError:
                m = None
            if m:
                xs.append(float(m.group(1)))
        v[who] = xs
    if not v["before"] or not v["after"]:
        print("  %-36s (not measured: see %s)" % (name, out))
        continue
    mb, ma = statistics.median(v["before"]), statistics.median(v["after"])
    fmt = lambda xs, m: "%.2f [%.2f-%.2f]" % (m, min(xs), max(xs))
    pr = [a / b for a, b in zip(v["after"], v["before"]) if b]
    print("  %-36s %18s %18s %6.3f [%.3f-%.3f]" % (name, fmt(v["before"], mb), fmt(v["after"], ma),
          statistics.median(pr), min(pr), max(pr)))
print("  (median [min-max] over the rounds; the ratio after/before taken within each round, its median and")
print("  range: below 1 is faster for times, above 1 is faster for rates)")
EOF
