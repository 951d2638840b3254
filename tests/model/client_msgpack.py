"""rhkv's msgpack protocol (proto/PROTOCOL.md), with Debian's
python3-msgpack.

`run(op)` returns the model's reply tuple (see client_text.py). Ops that
use a meta feature (E, I, N, R, a cas on delete/arith, a TTL on arith)
go through the
META_* ops with their option maps; the rest through the plain ones.
"""

import struct

import msgpack

from conn import Conn

OP = {'get': 1, 'gets': 2, 'mget': 3, 'set': 4, 'add': 5, 'replace': 6,
      'append': 7, 'prepend': 8, 'cas': 9, 'delete': 10, 'incr': 11,
      'decr': 12, 'touch': 13, 'gat': 14, 'flush_all': 15, 'scan': 16,
      'stats': 17, 'mget_meta': 22, 'mset': 23, 'mdel': 24, 'marith': 25,
      'flush_prefix': 26}
NAMES = {v: k for k, v in OP.items()}
OK, NOT_FOUND, NOT_STORED, EXISTS, TOO_LARGE = 0, 1, 2, 3, 4
NON_NUMERIC, OOM = 6, 7


class MsgpackClient:
    def __init__(self, port, transcript=None, who=''):
        self.c = Conn(port, (who + ' msgpack').strip(), transcript)
        self.id = 0

    def close(self):
        self.c.close()

    def call(self, op, *args):
        self.id += 1
        body = msgpack.packb([op, self.id] + list(args), use_bin_type=True)
        shown = [a if not isinstance(a, bytes) or len(a) <= 64 else
                 '<%d bytes>' % len(a) for a in args]
        self.c.send(struct.pack('>I', len(body)) + body,
                    ('msgpack %s %r' % (NAMES[op], shown)).encode())
        n = struct.unpack('>I', self.c.exact(4))[0]
        rid, status, payload = msgpack.unpackb(self.c.exact(n), raw=True,
                                               strict_map_key=False)
        if rid != self.id:
            raise ValueError('msgpack reply id %d, sent %d' % (rid, self.id))
        return status, payload

    def error(self, st, payload):
        if st == OOM:
            return ('OOM', b'msgpack OUT_OF_MEMORY')
        if st == TOO_LARGE:
            return ('TOO_LARGE',)
        return ('ERROR', b'msgpack status %d %r' % (st, payload))

    def run(self, op):
        return getattr(self, op.kind)(op)

    @staticmethod
    def is_meta(op):
        return (op.newcas is not None or op.invalidate or
                op.vivify is not None or op.recache is not None or
                (op.kind == 'arith' and op.ttl) or
                (op.cas is not None and (op.kind in ('delete', 'arith') or
                                         op.mode != 'set')))

    def store(self, op):
        if self.is_meta(op):
            o = {b'mode': {'set': b'S', 'add': b'E', 'replace': b'R',
                           'append': b'A', 'prepend': b'P'}[op.mode]}
            if op.mode in ('set', 'add', 'replace'):
                o[b'flags'], o[b'ttl'] = op.flags, op.ttl
            for k, v in ((b'cas', op.cas), (b'newcas', op.newcas),
                         (b'vivify', op.vivify)):
                if v is not None:
                    o[k] = v
            if op.invalidate:
                o[b'invalidate'] = True
            st, p = self.call(OP['mset'], op.key, op.value, o)
            cas = p.get(b'cas') if isinstance(p, dict) else None
        elif op.cas is not None:
            st, cas = self.call(OP['cas'], op.key, op.value, op.flags,
                                op.ttl, op.cas)
        elif op.mode in ('append', 'prepend'):
            st, cas = self.call(OP[op.mode], op.key, op.value)
        else:
            st, cas = self.call(OP[op.mode], op.key, op.value, op.flags,
                                op.ttl)
        if st == OK:
            return ('STORED', cas)
        return {NOT_FOUND: ('NOT_FOUND',), NOT_STORED: ('NOT_STORED',),
                EXISTS: ('EXISTS',)}.get(st) or self.error(st, cas)

    def get(self, op):
        if self.is_meta(op):
            o = {b'v': True}
            for k, v in ((b'ttl', op.touch), (b'vivify', op.vivify),
                         (b'recache', op.recache), (b'newcas', op.newcas)):
                if v is not None:
                    o[k] = v
            st, p = self.call(OP['mget_meta'], op.key, o)
            if st == NOT_FOUND:
                return ('MISS',)
            if st != OK:
                return self.error(st, p)
            if op.vivify is not None and p.get(b'won') and \
                    not p.get(b'stale') and op.recache is None and \
                    p.get(b'value') == b'' and not p.get(b'wonby'):
                return ('VIVIFIED', p.get(b'cas'))
            return ('HIT', p.get(b'value'), p.get(b'flags'), p.get(b'cas'),
                    bool(p.get(b'stale')))
        if op.touch is not None:
            st, p = self.call(OP['gat'], op.key, op.touch)
        else:
            st, p = self.call(OP['gets' if op.want_cas else 'get'], op.key)
        if st == NOT_FOUND:
            return ('MISS',)
        if st != OK:
            return self.error(st, p)
        return ('HIT', p[1], p[0], p[2], None)

    def mget(self, op):
        st, p = self.call(OP['mget'], list(op.keys))
        if st != OK:
            return self.error(st, p)
        return ('MGET', [('MISS',) if e is None else
                         ('HIT', e[1], e[0], e[2], None) for e in p])

    def touch(self, op):
        st, p = self.call(OP['touch'], op.key, op.ttl)
        if st == OK:
            return ('TOUCHED',)
        return ('NOT_FOUND',) if st == NOT_FOUND else self.error(st, p)

    def delete(self, op):
        if self.is_meta(op):
            o = {}
            for k, v in ((b'cas', op.cas), (b'newcas', op.newcas)):
                if v is not None:
                    o[k] = v
            if op.invalidate:
                o[b'invalidate'] = True
                if op.ttl:
                    o[b'ttl'] = op.ttl
            st, p = self.call(OP['mdel'], op.key, o)
        else:
            st, p = self.call(OP['delete'], op.key)
        return {OK: ('DELETED',), NOT_FOUND: ('NOT_FOUND',),
                EXISTS: ('EXISTS',)}.get(st) or self.error(st, p)

    def arith(self, op):
        if self.is_meta(op):
            o = {b'v': True, b'delta': op.delta,
                 b'mode': b'I' if op.mode == 'incr' else b'D'}
            for k, v in ((b'cas', op.cas), (b'newcas', op.newcas),
                         (b'vivify', op.vivify)):
                if v is not None:
                    o[k] = v
            if op.vivify is not None:
                o[b'initial'] = op.initial
            if op.ttl:
                o[b'ttl'] = op.ttl
            st, p = self.call(OP['marith'], op.key, o)
            if st == OK:
                return ('NUM', p.get(b'value'), p.get(b'cas'))
        else:
            st, p = self.call(OP[op.mode], op.key, op.delta)
            if st == OK:
                return ('NUM', p, None)
        return {NOT_FOUND: ('NOT_FOUND',), EXISTS: ('EXISTS',),
                NON_NUMERIC: ('NON_NUMERIC',)}.get(st) or self.error(st, p)

    def scan(self, op):
        keys, cursor = set(), 0
        while True:
            st, p = self.call(OP['scan'], cursor, 100, op.prefix + b'*')
            if st != OK:
                return self.error(st, p)
            cursor = p[0]
            keys.update(p[1])
            if cursor == 0:
                return ('SCAN', keys)

    def flush_all(self, delay):
        st, p = self.call(OP['flush_all'], delay)
        return b'OK' if st == OK else b'status %d %r' % (st, p)

    def flush_prefix(self, prefix):
        st, p = self.call(OP['flush_prefix'], prefix)
        return b'OK' if st == OK else b'status %d %r' % (st, p)
