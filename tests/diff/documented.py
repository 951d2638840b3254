"""The documented differences: matchers for the differences between
memcached 1.6.18 and rhkvd that proto/TEXT.md and proto/META.md describe.

Each matcher names the section that documents it and looks at the first
unit where the replies differ (after compare.py's mapping) and at the
sequence sent. A difference no matcher explains fails the run. Keep the
matchers narrow: each should accept only the replies its section
describes, after a request its section names.
"""

import re

import compare
import gen
import wire

PFX = b'P' * gen.PREFIX_LEN


class Ctx:
    """One difference: the sequence, both servers' units, where."""

    def __init__(self, writes, mc, rh, i, nmc, nrh):
        self.writes = writes
        self.cmds = [(w, wire.render(c, PFX, {})) for w, cmds in
                     enumerate(writes) for c in cmds]
        self.mc, self.rh, self.i = mc, rh, i
        self.nmc, self.nrh = nmc, nrh  # compare.Norm's (tokens, data)

    def norm(self, side):
        """The differing unit after compare.py's mapping: (tokens, data);
        ([], b'') past the end."""
        u = self.nmc if side == 'mc' else self.nrh
        return u[self.i] if self.i < len(u) else ([], b'')

    def any(self, pattern):
        """A command matching the regex (bytes) was sent."""
        rx = re.compile(pattern, re.S)
        return any(rx.search(c) for _, c in self.cmds)

    def at(self, side):
        u = self.mc if side == 'mc' else self.rh
        return u[self.i] if self.i < len(u) else b''

    def rest(self, side):
        return (self.mc if side == 'mc' else self.rh)[self.i:]


class Doc:
    def __init__(self, name, where, test):
        self.name, self.where, self.test = name, where, test

    def __str__(self):
        return '%s (%s)' % (self.name, self.where)


DOCS = []


def doc(name, where):
    def add(f):
        DOCS.append(Doc(name, where, f))
        return f
    return add


def explain(writes, mc, rh, i, nmc, nrh):
    ctx = Ctx(writes, mc, rh, i, nmc, nrh)
    for d in DOCS:
        if d.test(ctx):
            return d
    return None


def i32(tok):
    """A number token as memcached's safe_strtol keeps it, or None."""
    try:
        v = int(tok)
    except ValueError:
        return None
    if not -(1 << 63) <= v < (1 << 63):
        return None
    v &= 0xffffffff
    return v - (1 << 32) if v >= 1 << 31 else v


def toks(cmd):
    return cmd.split(b'\r\n', 1)[0].split()


def is_meta(cmd, *names):
    t = toks(cmd)
    return bool(t) and t[0] in [n.encode() for n in names]


def meta_flags(cmd):
    t = toks(cmd)
    return t[3:] if t[:1] == [b'ms'] else t[2:]


data_length = wire.data_length
GETS = (b'get', b'gets', b'gat', b'gats', b'bget')
OK_LINE = b'CLIENT_ERROR bad command line format\r\n'


# ---- TEXT.md ----

@doc('a line too long', 'TEXT.md, "Line lengths"')
def long_line(c):
    rh = c.rest('rh')
    return rh[-2:] == [b'CLIENT_ERROR line too long\r\n', wire.CLOSED] and \
        any(len(x) > 2048 for x in b''.join(
            cmd for _, cmd in c.cmds).split(b'\n'))


@doc('replies dropped before a close', 'TEXT.md, "Where rhkvd differs '
     'from memcached 1.6.18", replies held back, then dropped')
def dropped_before_close(c):
    return c.rest('mc') == [wire.CLOSED] and \
        c.rest('rh')[-1:] == [wire.CLOSED] and \
        any(toks(x)[-1:] and toks(x)[-1].startswith(b'HTTP/')
            for _, x in c.cmds)


@doc('replies dropped before a key over 250 bytes', 'TEXT.md, "Where '
     'rhkvd differs from memcached 1.6.18", replies held back, then dropped')
def dropped_before_long_key(c):
    # memcached's reply from some unit s <= i on is the error alone, where
    # rhkvd has the dropped replies first
    if not any(u == OK_LINE for u in c.mc[:c.i + 1]) or \
            OK_LINE not in c.rest('rh'):
        return False
    return any(toks(x)[:1] and toks(x)[0] in GETS and
               any(len(k) > 250 for k in toks(x)[1:]) for _, x in c.cmds)


