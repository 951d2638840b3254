"""Compares the two servers' replies to one sequence.

The replies are compared unit by unit (wire.split_units) after mapping
what is legitimately server-specific (README.md, "What is mapped"):

* cas values: each server's own counter, so each distinct value becomes
  $1, $2... in the order it first appears in that server's replies (the
  same cas twice still reads as the same);
* `VERSION <version>`: each server's own;
* the seconds of `t`, `l` (meta) and `exp=`, `la=` (`me`): within 2 of
  each other (the two clocks tick apart), `-1` exactly; a `t` that both
  spell as an unsigned 32-bit number (a TTL this very request put in the
  past) matches any other such;
* `me`'s `cls=` and `size=`: rhkvd has no slab classes and its own item
  layout (META.md, "Where rhkvd differs from memcached 1.6.18").

The first unit that still differs is a difference. documented.py says
whether the protocol pages document it; if so the rest of the sequence
is not compared (the servers' states may differ from there on).
"""

import documented

META_CODES = {b'HD', b'VA', b'EN', b'NF', b'NS', b'EX', b'MN'}
PAST = 1 << 31  # a t at or above this is a negative TTL spelled unsigned


def head_data(u):
    i = u.find(b'\n')
    if i < 0:
        return u, b''
    return u[:i + 1], u[i + 1:]


class Norm:
    """Renames one server's cas values in order of appearance."""

    def __init__(self):
        self.names = {}

    def cas(self, v):
        if v not in self.names:
            self.names[v] = b'$%d' % (len(self.names) + 1)
        return self.names[v]

    def unit(self, u):
        """(tokens of the line, the rest) with cas values renamed."""
        head, data = head_data(u)
        eol = b'\r\n' if head.endswith(b'\r\n') else b'\n' if \
            head.endswith(b'\n') else b''
        tok = head[:len(head) - len(eol)].split(b' ')
        if tok[0] == b'VALUE' and len(tok) == 5 and tok[4].isdigit():
            tok[4] = self.cas(tok[4])
        elif tok[0] in META_CODES:
            for i in range(1, len(tok)):
                if tok[i][:1] == b'c' and tok[i][1:].isdigit():
                    tok[i] = b'c' + self.cas(tok[i][1:])
        elif tok[0] == b'ME':
            for i in range(2, len(tok)):
                k, _, v = tok[i].partition(b'=')
                if k == b'cas':
                    tok[i] = b'cas=' + self.cas(v)
                elif k in (b'cls', b'size'):
                    tok[i] = k + b'=*'
        elif tok[0] == b'VERSION' and len(tok) == 2:
            tok[1] = b'*'
        return tok + [eol], data


def num(b):
    try:
        return int(b)
    except ValueError:
        return None


def close(a, b):
    """Seconds from two clocks: -1 exactly, else within 2."""
    x, y = num(a), num(b)
    if x is None or y is None:
        return False
    if x >= PAST and y >= PAST:
        return True
    return x != -1 and y != -1 and abs(x - y) <= 2


def token_same(code, a, b):
    if a == b:
        return True
    if code in META_CODES and a[:1] == b[:1] and a[:1] in (b't', b'l'):
        return close(a[1:], b[1:])
    if code == b'ME':
        ka, _, va = a.partition(b'=')
        kb, _, vb = b.partition(b'=')
        return ka == kb and ka in (b'exp', b'la') and close(va, vb)
    return False


def same(a, b):
    (ta, da), (tb, db) = a, b
    return da == db and len(ta) == len(tb) and all(
        token_same(ta[0], x, y) for x, y in zip(ta, tb))


class Result:
    """What one sequence gave: ok, documented (which), or a difference at
    unit `at`."""

    def __init__(self, kind, at=None, doc=None):
        self.kind, self.at, self.doc = kind, at, doc

    def __repr__(self):
        return '%s at %s (%s)' % (self.kind, self.at, self.doc)


def check(writes, mc_units, rh_units):
    nm, nr = Norm(), Norm()
    a = [nm.unit(u) for u in mc_units]
    b = [nr.unit(u) for u in rh_units]
    for i in range(max(len(a), len(b))):
        if i < len(a) and i < len(b) and same(a[i], b[i]):
            continue
        d = documented.explain(writes, mc_units, rh_units, i, a, b)
        if d is not None:
            return Result('documented', i, d)
        return Result('diff', i)
    return Result('ok')
