"""The reference model: what a memcached-compatible server may answer.

Each key is owned by one client, so its history is sequential; the model
keeps, per key, the set of states the server may be in (candidates: an
Item or None for absent). Global operations (flush_all, delayed flush_all,
flush_prefix, memory limit changes, restarts) run concurrently with the
clients; whether one covered an item is decided from the logical clock
(`Clock`: one counter that orders every send and every reply) or, for
what depends on time (TTLs, delayed flushes), from the local clock with
margins wide enough for a slow (sanitizer) server.

Checking an operation: each candidate is expanded into the worlds the
server may show at that moment (the item, or absent because it expired,
was flushed, or was evicted); `semantics()` gives each world's expected
reply and next state; the worlds whose reply matches the actual one
survive, and their next states are the new candidates. No world matching
is a failure (`Mismatch`). A world that needs an eviction is allowed and
recorded, and `Model.check_evictions` later fails it unless the server's
`evictions` counter moved in that window. Cas values that the server gives
out are registered globally and must never be given to two item versions.
"""

import threading
import time

U64 = (1 << 64) - 1
REL_MAX = 60 * 60 * 24 * 30  # a TTL above this is a unix time


class Mismatch(Exception):
    """A reply no state of the model allows (or another broken rule)."""

    def __init__(self, msg, keys=()):
        super().__init__(msg)
        self.keys = list(keys)


class Failure(Exception):
    """What the run reports: a mismatch, a dead server, ...; `keys`
    are those whose history shows it, `seq` when it was seen."""

    def __init__(self, msg, keys=(), seq=None):
        super().__init__(msg)
        self.keys, self.seq = [k for k in keys if k], seq


class Op:
    """One client operation, protocol-independent (see gen.py)."""

    def __init__(self, kind, proto, key=None, **kw):
        self.kind, self.proto, self.key = kind, proto, key
        self.mode = kw.pop('mode', None)
        self.value = kw.pop('value', b'')
        self.flags = kw.pop('flags', 0)
        self.ttl = kw.pop('ttl', 0)
        self.cas_ref = kw.pop('cas_ref', None)  # None, 'last', 'wrong'
        self.newcas = kw.pop('newcas', None)    # meta E
        self.invalidate = kw.pop('invalidate', False)  # meta I
        self.vivify = kw.pop('vivify', None)    # meta N: ttl of the created
        self.initial = kw.pop('initial', 0)     # ma J, binary initial
        self.delta = kw.pop('delta', 1)
        self.touch = kw.pop('touch', None)      # gat / mg T: new ttl
        self.recache = kw.pop('recache', None)  # mg R
        self.want_cas = kw.pop('want_cas', False)
        self.quiet = kw.pop('quiet', False)     # meta q, binary quiet
        self.noreply = kw.pop('noreply', False)  # text noreply
        self.x = kw.pop('x', False)             # md x
        self.keys = kw.pop('keys', None)        # mget
        self.prefix = kw.pop('prefix', None)    # scan
        self.cas = None                         # resolved at run time
        assert not kw, kw

    def __repr__(self):
        parts = [self.kind, self.proto]
        for n in ('key', 'mode', 'flags', 'ttl', 'cas_ref', 'newcas',
                  'invalidate', 'vivify', 'initial', 'delta', 'touch',
                  'recache', 'want_cas', 'quiet', 'noreply', 'x', 'keys',
                  'prefix'):
            v = getattr(self, n)
            if n == 'delta' and self.kind != 'arith':
                continue
            if v not in (None, False, 0, b'') or (n == 'key' and v):
                parts.append('%s=%r' % (n, v))
        if self.value:
            parts.append('value=%d bytes' % len(self.value))
        return 'Op(%s)' % ' '.join(str(p) for p in parts)


class Clock:
    """The logical clock: every event takes the next number."""

    def __init__(self):
        self.lock = threading.Lock()
        self.n = 0

    def tick(self):
        with self.lock:
            self.n += 1
            return self.n


