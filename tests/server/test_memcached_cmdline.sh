#!/usr/bin/env bash
# memcached 1.6.18's command lines, started for real: what the option table
# test (test_memcached_options.c) checks in the parser, seen from outside.
# Each part holds for memcached too (RHKV_TEST_SERVER=memcached checks the
# test against it) but where it says rhkvd only:
#   -d -P -r -k ... with -o: returns once serving, the pid file names the
#     daemon, settings as given, -k does not make the reserved address
#     space resident, SIGTERM stops it and removes the file;
#     (rhkvd) one line logged per ignored option; a failed start is the
#     exit code of rhkvd -d itself
#   -s alone: the unix socket and no TCP listener; -l with a host name, a
#     port of its own and a list
#   -X, -W, -B binary, -D: memcached's replies and prefix counts
#   (rhkvd) -o ext_path, -o ssl_ciphers=A,B: refused with exit code 64
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

tmp=$(mktemp -d)
daemon=
trap 'lib_cleanup; [ -z "$daemon" ] || kill -KILL "$daemon" 2>/dev/null; rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

# ask ADDRESS TEXT: sends TEXT (printf escapes) to 127.0.0.1:PORT or a
# unix socket path, prints what comes back within half a second of quiet.
ask() {
	"$py" - "$1" "$2" <<'PY'
import socket, sys
addr, data = sys.argv[1], sys.argv[2].encode().decode('unicode_escape')
if addr.startswith('/'):
    s = socket.socket(socket.AF_UNIX)
    s.connect(addr)
else:
    s = socket.create_connection(('127.0.0.1', int(addr)))
s.sendall(data.encode('latin1'))
s.settimeout(0.5)
out = b''
try:
    while True:
        b = s.recv(65536)
        if not b:
            out += b'<closed>'
            break
        out += b
except socket.timeout:
    pass
sys.stdout.write(out.decode('latin1'))
PY
}

