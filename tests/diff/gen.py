"""Random request sequences from a seed, for both servers alike.

A sequence is a list of writes; a write is a list of commands; a command
is a list of pieces: bytes, or a placeholder that the sender fills in for
each server when it sends the write (wire.render):

    Key(name)       the key `name` of this sequence: a fixed-length prefix
                    new for every run of a sequence (a fresh key space),
                    then the name; names starting with `=` are exact
                    lengths (`=250`, `=251`: a key of that many bytes)
    B64(name)       the same key in base64 (meta `b`)
    Cas(name, d)    the last cas this server returned for the key, plus d
                    (a number no server hands out when none was seen)
    Now(d)          the unix time at sending, plus d (absolute exptimes)

Nothing depends on time: TTLs either never run out during a run (100 s
and more, absolute times far ahead) or have run out already (negative,
past absolute times, 32-bit wraps of those); `R` tokens stay far from
every TTL the generator gives, so that whether an item wins does not
depend on which second the servers' clocks are in; delayed flushes are a
day away or more.
"""

import random

U32 = 1 << 32
U64 = 1 << 64
I64 = 1 << 63
DAY = 86400
MONTH = 30 * DAY  # the largest relative exptime
KEY_MAX = 250
PREFIX_LEN = 8  # wire.prefix(): keys' lengths do not depend on the run
ITEM_MAX = 1 << 20  # both servers' -I


class Key:
    def __init__(self, name):
        self.name = name


class B64(Key):
    pass


class Cas:
    def __init__(self, name, delta=0):
        self.name, self.delta = name, delta


class Now:
    def __init__(self, delta):
        self.delta = delta


# TTLs (classic exptime, meta T and N): far from running out, already run
# out, or the 32-bit wraps of those (memcached keeps the low 32 bits).
TTLS = [0, 0, 0, 100, 1000, DAY, MONTH, -1, -100, MONTH + 1,
        U32 + 100, U32 - 1, U32, -U32 + 100, 1 << 31, I64 - 1, I64, -I64,
        -I64 - 1, U64, '+100', '-0', 'x', '100x', '']
# Remaining-TTL thresholds for mg R: each at least 20 s from every TTL
# above, so the servers' clocks (a second apart at most) never disagree.
RECACHE = [0, -1, 1, 50, 500, 5000, 10 ** 6, U32 + 50, 'x']
FLAGS = [0, 0, 0, 1, 12345, U32 - 1, U32, U32 + 5, U64 - 1, U64, -1, '-0',
         '+7', 'x', -(U64 - 1), '\t3']
# A refused storage line has its data block read as a command line: one of
# over 2048 bytes closes the connection (TEXT.md, Line lengths), which
# ends the sequence. Large values get numbers that are accepted.
GOOD_FLAGS = [0, 1, U32 - 1, U32, U64 - 1, '-0', '+7']
GOOD_TTLS = [0, 100, DAY, -1, U32 + 100, U32 - 1, I64 - 1]
BIG = 2000
DELTAS = [0, 1, 1, 7, 100, U32, U32 + 1, U64 - 1, U64, -1, '-0', 'x',
          -(U64 - 1)]
NUMBERS = [b'0', b'1', b'9', b'99', b'100', b'007', b' 12', b'12 ',
           b'18446744073709551615', b'18446744073709551614', b'-5', b'',
           b'abc', b'1a', b'4294967296']
# flush_all delays: now, a day or more away (never reached in a run), an
# absolute time far ahead or in the past, and 32-bit wraps.
DELAYS = [0, DAY, MONTH, -1, U32, U32 + DAY, 1 << 31, MONTH + 1, 'x',
          I64]
CLASSIC = ['set', 'add', 'replace', 'append', 'prepend', 'cas']


def num(rng, choices):
    v = rng.choice(choices)
    return v.encode() if isinstance(v, str) else b'%d' % v


def value(rng, numeric=False):
    if numeric or rng.random() < 0.25:
        return rng.choice(NUMBERS)
    n = rng.choice([0, 1, 1, 2, 3, 5, 8, 20, 100, 1000, 5000])
    return bytes(rng.choice(b'abcdefghijklmnopqrstuvwxyz0123456789')
                 for _ in range(n))


