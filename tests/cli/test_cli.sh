#!/usr/bin/env bash
# rhkv-cli against a live rhkvd: one-shot commands with their exact output
# in human and --raw modes, exit statuses (0, 1 on errors, 64 on usage
# errors), an unreachable server, commands piped on stdin, scan --pattern,
# --stat (its lines, header, servers and rates), the unix socket, and the
# interactive prompt driven through a pty.
# RHKV_CLI and RHKVD are the paths meson passes (tests/cli/meson.build);
# starts its own rhkvd on a free 127.0.0.1 port and stops it by PID on exit.
set -uo pipefail
# stop_server and free_port (it sets server and py too, set again below).
# shellcheck source=tests/server/lib_server.sh
. "$(dirname "$0")/../server/lib_server.sh"

cli=${RHKV_CLI:?RHKV_CLI: path to rhkv-cli}
server=${RHKVD:?RHKVD: path to rhkvd}
py=/usr/bin/python3

if ! [ -x "$py" ]; then
	echo "SKIP: $py missing"
	exit 77
fi

tmp=$(mktemp -d)
trap 'stop_server; rm -rf "$tmp"' EXIT

sock=$tmp/rhkvd.sock
start_server() {
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		"$server" -p "$port" -l 127.0.0.1 -t 2 -s "$sock" \
			>>"$tmp/server.log" 2>&1 &
		pid=$!
		for _ in $(seq 600); do
			kill -0 "$pid" 2>/dev/null || break
			if "$cli" -p "$port" ping >/dev/null 2>&1 &&
				listens "$pid" "$port"; then
				return 0
			fi
			sleep 0.1
		done
		stop_server
	done
	echo "could not start $server" >&2
	exit 1
}
start_server

passed=0
failed=0
ok() {
	passed=$((passed + 1))
}
bad() {
	failed=$((failed + 1))
	echo "FAIL: $*" >&2
}

# c ARGS...: runs rhkv-cli against the server; sets out, err (exact, with
# trailing newlines kept) and rc.
c() {
	"$cli" -p "$port" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	out=$(
		cat "$tmp/out"
		printf x
	)
	out=${out%x}
	err=$(cat "$tmp/err")
}

# expect NAME RC STDOUT ARGS...: exact stdout and exit status.
expect() {
	local name=$1 want_rc=$2 want_out=$3
	shift 3
	c "$@"
	if [ "$rc" = "$want_rc" ] && [ "$out" = "$want_out" ]; then
		ok
	else
		bad "$name: rc $rc (want $want_rc), stdout $(printf %q "$out")" \
			"(want $(printf %q "$want_out")), stderr: $err"
	fi
}

# expect_re NAME RC REGEX ARGS...: stdout (without its final newline)
# matches the extended regex.
expect_re() {
	local name=$1 want_rc=$2 re=$3
	shift 3
	c "$@"
	if [ "$rc" = "$want_rc" ] && [[ ${out%$'\n'} =~ $re ]]; then
		ok
	else
		bad "$name: rc $rc (want $want_rc), stdout $(printf %q "$out")" \
			"(want /$re/), stderr: $err"
	fi
}

# expect_err NAME RC SUBSTRING ARGS...: the exit status, nothing on
# stdout, and SUBSTRING in stderr.
expect_err() {
	local name=$1 want_rc=$2 sub=$3
	shift 3
	c "$@"
	if [ "$rc" = "$want_rc" ] && [ -z "$out" ] && [[ $err == *"$sub"* ]]; then
		ok
	else
		bad "$name: rc $rc (want $want_rc), stdout $(printf %q "$out")," \
			"stderr $(printf %q "$err") (want *$sub*)"
	fi
}

# ---- one-shot, human and raw ----
expect ping 0 $'PONG\n' ping
expect ping-raw 0 $'PONG\n' --raw ping
expect_re version 0 '^[^[:space:]]+.*$' version
[ "$(printf %s "$out" | wc -l)" = 1 ] && ok || bad "version: not one line"