class Interval:
    """When an operation ran: logical [s0, s1], local time [t0, t1]."""

    def __init__(self, s0, s1, t0, t1, epoch):
        self.s0, self.s1, self.t0, self.t1, self.epoch = s0, s1, t0, t1, epoch


class Item:
    """One version of a key as the server should hold it (immutable)."""

    __slots__ = ('value', 'flags', 'cas', 'vid', 'exp', 'stale', 'w',
                 'alive')

    def __init__(self, value, flags, cas, vid, exp, stale, w, alive=0):
        self.value, self.flags, self.cas, self.vid = value, flags, cas, vid
        self.exp = exp        # None: never; (lo, hi): expires in between
        self.stale = stale
        self.w = w            # Interval of the write that made this cas
        self.alive = alive    # a read starting at this seq saw it

    def but(self, **kw):
        d = {n: getattr(self, n) for n in Item.__slots__}
        d.update(kw)
        return Item(**d)

    def __repr__(self):
        v = self.value if len(self.value) <= 24 else \
            self.value[:20] + b'...(%d)' % len(self.value)
        return 'Item(%r f=%d cas=%s exp=%s%s w=%d..%d at %.1f server#%d)' % (
            v, self.flags, self.cas,
            None if self.exp is None else '%.1f..%.1f' % self.exp,
            ' stale' if self.stale else '', self.w.s0, self.w.s1,
            self.w.t1, self.w.epoch)


class Global:
    """A global operation: flush_all (delay), flush_prefix, restart."""

    def __init__(self, kind, iv, prefix=None, due=None):
        self.kind, self.iv, self.prefix, self.due = kind, iv, prefix, due
        self.cancelled = False  # a SIGKILL may have lost a pending delay


def key_matches(prefix, key):
    return prefix is None or key.startswith(prefix)


