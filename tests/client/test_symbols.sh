#!/bin/sh
# librhkv.so exports rhkv_* and nothing else (the version script and hidden
# visibility keep the codec and rhkv__* internals inside).
set -eu
lib=${LIBRHKV:?LIBRHKV: the path of librhkv.so}
syms=$("${NM:-nm}" -D --defined-only "$lib" | awk '{print $NF}')
[ -n "$syms" ] || { echo "no symbols in $lib"; exit 1; }
bad=$(printf '%s\n' "$syms" | grep -v '^rhkv_' | grep -v '^RHKV_0$' || true)
inner=$(printf '%s\n' "$syms" | grep '^rhkv__' || true)
if [ -n "$bad$inner" ]; then
	echo "symbols outside rhkv_ exported by $lib:"
	printf '%s\n' $bad $inner
	exit 1
fi
echo "$(printf '%s\n' "$syms" | grep -c '^rhkv_') rhkv_ symbols, nothing else"
