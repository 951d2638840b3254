#!/usr/bin/env bash
# A tier: three rhkvd nodes behind twemproxy (nutcracker), all on 127.0.0.1.
#   (a) the text commands twemproxy forwards give exact replies through it;
#   (b) 30,000 keys set through it spread over the nodes (ketama, md5):
#       each node's curr_items, asked directly, holds 20-47% of them;
#   (c) after one node is killed (-9) and ejected (server_failure_limit 1),
#       fresh keys set and read through the proxy succeed (>= 99%).
# Skips (77) without nutcracker (scripts/deps.sh --test installs it) or when the
# server under test is memcached. Stops everything it starts by PID on exit.
set -euo pipefail

here=$(dirname "$0")
# shellcheck source=tests/server/lib_server.sh
. "$here/lib_server.sh"

if is_memcached; then
	echo "SKIP: the server under test is memcached (nothing of rhkvd to test)"
	exit 77
fi
if ! command -v nutcracker >/dev/null && [ -x /usr/sbin/nutcracker ]; then
	PATH=$PATH:/usr/sbin
fi
if ! command -v nutcracker >/dev/null && [ "$(id -u)" = 0 ] &&
	command -v apt-get >/dev/null; then
	echo "== nutcracker missing: apt-get install -y nutcracker"
	DEBIAN_FRONTEND=noninteractive timeout 120 \
		apt-get install -y -q --no-install-recommends nutcracker \
		>/dev/null 2>&1 || true
	PATH=$PATH:/usr/sbin
fi
if ! command -v nutcracker >/dev/null; then
	echo "SKIP: nutcracker missing (apt-get install nutcracker)"
	exit 77
fi

tmp=$(mktemp -d)
node_pids=()
node_ports=()
proxy_pid=

# stop PID: SIGTERM, SIGKILL after 30 s, reaped; sets $status to its exit
# status.
stop() {
	kill -TERM "$1" 2>/dev/null || true
	for _ in $(seq 300); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
	status=0
	wait "$1" 2>/dev/null || status=$?
}
cleanup() {
	if [ -n "$proxy_pid" ]; then stop "$proxy_pid"; fi
	for p in "${node_pids[@]}"; do stop "$p"; done
	if [ -s "$tmp/nutcracker.log" ] && [ "${keep_log:-0}" = 1 ]; then
		echo "== nutcracker log (tail)"
		tail -n 20 "$tmp/nutcracker.log"
	fi
	rm -rf "$tmp"
}
keep_log=1
trap cleanup EXIT

start_node() {
	local port pid
	for _ in 1 2 3 4 5; do
		port=$(free_port)
		"$server" -p "$port" -l 127.0.0.1 -t 1 -m 64 &
		pid=$!
		for _ in $(seq 600); do
			kill -0 "$pid" 2>/dev/null || break
			if ready "$port" version "VERSION " &&
				listens "$pid" "$port"; then
				node_pids+=("$pid")
				node_ports+=("$port")
				return 0
			fi
			sleep 0.1
		done
		stop "$pid"
	done
	echo "FAIL: $server did not start" >&2
	exit 1
}

start_proxy() {
	for _ in 1 2 3 4 5; do
		proxy_port=$(free_port)
		stats_port=$(free_port)
		cat >"$tmp/nutcracker.yml" <<EOF
rhkv:
  listen: 127.0.0.1:$proxy_port
  distribution: ketama
  hash: md5
  auto_eject_hosts: true
  server_retry_timeout: 2000
  server_failure_limit: 1
  timeout: 5000
  redis: false
  servers:
   - 127.0.0.1:${node_ports[0]}:1
   - 127.0.0.1:${node_ports[1]}:1
   - 127.0.0.1:${node_ports[2]}:1
EOF
		nutcracker -c "$tmp/nutcracker.yml" -s "$stats_port" -a 127.0.0.1 \
			-o "$tmp/nutcracker.log" -p "$tmp/nutcracker.pid" -i 200 &
		proxy_pid=$!
		# A miss proves it reaches a node.
		for _ in $(seq 600); do
			kill -0 "$proxy_pid" 2>/dev/null || break
			if ready "$proxy_port" "get rhkv-ready" "END"; then
				return 0
			fi
			sleep 0.1
		done
		stop "$proxy_pid"
		proxy_pid=
	done
	echo "FAIL: nutcracker did not start" >&2
	cat "$tmp/nutcracker.log" >&2 || true
	exit 1
}

start_node
start_node
start_node
start_proxy
echo "== nodes: ports ${node_ports[*]} (pids ${node_pids[*]})"
echo "== nutcracker $(nutcracker --version 2>&1 | sed -n 's/.*nutcracker-//p'):" \
	"port $proxy_port, stats $stats_port (pid $proxy_pid)"