class Model:
    """Per-key candidates, the global log, cas registry, evictions."""

    def __init__(self, margin=2.0):
        self.clock = Clock()
        self.lock = threading.RLock()
        self.keys = {}          # key -> [Item or None]
        self.globals = []       # Global, in order of sending
        self.cas_owner = {}     # cas -> vid (server-given and chosen)
        self.margin = margin    # seconds of slack around time boundaries
        self.evict_claims = []  # (key, since_seq, until_seq, epoch)
        self.stats = []         # (seq, epoch, evictions)
        self.epoch = 0          # server instance (restarts)
        self.epoch_start = {0: 0}
        self.vid_n = 0
        self.memcached = False  # the server is memcached (its quirks)
        self.scan_missed = []   # keys the last scan left out

    # ---- time ----

    def exp_window(self, ttl, iv):
        """When an item stored with `ttl` during `iv` expires (local)."""
        if ttl == 0:
            return None
        if ttl < 0:
            return (0.0, 0.0)
        m = self.margin
        if ttl > REL_MAX:
            return (ttl - 1 - m, ttl + 1 + m)
        return (iv.t0 + ttl - 1 - m, iv.t1 + ttl + 1 + m)

    # ---- worlds ----

    def _covered(self, it, key, iv):
        """(must, can): a flush certainly / possibly hid `it` by `iv`."""
        must = can = False
        for g in self.globals:
            if g.iv.s0 > iv.s1:
                break
            if g.kind == 'flush_prefix' or g.kind == 'flush_all':
                if g.kind == 'flush_prefix' and \
                        not key.startswith(g.prefix):
                    continue
                if it.w.s0 > g.iv.s1 or it.alive > g.iv.s1:
                    continue  # written, or seen alive, after it
                can = True
                if it.w.s1 < g.iv.s0 and g.iv.s1 < iv.s0:
                    must = True
            elif g.kind == 'flush_delayed':
                # due in local time [lo, hi]; applied when the server
                # next looks (a tick), so allow the margin after it.
                lo, hi = g.due
                if iv.t1 < lo or it.w.t0 > hi + self.margin:
                    continue
                can = True
                if (it.w.t1 < lo and iv.t0 > hi + self.margin and
                        it.w.epoch <= g.iv.epoch and not g.cancelled):
                    must = True
        return must, can

    def worlds(self, key, cands, iv):
        """[(visible state, reason)]: what the server may show now."""
        out = []
        for it in cands:
            if it is None:
                out.append((None, None))
                continue
            must, can = self._covered(it, key, iv)
            why = 'flushed' if can else None
            if it.exp is not None:
                lo, hi = it.exp
                if hi < iv.t0:
                    must = True
                if lo < iv.t1:
                    can, why = True, why or 'expired'
            if not must:
                out.append((it, None))
            out.append((None, why or 'evicted'))
        return out

    # ---- cas ----

    def register_cas(self, cas, vid, what):
        if cas is None:
            return
        owner = self.cas_owner.get(cas)
        if owner is None:
            self.cas_owner[cas] = vid
        elif owner != vid:
            raise Mismatch('cas %d given to two item versions: %s and %s '
                           '(%s)' % (cas, owner, vid, what),
                           [v.rsplit('#', 1)[0].encode() for v in (owner,
                                                                  vid)])

    def new_vid(self, key, iv):
        with self.lock:
            self.vid_n += 1
            return '%s#%d' % (key.decode(errors='replace'), self.vid_n)

    # ---- global operations ----

    def add_global(self, g):
        with self.lock:
            self.globals.append(g)
            self.globals.sort(key=lambda x: x.iv.s0)

    def add_stats(self, s0, s1, evictions):
        """The counter read between seqs s0 and s1."""
        with self.lock:
            self.stats.append((s0, s1, self.epoch, evictions))

    def restart(self, seq, killed):
        """The server was restarted at `seq` (killed: SIGKILL)."""
        with self.lock:
            self.epoch += 1
            self.epoch_start[self.epoch] = seq
            if killed:
                # The server starts empty, and its cas counter from the
                # start, as memcached's after a crash: a cas from before
                # may come again (nothing from before is restored).
                self.cas_owner = {}
                for g in self.globals:
                    if g.kind == 'flush_delayed':
                        g.cancelled = True
                for k, c in self.keys.items():
                    if None not in c:
                        c.append(None)

    def check_evictions(self):
        """Each miss that only eviction explains needs the counter to move
        between the write and the read (same server instance)."""
        with self.lock:
            claims, self.evict_claims = self.evict_claims, []
            keep = []
            for key, since, until, epoch, what in claims:
                # A restart starts the counter at 0 (and must restore
                # every live item).
                before = [(self.epoch_start[epoch], 0)] + [
                    (s1, e) for s0, s1, ep, e in self.stats
                    if ep == epoch and s1 <= since]
                after = [(s0, e) for s0, s1, ep, e in self.stats
                         if ep == epoch and s0 >= until]
                if not after:
                    if epoch == self.epoch:
                        keep.append((key, since, until, epoch, what))
                    continue
                if before and before[-1][1] == after[0][1]:
                    raise Mismatch(
                        'key %r missing with no eviction: stats evictions '
                        'stayed %d from seq %d (before its write) to %d '
                        '(after the read)\n%s' % (
                            key, after[0][1], before[-1][0], after[0][0],
                            what), [key])
            self.evict_claims = keep

    # ---- client operations ----

    def resolve_cas(self, op):
        """The cas a cas-carrying op sends: the current item's (if known),
        or one it certainly does not have."""
        if op.cas_ref is None:
            return None
        known = [c.cas for c in self.keys.get(op.key, [])
                 if c is not None and c.cas is not None]
        last = known[-1] if known else None
        if op.cas_ref == 'last':
            return last if last is not None else 1
        if op.cas_ref == 'lower':  # meta I: a cas below the item's
            return last - 1 if last else 1
        return (last or 1) ^ 0x5a5a5a5a  # 'wrong'

    def apply(self, op, res, iv, vid):
        """Check `res` (a reply tuple, see clients) for `op` that ran
        during `iv`; update the candidates. Raises Mismatch."""
        if op.kind == 'mget':
            for key, r in zip(op.keys, res[1]):
                one = Op('get', op.proto, key, want_cas=op.want_cas)
                try:
                    self.apply(one, r, iv, vid)
                except Mismatch as e:
                    raise Mismatch('%s (in a multi-get)' % e, e.keys or [key])
            return
        if op.kind == 'scan':
            return self.apply_scan(op, res, iv)
        key = op.key
        cands = self.keys.setdefault(key, [None])
        ok, nexts, evicted, learned = [], [], True, set()
        for x, why in self.worlds(key, cands, iv):
            for exp_res, nxt in semantics(op, x, iv, vid, self):
                if match(exp_res, res):
                    ok.append((x, why, exp_res))
                    if why != 'evicted':
                        evicted = False
                    if res[0] == 'OOM':
                        nxt = x  # not stored (or the old value dropped)
                    got = reply_cas(res)
                    if nxt is not None and nxt.cas is None and \
                            got is not None:
                        nxt = nxt.but(cas=got)
                    if nxt is not None and res[0] == 'HIT':
                        nxt = nxt.but(alive=max(nxt.alive, iv.s0))
                    if nxt is not None and got is not None:
                        learned.add((got, nxt.vid))  # what the server said
                    nexts.append(nxt)
        if not ok:
            raise Mismatch('%s\n  reply %r\n  model allows %s\n  '
                           'candidates %s' % (
                               op, short(res), allowed(op, cands, iv, vid,
                                                       self), cands))
        if res[0] == 'OOM':
            nexts = dedupe(nexts + [None])
        # A cas learned from a reply counts only when one version can
        # have it (else the model does not know which it belongs to).
        vids = {v for c, v in learned}
        if len(vids) == 1:
            for c, v in learned:
                self.register_cas(c, v, repr(op))
        if evicted and any(w[1] == 'evicted' for w in ok):
            since = min(c.w.s0 for c in cands if c is not None)
            with self.lock:
                self.evict_claims.append((key, since, iv.s1, iv.epoch, (
                    '  %s during seq %d..%d at %.1f..%.1f server#%d\n'
                    '  reply %r\n  candidates %s' % (
                        op, iv.s0, iv.s1, iv.t0, iv.t1, iv.epoch,
                        short(res), cands))))
        self.keys[key] = dedupe(nexts)

    def apply_scan(self, op, res, iv):
        """Every key certainly present for the whole scan comes back
        (unless evicted: a claim, as for a miss); every key that comes
        back may be present."""
        got = res[1]
        self.scan_missed = []
        for key, cands in self.keys.items():
            if not key.startswith(op.prefix):
                continue
            ws = self.worlds(key, cands, iv)
            present = [x for x, _ in ws if x is not None]
            absent = [why for x, why in ws if x is None]
            if key in got and not present:
                raise Mismatch('scan %r returned %r, which cannot be '
                               'present: %s' % (op.prefix, key, cands))
            if key not in got and present and \
                    all(w == 'evicted' for w in absent):
                since = min(c.w.s0 for c in cands if c is not None)
                with self.lock:
                    self.evict_claims.append((key, since, iv.s1, iv.epoch,
                                              '  %s left it out' % op))
                self.scan_missed.append(key)
        for key in got:
            if key.startswith(op.prefix) and key not in self.keys:
                raise Mismatch('scan %r returned %r, never written' %
                               (op.prefix, key))


