#!/bin/bash
# Every long option rhkvd --help lists is documented: in man/rhkvd.1 (as
# roff writes it, \-\-name) and in README.md's table of flags (`--name` in
# a table row). A new option without documentation fails here.
# usage: test_option_docs.sh RHKVD MAN_PAGE README
set -u
rhkvd=$1 man=$2 readme=$3

opts=$("$rhkvd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
count=$(printf '%s\n' "$opts" | grep -c .)
if [ "$count" -lt 10 ]; then
	echo "FAIL: only $count long options in rhkvd --help" >&2
	exit 1
fi

# The rows of the table under the "| flag | default | meaning |" header.
rows=$(awk '/^\| flag \| default \| meaning \|/ { t = 1; next }
	t && !/^\|/ { exit } t' "$readme")
failed=0
for opt in $opts; do
	# \-\-name, not followed by more of a name (--listen is not
	# --listen-more).
	roff=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
	if ! grep -qE -- "$roff([^a-z\\\\]|\$)" "$man"; then
		echo "FAIL: $opt is not in $man" >&2
		failed=$((failed + 1))
	fi
	if ! printf '%s\n' "$rows" | grep -qE -- "\`${opt}[ =\`]"; then
		echo "FAIL: $opt is not in the flag table of $readme" >&2
		failed=$((failed + 1))
	fi
done
echo "$count long options, $failed missing"
[ "$failed" = 0 ]
