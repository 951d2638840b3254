#!/usr/bin/env bash
# Node clients against the server under test (clients/node.js): memjs
# (memcached's binary protocol; then SASL PLAIN, start_auth_server)
# and the `memcached` package (text). The packages, at the versions pinned
# in clients/node/package-lock.json, are installed with `npm ci` into
# RHKV_NODE_PREFIX (meson sets it to a folder of the build tree; unset, a
# temporary folder removed on exit), once: a later run whose lockfile
# matches reuses them. Skips (77) without node and npm, or when the npm
# registry cannot be reached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

need_cmd node nodejs
need_cmd npm npm
need_cmd flock util-linux

tmp=$(mktemp -d)
trap 'lib_cleanup; rm -rf "$tmp"' EXIT
prefix=${RHKV_NODE_PREFIX:-$tmp/node}
lock=$here/clients/node/package-lock.json

# install_packages: npm ci into $prefix unless its lockfile already matches.
install_packages() {
	if cmp -s "$lock" "$prefix/package-lock.json" &&
		NODE_PATH=$prefix/node_modules node -e 'require("memjs"); require("memcached")' 2>/dev/null; then
		echo "== node packages: up to date in $prefix"
		return 0
	fi
	rm -rf "$prefix/node_modules" "$prefix/package-lock.json"
	cp "$here/clients/node/package.json" "$prefix/"
	echo "== npm ci in $prefix"
	if (cd "$prefix" && cp "$lock" . &&
		timeout 240 npm ci --no-audit --no-fund --loglevel=error \
			--fetch-retries=1 --fetch-timeout=60000); then
		return 0
	fi
	rm -f "$prefix/package-lock.json"
	if ! timeout 60 npm ping --fetch-retries=0 --fetch-timeout=30000 >/dev/null 2>&1; then
		skip "the npm registry cannot be reached: memjs and memcached not installed"
	fi
	echo "FAIL: npm ci failed with the registry reachable"
	exit 1
}
mkdir -p "$prefix"
exec 9>"$prefix/.install-lock"
flock -w 300 9
install_packages
flock -u 9
export NODE_PATH=$prefix/node_modules

start_server
echo "== server: $server on port $port (pid $pid)"
node "$here/clients/node.js" "$port" memjs
node "$here/clients/node.js" "$port" memcached
stop_checked

if start_auth_server "$tmp"; then
	node "$here/clients/node.js" "$port" sasl "$auth_password"
	stop_checked
fi
echo "PASS"
