#!/usr/bin/env bash
# Cache::Memcached::Fast (Debian's libcache-memcached-fast-perl) against the
# server under test: clients/perl.pl. Skips (77) without the package.
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

need_cmd perl perl
perl -MCache::Memcached::Fast -e 1 2>/dev/null ||
	skip "Cache::Memcached::Fast missing (apt-get install libcache-memcached-fast-perl)"

trap lib_cleanup EXIT
start_server
echo "== server: $server on port $port (pid $pid)"
perl "$here/clients/perl.pl" "$port"
stop_checked
echo "PASS"
