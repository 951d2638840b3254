#!/usr/bin/python3
"""The TLS tests' client side (test_tls.sh), with the standard ssl module.

    tls.py PORT TLS_PORT CERTS COMMAND [ARG...]

PORT is the server's plain port (0: none, then statistics are read over
TLS), TLS_PORT its TLS one, CERTS the folder mkcerts.sh filled. Each
command prints what it checked and exits 1 on the first failed check.
Every loop is bounded in count and in time.
"""

import hashlib
import os
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

HOST = "127.0.0.1"
port, tls_port, certs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def path(name):
    return os.path.join(certs, name)


def context(ca="ca.crt", cert=None, check_hostname=True, version=None):
    """A client context trusting CA (a file in CERTS), presenting CERT
    (NAME.crt and NAME.key) when given, limited to VERSION when given."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(path(ca))
    ctx.check_hostname = check_hostname
    if cert:
        ctx.load_cert_chain(path(cert + ".crt"), path(cert + ".key"))
    if version:
        ctx.minimum_version = ctx.maximum_version = version
    return ctx


def noverify():
    """A client context that accepts any server certificate."""
    ctx = context(check_hostname=False)
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def tls_connect(ctx=None, hostname="localhost", timeout=5):
    raw = socket.create_connection((HOST, tls_port), timeout=timeout)
    try:
        return (ctx or context()).wrap_socket(raw, server_hostname=hostname)
    except BaseException:
        raw.close()
        raise


def read_until(s, end, limit=5.0):
    """Reads from S until the bytes read end with END; b"" ends early on
    EOF. Raises socket.timeout after LIMIT seconds."""
    buf = b""
    deadline = time.monotonic() + limit
    while not buf.endswith(end):
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("no %r after %r" % (end, buf[-200:]))
        s.settimeout(left)
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk
    return buf


def text(s, req, end=b"\r\n"):
    s.sendall(req)
    return read_until(s, end)


def plain_connect():
    return socket.create_connection((HOST, port), timeout=5)


def stats():
    """The general statistics, over the plain port (TLS when there is
    none)."""
    s = plain_connect() if port else tls_connect(noverify())
    with s:
        out = text(s, b"stats\r\n", b"END\r\n").decode()
    return dict(line.split(" ", 2)[1:] for line in out.split("\r\n")
                if line.startswith("STAT "))


def stat(name):
    return stats().get(name)


def served(s):
    """True when S (a connection, plain or TLS) answers `version`."""
    try:
        return text(s, b"version\r\n").startswith(b"VERSION ")
    except (OSError, ssl.SSLError):
        return False


def fingerprint(s):
    return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()[:16]


def refused(ctx, hostname="localhost"):
    """How a TLS connection with CTX fails ("" when it is served): in TLS
    1.3 the server's refusal of a client certificate arrives after the
    client's handshake ends, at the first read."""
    try:
        s = tls_connect(ctx, hostname)
    except (OSError, ssl.SSLError) as e:
        return "handshake: %s" % e
    with s:
        try:
            reply = text(s, b"version\r\n")
        except (OSError, ssl.SSLError) as e:
            return "first read: %s" % e
    return "" if reply.startswith(b"VERSION ") else "closed (%r)" % reply


# ---------------------------------------------------------------- commands

def cmd_ready():
    # With the CA's client certificate (--tls-verify require wants one),
    # whatever the server's (an expired one too).
    ctx = noverify()
    ctx.load_cert_chain(path("client.crt"), path("client.key"))
    with tls_connect(ctx, timeout=1) as s:
        sys.exit(0 if served(s) else 1)


def cmd_health(verify="verify"):
    """A new plain connection (when there is a plain port) and a new TLS
    one are served; with "noverify", whatever the server's certificate."""
    if port:
        with plain_connect() as s:
            check(served(s), "a plain connection is not served")
    with tls_connect(noverify() if verify == "noverify" else None) as s:
        check(served(s), "a TLS connection is not served")


def cmd_clientcert_health():
    """health, with the CA's client certificate on the TLS connection."""
    if port:
        with plain_connect() as s:
            check(served(s), "a plain connection is not served")
    with tls_connect(context(cert="client")) as s:
        check(served(s), "a TLS connection is not served")


def cmd_stat(name):
    print(stat(name) or "")


