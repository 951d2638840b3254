"""Shrinks a failing history to a short reproduction and prints it.

The live run's history (every client operation and global step, in the
order they were sent, up to the failure) is replayed one step at a time
on a fresh server, each client on its own connections as in the live
run, first fast, then (if that does not
fail: expiry, delayed flushes) at the original times. A replay counts as
failing when it fails the same way (`kind`), and a replay that fails
sooner cuts the history there. Then the steps that touch other keys are
dropped, then each client's steps, then each key's, and delta debugging
(ddmin: drop chunks while the replay still fails, halving the chunks)
shrinks the rest, all within --shrink-seconds. The last replay's
transcript is printed: the exact commands, in order, on their
connections.
"""

import os
import pickle
import re
import shutil
import tempfile
import time

from conn import ConnError
from model import Failure

KINDS = [('cas', r'cas \d+ given to two'),
         ('scan', r'^scan |left out .*, which a get right after'),
         ('evicted', r'missing with no eviction|left it out'),
         ('oom', r'out of memory in a row'),
         ('exit', r'exited'),
         ('died', r'connection failed')]


def kind(failure):
    msg = str(failure)
    for k, pat in KINDS:
        if re.search(pat, msg, re.M):
            return k
    return 'reply'


def touches(step, keys):
    """Whether a history step may matter to `keys`: global steps do, and
    so do client-chosen cas values (a restart's sequence starts above the
    highest)."""
    if step[0] != 'op':
        return True
    op = step[2]
    return op.newcas is not None or any(op.key == k or (op.keys and k in op.keys) or
               (op.prefix is not None and k.startswith(op.prefix))
               for k in keys)


class Replayer:
    def __init__(self, cfg, Session, Conns, want):
        self.cfg, self.Session, self.Conns = cfg, Session, Conns
        self.want = want
        self.runs = 0
        self.last = None

    def run(self, steps, timed, transcript=None):
        """The failure replaying `steps` ([(t, step)]) gives, or None."""
        Conns = self.Conns
        self.runs += 1
        tmp = tempfile.mkdtemp(prefix='rhkv-shrink-', dir='/dev/shm' if
                               os.path.isdir('/dev/shm') else None)
        sess = self.Session(self.cfg, tmp, transcript)
        conns = {}  # each client's connections, as in the live run

        def conns_of(who):
            if who not in conns:
                conns[who] = Conns(sess.srv.port, transcript, who)
            conns[who].port = sess.srv.port
            return conns[who]

        try:
            sess.srv.start()
            t0, start = (steps[0][0] if steps else 0), time.time()
            for self.at, (t, step) in enumerate(steps):
                if timed:
                    time.sleep(max(0.0, start + (t - t0) - time.time()))
                if step[0] == 'op':
                    sess.run_op(conns_of('c%d' % step[1]), step[1],
                                step[2])
                else:
                    if step[0] == 'restart':
                        for c in conns.values():
                            c.close()
                    sess.run_global(conns_of('global'), step)
            sess.run_global(conns_of('global'), ('stats',))
            for c in conns.values():
                c.close()
            rc = sess.srv.stop()
            if rc != 0:
                raise Failure('the server exited %d after SIGTERM; its '
                              'log:\n%s' % (rc, sess.srv.log_tail()))
            return None
        except Failure as f:
            return f
        except (ConnError, OSError) as e:
            return Failure('replay: connection failed: %s' % e)
        finally:
            for c in conns.values():
                c.close()
            sess.srv.kill()
            shutil.rmtree(tmp, ignore_errors=True)

    def fails(self, steps, timed):
        """None, or the steps up to the one that failed the same way
        (a replay may fail sooner than the history did)."""
        self.at = len(steps)
        f = self.last = self.run(steps, timed)
        if f is None or kind(f) != self.want:
            return None
        return steps[:self.at + 1]


def drop_classes(steps, fails, deadline, cls):
    """Drops, one class at a time, every client step of a class (a
    client, a key) while the rest still fails: coarse and cheap before
    ddmin. Global steps stay."""
    for c in sorted({cls(s[1]) for s in steps if s[1][0] == 'op'},
                    key=repr):
        if time.time() >= deadline:
            break
        rest = [s for s in steps if s[1][0] != 'op' or cls(s[1]) != c]
        got = len(rest) < len(steps) and fails(rest)
        if got:
            steps = got
    return steps


def op_key(step):
    op = step[2]
    return op.key if op.key is not None else op.prefix or b''