@doc('a value over the limit answered after it is dropped', 'TEXT.md, '
     '"Where rhkvd differs from memcached 1.6.18", a value over the item '
     'size limit')
def too_large_later(c):
    # memcached has sent nothing from here on: it holds this read's
    # replies until the value is dropped (noreply may hide rhkvd's error)
    return c.rest('mc') in ([], [wire.CLOSED]) and \
        any(data_length(x) > gen.ITEM_MAX for _, x in c.cmds)


@doc('the item size limit counts the value alone', 'META.md, "Where rhkvd '
     'differs from memcached 1.6.18", the item size limit')
def limit_counts_value(c):
    return c.at('mc') == b'SERVER_ERROR object too large for cache\r\n' and \
        any(gen.ITEM_MAX - 512 < data_length(x) <= gen.ITEM_MAX
            for _, x in c.cmds)


def squeeze(n):
    """A normalized unit without what memcached's new item and rhkvd's
    update in place tell apart: the value's padding, the lengths, the TTL,
    the fetched bit, the access time, the stale and win marks."""
    t, data = n
    if t[:1] == [b'VALUE'] and len(t) >= 4:
        t = t[:3] + t[4:]
    elif t[:1] == [b'VA']:
        t = t[:1] + t[2:]
    if t[:1] == [b'ME']:
        t = [x for x in t if x.partition(b'=')[0] not in (b'fetch', b'la',
                                                          b'exp')]
    else:
        t = t[:1] + [x for x in t[1:] if x[:1] not in (b's', b't', b'h',
                                                       b'l')
                     and x not in (b'X', b'W', b'Z')]
    return t, data.replace(b' ', b'')


@doc('incr/decr/ma of an item a pending reply holds', 'TEXT.md, "Where '
     'rhkvd differs from memcached 1.6.18", incr, decr and ma')
def arith_not_in_place(c):
    writes = {}
    for w, x in c.cmds:
        t = toks(x)[:1]
        if t and t[0] in (b'incr', b'decr', b'ma') and any(
                toks(y)[:1] and toks(y)[0] in GETS + (b'mg',)
                for v, y in c.cmds if v == w):
            writes[w] = True
    return bool(writes) and squeeze(c.norm('mc')) == squeeze(c.norm('rh'))


def flush_delay(x):
    t = toks(x)
    if t[:1] != [b'flush_all'] or len(t) < 2:
        return None
    return i32(t[1])


@doc('flush_all with a delay', 'TEXT.md, "Where rhkvd differs from '
     'memcached 1.6.18", flush_all with a delay')
def flush_watermark(c):
    seen_flush = False
    for _, x in c.cmds:
        d = flush_delay(x)
        if d is not None and d > 0 and (seen_flush or d > gen.MONTH):
            return True
        if toks(x)[:1] == [b'flush_all']:
            seen_flush = True
    return False


# ---- META.md ----

@doc("the current text's E, ms s, ms N, md x", 'META.md, "What the '
     'current text adds or rewords"')
def current_text(c):
    mc = c.at('mc')
    new = any(is_meta(x, 'mg', 'ms', 'md', 'ma') and
              any(f[:1] == b'E' for f in meta_flags(x)) or
              is_meta(x, 'md') and b'x' in [f[:1] for f in meta_flags(x)]
              for _, x in c.cmds)
    if new and mc in (b'CLIENT_ERROR invalid flag\r\n',
                      b'CLIENT_ERROR invalid or duplicate flag\r\n'):
        return True
    sets = [x for _, x in c.cmds if is_meta(x, 'ms')]
    if any(b's' in meta_flags(x) for x in sets):
        # ms s: the size after the code, whatever the code
        (tm, dm), (tr, dr) = c.norm('mc'), c.norm('rh')
        tr = tr[:1] + [t for t in tr[1:] if not (t[:1] == b's' and
                                                 t[1:].isdigit())]
        if compare.same((tm, dm), (tr, dr)):
            return True
    if any(b'N' in [f[:1] for f in meta_flags(x)] and
           any(f in (b'MA', b'MP') for f in meta_flags(x)) for x in sets):
        # ms N in append mode: stored (HD, or nothing under q) where
        # 1.6.18 says NS
        return mc.startswith(b'NS')
    return False