def reply_cas(res):
    """The cas a reply reports for the item it leaves, if any."""
    if res[0] in ('STORED', 'VIVIFIED'):
        return res[1]
    if res[0] == 'NUM':
        return res[2]
    if res[0] == 'HIT':
        return res[3]
    return None


def dedupe(states):
    out, seen = [], set()
    for s in states:
        k = None if s is None else (s.value, s.flags, s.cas, s.vid, s.exp,
                                    s.stale, s.alive)
        if k not in seen:
            seen.add(k)
            out.append(s)
    return out


def short(res):
    if res[0] == 'HIT' and len(res[1]) > 40:
        return ('HIT', res[1][:30] + b'...(%d bytes)' % len(res[1])) + \
            tuple(res[2:])
    if res[0] == 'MGET':
        return ('MGET', [short(r) for r in res[1]])
    return res


def allowed(op, cands, iv, vid, model):
    out = []
    for x, why in model.worlds(op.key, cands, iv):
        for exp_res, _ in semantics(op, x, iv, vid, model):
            out.append('%s%s' % (short(exp_res),
                                 ' (%s)' % why if why else ''))
    return ', '.join(out)


ANY = object()


def match(exp, res):
    """Whether reply `res` is the expected `exp` (ANY: any value there;
    a cas of None in `exp`: not known, any)."""
    if res[0] == 'HIDDEN':  # noreply: any outcome of this world
        return exp[0] not in ('OOM',)
    if res[0] == 'OOM':
        return exp[0] in ('STORED', 'NUM', 'VIVIFIED')
    if exp[0] != res[0] or len(exp) != len(res):
        return False
    for e, r in zip(exp[1:], res[1:]):
        if e is ANY or e is None or r is None:
            continue
        if e != r:
            return False
    return True


