#!/usr/bin/env bash
# Dalli 3.0 (Debian's ruby-dalli; memcached's binary protocol only) against
# the server under test: clients/ruby.rb. Skips (77) without the packages.
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

need_cmd ruby ruby
ruby -e 'require "dalli"' 2>/dev/null ||
	skip "Dalli missing (apt-get install ruby-dalli)"

trap lib_cleanup EXIT
start_server
echo "== server: $server on port $port (pid $pid)"
ruby "$here/clients/ruby.rb" "$port"
stop_checked
echo "PASS"
