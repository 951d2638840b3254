#!/usr/bin/env bash
# python-memcached and pymemcache (Debian's python3-memcache and
# python3-pymemcache, under /usr/bin/python3) against the server under test:
# clients/python.py. Skips (77) without the packages.
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

"$py" -c 'import memcache' 2>/dev/null ||
	skip "python-memcached missing (apt-get install python3-memcache)"
"$py" -c 'import pymemcache' 2>/dev/null ||
	skip "pymemcache missing (apt-get install python3-pymemcache)"

trap lib_cleanup EXIT
start_server
echo "== server: $server on port $port (pid $pid)"
"$py" "$here/clients/python.py" "$port"
stop_checked
echo "PASS"
