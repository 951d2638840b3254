#!/usr/bin/env bash
# build.sh DIR [MESON_OPTIONS...]: configures DIR (or reconfigures it with
# the given options when it exists) and builds it.
set -euo pipefail
dir=$1
shift
if [ -f "$dir/build.ninja" ]; then
	meson setup --reconfigure "$dir" "$@" >/dev/null
else
	meson setup "$dir" "$@" >/dev/null
fi
echo "build: $dir ($*)"
ninja -C "$dir"
