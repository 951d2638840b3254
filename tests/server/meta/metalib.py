"""The pieces of the meta conformance suite: cases, placeholders, a reply
reader that knows where data blocks are, and the normaliser that compares
two servers' replies (conformance.py runs them).

A case is a name and a list of steps. A step is a string (latin-1) sent as
one write (or one byte a write), followed by "\\r\\n" unless it ends with
a newline, then "mn\\r\\n"; its reply is read up to that "MN\\r\\n" (as
many MN as the step holds mn lines, plus one). A step may also be a Sleep.
Placeholders in a step, expanded per server when the step is sent:

    $K          the case's key (a text key, unique per case and run)
    $K2 .. $K9  more keys of the case
    $L<n>       a text key of exactly n bytes, unique to the case
    $BK         base64 of a binary key: NUL, space, \\r, \\n and 0xff in it
    $BKT        base64 of $K (the same item as the text key $K)
    $BL<n>      a base64 key of exactly n characters (n a multiple of 4),
                unique to the case
    $C<n>       the n-th distinct CAS value this server has shown in this
                case so far ($C1 the first); $C<n>+<d> and $C<n>-<d> add or
                subtract d
    $NOW+<n>    the Unix time n seconds from now (absolute expiry times)
"""

import base64
import re
import socket
import time

MN = b"mn\r\n"


