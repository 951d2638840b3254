"""memcached's text protocol: the classic commands and the meta ones.

`run(op)` sends one model operation (model.Op) and returns the reply as
the model's tuple: ('STORED', cas), ('NOT_STORED',), ('EXISTS',),
('NOT_FOUND',), ('HIT', value, flags, cas, stale), ('MISS',),
('VIVIFIED', cas), ('TOUCHED',), ('DELETED',), ('NUM', n, cas),
('NON_NUMERIC',), ('OOM', line), ('HIDDEN',) for noreply, ('MGET', [..]),
('SCAN', {keys}), or ('ERROR', line) for anything unexpected. op.proto
'text' uses the classic commands, 'meta' the meta ones (ms mg md ma mf).
"""

from conn import Conn

OOM = (b'SERVER_ERROR out of memory', )


class TextClient:
    def __init__(self, port, transcript=None, who=''):
        self.c = Conn(port, (who + ' text').strip(), transcript)

    def close(self):
        self.c.close()

    def run(self, op):
        if op.proto == 'meta':
            return getattr(self, 'meta_' + op.kind)(op)
        return getattr(self, 'text_' + op.kind)(op)

    # ---- classic ----

    def common_error(self, ln):
        if ln.startswith(OOM):
            return ('OOM', ln)
        if ln.startswith(b'SERVER_ERROR object too large'):
            return ('TOO_LARGE',)
        return ('ERROR', ln)

    def text_store(self, op):
        name = b'cas' if op.cas is not None else op.mode.encode()
        cmd = b'%s %s %d %d %d' % (name, op.key, op.flags, op.ttl,
                                   len(op.value))
        if op.cas is not None:
            cmd += b' %d' % op.cas
        if op.noreply:
            cmd += b' noreply'
        self.c.send(cmd + b'\r\n' + op.value + b'\r\n', show_store(cmd, op))
        if op.noreply:
            return self.sync_hidden()
        ln = self.c.line()
        return {b'STORED': ('STORED', None), b'NOT_STORED': ('NOT_STORED',),
                b'EXISTS': ('EXISTS',), b'NOT_FOUND': ('NOT_FOUND',)}.get(
                    ln) or self.common_error(ln)

    def sync_hidden(self):
        """After a noreply command: mn, and whatever came before MN."""
        self.c.send(b'mn\r\n')
        ln = self.c.line()
        if ln == b'MN':
            return ('HIDDEN',)
        self.c.line()
        return self.common_error(ln)

    def read_values(self):
        """VALUE lines up to END: {key: (value, flags, cas)}."""
        out = {}
        while True:
            ln = self.c.line()
            if ln == b'END':
                return out, None
            p = ln.split(b' ')
            if p[0] != b'VALUE':
                return out, ln
            data = self.c.exact(int(p[3]) + 2)[:-2]
            out[p[1]] = (data, int(p[2]), int(p[4]) if len(p) > 4 else None)

    def text_get(self, op):
        if op.touch is not None:
            cmd = b'%s %d %s' % (b'gats' if op.want_cas else b'gat',
                                 op.touch, op.key)
        else:
            cmd = b'%s %s' % (b'gets' if op.want_cas else b'get', op.key)
        self.c.send(cmd + b'\r\n')
        vals, err = self.read_values()
        if err is not None:
            return self.common_error(err)
        if op.key not in vals:
            return ('MISS',)
        v, f, cas = vals[op.key]
        return ('HIT', v, f, cas, None)

    def text_mget(self, op):
        cmd = b'gets' if op.want_cas else b'get'
        self.c.send(cmd + b' ' + b' '.join(op.keys) + b'\r\n')
        vals, err = self.read_values()
        if err is not None:
            return self.common_error(err)
        return ('MGET', [('HIT', vals[k][0], vals[k][1], vals[k][2], None)
                         if k in vals else ('MISS',) for k in op.keys])

    def text_touch(self, op):
        self.c.send(b'touch %s %d\r\n' % (op.key, op.ttl))
        ln = self.c.line()
        return {b'TOUCHED': ('TOUCHED',),
                b'NOT_FOUND': ('NOT_FOUND',)}.get(ln) or \
            self.common_error(ln)

    def text_delete(self, op):
        self.c.send(b'delete %s%s\r\n' % (op.key,
                                          b' noreply' if op.noreply else b''))
        if op.noreply:
            return self.sync_hidden()
        ln = self.c.line()
        return {b'DELETED': ('DELETED',),
                b'NOT_FOUND': ('NOT_FOUND',)}.get(ln) or \
            self.common_error(ln)

    def text_arith(self, op):
        self.c.send(b'%s %s %d\r\n' % (op.mode.encode(), op.key, op.delta))
        ln = self.c.line()
        if ln.isdigit():
            return ('NUM', int(ln), None)
        if ln == b'NOT_FOUND':
            return ('NOT_FOUND',)
        if ln.startswith(b'CLIENT_ERROR cannot increment'):
            return ('NON_NUMERIC',)
        return self.common_error(ln)

    def text_scan(self, op):
        keys, cursor = set(), 0
        while True:
            self.c.send(b'scan %d count 100 match %s*\r\n' % (cursor,
                                                              op.prefix))
            while True:
                ln = self.c.line()
                if ln.startswith(b'KEY '):
                    keys.add(ln[4:])
                elif ln.startswith(b'CURSOR '):
                    cursor = int(ln[7:])
                    break
                else:
                    return self.common_error(ln)
            if cursor == 0:
                return ('SCAN', keys)

    # ---- meta ----

    def meta_reply(self, op, end):
        """Reads one meta reply; with q, the MN that ends it."""
        ln = self.c.line()
        if op.quiet and ln == b'MN':
            return None, {}
        p = ln.split(b' ')
        flags = {}
        for t in p[1:]:
            if t[:1] in (b'c', b'f', b't', b's') and t[1:].lstrip(
                    b'-').isdigit():
                flags[t[:1]] = int(t[1:])
            else:
                flags[t] = True
        if p[0] == b'VA':
            flags[b'data'] = self.c.exact(int(p[1]) + 2)[:-2]
        if op.quiet:
            self.c.line()  # the MN after a reply q did not hide
        return ln, flags

    def meta_store(self, op):
        modes = {'set': b'', 'add': b' ME', 'replace': b' MR',
                 'append': b' MA', 'prepend': b' MP'}
        cmd = b'ms %s %d c%s' % (op.key, len(op.value), modes[op.mode])
        if op.mode in ('set', 'add', 'replace'):
            cmd += b' F%d T%d' % (op.flags, op.ttl)
        if op.cas is not None:
            cmd += b' C%d' % op.cas
        if op.invalidate:
            cmd += b' I'
        if op.newcas is not None:
            cmd += b' E%d' % op.newcas
        if op.vivify is not None:
            cmd += b' N%d' % op.vivify
        if op.quiet:
            cmd += b' q'
        self.c.send(cmd + b'\r\n' + op.value + b'\r\n' +
                    (b'mn\r\n' if op.quiet else b''), show_store(cmd, op))
        ln, f = self.meta_reply(op, b'HD')
        if ln is None:
            return ('STORED', None)
        code = ln[:2]
        if code == b'HD':
            return ('STORED', f.get(b'c'))
        return {b'NS': ('NOT_STORED',), b'EX': ('EXISTS',),
                b'NF': ('NOT_FOUND',)}.get(code) or self.common_error(ln)

    def meta_get(self, op):
        cmd = b'mg %s v f%s' % (op.key, b' c' if op.want_cas else b'')
        if op.touch is not None:
            cmd += b' T%d' % op.touch
        if op.vivify is not None:
            cmd += b' N%d' % op.vivify
        if op.recache is not None:
            cmd += b' R%d' % op.recache
        if op.newcas is not None:
            cmd += b' E%d' % op.newcas
        if op.quiet:
            cmd += b' q'
        self.c.send(cmd + b'\r\n' + (b'mn\r\n' if op.quiet else b''))
        ln, f = self.meta_reply(op, b'EN')
        if ln is None or ln == b'EN':
            return ('MISS',)
        if not ln.startswith(b'VA'):
            return self.common_error(ln)
        if op.vivify is not None and f.get(b'W') and not f.get(b'X') \
                and op.recache is None and f[b'data'] == b'':
            # won on a miss: the item N created (an existing stale
            # item's first fetch carries X)
            if not f.get(b'Z'):
                return ('VIVIFIED', f.get(b'c'))
        return ('HIT', f[b'data'], f.get(b'f', 0), f.get(b'c'),
                bool(f.get(b'X')))

    def meta_delete(self, op):
        cmd = b'md %s' % op.key
        if op.cas is not None:
            cmd += b' C%d' % op.cas
        if op.invalidate:
            cmd += b' I'
        if op.x:
            cmd += b' x F%d' % op.flags
        if op.ttl:
            cmd += b' T%d' % op.ttl
        if op.newcas is not None:
            cmd += b' E%d' % op.newcas
        if op.quiet:
            cmd += b' q'
        self.c.send(cmd + b'\r\n' + (b'mn\r\n' if op.quiet else b''))
        ln, f = self.meta_reply(op, b'HD')
        if ln is None:
            return ('DELETED',)
        return {b'HD': ('DELETED',), b'NF': ('NOT_FOUND',),
                b'EX': ('EXISTS',)}.get(ln[:2]) or self.common_error(ln)

    def meta_arith(self, op):
        cmd = b'ma %s v c D%d' % (op.key, op.delta)
        if op.mode == 'decr':
            cmd += b' MD'
        if op.vivify is not None:
            cmd += b' N%d J%d' % (op.vivify, op.initial)
        if op.cas is not None:
            cmd += b' C%d' % op.cas
        if op.ttl:
            cmd += b' T%d' % op.ttl
        if op.newcas is not None:
            cmd += b' E%d' % op.newcas
        if op.quiet:
            cmd += b' q'
        self.c.send(cmd + b'\r\n' + (b'mn\r\n' if op.quiet else b''))
        ln, f = self.meta_reply(op, b'HD')
        if ln is None:
            return ('NUM', None, None)  # q hid the number
        if ln.startswith(b'VA') or ln.startswith(b'HD'):
            n = int(f[b'data']) if b'data' in f else None
            return ('NUM', n, f.get(b'c'))
        if ln.startswith(b'CLIENT_ERROR cannot increment'):
            return ('NON_NUMERIC',)
        return {b'NF': ('NOT_FOUND',), b'EX': ('EXISTS',)}.get(
            ln[:2]) or self.common_error(ln)

    def meta_touch(self, op):
        self.c.send(b'mg %s T%d\r\n' % (op.key, op.ttl))
        ln = self.c.line()
        return {b'HD': ('TOUCHED',), b'EN': ('NOT_FOUND',)}.get(
            ln.split(b' ')[0]) or self.common_error(ln)

    # ---- global operations (the driver's) ----

    def command(self, line):
        """One line, one reply line (flush_all, flush_prefix, mf,
        cache_memlimit)."""
        self.c.send(line + b'\r\n')
        return self.c.line()

    def stats(self):
        self.c.send(b'stats\r\n')
        out = {}
        while True:
            ln = self.c.line()
            if ln == b'END':
                return out
            p = ln.split(b' ')
            if p[0] != b'STAT':
                raise ValueError('stats: %r' % ln)
            out[p[1].decode()] = p[2].decode()


def show_store(cmd, op):
    """A storage command as it is printed: the line, then the data block
    (shortened when long)."""
    v = op.value
    if len(v) > 64:
        return cmd + b'\r\n<%d bytes: %r...>\r\n' % (len(v), v[:16])
    return cmd + b'\r\n' + v + b'\r\n'