@doc('ma with T whose number grows', 'META.md, "Where rhkvd differs from '
     'memcached 1.6.18", ma with T')
def ma_grows_with_ttl(c):
    if not any(is_meta(x, 'ma') and any(f[:1] == b'T' for f in
                                        meta_flags(x)) for _, x in c.cmds):
        return False
    (tm, dm), (tr, dr) = c.norm('mc'), c.norm('rh')
    if dm == dr and [t for t in tm if t[:1] != b't'] == \
            [t for t in tr if t[:1] != b't']:
        return True
    # the new value's TTL (memcached: the old one) decides whether it is
    # still there: a hit in memcached is a miss in rhkvd, or the reverse
    # (a quiet miss shows as the marker's MN where the other has a hit)
    return presence_differs(c.at('mc'), c.at('rh')) or \
        quiet_miss(c, c.at('mc'), c.at('rh'))


HIT = {b'VALUE', b'VA', b'HD', b'TOUCHED', b'DELETED', b'ME', b'EX',
       b'STORED'}
MISS = {b'END', b'EN', b'NF', b'NOT_FOUND', b'NOT_STORED', b'NS'}


def quiet_miss(c, a, b):
    """One side has a hit where the other went straight to the marker,
    and a quiet (q) mg was sent: that mg's miss, which q leaves out."""
    if not c.any(rb'(?:^|\n)mg [^\r\n]* q[ \r]'):
        return False
    mn = b'MN\r\n'
    return (a == mn) != (b == mn) and presence_differs(
        a if a != mn else b'EN\r\n', b if b != mn else b'EN\r\n')


def presence_differs(a, b):
    """Whether two replies tell apart an item there and one not there:
    a hit and a miss (STORED and NOT_STORED of the same add or replace
    count so too), or a meta hit and an N stub made on a miss (W)."""
    ta = a.split(b'\r\n', 1)[0].split(b' ')
    tb = b.split(b'\r\n', 1)[0].split(b' ')
    hit = lambda t: t[0] in HIT or t[0].isdigit()  # noqa: E731
    miss = lambda t: t[0] in MISS  # noqa: E731
    if (hit(ta) and miss(tb)) or (miss(ta) and hit(tb)):
        return True
    return ta[0] in (b'VA', b'HD') and tb[0] in (b'VA', b'HD') and \
        (b'W' in ta) != (b'W' in tb)


@doc('a meta opaque over 32 bytes before T or N', 'META.md, "Where rhkvd '
     'differs from memcached 1.6.18", an opaque token over 32 bytes')
def long_opaque_then_ttl(c):
    for _, x in c.cmds:
        if not is_meta(x, 'mg', 'ma'):
            continue
        f = meta_flags(x)
        at = [k for k, t in enumerate(f) if t[:1] == b'O' and len(t) > 32]
        if at and any(t[:1] in (b'T', b'N') for t in f[at[0]:]):
            return True
    return False


@doc('ma with C of a value memcached keeps in chunks', 'META.md, "Where '
     'rhkvd differs from memcached 1.6.18", ma with C of a value over '
     "memcached's slab chunk size")
def chunked_not_numeric(c):
    return c.at('mc') == b'CLIENT_ERROR cannot increment or decrement ' \
        b'non-numeric value\r\n' and c.at('rh')[:3] in (b'EX ', b'EX\r') and \
        any(data_length(x) > 500000 for _, x in c.cmds)


@doc('incr/decr/ma of a number of 2^63 or more', 'TEXT.md, "Where rhkvd '
     'differs from memcached 1.6.18", incr, decr and ma of a number of '
     '2^63 or more')
def minus_past_the_value(c):
    return c.at('mc') == b'CLIENT_ERROR cannot increment or decrement ' \
        b'non-numeric value\r\n' and \
        (c.at('rh')[:1].isdigit() or c.at('rh')[:3] in (b'HD ', b'HD\r',
                                                        b'VA ')) and \
        any(int(n) >= 1 << 63 for _, x in c.cmds
            for n in re.findall(rb'[0-9]+', x))