expect_re set 0 '^STORED cas [0-9]+$' set foo bar
expect_re set-raw 0 '^[0-9]+$' --raw set foo bar
expect get 0 $'"bar"\n' get foo
expect get-raw 0 $'bar\n' --raw get foo
expect get-GET-case 0 $'"bar"\n' GET foo
expect get-miss 0 $'(nil)\n' get nosuchkey
expect get-miss-raw 0 $'\n' --raw get nosuchkey

# Values from argv are taken as they are: bytes escaped on output only.
expect_re set-bytes 0 '^STORED' set bin $'a\tb\nc"d\\e\x01\x7f\xc3\xa9'
expect get-bytes 0 $'"a\\tb\\nc\\"d\\\\e\\x01\\x7f\\xc3\\xa9"\n' get bin
expect get-bytes-raw 0 $'a\tb\nc"d\\e\x01\x7f\xc3\xa9\n' --raw get bin
expect_re set-dash 0 '^STORED' set dash -5
expect get-dash 0 $'"-5"\n' get dash
expect_re set-empty 0 '^STORED' set empty ''
expect get-empty 0 $'""\n' get empty

expect_re set-flags 0 '^STORED cas [0-9]+$' set fl val 42 0
expect_re gets 0 '^"val" \(flags 42, cas [0-9]+\)$' gets fl
expect_re gets-raw 0 $'^val\n42\n[0-9]+$' --raw gets fl
expect gets-miss 0 $'(nil)\n' gets nosuchkey

expect delete 0 $'OK\n' delete foo
expect get-deleted 0 $'(nil)\n' get foo
expect_err delete-miss 1 '(error) NOT_FOUND: ' delete foo

expect_re set-num 0 '^STORED' set n 5
expect incr 0 $'(integer) 8\n' incr n 3
expect decr-raw 0 $'6\n' --raw decr n 2
expect decr-floor 0 $'(integer) 0\n' decr n 100
expect_err incr-nonnum 1 '(error) NON_NUMERIC: ' incr bin 1
expect_err incr-miss 1 '(error) NOT_FOUND: ' incr nosuchkey 1

expect_err add-exists 1 '(error) NOT_STORED: ' add n 1
expect_re add-new 0 '^STORED' add newkey 1
expect_err replace-miss 1 '(error) NOT_STORED: ' replace nosuchkey 1
expect_re replace 0 '^STORED' replace newkey 2
expect get-replaced 0 $'"2"\n' get newkey

expect_re set-s 0 '^STORED' set s b
expect_re append 0 '^STORED' append s c
expect_re prepend 0 '^STORED' prepend s a
expect get-appended 0 $'"abc"\n' get s
expect_err append-miss 1 '(error) NOT_STORED: ' append nosuchkey x

c --raw gets s
cas=$(printf %s "$out" | sed -n 3p)
expect_err cas-stale 1 '(error) EXISTS: ' cas s new $((cas + 1000))
expect_re cas 0 '^STORED cas [0-9]+$' cas s new "$cas"
expect get-cas 0 $'"new"\n' get s
expect_err cas-miss 1 '(error) NOT_FOUND: ' cas nosuchkey v 1

expect touch 0 $'OK\n' touch s 100
expect_err touch-miss 1 '(error) NOT_FOUND: ' touch nosuchkey 100
expect gat 0 $'"new"\n' gat s 100
expect gat-raw 0 $'new\n' --raw gat s 0
expect gat-miss 0 $'(nil)\n' gat nosuchkey 100

expect mget 0 $'1) "new"\n2) (nil)\n3) "2"\n' mget s nosuchkey newkey
expect mget-raw 0 $'new\n\n2\n' --raw mget s nosuchkey newkey

