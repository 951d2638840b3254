#!/usr/bin/env bash
# libmemcached's command-line tools (Debian's libmemcached-tools 1.1)
# against the server under test, in text and in binary (--binary) mode:
# memccp/memccat/memcexist/memctouch/memcrm/memcflush on 40 files,
# memcstat --args=items and --args=slabs; memcdump (text only: libmemcached
# dumps with stats cachedump) lists exactly the keys stored; memcaslap, text
# and binary (-B), with 10% of gets verified, reports no miss or failure
# (it exits 0 whatever happened, so its counters are read). Then SASL PLAIN
# (memccp/memccat --binary -u -p) against a server that wants it
# (start_auth_server). Skips (77) without the tools.
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

for tool in memccp memccat memcexist memctouch memcrm memcflush memcstat memcdump; do
	need_cmd "$tool" libmemcached-tools
done

tmp=$(mktemp -d)
trap 'lib_cleanup; rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

mkdir "$tmp/files"
keys=()
for i in $(seq -w 0 39); do
	keys+=("tool-key-$i")
	head -c $((10#$i * 997 + 1)) /dev/urandom >"$tmp/files/tool-key-$i"
done

start_server
servers="--servers=127.0.0.1:$port"
echo "== server: $server on port $port (pid $pid)"

for mode in text binary; do
	opt=()
	if [ "$mode" = binary ]; then opt=(--binary); fi
	echo "== $mode: memccp, memccat, memcexist, memctouch, memcrm, memcflush"
	memcflush "$servers" "${opt[@]}" || fail "$mode: memcflush"
	memccp "$servers" "${opt[@]}" --flags=5 "$tmp/files"/* || fail "$mode: memccp"
	for k in "${keys[@]}"; do
		memccat "$servers" "${opt[@]}" --file="$tmp/out" "$k" ||
			fail "$mode: memccat $k"
		cmp -s "$tmp/files/$k" "$tmp/out" || fail "$mode: memccat $k: other bytes"
	done
	flags=$(memccat "$servers" "${opt[@]}" --flags tool-key-00 | head -n 1)
	[ "$flags" = 5 ] || fail "$mode: flags $flags, not 5"
	memcexist "$servers" "${opt[@]}" tool-key-01 || fail "$mode: memcexist of a key"
	if memcexist "$servers" "${opt[@]}" -q no-such-key; then
		fail "$mode: memcexist found a missing key"
	fi
	memctouch "$servers" "${opt[@]}" --expire=100 tool-key-01 ||
		fail "$mode: memctouch of a key"
	if memctouch "$servers" "${opt[@]}" -q --expire=100 no-such-key; then
		fail "$mode: memctouch touched a missing key"
	fi
	memcrm "$servers" "${opt[@]}" tool-key-02 || fail "$mode: memcrm"
	if memcexist "$servers" "${opt[@]}" -q tool-key-02; then
		fail "$mode: memcexist found a removed key"
	fi

	echo "== $mode: memcstat --args=items, --args=slabs"
	out=$(memcstat "$servers" "${opt[@]}" --args=items) || fail "$mode: memcstat --args=items"
	grep -Eq '^	items:[0-9]+:number: [1-9]' <<<"$out" ||
		fail "$mode: memcstat --args=items: no items:N:number: $(head -c 300 <<<"$out")"
	out=$(memcstat "$servers" "${opt[@]}" --args=slabs) || fail "$mode: memcstat --args=slabs"
	if ! grep -Eq '^	[0-9]+:chunk_size: [1-9]' <<<"$out" ||
		! grep -Eq '^	active_slabs: [1-9]' <<<"$out"; then
		fail "$mode: memcstat --args=slabs: $(head -c 300 <<<"$out")"
	fi

	memcflush "$servers" "${opt[@]}" || fail "$mode: memcflush"
	if memccat "$servers" "${opt[@]}" --file="$tmp/gone" tool-key-00 2>/dev/null; then
		fail "$mode: memccat found a key after memcflush"
	fi
done

# memcdump: memcached 1.6 dumps each class's COLD LRU, where its LRU
# maintainer moves new items within a second or so: try for 60 s.
echo "== memcdump"
memccp "$servers" "$tmp/files"/* || fail "memccp"
printf '%s\n' "${keys[@]}" | sort >"$tmp/want"
for _ in $(seq 300); do
	memcdump "$servers" >"$tmp/dump" 2>"$tmp/dump.err" || true
	sort -o "$tmp/dump" "$tmp/dump"
	cmp -s "$tmp/want" "$tmp/dump" && break
	sleep 0.2
done
cmp -s "$tmp/want" "$tmp/dump" ||
	fail "memcdump: $(wc -l <"$tmp/dump") keys, not the 40 stored: $(head -c 300 "$tmp/dump.err") $(diff "$tmp/want" "$tmp/dump" | head -n 5)"

# memcaslap N OPTION...: 20,000 requests (90% get), 10% verified; fails
# unless every counter of a failure is 0 and the requests add up.
slap() {
	local what=$1 out
	shift
	echo "== memcaslap $what"
	out=$(timeout 120 memcaslap -s "127.0.0.1:$port" -x 20000 -T 2 -c 8 \
		-X 200 -v 0.1 "$@" 2>&1) || fail "memcaslap $what: exit $?: $(tail -c 500 <<<"$out")"
	grep -E '^(cmd_get|cmd_set|get_misses|verify_misses|verify_failed|Run time)' <<<"$out" |
		sed 's/^/    /'
	for counter in get_misses verify_misses verify_failed; do
		grep -Eq "^$counter: 0\$" <<<"$out" ||
			fail "memcaslap $what: $(grep -E "^$counter" <<<"$out" || echo "no $counter line")"
	done
	if grep -Eqi 'error|failed to|verification failed' <<<"$out"; then
		fail "memcaslap $what: $(grep -Ei 'error|failed' <<<"$out" | head -n 5)"
	fi
	local gets sets
	gets=$(sed -n 's/^cmd_get: //p' <<<"$out")
	sets=$(sed -n 's/^cmd_set: //p' <<<"$out")
	[ $((gets + sets)) -eq 20000 ] || fail "memcaslap $what: $gets gets + $sets sets, not 20000"
}
if command -v memcaslap >/dev/null; then
	slap text
	slap binary -B
else
	echo "== memcaslap: not installed (libmemcached-tools without it): left out"
fi
stop_checked

if start_auth_server "$tmp"; then
	servers="--servers=127.0.0.1:$port"
	if memccp "$servers" --binary -q -u rhkv -p wrong-password "$tmp/files/tool-key-03" 2>/dev/null; then
		fail "SASL: memccp with a wrong password succeeded"
	fi
	memccp "$servers" --binary -u rhkv -p "$auth_password" "$tmp/files/tool-key-03" ||
		fail "SASL: memccp with the password"
	memccat "$servers" --binary -u rhkv -p "$auth_password" --file="$tmp/out" tool-key-03 ||
		fail "SASL: memccat with the password"
	cmp -s "$tmp/files/tool-key-03" "$tmp/out" || fail "SASL: memccat: other bytes"
	stop_checked
fi
echo "PASS"
