#!/usr/bin/env bash
# musl-deps.sh — libseccomp, libyaml and jansson built against musl, for the `sandboxer` CLI.
#
#   bash scripts/musl-deps.sh [--prefix DIR] [--check]
#
# Why: glibc's start-up probes the CPU with ~80 `cpuid` instructions before main(), and on a VM
# each one traps to the hypervisor: 0.7 ms of every `sandboxer run` on the development VM, most of
# the CLI's own start. musl's start-up probes nothing (0.14 ms). The CLI links libseccomp, libyaml
# and jansson (the docker backend reads the Engine API's JSON with it) statically, and Debian
# ships those only for glibc, so this builds Debian's own sources
# of the same versions (the .orig tarballs and Debian's patches, from deb.debian.org, checked
# against the SHA-256 sums below) with musl-gcc into DIR (default: .cache/musl in the source
# tree, where meson looks; -Dmusl_deps=DIR elsewhere). Nothing is vendored in the repository.
#
# Needs musl-tools, gperf, make and curl (scripts/setup.sh installs them). Idempotent: a stamp
# file names what was built. When the sources cannot be had (offline, or Debian has moved on to
# another version), it says so and exits 1; the build then links the CLI against glibc as before
# (meson's summary says which), which works the same, only slower to start. --check exits 0 when
# DIR already holds this script's build, 1 otherwise, and builds nothing.
set -euo pipefail

CALLER_PWD=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
PREFIX=$ROOT/.cache/musl
check=0
while [ $# -gt 0 ]; do
        case $1 in
        --prefix) PREFIX=${2:?--prefix needs a directory}; shift ;;
        --prefix=*) PREFIX=${1#--prefix=} ;;
        --check) check=1 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "musl-deps.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        esac
        shift