# ---- meta commands ----
expect mg-miss 0 $'(nil)\n' mg nosuchkey v
expect mg-miss-raw 0 $'\n' --raw mg nosuchkey v
expect_re mg-vivify 0 '^"" \(flags 0, cas [0-9]+, ttl (29|30), size 0, la [0-9]+, hit 0, won\)$' mg viv v vivify=30
expect_re mg-vivify-other 0 '^"" \(.*, hit 1, wonby\)$' mg viv v vivify=30
expect_re ms 0 '^STORED cas [0-9]+$' ms mk hello flags=5 ttl=100
expect_re mg 0 '^"hello" \(flags 5, cas [0-9]+, ttl (99|100), size 5, la [0-9]+, hit 0\)$' mg mk v
expect_re mg-meta-only 0 '^\(flags 5, cas [0-9]+, ttl [0-9]+, size 5, la [0-9]+, hit 1\)$' mg mk
expect_re mg-raw 0 $'^hello\nflags=5 cas=[0-9]+ ttl=[0-9]+ size=5 la=[0-9]+ hit=1$' --raw mg mk v
expect_err ms-add-exists 1 '(error) NOT_STORED: ' ms mk x mode=E
expect_re ms-append 0 '^STORED' ms mk '!' mode=A
expect md-invalidate 0 $'OK\n' md mk invalidate
expect_re mg-stale-won 0 '^"hello!" \(.*, won, stale\)$' mg mk v
expect_re mg-stale-other 0 '^"hello!" \(.*, stale, wonby\)$' mg mk v
expect md 0 $'OK\n' md mk
expect_err md-miss 1 '(error) NOT_FOUND: ' md mk
expect ma-vivify 0 $'(integer) 7\n' ma cnt vivify=60 initial=7
expect ma 0 $'(integer) 10\n' ma cnt delta=3
expect ma-newcas 0 $'(integer) 11\n' ma cnt newcas=777
expect_re mg-newcas 0 'cas 777,' mg cnt
expect ma-decr-raw 0 $'0\n' --raw ma cnt mode=D delta=100
expect_err ma-miss 1 '(error) NOT_FOUND: ' ma nosuchkey
expect_err ma-nonnum 1 '(error) NON_NUMERIC: ' ma viv
expect_err mg-badopt 64 "bad option 'bogus'" mg mk bogus
expect_err mg-badttl 64 "bad option 'ttl=soon'" mg mk ttl=soon
expect_err ms-badmode 64 "bad option 'mode=X'" ms mk v mode=X
expect_err ms-bigflags 64 "bad option 'flags=4294967296'" ms mk v flags=4294967296
expect_err md-badcas 64 "bad option 'cas=-1'" md mk cas=-1
expect_err ma-badmode 64 "bad option 'mode=S'" ma cnt mode=S

# Bad keys are errors (exit 1), not usage errors. A space is a key byte.
expect_re set-key-space 0 '^STORED' set 'a b' sp
expect get-key-space 0 $'"sp"\n' get 'a b'
expect_err bad-key-long 1 '(error) BAD_KEY: ' get "$(printf 'k%.0s' $(seq 251))"
expect_err bad-key-empty 1 '(error) BAD_KEY: ' set '' v

# ---- flush_all, scan ----
expect flush 0 $'OK\n' flush_all
expect get-flushed 0 $'(nil)\n' get s
expect scan-empty 0 $'(empty)\n' scan
expect scan-empty-raw 0 '' --raw scan
for k in user:1 user:2 user:3 user:10 item:1 item:2 other; do
	"$cli" -p "$port" set "$k" "v-$k" >/dev/null || bad "set $k"
done
scan_sorted() {
	c "$@"
	[ "$rc" = 0 ] || bad "scan $*: rc $rc: $err"
	printf %s "$out" | LC_ALL=C sort
}
got=$(scan_sorted --raw scan --pattern 'user:*')
[ "$got" = $'user:1\nuser:10\nuser:2\nuser:3' ] && ok ||
	bad "scan --pattern user:*: $(printf %q "$got")"
got=$(scan_sorted --raw scan --pattern 'user:?')
[ "$got" = $'user:1\nuser:2\nuser:3' ] && ok ||
	bad "scan --pattern user:?: $(printf %q "$got")"
got=$(scan_sorted --raw --pattern 'item:*' scan)
[ "$got" = $'item:1\nitem:2' ] && ok ||
	bad "--pattern item:* scan: $(printf %q "$got")"
