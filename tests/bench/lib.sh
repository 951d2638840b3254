# shellcheck shell=bash
# tests/bench/lib.sh: what the bench scripts (compare, memory) share; they
# source it, nobody runs it. A free loopback port, waiting for a server to
# listen, a `stats` value, a process's VmRSS. Needs $PY (a python3).

# bench_free_port: a TCP port on 127.0.0.1 that nothing listens on now.
bench_free_port() {
	"$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# bench_wait_listen PID PORT: 0 once 127.0.0.1:PORT accepts (within 5 s),
# 1 if PID exits first or it never does.
bench_wait_listen() {
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then
			return 0
		fi
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# bench_stat PORT NAME [GROUP]: NAME's value in `stats [GROUP]` of the
# server on PORT, or empty (no such stat, or no answer).
bench_stat() {
	"$PY" - "$1" "$2" "${3:-}" <<'PYEOF' || true
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(("stats %s" % sys.argv[3]).rstrip().encode() + b"\r\n")
buf = b""
while not buf.endswith(b"END\r\n") and not buf.endswith(b"ERROR\r\n"):
    d = s.recv(65536)
    if not d:
        break
    buf += d
for line in buf.decode(errors="replace").split("\r\n"):
    f = line.split()
    if len(f) == 3 and f[0] == "STAT" and f[1] == sys.argv[2]:
        print(f[2])
PYEOF
}

# bench_rss_kb PID: VmRSS of PID, in kB.
bench_rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}
