#!/usr/bin/env bash
# Warm restart, rhkvd's --memory-file (warm/warm_restart.py says what each
# part checks): graceful (SIGTERM and SIGUSR1 with 100,000 items), kill
# (SIGKILL under write load, mid-seal, clean stops) and refusals (the file's
# mode, owner, lock; other settings, truncation, corruption, versions).
# RHKV_TEST_SOAK=1 runs the longer versions (500,000 items, 24 rounds).
# usage: test_warm_restart.sh graceful|kill|refusals|sequence
# Skips (77) when the server under test is memcached: the flag is rhkvd's.
set -euo pipefail
here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

! is_memcached || skip "--memory-file is rhkvd's; the server is memcached"
if [ ! -d /dev/shm ] || [ ! -w /dev/shm ]; then skip "no writable /dev/shm"; fi
exec "$py" "$here/warm/warm_restart.py" "$server" "$1"
