#!/usr/bin/env bash
# build.sh DIR [MESON_OPTIONS...] [-- TARGETS...]: configures DIR (or
# reconfigures it with the given options when it exists) and builds it:
# everything, or only the ninja TARGETS named after -- (and what they need).
set -euo pipefail
dir=$1
shift
opts=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	opts+=("$1")
	shift
done
[ $# -gt 0 ] && shift # the --
if [ -f "$dir/build.ninja" ]; then
	meson setup --reconfigure "$dir" "${opts[@]}" >/dev/null
else
	meson setup "$dir" "${opts[@]}" >/dev/null
fi
echo "build: $dir (${opts[*]})${*:+: $*}"
ninja -C "$dir" "$@"
