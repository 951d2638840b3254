"""Sends a sequence to both servers at once and reads their replies.

Each write of the sequence is rendered for each server (its own cas
values, gen.py's placeholders), followed by `mn\\r\\n`, the tester's own
marker, and sent on one connection per server per sequence, new for the
sequence. A server's reply to the write is complete when as many `MN`
lines have come as the write holds `mn` commands, or the server closes
the connection, or it has been quiet for `quiet` seconds (a data block
that swallowed the marker). A server whose marker has not come while the
other's has, or while the other is still answering, gets up to PATIENCE
seconds of quiet instead (a sanitizer build, or either server on a loaded
machine, may be slow), unless a
storage command of the sequence has announced a value over the item size
limit that does not come: memcached then holds every reply until the
value has been dropped (TEXT.md). Replies are split into units: a line,
or a `VALUE`/`VA` line with its data block; a close is the unit
`<closed>`.
"""

import base64
import select
import socket
import time

import gen

CLOSED = b'<closed>'
MARK = b'mn\r\n'
PATIENCE = 10.0


def prefix(n):
    """The key prefix of the n-th sequence run: gen.PREFIX_LEN bytes."""
    s = ''
    while True:
        s = '0123456789abcdefghijklmnopqrstuvwxyz'[n % 36] + s
        n //= 36
        if n == 0:
            break
    return ('d' + s.rjust(gen.PREFIX_LEN - 1, '0')).encode()


def key_bytes(pfx, name):
    if name.startswith('='):
        return pfx + b'K' * (int(name[1:]) - len(pfx))
    return pfx + name.encode('latin-1')


# a cas that neither server has handed out
NO_CAS = 987654321987


def render(cmd, pfx, cas):
    """The bytes of one command (a list of gen pieces) for one server;
    cas maps full keys to the last cas that server returned."""
    out = []
    for p in cmd:
        if isinstance(p, bytes):
            out.append(p)
        elif isinstance(p, gen.B64):
            out.append(base64.b64encode(key_bytes(pfx, p.name)))
        elif isinstance(p, gen.Key):
            out.append(key_bytes(pfx, p.name))
        elif isinstance(p, gen.Cas):
            c = cas.get(key_bytes(pfx, p.name))
            out.append(b'%d' % ((c if c is not None else NO_CAS) + p.delta))
        elif isinstance(p, gen.Now):
            out.append(b'%d' % (int(time.time()) + p.delta))
        else:
            raise TypeError(p)
    return b''.join(out)


def split_units(buf, i=0):
    """(units, bytes used): whole units of buf from offset i; a partial
    one stays."""
    units = []
    while i < len(buf):
        j = buf.find(b'\n', i)
        if j < 0:
            break
        line = buf[i:j + 1]
        end = j + 1
        tok = line.split()
        n = None
        if len(tok) >= 4 and tok[0] == b'VALUE' and tok[3].isdigit():
            n = int(tok[3])
        elif len(tok) >= 2 and tok[0] == b'VA' and tok[1].isdigit():
            n = int(tok[1])
        if n is not None:
            end = j + 1 + n + 2
            if end > len(buf):
                break
        units.append(bytes(buf[i:end]))
        i = end
    return units, i


def learn_cas(units, cas):
    """Updates key -> cas from the replies that name both: VALUE lines of
    gets/gats, meta lines with k and c flags."""
    for u in units:
        line = u.split(b'\r\n', 1)[0]
        tok = line.split(b' ')
        if tok[0] == b'VALUE' and len(tok) == 5 and tok[4].isdigit():
            cas[tok[1]] = int(tok[4])
        elif tok[0] in (b'HD', b'VA', b'NS', b'EX', b'NF'):
            k = c = None
            for i, t in enumerate(tok[1:], 1):
                if t[:1] == b'k':
                    k = t[1:]
                    if i + 1 < len(tok) and tok[i + 1] == b'b':
                        try:
                            k = base64.b64decode(k)
                        except ValueError:
                            k = None
                elif t[:1] == b'c' and t[1:].isdigit():
                    c = int(t[1:])
            if k is not None and c is not None:
                cas[k] = c


