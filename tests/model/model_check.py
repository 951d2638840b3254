#!/usr/bin/python3
"""The model checker's driver: random histories against a real server.

    model_check.py [--mode plain|restart] [--seconds N | --long]
                   [--seed S] [--clients N] [--shrink-seconds N]

Starts the server under test (server.py), then runs `--clients` threads,
each with its own seed, its own keys and one connection per protocol
(text and meta share one), issuing random operations (gen.py) whose
replies the model (model.py) checks, plus one global thread that reads
`stats` (the eviction counter, the server's clock), and sends flush_all
(now or delayed), prefix flushes (flush_prefix, mf, the msgpack op) and
cache_memlimit changes while the clients run. In `restart` mode the
server keeps its cache in a --memory-file and the global thread also
restarts it at barriers (clients parked): gracefully (SIGTERM, then the
same -m, -I and file; -t may change), after which every key is read back,
or by SIGKILL, after which anything may be gone.

A failure prints the seed and the model's complaint, then shrinks the
history (shrink.py) and prints a short reproduction as exact commands;
the exit status is 1. Every run prints its seed: `--seed` repeats one.
"""

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback

try:
    import msgpack  # noqa: F401 (client_msgpack's)
except ImportError:
    print('SKIP: python3-msgpack missing (apt-get install python3-msgpack)')
    sys.exit(77)

import model as M  # noqa: E402
import shrink
from client_mcbin import McbinClient
from client_msgpack import MsgpackClient
from client_text import TextClient
from conn import ConnError
from gen import Gen, U64
from model import Failure
from server import Server, is_memcached, server_path

SMALL = 64 << 10  # an item this small must always be storable


class Conns:
    """One connection per protocol, opened when first used."""

    def __init__(self, port, transcript=None, who=''):
        self.port, self.transcript, self.who = port, transcript, who
        self.c = {}

    def get(self, proto):
        p = {'meta': 'text'}.get(proto, proto)
        if p not in self.c:
            cls = {'text': TextClient, 'mcbin': McbinClient,
                   'msgpack': MsgpackClient}[p]
            self.c[p] = cls(self.port, self.transcript, self.who)
        return self.c[p]

    def close(self):
        for c in self.c.values():
            c.close()
        self.c = {}


def new_e(rng):
    """A client-chosen cas: near 2^64 (the restart's cas arithmetic) or
    far above anything the server's counter reaches."""
    x = rng.random()
    if x < 0.3:
        return U64
    if x < 0.6:
        return U64 - rng.randrange(1, 1 << 16)
    return rng.randrange(1 << 48, 1 << 63)