done
case $PREFIX in /*) ;; *) PREFIX=$CALLER_PWD/$PREFIX ;; esac
say() { printf 'musl-deps: %s\n' "$*"; }
fail() { printf 'musl-deps: %s\n' "$*" >&2; exit 1; }

POOL=http://deb.debian.org/debian/pool/main
# name|url|sha256 — Debian 12's versions (libseccomp 2.5.4-1+deb12u1, libyaml 0.2.5-1, jansson 2.14-2)
SOURCES=(
        "libseccomp_2.5.4.orig.tar.gz|$POOL/libs/libseccomp/libseccomp_2.5.4.orig.tar.gz|d82902400405cf0068574ef3dc1fe5f5926207543ba1ae6f8e7a1576351dcbdb"
        "libseccomp_2.5.4-1+deb12u1.debian.tar.xz|$POOL/libs/libseccomp/libseccomp_2.5.4-1+deb12u1.debian.tar.xz|665fc6ad1b9887207b0af1a293a2d7975e2df503a2618d1808b970081f9672f6"
        "libyaml_0.2.5.orig.tar.gz|$POOL/liby/libyaml/libyaml_0.2.5.orig.tar.gz|fa240dbf262be053f3898006d502d514936c818e422afdcf33921c63bed9bf2e"
        "jansson_2.14.orig.tar.gz|$POOL/j/jansson/jansson_2.14.orig.tar.gz|c739578bf6b764aa0752db9a2fdadcfe921c78f1228c7ec0bb47fa804c55d17b"
        "jansson_2.14-2.debian.tar.xz|$POOL/j/jansson/jansson_2.14-2.debian.tar.xz|e89fe4fd8221f6934ddb50f2e7f8404311928d0e23e49a5599f3d3d14ee8cb88"
)
STAMP_TEXT="libseccomp 2.5.4-1+deb12u1, libyaml 0.2.5-1, jansson 2.14-2, $(musl-gcc --version 2>/dev/null | head -n1 || echo no-musl-gcc)"
STAMP=$PREFIX/.built
if [ "$(cat "$STAMP" 2>/dev/null)" = "$STAMP_TEXT" ] && [ -f "$PREFIX/lib/libseccomp.a" ] && [ -f "$PREFIX/lib/libyaml.a" ] &&
        [ -f "$PREFIX/lib/libjansson.a" ]; then
        [ "$check" = 1 ] || say "$PREFIX holds libseccomp, libyaml and jansson for musl"
        exit 0
fi
[ "$check" = 0 ] || exit 1

for tool in musl-gcc gperf make curl; do
        command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (apt-get install musl-tools gperf make curl)"
done
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
[ -d /usr/include/linux ] && [ -d "/usr/include/$multiarch/asm" ] ||
        fail "the kernel's uapi headers are missing (apt-get install linux-libc-dev)"

work=$(mktemp -d /tmp/sbx-musl-deps.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=$work/build.log
: >"$log"
say "fetching Debian's sources of libseccomp, libyaml and jansson"
for s in "${SOURCES[@]}"; do
        IFS='|' read -r name url sum <<<"$s"
        curl -fsS --retry 2 --connect-timeout 10 -o "$work/$name" "$url" ||
                fail "cannot fetch $url: offline, or Debian has replaced this version (then update SOURCES in this script); the CLI will be linked against glibc"
        echo "$sum  $work/$name" | sha256sum -c --quiet - >/dev/null 2>&1 ||
                fail "$name does not match its SHA-256 ($sum); not building it"
done

# musl has no kernel headers of its own: the host's uapi (linux/, asm/, asm-generic/) only.
mkdir -p "$work/uapi"
ln -s /usr/include/linux "$work/uapi/linux"
ln -s /usr/include/asm-generic "$work/uapi/asm-generic"
ln -s "/usr/include/$multiarch/asm" "$work/uapi/asm"

# staged beside the prefix (same file system: the final rename is atomic), the stamp written last
mkdir -p "$(dirname "$PREFIX")"
stage=$(mktemp -d "$(dirname "$PREFIX")/.musl-stage.XXXXXX")
trap 'rm -rf "$work" "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/include"
# A step that fails must fail the build: set -e is not in force in a subshell run as the left
# side of ||, so each runs on its own line and its status is taken after.
step() { # step NAME FUNCTION
        local rc=0
        set +e
        ( set -e; "$2" ) >>"$log" 2>&1
        rc=$?
        set -e
        [ "$rc" = 0 ] || { tail -n 30 "$log" >&2; fail "building $1 failed (log above)"; }
}
build_seccomp() {
        cd "$work"
        tar xzf libseccomp_2.5.4.orig.tar.gz
        tar xJf libseccomp_2.5.4-1+deb12u1.debian.tar.xz
        cd libseccomp-2.5.4
        while read -r p; do
                case $p in '' | '#'*) continue ;; esac
                patch -p1 -s <"../debian/patches/$p"
        done <../debian/patches/series
        CC=musl-gcc CFLAGS="-O2 -fPIE -isystem $work/uapi" ./configure -q --prefix="$stage" \
                --disable-shared --enable-static --disable-python
        make -s -j"$(nproc)" -C src
        make -s -C src install-libLTLIBRARIES
        make -s -C include install-includeHEADERS
}
build_yaml() {
        cd "$work"
        tar xzf libyaml_0.2.5.orig.tar.gz
        cd libyaml-0.2.5
        for f in src/*.c; do
                musl-gcc -O2 -fPIE -Iinclude -DYAML_VERSION_MAJOR=0 -DYAML_VERSION_MINOR=2 \
                        -DYAML_VERSION_PATCH=5 '-DYAML_VERSION_STRING="0.2.5"' -c "$f" -o "${f%.c}.o"
        done
        ar rcs "$stage/lib/libyaml.a" src/*.o
        cp include/yaml.h "$stage/include/"
}
# jansson's own build is autotools without a generated configure (or cmake): its twelve sources
# are compiled directly, with the two headers configure would make written for Linux and musl.
build_jansson() {
        cd "$work"
        tar xzf jansson_2.14.orig.tar.gz
        mkdir -p jansson-debian
        tar xJf jansson_2.14-2.debian.tar.xz -C jansson-debian
        cd jansson-2.14
        while read -r p; do
                case $p in '' | '#'*) continue ;; esac
                patch -p1 -s <"../jansson-debian/debian/patches/$p"
        done <../jansson-debian/debian/patches/series
        sed -e 's/@json_inline@/inline/' -e 's/@json_have_long_long@/1/' -e 's/@json_have_localeconv@/1/' \
                -e 's/@json_have_atomic_builtins@/1/' -e 's/@json_have_sync_builtins@/1/' \
                src/jansson_config.h.in >src/jansson_config.h
        ! grep -q '@json_' src/jansson_config.h
        {
                for d in HAVE_STDINT_H HAVE_UNISTD_H HAVE_FCNTL_H HAVE_SYS_STAT_H HAVE_SYS_TIME_H \
                        HAVE_SYS_TYPES_H HAVE_SCHED_H HAVE_OPEN HAVE_READ HAVE_CLOSE HAVE_GETPID \
                        HAVE_GETTIMEOFDAY HAVE_SCHED_YIELD HAVE_LOCALECONV USE_URANDOM \
                        HAVE_ATOMIC_BUILTINS HAVE_SYNC_BUILTINS; do
                        echo "#define $d 1"
                done
        } >src/jansson_private_config.h
        for f in src/*.c; do
                musl-gcc -O2 -fPIE -DHAVE_CONFIG_H -Isrc -c "$f" -o "${f%.c}.o"
        done
        ar rcs "$stage/lib/libjansson.a" src/*.o
        cp src/jansson.h src/jansson_config.h "$stage/include/"
}
say "building libseccomp 2.5.4 (with Debian's patches) against musl"
step libseccomp build_seccomp
say "building libyaml 0.2.5 against musl"
step libyaml build_yaml
say "building jansson 2.14 (with Debian's patches) against musl"
step jansson build_jansson
for f in lib/libseccomp.a lib/libyaml.a lib/libjansson.a include/seccomp.h include/yaml.h include/jansson.h \
        include/jansson_config.h; do
        [ -s "$stage/$f" ] || { tail -n 30 "$log" >&2; fail "$f is missing after the build"; }
done
ar t "$stage/lib/libyaml.a" | grep -q '^parser.o$' && ar t "$stage/lib/libseccomp.a" | grep -q 'api.o$' &&
        ar t "$stage/lib/libjansson.a" | grep -q '^load.o$' ||
        { tail -n 30 "$log" >&2; fail "an archive lacks its objects"; }

# replace the prefix only once everything built: an interrupted run leaves the old one whole
rm -f "$stage/lib/"*.la
echo "$STAMP_TEXT" >"$stage/.built"
chmod 755 "$stage"
rm -rf "$PREFIX.old"
[ ! -e "$PREFIX" ] || mv "$PREFIX" "$PREFIX.old"
mv "$stage" "$PREFIX"
rm -rf "$PREFIX.old"
say "built into $PREFIX"