# tcp_listeners PID: how many TCP sockets process PID listens on.
tcp_listeners() {
	local n=0 inode fd
	while read -r inode; do
		for fd in /proc/"$1"/fd/*; do
			[ "$(readlink "$fd" 2>/dev/null)" != "socket:[$inode]" ] ||
				n=$((n + 1))
		done
	done < <(awk '$4 == "0A" { print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
	echo "$n"
}

# refused MESSAGE OPTION...: rhkvd exits 64 saying MESSAGE.
refused() {
	local want=$1 rc=0
	shift
	echo "== $*: refused"
	"$server" -p 0 -s "$tmp/never" "$@" 2>"$tmp/log" || rc=$?
	[ "$rc" = 64 ] || fail "exit code $rc, not 64"
	grep -qF -- "$want" "$tmp/log" || fail "message: $(cat "$tmp/log")"
}

# settings PORT NAME: a value of `stats settings`.
setting() {
	ask "$1" 'stats settings\r\n' | tr -d '\r' | awk -v n="$2" '$2 == n { print $3 }'
}

mc=()
if is_memcached; then
	mc=(-u root)
fi

echo "== -d -P -r -k -U 0 -o idle_timeout=30,hashpower=20 -f 1.25 -b 64"
port=$(free_port)
"$server" "${mc[@]}" -d -P "$tmp/pid" -r -k -p "$port" -l 127.0.0.1 -U 0 \
	-t 2 -m 32 -c 100 -o idle_timeout=30,hashpower=20 -f 1.25 -b 64 \
	2>"$tmp/log" || fail "-d: exit status $?: $(cat "$tmp/log")"
for _ in $(seq 100); do
	[ -s "$tmp/pid" ] && ready "$port" && break
	sleep 0.1
done
daemon=$(cat "$tmp/pid")
kill -0 "$daemon" || fail "-P: no process $daemon"
listens "$daemon" "$port" || fail "-P: $daemon does not listen on $port"
for kv in tcp_backlog=64 idle_timeout=30 maxconns=100 maxbytes=33554432; do
	got=$(setting "$port" "${kv%=*}")
	[ "$got" = "${kv#*=}" ] || fail "stats settings ${kv%=*} is '$got', not ${kv#*=}"
done
# -k locks the pages in use, not the address space rhkvd reserves at start
# (16 GiB at -m 32, which mlockall without MCL_ONFAULT made resident). Not
# under a sanitizer, whose shadow memory counts in the RSS.
if ! grep -qE 'lib[at]san' "/proc/$daemon/maps"; then
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$daemon/status")
	[ "$rss" -lt 1048576 ] || fail "-k: $rss KiB resident at start"
fi
if ! is_memcached; then
	grep -q -- '-o hashpower ignored' "$tmp/log" || fail "no line for hashpower: $(cat "$tmp/log")"
	grep -q -- '-f 1.25 (--slab-growth-factor) ignored' "$tmp/log" ||
		fail "no line for -f: $(cat "$tmp/log")"
	[ "$(grep -c ignored "$tmp/log")" = 2 ] || fail "not one line each: $(cat "$tmp/log")"
fi
kill -TERM "$daemon"
for _ in $(seq 100); do
	kill -0 "$daemon" 2>/dev/null || break
	sleep 0.1
done
! kill -0 "$daemon" 2>/dev/null || fail "the daemon ignored SIGTERM"
daemon=
[ ! -e "$tmp/pid" ] || fail "the pid file is still there"

if ! is_memcached; then
	echo "== -d: a failed start is rhkvd -d's exit code"
	start_server
	rc=0
	"$server" -d -p "$port" -l 127.0.0.1 -t 2 2>"$tmp/log" || rc=$?
	[ "$rc" = 71 ] || fail "-d on a port in use: exit code $rc, not 71"
	grep -q 'cannot listen' "$tmp/log" || fail "no reason given: $(cat "$tmp/log")"
	stop_checked
fi

echo "== -s alone: the unix socket, no TCP"
"$server" "${mc[@]}" -s "$tmp/sock" -t 2 &
pid=$!
lib_pids+=("$pid")
for _ in $(seq 100); do
	[ -S "$tmp/sock" ] && break
	sleep 0.1
done
ask "$tmp/sock" 'version\r\n' | grep -q '^VERSION ' || fail "-s: not served"
[ "$(tcp_listeners "$pid")" = 0 ] || fail "-s alone: listens on TCP too"
stop_checked

echo "== -l localhost:PORT,127.0.0.2: a host name, a port of its own, a list"
port=$(free_port)
"$server" "${mc[@]}" -l "localhost:$port,127.0.0.2" -t 2 &
pid=$!
lib_pids+=("$pid")
for _ in $(seq 100); do
	ready "$port" && break
	sleep 0.1
done
listens "$pid" "$port" || fail "-l localhost:$port: not listening"
stop_checked

echo "== -X -W -D / : memcached's refusals, counts per prefix up to /"
start_server "${mc[@]}" -X -W -D /
out=$(ask "$port" 'stats cachedump 1 0\r\nlru_crawler metadump all\r\nwatch\r\n')
want=$'CLIENT_ERROR stats cachedump not allowed\r\nERROR metadump not allowed\r\nCLIENT_ERROR watch commands not allowed\r'
[ "$out" = "$want" ] || fail "-X -W: got '$out'"
out=$(ask "$port" 'set a/b 0 0 1\r\nx\r\nget a/b\r\nstats detail dump\r\n')
grep -q 'PREFIX a get 1 hit 1 set 1 del 0' <<<"$out" || fail "-D /: got '$out'"
[ "$(setting "$port" dump_enabled)" = no ] || fail "-X: dump_enabled"
stop_checked

echo "== -B binary: a text command closes the connection"
ready_probe=binary
start_server "${mc[@]}" -B binary
ready_probe=text
# 24 bytes at least: memcached reads a binary header before it looks.
[ "$(ask "$port" 'get a_key_of_some_length\r\n')" = '<closed>' ] ||
	fail "-B binary served text"
stop_checked
echo "== -B ascii"
start_server "${mc[@]}" -B ascii
[ "$(setting "$port" binding_protocol)" = ascii ] || fail "-B ascii"
stop_checked

if ! is_memcached; then
	refused 'flash tier' -o "ext_path=$tmp/ext:64m"
	refused 'illegal suboption "B"' -o ssl_ciphers=A,B
fi
echo "== all passed"
