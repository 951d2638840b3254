#!/usr/bin/env bash
# build-checks.sh [asan] [tsan] [fuzz]: the builds scripts/test.sh checks
# with after the normal one (all three when none is named), each
# configured (or reconfigured) and built with what its tests use:
#   asan  build-asan  ASan+UBSan, everything (its whole suite runs);
#   tsan  build-tsan  TSan: rhkvd and the stress suite's executables;
#   fuzz  build-fuzz  clang, ASan+UBSan, libFuzzer: the fuzz suite's targets.
# test.sh runs it at the lowest priority while tests run: the ASan build
# beside the normal build's tests, the TSan and fuzz builds beside the ASan
# tests. Those tests leave a core idle much of the time (their heavy tests
# run one at a time, many wait on the clock or the network), and the builds
# take it; once the tests end, test.sh gives what is left of the builds the
# normal priority. Each build ends with a line saying how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
builds=" ${*:-asan tsan fuzz} "
for b in $builds; do
	case $b in
	asan | tsan | fuzz) ;;
	*)
		echo "build-checks.sh: unknown build '$b' (asan, tsan, fuzz)" >&2
		exit 2
		;;
	esac
done

# -O1: the optimisation the sanitizers' authors advise (a faster suite; at
# -O0 it takes a minute longer, at -O2 reports can lose their frames).
if [[ $builds == *" asan "* ]]; then
	start=$SECONDS
	./scripts/build.sh build-asan -Dwerror=true -Dtests=enabled \
		--buildtype=debug -Doptimization=1 \
		-Db_sanitize=address,undefined -Db_lundef=false
	echo "build: build-asan done in $((SECONDS - start)) s"
fi

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
if [[ $builds == *" tsan "* ]]; then
	start=$SECONDS
	echo "build: build-tsan (TSan): rhkvd and the stress suite"
	setup build-tsan -Dwerror=true --buildtype=debugoptimized \
		-Db_sanitize=thread
	targets=$(python3 scripts/suite-targets.py build-tsan stress)
	# shellcheck disable=SC2086
	ninja -C build-tsan server/rhkvd $targets
	echo "build: build-tsan done in $((SECONDS - start)) s"
fi

if [[ $builds == *" fuzz "* ]]; then
	start=$SECONDS
	echo "build: build-fuzz (clang, -Dfuzz=true, ASan+UBSan): the fuzz targets"
	CC=clang setup build-fuzz -Dfuzz=true --buildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false
	targets=$(python3 scripts/suite-targets.py build-fuzz fuzz)
	# shellcheck disable=SC2086
	ninja -C build-fuzz $targets
	echo "build: build-fuzz done in $((SECONDS - start)) s"
fi
