#!/usr/bin/env bash
# Installs what is missing, builds, and runs the program. Until the daemon
# lands, the program is rht-demo (the rhashtable growing and shrinking
# under two threads); arguments are passed to it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh build --buildtype=release
echo "run: build/server/rht-demo $*"
exec build/server/rht-demo "$@"
