#!/bin/sh
# The container's entrypoint: runs rhkvd with flags from the command line
# and from RHKV_* environment variables, or any other command given.
#
#   (no arguments) or `rhkvd ...`  rhkvd [env flags] [...]
#   -x ...                          rhkvd [env flags] -x ...
#   anything else                   run as given (rhkv-cli, sh, ...)
#
# Environment (each optional): RHKV_LISTEN (default 0.0.0.0), RHKV_PORT,
# RHKV_MEMORY (MiB), RHKV_THREADS, RHKV_CONN_LIMIT, RHKV_MAX_ITEM_SIZE,
# RHKV_IDLE_TIMEOUT, RHKV_METRICS_PORT, RHKV_MEMORY_FILE (--memory-file:
# a path on a tmpfs mount kept across restarts, docker/README.md),
# RHKV_VERBOSE=1|2,
# RHKV_NO_PROTECTED_MODE=1, RHKV_AUTH_FILE (read by rhkvd itself), and
# for TLS RHKV_TLS_PORT, RHKV_TLS_CERT, RHKV_TLS_KEY, RHKV_TLS_CA,
# RHKV_TLS_VERIFY, RHKV_TLS_MIN_VERSION, RHKV_TLS_CIPHERS,
# RHKV_TLS_CIPHERSUITES, RHKV_TLS_HANDSHAKE_TIMEOUT, RHKV_TLS_KTLS=1.
# Listening on 0.0.0.0 needs a password (RHKV_AUTH_FILE) or the explicit
# opt-out RHKV_NO_PROTECTED_MODE=1: rhkvd refuses to start otherwise.
set -eu

RHKVD=${RHKVD:-/usr/local/bin/rhkvd}

if [ $# -gt 0 ] && [ "$1" = rhkvd ]; then
	shift
elif [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	exec "$@"
fi

# Flags from the environment come first, so that arguments override them.
# The listen address too, unless the arguments give one (rhkvd binds every
# -l it gets, and the same address twice fails).
listen_given=
for a in "$@"; do
	case $a in
	-l | -l* | --listen | --listen=*) listen_given=1 ;;
	esac
done
[ -n "$listen_given" ] || set -- -l "${RHKV_LISTEN:-0.0.0.0}" "$@"
[ -n "${RHKV_PORT:-}" ] && set -- -p "$RHKV_PORT" "$@"
[ -n "${RHKV_MEMORY:-}" ] && set -- -m "$RHKV_MEMORY" "$@"
[ -n "${RHKV_THREADS:-}" ] && set -- -t "$RHKV_THREADS" "$@"
[ -n "${RHKV_CONN_LIMIT:-}" ] && set -- -c "$RHKV_CONN_LIMIT" "$@"
[ -n "${RHKV_MAX_ITEM_SIZE:-}" ] && set -- -I "$RHKV_MAX_ITEM_SIZE" "$@"
[ -n "${RHKV_IDLE_TIMEOUT:-}" ] &&
	set -- --idle-timeout "$RHKV_IDLE_TIMEOUT" "$@"
[ -n "${RHKV_METRICS_PORT:-}" ] &&
	set -- --metrics-port "$RHKV_METRICS_PORT" "$@"
[ -n "${RHKV_MEMORY_FILE:-}" ] &&
	set -- --memory-file "$RHKV_MEMORY_FILE" "$@"
case ${RHKV_VERBOSE:-} in
1) set -- -v "$@" ;;
2) set -- -vv "$@" ;;
esac
case ${RHKV_NO_PROTECTED_MODE:-} in
1 | yes | true) set -- --no-protected-mode "$@" ;;
esac
# TLS: each RHKV_TLS_* variable is the --tls-* flag of the same name.
[ -n "${RHKV_TLS_PORT:-}" ] && set -- --tls-port "$RHKV_TLS_PORT" "$@"
[ -n "${RHKV_TLS_CERT:-}" ] && set -- --tls-cert "$RHKV_TLS_CERT" "$@"
[ -n "${RHKV_TLS_KEY:-}" ] && set -- --tls-key "$RHKV_TLS_KEY" "$@"
[ -n "${RHKV_TLS_CA:-}" ] && set -- --tls-ca "$RHKV_TLS_CA" "$@"
[ -n "${RHKV_TLS_VERIFY:-}" ] && set -- --tls-verify "$RHKV_TLS_VERIFY" "$@"
[ -n "${RHKV_TLS_MIN_VERSION:-}" ] &&
	set -- --tls-min-version "$RHKV_TLS_MIN_VERSION" "$@"
[ -n "${RHKV_TLS_CIPHERS:-}" ] &&
	set -- --tls-ciphers "$RHKV_TLS_CIPHERS" "$@"
[ -n "${RHKV_TLS_CIPHERSUITES:-}" ] &&
	set -- --tls-ciphersuites "$RHKV_TLS_CIPHERSUITES" "$@"
[ -n "${RHKV_TLS_HANDSHAKE_TIMEOUT:-}" ] &&
	set -- --tls-handshake-timeout "$RHKV_TLS_HANDSHAKE_TIMEOUT" "$@"
case ${RHKV_TLS_KTLS:-} in
1 | yes | true) set -- --tls-ktls "$@" ;;
esac
exec "$RHKVD" "$@"
