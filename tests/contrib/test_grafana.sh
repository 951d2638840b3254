#!/usr/bin/env bash
# contrib/grafana/rhkv.json against a live rhkvd's metrics endpoint: every
# metric an expression of the dashboard names (its panels' queries and its
# variables) is one the endpoint exports, after traffic that makes every
# series appear (hot keys included); and, where promtool is installed (it
# is not a dependency: Debian's prometheus package has it), the scraped
# page passes `promtool check metrics` and every expression, with the
# dashboard's variables filled in, parses (`promtool check rules`).
# usage: test_grafana.sh DASHBOARD (the server: lib_server.sh's choice)
set -uo pipefail
# shellcheck source=tests/server/lib_server.sh
. "$(dirname "$0")/../server/lib_server.sh"

dashboard=${1:?usage: test_grafana.sh DASHBOARD}
is_memcached && skip "memcached has no metrics endpoint"
[ -x "$py" ] || skip "$py missing"

tmp=$(mktemp -d)
trap 'lib_cleanup; rm -rf "$tmp"' EXIT

mport=$(free_port)
start_server --metrics-port "$mport" --hotkeys-sample 1 >"$tmp/server.log" 2>&1
echo "== rhkvd on port $port, metrics on $mport (pid $pid)"

# Traffic, so that the hot-key series exist; then the page, once the
# endpoint answers and shows them.
"$py" - "$port" "$mport" "$tmp/metrics" <<'PY' || exit 1
import socket, sys, time, urllib.request
port, mport, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"set hot 0 0 1\r\nx\r\nget hot\r\nget cold\r\nmn\r\n")
buf = b""
while not buf.endswith(b"MN\r\n"):
    chunk = s.recv(4096)
    if not chunk:
        sys.exit("server closed the connection: %r" % buf)
    buf += chunk
end = time.time() + 60
while True:
    try:
        page = urllib.request.urlopen(
            "http://127.0.0.1:%d/metrics" % mport, timeout=10).read()
        if b"\nrhkv_hotkey_requests_per_second{" in page:
            break
        why = "no hot-key series yet"
    except OSError as e:
        why = str(e)
    if time.time() > end:
        sys.exit("metrics endpoint: %s" % why)
    time.sleep(0.1)
open(out, "wb").write(page)
PY

# The dashboard's expressions, one per line, and the metric names in them.
"$py" - "$dashboard" "$tmp/exprs" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
exprs = []
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("expr", "definition") and isinstance(v, str):
                exprs.append(v)
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(d)
panels = [p for p in d["panels"] if p["type"] != "row"]
for p in panels:
    if not any(t.get("expr") for t in p.get("targets", [])):
        sys.exit("panel %r has no query" % p["title"])
ids = [p["id"] for p in d["panels"]]
if len(ids) != len(set(ids)):
    sys.exit("panel ids repeat")
open(sys.argv[2], "w").write("\n".join(e.replace("\n", " ") for e in exprs) + "\n")
print("%d panels, %d expressions" % (len(panels), len(exprs)))
PY

exported=$(grep -v '^#' "$tmp/metrics" | sed 's/[{ ].*//' | sort -u)
used=$(grep -o 'rhkv_[a-zA-Z0-9_:]*' "$tmp/exprs" | sort -u)
failed=0
for m in $used; do
	# (a here-string: grep -q in a pipe may end printf with SIGPIPE,
	# which pipefail would take for a miss)
	if ! grep -qx -- "$m" <<<"$exported"; then
		echo "FAIL: the dashboard uses $m, which the endpoint does not export"
		failed=1
	fi
done
echo "== $(printf '%s\n' "$used" | grep -c .) metrics in the dashboard," \
	"$(printf '%s\n' "$exported" | grep -c .) exported"
[ "$(printf '%s\n' "$used" | grep -c .)" -ge 20 ] || {
	echo "FAIL: only $(printf '%s\n' "$used" | grep -c .) metric names found in $dashboard"
	failed=1
}

if command -v promtool >/dev/null; then
	if promtool check metrics <"$tmp/metrics"; then
		echo "== promtool check metrics: passed"
	else
		echo "FAIL: promtool check metrics"
		failed=1
	fi
	# Each panel query as a recording rule, the variables filled in as
	# Grafana would: then promtool parses it.
	"$py" - "$tmp/exprs" "$tmp/rules.yml" <<'PY'
import json, sys
rules = []
for i, e in enumerate(open(sys.argv[1]).read().splitlines()):
    if e.startswith("label_values("):
        continue
    e = (e.replace("$__rate_interval", "1m").replace("$instance", ".*")
         .replace("$command", ".*"))
    rules.append({"record": "rhkv_dashboard:expr%d" % i, "expr": e})
# JSON is YAML
open(sys.argv[2], "w").write(json.dumps(
    {"groups": [{"name": "dashboard", "rules": rules}]}))
PY
	if promtool check rules "$tmp/rules.yml"; then
		echo "== promtool check rules: every expression parses"
	else
		echo "FAIL: promtool check rules"
		failed=1
	fi
else
	echo "== promtool not installed: its checks left out"
fi

stop_checked
if [ "$failed" != 0 ]; then
	echo "--- server log"
	cat "$tmp/server.log"
fi
[ "$failed" = 0 ]
