"""The documented differences: matchers for the differences between
memcached 1.6.18 and rhkvd that proto/TEXT.md and proto/META.md describe.

Each matcher names the section that documents it and looks at the first
unit where the replies differ (after compare.py's mapping) and at the
sequence sent. A difference no matcher explains fails the run. Keep the
matchers narrow: each should accept only the replies its section
describes, after a request its section names.
"""

import re

import gen
import wire

PFX = b'P' * gen.PREFIX_LEN


class Ctx:
    """One difference: the sequence, both servers' units, where."""

    def __init__(self, writes, mc, rh, i):
        self.writes = writes
        self.cmds = [(w, wire.render(c, PFX, {})) for w, cmds in
                     enumerate(writes) for c in cmds]
        self.mc, self.rh, self.i = mc, rh, i

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


def explain(writes, mc, rh, i):
    ctx = Ctx(writes, mc, rh, i)
    for d in DOCS:
        if d.test(ctx):
            return d
    return None


@doc('a line over 2048 bytes', 'TEXT.md, "Line lengths"')
def long_line(c):
    return c.at('rh') == b'CLIENT_ERROR line too long\r\n' and \
        c.rest('rh')[1:] == [wire.CLOSED] and \
        any(len(x) > 2048 for x in b''.join(
            cmd for _, cmd in c.cmds).split(b'\n'))
