"""Random operations: a client's history, from its own seed.

Each client owns its keys (c<id>:g<group>:k<n>), so its history is
sequential. The generator does not look at the server's replies: a cas
an operation sends is symbolic (`cas_ref`: the current item's, a lower one
for meta I, or a wrong one) and resolved by the model when the operation
runs, so a list of operations replays on a fresh server.

`caps` says what the server speaks: 'rhkv' (everything) or 'memcached'
(1.6.18: no msgpack, no scan or prefix flushes, no meta E, ms N or md x).
"""

U64 = (1 << 64) - 1
KEYS_PER_GROUP = 12  # groups 0-2: few keys, many operations on each
GROUPS = 3
BULK_KEYS = 300      # group 3: many keys of 3-8 KiB, so that the live
                     # data (8 clients: 13 MiB) can outgrow -m 8


class Gen:
    def __init__(self, rng, cid, caps, new_e):
        self.r, self.cid, self.caps, self.new_e = rng, cid, caps, new_e
        self.n = 0
        self.protos = ['text', 'meta', 'mcbin'] + \
            (['msgpack'] if caps == 'rhkv' else [])

    def key(self):
        if self.r.random() < 0.25:
            return b'c%d:g%d:k%d' % (self.cid, GROUPS,
                                     self.r.randrange(BULK_KEYS))
        return b'c%d:g%d:k%d' % (self.cid, self.r.randrange(GROUPS),
                                 self.r.randrange(KEYS_PER_GROUP))

    def value(self, key=b''):
        r = self.r
        self.n += 1
        if b':g%d:' % GROUPS in key and r.random() < 0.9:
            tag = b'%d.%d;' % (self.cid, self.n)
            return tag + b'b' * r.randrange(3000, 8000)
        if r.random() < 0.15:  # a number, for incr/decr
            return b'%d' % r.choice([0, 1, 9, 99, r.randrange(1 << 20),
                                     U64 - r.randrange(3), 1 << 63])
        tag = b'%d.%d;' % (self.cid, self.n)
        x = r.random()
        if x < 0.55:
            n = r.randrange(0, 48)
        elif x < 0.85:
            n = r.randrange(700, 1400)  # ~1 KiB: fills a small cache
        elif x < 0.96:
            n = r.randrange(2000, 16000)
        else:
            n = r.randrange(16400, 120000)  # a large item (landed)
        fill = bytes([r.randrange(256)]) if r.random() < 0.2 else b'abc\r\n'
        return (tag + fill * (n // len(fill) + 1))[:max(n, len(tag))]

    def ttl(self, allow_neg=True):
        x = self.r.random()
        if x < 0.75:
            return 0
        if x < 0.90:
            return self.r.randrange(1, 4)
        if x < 0.96:
            return self.r.randrange(1000, 100000)
        if x < 0.98 or not allow_neg:
            import time
            return int(time.time()) + self.r.randrange(2, 5)  # unix time
        return -1

    def flags(self):
        return self.r.choice([0, 0, 1, 7, 0xffffffff, self.r.randrange(1 <<
                                                                      32)])

    def e(self):
        """A client-chosen cas for meta E (or None)."""
        if self.caps != 'rhkv' or self.r.random() > 0.12:
            return None
        return self.new_e(self.r)

    def next(self):
        """The next operation (model.Op)."""
        from model import Op
        r = self.r
        proto = r.choice(self.protos)
        meta = proto in ('meta', 'msgpack')
        x = r.random()
        if x < 0.40:
            mode = r.choice(['set', 'set', 'set', 'add', 'replace',
                             'append', 'prepend'])
            key = self.key()
            op = Op('store', proto, key, mode=mode,
                    value=self.value(key), flags=self.flags(),
                    ttl=self.ttl(proto != 'mcbin'))
            if mode in ('set', 'replace') and r.random() < 0.25 and \
                    (proto != 'text' or mode == 'set'):
                op.cas_ref = r.choice(['last', 'last', 'wrong'])
                if meta and r.random() < 0.3:
                    op.invalidate = True
                    op.cas_ref = r.choice(['lower', 'last', 'wrong'])
            if mode in ('append', 'prepend') and meta:
                if r.random() < 0.2:
                    op.cas_ref = r.choice(['last', 'wrong'])
                elif r.random() < 0.3 and (self.caps == 'rhkv' or
                                           proto == 'msgpack'):
                    op.vivify = self.ttl(allow_neg=False)
            if meta:
                op.newcas = self.e()
            if proto == 'text' and r.random() < 0.1:
                op.noreply = True
            if proto in ('meta', 'mcbin') and r.random() < 0.2:
                op.quiet = True
            return op
        if x < 0.68:
            op = Op('get', proto, self.key(), want_cas=r.random() < 0.5)
            if r.random() < 0.15:
                op.touch = self.ttl(proto != 'mcbin')
            if meta and r.random() < 0.15:
                op.vivify = self.ttl(allow_neg=False)
                op.newcas = self.e()
            elif proto == 'meta' and r.random() < 0.1:
                op.recache = r.randrange(1, 30)
            if proto == 'meta' and r.random() < 0.2:
                op.quiet = True
            return op
        if x < 0.74:
            keys = []
            for _ in range(r.randrange(2, 6)):
                k = self.key()
                if k not in keys:
                    keys.append(k)
            p = proto if proto != 'meta' else 'text'
            return Op('mget', p, keys=keys, want_cas=r.random() < 0.5)
        if x < 0.79:
            return Op('touch', proto, self.key(),
                      ttl=self.ttl(proto != 'mcbin'))
        if x < 0.88:
            op = Op('delete', proto, self.key())
            if proto in ('meta', 'msgpack', 'mcbin') and r.random() < 0.2:
                op.cas_ref = r.choice(['last', 'wrong'])
            if meta and r.random() < 0.25:
                op.invalidate = True
                if r.random() < 0.5:
                    op.ttl = r.randrange(1, 100)
                op.newcas = self.e()
            elif proto == 'meta' and self.caps == 'rhkv' and \
                    r.random() < 0.15:
                op.x, op.flags = True, self.flags()
                if r.random() < 0.3:
                    op.ttl = r.randrange(1, 100)
            if proto in ('meta', 'mcbin') and r.random() < 0.2:
                op.quiet = True
            if proto == 'text' and r.random() < 0.1:
                op.noreply = True
            return op
        if x < 0.995:
            op = Op('arith', proto, self.key(),
                    mode=r.choice(['incr', 'decr']),
                    delta=r.choice([1, 1, 5, 1000, U64, r.randrange(1 << 40)]))
            if proto != 'text' and r.random() < 0.3:
                op.vivify = r.choice([0, 0, 1000, r.randrange(1, 3)])
                op.initial = r.choice([0, 7, U64])
            if meta:
                if r.random() < 0.15:
                    op.cas_ref = r.choice(['last', 'wrong'])
                if r.random() < 0.15:
                    op.ttl = r.randrange(1, 1000)
                op.newcas = self.e()
                if proto == 'meta' and r.random() < 0.15:
                    op.quiet = True
            return op
        if self.caps != 'rhkv':
            return Op('get', proto, self.key())
        return Op('scan', r.choice(['text', 'msgpack']),
                  prefix=b'c%d:' % self.cid)