class Sleep:
    """A pause between steps (expiry)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __repr__(self):
        return "Sleep(%s)" % self.seconds


class Case:
    def __init__(self, name, steps, bytewise=False, literal_cas=False):
        self.name = name
        self.steps = list(steps)
        # also run one byte a write (a second run under another key)
        self.bytewise = bytewise
        # CAS values compared as they are (golden cases with E<cas>)
        self.literal_cas = literal_cas


def small(steps, limit=10000):
    """True when the steps are short enough to send one byte a write and
    hold no Sleep."""
    return all(isinstance(s, str) for s in steps) and \
        sum(len(s) for s in steps) < limit


class Cases:
    """A list of cases with unique names. Besides those asked for, every
    eighth small case also runs one byte a write (auto_bytewise)."""

    def __init__(self, auto_bytewise=8):
        self.all = []
        self.names = set()
        self.auto = auto_bytewise

    def add(self, name, *steps, **kw):
        if name in self.names:
            raise ValueError("duplicate case name " + name)
        self.names.add(name)
        if "bytewise" not in kw and self.auto and \
                len(self.all) % self.auto == 0 and small(steps):
            kw["bytewise"] = True
        self.all.append(Case(name, steps, **kw))


PLACEHOLDER = re.compile(
    rb"\$(BKT|BK|BL\d+|NOW[+-]\d+|L\d+|K\d?|C\d+(?:[+-]\d+)?)")


class Context:
    """The per-server, per-run state of a case: its key prefix and the CAS
    values seen so far."""

    def __init__(self, key):
        self.key = key.encode()
        self.cas_seen = []

    def expand(self, step):
        def sub(m):
            t = m.group(1)
            if t == b"K":
                return self.key
            if t == b"BK":
                raw = b"\x00 \r\n\xff" + self.key
                return base64.b64encode(raw)
            if t == b"BKT":
                return base64.b64encode(self.key)
            if t.startswith(b"BL"):
                n = int(t[2:])
                if n % 4:
                    raise ValueError("$BL wants a multiple of 4")
                raw = (self.key + b"\x00" * n)[:n // 4 * 3]
                return base64.b64encode(raw)
            if t.startswith(b"NOW"):
                return str(int(time.time()) + int(t[3:])).encode()
            if t.startswith(b"K"):
                return self.key + b"~" + t[1:]
            if t.startswith(b"L"):
                n = int(t[1:])
                k = (self.key + b"_" + b"x" * n)[:n]
                if len(k) < n:
                    raise ValueError("key too short for $L")
                # the end stays unique: keep the case key at the front
                return k
            mm = re.match(rb"C(\d+)([+-]\d+)?", t)
            idx = int(mm.group(1))
            if idx > len(self.cas_seen):
                # no such CAS yet (the server never showed one): a value
                # no item has, so the reply still says something
                v = 999999999
            else:
                v = self.cas_seen[idx - 1]
            if mm.group(2):
                v += int(mm.group(2))
            return str(v).encode()
        return PLACEHOLDER.sub(sub, step.encode("latin-1"))

    def note_cas(self, v):
        if v != 0 and v not in self.cas_seen:
            self.cas_seen.append(v)


# ---------------------------------------------------------------- replies

class Reply:
    """One step's reply: the bytes, and how it ended: 'ok' (MN read),
    'closed' (EOF first) or 'timeout'."""

    def __init__(self, data, end):
        self.data = data
        self.end = end

    def __repr__(self):
        return repr(self.data) + ("" if self.end == "ok" else
                                  " <%s>" % self.end)


def split_reply(buf):
    """Splits a reply into units: (line, data-block-or-None). Returns
    (units, rest): rest is an incomplete tail."""
    units = []
    pos = 0
    while True:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            return units, buf[pos:]
        line = buf[pos:nl + 1]
        # split at spaces only: a key may hold a tab
        toks = line.rstrip(b"\r\n").split(b" ")
        size = None
        try:
            if toks[:1] == [b"VA"] and len(toks) >= 2:
                size = int(toks[1])
            elif toks[:1] == [b"VALUE"] and len(toks) >= 4:
                size = int(toks[3])
        except ValueError:
            size = None
        if size is not None:
            end = nl + 1 + size + 2
            if end > len(buf):
                return units, buf[pos:]
            units.append((line, buf[nl + 1:end]))
            pos = end
        else:
            units.append((line, None))
            pos = nl + 1


def complete(buf, want_mn=1):
    """True when buf ends with a whole MN line at the top level, the
    want_mn-th."""
    units, rest = split_reply(buf)
    return (not rest and units and units[-1] == (b"MN\r\n", None) and
            units.count((b"MN\r\n", None)) >= want_mn)


MN_LINE = re.compile(rb"^mn(?: [^\n]*)?\r?\n", re.M)


def count_mn(data):
    """How many mn commands a step holds (its lines that are mn, with or
    without tokens; the steps put no such line in a data block)."""
    return len(MN_LINE.findall(data))


class Conn:
    def __init__(self, port, timeout=3.0):
        self.sock = socket.create_connection(("127.0.0.1", port),
                                             timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.closed = False

    def send(self, data, bytewise=False):
        try:
            if bytewise:
                for i in range(len(data)):
                    self.sock.sendall(data[i:i + 1])
            else:
                self.sock.sendall(data)
        except OSError:
            self.closed = True

    def read_until_mn(self, total=5.0, idle=1.0, want_mn=1):
        """Reads until a top-level MN\\r\\n, EOF, or a timeout: total
        seconds in all, or idle seconds without a byte once the reply has
        gone quiet without an MN."""
        buf = b""
        deadline = time.monotonic() + total
        last = time.monotonic()
        while True:
            if buf and complete(buf, want_mn):
                return Reply(buf, "ok")
            now = time.monotonic()
            left = min(deadline - now, last + idle - now if buf else
                       deadline - now)
            if left <= 0:
                return Reply(buf, "timeout")
            self.sock.settimeout(left)
            try:
                d = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError:
                d = b""
            if not d:
                self.closed = True
                return Reply(buf, "closed")
            buf += d
            last = time.monotonic()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def run_case(port, case, key, bytewise=False, step_timeout=5.0):
    """Runs a case against one server; returns the list of step replies
    (a Sleep step gives None) and the Context."""
    ctx = Context(key)
    out = []
    try:
        conn = Conn(port)
    except OSError as e:
        return [Reply(b"", "connect failed: %s" % e)], ctx
    try:
        for step in case.steps:
            if isinstance(step, Sleep):
                time.sleep(step.seconds)
                out.append(None)
                continue
            if conn.closed:
                out.append(Reply(b"", "closed"))
                continue
            data = ctx.expand(step)
            if not data.endswith(b"\n"):
                data += b"\r\n"
            data += MN
            conn.send(data, bytewise)
            r = conn.read_until_mn(total=step_timeout,
                                   want_mn=count_mn(data))
            for v in cas_values(r.data):
                ctx.note_cas(v)
            out.append(r)
    finally:
        conn.close()
    return out, ctx


# ------------------------------------------------------------ normalising

NUM = re.compile(rb"^-?\d+$")


def cas_values(data):
    """The CAS values in a reply, in order."""
    units, _ = split_reply(data)
    vals = []
    for line, _blk in units:
        for kind, v in scan_line(line):
            if kind == "cas":
                vals.append(v)
    return vals


def scan_line(line):
    """Yields (kind, value) for the tokens of a reply line that carry a
    CAS ("cas") or a time ("ttl", "la")."""
    toks = line.split(b" ")
    code = toks[0].rstrip(b"\r\n")
    if code in (b"HD", b"VA", b"EN", b"NS", b"EX", b"NF"):
        for t in toks[1:]:
            t = t.rstrip(b"\r\n")
            if len(t) > 1 and NUM.match(t[1:]):
                if t[:1] == b"c":
                    yield "cas", int(t[1:])
                elif t[:1] == b"t":
                    yield "ttl", int(t[1:])
                elif t[:1] == b"l":
                    yield "la", int(t[1:])
    elif code == b"ME":
        for t in toks[2:]:
            t = t.rstrip(b"\r\n")
            k, _, v = t.partition(b"=")
            if NUM.match(v):
                if k == b"cas":
                    yield "cas", int(v)
                elif k in (b"exp", b"la"):
                    yield "ttl", int(v)
    elif code == b"VALUE" and len(toks) == 5:
        t = toks[4].rstrip(b"\r\n")
        if NUM.match(t):
            yield "cas", int(t)


class Norm:
    """Turns replies into comparable token lists: CAS values become $1, $2
    ... in order of appearance (0 stays 0); times (t, l, exp=, la=) become
    (prefix, n, end) tuples, compared with a tolerance of 2 seconds (but
    -1, "no expiry", exactly: the two servers' clocks tick at different
    moments, and a loaded machine, or a sanitizer build, may spend a
    second between two steps); the ME line's cls= and size= become '*'."""

    def __init__(self, literal_cas=False):
        self.map = {}
        self.literal = literal_cas

    def cas(self, v):
        if self.literal or v == 0:
            return str(v).encode()
        if v not in self.map:
            self.map[v] = b"$%d" % (len(self.map) + 1)
        return self.map[v]

    def line(self, line):
        toks = line.split(b" ")
        code = toks[0].rstrip(b"\r\n")
        out = []
        if code in (b"HD", b"VA", b"EN", b"NS", b"EX", b"NF"):
            for i, t in enumerate(toks):
                end = b"\r\n" if t.endswith(b"\r\n") else b""
                core = t[:len(t) - len(end)]
                if i > 0 and len(core) > 1 and NUM.match(core[1:]) \
                        and core[:1] in (b"c", b"t", b"l"):
                    v = int(core[1:])
                    if core[:1] == b"c":
                        out.append(b"c" + self.cas(v) + end)
                    else:
                        out.append((core[:1], v, end))
                else:
                    out.append(t)
        elif code == b"ME" and len(toks) > 2:
            out.extend(toks[:2])
            for t in toks[2:]:
                end = b"\r\n" if t.endswith(b"\r\n") else b""
                core = t[:len(t) - len(end)]
                k, eq, v = core.partition(b"=")
                if k == b"cas" and NUM.match(v):
                    out.append(b"cas=" + self.cas(int(v)) + end)
                elif k in (b"exp", b"la") and NUM.match(v):
                    out.append((k + b"=", int(v), end))
                elif k in (b"cls", b"size"):
                    out.append(k + b"=*" + end)
                else:
                    out.append(t)
        elif code == b"VALUE" and len(toks) == 5:
            end = b"\r\n" if toks[4].endswith(b"\r\n") else b""
            core = toks[4][:len(toks[4]) - len(end)]
            out.extend(toks[:4])
            if NUM.match(core):
                out.append(self.cas(int(core)) + end)
            else:
                out.append(toks[4])
        else:
            out = toks
        return out

    def reply(self, r):
        if r is None:
            return None
        units, rest = split_reply(r.data)
        out = []
        for line, blk in units:
            out.append(self.line(line))
            if blk is not None:
                out.append(blk)
        if rest:
            out.append(rest)
        return (out, r.end)


def tok_equal(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        if a[0] != b[0] or a[2] != b[2]:
            return False
        if a[1] == -1 or b[1] == -1:
            return a[1] == b[1]
        return abs(a[1] - b[1]) <= 2
    return a == b


def norm_equal(a, b):
    """Compares two normalised replies (from Norm.reply)."""
    if a is None or b is None:
        return a is b
    ua, ea = a
    ub, eb = b
    if ea != eb or len(ua) != len(ub):
        return False
    for x, y in zip(ua, ub):
        if isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            if not all(tok_equal(p, q) for p, q in zip(x, y)):
                return False
        elif x != y:
            return False
    return True


def compare(replies_a, replies_b, literal_cas=False):
    """True when two runs of a case agree after normalising."""
    na, nb = Norm(literal_cas), Norm(literal_cas)
    if len(replies_a) != len(replies_b):
        return False
    for ra, rb in zip(replies_a, replies_b):
        if not norm_equal(na.reply(ra), nb.reply(rb)):
            return False
    return True
