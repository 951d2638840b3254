#!/bin/sh
# librhkv.so exports rhkv_* and nothing else (the version script and hidden
# visibility keep the codec and rhkv__* internals inside), each symbol in
# a version node (RHKV_0, then one per release that added calls), and the
# calls a release added in that release's node: a program that uses them
# is then refused at load time by an older librhkv.so.0.
set -eu
lib=${LIBRHKV:?LIBRHKV: the path of librhkv.so}
syms=$("${NM:-nm}" -D --defined-only "$lib" | awk '{print $NF}')
[ -n "$syms" ] || { echo "no symbols in $lib"; exit 1; }
bad=$(printf '%s\n' "$syms" | grep -v '^rhkv_' | grep -v '^RHKV_[0-9.]*$' || true)
inner=$(printf '%s\n' "$syms" | grep '^rhkv__' || true)
if [ -n "$bad$inner" ]; then
	echo "symbols outside rhkv_ exported by $lib:"
	printf '%s\n' $bad $inner
	exit 1
fi
unversioned=$(printf '%s\n' "$syms" | grep '^rhkv_' | grep -v '@@RHKV_' || true)
if [ -n "$unversioned" ]; then
	echo "symbols without a version node in $lib:"
	printf '%s\n' $unversioned
	exit 1
fi
# release: the calls it added (rhkv.map)
for want in rhkv_cluster_mget_moved@@RHKV_0.2; do
	printf '%s\n' "$syms" | grep -qx "$want" || {
		echo "$want: not in $lib (rhkv.map lost its node?)"
		exit 1
	}
done
echo "$(printf '%s\n' "$syms" | grep -c '^rhkv_') rhkv_ symbols, nothing else"