def cmd_pymemcache():
    """pymemcache's own TLS support (tls_context): it passes the server's
    address as the name to check, so the IP SAN is what matches."""
    from pymemcache.client.base import Client
    c = Client((HOST, tls_port), tls_context=context(), connect_timeout=5,
               timeout=5)
    check(c.set("tls:k", b"v1") is True, "set")
    check(c.get("tls:k") == b"v1", "get")
    value, cas = c.gets("tls:k")
    check(value == b"v1" and cas, "gets")
    check(c.cas("tls:k", b"v2", cas) is True, "cas with the right cas")
    check(c.cas("tls:k", b"v3", cas) is False, "cas with a stale cas")
    check(c.get("tls:k") == b"v2", "get after cas")
    check(c.set("tls:n", b"10") is True, "set counter")
    check(c.incr("tls:n", 5) == 15, "incr")
    check(c.decr("tls:n", 20) == 0, "decr")
    check(c.delete("tls:k", noreply=False) is True, "delete")
    check(c.get("tls:k") is None, "get after delete")
    # Values up to 100 KB, 5 MB in all: many TLS records each way,
    # records split across reads. (rhkvd refuses a get whose reply passes
    # its limit, plain or TLS, with SERVER_ERROR out of memory...)
    items = {"tls:m%d" % i: os.urandom(1 + i * 1000) for i in range(100)}
    check(c.set_many(items, noreply=False) == [], "set_many")
    got = c.get_many(list(items) + ["tls:missing"])
    check(got == items, "get_many (%d of %d)" % (len(got), len(items)))
    c.close()
    print("pymemcache over TLS: set/get/gets/cas/incr/decr/delete/get_many")


def cmd_raw():
    """The text protocol by hand over TLS: classic and meta commands, a
    pipelined batch, a 500 KB value."""
    with tls_connect() as s:
        check(text(s, b"set tls:r 5 0 3\r\nabc\r\n") == b"STORED\r\n", "set")
        check(text(s, b"get tls:r\r\n", b"END\r\n") ==
              b"VALUE tls:r 5 3\r\nabc\r\nEND\r\n", "get")
        check(text(s, b"mg tls:r v f\r\n") == b"VA 3 f5\r\nabc\r\n", "mg v f")
        check(text(s, b"mg tls:none v\r\n") == b"EN\r\n", "mg miss")
        check(text(s, b"ms tls:m 2 T0\r\nhi\r\n") == b"HD\r\n", "ms")
        check(text(s, b"ma tls:m\r\n") == b"CLIENT_ERROR cannot increment "
              b"or decrement non-numeric value\r\n", "ma of a non-number")
        check(text(s, b"md tls:m q\r\nmn\r\n") == b"MN\r\n", "md q, mn")
        batch = b"".join(b"ms tls:p%d 1 q\r\n%d\r\n" % (i, i % 10)
                         for i in range(200))
        batch += b"".join(b"mg tls:p%d v k q\r\n" % i for i in range(200))
        want = b"".join(b"VA 1 ktls:p%d\r\n%d\r\n" % (i, i % 10)
                        for i in range(200))
        check(text(s, batch + b"mn\r\n", b"MN\r\n") == want + b"MN\r\n",
              "200 pipelined ms then mg")
        big = os.urandom(500_000)
        check(text(s, b"set tls:big 0 0 %d\r\n%s\r\n" % (len(big), big))
              == b"STORED\r\n", "set 500 KB")
        check(text(s, b"get tls:big\r\n", b"END\r\n") ==
              b"VALUE tls:big 0 %d\r\n%s\r\nEND\r\n" % (len(big), big),
              "get 500 KB")
    print("raw text over TLS: set/get, mg/ms/ma/md/mn, 200 pipelined, 500 KB")


def msgpack_frame(body):
    return struct.pack(">I", len(body)) + body


def read_frame(s):
    head = read_exact(s, 4)
    return read_exact(s, struct.unpack(">I", head)[0])


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        check(chunk, "closed after %r" % buf)
        buf += chunk
    return buf


