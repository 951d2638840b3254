"""Warm restart (--memory-file) against rhkvd, driven over the text protocol.

usage: warm_restart.py SERVER PART
       PART: graceful | kill | refusals | sequence

graceful  100,000 items (500,000 with RHKV_TEST_SOAK=1; 50,000 under a
          sanitizer) of mixed sizes, flags and TTLs; stopped by SIGTERM,
          then by SIGUSR1: each start restores every live item byte for
          byte with its flags and cas, and none that expired (the SIGTERM
          sent again every 5 ms until the exit: a stop under way, its
          seal included, must not die of it); then ordinary
          commands work on the restored cache and new cas values lie above
          the restored ones. Then 2.2M items (5M with RHKV_TEST_SOAK=1;
          550,000 under a sanitizer: each just past a table size) set by
          rhkv-bench (RHKV_TEST_BENCH) and stopped at once, while the table
          still grows: every one comes back.
kill      12 rounds (24 with RHKV_TEST_SOAK=1, 6 under a sanitizer) of
          write load ended by SIGKILL (unsealed file), by SIGKILL
          shortly after SIGTERM (maybe mid-seal) or by a clean stop: each
          start serves only values the client wrote for that key (each
          value checks itself), and after a clean stop every acknowledged
          last value.
refusals  what the file and the settings make a start do: exit 64 for a
          file others may use, a symlink, another owner; 71 for a file in
          use; start empty, saying why, for other -m or -I, a truncated file
          or another format version; drop only a corrupt segment; a
          delayed flush_all pending at the stop still applies after it.
sequence  a cas a client chose (meta E) up to 2^64 - 1 across a restart,
          with 4 threads and with 1: new cas values are unique against the
          restored ones, flush_all and flush_prefix cover what they must
          and nothing stored after them; a delayed flush_all pending across
          the restart covers items stored after it, and at its time.

Each server listens on 127.0.0.1 on a free port and is stopped by PID; the
files live in a fresh folder under /dev/shm, removed at the end.
"""

import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SERVER = sys.argv[1]
PART = sys.argv[2]
# RHKV_TEST_SOAK=1: the longer runs (more items, more rounds); CI runs the
# shorter ones.
SOAK = os.environ.get("RHKV_TEST_SOAK", "") not in ("", "0")
DEADLINE = time.monotonic() + 500  # no loop here runs past it
started = []  # every Popen, stopped at the end


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def bounded(what):
    if time.monotonic() > DEADLINE:
        raise Fail("ran out of time: " + what)


# ---- servers ----

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def listens(pid, port):
    """Whether pid holds the listening socket on port (a parallel test may
    have picked the same free port)."""
    inodes = set()
    for tab in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(tab) as f:
                for line in f.readlines()[1:]:
                    c = line.split()
                    if c[1].endswith(":%04X" % port) and c[3] == "0A":
                        inodes.add("socket:[%s]" % c[9])
        except OSError:
            pass
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in inodes:
                return True
        except OSError:
            pass
    return False