cat >"$tmp/tier.py" <<'EOF'
import socket, sys, time

mode, proxy = sys.argv[1], int(sys.argv[2])
nodes = [int(p) for p in sys.argv[3].split(",")] if len(sys.argv) > 3 else []


class Conn:
    def __init__(self, port, timeout=5.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        d = self.s.recv(65536)
        if not d:
            raise ConnectionError("closed by peer")
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln + b"\r\n"

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def reply(self):
        """One reply: a line, or VALUE blocks up to END."""
        ln = self.line()
        if not ln.startswith(b"VALUE "):
            return ln
        out = b""
        while ln.startswith(b"VALUE "):
            n = int(ln.split()[3])
            out += ln + self.exact(n + 2)
            ln = self.line()
        return out + ln

    def close(self):
        self.s.close()


def stats(port):
    c = Conn(port)
    c.send(b"stats\r\n")
    out = {}
    while True:
        ln = c.line()
        if ln == b"END\r\n":
            break
        _, k, v = ln.decode().split(None, 2)
        out[k] = v.strip()
    c.close()
    return out


def curr_items():
    return [int(stats(p)["curr_items"]) for p in nodes]


def cases():
    c = Conn(proxy)
    n = 0

    def rt(req, want):
        nonlocal n
        c.send(req)
        got = c.reply()
        if got != want:
            at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                      min(len(got), len(want)))
            sys.exit(f"FAIL: {req[:80]!r}\n  want {want[max(0, at - 40):at + 160]!r}"
                     f"\n  got  {got[max(0, at - 40):at + 160]!r}\n  (first difference at byte {at})")
        n += 1

    def cas_of(key):
        c.send(b"gets " + key + b"\r\n")
        r = c.reply()
        return r.split(b"\r\n", 1)[0].split()[4]

    rt(b"set k 5 0 1\r\nv\r\n", b"STORED\r\n")
    rt(b"get k\r\n", b"VALUE k 5 1\r\nv\r\nEND\r\n")
    rt(b"get nx\r\n", b"END\r\n")
    rt(b"add k 0 0 1\r\nx\r\n", b"NOT_STORED\r\n")
    rt(b"add k2 0 0 1\r\n2\r\n", b"STORED\r\n")
    rt(b"replace nx 0 0 1\r\nx\r\n", b"NOT_STORED\r\n")
    rt(b"replace k2 0 0 2\r\n22\r\n", b"STORED\r\n")
    rt(b"append k2 0 0 1\r\n3\r\n", b"STORED\r\n")
    rt(b"prepend k2 0 0 1\r\n1\r\n", b"STORED\r\n")
    rt(b"append nx 0 0 1\r\n3\r\n", b"NOT_STORED\r\n")
    rt(b"get k2\r\n", b"VALUE k2 0 4\r\n1223\r\nEND\r\n")

    cas = cas_of(b"k")
    rt(b"gets k\r\n", b"VALUE k 5 1 " + cas + b"\r\nv\r\nEND\r\n")
    rt(b"cas k 6 0 1 " + cas + b"\r\nw\r\n", b"STORED\r\n")
    rt(b"cas k 6 0 1 " + cas + b"\r\nx\r\n", b"EXISTS\r\n")
    rt(b"cas nx 0 0 1 " + cas + b"\r\nx\r\n", b"NOT_FOUND\r\n")
    cas2 = cas_of(b"k")
    if cas2 == cas:
        sys.exit("FAIL: cas unique unchanged by cas")
    rt(b"get k\r\n", b"VALUE k 6 1\r\nw\r\nEND\r\n")

    rt(b"set n 0 0 2\r\n10\r\n", b"STORED\r\n")
    rt(b"incr n 5\r\n", b"15\r\n")
    rt(b"decr n 100\r\n", b"0\r\n")
    rt(b"incr n 18446744073709551615\r\n", b"18446744073709551615\r\n")
    rt(b"incr n 1\r\n", b"0\r\n")
    rt(b"incr nx 1\r\n", b"NOT_FOUND\r\n")
    rt(b"decr nx 1\r\n", b"NOT_FOUND\r\n")
    rt(b"incr k 1\r\n",
       b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")

    rt(b"touch k 100\r\n", b"TOUCHED\r\n")
    rt(b"touch nx 100\r\n", b"NOT_FOUND\r\n")
    rt(b"delete k\r\n", b"DELETED\r\n")
    rt(b"delete k\r\n", b"NOT_FOUND\r\n")
    rt(b"get k\r\n", b"END\r\n")

    # noreply: no answer; the next command's reply comes first.
    c.send(b"set q 0 0 1 noreply\r\nq\r\n")
    rt(b"get q\r\n", b"VALUE q 0 1\r\nq\r\nEND\r\n")

    # Values twemproxy must carry opaquely: binary with CRLF/END, empty, 512 KiB.
    binary = bytes(range(256)) + b"\r\nEND\r\n"
    rt(b"set bin 1 0 %d\r\n" % len(binary) + binary + b"\r\n", b"STORED\r\n")
    rt(b"get bin\r\n", b"VALUE bin 1 %d\r\n" % len(binary) + binary + b"\r\nEND\r\n")
    rt(b"set empty 0 0 0\r\n\r\n", b"STORED\r\n")
    rt(b"get empty\r\n", b"VALUE empty 0 0\r\n\r\nEND\r\n")
    big = bytes((i * 7) & 0xFF for i in range(512 * 1024))
    rt(b"set big 0 0 %d\r\n" % len(big) + big + b"\r\n", b"STORED\r\n")
    rt(b"get big\r\n", b"VALUE big 0 %d\r\n" % len(big) + big + b"\r\nEND\r\n")
    long_key = b"L" * 250
    rt(b"set " + long_key + b" 0 0 1\r\nl\r\n", b"STORED\r\n")
    rt(b"get " + long_key + b"\r\n", b"VALUE " + long_key + b" 0 1\r\nl\r\nEND\r\n")

    # Multi-key get across servers: keys on every node, in request order,
    # one END; misses left out. Check the keys do land on all three nodes.
    before = curr_items()
    keys = [b"mk%d" % i for i in range(40)]
    for i, key in enumerate(keys):
        rt(b"set " + key + b" %d 0 %d\r\n" % (i, len(key)) + key + b"\r\n", b"STORED\r\n")
    grew = [a - b for a, b in zip(curr_items(), before)]
    if sum(grew) != len(keys) or min(grew) == 0:
        sys.exit(f"FAIL: 40 multi-get keys spread over nodes as {grew}")
    blocks = [b"VALUE " + k + b" %d %d\r\n" % (i, len(k)) + k + b"\r\n"
              for i, k in enumerate(keys)]
    rt(b"get " + b" ".join(keys) + b"\r\n", b"".join(blocks) + b"END\r\n")
    # With misses among the keys, twemproxy (0.5.0, as with memcached nodes)
    # returns every hit and one END, but not always in request order: it
    # pairs each key with its node's next value, and a miss shifts that.
    # Clients match values by key, so compare the hits as a set.
    ask = keys[:20] + [b"nx1"] + keys[20:] + [b"nx2"]
    c.send(b"get " + b" ".join(ask) + b"\r\n")
    got = c.reply()
    parts = [b"VALUE " + p for p in got.split(b"VALUE ")[1:]]
    if not got.endswith(b"END\r\n") or got.count(b"END\r\n") != 1 or \
            sorted(p.removesuffix(b"END\r\n") for p in parts) != sorted(blocks):
        sys.exit(f"FAIL: multi-get with misses: {got[:300]!r}")
    n += 1
    in_order = got == b"".join(blocks) + b"END\r\n"
    c.send(b"gets " + b" ".join(keys[:10]) + b"\r\n")
    r = c.reply()
    if r.count(b"VALUE ") != 10 or not r.endswith(b"END\r\n") or \
            any(len(ln.split()) != 5 for ln in r.split(b"\r\n") if ln.startswith(b"VALUE ")):
        sys.exit(f"FAIL: multi-key gets: {r[:300]!r}")
    n += 1

    # Pipelined requests for different nodes: replies in request order.
    req = b"".join(b"get " + k + b"\r\n" for k in keys) + b"get nx\r\n"
    c.send(req)
    for i, k in enumerate(keys):
        want = b"VALUE " + k + b" %d %d\r\n" % (i, len(k)) + k + b"\r\nEND\r\n"
        got = c.reply()
        if got != want:
            sys.exit(f"FAIL: pipelined get {k!r}: {got!r}")
    if c.reply() != b"END\r\n":
        sys.exit("FAIL: pipelined get nx")
    n += 1
    # version goes to one node; stats (and flush_all, scan) twemproxy does
    # not forward: it closes the connection.
    c.send(b"version\r\n")
    r = c.reply()
    if not r.startswith(b"VERSION ") or b"rhkv" not in r:
        sys.exit(f"FAIL: version through the proxy: {r!r}")
    c.send(b"stats\r\n")
    try:
        r = c.reply()
        sys.exit(f"FAIL: stats through the proxy answered {r!r}")
    except ConnectionError:
        pass
    n += 2
    print(f"(a) {n} request/reply checks through the proxy passed "
          f"(multi-get keys per node: {grew}; with misses, values "
          f"{'in' if in_order else 'out of'} request order)")


def load():
    total = 30000
    before = curr_items()
    c = Conn(proxy, timeout=10)
    t0 = time.monotonic()
    batch = 500
    for start in range(0, total, batch):
        req = b"".join(b"set d:%d 0 0 8\r\nvalue%03d\r\n" % (i, i % 1000)
                       for i in range(start, start + batch))
        c.send(req)
        for i in range(batch):
            r = c.line()
            if r != b"STORED\r\n":
                sys.exit(f"FAIL: set d:{start + i}: {r!r}")
    took = time.monotonic() - t0
    got = [a - b for a, b in zip(curr_items(), before)]
    shares = [g / total for g in got]
    print(f"(b) {total} sets through the proxy in {took:.2f} s "
          f"({total / took:.0f}/s, pipelined by {batch})")
    for p, g, s in zip(nodes, got, shares):
        print(f"    node 127.0.0.1:{p}: {g} keys ({s:.1%})")
    with open(sys.argv[4], "w") as f:
        f.write(" ".join(map(str, got)) + "\n")
    if sum(got) != total:
        sys.exit(f"FAIL: the nodes hold {sum(got)} new items, not {total}")
    if not all(0.20 <= s <= 0.47 for s in shares):
        sys.exit("FAIL: a node holds less than 20% or more than 47%")
    # Read a sample back through the proxy (multi-get, across nodes).
    keys = [b"d:%d" % i for i in range(0, total, 97)]
    c.send(b"get " + b" ".join(keys) + b"\r\n")
    r = c.reply()
    if r.count(b"VALUE ") != len(keys):
        sys.exit(f"FAIL: read back {r.count(b'VALUE ')} of {len(keys)} keys")
    print(f"    {len(keys)} keys read back in one multi-get")


class Client:
    """Reconnects after a close; counts a failure for any reply but the one wanted."""

    def __init__(self):
        self.c = None
        self.kinds = {}

    def req(self, data, want):
        try:
            if self.c is None:
                self.c = Conn(proxy, timeout=2)
            self.c.send(data)
            got = self.c.reply()
        except (OSError, ConnectionError) as e:
            got = f"{type(e).__name__}: {e}".encode()
            if self.c:
                self.c.close()
            self.c = None
        if got == want:
            return True
        kind = got[:60]
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        return False


def eject():
    dead = int(sys.argv[4])
    t_kill = float(sys.argv[5])
    cl = Client()
    i = 0
    streak, need = 0, 60
    first_fail = last_fail = None
    fails = 0
    while streak < need:
        now = time.time()
        if now - t_kill > 5.0:
            sys.exit(f"FAIL: failures went on for 5 s after the kill: {cl.kinds}")
        key = b"e:%d" % i
        i += 1
        if cl.req(b"set " + key + b" 0 0 1\r\nx\r\n", b"STORED\r\n"):
            streak += 1
        else:
            streak = 0
            fails += 1
            first_fail = first_fail or now
            last_fail = now
    t_ok = time.time()
    if first_fail is None:
        print(f"(c) node {dead} killed: no request failed at all "
              f"({i} sets, {t_ok - t_kill:.3f} s)")
    else:
        print(f"(c) node {dead} killed: {fails} failed of {i} sets; first failure "
              f"{first_fail - t_kill:.3f} s, last {last_fail - t_kill:.3f} s after the kill; "
              f"{need} in a row succeed from {t_ok - t_kill:.3f} s")
        print(f"    failure replies: {cl.kinds}")

    # 1,000 requests on fresh keys: 500 set + get pairs.
    cl.kinds = {}
    ok = 0
    t0 = time.time()
    for j in range(500):
        key = b"f:%d" % j
        ok += cl.req(b"set " + key + b" 0 0 3\r\nabc\r\n", b"STORED\r\n")
        ok += cl.req(b"get " + key + b"\r\n", b"VALUE " + key + b" 0 3\r\nabc\r\nEND\r\n")
    took = time.time() - t0
    print(f"    after ejection: {ok}/1000 set/get requests succeeded in {took:.2f} s "
          f"(from {t0 - t_kill:.2f} to {time.time() - t_kill:.2f} s after the kill)")
    if cl.kinds:
        print(f"    failure replies: {cl.kinds}")
    if ok < 990:
        sys.exit("FAIL: fewer than 99% succeeded after the ejection")
    # Wait out a retry (server_retry_timeout 2 s): the proxy tries the dead
    # node again, fails, ejects it again; count what that costs.
    time.sleep(2.2)
    cl.kinds = {}
    ok = 0
    for j in range(300):
        ok += cl.req(b"set g:%d 0 0 1\r\ny\r\n" % j, b"STORED\r\n")
    print(f"    after the 2 s retry timeout: {ok}/300 sets succeeded"
          + (f"; failures: {cl.kinds}" if cl.kinds else ""))
    if ok < 297:
        sys.exit("FAIL: fewer than 99% succeeded after the retry timeout")

    # Ketama moves only the dead node's keys: of the 30,000 (b) keys, those
    # on the survivors still hit through the proxy; the dead node's are gone.
    survivors = int(sys.argv[6])
    hits = 0
    for start in range(0, 30000, 100):
        req = b"get " + b" ".join(b"d:%d" % i for i in range(start, start + 100)) + b"\r\n"
        for _ in range(3):
            try:
                if cl.c is None:
                    cl.c = Conn(proxy, timeout=2)
                cl.c.send(req)
                r = cl.c.reply()
            except (OSError, ConnectionError):
                cl.c = None
                continue
            if r.endswith(b"END\r\n"):
                hits += r.count(b"VALUE d:")
                break
        else:
            sys.exit(f"FAIL: multi-get d:{start}.. failed three times: {r[:80]!r}")
    print(f"    (b) keys still found: {hits} of 30000 "
          f"(the survivors held {survivors}; the dead node's are lost)")
    if hits != survivors:
        sys.exit("FAIL: keys on the surviving nodes moved or were lost")


{"cases": cases, "load": load, "eject": eject}[mode]()
EOF

nodes_csv=$(
	IFS=,
	echo "${node_ports[*]}"
)

echo "== (a) text protocol through twemproxy"
"$py" "$tmp/tier.py" cases "$proxy_port" "$nodes_csv"

echo "== (b) key distribution (ketama, md5)"
"$py" "$tmp/tier.py" load "$proxy_port" "$nodes_csv" "$tmp/dist"
read -r -a dist <"$tmp/dist"

echo "== (c) one node killed"
victim=1
t_kill=$("$py" -c 'import time; print(time.time())')
{
	kill -KILL "${node_pids[$victim]}"
	wait "${node_pids[$victim]}" || true
} 2>/dev/null # bash's "Killed" job notice
"$py" "$tmp/tier.py" eject "$proxy_port" "$nodes_csv" \
	"${node_ports[$victim]}" "$t_kill" \
	$((dist[0] + dist[1] + dist[2] - dist[victim]))
unset 'node_pids[victim]'

if ! kill -0 "$proxy_pid" 2>/dev/null; then
	echo "FAIL: nutcracker exited"
	exit 1
fi
# nutcracker's stats port (JSON): the dead node's counters and ejection time.
echo "== nutcracker stats for the dead node"
"$py" - "$stats_port" "127.0.0.1:${node_ports[$victim]}" "$t_kill" <<'EOF'
import json, socket, sys, time


def stats():
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return json.loads(buf)


# Stats are aggregated every -i 200 ms: poll until the ejection shows
# (30 s at most: a loaded machine).
end = time.monotonic() + 30
st = stats()
while st["rhkv"]["server_ejects"] < 1 and time.monotonic() < end:
    time.sleep(0.1)
    st = stats()
pool = st["rhkv"]
dead = pool[sys.argv[2]]
keys = ("server_eof", "server_err", "server_timedout", "server_connections",
        "requests", "server_ejected_at")
print("    pool: server_ejects %s, fragments %s, forward_error %s" %
      (pool["server_ejects"], pool["fragments"], pool["forward_error"]))
print("    " + ", ".join(f"{k} {dead[k]}" for k in keys if k in dead))
if dead.get("server_ejected_at"):
    print("    last ejected %.3f s after the kill" %
          (dead["server_ejected_at"] / 1e6 - float(sys.argv[3])))
if pool["server_ejects"] < 1:
    sys.exit("FAIL: nutcracker counted no ejection")
EOF
# The nodes left must exit 0 on SIGTERM: a crash at shutdown, or a
# sanitizer's report (a TSan or ASan rhkvd), makes them exit otherwise.
for i in "${!node_pids[@]}"; do
	stop "${node_pids[$i]}"
	if [ "$status" -ne 0 ]; then
		echo "FAIL: node ${node_pids[$i]} exit status $status after SIGTERM"
		exit 1
	fi
	unset 'node_pids[i]'
done
keep_log=0
echo "PASS"
