#!/usr/bin/env bash
# python-memcached and pymemcache (Debian's python3-memcache and
# python3-pymemcache, under /usr/bin/python3) against the server under test:
# clients/python.py; then pymemcache's flush_all against -F, and its
# shutdown without -A (refused) and with it (the server exits). Skips (77)
# without the packages.
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
"$py" "$here/clients/python.py" "$port" shutdown-refused
stop_checked

echo "== -F (flush_all refused)"
start_server -F
"$py" "$here/clients/python.py" "$port" no-flush
stop_checked

echo "== -A: shutdown stops the server"
start_server -A
"$py" "$here/clients/python.py" "$port" shutdown
for _ in $(seq 600); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
	echo "FAIL: the server still runs 60 s after shutdown"
	exit 1
fi
stop_checked # reaps it: exit status 0
echo "PASS"