class Server:
    def __init__(self, path, args=(), expect_start=True, threads=2):
        self.path = path
        self.log = path + ".log.%d" % len(started)
        for _ in range(5):
            self.port = free_port()
            with open(self.log, "wb") as out:
                self.p = subprocess.Popen(
                    [SERVER, "-p", str(self.port), "-l", "127.0.0.1",
                     "-t", str(threads), "-v", "--memory-file", path] +
                    list(args),
                    stdout=out, stderr=subprocess.STDOUT)
            started.append(self.p)
            if not expect_start:
                return
            if self.wait_ready():
                return
            if self.p.poll() is not None:
                raise Fail("server did not start: exit %s\n%s" %
                           (self.p.returncode, self.text()))
            self.stop(signal.SIGKILL)
        raise Fail("server did not start on a free port")

    def wait_ready(self):
        end = time.monotonic() + 120  # a sanitizer's restore of much
        while time.monotonic() < end and self.p.poll() is None:
            try:
                s = socket.create_connection(("127.0.0.1", self.port), 1)
                s.sendall(b"version\r\n")
                ok = s.recv(100).startswith(b"VERSION ")
                s.close()
                if ok and listens(self.p.pid, self.port):
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def text(self):
        with open(self.log, "rb") as f:
            return f.read().decode(errors="replace")

    def exit_code(self, timeout=60):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise Fail("server %d did not exit" % self.p.pid)

    def stop(self, sig=signal.SIGTERM, timeout=60, repeat=False):
        """Sends sig and waits for the exit. repeat: sends it again every
        5 ms until then, as an impatient supervisor would: a stop under
        way (the seal included) must not die of the second one."""
        if self.p.poll() is None:
            os.kill(self.p.pid, sig)
        end = time.monotonic() + timeout
        while repeat and self.p.poll() is None and time.monotonic() < end:
            try:
                os.kill(self.p.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(0.005)
        return self.exit_code(timeout)

    def sanitized(self):
        try:
            with open("/proc/%d/maps" % self.p.pid) as f:
                m = f.read()
            return "libasan" in m or "libtsan" in m
        except OSError:
            return False


def stop_all():
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait()


# ---- a text protocol client ----

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), 10)
        self.s.settimeout(60)
        self.buf = bytearray()
        self.pos = 0

    def close(self):
        self.s.close()

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        bounded("reading a reply")
        if self.pos > 1 << 20:
            del self.buf[:self.pos]
            self.pos = 0
        d = self.s.recv(1 << 20)
        if not d:
            raise Fail("connection closed by the server")
        self.buf += d

    def line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                ln = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return ln
            self._fill()

    def exact(self, n):
        while len(self.buf) - self.pos < n:
            self._fill()
        d = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return d

    def cmd(self, line):
        self.send(line.encode() + b"\r\n")
        return self.line().decode()

    def store(self, verb, key, value, flags=0, exptime=0, cas=None):
        tail = " %d" % cas if cas is not None else ""
        self.send(b"%s %s %d %d %d%s\r\n%s\r\n" % (
            verb.encode(), key.encode(), flags, exptime, len(value),
            tail.encode(), value))
        return self.line().decode()

    def gets(self, keys):
        """{key: (flags, value, cas)} for the keys served."""
        self.send(("gets " + " ".join(keys) + "\r\n").encode())
        return self.read_values()

    def read_values(self):
        out = {}
        while True:
            ln = self.line()
            if ln == b"END":
                return out
            m = re.fullmatch(rb"VALUE (\S+) (\d+) (\d+) (\d+)", ln)
            check(m, "unexpected line %r" % ln)
            data = self.exact(int(m[3]) + 2)
            check(data.endswith(b"\r\n"), "value not followed by CRLF")
            out[m[1].decode()] = (int(m[2]), data[:-2], int(m[4]))

    def stats(self, group=""):
        self.send(b"stats%s\r\n" % (b" " + group.encode() if group else b""))
        st = {}
        while True:
            ln = self.line().decode()
            if ln == "END":
                return st
            parts = ln.split(" ", 2)
            check(parts[0] == "STAT", "unexpected stats line " + ln)
            st[parts[1]] = parts[2]

    def pipeline_store(self, items, batch=2000):
        """Sets items [(key, flags, exptime, value)], batch by batch, every
        reply checked to be STORED."""
        for b in range(0, len(items), batch):
            bounded("loading")
            chunk = items[b:b + batch]
            self.send(b"".join(
                b"set %s %d %d %d\r\n%s\r\n" % (k.encode(), f, e, len(v), v)
                for k, f, e, v in chunk))
            got = self.exact(8 * len(chunk))
            check(got == b"STORED\r\n" * len(chunk),
                  "a set was not stored: %r" % got[:200])

    def gets_all(self, keys, batch=200):
        """gets of every key, a few batches in flight."""
        out = {}
        batches = [keys[i:i + batch] for i in range(0, len(keys), batch)]
        for i in range(0, len(batches), 8):
            bounded("reading back")
            group = batches[i:i + 8]
            self.send(b"".join(("gets " + " ".join(g) + "\r\n").encode()
                               for g in group))
            for _ in group:
                out.update(self.read_values())
        return out


def restore_line(srv):
    t = srv.text()
    m = re.search(r"memory file .* restored (\d+) items", t)
    return int(m[1]) if m else None


def empty_line(srv):
    m = re.search(r"memory file (\S+) not restored, starting empty: (.*)",
                  srv.text())
    return m and (m[1], m[2])


# ---- values that check themselves ----