def cmd_binary():
    """rhkv's msgpack protocol over TLS (proto/PROTOCOL.md): NOOP, then
    SET and GET; then the text protocol on another TLS connection (the
    first decrypted byte chooses)."""
    with tls_connect() as s:
        # [19, 1]: NOOP, id 1; the reply [1, 0, nil].
        s.sendall(msgpack_frame(bytes([0x92, 0x13, 0x01])))
        reply = read_frame(s)
        check(reply == bytes([0x93, 0x01, 0x00, 0xc0]),
              "NOOP's reply %r" % reply)
        # [4, 7, "k", bin "v"]: SET; [7, 0, cas].
        s.sendall(msgpack_frame(bytes.fromhex("9404 07a1 6bc4 0176")))
        reply = read_frame(s)
        check(reply[:3] == bytes([0x93, 0x07, 0x00]), "SET's reply %r" % reply)
        # [1, 8, "k"]: GET; [8, 0, [0, bin "v", cas]].
        s.sendall(msgpack_frame(bytes.fromhex("9301 08a1 6b")))
        reply = read_frame(s)
        check(reply[:7] == bytes.fromhex("9308 0093 00c4 0176")[:7] and
              reply[7:8] == b"v", "GET's reply %r" % reply)
    with tls_connect() as s:
        check(text(s, b"get k\r\n", b"END\r\n") ==
              b"VALUE k 0 1\r\nv\r\nEND\r\n", "text get of the binary SET")
    print("msgpack over TLS: NOOP, SET, GET; text on another connection")


def wait_tls_connections(want):
    """Waits (up to 30 s: a loaded machine) for tls_connections to fall to
    WANT."""
    deadline = time.monotonic() + 30
    while int(stat("tls_connections")) > want:
        check(time.monotonic() < deadline, "tls_connections stays above "
              "%d" % want)
        time.sleep(0.05)


def cmd_slow_reader():
    """8 pipelined gets of a 900 KB value (7 MB of replies) read slowly
    through a 4 KB receive buffer: the server's TLS writes stop part way
    and must resume with the same bytes (an SSL_write retried with other
    bytes fails with "bad write retry"; bytes sent twice or lost show in
    the data)."""
    value = os.urandom(900_000)
    with tls_connect() as s:
        check(text(s, b"set tls:slow 0 0 %d\r\n%s\r\n" % (len(value), value))
              == b"STORED\r\n", "set 900 KB")
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(10)
    raw.connect((HOST, tls_port))
    with context().wrap_socket(raw, server_hostname="localhost") as s:
        s.sendall(b"get tls:slow\r\n" * 8)
        want = b"VALUE tls:slow 0 %d\r\n%s\r\nEND\r\n" % (len(value), value)
        got = bytearray()
        deadline = time.monotonic() + 30
        while len(got) < 8 * len(want):
            check(time.monotonic() < deadline, "slow reader: %d of %d bytes "
                  "in 30 s" % (len(got), 8 * len(want)))
            chunk = s.recv(8192)
            check(chunk, "slow reader: closed after %d bytes" % len(got))
            got += chunk
            time.sleep(0.0005)
        check(bytes(got) == want * 8, "slow reader: the replies differ")
        check(served(s), "slow reader: not served after")
    print("slow reader: 8 x 900 KB through a 4 KB receive buffer, intact")


