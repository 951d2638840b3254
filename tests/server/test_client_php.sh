#!/usr/bin/env bash
# php-memcached (Debian's php-cli and php-memcached, libmemcached inside)
# against the server under test: clients/php.php in text and in binary mode,
# then SASL PLAIN (binary) against a second server that wants it
# (start_auth_server: rhkvd --auth-file, memcached -S with a sasldb).
# Skips (77) without the packages.
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

need_cmd php "php-cli php-memcached"
php -r 'exit(class_exists("Memcached") ? 0 : 1);' ||
	skip "the php memcached extension is missing (apt-get install php-memcached)"

tmp=$(mktemp -d)
trap 'lib_cleanup; rm -rf "$tmp"' EXIT
start_server
echo "== server: $server on port $port (pid $pid)"
php "$here/clients/php.php" "$port" text
php "$here/clients/php.php" "$port" binary
stop_checked

if start_auth_server "$tmp"; then
	php "$here/clients/php.php" "$port" sasl "$auth_password"
	stop_checked
fi
echo "PASS"