class Gen:
    """Sequences from one seed: `Gen(seed).sequence()` again and again."""

    def __init__(self, seed, item_max=ITEM_MAX):
        self.rng = random.Random(seed)
        self.item_max = item_max

    # ---- pieces ----

    def key(self):
        r = self.rng.random()
        if r < 0.015:
            return Key('=251')
        if r < 0.03:
            return Key('=250')
        if r < 0.04:
            return Key('\x01c')
        return Key(self.rng.choice('abc'))

    def cas(self, name):
        rng = self.rng
        r = rng.random()
        if r < 0.6:
            return Cas(name)
        if r < 0.7:
            # a near miss: one below is never the item's cas, as both
            # servers' counters only grow for a connection; one above
            # is the cas memcached gives the next write (rhkvd steps by
            # its thread count), so it would test the counters' step
            return Cas(name, -1)
        return num(rng, [0, 1, U64 - 1, U64, -1, 'x', 987654321987])

    def ttl(self):
        if self.rng.random() < 0.08:
            return Now(self.rng.choice([10 ** 7, -10 ** 7]))
        return num(self.rng, TTLS)

    # ---- classic commands ----

    def storage(self):
        rng = self.rng
        cmd = rng.choice(CLASSIC)
        k = self.key()
        data = value(rng)
        r = rng.random()
        if r < 0.015:  # about the item size limit: what memcached's item
            # header and a 250-byte key leave of it, and one byte over
            data = b'z' * rng.choice([self.item_max - 400,
                                      self.item_max + 1])
        n = b'%d' % len(data)
        big = len(data) > BIG
        r = rng.random()
        if r < 0.03:
            n = b'%d' % (len(data) + U32)
        elif r < 0.05 and not big:
            n = num(rng, [-1, 1 << 31, U32, 'x', (1 << 31) - 3,
                          -U32 + len(data)])
        elif r < 0.07 and not big:
            n = b'%d' % (len(data) + rng.choice([-1, 1, 2]))
        flags = num(rng, GOOD_FLAGS if big else FLAGS)
        ttl = num(rng, GOOD_TTLS) if big else self.ttl()
        p = [cmd.encode() + b' ', k, b' ', flags, b' ', ttl, b' ', n]
        if cmd == 'cas':
            p += [b' ', self.cas(k.name) if not big else Cas(k.name)]
        r = rng.random()
        if r < 0.2:
            p.append(b' noreply')
        elif r < 0.23 and not big:
            p.append(rng.choice([b' noreplyx', b' 0', b' noreply x']))
        end = b'\r\n' if rng.random() > 0.02 or big else \
            rng.choice([b'xx', b'\n', b''])
        return p + [b'\r\n', data, end]

    def retrieval(self):
        rng = self.rng
        cmd = rng.choice(['get', 'get', 'gets', 'gat', 'gats', 'bget'])
        p = [cmd.encode()]
        if cmd.startswith('gat'):
            p += [b' ', self.ttl()]
        for _ in range(rng.choice([1, 1, 1, 2, 3, 0])):
            p += [b' ', self.key()]
        if rng.random() < 0.01:  # a long line of keys, never stored: 400
            p += [b' ', Key('m')] * 400  # hits of a 1 MB value is 400 MB
        return p + [b'\r\n']

    def touch(self):
        p = [b'touch ', self.key(), b' ', self.ttl()]
        return p + self.noreply() + [b'\r\n']

    def noreply(self):
        return [b' noreply'] if self.rng.random() < 0.2 else []

    def arith(self):
        rng = self.rng
        p = [rng.choice([b'incr ', b'decr ']), self.key(), b' ',
             num(rng, DELTAS)]
        return p + self.noreply() + [b'\r\n']

    def delete(self):
        rng = self.rng
        p = [b'delete ', self.key()]
        r = rng.random()
        if r < 0.1:
            p.append(rng.choice([b' 0', b' 5', b' 0 noreply', b' x',
                                 b' 0 0']))
        return p + self.noreply() + [b'\r\n']

    def flush(self):
        rng = self.rng
        p = [b'flush_all']
        if rng.random() < 0.5:
            if rng.random() < 0.1:
                p += [b' ', Now(rng.choice([10 ** 7, -10 ** 7]))]
            else:
                p += [b' ', num(rng, DELAYS)]
        return p + self.noreply() + [b'\r\n']

    def misc(self):
        rng = self.rng
        return [rng.choice([
            b'version\r\n', b'verbosity 0\r\n', b'verbosity 1 noreply\r\n',
            b'verbosity %d\r\n' % U32, b'verbosity x\r\n', b'verbosity\r\n',
            b'mn\r\n', b'bogus\r\n', b'\r\n', b'GET\r\n', b'sets k\r\n',
            b'get\r\n', b'gat 10\r\n', b'incr\r\n', b'touch k\r\n',
            b'verbosity %d\r\n' % (U64 - 1)])]

    # ---- meta commands ----

    def meta_key(self):
        """The key, in base64 with `b` one time in eight."""
        k = self.key()
        if self.rng.random() < 0.12 and not k.name.startswith('='):
            return B64(k.name), [b' b']
        return k, []

    def flags(self, letters, k, rare='E'):
        """Meta flags: each letter of `letters` maybe, in random order.
        Those of `rare` seldom: what memcached 1.6.18 does not have (the
        current text's E, ms s, ms N, md x) is a documented difference."""
        rng = self.rng
        out = []
        for c in letters:
            if rng.random() < (0.015 if c in rare else 0.3):
                out.append(self.flag(c, k))
        if rng.random() < 0.05:
            out.append([rng.choice(b'abdegijmnoprwxyzABGHKLPQSUVWXYZ')
                        .to_bytes(1, 'big')])
        if rng.random() < 0.03 and out:
            out.append(rng.choice(out))  # a duplicate
        rng.shuffle(out)
        p = []
        for f in out:
            p += [b' '] + f
        return p

    def flag(self, c, k):
        rng = self.rng
        b = c.encode()
        if c in 'TN':
            return [b, self.ttl()]
        if c == 'R':
            return [b, num(rng, RECACHE)]
        if c in 'CE':
            if c == 'E' and rng.random() < 0.7:
                return [b, num(rng, [1 << 40, U64 - 1])]
            return [b, self.cas(k.name)]
        if c == 'F':
            return [b, num(rng, FLAGS[:-1])]
        if c == 'O':
            n = rng.choice([0, 1, 5, 31, 31, 32])
            return [b + b'o' * n]
        if c == 'D':
            return [b, num(rng, DELTAS[:-1])]
        if c == 'J':
            return [b, num(rng, [0, 5, 100, U64 - 1, U64, 'x'])]
        if c == 'M':
            return [b + rng.choice([b'S', b'E', b'A', b'P', b'R', b'I',
                                    b'D', b'+', b'-', b'x', b'', b'SE',
                                    b's'])]
        return [b]

    def mg(self):
        k, b = self.meta_key()
        return [b'mg ', k] + b + self.flags('vcfsthlkOquTNRE', k) + [b'\r\n']

    def ms(self):
        rng = self.rng
        k, b = self.meta_key()
        data = value(rng)
        n = b'%d' % len(data)
        r = rng.random()
        if r < 0.03:
            n = b'%d' % (len(data) + U32)
        elif r < 0.05 and len(data) <= BIG:
            n = num(rng, [-1, 1 << 31, 'x'])
        p = [b'ms ', k, b' ', n] + b + self.flags('FTMCIqckOsNE', k, 'EsN')
        return p + [b'\r\n', data, b'\r\n']

    def md(self):
        k, b = self.meta_key()
        return [b'md ', k] + b + self.flags('CITqkOxFE', k, 'Ex') + [b'\r\n']

    def ma(self):
        k, b = self.meta_key()
        return [b'ma ', k] + b + self.flags('DMNJCTqvtckOE', k) + [b'\r\n']

    def me(self):
        k, b = self.meta_key()
        return [b'me ', k] + b + [b'\r\n']

    # ---- sequences ----

    def command(self):
        rng = self.rng
        kinds = [(self.storage, 18), (self.retrieval, 14), (self.touch, 3),
                 (self.arith, 6), (self.delete, 4), (self.flush, 1.5),
                 (self.misc, 2), (self.mg, 14), (self.ms, 10),
                 (self.md, 5), (self.ma, 8), (self.me, 1)]
        r = rng.uniform(0, sum(w for _, w in kinds))
        for f, w in kinds:
            r -= w
            if r < 0:
                return f()
        return self.mg()

    def sequence(self):
        """A list of writes, each a list of commands."""
        rng = self.rng
        writes = [[self.command() for _ in range(rng.choice([1, 2, 3, 5,
                                                             8]))]
                  for _ in range(rng.choice([1, 2, 2, 3, 4]))]
        if rng.random() < 0.01:  # memcached's HTTP guard
            rng.choice(writes).append([b'GET / HTTP/1.1\r\n'])
        if rng.random() < 0.01:
            rng.choice(writes).append([b'quit\r\n'])
        return writes
