#!/usr/bin/env bash
# test-musl-deps.sh — bad input to scripts/musl-deps.sh and to the build's musl options gets a
# clear error and a non-zero exit, and builds nothing. TAP.
. "$(dirname "$0")/lib.sh"

S=$SBX_SRC/scripts/musl-deps.sh
[ -r "$S" ] || skip_all "no $S"

out=$(bash "$S" --bogus 2>&1)
is "$?" 2 "an unknown option exits 2"
like "$out" "unknown option '--bogus'" "and names the option"

out=$(bash "$S" --prefix 2>&1)
ok $([ $? -ne 0 ] && echo 0 || echo 1) "--prefix without a directory fails"
like "$out" "needs a directory" "and says what is missing"

empty=$SBX_TMP/empty-prefix
mkdir -p "$empty"
bash "$S" --check --prefix "$empty" >/dev/null 2>&1
is "$?" 1 "--check on a prefix without the libraries exits 1"
is "$(ls -A "$empty")" "" "and builds nothing there"

# a stamp from another build is not this one
echo stale >"$empty/.built"
bash "$S" --check --prefix "$empty" >/dev/null 2>&1
is "$?" 1 "--check: a stale stamp does not count"

bash "$S" --help >"$SBX_TMP/help" 2>&1
is "$?" 0 "--help exits 0"
like "$(cat "$SBX_TMP/help")" "musl-deps.sh \\[--prefix DIR\\]" "--help prints the usage"

# the build refuses a relative musl_deps instead of resolving it differently in two places
if command -v meson >/dev/null 2>&1 && [ -w "$SBX_TMP" ]; then
        out=$(cd "$SBX_SRC" && meson setup "$SBX_TMP/b-rel" -Dmusl_deps=relative/dir 2>&1)
        ok $([ $? -ne 0 ] && echo 0 || echo 1) "meson setup -Dmusl_deps=relative/dir fails"
        like "$out" "musl_deps must be an absolute path" "and says why"
        out=$(cd "$SBX_SRC" && meson setup "$SBX_TMP/b-musl" -Dcli_libc=musl -Dmusl_deps="$empty" 2>&1)
        ok $([ $? -ne 0 ] && echo 0 || echo 1) "-Dcli_libc=musl without the libraries fails"
        like "$out" "scripts/musl-deps.sh" "and names the script that builds them"
else
        skip "no meson" 4
fi
done_testing