def cmd_bytewise():
    """A request's TLS records sent one byte per TCP segment, then a
    request split over four records in one segment: the server must wait
    for whole records and join requests across them."""
    with socket.create_connection((HOST, tls_port), timeout=5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        obj, inc, out = bio_session(s)

        def reply(end):
            buf = b""
            deadline = time.monotonic() + 5
            while not buf.endswith(end):
                try:
                    buf += obj.read(65536)
                    continue
                except ssl.SSLWantReadError:
                    pass
                check(time.monotonic() < deadline, "no reply: %r" % buf)
                data = s.recv(65536)
                check(data, "closed after %r" % buf)
                inc.write(data)
            return buf
        obj.write(b"set tls:bw 0 0 5\r\nhello\r\n")
        for i, b in enumerate(out.read()):
            s.send(bytes([b]))
            if i % 8 == 0:
                time.sleep(0.001)
        check(reply(b"\r\n") == b"STORED\r\n", "bytewise set")
        for part in (b"get", b" tls:", b"bw\r", b"\n"):
            obj.write(part)
        s.sendall(out.read())
        check(reply(b"END\r\n") == b"VALUE tls:bw 0 5\r\nhello\r\nEND\r\n",
              "get over four records")
    print("TLS records a byte a segment, a request over four records: served")


def cmd_count(what, n):
    """Opens N TLS connections and checks tls_connections and
    tls_handshakes count them, and that tls_connections falls back."""
    n = int(n)
    idle = 0 if port else 1  # without a plain port, stats come over TLS
    wait_tls_connections(idle)  # the earlier tests' closes noticed
    base = int(stat("tls_handshakes"))
    conns = [tls_connect() for _ in range(n)]
    for s in conns:
        check(served(s), "a TLS connection is not served")
    open_now = int(stat("tls_connections"))
    check(open_now == n + idle,
          "tls_connections %d with %d open" % (open_now, n))
    done = int(stat("tls_handshakes")) - base
    check(done >= n, "tls_handshakes grew by %d for %d" % (done, n))
    for s in conns:
        s.close()
    wait_tls_connections(idle)
    print("%s: tls_connections %d with %d open, back after close; "
          "tls_handshakes +%d" % (what, open_now, n, done))


def cmd_clientcert(mode):
    """--tls-verify MODE with the CA: which client certificates pass."""
    want = {"require": {None: False, "client": True, "wrongca": False},
            "optional": {None: True, "client": True, "wrongca": False},
            "none": {None: True, "client": True, "wrongca": True}}[mode]
    for cert, ok in want.items():
        how = refused(context(cert=cert))
        check((how == "") == ok, "--tls-verify %s, client certificate %s: "
              "%s" % (mode, cert, how or "served"))
        print("--tls-verify %s, client certificate %s: %s"
              % (mode, cert, how or "served"))


def cmd_verify_fails(ca, hostname):
    """The client refuses the server's certificate (its own check)."""
    try:
        tls_connect(context(ca=ca), hostname).close()
    except ssl.SSLCertVerificationError as e:
        print("client-side verification failed as it should: %s"
              % e.verify_message)
        return
    fail("the client accepted the server's certificate (CA %s, name %s)"
         % (ca, hostname))


def wait_closed(s, limit):
    """Seconds until the peer closes S (EOF or reset), and everything it
    sent first; None for the seconds when still open after LIMIT."""
    start = time.monotonic()
    got = b""
    while True:
        left = start + limit - time.monotonic()
        if left <= 0:
            return None, got
        s.settimeout(left)
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            break
        except socket.timeout:
            continue
        if not chunk:
            break
        got += chunk
    return time.monotonic() - start, got


def must_close(s, limit):
    """wait_closed, failing when S is still open after LIMIT seconds."""
    secs, got = wait_closed(s, limit)
    check(secs is not None, "still open after %.1f s (got %r)"
          % (limit, got[:100]))
    return secs, got


def client_hello(ctx=None):
    """The bytes of a ClientHello to localhost, from a memory BIO."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = (ctx or context()).wrap_bio(inc, out, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def bio_session(s):
    """A handshake driven through memory BIOs over the plain socket S, so
    that the test can then send a record's bytes as it likes."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = context().wrap_bio(inc, out, server_hostname="localhost")
    deadline = time.monotonic() + 5
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            s.sendall(out.read())
            check(time.monotonic() < deadline, "handshake too slow")
            s.settimeout(5)
            data = s.recv(65536)
            check(data, "closed during the handshake")
            inc.write(data)
    s.sendall(out.read())
    return obj, inc, out


def rst_close(s):
    """Closes S with a reset (SO_LINGER 0)."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def cmd_failure(case, *args):
    if case == "plain-to-tls":
        # Text to the TLS port: not a TLS record; the server must close
        # (perhaps after an alert), never answer.
        with socket.create_connection((HOST, tls_port), timeout=5) as s:
            s.sendall(b"version\r\nget k\r\n")
            secs, got = must_close(s, 5)
            check(b"VERSION" not in got, "answered text on the TLS port")
        print("text to the TLS port: closed after %.2f s (%d bytes: an "
              "alert or nothing)" % (secs, len(got)))
    elif case == "hello-to-plain":
        # A ClientHello to the plain port: rhkvd answers as text (an
        # error) or closes; it must not crash (healthy, after, checks).
        with plain_connect() as s:
            s.sendall(client_hello())
            secs, got = wait_closed(s, 3)
            print("ClientHello to the plain port: %s, answered %r" % (
                "left open" if secs is None else "closed after %.2f s"
                % secs, got[:60]))
    elif case == "silent":
        # TCP to the TLS port, then nothing: closed after the handshake
        # timeout (ARG seconds), not before, not much after.
        timeout = float(args[0])
        with socket.create_connection((HOST, tls_port), timeout=5) as s:
            secs, _ = must_close(s, timeout + 4)
        # "Close a TLS connection whose handshake takes longer": not
        # before (0.1 s for timers that round).
        check(secs > timeout - 0.1, "closed after %.2f s, before the "
              "%g s handshake timeout" % (secs, timeout))
        print("silent client: closed after %.2f s (handshake timeout %g s)"
              % (secs, timeout))
    elif case == "truncated-hello":
        # A handshake record header that claims 16 KB, 40 bytes of it, then
        # the client's FIN: the server must close.
        hello = client_hello()
        with socket.create_connection((HOST, tls_port), timeout=5) as s:
            s.sendall(hello[:3] + b"\x40\x00" + hello[5:45])
            s.shutdown(socket.SHUT_WR)
            secs, _ = must_close(s, 5)
        print("truncated ClientHello record then FIN: closed after %.2f s"
              % secs)
    elif case == "truncated-data":
        # After a completed handshake, half an application-data record,
        # then FIN: the server must close, not wait or spin.
        with socket.create_connection((HOST, tls_port), timeout=5) as s:
            obj, _, out = bio_session(s)
            obj.write(b"version\r\n")
            record = out.read()
            s.sendall(record[:len(record) // 2])
            s.shutdown(socket.SHUT_WR)
            secs, _ = must_close(s, 5)
        print("truncated application-data record then FIN: closed after "
              "%.2f s" % secs)
    elif case == "reset":
        # Resets mid-handshake: after part of a ClientHello, and after a
        # whole one once the server has answered.
        hello = client_hello()
        for i in range(20):
            with socket.create_connection((HOST, tls_port), timeout=5) as s:
                s.sendall(hello[:20 + i * 7])
                time.sleep(0.01)
                rst_close(s)
        for _ in range(20):
            with socket.create_connection((HOST, tls_port), timeout=5) as s:
                s.sendall(hello)
                s.recv(100)
                rst_close(s)
        print("40 resets mid-handshake (partial ClientHello; after the "
              "ServerHello)")
    else:
        fail("no failure case " + case)


def cmd_handshake_errors_grow(before, limit="30"):
    """Waits (up to LIMIT s: the server counts once it notices the close)
    for ssl_handshake_errors to pass BEFORE; prints the new value."""
    deadline = time.monotonic() + float(limit)
    while True:
        now = int(stat("ssl_handshake_errors"))
        if now > int(before) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    print(now)


def connect_loop(results, stop, limit_n, limit_s):
    """Opens new TLS connections one after another until STOP, LIMIT_N of
    them or LIMIT_S seconds: each a `version`, then its end time and the
    server certificate's fingerprint (or the error) go into RESULTS."""
    deadline = time.monotonic() + limit_s
    while not stop.is_set() and len(results) < limit_n and \
            time.monotonic() < deadline:
        start = time.monotonic()
        try:
            with tls_connect() as s:
                fp = fingerprint(s) if served(s) else "not served"
        except (OSError, ssl.SSLError) as e:
            fp = "error: %s" % e
        results.append((start, time.monotonic(), fp))


def cert_fp(name):
    der = ssl.PEM_cert_to_DER_cert(open(path(name)).read())
    return hashlib.sha256(der).hexdigest()[:16]


def install(live, name):
    """Replaces LIVE.crt and LIVE.key with NAME's, each by a rename (what
    deployment tools do), the key last."""
    for ext in ("crt", "key"):
        tmp = "%s.%s.new" % (live, ext)
        with open(path("%s.%s" % (name, ext)), "rb") as f, \
                open(tmp, "wb") as g:
            g.write(f.read())
        os.rename(tmp, "%s.%s" % (live, ext))


def refresh_certs():
    with plain_connect() as s:
        return text(s, b"refresh_certs\r\n").decode().strip()


def cmd_reload(pid, live, use_hup):
    """The server serves LIVE.{crt,key} (server's at the start). Client
    loops open TLS connections while the files become server2's and the
    server reloads them (SIGHUP when USE_HUP is 1, else refresh_certs),
    then server's again by refresh_certs. Every connection must succeed
    with one certificate or the other, and once a connection has seen the
    new one, every later one must see it. A connection opened before
    stays served, with its certificate."""
    pid, use_hup = int(pid), use_hup == "1"
    old, new = cert_fp("server.crt"), cert_fp("server2.crt")
    kept = tls_connect()
    check(fingerprint(kept) == old, "the server does not start with "
          "server.crt")
    results, stop = [], threading.Event()
    # Four loops: connections in every stage of a handshake at the reload.
    loops = [threading.Thread(target=connect_loop,
                              args=(results, stop, 3000, 60))
             for _ in range(4)]
    for t in loops:
        t.start()
    marks = []
    try:
        for name, fp, how in (("server2", new, "hup" if use_hup else "cmd"),
                              ("server", old, "cmd")):
            n = len(results)
            deadline = time.monotonic() + 20
            while len(results) < n + 100 and time.monotonic() < deadline:
                time.sleep(0.01)
            begun = time.monotonic()
            install(live, name)
            if how == "hup":
                os.kill(pid, signal.SIGHUP)
                sent = time.monotonic()
            else:
                reply = refresh_certs()
                sent = time.monotonic()
                check(reply == "OK", "refresh_certs answered %r" % reply)
            marks.append((begun, sent, fp, how))
            # Wait for the new certificate, and 100 connections more
            # (generous deadlines: handshakes are slow on a loaded machine).
            deadline = sent + 20
            while time.monotonic() < deadline and \
                    not any(r[2] == fp and r[0] > sent for r in results):
                time.sleep(0.01)
            n = len(results)
            while len(results) < n + 100 and time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        stop.set()
        for t in loops:
            t.join()
    bad = [r for r in results if r[2] not in (old, new)]
    check(not bad, "%d of %d connections failed during the reloads, the "
          "first: %s" % (len(bad), len(results), bad[:1]))
    ends = [m[0] for m in marks[1:]] + [1e18]
    for (_, sent, fp, how), end in zip(marks, ends):
        # The connections opened after this reload and done before the
        # next one began to replace the files (one still in its handshake
        # then may meet the next reload's certificate).
        after = [r for r in results if sent < r[0] and r[1] < end]
        check(any(r[2] == fp for r in after), "no connection saw the new "
              "certificate after the %s (%d connections)" % (how, len(after)))
        # refresh_certs answers once the new certificate is in use: every
        # connection opened after its OK sees it. SIGHUP is asynchronous:
        # every connection opened after one that saw it ended.
        seen = sent if how == "cmd" else \
            min(r[1] for r in after if r[2] == fp)
        stale = [r for r in after if r[0] > seen and r[2] != fp]
        check(not stale, "%d connections saw the old certificate after the "
              "new was in use (%s)" % (len(stale), how))
    check(served(kept) and fingerprint(kept) == old,
          "a connection opened before the reloads is no longer served")
    kept.close()
    print("reload under load: %d connections, none failed; %s" % (
        len(results), ", ".join(
            "%s: the new certificate %.0f ms after" % (
                how, 1000 * (next(r[1] for r in results
                                  if r[0] > sent and r[2] == fp) - sent))
            for _, sent, fp, how in marks)))


def cmd_bad_reload(live, pid, use_hup, error, cases):
    """Bad files in place of LIVE.{crt,key}: refresh_certs answers
    ERROR ..., SIGHUP (when USE_HUP is 1) leaves the server running, and
    the old certificate is still served. LIVE is server's again after.
    ERROR: how the refusal starts (memcached's: "Error loading"); CASES:
    which bad files, of "garbage" (a broken key) and "mismatch" (a key
    that is not the certificate's)."""
    old = cert_fp("server.crt")
    garbage = path("garbage")
    with open(garbage + ".key", "w") as f:
        f.write("-----BEGIN PRIVATE KEY-----\nnot a key\n"
                "-----END PRIVATE KEY-----\n")
    with open(garbage + ".crt", "w") as f:
        f.write(open(path("server.crt")).read())
    with open(path("mismatch.crt"), "w") as f:
        f.write(open(path("server2.crt")).read())
    with open(path("mismatch.key"), "w") as f:
        f.write(open(path("server.key")).read())
    for bad in cases.split():
        install(live, bad)
        reply = refresh_certs()
        check(reply.startswith(error + " "), "refresh_certs with the %s files "
              "answered %r" % (bad, reply))
        if use_hup == "1":
            os.kill(int(pid), signal.SIGHUP)
            time.sleep(0.3)
        try:
            with tls_connect() as s:
                fp = fingerprint(s) if served(s) else "not served"
        except (OSError, ssl.SSLError) as e:
            fp = "error: %s" % e
        check(fp == old, "after a refused reload (%s files; refresh_certs "
              "answered %r): not the old certificate: %s" % (bad, reply, fp))
        print("%s files: refresh_certs answered %r; the old certificate "
              "is still served" % (bad, reply))
    install(live, "server")


def cmd_probe(seconds):
    """A TLS connection opened first, then `get` after `get` until stdin
    closes (or SECONDS): prints how many were sent, answered, and the
    latencies' percentiles. A reply lost or late by 10 s fails it."""
    s = tls_connect(timeout=10)
    text(s, b"set probe 0 0 5\r\nhello\r\n")
    print("ready", flush=True)
    lat, sent = [], 0
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()),
                     daemon=True).start()
    deadline = time.monotonic() + float(seconds)
    while not stop.is_set() and time.monotonic() < deadline:
        t = time.perf_counter()
        sent += 1
        try:
            reply = text(s, b"get probe\r\n", b"END\r\n")
        except (OSError, ssl.SSLError) as e:
            fail("probe: get %d: %s" % (sent, e))
        check(reply == b"VALUE probe 0 5\r\nhello\r\nEND\r\n",
              "probe: reply %r" % reply)
        lat.append(time.perf_counter() - t)
        time.sleep(0.0005)
    lat.sort()

    def pct(p):
        return 1000 * lat[min(len(lat) - 1, int(len(lat) * p))]
    print("probe: %d gets, %d replies; latency ms p50 %.2f p99 %.2f "
          "p99.9 %.2f max %.2f" % (sent, len(lat), pct(0.5), pct(0.99),
                                   pct(0.999), 1000 * lat[-1]), flush=True)