def value_for(key, ver, size):
    """key|ver| padded towards size, then |crc32 of all before it."""
    head = b"%s|%d|" % (key.encode(), ver)
    pad = max(size - len(head) - 9, 0)
    body = head + (head * (pad // len(head) + 1))[:pad]
    return body + b"|%08x" % zlib.crc32(body)


def value_ok(key, v):
    """The version a value holds, or None when it is not one the client
    could have written for key (torn, foreign, corrupt)."""
    m = re.match(rb"([^|]+)\|(\d+)\|", v)
    if not m or m[1] != key.encode() or len(v) < m.end() + 9:
        return None
    if v[-9:] != b"|%08x" % zlib.crc32(v[:-9]):
        return None
    return int(m[2])


# ---- graceful ----

def graceful(tmp):
    path = os.path.join(tmp, "cache")
    args = ["-m", "1024", "-I", "1m"]
    srv = Server(path, args)
    san = srv.sanitized()
    n = 50000 if san else 500000 if SOAK else 100000
    rnd = random.Random(1)
    model = {}  # key -> (flags, value); what must come back
    gone = set()  # keys that expire before the restart
    items, doomed_at_stop, doomed_while_down = [], [], []
    for i in range(n):
        key = "w:%d" % i
        flags = rnd.getrandbits(32)
        if i % 997 == 5:
            size = rnd.randint(20 << 10, 200 << 10)  # large (> 16 KiB)
        elif i % 50 == 1:
            size = rnd.randint(1000, 16000)
        else:
            size = rnd.randint(1, 120)
        value = value_for(key, 0, size) if size >= 9 else b"v" * size
        kind = i % 10
        if kind == 1:
            doomed_at_stop.append((key, flags, 1, value))  # 1 s
            gone.add(key)
            continue
        if kind == 2:
            doomed_while_down.append((key, flags, 3, value))  # 3 s
            gone.add(key)
            continue
        exptime = 3600 if kind == 3 else (
            int(time.time()) + 7200 if kind == 4 else 0)
        items.append((key, flags, exptime, value))
        model[key] = (flags, value)
    c = Conn(srv.port)
    t0 = time.monotonic()
    c.pipeline_store(doomed_at_stop)
    c.pipeline_store(items)
    load_s = time.monotonic() - t0
    print("loaded %d items in %.1f s" % (len(items) + len(doomed_at_stop),
                                         load_s))
    keys = ["w:%d" % i for i in range(n)]
    # Until the last of the 1 s items has expired (the others went no
    # later): loading may take seconds on a busy machine.
    last = doomed_at_stop[-1][0]
    end = time.monotonic() + 60
    while c.gets([last]) and time.monotonic() < end:
        time.sleep(0.1)
    check(not c.gets([last]), "an item with exptime 1 outlived 60 s")
    before = c.gets_all(keys)
    check_model(before, model, gone, None)
    cas_of = {k: v[2] for k, v in before.items()}
    # Live at the stop, expired by the next start.
    c.pipeline_store(doomed_while_down)
    set_at = time.monotonic()
    c.close()

    for rnd_no, sig in enumerate((signal.SIGTERM, signal.SIGUSR1)):
        # The SIGTERM round sends it again and again until the exit.
        rc = srv.stop(sig, repeat=rnd_no == 0)
        check(rc == 0, "exit %d after %s" % (rc, sig.name))
        time.sleep(max(0, set_at + 4.2 - time.monotonic()))
        srv = Server(path, args)
        c = Conn(srv.port)
        st = c.stats()
        print("after %s: restore=%s restore_items=%s skipped=%s in %s s" %
              (sig.name, st.get("restore"), st.get("restore_items"),
               st.get("restore_skipped_items"), st.get("restore_seconds")))
        check(st.get("restore") == "restored",
              "restore=%s\n%s" % (st.get("restore"), srv.text()))
        check(int(st["restore_items"]) == len(model),
              "restore_items %s, %d were live" %
              (st["restore_items"], len(model)))
        check(restore_line(srv) == len(model),
              "log line: " + srv.text())
        check(int(st["restore_skipped_segments"]) == 0,
              "skipped segments " + st["restore_skipped_segments"])
        if rnd_no == 0 and not san:
            # Sealed live, expired while down: skipped, not restored.
            check(int(st["restore_skipped_items"]) == len(doomed_while_down),
                  "restore_skipped_items %s, %d expired while down" %
                  (st["restore_skipped_items"], len(doomed_while_down)))
        after = c.gets_all(keys)
        check_model(after, model, gone, cas_of)
        if rnd_no == 0:
            protocol_checks(c, model, cas_of)
            keys += ["p:new", "p:n"]
            cas_of = {k: v[2] for k, v in c.gets_all(keys).items()}
        c.close()

    # flush_all before a stop: nothing comes back.
    c = Conn(srv.port)
    check(c.cmd("flush_all") == "OK", "flush_all")
    check(c.gets(keys[:100]) == {}, "items served after flush_all")
    c.close()
    check(srv.stop() == 0, "exit after flush_all")
    srv = Server(path, args)
    c = Conn(srv.port)
    st = c.stats()
    check(st["restore"] == "restored" and st["restore_items"] == "0",
          "after flush_all: restore=%s items=%s" %
          (st["restore"], st["restore_items"]))
    check(c.gets_all(keys) == {}, "flushed items came back")
    c.close()
    check(srv.stop() == 0, "final exit")
    os.unlink(path)
    resize_at_stop(tmp)


def resize_at_stop(tmp):
    """5M items set as fast as rhkv-bench can, stopped at once: the
    table is still growing when the seal checksums the segments, and a
    resize moving items then changed them after their checksum (the next
    start dropped a quarter of the items as corrupt)."""
    bench = os.environ.get("RHKV_TEST_BENCH")
    if not bench or not os.access(bench, os.X_OK):
        print("no rhkv-bench (RHKV_TEST_BENCH): the resize case is left out")
        return
    path = os.path.join(tmp, "resize")
    args = ["-m", "1024"]
    srv = Server(path, args)
    # Just past a table size (2^19, 2^21, 2^22 buckets; the table grows
    # past one element a bucket), so that it is still growing at the stop.
    n = 550000 if srv.sanitized() else 5000000 if SOAK else 2200000
    subprocess.run([bench, "--port", str(srv.port), "--threads", "2",
                    "--conns", "8", "--ratio", "1:0", "--keys", str(n),
                    "--value-size", "32", "--prefill", "--requests", "1",
                    "--seed", "1"], check=True, timeout=300,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = Conn(srv.port)
    items = int(c.stats()["curr_items"])
    resizing = c.stats("table").get("resizing")
    c.close()
    check(items == n, "curr_items %d after setting %d keys" % (items, n))
    print("resize at the stop: %d items, resizing %s" % (n, resizing))
    check(srv.stop() == 0, "exit after the load")
    srv = Server(path, args)
    c = Conn(srv.port)
    st = c.stats()
    c.close()
    print("resize at the stop: %s of %d restored, %s segments skipped" %
          (st["restore_items"], n, st["restore_skipped_segments"]))
    check(st["restore_skipped_segments"] == "0" and
          int(st["restore_items"]) == n,
          "%s of %d items restored, %s segments skipped\n%s" %
          (st["restore_items"], n, st["restore_skipped_segments"], srv.text()))
    check(srv.stop() == 0, "exit")
    os.unlink(path)


def check_model(got, model, gone, cas_of):
    extra = set(got) - set(model)
    check(not extra, "%d keys served that should not be: %s" %
          (len(extra), sorted(extra)[:5]))
    missing = set(model) - set(got)
    check(not missing, "%d keys missing: %s" %
          (len(missing), sorted(missing)[:5]))
    for k, (flags, value) in model.items():
        f, v, cas = got[k]
        check(v == value, "%s: value differs (%d bytes, want %d)" %
              (k, len(v), len(value)))
        check(f == flags, "%s: flags %d, want %d" % (k, f, flags))
        if cas_of is not None:
            check(cas == cas_of[k], "%s: cas %d, was %d" % (k, cas, cas_of[k]))


def protocol_checks(c, model, cas_of):
    top = max(cas_of.values())
    # A restored item's cas is honoured, a stale one refused.
    k = "w:0"
    check(c.store("cas", k, b"new0", 7, 0, cas_of[k] + 1) == "EXISTS",
          "cas with a wrong value on a restored item")
    check(c.store("cas", k, b"new0", 7, 0, cas_of[k]) == "STORED",
          "cas with the restored value")
    model[k] = (7, b"new0")
    g = c.gets([k])
    check(g[k][2] > top, "new cas %d not above restored %d" % (g[k][2], top))
    check(c.store("set", "p:new", b"hello", 3) == "STORED", "set")
    g = c.gets(["p:new"])
    check(g == {"p:new": (3, b"hello", g["p:new"][2])}, "get after set")
    check(g["p:new"][2] > top, "new cas not above the restored ones")
    model["p:new"] = (3, b"hello")
    check(c.store("add", "w:3", b"x") == "NOT_STORED", "add over restored")
    check(c.store("set", "p:n", b"41") == "STORED", "set counter")
    check(c.cmd("incr p:n 1") == "42", "incr")
    check(c.cmd("decr p:n 2") == "40", "decr")
    model["p:n"] = (0, b"40")
    check(c.store("append", "w:6", b"++") == "STORED", "append to restored")
    model["w:6"] = (model["w:6"][0], model["w:6"][1] + b"++")
    check(c.cmd("delete w:8") == "DELETED", "delete a restored item")
    check(c.gets(["w:8"]) == {}, "deleted item served")
    del model["w:8"]
    check(c.cmd("delete w:1") == "NOT_FOUND", "delete an expired item")
    check(c.cmd("touch w:9 0") == "TOUCHED", "touch a restored item")
    check(c.cmd("version").startswith("VERSION "), "version")


# ---- kill ----

def kill(tmp):
    path = os.path.join(tmp, "cache")
    args = ["-m", "64"]
    rnd = random.Random(int(os.environ.get("RHKV_WARM_SEED", "7")))
    keys = ["k:%d" % i for i in range(3000)]
    written = {}  # key -> highest version sent
    acked = {}  # key -> version acknowledged last (None: deleted)
    srv = Server(path, args)
    rounds = 6 if srv.sanitized() else 24 if SOAK else 12
    modes = ["write", "seal", "clean"] * (rounds // 3)
    rnd.shuffle(modes)
    ver = 0
    counts = {"restored": 0, "empty": 0}
    for r, mode in enumerate(modes):
        bounded("kill rounds")
        c = Conn(srv.port)
        end = time.monotonic() + rnd.uniform(0.2, 1.2)
        pending = []  # (key, version or None) sent, reply not read
        killed = False
        while not killed:
            batch = []
            for _ in range(rnd.randint(1, 200)):
                ver += 1
                k = rnd.choice(keys)
                if rnd.random() < 0.05:
                    batch.append(b"delete %s\r\n" % k.encode())
                    pending.append((k, None))
                    continue
                size = (rnd.randint(17 << 10, 60 << 10)
                        if rnd.random() < 0.02 else rnd.randint(10, 600))
                v = value_for(k, ver, size)
                written[k] = ver
                batch.append(b"set %s 0 0 %d\r\n%s\r\n" % (k.encode(), len(v),
                                                           v))
                pending.append((k, ver))
            c.send(b"".join(batch))
            if time.monotonic() > end and mode == "write":
                os.kill(srv.p.pid, signal.SIGKILL)
                killed = True
                break
            if time.monotonic() > end and mode == "seal":
                # The seal starts once the connections are gone: at
                # once when the client has closed (and it then takes a
                # few ms), else after the server has waited for this one
                # (about 1.2 s). The kill lands before, in or after it.
                if rnd.random() < 0.5:
                    c.close()
                    os.kill(srv.p.pid, signal.SIGTERM)
                    time.sleep(10 ** rnd.uniform(-4.5, -2))
                else:
                    os.kill(srv.p.pid, signal.SIGTERM)
                    time.sleep(rnd.uniform(0.8, 1.6))
                os.kill(srv.p.pid, signal.SIGKILL)
                killed = True
                break
            for k, v in pending:
                ln = c.line()
                check(ln in (b"STORED", b"DELETED", b"NOT_FOUND"),
                      "reply %r" % ln)
                acked[k] = v
            pending = []
            if time.monotonic() > end and mode == "clean":
                break
        c.close()
        rc = srv.exit_code() if killed else srv.stop(signal.SIGTERM)
        check(killed or rc == 0, "exit %d after a clean stop" % rc)
        srv = Server(path, args)
        c = Conn(srv.port)
        st = c.stats()
        how = st["restore"]
        counts[how] = counts.get(how, 0) + 1
        if mode == "write":
            check(how == "empty", "round %d: a killed server's file was %s"
                  " (exit %s)\n%s" % (r, how, rc, srv.text()))
            check(empty_line(srv), "no log line saying why")
        if mode == "clean":
            check(how == "restored", "round %d: after a clean stop %s\n%s" %
                  (r, how, srv.text()))
        got = c.gets_all(keys)
        for k, (f, v, cas) in got.items():
            have = value_ok(k, v)
            check(have is not None, "round %d: %s holds %r" % (r, k, v[:80]))
            check(have <= written.get(k, -1),
                  "round %d: %s holds version %d never written" % (r, k, have))
        if mode == "clean":
            for k, v in acked.items():
                if v is None:
                    check(k not in got, "round %d: deleted %s back" % (r, k))
                else:
                    check(k in got and value_ok(k, got[k][1]) == v,
                          "round %d (%s): %s lost its last value %d" %
                          (r, mode, k, v))
        # What a start serves is what the next rounds build on.
        acked = {k: value_ok(k, got[k][1]) if k in got else None
                 for k in keys}
        c.close()
        counts[mode + "->" + how] = counts.get(mode + "->" + how, 0) + 1
        print("round %2d %-5s -> %-8s %d keys served" % (r, mode, how,
                                                         len(got)))
    check(srv.stop() == 0, "final exit")
    print("restores:", counts)


# ---- refusals ----

def expect_exit(path, args, code, needle):
    srv = Server(path, args, expect_start=False)
    rc = srv.exit_code(60)
    text = srv.text()
    check(rc == code, "%s: exit %s, want %d\n%s" % (args, rc, code, text))
    check(needle in text, "%s: no %r in\n%s" % (args, needle, text))
    print("exit %d: %s" % (rc, text.strip().splitlines()[-1]))


def populate(path, args, n=20000):
    """A sealed file holding n self-checking items (some large)."""
    srv = Server(path, args)
    c = Conn(srv.port)
    rnd = random.Random(n)
    items = []
    for i in range(n):
        k = "r:%d" % i
        size = rnd.randint(20 << 10, 40 << 10) if i % 500 == 0 else \
            rnd.randint(200, 1500)
        items.append((k, 0, 0, value_for(k, 1, size)))
    c.pipeline_store(items)
    c.close()
    check(srv.stop() == 0, "populate: exit")
    return [k for k, _, _, _ in items]


def restart_empty(path, args, why):
    srv = Server(path, args)
    c = Conn(srv.port)
    st = c.stats()
    line = empty_line(srv)
    check(st["restore"] == "empty", "restore=%s" % st["restore"])
    check(line and line[0] == path and why in line[1],
          "no 'not restored ... %s' line in\n%s" % (why, srv.text()))
    check(c.gets(["r:1", "r:2", "r:500"]) == {}, "items served after empty")
    c.close()
    check(srv.stop() == 0, "exit")
    print("empty: " + line[1])


def refusals(tmp):
    path = os.path.join(tmp, "cache")
    args = ["-m", "64"]

    # Files others could read or write, or another user's: refused.
    with open(path, "w"):
        pass
    os.chmod(path, 0o644)
    expect_exit(path, args, 64, path)
    os.chmod(path, 0o600)
    link = os.path.join(tmp, "link")
    os.symlink(path, link)
    expect_exit(link, args, 64, link)
    if os.geteuid() == 0:
        os.chown(path, 65534, -1)
        expect_exit(path, args, 64, "owned by uid 65534")
        os.chown(path, 0, -1)
    else:
        print("not root: the other owner's case is left out")
    os.unlink(path)

    # A second rhkvd on a file in use.
    first = Server(path, args)
    expect_exit(path, args, 71, "in use by another rhkvd")
    c = Conn(first.port)
    check(c.cmd("version").startswith("VERSION"), "first server answers")
    c.close()
    check(first.stop() == 0, "first server's exit")
    check(os.stat(path).st_mode & 0o777 == 0o600, "file mode not 0600")

    keys = populate(path, args)
    restart_empty(path, ["-m", "128"], "-m was 64 MiB, now 128 MiB")
    keys = populate(path, args)
    restart_empty(path, args + ["-I", "2m"], "-I was")
    keys = populate(path, args)
    os.truncate(path, os.path.getsize(path) // 2)
    restart_empty(path, args, "truncated")
    keys = populate(path, args)
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(struct.pack("<I", 99))
    restart_empty(path, args, "format RHKVARN1 version 99")

    # One flipped byte in a segment: that segment goes, the rest comes back.
    keys = populate(path, args)
    with open(path, "r+b") as f:
        h = f.read(104)
        seg_size, nsegs = struct.unpack_from("<QQ", h, 24)
        records_off, arena_off = struct.unpack_from("<QQ", h, 48)
        f.seek(records_off)
        recs = [struct.unpack("<IIIB3xQ", f.read(24)) for _ in range(nsegs)]
        sealed = [i for i, r in enumerate(recs) if r[0] == 1 and r[1] > 0]
        check(len(sealed) >= 3, "only %d sealed segments" % len(sealed))
        i = sealed[len(sealed) // 2]
        at = arena_off + i * seg_size + recs[i][1] // 2
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x20]))
    srv = Server(path, args)
    c = Conn(srv.port)
    st = c.stats()
    check(st["restore"] == "restored", "restore=%s" % st["restore"])
    check(st["restore_skipped_segments"] == "1",
          "restore_skipped_segments=%s" % st["restore_skipped_segments"])
    check(" 1 corrupt segments" in srv.text(), "log: " + srv.text())
    got = c.gets_all(keys)
    check(int(st["restore_items"]) == len(got), "restore_items %s, served %d"
          % (st["restore_items"], len(got)))
    check(0 < len(got) < len(keys), "%d of %d served" % (len(got), len(keys)))
    for k, (f, v, cas) in got.items():
        check(value_ok(k, v) == 1, "%s: corrupt value served" % k)
    print("corrupt segment: %d of %d items restored" % (len(got), len(keys)))
    c.close()
    check(srv.stop() == 0, "exit")

    # A delayed flush_all pending at the stop still kills what it covered
    # (the file keeps it, and the next start applies it at its time).
    os.unlink(path)
    srv = Server(path, args)
    c = Conn(srv.port)
    check(c.store("set", "df:small", b"x") == "STORED", "set")
    check(c.store("set", "df:large", b"y" * (40 << 10)) == "STORED", "set")
    check(c.cmd("flush_all 3") == "OK", "flush_all 3")
    due = time.time() + 3
    c.close()
    check(srv.stop() == 0, "exit")
    srv = Server(path, args)
    c = Conn(srv.port)
    # The flush acts 2 to 4 s after the command (one-second clocks, a cut-off
    # rounded up): a look well before that must find the items.
    if time.time() < due - 1.5:
        check(len(c.gets(["df:small", "df:large"])) == 2,
              "items gone before the delayed flush was due")
    time.sleep(max(0, due + 1.2 - time.time()))
    check(c.gets(["df:small", "df:large"]) == {},
          "items outlived a delayed flush_all pending at the stop")
    c.close()
    check(srv.stop() == 0, "exit")
    print("delayed flush_all: kept across the restart")


# ---- sequence ----

CAS_TOP = (1 << 64) - 1


def populate_chosen(path, threads):
    """A sealed file with a few ordinary items and one whose cas a client
    chose: 2^64 - 1. The restored cas values (chosen one excluded)."""
    srv = Server(path, ["-m", "64"], threads=threads)
    c = Conn(srv.port)
    for i in range(8):
        check(c.store("set", "s:%d" % i, b"v%d" % i) == "STORED", "set")
    c.send(b"ms s:chosen 1 E%d\r\nx\r\n" % CAS_TOP)
    check(c.line() == b"HD", "ms with E")
    got = c.gets(["s:chosen"])
    check(got["s:chosen"][2] == CAS_TOP, "chosen cas %r" % got)
    c.close()
    check(srv.stop() == 0, "exit")
    srv = Server(path, ["-m", "64"], threads=threads)
    c = Conn(srv.port)
    got = c.gets(["s:%d" % i for i in range(8)] + ["s:chosen"])
    check(len(got) == 9 and got["s:chosen"][2] == CAS_TOP,
          "-t %d: restored %r" % (threads, got))
    return srv, c, {v[2] for k, v in got.items() if k != "s:chosen"}


def sequence_after_restart(tmp, threads):
    path = os.path.join(tmp, "seq%d" % threads)
    srv, c, restored = populate_chosen(path, threads)
    # New writes on every worker: fresh cas values, never a restored one.
    conns = [Conn(srv.port) for _ in range(threads * 2)]
    seen = set()
    for i, cc in enumerate(conns):
        k = "n:%d" % i
        check(cc.store("set", k, b"new") == "STORED", "set " + k)
        cas = cc.gets([k])[k][2]
        check(cas not in restored and cas not in seen,
              "-t %d: new cas %d repeats a restored or new one (%s)" %
              (threads, cas, sorted(restored | seen)))
        seen.add(cas)
    # flush_all covers what came before it, not what comes after.
    check(c.cmd("flush_all") == "OK", "flush_all")
    check(c.gets(["s:1", "s:chosen", "n:0"]) == {},
          "-t %d: served after flush_all" % threads)
    for i, cc in enumerate(conns):
        k = "a:%d" % i
        check(cc.store("set", k, b"after") == "STORED", "set " + k)
        check(k in cc.gets([k]), "-t %d: %s set after flush_all is not "
              "readable" % (threads, k))
    # And so does a prefix flush.
    check(c.cmd("flush_prefix p:") == "OK", "flush_prefix")
    for i, cc in enumerate(conns):
        k = "p:%d" % i
        check(cc.store("set", k, b"after") == "STORED", "set " + k)
        check(k in cc.gets([k]), "-t %d: %s set after flush_prefix is "
              "not readable" % (threads, k))
    for cc in conns + [c]:
        cc.close()
    check(srv.stop() == 0, "exit")

    # flush_all as the first command after a restart hides every item.
    srv, c, restored = populate_chosen(path, threads)
    check(c.cmd("flush_all") == "OK", "flush_all")
    got = c.gets(["s:%d" % i for i in range(8)] + ["s:chosen"])
    check(got == {}, "-t %d: restored items served after flush_all: %s" %
          (threads, sorted(got)))
    c.close()
    check(srv.stop() == 0, "exit")
    os.unlink(path)
    print("-t %d: cas sequence and flushes after the restart" % threads)


def delayed_flush(tmp):
    """A delayed flush_all pending at a stop covers, once due, the items
    restored and those stored after the restart before it was due, and
    at its time, not rounded up to the next second."""
    path = os.path.join(tmp, "delayed")
    srv = Server(path, ["-m", "64"])
    c = Conn(srv.port)
    check(c.store("set", "d:old", b"x") == "STORED", "set")
    check(c.store("set", "d:big", b"y" * (40 << 10)) == "STORED", "set")
    # Early in a second, so that a cut-off rounded up to the next second
    # would leave the items readable for most of a second after it.
    while not 0.05 <= time.time() % 1 < 0.3:
        time.sleep(0.01)
    check(c.cmd("flush_all 3") == "OK", "flush_all 3")
    due = time.time() + 3  # the server's due time is at or before this
    c.close()
    check(srv.stop() == 0, "exit")
    srv = Server(path, ["-m", "64"])
    c = Conn(srv.port)
    check(c.store("set", "d:new", b"z") == "STORED", "set after restart")
    if time.time() < due - 0.2:
        check(len(c.gets(["d:old", "d:big", "d:new"])) == 3,
              "items gone before the delayed flush was due")
    else:
        print("the restart took until the flush was due: the items set "
              "after it are not checked before")
    while time.time() < due + 0.05:
        time.sleep(0.01)
    got = c.gets(["d:old", "d:big", "d:new"])
    check(got == {}, "served after a delayed flush_all pending across the "
          "restart came due: %s" % sorted(got))
    c.close()
    check(srv.stop() == 0, "exit")
    os.unlink(path)
    print("delayed flush_all across a restart: applied at its time")


def cas_of_gone_items(tmp):
    """Items flushed or deleted before a stop took their cas values along;
    a client may still hold one, so no new item may get it after the
    restart (the restored items alone are no reference)."""
    path = os.path.join(tmp, "gone")
    srv = Server(path, threads=1)
    c = Conn(srv.port)
    seen = set()
    for k in ("g:a", "g:b", "g:c"):
        check(c.store("set", k, b"v") == "STORED", "set " + k)
        seen.add(c.gets([k])[k][2])
    check(c.cmd("delete g:c") == "DELETED", "delete")
    check(c.cmd("flush_all") == "OK", "flush_all")
    c.close()
    check(srv.stop() == 0, "exit")
    srv = Server(path, threads=1)
    c = Conn(srv.port)
    for k in ("g:d", "g:e", "g:f"):
        check(c.store("set", k, b"new") == "STORED", "set " + k)
        cas = c.gets([k])[k][2]
        check(cas > max(seen), "cas %d after the restart, %s given "
              "before it" % (cas, sorted(seen)))
    c.close()
    check(srv.stop() == 0, "exit")
    os.unlink(path)
    print("cas values of items gone before the stop are not given again")


def sequence(tmp):
    for threads in (4, 1):
        sequence_after_restart(tmp, threads)
    cas_of_gone_items(tmp)
    delayed_flush(tmp)


def main():
    tmp = tempfile.mkdtemp(prefix="rhkv-warm.", dir="/dev/shm")
    ok = False
    try:
        {"graceful": graceful, "kill": kill, "refusals": refusals,
         "sequence": sequence}[PART](tmp)
        ok = True
    except Fail as e:
        print("FAIL: %s" % e)
    finally:
        stop_all()
        if not ok:
            for name in sorted(os.listdir(tmp)):
                if ".log." in name:
                    with open(os.path.join(tmp, name), errors="replace") as f:
                        tail = f.read()[-2000:]
                    print("== %s\n%s" % (name, tail))
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0 if ok else 1)


main()
