#!/usr/bin/env python3
"""startup.py — `sandboxer run` against the floor prototype, bwrap, unshare and the bare command,
run INTERLEAVED: each round runs every command once, in an order that alternates round to round,
so that a host drifting over the minutes (ours do, by ±30 %) moves all of them alike. Prints each
command's median, the ratio of medians to the floor and to bwrap, and the median of the per-round
ratios (the figure that holds on a noisy host). A benchmark, not a test: it never fails on a slow
figure. On a cgroup v1 host the floor moves its child into its groups by pid (cgroup.procs), which
takes the kernel's cgroup_threadgroup_rwsem and can wait for an RCU grace period when runs are
spaced out (interleaved, as here): "floor, self-joined" is the same floor with the child writing
"0" to its tasks files itself, as sandboxer does. `../shared/bench/floor.sh` measures the same set with hyperfine, one command after another.

  python3 bench/startup.py [--rounds N] [--cmd true|python|both] [--backends native,landlock]
                           [--before BIN] [--json FILE]

--steps measures the floor with sandboxer's pieces added one at a time instead (what
bench/floor-steps.sh runs). --before BIN adds another sandboxer binary (a build of an earlier commit) to the same rounds, so
that a change is measured before and after in one run.

As root on a cgroup v1 or v2 host; needs gcc, libseccomp-dev and bubblewrap (apt). The floor is
bench/floor-steps.c with no step added, which is ../shared/bench/floor-proto.c's `-A -f -l -s -r`
with cgroup v1 leaves (or, on a cgroup2-only host, floor-proto.c itself with -c2).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_floor(tmp):
    out = os.path.join(tmp, "floor")
    v2_only = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
    src = os.path.join(ROOT, "bench", "floor-steps.c")
    args = []
    if v2_only:
        src = os.path.join(ROOT, "..", "shared", "bench", "floor-proto.c")
        args = ["-A", "-f", "-l", "-s", "-r", "-c2"]
        if not os.path.exists(src):
            sys.exit("startup.py: a cgroup2-only host needs ../shared/bench/floor-proto.c for the floor")
    for link in (["-static", src, "-l:libseccomp.a"], [src, "-lseccomp"]):
        if subprocess.run(["gcc", "-O2", "-o", out] + link, stderr=subprocess.DEVNULL).returncode == 0:
            os.makedirs("/tmp/proto-rw", exist_ok=True)
            os.makedirs("/tmp/proto-root", exist_ok=True)
            return [out] + args
    sys.exit("startup.py: cannot build the floor prototype (apt-get install gcc libseccomp-dev)")


def run_once(argv, devnull):
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, st = os.waitpid(pid, 0)
    dt = (time.perf_counter() - t) * 1e3
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit("startup.py: %s failed (exit %d)" % (" ".join(argv), os.waitstatus_to_exitcode(st)))
    return dt


def measure(cases, rounds):
    devnull = os.open("/dev/null", os.O_RDWR)
    for _, argv in cases:  # warm up: page cache, the seccomp program cache
        for _ in range(5):
            run_once(argv, devnull)
    times = {name: [] for name, _ in cases}
    for i in range(rounds):
        order = cases if i % 2 == 0 else list(reversed(cases))
        for name, argv in order:
            times[name].append(run_once(argv, devnull))
    return times


def table(title, times, refs):
    """Medians, each against every reference: the ratio of medians and the median of per-round
    ratios (paired)."""
    med = {k: statistics.median(v) for k, v in times.items()}
    print("\n%s (%d rounds)" % (title, len(next(iter(times.values())))))
    head = "%-34s %9s" % ("", "median ms")
    for r in refs:
        head += " %14s %9s" % ("x " + r[:12], "paired")
    print(head)
    rows = {}
    for k, v in times.items():
        rows[k] = {"median_ms": round(med[k], 3)}
        line = "%-34s %9.2f" % (k, med[k])
        for r in refs:
            paired = statistics.median(a / b for a, b in zip(v, times[r]))
            rows[k]["x " + r] = round(med[k] / med[r], 3)
            rows[k]["paired x " + r] = round(paired, 3)
            line += " %14.2f %9.3f" % (med[k] / med[r], paired)
        print(line)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--cmd", choices=["true", "python", "both"], default="both")
    ap.add_argument("--backends", default="native,landlock")
    ap.add_argument("--before", help="another sandboxer binary measured in the same rounds")
    ap.add_argument("--steps", action="store_true",
                    help="the floor with sandboxer's pieces added one at a time (bench/floor-steps.c), "
                         "/bin/true only, beside sandboxer run and bwrap")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.rounds < 20:
        sys.exit("startup.py: --rounds must be >= 20")
    if os.geteuid() != 0:
        sys.exit("startup.py: run as root (the floor makes cgroup leaves)")
    for tool, pkg in (("gcc", "gcc"), ("bwrap", "bubblewrap")):
        if not shutil.which(tool):
            sys.exit("startup.py: %s missing (apt-get install %s)" % (tool, pkg))
    sbx = os.path.realpath(os.environ.get("SANDBOXER", os.path.join(ROOT, "build/src/cli/sandboxer")))
    if not os.access(sbx, os.X_OK):
        sys.exit("startup.py: no sandboxer at %s (build first, or set SANDBOXER)" % sbx)
    before = os.path.realpath(a.before) if a.before else None
    if before and not os.access(before, os.X_OK):
        sys.exit("startup.py: --before %s is not an executable" % a.before)
    out = {"host": os.uname().release, "load": os.getloadavg()[0]}
    print("# %s, load %.2f, %s" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.getloadavg()[0], sbx))
    with tempfile.TemporaryDirectory() as tmp:
        floor = build_floor(tmp)
        bw = shutil.which("bwrap")
        bwrap = [bw, "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64",
                 "/lib64", "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                 "--unshare-all", "--die-with-parent"]
        if a.steps:
            if len(floor) != 1:
                sys.exit("startup.py: --steps needs a cgroup v1 host (bench/floor-steps.c)")
            steps = [("floor", ""), ("self-joined cgroups", "-S"), ("+init (fork, wait)", "-S -i"),
                     ("+init exec'd", "-S -x"), ("+/dev", "-S -x -d"), ("+/etc", "-S -x -d -e"),
                     ("+scratch limits", "-S -x -d -e -t"), ("+loopback", "-S -x -d -e -t -o"),
                     ("+cpu group", "-S -x -d -e -t -o -C"), ("+seccomp listener", "-S -x -d -e -t -o -C -L"),
                     ("+report", "-S -x -d -e -t -o -C -L -R")]
            cases = [(n, floor + f.split() + ["--", "/bin/true"]) for n, f in steps]
            cases += [("sandboxer run", [sbx, "run", "--", "/bin/true"]), ("bwrap", bwrap + ["/bin/true"]),
                      ("bare", ["/bin/true"])]
            times = measure(cases, a.rounds)
            rows = table("the floor, step by step (/bin/true)", times, ["floor", "bwrap"])
            print("\n%-34s %9s %11s" % ("step", "adds (ms)", "paired (ms)"))
            for (prev, _), (n, _) in zip(steps, steps[1:]):
                d = statistics.median(times[n]) - statistics.median(times[prev])
                pd = statistics.median(x - y for x, y in zip(times[n], times[prev]))
                rows[n]["adds_ms"], rows[n]["adds_paired_ms"] = round(d, 3), round(pd, 3)
                print("%-34s %+9.3f %+11.3f" % (n, d, pd))
            last = steps[-1][0]
            pd = statistics.median(x - y for x, y in zip(times["sandboxer run"], times[last]))
            print("%-34s %+9.3f %+11.3f" % ("sandboxer run vs the last step",
                                             statistics.median(times["sandboxer run"]) - statistics.median(times[last]), pd))
            out["steps"] = rows
        elif a.cmd in ("true", "both"):
            cases = [("floor", floor + ["--", "/bin/true"])]
            if len(floor) == 1:  # floor-steps: the same floor with the child joining its groups itself
                cases.append(("floor, self-joined (-S)", floor + ["-S", "--", "/bin/true"]))
            cases.append(("sandboxer run", [sbx, "run", "--", "/bin/true"]))
            if before:
                cases.append(("sandboxer run (before)", [before, "run", "--", "/bin/true"]))
            cases += [("bwrap", bwrap + ["/bin/true"]),
                     ("unshare -Urnpf", [shutil.which("unshare"), "-Urnpf", "--mount-proc", "/bin/true"]),
                     ("bare", ["/bin/true"])]
            refs = ["floor"] + (["floor, self-joined (-S)"] if len(floor) == 1 else []) + ["bwrap"]
            out["true"] = table("/bin/true", measure(cases, a.rounds), refs)
        if a.cmd in ("python", "both") and not a.steps:
            py = "/usr/bin/python3"
            cases = [("bare", [py, "-c", "pass"])]
            for b in a.backends.split(","):
                extra = ["--profile", "profile.python"] if b == "landlock" else []
                cases.append(("sandboxer run --backend " + b, [sbx, "run", "--backend", b] + extra +
                              ["--", py, "-c", "pass"]))
                if before:
                    cases.append(("  (before) --backend " + b, [before, "run", "--backend", b] + extra +
                                  ["--", py, "-c", "pass"]))
            cases.append(("bwrap", bwrap + [py, "-c", "pass"]))
            out["python"] = table("python3 -c pass", measure(cases, a.rounds), ["bare"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
