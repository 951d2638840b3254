# shellcheck shell=bash
# Sourced by the shell integration tests: chooses the server under test
# (RHKV_TEST_SERVER, else meson's RHKV_TEST_SERVER_DEFAULT, else memcached),
# starts it on a free 127.0.0.1 port and stops it by PID. Every server a
# script starts is stopped when it exits (lib_cleanup, from its EXIT trap).

server=${RHKV_TEST_SERVER:-${RHKV_TEST_SERVER_DEFAULT:-memcached}}
# Debian's python: the python3 on PATH may lack Debian's python3-* packages.
py=/usr/bin/python3
pid=
port=
status=0
lib_pids=()
# A signal ends the script through its EXIT trap, which stops the servers.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# is_memcached: true when the server under test is memcached.
is_memcached() {
	[ "$(basename "$server")" = memcached ]
}

# skip MESSAGE: exit 77, which meson reports as a skip.
skip() {
	echo "SKIP: $*"
	exit 77
}

# need_cmd COMMAND PACKAGE: skips unless COMMAND is on PATH.
need_cmd() {
	command -v "$1" >/dev/null || skip "$1 missing (apt-get install $2)"
}

free_port() {
	"$py" -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# listens PID PORT: true when process PID holds a socket listening on PORT.
# A port picked free can be picked by a parallel test too; then a readiness
# probe may be answered by that test's server while ours failed to bind.
listens() {
	local inode fd
	for inode in $(awk -v p=":$(printf '%04X' "$2")" \
		'$2 ~ p"$" && $4 == "0A" { print $10 }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null); do
		for fd in /proc/"$1"/fd/*; do
			[ "$(readlink "$fd" 2>/dev/null)" != "socket:[$inode]" ] ||
				return 0
		done
	done
	return 1
}

# ready PORT [COMMAND PREFIX...]: true once the server there answers
# COMMAND with a line that starts with one of the PREFIXes. By default
# "version", answered with VERSION, or with an error where the server wants
# authentication first; with ready_probe=binary, a binary-protocol NOOP
# answered with any response (memcached -S ignores text commands).
ready_probe=text
ready() {
	"$py" - "$ready_probe" "$@" <<'PY'
import socket, sys
probe, port = sys.argv[1], int(sys.argv[2])
cmd = sys.argv[3] if len(sys.argv) > 3 else "version"
want = tuple(p.encode() for p in sys.argv[4:]) or \
    (b"VERSION ", b"CLIENT_ERROR", b"ERROR")
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    if probe == "binary":
        s.sendall(bytes([0x80, 0x0a]) + bytes(22))
        want = (b"\x81\x0a",)
    else:
        s.sendall(cmd.encode() + b"\r\n")
    sys.exit(0 if s.recv(100).startswith(want) else 1)
except OSError:
    sys.exit(1)
PY
}

# stop_server [PID]: SIGTERM, SIGKILL after 30 s (a sanitizer build on a
# loaded machine stops slowly), reaped; sets $status to the exit status.
# Without PID, the last server started ($pid).
stop_server() {
	local p=${1:-$pid}
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null || true
	for _ in $(seq 300); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$p" 2>/dev/null; then
		echo "server $p ignored SIGTERM" >&2
		kill -KILL "$p" 2>/dev/null || true
	fi
	status=0
	wait "$p" 2>/dev/null || status=$?
	local rest=()
	for q in "${lib_pids[@]}"; do
		[ "$q" = "$p" ] || rest+=("$q")
	done
	lib_pids=("${rest[@]}")
	if [ "$p" = "$pid" ]; then pid=; fi
}

lib_cleanup() {
	local p
	for p in "${lib_pids[@]}"; do
		stop_server "$p"
	done
}

# start_server [OPTION...]: starts the server with -t 2 and the options on
# a free port (five tries); sets $port and $pid. Both servers get memcached's
# -u root -U 0 (memcached refuses to run as root without -u; rhkvd takes
# memcached's command line).
# shellcheck disable=SC2120 # the options are optional
start_server() {
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		"$server" -u root -U 0 -p "$port" -l 127.0.0.1 -t 2 "$@" &
		pid=$!
		lib_pids+=("$pid")
		# Up to 60 s: a sanitizer build on a loaded machine starts slowly.
		local end=$((SECONDS + 60))
		while [ "$SECONDS" -lt "$end" ]; do
			kill -0 "$pid" 2>/dev/null || break
			if ready "$port" && listens "$pid" "$port"; then
				return 0
			fi
			sleep 0.1
		done
		stop_server
	done
	echo "FAIL: $server did not start" >&2
	exit 1
}

# stop_checked: stops the last server started; fails unless it exited 0.
stop_checked() {
	stop_server
	if [ "$status" -ne 0 ]; then
		echo "FAIL: server exit status $status after SIGTERM"
		exit 1
	fi
}

# start_auth_server DIR: starts a server that wants SASL PLAIN (binary
# protocol) with the user rhkv and $auth_password: rhkvd with --auth-file
# DIR/password; memcached with -S and a SASL configuration in DIR (a sasldb
# made by saslpasswd2; the PLAIN mechanism comes from libsasl2-modules).
# Without those, memcached's case says so and returns 1.
auth_password='s3cret!'
start_auth_server() {
	if ! is_memcached; then
		# rhkvd refuses an auth file others may read
		(umask 077 && printf '%s\n' "$auth_password" >"$1/password")
		start_server --auth-file "$1/password"
	elif command -v saslpasswd2 >/dev/null &&
		compgen -G '/usr/lib/*/sasl2/libplain.so*' >/dev/null; then
		printf 'mech_list: plain\nsasldb_path: %s\n' "$1/sasldb2" \
			>"$1/memcached.conf"
		printf '%s' "$auth_password" |
			saslpasswd2 -a memcached -c -p -f "$1/sasldb2" rhkv
		ready_probe=binary
		SASL_CONF_PATH=$1 start_server -S
		ready_probe=text
	else
		echo "== SASL: left out (memcached's needs saslpasswd2 and the PLAIN" \
			"mechanism: apt-get install sasl2-bin libsasl2-modules)"
		return 1
	fi
	echo "== server that wants SASL PLAIN on port $port (pid $pid)"
}
