#!/usr/bin/env bash
# Installs what is missing (scripts/deps.sh --test: what building and the
# tests need), then builds and runs the whole test suite:
#   1. formatting check (clang-format, the repo's .clang-format);
#   2. the normal build, warnings as errors, every test but the 'asan-only'
#      suite (heavy tests rerun over TLS: tests/meson.build);
#   3. an ASan+UBSan build, every test but those of the 'normal-only' suite
#      (other programs checked against rhkvd: tests/meson.build), leaks and
#      UB as errors;
#   4. a TSan build of rhkvd and the stress tests (plain executables:
#      criterion cannot start under TSan on Debian 12): the stress tests,
#      and the integration tests of the normal build whose connections
#      race the server's threads (suite 'tsan-daemon') against the TSan
#      rhkvd;
#   5. the libFuzzer targets (clang, ASan+UBSan): each replays its seed
#      corpus and runs a fixed number of new inputs with a fixed seed;
#      they run beside the tests of 4.
# The builds of 3-5 (scripts/build-checks.sh) run at the lowest priority
# beside tests: that of 3 beside the tests of 2, those of 4 and 5 beside
# the tests of 3.
# Ends with the time each step took, each test that did not pass with the
# end of its output (CI shows only the end of the whole output), and one line
# "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
steps=()
failures=$(mktemp)
checks_pid=
fuzz_pid=
# On any exit, the background builds and fuzz tests (each a process group)
# stop too.
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	local pid
	rm -f "$failures"
	for pid in $checks_pid $fuzz_pid; do
		kill -- "-$pid" 2>/dev/null || true
	done
}
trap cleanup EXIT
step_start=$SECONDS
# step_done NAME: records how long the step since the last one took.
step_done() {
	steps+=("$(printf '%5ds  %s' $((SECONDS - step_start)) "$1")")
	step_start=$SECONDS
}
./scripts/deps.sh --test
step_done "deps"

echo "== format: clang-format --dry-run --Werror"
dirs=$(ls -d common proto server client tests 2>/dev/null)
# shellcheck disable=SC2086
find $dirs -name '*.[ch]' -print0 |
	xargs -0 -r clang-format --dry-run --Werror

passed=0
failed=0
# tally DIR LABEL: adds up the counts of DIR's last meson test run, and
# keeps the end of each failing test's output for the summary.
tally() {
	local log="$1/meson-logs/testlog.json"
	if [ -f "$log" ]; then
		passed=$((passed + $(grep -c '"result": "OK"' "$log" || true)))
		failed=$((failed + $(grep -vc '"result": "\(OK\|SKIP\)"' "$log" || true)))
		python3 scripts/failed-tests.py "$log" "$2" >>"$failures"
	fi
}
# run_suite DIR [MESON_TEST_OPTIONS...]: runs meson test, adds up the counts.
run_suite() {
	local dir=$1 rc=0
	shift
	echo "== test: $dir $*"
	meson test -C "$dir" --print-errorlogs "$@" || rc=$?
	tally "$dir" "$dir $*"
	step_done "test: $dir $*"
	return $rc
}

# The sanitizer and fuzz builds compile at the lowest priority while tests
# run (scripts/build-checks.sh says why), in a process group of their own.
# start_checks BUILDS...: starts scripts/build-checks.sh BUILDS so.
start_checks() {
	local names="$*"
	checks_log="build/build-checks-${names// /-}.log"
	setsid nice -n 19 ./scripts/build-checks.sh "$@" >"$checks_log" 2>&1 &
	checks_pid=$!
}
# finish_checks: the tests beside the builds are done, so what is left of
# them takes its full share (at nice 19 it would crawl beside any other load
# on the machine; only root may raise a priority, otherwise they finish at
# nice 19). Waits for them and shows their output; false when they failed.
finish_checks() {
	local rc=0
	renice -n 0 -g "$checks_pid" >/dev/null 2>&1 || true
	echo "== builds: scripts/build-checks.sh, $checks_log"
	wait "$checks_pid" || rc=$?
	checks_pid=
	cat "$checks_log"
	step_done "builds: waited for $checks_log"
	if [ "$rc" -ne 0 ]; then
		echo "scripts/build-checks.sh failed (exit $rc)"
		echo "-- scripts/build-checks.sh failed (exit $rc): the tests of its builds did not run; its output is above" >>"$failures"
		failed=$((failed + 1))
		status=1
		return 1
	fi
}

step_done "format"

status=0
./scripts/build.sh build -Dwerror=true -Dtests=enabled
step_done "build: build"
start_checks asan
# Three tests at a time, on two cores: many of them wait on the network
# and the clock more than they compute (the heavy ones still run alone).
# The model checker runs 15 s per mode here (20 s in a plain meson test),
# 10 s against the sanitizer daemons below: the suite's time stays under
# 15 minutes.
RHKV_MODEL_SECONDS=15 run_suite build --no-suite asan-only \
	--num-processes 3 || status=1
if finish_checks; then
	start_checks tsan fuzz
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	# Not the 'normal-only' suite (tests/meson.build says why).
	RHKV_MODEL_SECONDS=10 run_suite build-asan --no-suite normal-only \
		--num-processes 3 --timeout-multiplier 3 || status=1
fi
if [ -n "$checks_pid" ] && finish_checks; then
	# The fuzz targets replay their corpora beside the TSan tests, which
	# leave a core idle much of the time; their output follows those
	# tests'. In a process group of their own, which the exit trap stops.
	fuzz_log=build/fuzz-tests.log
	setsid meson test -C build-fuzz --print-errorlogs --suite fuzz \
		>"$fuzz_log" 2>&1 &
	fuzz_pid=$!

	export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
	run_suite build-tsan --suite stress --timeout-multiplier 3 || status=1
	# The daemon under TSan: the integration tests whose connections race
	# its threads (criterion and scripts, normal build) drive the TSan
	# rhkvd; a report makes it exit non-zero, which they check.
	RHKV_TEST_SERVER=$PWD/build-tsan/server/rhkvd RHKV_MODEL_SECONDS=10 \
		run_suite build --no-rebuild --suite tsan-daemon \
		--timeout-multiplier 3 || status=1

	echo "== test: build-fuzz --suite fuzz (beside the TSan tests)"
	wait "$fuzz_pid" || status=1
	fuzz_pid=
	cat "$fuzz_log"
	tally build-fuzz "build-fuzz --suite fuzz"
	step_done "test: build-fuzz --suite fuzz (waited for, beside the TSan tests)"
fi

echo "== steps"
printf '%s\n' "${steps[@]}"
echo "== did not pass"
cat "$failures"
echo "$passed passed, $failed failed"
exit $status
