#!/usr/bin/env bash
# build-checks.sh: the builds scripts/test.sh checks with after the normal
# one, each configured (or reconfigured) and built with what its tests use:
#   build-asan  ASan+UBSan, everything (its whole suite runs);
#   build-tsan  TSan: rhkvd and the stress suite's executables;
#   build-fuzz  clang, ASan+UBSan, libFuzzer: the fuzz suite's targets.
# test.sh runs this at the lowest priority while the normal build's tests
# run: they leave a core idle much of the time (their heavy tests run one
# at a time), and the builds take it; once those tests end it gives what is
# left of the builds the normal priority.
set -euo pipefail
cd "$(dirname "$0")/.."

# -O1: the optimisation the sanitizers' authors advise (a faster suite; at
# -O0 it takes a minute longer, at -O2 reports can lose their frames).
./scripts/build.sh build-asan -Dwerror=true -Dtests=enabled --buildtype=debug \
	-Doptimization=1 -Db_sanitize=address,undefined -Db_lundef=false

# setup DIR OPTIONS...: configures DIR, or reconfigures it when it exists.
setup() {
	local dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
}

# Under TSan only the stress suite and rhkvd run (criterion cannot start
# under TSan on Debian 12): those, not the whole project again.
echo "build: build-tsan (TSan): rhkvd and the stress suite"
setup build-tsan -Dwerror=true --buildtype=debugoptimized -Db_sanitize=thread
targets=$(python3 scripts/suite-targets.py build-tsan stress)
# shellcheck disable=SC2086
ninja -C build-tsan server/rhkvd $targets

echo "build: build-fuzz (clang, -Dfuzz=true, ASan+UBSan): the fuzz targets"
CC=clang setup build-fuzz -Dfuzz=true --buildtype=debugoptimized \
	-Db_sanitize=address,undefined -Db_lundef=false
targets=$(python3 scripts/suite-targets.py build-fuzz fuzz)
# shellcheck disable=SC2086
ninja -C build-fuzz $targets