class Session:
    """A server and the model of it; runs client and global steps."""

    def memlimit_reply(self, mib):
        """rhkvd with --memory-file caps the limit at the file's -m (the
        file holds no more segments) and says so; otherwise OK."""
        if (self.cfg.mode == 'restart' and self.cfg.caps == 'rhkv' and
                mib > self.cfg.mem):
            return (b'MEMLIMIT_ADJUST_FAILED maxbytes capped at %dm: the '
                    b'memory file holds no more' % self.cfg.mem)
        return b'OK'

    def __init__(self, cfg, tmp, transcript=None):
        self.cfg, self.tmp = cfg, tmp
        self.transcript = transcript
        self.model = M.Model()
        self.model.memcached = cfg.caps == 'memcached'
        self.threads = cfg.threads
        self.srv = Server(cfg.server, self.args(), os.path.join(tmp,
                                                                'server.log'))
        self.oom = {}         # client id -> consecutive OOM replies
        self.history = []     # (s0, t, step) for shrinking
        self.hlock = threading.Lock()
        self.t_start = time.time()
        self.e_used = set()

    def args(self):
        a = ['-t', str(self.threads), '-m', str(self.cfg.mem), '-I', '1m']
        if self.cfg.mode == 'restart':
            # -m 8 would leave 1 MiB of connection memory, which eight
            # clients' large msgpack frames fill (closing connections)
            a += ['--memory-file', os.path.join(self.tmp, 'cache'),
                  '--conn-memory', '64']
        return a

    def record(self, s0, step):
        with self.hlock:
            self.history.append((s0, time.time() - self.t_start, step))

    # ---- client operations ----

    def run_op(self, conns, cid, op):
        m = self.model
        while op.newcas is not None and op.newcas in self.e_used:
            # chosen cas values stay unique (else two versions share one)
            op.newcas = U64 - random.randrange(1, 1 << 24)
        self.e_used.add(op.newcas)
        with m.lock:
            op.cas = m.resolve_cas(op) if op.kind != 'mget' else None
        s0, t0 = m.clock.tick(), time.time()
        if cid >= 0:  # not the verification after a restart
            self.record(s0, ('op', cid, op))
        try:
            res = conns.get(op.proto).run(op)
        except ConnError as e:
            raise Failure('%s: connection failed: %s%s' % (
                op, e, '' if self.srv.alive() else
                '\nthe server %s; its log:\n%s' % (self.srv.how_gone(),
                                                   self.srv.log_tail())),
                [op.key], m.clock.tick())
        t1, s1 = time.time(), m.clock.tick()
        if self.transcript is not None:  # the reply, as the model reads it
            self.transcript.append(('', b'    -> %s' % repr(
                M.short(res)).encode()))
        iv = M.Interval(s0, s1, t0, t1, m.epoch)
        with m.lock:
            try:
                m.apply(op, res, iv, m.new_vid(op.key or b'mget', iv))
            except M.Mismatch as e:
                raise Failure(str(e), e.keys or [op.key] + (op.keys or []),
                              s1)
        if op.kind == 'scan' and m.scan_missed and cid >= 0:
            # Left out keys that only eviction would excuse: is the key
            # there? A hit is a scan that misses present keys.
            for key in list(m.scan_missed):
                get = M.Op('get', 'text', key, want_cas=True)
                self.run_op(conns, -1, get)
                with m.lock:
                    if any(c is not None for c in m.keys[key]) and \
                            None not in m.keys[key]:
                        raise Failure('%s left out %r, which a get right '
                                      'after finds: %s' % (op, key,
                                                           m.keys[key]),
                                      [key], s1)
        if res[0] == 'OOM' and len(op.value) <= SMALL:
            n = self.oom[cid] = self.oom.get(cid, 0) + 1
            if n >= 3:
                raise Failure('%s: %d SERVER_ERROR out of memory in a row '
                              'for items of at most %d bytes: the server '
                              'cannot store (%r)' % (op, n, SMALL, res[1]),
                              [], s1)
        elif op.kind in ('store', 'arith'):
            self.oom[cid] = 0

    # ---- global operations ----

    def stats(self, conns):
        m = self.model
        s0 = m.clock.tick()
        st = conns.get('text').stats()
        s1 = m.clock.tick()
        lag = time.time() - int(st['time'])
        if lag > 1.0:  # the server's clock runs late: widen the margins
            m.margin = max(m.margin, 1.5 + lag)
        m.add_stats(s0, s1, int(st['evictions']))
        return st

    def run_global(self, conns, step, pause=None, record=True):
        """step: ('flush_all', proto, delay), ('flush_prefix', proto,
        prefix), ('memlimit', mib), ('restart', 'term'|'kill', threads,
        flush_first), ('stats',)."""
        m = self.model
        kind = step[0]
        if kind == 'stats':
            self.stats(conns)
            with m.lock:
                try:
                    m.check_evictions()
                except M.Mismatch as e:
                    raise Failure(str(e), e.keys, m.clock.tick())
            return
        if kind == 'restart':
            return self.restart(conns, step, pause)
        s0, t0 = m.clock.tick(), time.time()
        if record:
            self.record(s0, step)
        # In the model from the moment it is sent: a client may see its
        # effect before the reply comes (the end is open until then).
        g = None
        iv = M.Interval(s0, float('inf'), t0, float('inf'), m.epoch)
        if kind == 'flush_all':
            g = M.Global('flush_delayed', iv, due=(t0 + step[2], float(
                'inf'))) if step[2] else M.Global('flush_all', iv)
        elif kind == 'flush_prefix':
            g = M.Global('flush_prefix', iv, prefix=step[2])
        if g:
            m.add_global(g)
        try:
            if kind == 'flush_all':
                proto, delay = step[1], step[2]
                if proto == 'mcbin':
                    r = conns.get('mcbin').flush(delay)
                elif proto == 'msgpack':
                    r = conns.get('msgpack').flush_all(delay)
                else:
                    r = conns.get('text').command(
                        b'flush_all %d' % delay if delay else b'flush_all')
                ok = r == b'OK'
            elif kind == 'flush_prefix':
                proto, p = step[1], step[2]
                if proto == 'msgpack':
                    r = conns.get('msgpack').flush_prefix(p)
                elif proto == 'meta':
                    r = conns.get('text').command(b'mf ' + p)
                else:
                    r = conns.get('text').command(b'flush_prefix ' + p)
                ok = r in (b'OK', b'HD')
            elif kind == 'memlimit':
                r = conns.get('text').command(b'cache_memlimit %d' %
                                              step[1])
                ok = r == self.memlimit_reply(step[1])
        except ConnError as e:
            raise Failure('%r: connection failed: %s; the server %s; its '
                          'log:\n%s' % (step, e, self.srv.how_gone(),
                                         self.srv.log_tail()))
        t1, s1 = time.time(), m.clock.tick()
        if not ok:
            raise Failure('%r answered %r' % (step, r))
        if g:
            with m.lock:
                g.iv = M.Interval(s0, s1, t0, t1, m.epoch)
                if g.due:
                    g.due = (t0 + step[2], t1 + step[2])

    def restart(self, conns, step, pause):
        """At a barrier: every client parked (pause), or a replay."""
        how, threads, flush_first = step[1], step[2], step[3]
        m = self.model
        self.stats(conns)
        conns.close()
        if pause:
            pause.close_all()
        s0 = m.clock.tick()
        self.record(s0, step)
        if self.transcript is not None:
            self.transcript.append(('global', b'# %s, then start again with -t %d'
                                    % (b'graceful stop (SIGTERM)'
                                       if how == 'term' else b'SIGKILL',
                                       threads)))
        if how == 'term':
            rc = self.srv.stop()
            if rc != 0:
                raise Failure('the server exited %d after SIGTERM; its '
                              'log:\n%s' % (rc, self.srv.log_tail()))
        else:
            self.srv.kill()
        self.threads = threads
        self.srv.args = self.args()
        self.srv.start()
        conns.port = self.srv.port
        with m.lock:
            m.restart(m.clock.tick(), how == 'kill')
        if flush_first:
            self.run_global(conns, ('flush_all', 'text', 0), record=False)
        if how == 'term':
            self.verify_all(conns)

    def verify_all(self, conns):
        """Reads every key (clients parked): after a graceful restart
        every live value must be back."""
        keys = sorted(self.model.keys)
        for i in range(0, len(keys), 20):
            op = M.Op('mget', 'text', keys=keys[i:i + 20], want_cas=True)
            self.run_op(conns, -1, op)