class Side:
    """One server's connection for one sequence."""

    def __init__(self, name, port):
        self.name = name
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=10)
        self.sock.setblocking(False)
        self.buf = bytearray()  # everything received
        self.parsed = []  # its whole units, split as they come
        self.pos = 0  # where the parsed units end in buf
        self.marks = 0  # MN units among them
        self.sent = []  # the bytes of each write
        self.cas = {}
        self.learnt = 0  # units learn_cas() has seen
        self.closed = False

    def feed(self, d):
        self.buf += d
        u, self.pos = split_units(self.buf, self.pos)
        self.parsed += u
        self.marks += sum(1 for x in u if x == b'MN\r\n')

    def units(self):
        u = list(self.parsed)
        if self.closed:
            if self.pos < len(self.buf):
                u.append(bytes(self.buf[self.pos:]))
            u.append(CLOSED)
        return u

    def close(self):
        self.sock.close()


STORAGE = {b'set': 4, b'add': 4, b'replace': 4, b'append': 4,
           b'prepend': 4, b'cas': 4, b'ms': 2}


def data_length(cmd):
    """A storage command's data length as memcached reads it (its low 32
    bits, signed), -1 for none."""
    t = cmd.split(b'\r\n', 1)[0].split()
    at = STORAGE.get(t[0] if t else b'')
    try:
        n = int(t[at]) & 0xffffffff
    except (TypeError, IndexError, ValueError):
        return -1
    return n - (1 << 32) if n >= 1 << 31 else n


def run(ports, writes, pfx, quiet, item_max=gen.ITEM_MAX):
    """Runs one sequence against each port of `ports` (a dict name ->
    port) at once; returns name -> Side."""
    sides = {n: Side(n, p) for n, p in ports.items()}
    held = False
    try:
        for w in writes:
            held = held or any(data_length(render(c, pfx, {})) > item_max
                               for c in w)
            patient = () if held else tuple(sides)
            marks = 1 + sum(1 for c in w if c == [MARK])
            out, want, last = {}, {}, {}
            for s in sides.values():
                learn_cas(s.parsed[s.learnt:], s.cas)
                s.learnt = len(s.parsed)
                data = b''.join(render(c, pfx, s.cas) for c in w) + MARK
                s.sent.append(data)
                out[s.name] = data if not s.closed else b''
                want[s.name] = s.marks + marks  # the MN to wait for
                last[s.name] = time.time()
            exchange(sides, out, want, last, quiet, patient)
    finally:
        for s in sides.values():
            s.close()
    return sides


def done(s, want):
    """Whether s's reply to the write is complete: closed, or as many MN
    as wanted (`want`, counted from the sequence's start) and nothing
    after them half come."""
    return s.closed or (s.marks >= want and s.pos == len(s.buf))


def exchange(sides, out, want, last, quiet, patient):
    """Sends each side its bytes while reading, until each is done."""
    pending = {n for n in sides if not done(sides[n], want[n]) or
               out[n]}

    def waited(n, now):
        idle = now - last[n]
        if idle <= quiet:
            return False
        if n in patient and any(done(sides[m], want[m])
                                for m in sides if m != n):
            return idle > PATIENCE
        # the other still answering: judge this one once it is through
        if any(m in pending and not done(sides[m], want[m]) and
               now - last[m] <= quiet for m in sides if m != n):
            return idle > PATIENCE
        return True

    while pending:
        rd = [sides[n].sock for n in pending]
        wr = [sides[n].sock for n in pending if out[n]]
        r, w, _ = select.select(rd, wr, [], 0.05)
        now = time.time()
        for n in list(pending):
            s = sides[n]
            if s.sock in w:
                try:
                    k = s.sock.send(out[n][:1 << 16])
                    out[n] = out[n][k:]
                    last[n] = now
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    out[n] = b''
            if s.sock in r:
                try:
                    d = s.sock.recv(1 << 16)
                except (BlockingIOError, InterruptedError):
                    d = None
                except OSError:
                    d = b''
                if d == b'':
                    s.closed = True
                    out[n] = b''
                elif d:
                    s.feed(d)
                    last[n] = now
        # Only once every side's bytes of this round are in: a slow
        # server's silence is judged knowing whether the other has just
        # finished (then it gets PATIENCE, not quiet).
        for n in list(pending):
            s = sides[n]
            if not out[n] and (done(s, want[n]) or
                               waited(n, now)):
                pending.discard(n)
            elif out[n] and now - last[n] > 10 * quiet + 10:
                pending.discard(n)  # a server that reads nothing