def ddmin(steps, fails, deadline):
    """Delta debugging: drop chunks of steps while the rest still
    fails (`fails` returns the failing prefix), halving the chunks when
    none can go."""
    n = 2
    while len(steps) >= 2 and time.time() < deadline:
        size = -(-len(steps) // n)
        chunks = [steps[i:i + size] for i in range(0, len(steps), size)]
        done = False
        for i in range(len(chunks)):
            if time.time() >= deadline:
                return steps
            rest = [s for j, c in enumerate(chunks) if j != i for s in c]
            got = fails(rest) if rest else None
            if got:
                steps, n, done = got, max(n - 1, 2), True
                break
        if not done:
            if n >= len(steps):
                break
            n = min(len(steps), 2 * n)
    return steps


def show(label, data):
    s = data.decode('latin-1') if isinstance(data, bytes) else str(data)
    s = s.replace('\\', '\\\\').replace('\r', '\\r').replace('\n', '\\n')
    return '  [%s] %s' % (label, s) if label else '  ' + s


def report(cfg, sess, failure, Session, Conns):
    """Prints the shrunk reproduction of `failure` from `sess`'s run."""
    want = kind(failure)
    hist = sorted(sess.history, key=lambda h: h[0])
    steps = [(t, step) for s0, t, step in hist
             if failure.seq is None or s0 <= failure.seq]
    rp = Replayer(cfg, Session, Conns, want)
    deadline = time.time() + cfg.shrink_seconds
    print('shrink: %d steps in the history; replaying them one at a time '
          '(failure kind: %s)' % (len(steps), want), flush=True)
    # The steps on the failure's keys (and global ones) first: cheap, and
    # enough for most failures; then the whole history.
    focus = [s for s in steps if touches(s[1], failure.keys)] \
        if failure.keys else []
    tries = [(focus, False)] if 0 < len(focus) < len(steps) else []
    tries.append((steps, False))
    if want == 'cas':  # which worker a write lands on varies
        tries.append((steps, False))
    if want in ('reply', 'evicted', 'scan'):  # expiry, delayed flushes
        tries += [(focus, True)] if focus else []
        tries.append((steps, True))
    got = None
    for cand, timed in tries:
        if cand and time.time() < deadline:
            got = rp.fails(cand, timed)
            if got:
                break
    if not got:
        print('shrink: the history does not fail when replayed one step at '
              'a time: it needs concurrency (or a worker thread to serve '
              'connections as in the run). The last steps on the key%s:' %
              ('s %r' % failure.keys if failure.keys else ''))
        if rp.last is not None:
            print('shrink: (the replay failed otherwise: %s)' %
                  str(rp.last)[:2000])
        for t, step in [s for s in steps if not failure.keys or
                        touches(s[1], failure.keys)][-40:]:
            print('  %7.3f s %r' % (t, step))
        return
    steps = got
    fails = lambda s: rp.fails(s, timed)  # noqa: E731
    steps = drop_classes(steps, fails, deadline, lambda st: st[1])
    if len({op_key(s[1]) for s in steps if s[1][0] == 'op'}) <= 60:
        steps = drop_classes(steps, fails, deadline, op_key)
    steps = ddmin(steps, fails, deadline)
    transcript = []
    f = rp.run(steps, timed, transcript)
    print('shrink: %d steps after %d replays%s; the reproduction (%s):' %
          (len(steps), rp.runs, ' (time-dependent: at the original times)'
           if timed else '', 'fails again' if f else 'flaky'))
    print('  server: %s %s' % (cfg.server, ' '.join(
        Session(cfg, '/tmp', None).args()).replace('/tmp/cache',
                                                    'FILE')))
    for label, data in transcript:
        print(show(label, data))
    if f is not None:
        print('shrink: the replay fails with:\n%s' % f)
    if cfg.save:
        with open(cfg.save, 'wb') as out:
            pickle.dump((timed, steps), out)
        print('shrink: saved to %s (replay it: --replay %s)' % (cfg.save,
                                                               cfg.save))


def replay(cfg, Session, Conns):
    """--replay FILE: runs a saved reproduction, printing each command
    and reply; the exit status is 1 when it fails."""
    with open(cfg.replay, 'rb') as f:
        timed, steps = pickle.load(f)
    transcript = []
    f = Replayer(cfg, Session, Conns, None).run(steps, timed, transcript)
    for label, data in transcript:
        print(show(label, data))
    print('replay: %s' % ('fails:\n%s' % f if f else 'passes'))
    return 1 if f else 0
