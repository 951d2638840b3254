#!/usr/bin/env bash
# meson install --destdir into a temporary directory, then: the installed
# tree holds bin/rhkvd, bin/rhkv-cli, bin/rhkv-bench, librhkv.so* and
# librhkv.a, include/rhkv.h, rhkv.pc and the man pages; and
# client/examples/example.c, compiled with the flags of the installed
# rhkv.pc, linked dynamically and statically, runs against a live rhkvd
# (RHKV_TEST_SERVER, else RHKV_TEST_SERVER_DEFAULT) on a free loopback
# port, stopped by PID on exit.
set -euo pipefail
# stop_server and free_port (it sets server too, which is set again below).
# shellcheck source=tests/server/lib_server.sh
. "$(dirname "$0")/../server/lib_server.sh"

build=${MESON_BUILD_ROOT:?MESON_BUILD_ROOT: the build directory}
src=${MESON_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
meson=${MESON:-meson}
server=${RHKV_TEST_SERVER:-${RHKV_TEST_SERVER_DEFAULT:-}}
read -r -a ccmd <<<"${RHKV_CC:-${CC:-cc}}"
san=()
if [ -n "${RHKV_SANITIZE:-}" ] && [ "$RHKV_SANITIZE" != none ]; then
	san=("-fsanitize=$RHKV_SANITIZE")
fi

for tool in pkg-config python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "SKIP: $tool missing"
		exit 77
	fi
done
if [ -z "$server" ] || [ ! -x "$server" ]; then
	echo "SKIP: no rhkvd (RHKV_TEST_SERVER / RHKV_TEST_SERVER_DEFAULT)"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rhkv-install.XXXXXX")
trap 'stop_server; rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

dest=$tmp/dest
echo "# meson install -C $build --destdir $dest --no-rebuild"
if ! "$meson" install -C "$build" --destdir "$dest" --no-rebuild \
	>"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	fail "meson install"
fi

# The prefix is the build's (/usr/local by default): rhkv.pc names it.
pc=$(find "$dest" -name rhkv.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || fail "no pkgconfig/rhkv.pc under $dest"
prefix=$(sed -n 's/^prefix=//p' "$pc")
[ -n "$prefix" ] || fail "$pc: no prefix="
root=$dest$prefix
[ -d "$root" ] || fail "$root: missing (prefix $prefix)"
echo "# prefix $prefix, rhkv.pc at ${pc#"$dest"}"

# pkg-config on a copy of rhkv.pc whose prefix points into the DESTDIR
# (msgpack, its private requirement, comes from the system).
mkdir "$tmp/pc"
sed "s#^prefix=.*#prefix=$root#" "$pc" >"$tmp/pc/rhkv.pc"
export PKG_CONFIG_PATH=$tmp/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pkg-config --exists --print-errors rhkv || fail "pkg-config rhkv"
grep -q '^Requires.private:.*msgpack' "$pc" || fail "$pc: no msgpack in Requires.private"
libdir=$(pkg-config --variable=libdir rhkv)
includedir=$(pkg-config --variable=includedir rhkv)

check() {
	[ -e "$1" ] || fail "missing: ${1#"$dest"}"
	echo "ok ${1#"$dest"}"
}
for b in rhkvd rhkv-cli rhkv-bench; do
	check "$root/bin/$b"
	[ -x "$root/bin/$b" ] || fail "${root#"$dest"}/bin/$b: not executable"
done
check "$includedir/rhkv.h"
check "$libdir/librhkv.a"
check "$libdir/librhkv.so"
sos=("$libdir"/librhkv.so.*)
[ -e "${sos[0]}" ] || fail "missing: ${libdir#"$dest"}/librhkv.so.*"
for f in "${sos[@]}"; do check "$f"; done
case $libdir in
"$root"/lib | "$root"/lib64 | "$root"/lib/*) ;;
*) fail "libdir ${libdir#"$dest"} is not under ${prefix}/lib*" ;;
esac
for m in rhkvd.1 rhkv-cli.1; do
	man=$(find "$root" -path "*/man1/$m" | head -n 1)
	[ -n "$man" ] || fail "missing: man1/$m under $prefix"
	check "$man"
	cmp -s "$man" "$src/man/$m" || fail "$man differs from man/$m"
done

export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$root/bin/rhkvd" --version >/dev/null || fail "installed rhkvd --version"
"$root/bin/rhkv-cli" --version >/dev/null || fail "installed rhkv-cli --version"

# Dynamically: librhkv.so from the DESTDIR through LD_LIBRARY_PATH.
read -r -a cflags <<<"$(pkg-config --cflags rhkv)"
read -r -a libs <<<"$(pkg-config --libs rhkv)"
echo "# ${ccmd[*]} ${san[*]} example.c ${cflags[*]} ${libs[*]}"
"${ccmd[@]}" "${san[@]}" -o "$tmp/example-shared" \
	"$src/client/examples/example.c" "${cflags[@]}" "${libs[@]}" ||
	fail "compiling example.c against the installed librhkv.so"
# (ldd's output in a variable: grep -q closing the pipe early would fail
# the pipeline under pipefail.)
deps=$(ldd "$tmp/example-shared") || fail "ldd example-shared"
grep -q "$libdir/librhkv\.so" <<<"$deps" ||
	fail "example-shared does not load librhkv.so from the DESTDIR: $deps"

# Statically: librhkv.a, plus what pkg-config --static adds (msgpack).
read -r -a slibs <<<"$(pkg-config --static --libs rhkv)"
static=()
for w in "${slibs[@]}"; do
	if [ "$w" = -lrhkv ]; then static+=("$libdir/librhkv.a"); else static+=("$w"); fi
done
echo "# ${ccmd[*]} ${san[*]} example.c ${cflags[*]} ${static[*]}"
"${ccmd[@]}" "${san[@]}" -o "$tmp/example-static" \
	"$src/client/examples/example.c" "${cflags[@]}" "${static[@]}" ||
	fail "compiling example.c against the installed librhkv.a"
deps=$(ldd "$tmp/example-static") || fail "ldd example-static"
if grep -q librhkv <<<"$deps"; then
	fail "example-static still needs librhkv.so: $deps"
fi

port=
for _ in 1 2 3 4 5; do
	p=$(free_port)
	"$server" -p "$p" -l 127.0.0.1 -t 2 -m 16 &
	pid=$!
	for _ in $(seq 600); do
		kill -0 "$pid" 2>/dev/null || break
		if "$root/bin/rhkv-cli" -p "$p" -t 200 ping >/dev/null 2>&1 &&
			listens "$pid" "$p"; then
			port=$p
			break 2
		fi
		sleep 0.1
	done
	stop_server
done
[ -n "$port" ] || fail "rhkvd ($server) did not start"
echo "# rhkvd $pid on 127.0.0.1:$port"

for ex in example-shared example-static; do
	out=$("$tmp/$ex" "$port") || fail "$ex exited $?"
	[ "$out" = "greeting = hello" ] || fail "$ex printed '$out'"
	echo "ok $ex: $out"
done
# The example deletes its key: a miss now.
[ "$("$root/bin/rhkv-cli" -p "$port" get greeting)" = "(nil)" ] ||
	fail "greeting still stored after the examples"
echo "PASS"