class Pause:
    """The barrier: the global thread parks every client."""

    def __init__(self, n):
        self.n = n
        self.cv = threading.Condition()
        self.want = False
        self.parked = 0
        self.gen = 0
        self.conns = []

    def close_all(self):
        for c in self.conns:
            c.close()

    def park(self, conns):
        with self.cv:
            if not self.want:
                return
            self.parked += 1
            self.cv.notify_all()
            g = self.gen
            while self.gen == g:
                self.cv.wait()

    def stop_all(self, alive):
        with self.cv:
            self.want = True
            while self.parked < alive():
                self.cv.wait(0.1)

    def resume(self):
        with self.cv:
            self.want = False
            self.parked = 0
            self.gen += 1
            self.cv.notify_all()


class Run:
    """One live run: clients and the global thread for cfg.seconds."""

    def __init__(self, cfg, tmp):
        self.cfg = cfg
        self.sess = Session(cfg, tmp)
        self.stop = threading.Event()
        self.failure = None
        self.flock = threading.Lock()
        self.ops = 0
        self.alive = 0

    def fail(self, f):
        with self.flock:
            if self.failure is None:
                self.failure = f
        self.stop.set()

    def client(self, cid, pause):
        rng = random.Random('%d/%d' % (self.cfg.seed, cid))
        gen = Gen(rng, cid, self.cfg.caps, new_e)
        conns = Conns(self.sess.srv.port)
        pause.conns.append(conns)
        try:
            while not self.stop.is_set():
                if pause.want:
                    conns.close()
                    pause.park(conns)
                    conns.port = self.sess.srv.port
                    continue
                self.sess.run_op(conns, cid, gen.next())
                self.ops += 1
        except Failure as f:
            self.fail(f)
        except Exception:
            self.fail(Failure('client %d: %s' % (cid,
                                                 traceback.format_exc())))
        finally:
            conns.close()
            with pause.cv:
                self.alive -= 1
                pause.cv.notify_all()

    def global_thread(self, pause, end):
        rng = random.Random('%d/global' % self.cfg.seed)
        cfg, sess = self.cfg, self.sess
        conns = Conns(sess.srv.port)
        delayed_until = 0.0
        try:
            while not self.stop.is_set() and time.time() < end:
                time.sleep(rng.uniform(0.05, 0.5))
                sess.run_global(conns, ('stats',))
                x = rng.random()
                proto = rng.choice(['text', 'mcbin', 'msgpack']
                                   if cfg.caps == 'rhkv' else
                                   ['text', 'mcbin'])
                now = time.time()
                # restart mode: fewer flushes of everything, so that the
                # live data can outgrow the memory file (-m 8) between
                if rng.random() < cfg.flush_skip:
                    x = max(x, 0.15)
                if x < 0.10 and now > delayed_until:
                    step = ('flush_all', proto, 0)
                elif x < 0.15 and now > delayed_until:
                    d = rng.randrange(1, 4)
                    delayed_until = now + d + 2 * sess.model.margin + 1
                    step = ('flush_all', proto, d)
                elif x < 0.30 and cfg.caps == 'rhkv':
                    c = rng.randrange(cfg.clients)
                    p = rng.choice([b'c%d:' % c, b'c%d:g%d:' %
                                    (c, rng.randrange(4)), b'c%d' % c])
                    step = ('flush_prefix', rng.choice(
                        ['text', 'meta', 'msgpack']), p)
                elif x < 0.40:
                    step = ('memlimit', rng.choice(cfg.memlimits))
                elif x < 0.58 and cfg.mode == 'restart':
                    step = ('restart', 'term' if rng.random() < 0.85
                            else 'kill', rng.choice([1, 2, 4]),
                            rng.random() < 0.3)
                else:
                    continue
                if step[0] == 'restart':
                    pause.stop_all(lambda: self.alive)
                    if self.stop.is_set():
                        pause.resume()
                        break
                    try:
                        sess.run_global(conns, step, pause)
                    finally:
                        pause.resume()
                else:
                    sess.run_global(conns, step)
        except Failure as f:
            self.fail(f)
        except Exception:
            self.fail(Failure('global: %s' % traceback.format_exc()))
        finally:
            conns.close()

    def go(self):
        cfg, sess = self.cfg, self.sess
        sess.srv.start()
        pause = Pause(cfg.clients)
        end = time.time() + cfg.seconds
        self.alive = cfg.clients
        ts = [threading.Thread(target=self.client, args=(i, pause))
              for i in range(cfg.clients)]
        for t in ts:
            t.start()
        g = threading.Thread(target=self.global_thread, args=(pause, end))
        g.start()
        while time.time() < end and not self.stop.is_set():
            time.sleep(0.1)
        self.stop.set()
        if self.failure is not None:
            sess.srv.kill()  # unblocks clients waiting for replies
        g.join()
        pause.resume()
        for t in ts:
            t.join()
        if self.failure is None:
            self.finish()
        else:
            sess.srv.kill()
        return self.failure

    def finish(self):
        """The last counter reading settles every eviction claim; the
        server must stop cleanly (a sanitizer report makes it exit
        non-zero)."""
        sess = self.sess
        conns = Conns(sess.srv.port)
        try:
            time.sleep(0.2)
            sess.run_global(conns, ('stats',))
            with sess.model.lock:
                if sess.model.evict_claims:
                    raise Failure('eviction claims left unsettled: %r' %
                                  sess.model.evict_claims)
        except Failure as f:
            self.failure = f
        except ConnError as e:
            self.failure = Failure('stats at the end: %s; the server %s; '
                                   'its log:\n%s' % (
                                       e, sess.srv.how_gone(),
                                       sess.srv.log_tail()))
        finally:
            conns.close()
        rc = sess.srv.stop()
        if rc != 0 and self.failure is None:
            self.failure = Failure('the server exited %d after SIGTERM; '
                                   'its log:\n%s' % (rc,
                                                     sess.srv.log_tail()))


