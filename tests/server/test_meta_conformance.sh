#!/usr/bin/env bash
# memcached's meta protocol (mg ms md ma mn me), meta/conformance.py:
#   - differential: every case of meta/cases_diff.txt and cases_diff.py runs
#     against memcached 1.6.18 (the oracle) and the server under test;
#     replies must match byte for byte but for CAS values, times within a
#     second and me's cls/size;
#   - golden: meta/cases_golden.txt, what the current protocol.txt adds to
#     1.6.18, against the server under test only (not when it is memcached);
#   - race: 50 connections fetch one stale key, or one missing key with N30:
#     one W, 49 Z; add one key: one HD; increment one counter: 1 to 50
#     (both servers).
# Usage: test_meta_conformance.sh [--server-only] [--brief] [FILTER...]
#   --server-only  no memcached: the golden and race parts only
#   --brief        name the failing cases only
#   FILTER         substrings of case names (conformance.py --list)
# Without memcached the differential part is skipped: the golden and race
# parts run, and the script exits 77 if they pass.
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

server_only=
args=()
for a in "$@"; do
	case $a in
	--server-only) server_only=1 ;;
	*) args+=("$a") ;;
	esac
done

have_ref=
if [ -z "$server_only" ] && command -v memcached >/dev/null; then
	have_ref=1
fi
if is_memcached && [ -z "$have_ref" ]; then
	skip "memcached against itself, without memcached (or --server-only)"
fi

trap lib_cleanup EXIT
start_server
sut_port=$port
sut_pid=$pid
echo "== server under test: $server on port $sut_port (pid $sut_pid)"

opts=(--port "$sut_port" --race)
if ! is_memcached; then
	opts+=(--golden)
fi
ref_pid=
if [ -n "$have_ref" ]; then
	sut=$server
	server=memcached
	start_server
	server=$sut
	ref_pid=$pid
	opts+=(--ref-port "$port")
	echo "== reference: memcached on port $port (pid $ref_pid)"
fi

rc=0
"$py" "$here/meta/conformance.py" "${opts[@]}" "${args[@]}" || rc=$?

if [ -n "$ref_pid" ]; then
	stop_server "$ref_pid"
fi
pid=$sut_pid
stop_checked
if [ "$rc" -ne 0 ]; then
	echo "FAIL"
	exit 1
fi
if [ -z "$have_ref" ] && [ -z "$server_only" ]; then
	skip "memcached missing (apt-get install memcached): the differential" \
		"part did not run (golden and race passed)"
fi
echo "PASS"