def cmd_storm(n):
    """N TLS handshakes at once (non-blocking sockets, one selector), while
    the probe (another process: its timing is not this one's GIL) uses a
    connection established before. Asserts only that the probe had every
    reply; prints its percentiles and how many handshakes completed."""
    import selectors
    n = int(n)
    probe = subprocess.Popen([sys.executable, __file__, str(port),
                              str(tls_port), certs, "probe", "30"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    check(probe.stdout.readline().strip() == "ready", "the probe did not "
          "start")
    ctx = context()
    sel = selectors.DefaultSelector()
    start = time.monotonic()
    deadline = start + 20
    # fd -> [socket, wrapped]: a socket is wrapped once connected (Python
    # peeks at a socket still connecting, which a non-blocking one fails).
    conns = {}
    for _ in range(n):
        raw = socket.socket()
        raw.setblocking(False)
        raw.connect_ex((HOST, tls_port))
        conns[raw.fileno()] = [raw, False]
        sel.register(raw.fileno(), selectors.EVENT_WRITE)
    done = failed = 0
    while done + failed < n and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.5):
            c = conns[key.fd]
            try:
                if not c[1]:
                    err = c[0].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if err:
                        raise OSError(err, os.strerror(err))
                    c[0] = ctx.wrap_socket(c[0], server_hostname="localhost",
                                           do_handshake_on_connect=False)
                    c[1] = True
                c[0].do_handshake()
            except ssl.SSLWantReadError:
                sel.modify(key.fd, selectors.EVENT_READ)
                continue
            except ssl.SSLWantWriteError:
                sel.modify(key.fd, selectors.EVENT_WRITE)
                continue
            except (OSError, ssl.SSLError):
                failed += 1
            else:
                done += 1
            sel.unregister(key.fd)
    secs = time.monotonic() - start
    # All stay open until here: the server holds N connections at once.
    for c in conns.values():
        c[0].close()
    out, _ = probe.communicate("", timeout=30)
    print(out.strip())
    check(probe.returncode == 0, "the probe lost a reply during the storm")
    print("storm: %d handshakes at once: %d completed, %d failed, %d "
          "unfinished after %.1f s" % (n, done, failed, n - done - failed,
                                       secs))


def main():
    cmd, args = sys.argv[4], sys.argv[5:]
    fn = globals().get("cmd_" + cmd.replace("-", "_"))
    if not fn:
        fail("no command " + cmd)
    fn(*args)


if __name__ == "__main__":
    main()
