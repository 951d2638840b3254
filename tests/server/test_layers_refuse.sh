#!/bin/sh
# test_layers_refuse.sh CHECK SERVER_DIR: the layer check (CHECK,
# scripts/check-layers.py) passes server/ as it is, and refuses a copy of
# it where a front end includes a connection header, naming the include.
set -eu
check=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src" "$tmp/server"
python3 "$check" "$tmp/server" >/dev/null || {
	echo "FAIL: the check refuses server/ as it is"
	exit 1
}
printf '#include "conn.h"\n' >>"$tmp/server/protocol/proto_mcbin.c"
if python3 "$check" "$tmp/server" >"$tmp/out"; then
	echo "FAIL: a front end including conn.h passed the check"
	exit 1
fi
grep -q 'not allowed: protocol/proto_mcbin.c includes net/conn.h' "$tmp/out" || {
	echo "FAIL: the refusal does not name the include:"
	cat "$tmp/out"
	exit 1
}
# A store file including an observer's header is refused too.
cp -r "$src/." "$tmp/server/"
printf '#include "stats.h"\n' >>"$tmp/server/store/cache_maint.c"
if python3 "$check" "$tmp/server" >"$tmp/out"; then
	echo "FAIL: the store including stats.h passed the check"
	exit 1
fi
echo "ok: the check refuses includes that go up"