def parse_num(v):
    """The number incr/decr read from a value, as memcached's
    safe_strtoull: blanks, an optional +, digits that fit 64 bits, then
    the end, a blank or a NUL (rhkvd does the same); else None."""
    blank = b' \t\n\v\f\r'
    i = 0
    while i < len(v) and v[i] in blank:
        i += 1
    if v[i:i + 1] == b'+':
        i += 1
    j = i
    while j < len(v) and 48 <= v[j] <= 57:
        j += 1
    if j == i or int(v[i:j]) > U64:
        return None
    if j < len(v) and v[j] not in blank + b'\0':
        return None
    return int(v[i:j])


def semantics(op, x, iv, vid, m):
    """[(expected reply, next state)] for `op` on visible state `x`.
    Deterministic given `x`: one entry, except where the documented
    semantics leave a choice."""
    k = op.kind
    if k == 'get':
        return sem_get(op, x, iv, vid, m)
    if k == 'touch':
        if x is None:
            return [(('NOT_FOUND',), None)]
        return [(('TOUCHED',), x.but(exp=m.exp_window(op.ttl, iv)))]
    if k == 'store':
        return sem_store(op, x, iv, vid, m)
    if k == 'delete':
        return sem_delete(op, x, iv, vid, m)
    if k == 'arith':
        return sem_arith(op, x, iv, vid, m)
    raise AssertionError(k)


def union(a, b):
    """An expiry window holding both (None: never expires)."""
    if a is None and b is None:
        return None
    inf = float('inf')
    a, b = a or (inf, inf), b or (inf, inf)
    return (min(a[0], b[0]), max(a[1], b[1]))


def sem_get(op, x, iv, vid, m):
    if x is None:
        if op.vivify is not None:
            # meta: N after T (as the client sends them) sets the TTL;
            # msgpack: either
            exp = m.exp_window(op.vivify, iv)
            if op.touch is not None and op.proto == 'msgpack':
                exp = union(exp, m.exp_window(op.touch, iv))
            it = Item(b'', 0, op.newcas, vid, exp, False, iv)
            return [(('VIVIFIED', op.newcas), it)]
        return [(('MISS',), None)]
    nxt = x
    if op.touch is not None:
        nxt = x.but(exp=m.exp_window(op.touch, iv))
    return [(('HIT', x.value, x.flags, x.cas if op.want_cas else None,
              x.stale), nxt)]


