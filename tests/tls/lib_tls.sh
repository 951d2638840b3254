# shellcheck shell=bash
# Sourced by test_tls.sh after tests/server/lib_server.sh: the server under
# test with a TLS listener beside its plain one, and the helpers that talk
# to it (tls.py). Options are written as rhkvd's (--tls-cert...); for
# memcached -Z, the reference the suite was first written against, they
# become its -o ssl_* options.
# shellcheck disable=SC2154 # server and py come from lib_server.sh, here and certs from the test

# The TLS port of the last server started; its plain port is lib_server's
# $port (0 with tls_only=1, rhkvd's -p 0).
tls_port=
tls_only=0
# tls_spelling=memcached: rhkvd too is started with memcached's command line
# (-Z, -o ssl_*, -l notls:HOST:PORT,HOST:TLS_PORT), as memcached always is.
tls_spelling=rhkvd

# need_tls_server: skips (77) unless the server under test speaks TLS the
# way these tests expect: rhkvd with --tls-port in its --help, or memcached
# when RHKV_TLS_MEMCACHED=1 asks for the reference run (memcached -Z lacks
# rhkvd's statistics and options, so by default it is skipped).
need_tls_server() {
	need_cmd openssl openssl
	if is_memcached; then
		[ "${RHKV_TLS_MEMCACHED:-0}" = 1 ] ||
			skip "memcached (RHKV_TLS_MEMCACHED=1 runs the reference subset against memcached -Z)"
		# grep reads all of it (no -q): no SIGPIPE to fail the pipe.
		"$server" -h 2>&1 | grep -- '--enable-ssl' >/dev/null ||
			skip "this memcached was built without TLS"
	elif ! "$server" --help 2>&1 | grep -- '--tls-port' >/dev/null; then
		skip "$server has no --tls-port"
	fi
}

# rhkvd_only WHAT: skips the caller's part (returns 1) under memcached,
# saying so.
rhkvd_only() {
	if is_memcached; then
		echo "== $1: rhkvd only, left out under memcached"
		return 1
	fi
}

# tlspy COMMAND [ARG...]: tls.py against the last server started.
tlspy() {
	"$py" "$here/tls.py" "${port:-0}" "$tls_port" "$certs" "$@"
}

# start_tls_server [OPTION...]: starts the server with a plain listener on
# $port (none with tls_only=1) and a TLS one on $tls_port (five tries), both
# on 127.0.0.1; ready once a TLS `version` is answered. Sets $pid.
start_tls_server() {
	local mc=ssl_session_cache rest=() a spell=$tls_spelling
	if is_memcached; then
		spell=memcached
	fi
	if [ "$spell" = memcached ]; then
		while [ $# -gt 0 ]; do
			a=$1
			case $a in
			--tls-cert) mc+=",ssl_chain_cert=$2" ;;
			--tls-key) mc+=",ssl_key=$2" ;;
			--tls-ca) mc+=",ssl_ca_cert=$2" ;;
			--tls-ciphers) mc+=",ssl_ciphers=$2" ;;
			--tls-verify)
				case $2 in
				none) mc+=,ssl_verify_mode=0 ;;
				optional) mc+=,ssl_verify_mode=1 ;;
				require) mc+=,ssl_verify_mode=2 ;;
				esac
				;;
			--tls-min-version) mc+=",ssl_min_version=${2#1.}" ;;
			# Always on here (ssl_session_cache above).
			--tls-session-cache) shift && continue ;;
			--tls-*)
				echo "FAIL: memcached has no $a (guard the test with rhkvd_only)"
				exit 1
				;;
			*) rest+=("$a") && shift && continue ;;
			esac
			shift 2
		done
	fi
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		tls_port=$(free_port)
		[ "$port" != "$tls_port" ] || continue
		if [ "$spell" = memcached ]; then
			"$server" -u root -U 0 -t 2 -Z -o "$mc" \
				-l "notls:127.0.0.1:$port,127.0.0.1:$tls_port" "${rest[@]}" &
		else
			[ "$tls_only" = 0 ] || port=0
			"$server" -p "$port" -l 127.0.0.1 -t 2 --tls-port "$tls_port" "$@" &
		fi
		pid=$!
		lib_pids+=("$pid")
		for _ in $(seq 600); do
			kill -0 "$pid" 2>/dev/null || break
			if tlspy ready 2>/dev/null &&
				listens "$pid" "$tls_port"; then
				echo "== $(basename "$server") (pid $pid): plain port $port, TLS port $tls_port"
				return 0
			fi
			sleep 0.1
		done
		stop_server
	done
	echo "FAIL: $server did not start with TLS ($*)" >&2
	exit 1
}

# fail MESSAGE: the test fails.
fail() {
	echo "FAIL: $*"
	exit 1
}

# healthy: a new plain connection (unless tls_only) and a new TLS one are
# served, and the server still runs.
healthy() {
	kill -0 "$pid" 2>/dev/null || fail "the server (pid $pid) died"
	tlspy health || fail "the server no longer serves"
}

# stat NAME: the value of a general statistic (empty when missing).
stat() {
	tlspy stat "$1"
}
