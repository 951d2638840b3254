#!/usr/bin/env bash
# Real clients against the server under test: memccapable (libmemcached's
# conformance checker: -a, the text protocol, then both protocols, memcached's
# binary one included), memccp/memccat/memcstat/memcdump, and pymemcache under
# Debian's /usr/bin/python3 (the python3 on PATH lacks Debian's packages).
# Starts its own server on a free 127.0.0.1 port (lib_server.sh), stops it
# by PID on exit.
set -euo pipefail

here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

for tool in memccapable memccp memccat memcstat memcdump; do
	need_cmd "$tool" libmemcached-tools
done
"$py" -c 'import pymemcache' 2>/dev/null ||
	skip "pymemcache missing (apt-get install python3-pymemcache)"

tmp=$(mktemp -d)
trap 'lib_cleanup; rm -rf "$tmp"' EXIT

start_server
servers="--servers=127.0.0.1:$port"
echo "== server: $server on port $port (pid $pid)"

echo "== memccapable -a"
out=$(memccapable -a -h 127.0.0.1 -p "$port" -t 5 2>&1) || {
	echo "$out"
	echo "FAIL: memccapable -a"
	exit 1
}
echo "$out"
grep -q '^All tests passed' <<<"$out"

echo "== memccapable (text and memcached binary protocols)"
out=$(memccapable -h 127.0.0.1 -p "$port" -t 5 2>&1) || {
	echo "$out"
	echo "FAIL: memccapable"
	exit 1
}
echo "$out"
grep -q '^All tests passed' <<<"$out"

echo "== memccp / memccat"
printf 'hello, world\n' >"$tmp/text.txt"
"$py" -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 300 + b"\r\nEND\r\n")' >"$tmp/binary.bin"
: >"$tmp/empty.txt"
memccp "$servers" --flags=7 "$tmp/text.txt" "$tmp/binary.bin" "$tmp/empty.txt"
for f in text.txt binary.bin empty.txt; do
	memccat "$servers" --file="$tmp/$f.out" "$f"
	cmp "$tmp/$f" "$tmp/$f.out"
done
flags_out=$(memccat "$servers" --flags text.txt)
[ "${flags_out%%$'\n'*}" = 7 ]
if memccat "$servers" no-such-key >/dev/null 2>&1; then
	echo "FAIL: memccat found a missing key"
	exit 1
fi

echo "== memcstat"
stat_out=$(memcstat "$servers")
echo "$stat_out" | head -n 5
grep -q "^Server: 127.0.0.1 ($port)" <<<"$stat_out"
grep -q "pid: $pid\$" <<<"$stat_out"
ver_out=$(memcstat "$servers" --server-version 2>&1)
grep -q "^127.0.0.1:$port " <<<"$ver_out"
# stats items: the three files memccp stored are small: class 1.
items_out=$(memcstat "$servers" --args=items)
echo "$items_out" | head -n 3
grep -q "^Server: 127.0.0.1 ($port)" <<<"$items_out"
grep -Eq '^[[:space:]]*items:1:number: [1-9]' <<<"$items_out"
grep -q 'items:1:evicted: 0$' <<<"$items_out"

echo "== memcdump"
# stats items, then stats cachedump per class. memcached 1.6 lists only
# its cold LRU there, so it may list fewer; rhkvd lists every live key
# (memccapable's and memccp's).
dump_out=$(memcdump "$servers" | sort)
echo "$dump_out" | head -n 3
[ -z "$(uniq -d <<<"$dump_out")" ]
if [ "$server" != memcached ]; then
	for f in text.txt binary.bin empty.txt; do
		grep -qx "$f" <<<"$dump_out"
	done
	curr=$(memcstat "$servers" | sed -n 's/^[[:space:]]*curr_items: //p')
	[ "$(wc -l <<<"$dump_out")" -eq "$curr" ]
fi

echo "== pymemcache"
"$py" - "$port" <<'EOF'
import sys, time
from pymemcache.client.base import Client

port = int(sys.argv[1])
c = Client(("127.0.0.1", port), connect_timeout=5, timeout=5,
           default_noreply=False)
c.flush_all()
assert c.set("k", b"v") is True
assert c.get("k") == b"v"
assert c.get("nx") is None
assert c.add("k", b"x") is False and c.add("k2", b"2") is True
assert c.replace("nx", b"x") is False and c.replace("k2", b"22") is True
assert c.append("k2", b"3") is True and c.prepend("k2", b"1") is True
assert c.get("k2") == b"1223"
binary = bytes(range(256)) + b"\r\nEND\r\n"
assert c.set("bin", binary) and c.get("bin") == binary
assert c.set("empty", b"") and c.get("empty") == b""

value, cas = c.gets("k")
assert value == b"v" and cas
assert c.cas("k", b"w", cas) is True
assert c.cas("k", b"x", cas) is False  # EXISTS
assert c.cas("nx", b"x", cas) is None  # NOT_FOUND
assert c.get("k") == b"w"
assert c.gets_many(["k", "nx"])["k"][0] == b"w"

assert c.set("n", b"10")
assert c.incr("n", 5) == 15
assert c.decr("n", 100) == 0
assert c.incr("n", 2**64 - 1) == 2**64 - 1
assert c.incr("n", 1) == 0
assert c.incr("nx", 1) is None and c.decr("nx", 1) is None
try:
    c.incr("k", 1)
    raise AssertionError("incr on a non-numeric value succeeded")
except Exception as e:
    assert "non-numeric" in str(e), e

assert c.delete("k") is True
assert c.delete("k") is False
assert c.get("k") is None

# A relative TTL of N seconds may end after N - 1 (at a second boundary):
# 3 leaves the touch 2 seconds. "u", set after "t" with the same TTL and not
# touched, tells when "t" would have expired.
assert c.set("t", b"t", expire=3)
assert c.set("u", b"u", expire=3)
assert c.touch("t", expire=100) is True
assert c.touch("nx", expire=100) is False
end = time.monotonic() + 60
while c.get("u") is not None and time.monotonic() < end:
    time.sleep(0.1)
assert c.get("u") is None, "a TTL of 3 s never expired"
assert c.get("t") == b"t", "touch did not extend the TTL"

assert c.set_many({"a": b"1", "b": b"2", "c": b"3"}) == []
assert c.get_many(["a", "nx", "b", "c"]) == {"a": b"1", "b": b"2", "c": b"3"}
assert c.delete_many(["a", "b"]) is True
assert c.get_many(["a", "b", "c"]) == {"c": b"3"}

assert c.version()
stats = c.stats()
assert b"pid" in stats and b"curr_items" in stats, stats
assert c.flush_all() is True
assert c.get("c") is None
c.close()
print("pymemcache: all checks passed")
EOF

echo "== shutdown"
stop_checked
echo "PASS"
