#!/usr/bin/env bash
# Installs what building and running need when missing (scripts/deps.sh,
# not the tests' extras), builds (release), and runs rhkvd in the
# foreground on 127.0.0.1:11311; arguments are passed to it (rhkvd --help).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
# rhkvd and rhkv-cli only: not the examples, rhkv-bench or the tests.
./scripts/build.sh build --buildtype=release -- server/rhkvd client/cli/rhkv-cli
echo "run: build/server/rhkvd -v $*"
exec build/server/rhkvd -v "$@"