got=$(scan_sorted scan --pattern 'item:*')
[ "$got" = $'"item:1"\n"item:2"' ] && ok ||
	bad "scan human: $(printf %q "$got")"
got=$(scan_sorted --raw scan)
[ "$got" = $'item:1\nitem:2\nother\nuser:1\nuser:10\nuser:2\nuser:3' ] &&
	ok || bad "scan all: $(printf %q "$got")"
expect scan-nomatch 0 $'(empty)\n' scan --pattern 'zzz*'

# ---- stats ----
expect_re stats 0 '(^|'$'\n'')curr_items: 7('$'\n''|$)' stats
expect_re stats-raw 0 '(^|'$'\n'')curr_items 7('$'\n''|$)' --raw stats
expect_re stats-settings 0 '(^|'$'\n'')[a-z_]+: ' stats settings
# hotkeys: sampled (the server's default), so only the shape is certain;
# the counts are checked in tests/server/test_hotkeys_server.c.
expect_re hotkeys 0 '^reads: [0-9]+ in [0-9.]+ s, sampled 1 in [0-9]+' hotkeys
expect_re hotkeys-raw 0 '^$|^(read|write) 1 [0-9.]+ [0-9.]+ [0-9]+ [0-9]+ (exact|approx) [^ ]' \
	--raw hotkeys 3
expect_err hotkeys-bad 64 'N: a number from 1 to 100' hotkeys 101