def sem_store(op, x, iv, vid, m):
    mode, c = op.mode, op.cas
    exp = m.exp_window(op.ttl, iv)
    new = Item(op.value, op.flags, op.newcas, vid, exp, False, iv)
    if len(op.value) > op_max_item:
        return [(('TOO_LARGE',), None)]
    stored = ('STORED', op.newcas)
    if mode == 'add':
        return [(stored, new)] if x is None else [(('NOT_STORED',), x)]
    if mode in ('append', 'prepend'):
        if x is None:
            if op.vivify is not None:
                # created from the data; F is not sent in append modes
                return [(stored, new.but(flags=0,
                                         exp=m.exp_window(op.vivify, iv)))]
            return [(('NOT_STORED',), None)]
        if c is not None and c != 0 and c != x.cas:
            if x.cas is None:  # unknown: either
                return [(('EXISTS',), x)] + merged(op, x, new)
            return [(('EXISTS',), x)]
        return merged(op, x, new)
    # set, replace
    if c is not None:
        if x is None:
            return [(('NOT_FOUND',), None)]
        # meta I: a lower cas stores, stale, keeping the old TTL
        stale = (stored, new.but(stale=True, exp=x.exp))
        if x.cas is None:  # not known: any of the three
            return [(('EXISTS',), x), (stored, new)] + \
                ([stale] if op.invalidate else [])
        if c != x.cas:
            if op.invalidate and c < x.cas:
                return [stale]
            return [(('EXISTS',), x)]
        return [(stored, new)]
    if mode == 'replace' and x is None:
        return [(('NOT_STORED',), None)]
    return [(stored, new)]


op_max_item = 1 << 20


def merged(op, x, new):
    v = x.value + op.value if op.mode == 'append' else op.value + x.value
    return [(('STORED', op.newcas), new.but(value=v, flags=x.flags,
                                            exp=x.exp))]


def sem_delete(op, x, iv, vid, m):
    if x is None:
        return [(('NOT_FOUND',), None)]
    c = op.cas
    if c is not None:
        if x.cas is None:
            return [(('EXISTS',), x)] + sem_delete(
                Op('delete', op.proto, op.key, invalidate=op.invalidate,
                   x=op.x, ttl=op.ttl, flags=op.flags, newcas=op.newcas),
                x, iv, vid, m)
        if c != x.cas:
            return [(('EXISTS',), x)]
    exp = m.exp_window(op.ttl, iv) if op.ttl else x.exp
    if op.x:
        return [(('DELETED',), x.but(value=b'', flags=op.flags,
                                     exp=m.exp_window(op.ttl, iv),
                                     stale=op.invalidate, w=iv))]
    if op.invalidate:
        return [(('DELETED',), Item(x.value, x.flags, op.newcas, vid, exp,
                                    True, iv))]
    return [(('DELETED',), None)]


def sem_arith(op, x, iv, vid, m):
    if x is None:
        if op.vivify is not None:
            # meta: T after N (as the client sends them) sets the TTL
            # of the created item; msgpack: vivify's, or either
            exp = m.exp_window(op.vivify, iv)
            if op.ttl and op.proto == 'meta':
                exp = m.exp_window(op.ttl, iv)
            elif op.ttl:
                exp = union(exp, m.exp_window(op.ttl, iv))
            it = Item(b'%d' % op.initial, 0, op.newcas, vid, exp, False, iv)
            return [(('NUM', op.initial, op.newcas), it)]
        return [(('NOT_FOUND',), None)]
    c = op.cas
    if c is not None and c != 0 and c != x.cas:
        # an empty value is refused before the cas is compared, as
        # memcached 1.6.18 does (META.md, ma)
        if x.value == b'':
            return [(('NON_NUMERIC',), x)]
        if x.cas is not None:
            return [(('EXISTS',), x)]
        alt = [(('EXISTS',), x)]
    else:
        alt = []
    n = parse_num(x.value)
    if n is None:
        return alt + [(('NON_NUMERIC',), x)]
    n = (n + op.delta) & U64 if op.mode == 'incr' else max(n - op.delta, 0)
    s = b'%d' % n
    same = len(s) <= len(x.value)
    if same:
        s = s.ljust(len(x.value), b' ')
    exp = m.exp_window(op.ttl, iv) if op.ttl else x.exp
    it = Item(s, x.flags, op.newcas, vid, exp, x.stale and same, iv)
    return alt + [(('NUM', n, op.newcas), it)]
