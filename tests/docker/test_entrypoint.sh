#!/bin/bash
# The container's entrypoint (docker/entrypoint.sh), outside any container:
# RHKVD points at a stand-in that prints the arguments it was given, so
# each case checks exactly what rhkvd would be started with.
set -u
here=$(cd "$(dirname "$0")" && pwd)
entry=$here/../../docker/entrypoint.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#!/bin/sh\nprintf "%%s|" "$@"\n' >"$tmp/rhkvd"
chmod +x "$tmp/rhkvd"

passed=0
failed=0
# check NAME WANT [ENV=...] -- ARGS...
check() {
	local name=$1 want=$2 got
	shift 2
	local -a envs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	got=$(env -i PATH=/usr/bin:/bin RHKVD="$tmp/rhkvd" "${envs[@]}" \
		sh "$entry" "$@" 2>&1)
	if [ "$got" = "$want" ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL $name: got '$got', want '$want'" >&2
	fi
}

check no-args '-l|0.0.0.0|' --
check rhkvd-word '-l|0.0.0.0|-m|256|' -- rhkvd -m 256
check flags-pass-through '-l|0.0.0.0|-m|256|-vv|' -- -m 256 -vv
check env-port-memory '-m|128|-p|1234|-l|0.0.0.0|' RHKV_PORT=1234 \
	RHKV_MEMORY=128 --
check env-then-args-win '-p|1234|-l|0.0.0.0|-p|99|' RHKV_PORT=1234 -- -p 99
check env-listen '-l|127.0.0.1|' RHKV_LISTEN=127.0.0.1 --
check env-all '--no-protected-mode|-v|--metrics-port|9150|--idle-timeout|60|-I|2m|-c|500|-t|4|-l|0.0.0.0|' \
	RHKV_THREADS=4 RHKV_CONN_LIMIT=500 RHKV_MAX_ITEM_SIZE=2m \
	RHKV_IDLE_TIMEOUT=60 RHKV_METRICS_PORT=9150 RHKV_VERBOSE=1 \
	RHKV_NO_PROTECTED_MODE=1 --
check env-memory-file '--memory-file|/var/lib/rhkv/cache|-m|512|-l|0.0.0.0|' \
	RHKV_MEMORY=512 RHKV_MEMORY_FILE=/var/lib/rhkv/cache --
check opt-out-false '-l|0.0.0.0|' RHKV_NO_PROTECTED_MODE=0 --
check listen-in-args '-l|127.0.0.1|-p|5|' -- -l 127.0.0.1 -p 5
check listen-long '--listen=::1|' RHKV_LISTEN=10.0.0.1 -- --listen=::1
check other-command 'hello' -- echo hello
check empty-env-ignored '-l|0.0.0.0|' RHKV_PORT= RHKV_MEMORY= --
check env-tls '--tls-ktls|--tls-handshake-timeout|5|--tls-ciphersuites|TLS_AES_128_GCM_SHA256|--tls-ciphers|HIGH|--tls-min-version|1.3|--tls-verify|require|--tls-ca|/t/ca|--tls-key|/t/k|--tls-cert|/t/c|--tls-port|11312|-p|0|-l|0.0.0.0|' \
	RHKV_PORT=0 RHKV_TLS_PORT=11312 RHKV_TLS_CERT=/t/c RHKV_TLS_KEY=/t/k \
	RHKV_TLS_CA=/t/ca RHKV_TLS_VERIFY=require RHKV_TLS_MIN_VERSION=1.3 \
	RHKV_TLS_CIPHERS=HIGH RHKV_TLS_CIPHERSUITES=TLS_AES_128_GCM_SHA256 \
	RHKV_TLS_HANDSHAKE_TIMEOUT=5 RHKV_TLS_KTLS=1 --

# With the real rhkvd (when meson gives its path): 0.0.0.0 without a
# password is refused (protected mode), with a message naming the fixes;
# nothing ever listens beyond loopback here.
real=${RHKV_TEST_SERVER_DEFAULT:-}
if [ -x "$real" ]; then
	out=$(env -i PATH=/usr/bin:/bin RHKVD="$real" sh "$entry" -p 1 2>&1)
	rc=$?
	if [ "$rc" = 64 ] && [[ $out == *RHKV_AUTH_FILE* ]] &&
		[[ $out == *--no-protected-mode* ]]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL protected-mode: rc $rc, output: $out" >&2
	fi
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