# ---- --stat: a line per interval, as redis-cli --stat ----
stat_header='items      used      limit     conns   ops/s      hits    evictions'
num='[0-9.]+[BKMGTP]'
c --stat --count 3 --interval 0.05
mapfile -t lines <<<"${out%$'\n'}"
if [ "$rc" = 0 ] && [ ${#lines[@]} = 4 ] &&
	[ "${lines[0]}" = "$stat_header" ] &&
	[[ ${lines[1]} =~ ^7\ +$num\ +64\.00M\ +[0-9]+\ +-\ +-\ +0$ ]] &&
	[[ ${lines[2]} =~ ^7\ +$num\ +64\.00M\ +[0-9]+\ +[0-9]+\ +(-|[0-9.]+%)\ +0\ \(\+0\)$ ]] &&
	[[ ${lines[3]} =~ ^7\ +$num\ +64\.00M\ +[0-9]+\ +[0-9]+\ +(-|[0-9.]+%)\ +0\ \(\+0\)$ ]]; then
	ok
else
	bad "--stat: rc $rc, out $(printf %q "$out"), err $err"
fi
# the header again after 20 lines
c --stat --count 21 --interval 0.01
mapfile -t lines <<<"${out%$'\n'}"
[ "$rc" = 0 ] && [ ${#lines[@]} = 23 ] && [ "${lines[0]}" = "$stat_header" ] &&
	[ "${lines[21]}" = "$stat_header" ] && [[ ${lines[22]} =~ ^7\  ]] &&
	ok || bad "--stat header every 20 lines: rc $rc, $(printf %q "$out")"
# several servers (the same one over TCP and the unix socket, and one
# that is down): a line each per interval, named; exit 1 for the one down
down=$(free_port)
c --stat --count 1 --interval 0.01 "127.0.0.1:$port" "$sock" "127.0.0.1:$down"
mapfile -t lines <<<"${out%$'\n'}"
w=0
for name in "127.0.0.1:$port" "$sock" "127.0.0.1:$down"; do
	[ ${#name} -gt "$w" ] && w=${#name}
done
if [ "$rc" = 1 ] && [ ${#lines[@]} = 4 ] &&
	[ "${lines[0]}" = "$(printf '%-*s %s' "$w" server "$stat_header")" ] &&
	[[ ${lines[1]} == "$(printf '%-*s 7 ' "$w" "127.0.0.1:$port")"* ]] &&
	[[ ${lines[2]} == "$(printf '%-*s 7 ' "$w" "$sock")"* ]] &&
	[[ ${lines[3]} == "$(printf '%-*s (error) CONN: ' "$w" "127.0.0.1:$down")"* ]]; then
	ok
else
	bad "--stat servers: rc $rc, out $(printf %q "$out"), err $err"
fi
# The rates cover one interval: 100 gets, half of them hits, sent between
# the first and the second line. Sent too late (a loaded machine), the
# second line came first: tried again with a longer interval.
stat_rates() {
	local iv spid gets
	gets=$(for _ in $(seq 50); do printf 'get other\nget nosuchkey\n'; done)
	for iv in 1 4 16; do
		"$cli" -p "$port" --stat --count 2 --interval "$iv" >"$tmp/stat" 2>&1 &
		spid=$!
		for _ in $(seq 600); do
			[ "$(wc -l <"$tmp/stat")" -ge 2 ] && break
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.05
		done
		printf '%s\n' "$gets" | "$cli" -p "$port" >/dev/null
		if [ "$(wc -l <"$tmp/stat")" -gt 2 ]; then
			wait "$spid"
			continue
		fi
		wait "$spid"
		rc=$?
		mapfile -t lines <"$tmp/stat"
		if [ "$rc" = 0 ] && [ ${#lines[@]} = 3 ] &&
			[[ ${lines[2]} =~ ^7\ +$num\ +64\.00M\ +[0-9]+\ +([0-9]+)\ +50\.0%\ +0\ \(\+0\)$ ]] &&
			[ "${BASH_REMATCH[1]}" -gt 0 ]; then
			ok
		else
			bad "--stat rates: rc $rc, $(printf %q "$(cat "$tmp/stat")")"
		fi
		return
	done
	bad "--stat rates: the gets never fit in an interval"
}
stat_rates
expect_err stat-bad-interval 64 'bad interval' --stat --interval 0
expect_err stat-bad-interval-word 64 'bad interval' --stat --interval soon
expect_err stat-bad-count 64 'bad count' --stat --count 0
expect_err stat-count-alone 64 '--count needs --stat' --count 3 ping
expect_err stat-interval-alone 64 '--interval needs --stat' --interval 1 ping
expect_err stat-bad-server 64 "bad server 'h:99999'" --stat h:99999

# ---- the unix socket ----
expect unix-get 0 $'"v-other"\n' -h "$sock" get other

# ---- flush_prefix (after the stats, which count the keys above) ----
expect flush-prefix 0 $'OK\n' flush_prefix user:
expect flush-prefix-raw 0 $'OK\n' --raw flush_prefix nothing:
expect get-prefix-flushed 0 $'(nil)\n' get user:1
expect get-prefix-kept 0 $'"v-item:1"\n' get item:1
got=$(scan_sorted --raw scan)
[ "$got" = $'item:1\nitem:2\nother' ] && ok ||
	bad "scan after flush_prefix: $(printf %q "$got")"
expect_err flush-prefix-long 1 '(error) BAD_KEY: ' flush_prefix "$(printf 'k%.0s' $(seq 251))"

# ---- usage errors: 64, checked before connecting ----
closed=$(free_port)
expect_err unknown-cmd 64 "unknown command 'frobnicate'" frobnicate
expect_err get-noargs 64 'usage: get KEY' get
expect_err get-2args 64 'wrong number of arguments' get a b
expect_err set-1arg 64 'usage: set KEY VALUE' set k
expect_err set-badflags 64 'FLAGS' set k v notanumber
expect_err set-bigflags 64 'FLAGS' set k v 4294967296
expect_err set-badexp 64 'EXPTIME' set k v 0 soon
expect_err incr-baddelta 64 'DELTA' incr k abc
expect_err incr-negdelta 64 'DELTA' incr k -1
expect_err cas-badcas 64 'CAS' cas k v x
expect_err scan-badarg 64 'usage: scan' scan foo
expect_err flush-prefix-noargs 64 'usage: flush_prefix PREFIX' flush_prefix
expect_err flush-prefix-2args 64 'wrong number of arguments' flush_prefix a b
expect_err usage-closed 64 'DELTA' -p "$closed" incr k x
expect_err bad-port 64 "bad port" -p notaport ping
expect_err bad-port-range 64 "bad port" -p 70000 ping
expect_err bad-timeout 64 "bad timeout" --timeout -3 ping
c --bogus ping
[ "$rc" = 64 ] && [[ $err == *usage:* ]] && ok || bad "--bogus: rc $rc"
c --help
[ "$rc" = 0 ] && [[ $out == *"--pattern GLOB"* ]] && ok || bad "--help"
c help
[ "$rc" = 0 ] && [[ $out == *"scan [--pattern GLOB]"* ]] &&
	[[ $out == *"cas KEY VALUE CAS [FLAGS [EXPTIME]]"* ]] && ok ||
	bad "help: $out"
c help incr
[ "$rc" = 0 ] && [[ $out == "incr KEY DELTA"* ]] && ok || bad "help incr"

# ---- an unreachable server: exit 1 with a clear message ----
"$cli" -p "$closed" get k >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && [ ! -s "$tmp/out" ] &&
	grep -q "(error) CONN: cannot connect to 127.0.0.1:$closed" "$tmp/err" &&
	ok || bad "unreachable: rc $rc, $(cat "$tmp/err")"
"$cli" -h "$tmp/nonexistent.sock" ping >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && grep -q "cannot connect to $tmp/nonexistent.sock" \
	"$tmp/err" && ok || bad "unreachable unix: rc $rc, $(cat "$tmp/err")"

# ---- commands piped on stdin ----
pipe() {
	printf "$1" | "$cli" -p "$port" "${@:2}" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	out=$(
		cat "$tmp/out"
		printf x
	)
	out=${out%x}
	err=$(cat "$tmp/err")
}
pipe 'set p1 "hello world" 7\nget p1\n\n# a comment\nget nokey\nincr ctr 1\nset ctr 10\nincr ctr 5\nmget p1 nokey\nping\n'
want=$'1) "hello world"\n2) (nil)\n'
if [ "$rc" = 1 ] && [[ $out =~ ^STORED\ cas\ [0-9]+$'\n''"hello world"'$'\n''(nil)'$'\n'STORED\ cas\ [0-9]+$'\n''(integer) 15'$'\n'"$want"PONG$'\n'$ ]] &&
	[[ $err == *"(error) NOT_FOUND: "* ]]; then
	ok
else
	bad "piped: rc $rc, out $(printf %q "$out"), err $err"
fi
pipe 'set q "a \\"b\\" \\\\ \\x00\\x01\\n"\nget q\nquit\nget q\n'
if [ "$rc" = 0 ] && [[ $out =~ ^STORED\ cas\ [0-9]+$'\n''"a \"b\" \\ \x00\x01\n"'$'\n'$ ]]; then
	ok
else
	bad "piped quoting: rc $rc, out $(printf %q "$out"), err $err"
fi
pipe 'get q\n' --raw 2>/dev/null
[ "$rc" = 0 ] && [ "$(od -An -tx1 "$tmp/out" | tr -d ' \n')" = \
	"6120226222205c2000010a0a" ] && ok ||
	bad "piped raw bytes: $(od -An -tx1 "$tmp/out")"
# keys with any byte, given with escapes in bare and quoted words, come
# back from scan escaped, one line each
pipe 'set "bk:a b" 1\nset bk:\\0x 2\nset bk:\\n 3\nset "bk:\\x01\\xff" 4\nset bk:plain 5\nget bk:\\x00x\n'
[ "$rc" = 0 ] && [[ $out =~ ^(STORED\ cas\ [0-9]+$'\n'){5}'"2"'$'\n'$ ]] &&
	ok || bad "binary keys: rc $rc, out $(printf %q "$out"), err $err"
got=$(scan_sorted --raw scan --pattern 'bk:*')
[ "$got" = '"bk:\n"
"bk:\x00x"
"bk:\x01\xff"
"bk:a b"
bk:plain' ] && ok || bad "scan raw binary keys: $(printf %q "$got")"
got=$(scan_sorted scan --pattern 'bk:*')
[ "$got" = '"bk:\n"
"bk:\x00x"
"bk:\x01\xff"
"bk:a b"
"bk:plain"' ] && ok || bad "scan binary keys: $(printf %q "$got")"
# what scan prints reads back as the same key
pipe 'get "bk:\\x00x"\nget "bk:\\n"\n' --raw
[ "$rc" = 0 ] && [ "$out" = $'2\n3\n' ] && ok ||
	bad "scan's keys read back: rc $rc, out $(printf %q "$out"), err $err"
pipe 'get "unterminated\nfrobnicate\nping\n'
[ "$rc" = 1 ] && [ "$out" = $'PONG\n' ] &&
	[[ $err == *"unbalanced quotes"* ]] && [[ $err == *"unknown command"* ]] &&
	ok || bad "piped errors: rc $rc, out $(printf %q "$out"), err $err"

# ---- interactive, through a pty ----
mkdir "$tmp/home"
HOME=$tmp/home TERM=dumb "$py" - "$cli" "$port" <<'EOF'
import os, pty, select, sys, termios, time

cli, port = sys.argv[1], sys.argv[2]
prompt = ("rhkv 127.0.0.1:%s> " % port).encode()
pid, fd = pty.fork()
if pid == 0:
    os.execv(cli, [cli, "-p", port])

buf = b""
def until(what, timeout=60):
    global buf
    end = time.time() + timeout
    while what not in buf:
        left = end - time.time()
        r, _, _ = select.select([fd], [], [], max(left, 0))
        if not r:
            sys.exit("timed out waiting for %r; got %r" % (what, buf))
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            sys.exit("EOF waiting for %r; got %r" % (what, buf))
        buf += chunk
    i = buf.index(what) + len(what)
    seen, buf = buf[:i], buf[i:]
    return seen

def type_keys(keys):
    """Types keys once rhkv-cli reads at its prompt: the terminal in
    libedit's edit mode (not canonical, no echo). The prompt shows before
    libedit sets that mode; keys typed in between are echoed by the
    terminal (the output shows "ping" twice), and a ^D after them left the
    session at its prompt: 6 hangs in 40 quick sessions without this wait,
    0 in 40 with it."""
    end = time.time() + 30
    while True:
        lflag = termios.tcgetattr(fd)[3]
        if not lflag & (termios.ICANON | termios.ECHO):
            break
        if time.time() > end:
            sys.exit("the terminal never left cooked mode (lflag %#x)"
                     % lflag)
        time.sleep(0.01)
    os.write(fd, keys)

def leave(keys):
    """Types keys that should end rhkv-cli, then waits at most 60 s for
    its exit status, reading its output meanwhile (a hang fails with what
    the terminal showed, not at meson's timeout)."""
    global buf
    type_keys(keys)
    end = time.time() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.time() > end:
            os.kill(pid, 9)
            sys.exit("rhkv-cli did not leave after %r; the terminal: %r"
                     % (keys, buf[-400:]))
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                buf += os.read(fd, 4096)
            except OSError:
                pass

until(prompt)
type_keys(b'set ik "interactive value"\r')
until(b"STORED cas ")
until(prompt)
type_keys(b"get ik\r")
until(b'"interactive value"')
until(prompt)
type_keys(b"delete nokey\r")
until(b"(error) NOT_FOUND")
until(prompt)
type_keys(b"help\r")
until(b"scan [--pattern GLOB]")
until(prompt)
status = leave(b"quit\r")
if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
    sys.exit("exit status %r" % status)
EOF
[ $? = 0 ] && ok || bad "interactive pty session"
[ -f "$tmp/home/.rhkv_history" ] && grep -q 'get' "$tmp/home/.rhkv_history" &&
	ok || bad "history file not written"

# EOF at the prompt leaves with status 0; no HOME: no history, no failure.
env -u HOME TERM=dumb "$py" - "$cli" "$port" <<'EOF'
import os, pty, select, sys, termios, time
cli, port = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execv(cli, [cli, "-p", port])
buf = b""

def type_keys(keys):
    """Types keys once rhkv-cli reads at its prompt: the terminal in
    libedit's edit mode (not canonical, no echo). The prompt shows before
    libedit sets that mode; keys typed in between are echoed by the
    terminal (the output shows "ping" twice), and a ^D after them left the
    session at its prompt: 6 hangs in 40 quick sessions without this wait,
    0 in 40 with it."""
    end = time.time() + 30
    while True:
        lflag = termios.tcgetattr(fd)[3]
        if not lflag & (termios.ICANON | termios.ECHO):
            break
        if time.time() > end:
            sys.exit("the terminal never left cooked mode (lflag %#x)"
                     % lflag)
        time.sleep(0.01)
    os.write(fd, keys)

def leave(keys):
    """Types keys that should end rhkv-cli, then waits at most 60 s for
    its exit status, reading its output meanwhile (a hang fails with what
    the terminal showed, not at meson's timeout)."""
    global buf
    type_keys(keys)
    end = time.time() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.time() > end:
            os.kill(pid, 9)
            sys.exit("rhkv-cli did not leave after %r; the terminal: %r"
                     % (keys, buf[-400:]))
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                buf += os.read(fd, 4096)
            except OSError:
                pass
while b"> " not in buf:
    r, _, _ = select.select([fd], [], [], 60)
    if not r:
        sys.exit("no prompt: %r" % buf)
    buf += os.read(fd, 4096)
type_keys(b"ping\r")
# PONG, then the next prompt: the EOF goes to that prompt.
def pong_and_prompt():
    i = buf.find(b"PONG")
    return i >= 0 and b"> " in buf[i:]
while not pong_and_prompt():
    r, _, _ = select.select([fd], [], [], 60)
    if not r:
        sys.exit("no PONG and prompt: %r" % buf)
    buf += os.read(fd, 4096)
status = leave(b"\x04")
if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
    sys.exit("exit status %r" % status)
EOF
[ $? = 0 ] && ok || bad "interactive EOF without HOME"

# ---- a server with a password: --auth-file, RHKV_AUTH_FILE ----
stop_server
# rhkvd refuses an auth file others may read
(umask 077 && printf 'pa55word\n' >"$tmp/pw")
port=$(free_port)
"$server" -p "$port" -l 127.0.0.1 -t 2 --auth-file "$tmp/pw" \
	>>"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
	"$cli" -p "$port" --auth-file "$tmp/pw" ping >/dev/null 2>&1 &&
		listens "$pid" "$port" && break
	sleep 0.1
done
expect_err auth-missing 1 "AUTH" ping
expect auth-file 0 $'PONG\n' --auth-file "$tmp/pw" ping
RHKV_AUTH_FILE=$tmp/pw expect_re auth-env 0 '^STORED' set k v
printf 'nope\n' >"$tmp/bad"
expect_err auth-wrong 1 "AUTH" --auth-file "$tmp/bad" ping
expect_err auth-no-file 64 "cannot read" --auth-file "$tmp/none" ping

# ---- a server with a user list (-Y): user:password on the first line ----
stop_server
(umask 077 && printf 'alice:wonder\nbob:builder\n' >"$tmp/users" &&
	printf 'bob:builder\n' >"$tmp/bob" && printf 'bob:wonder\n' >"$tmp/bob2")
port=$(free_port)
"$server" -p "$port" -l 127.0.0.1 -t 2 -Y "$tmp/users" \
	>>"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
	"$cli" -p "$port" --auth-file "$tmp/users" ping >/dev/null 2>&1 &&
		listens "$pid" "$port" && break
	sleep 0.1
done
expect users-first 0 $'PONG\n' --auth-file "$tmp/users" ping
expect users-bob 0 $'PONG\n' --auth-file "$tmp/bob" ping
expect_err users-wrong 1 "AUTH" --auth-file "$tmp/bob2" ping
expect_err users-password-alone 1 "AUTH" --auth-file "$tmp/pw" ping

if [ "$failed" != 0 ]; then
	echo "--- server log" >&2
	cat "$tmp/server.log" >&2
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
