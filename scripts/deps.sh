#!/usr/bin/env bash
# deps.sh [--test]: installs the Debian 12 packages rhkv needs, when missing.
#   deps.sh         what building and running rhkvd, rhkv-cli and rhkv-bench
#                   need (scripts/run.sh): the compiler, meson, and the -dev
#                   packages of the libraries they link; nothing else.
#   deps.sh --test  that plus what the tests need (scripts/test.sh).
# The test extras: criterion (the unit and integration tests), clang and
# its runtime (the fuzz targets), clang-format (the format check), openssl
# (test certificates) and netcat; memcached, libmemcached-tools,
# libmemcached-dev and python3-pymemcache are the peers and real clients
# the integration tests check rhkvd against; python3-msgpack is
# tests/model's msgpack codec; the rest of the last group are the clients
# of tests/server/test_client_*.sh (and Node, below); sasl2-bin's
# saslpasswd2 and libsasl2-modules' PLAIN let memcached -S check the SASL
# parts of those tests.
# Idempotent: does nothing (no apt-get update) when all are present.
set -euo pipefail

test_extras=0
case ${1:-} in
'') ;;
--test) test_extras=1 ;;
*)
	echo "usage: $0 [--test]" >&2
	exit 2
	;;
esac

# libc6-dev: gcc only recommends it, and apt here installs no recommends.
packages=(
	meson ninja-build pkg-config gcc libc6-dev
	libevent-dev liburcu-dev libmsgpack-dev libssl-dev libedit-dev
)
if [ $test_extras = 1 ]; then
	packages+=(
		libcriterion-dev clang clang-format libclang-rt-14-dev
		openssl netcat-openbsd
		memcached libmemcached-tools libmemcached-dev python3-pymemcache
		nutcracker python3-msgpack
		python3-memcache php-cli php-memcached libcache-memcached-fast-perl
		ruby ruby-dalli sasl2-bin libsasl2-modules
	)
	# Node and npm (test_client_node.sh installs memjs and memcached with
	# npm into the build tree): Debian's nodejs and npm, but only where the
	# commands are missing. A machine may have Node from another
	# repository, whose nodejs package bundles npm; Debian's npm would
	# conflict with it there, so nothing is installed when `node` and
	# `npm` both run.
	if ! command -v node >/dev/null; then
		packages+=(nodejs)
	fi
	if ! command -v npm >/dev/null; then
		packages+=(npm)
	fi
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#packages[@]} packages present"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing ${missing[*]}; run as root to install them" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
