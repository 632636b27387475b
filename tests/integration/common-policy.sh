# common-policy.sh — a test policy: the default policy, plus per-request overrides of every limit
# (so tests can set small limits) and memory/cpus/scratch best-effort (an unprivileged user here has no
# cgroup delegation). Sourced after lib.sh; sets POL.
POL=$SBX_TMP/policy.yaml
cat >"$POL" <<'YAML'
version: 1
modes:
  balanced:
    limits: { timeout_s: 45, budget_s: 180, cpus: 2, memory_mb: 1024, pids: 256, output_mb: 10, scratch_mb: 512 }
    backends: [native, landlock]
  strict:
    limits: { timeout_s: 60, budget_s: 240, cpus: 2, memory_mb: 1536, pids: 128, output_mb: 10, scratch_mb: 512 }
    backends: [microvm]
overrides: { per_request: true, allowed: [timeout_s, budget_s, output_mb, pids, scratch_mb, memory_mb, cpus] }
enforce: { best_effort: [memory_mb, cpus, scratch_mb] }
run_as: 65534
strict: { required_when: [] }
filesystem: { write_allowed: [] }
network: { egress_allowed: [], allow_host: false }
process: { long_lived_allowed: true }
YAML
chmod 644 "$POL"
