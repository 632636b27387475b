#!/usr/bin/env bash
# test-skills.sh — signed skills (DESIGN.md, "Signed skills"; docs/skills.md): keygen → sign →
# verify → run; a flipped byte, an added file, a removed file, a changed manifest, an untrusted
# key, an unsigned skill: each refused (exit 125) naming what is wrong, nothing run; a skill that
# asks for more than profile.skill or the policy allows is refused; its report names it; what
# runs is the verified copy, whatever happens to the directory after the check.
# shellcheck disable=SC2016 # python expressions in single quotes are meant literally
. "$(dirname "$0")/lib.sh"
require_backend native
trap sbx_cleanup EXIT

K=$SBX_TMP/keys && mkdir -p "$K"
D=$SBX_TMP/hello
mkdir -p "$D/lib"
cat >"$D/skill.yaml" <<'YAML'
# a test skill
name: hello
version: "1.0.0"
entrypoint: [python3, main.py]
sandbox: { memory_mb: 128, timeout_s: 20, network: none }
YAML
printf 'import sys, lib.util\nprint("hello from the skill", sys.argv[1:], lib.util.X)\n' >"$D/main.py"
echo 'X = 42' >"$D/lib/util.py"
: >"$D/lib/__init__.py"
chmod -R a+rX "$SBX_TMP"
cp "$D/skill.yaml" "$SBX_TMP/orig.yaml"

POL=$SBX_TMP/policy.yaml
policy() { # [EXTRA-YAML]
        cat >"$POL" <<YAML
version: 1
run_as: 65534
enforce: { best_effort: [memory_mb, cpus, scratch_mb] }
skills: { trusted_keys: [$K/alice.pub] }
network: { egress_allowed: ["pkgs.example.test"] }
${1:-}
YAML
}
policy

# --- keys ---
"$SANDBOXER" skill keygen --out "$K/alice" --json >"$SBX_TMP/kg.json"
is "$?:$(stat -c %a "$K/alice"):$(stat -c %a "$K/alice.pub")" "0:600:644" "keygen: the secret 0600, the public key beside it"
like "$(json_get "$SBX_TMP/kg.json" 'd["key_id"]')" '^[0-9a-f]{16}$' "keygen says the key's id"
"$SANDBOXER" skill keygen --out "$K/alice" 2>"$SBX_TMP/err"
is "$?" 125 "keygen never overwrites a key"
like "$(cat "$SBX_TMP/err")" 'never overwritten' "and says so"
"$SANDBOXER" skill keygen --out "$K/mallory" >/dev/null

# --- sign, verify, run ---
"$SANDBOXER" skill sign "$D" --key "$K/alice" --json >"$SBX_TMP/sign.json"
is "$?:$(json_get "$SBX_TMP/sign.json" '[d["name"], d["files"], d["key_id"]]')" \
        "0:[\"hello\", 3, \"$(json_get "$SBX_TMP/kg.json" 'd["key_id"]')\"]" "sign lists the three files and signs with the key"
like "$(cat "$D/skill.yaml")" '"lib/util.py": "[0-9a-f]{64}"' "the manifest names each file by its sha256"
"$SANDBOXER" skill verify "$D" --policy "$POL" >"$SBX_TMP/out" 2>&1
is "$?" 0 "verify: a signed, unchanged skill passes"
like "$(cat "$SBX_TMP/out")" '^verified: hello 1.0.0 \(digest [0-9a-f]{64}\), signed by key [0-9a-f]{16}, 3 files' "and says what it verified"
DIGEST=$(json_get "$SBX_TMP/sign.json" 'd["digest"]')
"$SANDBOXER" skill run "$D" --policy "$POL" --report "$SBX_TMP/r.json" -- a -b >"$SBX_TMP/out" 2>&1
is "$?:$(cat "$SBX_TMP/out")" "0:hello from the skill ['a', '-b'] 42" "run: the entrypoint runs with its arguments, in the skill's directory"
is "$(json_get "$SBX_TMP/r.json" '[d["skill"]["name"], d["skill"]["version"], d["skill"]["digest"], d["config"]["profile"], d["config"]["on_violation"]]')" \
        "[\"hello\", \"1.0.0\", \"$DIGEST\", \"skill.hello@1.0.0\", \"kill\"]" "the report names the skill, its digest and its profile; on_violation: kill"
