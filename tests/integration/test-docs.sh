#!/usr/bin/env bash
# test-docs.sh — the man page renders without warnings and documents every option that the
# --help of each verb prints, so --help and docs/sandboxer.1 stay true to each other.
. "$(dirname "$0")/lib.sh"

MAN=$SBX_SRC/docs/sandboxer.1
[ -r "$MAN" ] || skip_all "no $MAN"
[ -x "$SANDBOXER" ] || skip_all "no sandboxer binary at $SANDBOXER"

# groff at its strictest (-ww: all warnings), then man(1) as a reader gets it.
if command -v groff >/dev/null 2>&1; then
        warnings=$(groff -man -ww -z "$MAN" 2>&1)
        is "$warnings" "" "groff -man -ww renders the man page without warnings"
else
        skip "groff is not installed"
fi
if command -v man >/dev/null 2>&1; then
        warnings=$(MANWIDTH=80 man --warnings -l "$MAN" 2>&1 >/dev/null)
        is "$warnings" "" "man --warnings renders the man page without warnings"
        text=$(MANWIDTH=80 man -l "$MAN" 2>/dev/null)
else
        skip "man is not installed"
        text=$(sed 's/\\-/-/g' "$MAN")
fi
for section in NAME SYNOPSIS DESCRIPTION "EXIT STATUS" ENVIRONMENT FILES REPORT EXAMPLES "SEE ALSO"; do
        grep -q "^$section\$" <<<"$text"
        ok $? "the man page has a $section section"
done
for code in 124 125 126 127 128+N; do
        grep -qE "^ +${code//+/\\+}( |\$)" <<<"$text"
        ok $? "EXIT STATUS documents $code"
done
for var in SANDBOXER_BACKEND SANDBOXER_PROFILE_PATH SANDBOXER_INIT TMPDIR HOME PATH LANG SANDBOXER_WORKSPACE \
        /etc/sandboxer/policy.yaml /etc/sandboxer/profiles; do
        grep -qF -- "$var" <<<"$text"
        ok $? "the man page mentions $var"
done

# Every long option each verb's --help prints appears in the man page (as rendered text).
# The source has `\-\-name`; the rendered text has `--name`.
for verb in run doctor "profile validate" "profile list" "profile show" gc serve supervise create ls get exec cp extend recreate destroy events; do
        # shellcheck disable=SC2086 # the verb may be two words
        help=$("$SANDBOXER" $verb --help 2>&1)
        rc=$?
        is "$rc" 0 "sandboxer $verb --help exits 0"
        opts=$(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u)
        [ -n "$opts" ]
        ok $? "sandboxer $verb --help lists options" || continue
        missing=()
        for o in $opts; do
                grep -qE -- "(^|[^a-z0-9-])$o([^a-z0-9-]|\$)" <<<"$text" || missing+=("$o")
        done
        is "${missing[*]}" "" "every option of 'sandboxer $verb --help' is in the man page"
done

# The run options in the parser itself (src/cli/run.c), even those --help forgets.
if [ -r "$SBX_SRC/src/cli/run.c" ]; then
        missing=()
        # shellcheck disable=SC2013 # option names are single words
        for o in $(grep -oE '^\s*\{ "[a-z][a-z0-9-]*", (no|required|optional)_argument' "$SBX_SRC/src/cli/run.c" |
                sed -E 's/.*"([^"]+)".*/\1/'); do
                grep -qE -- "(^|[^a-z0-9-])--$o([^a-z0-9-]|\$)" <<<"$text" || missing+=("--$o")
        done
        is "${missing[*]}" "" "every option src/cli/run.c parses is in the man page"
fi

# The verbs of `sandboxer --help` are all described.
verbs=$("$SANDBOXER" --help 2>&1 | awk '/^Verbs:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$verbs" ]
ok $? "sandboxer --help lists verbs"
for v in $verbs; do
        grep -qE "^ +$v( |\$)" <<<"$text"
        ok $? "the man page describes the verb $v"
done

# The layout the README describes holds (issue 21): no source file under src/ over 1,200 lines,
# and the control plane's SQL only in its store files (store.c, store-sandboxes.c).
if [ -d "$SBX_SRC/src" ]; then
        long=$(find "$SBX_SRC/src" -name '*.[ch]' -exec wc -l {} + | awk '$2 != "total" && $1 > 1200 { print $2 ": " $1 }')
        is "$long" "" "no source file under src/ is over 1,200 lines"
        sql=$(grep -rlE '"(SELECT|INSERT|UPDATE|DELETE FROM|BEGIN|COMMIT)[ "]' "$SBX_SRC/src" --include='*.c' |
                grep -vE '/src/daemon/store(-[a-z]+)?\.c$')
        is "$sql" "" "the control plane's SQL is in its store files only"
fi

done_testing