def config(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--mode', choices=['plain', 'restart'], default='plain')
    ap.add_argument('--seconds', type=float, default=20)
    ap.add_argument('--long', action='store_true',
                    help='a soak: one hour unless --seconds says')
    ap.add_argument('--seed', type=int)
    ap.add_argument('--clients', type=int, default=8)
    ap.add_argument('--shrink-seconds', type=float, default=120)
    ap.add_argument('--save', metavar='FILE',
                    help='save a shrunk reproduction to FILE')
    ap.add_argument('--replay', metavar='FILE',
                    help='run a reproduction saved with --save (the '
                    'same --mode)')
    ap.add_argument('--keep-going', action='store_true',
                    help='after a failure, start again with a new seed '
                    'until the time is up (finds how soon bugs show)')
    cfg = ap.parse_args(argv)
    if cfg.long and '--seconds' not in ' '.join(argv):
        cfg.seconds = 3600
    # The suite's runs under a sanitizer rhkvd are shortened from outside
    # (scripts/test.sh), where meson's fixed arguments cannot be changed.
    if os.environ.get('RHKV_MODEL_SECONDS'):
        cfg.seconds = float(os.environ['RHKV_MODEL_SECONDS'])
    cfg.server = server_path()
    cfg.caps = 'memcached' if is_memcached(cfg.server) else 'rhkv'
    if cfg.mode == 'restart':
        cfg.mem, cfg.threads = 8, 4
        cfg.memlimits = [8, 16, 32, 64, 128]
        cfg.flush_skip = 0.8
    else:
        cfg.mem, cfg.threads = 1024, 4
        cfg.memlimits = [512, 1024, 2048]
        cfg.flush_skip = 0.0
    if cfg.seed is None:
        cfg.seed = random.SystemRandom().randrange(1 << 32)
    return cfg


def main(argv):
    # SIGTERM (meson's timeout) exits through atexit, which kills servers
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cfg = config(argv)
    if cfg.mode == 'restart' and cfg.caps != 'rhkv':
        print('SKIP: restart mode needs rhkvd (--memory-file)')
        return 77
    if cfg.replay:
        return shrink.replay(cfg, Session, Conns)
    deadline = time.time() + cfg.seconds
    status = 0
    while True:
        print('model_check: mode %s, seed %d, %g s, %d clients, server %s'
              % (cfg.mode, cfg.seed, cfg.seconds, cfg.clients, cfg.server),
              flush=True)
        tmp = tempfile.mkdtemp(prefix='rhkv-model-', dir='/dev/shm'
                               if os.path.isdir('/dev/shm') else None)
        t0 = time.time()
        try:
            run = Run(cfg, tmp)
            f = run.go()
            took = time.time() - t0
            if f is None:
                print('model_check: OK, %d operations in %.1f s' %
                      (run.ops, took))
            else:
                status = 1
                print('model_check: FAILED after %.1f s (seed %d, mode %s):'
                      '\n%s' % (took, cfg.seed, cfg.mode, f), flush=True)
                if os.environ.get('RHKV_MODEL_DUMP'):
                    with open(os.environ['RHKV_MODEL_DUMP'], 'w') as d:
                        for s0, t, step in sorted(run.sess.history,
                                                  key=lambda h: h[0]):
                            d.write('%d %.3f %r\n' % (s0, t, step))
                shrink.report(cfg, run.sess, f, Session, Conns)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if not cfg.keep_going or time.time() >= deadline:
            return status
        cfg.seconds = deadline - time.time()
        cfg.seed = random.SystemRandom().randrange(1 << 32)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