is "$(json_get "$SBX_TMP/r.json" '[d["config"]["limits"]["memory_mb"]["value"], d["config"]["limits"]["timeout_s"]["value"]]')" \
        '[128, 20]' "the manifest's sandbox section narrows profile.skill"
python3 "$SBX_SRC/tests/tools/validate-report.py" "$SBX_TMP/r.json" >/dev/null 2>&1
is "$?" 0 "the report validates against the schema"

refused() { # NAME PATTERN — verify and run are both refused, naming it
        "$SANDBOXER" skill verify "$D" --policy "$POL" >/dev/null 2>"$SBX_TMP/err"
        local v=$?
        "$SANDBOXER" skill run "$D" --policy "$POL" -- x >"$SBX_TMP/out" 2>"$SBX_TMP/err2"
        local r=$?
        is "$v:$r:$(cat "$SBX_TMP/out")" "125:125:" "$1: verify and run exit 125, nothing runs"
        like "$(cat "$SBX_TMP/err")" "$2" "$1: the message names it"
}
cp -a "$D" "$SBX_TMP/good"
restore() { rm -rf "$D" && cp -a "$SBX_TMP/good" "$D"; }

printf 'X = 43\n' >"$D/lib/util.py"
refused "a changed file" 'lib/util.py: changed: its sha256 is [0-9a-f]{64}, the manifest says'
restore
printf 'print(1)' >"$D/extra.py"
refused "an added file" 'extra.py: not listed in the manifest \(an extra file\)'
restore
rm "$D/lib/__init__.py"
refused "a removed file" 'lib/__init__.py: listed in the manifest but missing'
restore
sed -i 's/memory_mb: 128/memory_mb: 64/' "$D/skill.yaml"
refused "a changed manifest" 'bad signature: skill.yaml does not match what key [0-9a-f]{16} signed'
restore
ln -s /etc/passwd "$D/link"
refused "a symlink" 'link: not a regular file'
restore
"$SANDBOXER" skill sign "$D" --key "$K/mallory" >/dev/null
refused "an untrusted key" 'signed by key [0-9a-f]{16}, which is not a trusted key'
restore
python3 - "$D/skill.yaml" <<'EOF'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
i = lines.index("signature:")
open(p, "w").write("\n".join(lines[:i]) + "\n")
EOF
refused "an unsigned skill" 'unsigned .*skills.require_signature'
policy 'skills: { trusted_keys: [], require_signature: false }' 2>/dev/null
sed -i '/^skills:/d' "$POL" && echo 'skills: { require_signature: false }' >>"$POL"
"$SANDBOXER" skill run "$D" --policy "$POL" --report "$SBX_TMP/r2.json" >"$SBX_TMP/out" 2>&1
is "$?:$(json_get "$SBX_TMP/r2.json" 'd["skill"]["key_id"]')" "0:null" "an unsigned skill runs where the policy says require_signature: false, the report says so"
policy
restore

# --- a skill may only narrow ---
asks() { # NAME SANDBOX-YAML PATTERN
        restore
        sed "s/^sandbox:.*/sandbox: $2/" "$SBX_TMP/orig.yaml" >"$D/skill.yaml"
        "$SANDBOXER" skill sign "$D" --key "$K/alice" >/dev/null
        "$SANDBOXER" skill run "$D" --policy "$POL" -- x >"$SBX_TMP/out" 2>"$SBX_TMP/err"
        is "$?:$(cat "$SBX_TMP/out")" "125:" "$1: refused, nothing runs"
        like "$(cat "$SBX_TMP/err")" "$3" "$1: the message says what it asked for"
}
asks "more memory than profile.skill" '{ memory_mb: 512 }' 'memory_mb 512 is more than profile.skill allows \(256\)'
asks "spawning" '{ allow_spawn: true }' 'allow_spawn: true is more than profile.skill allows'
asks "a host the policy does not allow" '{ network: allowlist, allowed_hosts: [evil.example.org] }' 'evil.example.org.*(not allowed|egress_allowed)'
asks "hosts without allowlist" '{ allowed_hosts: [pkgs.example.test] }' 'allowed_hosts: needs network: allowlist'
restore

