"""memcached's binary protocol (proto/MCBIN.md).

`run(op)` returns the model's reply tuple (see client_text.py). Quiet
variants are followed by a NOOP: nothing before the NOOP's response means
the quiet command succeeded. Every response's cas is reported, so the
model learns (and checks the uniqueness of) more cas values.
"""

import struct

from conn import Conn

HDR = struct.Struct('>BBHBBHIIQ')
OPS = {'get': 0x00, 'set': 0x01, 'add': 0x02, 'replace': 0x03,
       'delete': 0x04, 'incr': 0x05, 'decr': 0x06, 'flush': 0x08,
       'getq': 0x09, 'noop': 0x0a, 'getkq': 0x0d, 'append': 0x0e,
       'prepend': 0x0f, 'touch': 0x1c, 'gat': 0x1d}
QUIET = {'set': 0x11, 'add': 0x12, 'replace': 0x13, 'delete': 0x14,
         'incr': 0x15, 'decr': 0x16, 'append': 0x19, 'prepend': 0x1a}
NAMES = {v: k for k, v in OPS.items()}
NAMES.update({v: k + 'q' for k, v in QUIET.items()})


class McbinClient:
    def __init__(self, port, transcript=None, who=''):
        self.c = Conn(port, (who + ' binary').strip(), transcript)
        self.opaque = 0

    def close(self):
        self.c.close()

    def send(self, opcode, key=b'', extras=b'', value=b'', cas=0):
        self.opaque += 1
        body = extras + key + value
        frame = HDR.pack(0x80, opcode, len(key), len(extras), 0, 0,
                         len(body), self.opaque, cas) + body
        show = b'binary %s key=%r extras=%s value=%s cas=%d (hex %s)' % (
            NAMES.get(opcode, 'op%d' % opcode).encode(), key, extras.hex(
            ).encode(), b'%d bytes' % len(value) if len(value) > 64 else
            repr(value).encode(), cas, frame[:24 + len(extras) + len(key)]
            .hex().encode())
        self.c.send(frame, show)

    def recv(self):
        """(opcode, status, extras, key, value, cas)"""
        h = HDR.unpack(self.c.exact(24))
        _, opcode, klen, elen, _, status, blen, _, cas = h
        body = self.c.exact(blen)
        return (opcode, status, body[:elen], body[elen:elen + klen],
                body[elen + klen:], cas)

    def quiet_done(self):
        """After a quiet request and a NOOP: None when the NOOP's
        response came first, else the quiet one's response."""
        r = self.recv()
        if r[0] == OPS['noop']:
            return None
        self.recv()
        return r

    def error(self, r):
        st = r[1]
        if st == 0x82:
            return ('OOM', b'binary status 0x82')
        if st == 0x03:
            return ('TOO_LARGE',)
        return ('ERROR', b'binary status 0x%02x %r' % (st, r[4]))

    def run(self, op):
        return getattr(self, op.kind)(op)

    def store(self, op):
        m = op.mode
        extras = struct.pack('>II', op.flags, op.ttl & 0xffffffff) \
            if m in ('set', 'add', 'replace') else b''
        code = QUIET[m] if op.quiet else OPS[m]
        self.send(code, op.key, extras, op.value, op.cas or 0)
        if op.quiet:
            self.send(OPS['noop'])
            r = self.quiet_done()
            if r is None:
                return ('STORED', None)
        else:
            r = self.recv()
        st = r[1]
        if st == 0:
            return ('STORED', r[5])
        if st == 0x01:
            return ('NOT_FOUND',) if op.cas else ('NOT_STORED',)
        if st == 0x02:
            return ('EXISTS',) if op.cas else ('NOT_STORED',)
        if st == 0x05:
            return ('NOT_STORED',)
        return self.error(r)

    def get(self, op):
        if op.touch is not None:
            self.send(OPS['gat'], op.key, struct.pack('>I',
                                                      op.touch & 0xffffffff))
        else:
            self.send(OPS['get'], op.key)
        r = self.recv()
        if r[1] == 0x01:
            return ('MISS',)
        if r[1] != 0:
            return self.error(r)
        return ('HIT', r[4], struct.unpack('>I', r[2])[0], r[5], None)

    def mget(self, op):
        for k in op.keys:
            self.send(OPS['getkq'], k)
        self.send(OPS['noop'])
        got = {}
        while True:
            r = self.recv()
            if r[0] == OPS['noop']:
                break
            if r[1] != 0:
                return self.error(r)
            got[r[3]] = ('HIT', r[4], struct.unpack('>I', r[2])[0], r[5],
                         None)
        return ('MGET', [got.get(k, ('MISS',)) for k in op.keys])

    def touch(self, op):
        self.send(OPS['touch'], op.key, struct.pack('>I',
                                                    op.ttl & 0xffffffff))
        r = self.recv()
        if r[1] == 0:
            return ('TOUCHED',)
        return ('NOT_FOUND',) if r[1] == 0x01 else self.error(r)

    def delete(self, op):
        self.send(QUIET['delete'] if op.quiet else OPS['delete'], op.key,
                  cas=op.cas or 0)
        if op.quiet:
            self.send(OPS['noop'])
            r = self.quiet_done()
            if r is None:
                return ('DELETED',)
        else:
            r = self.recv()
        return {0: ('DELETED',), 0x01: ('NOT_FOUND',),
                0x02: ('EXISTS',)}.get(r[1]) or self.error(r)

    def arith(self, op):
        exp = 0xffffffff if op.vivify is None else op.vivify & 0xffffffff
        self.send(OPS[op.mode], op.key,
                  struct.pack('>QQI', op.delta, op.initial, exp),
                  cas=op.cas or 0)
        r = self.recv()
        if r[1] == 0:
            return ('NUM', struct.unpack('>Q', r[4])[0], r[5])
        return {0x01: ('NOT_FOUND',), 0x02: ('EXISTS',),
                0x06: ('NON_NUMERIC',)}.get(r[1]) or self.error(r)

    def flush(self, delay):
        self.send(OPS['flush'], extras=struct.pack('>I', delay)
                  if delay else b'')
        r = self.recv()
        return b'OK' if r[1] == 0 else b'status %d' % r[1]