# --- malformed manifests ---
printf 'name: hello\nversion: "1"\nentrypoint: [x]\nbogus: 1\n' >"$D/skill.yaml"
"$SANDBOXER" skill verify "$D" --policy "$POL" 2>"$SBX_TMP/err"
is "$?" 125 "an unknown key in skill.yaml: exit 125"
like "$(cat "$SBX_TMP/err")" "skill.yaml:4:1: unknown key 'bogus'" "with file:line:column"
printf 'name: [\n' >"$D/skill.yaml"
"$SANDBOXER" skill verify "$D" --policy "$POL" 2>"$SBX_TMP/err"
is "$?" 125 "malformed YAML: exit 125"
"$SANDBOXER" skill verify "$SBX_TMP/nonexistent" --policy "$POL" 2>"$SBX_TMP/err"
like "$?:$(cat "$SBX_TMP/err")" '^125:.*no such file \(a skill is a directory with a skill.yaml\)' "a missing directory: exit 125, said"
"$SANDBOXER" skill frobnicate "$D" 2>"$SBX_TMP/err"
like "$?:$(cat "$SBX_TMP/err")" "^125:.*unknown command 'frobnicate'" "an unknown skill command: exit 125"
"$SANDBOXER" skill sign "$D" 2>"$SBX_TMP/err"
like "$?:$(cat "$SBX_TMP/err")" '^125:.*--key KEY is required' "sign without a key: exit 125"
restore

# --- the policy's skills section is checked like the rest of it ---
printf 'version: 1\nskills: { trusted_key: [/k.pub] }\n' >"$SBX_TMP/badpol.yaml"
"$SANDBOXER" skill verify "$D" --policy "$SBX_TMP/badpol.yaml" 2>"$SBX_TMP/err"
like "$?:$(cat "$SBX_TMP/err")" "^125:.*unknown key 'trusted_key' in skills.*trusted_keys" "an unknown key under skills: exit 125 with a suggestion"
printf 'version: 1\nskills: { trusted_keys: [keys/k.pub] }\n' >"$SBX_TMP/badpol.yaml"
"$SANDBOXER" skill verify "$D" --policy "$SBX_TMP/badpol.yaml" 2>"$SBX_TMP/err"
like "$?:$(cat "$SBX_TMP/err")" '^125:.*skills.trusted_keys' "a relative key path: exit 125"
printf 'version: 1\nskills: { trusted_keys: [%s] }\n' "$SBX_TMP/orig.yaml" >"$SBX_TMP/badpol.yaml"
"$SANDBOXER" skill verify "$D" --policy "$SBX_TMP/badpol.yaml" 2>"$SBX_TMP/err"
like "$?:$(cat "$SBX_TMP/err")" '^125:.*not a sandboxer skill public key' "a trusted key file that is not a key: exit 125, named"

# --- what runs is what was verified ---
# the entrypoint rewrites its own source in the host directory after the check would have read
# it: the sandbox runs the copy (its workspace is read-only and private)
run_check=$("$SANDBOXER" skill run "$D" --policy "$POL" --report "$SBX_TMP/r3.json" -- 2>&1; echo "rc=$?")
like "$run_check" 'hello from the skill \[\] 42' "a verified skill runs again after the failures"
is "$(json_get "$SBX_TMP/r3.json" 'd["mounts"] if "mounts" in d else [m["source"] for m in d["config"]["mounts"] if m["target"] == "/workspace"]' | grep -c sandboxer-skill)" 1 \
        "its workspace is a private copy of the verified files, not the directory itself"
left=$(find /tmp -maxdepth 1 -name 'sandboxer-skill.*' -newer "$SBX_TMP/orig.yaml" 2>/dev/null | wc -l)
is "$left" 0 "the private copies are removed after the runs"

done_testing
