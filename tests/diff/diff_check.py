#!/usr/bin/python3
"""The differential tester: random pipelined sequences against rhkvd and
memcached 1.6.18, replies compared byte for byte.

    diff_check.py [--seconds N | --long] [--seed S] [--shrink-seconds N]
    diff_check.py --send 'set k 0 0 1\\r\\nx\\r\\n' 'get k\\r\\n'

Starts rhkvd (the server under test, chosen as for the other integration
tests: tests/model/server.py) and Debian's memcached on free 127.0.0.1
ports, then sends sequences from the seed (gen.py), each in a key space of
its own, to both at once (wire.py) and compares the replies (compare.py)
until the time is up. A difference that proto/TEXT.md or proto/META.md
documents (documented.py) is counted and allowed; any other fails the
run: the sequence is shrunk (shrink.py) and printed as the exact bytes
with both servers' replies, and the exit status is 1. Without memcached
the test is skipped (77). Every run prints its seed; `--seed` repeats
the same sequences. `--send` sends the given writes (Python escapes) once
and prints both replies.
"""

import argparse
import collections
import os
import random
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, '..', 'model'))  # server.py

import compare  # noqa: E402
import shrink  # noqa: E402
import wire  # noqa: E402
from gen import ITEM_MAX, Gen  # noqa: E402
from server import Server, server_path  # noqa: E402

NAMES = ['memcached', 'rhkvd']
ARGS = ['-t', '2', '-m', '64', '-I', '%dk' % (ITEM_MAX >> 10)]


def reference():
    if os.path.exists('/usr/bin/memcached'):
        return '/usr/bin/memcached'
    return shutil.which('memcached')


class Pair:
    """The two servers and a counter of key spaces."""

    def __init__(self, tmp, quiet):
        self.quiet = quiet
        self.n = 0
        self.srv = {
            'memcached': Server(reference(), ARGS,
                                os.path.join(tmp, 'memcached.log')),
            'rhkvd': Server(server_path(), ARGS,
                            os.path.join(tmp, 'rhkvd.log'))}

    def start(self):
        for s in self.srv.values():
            s.start()

    def run(self, writes):
        """(compare.Result, sides) of one run of `writes`."""
        self.n += 1
        ports = {n: s.port for n, s in self.srv.items()}
        sides = wire.run(ports, writes, wire.prefix(self.n), self.quiet)
        if any(isinstance(c[0], bytes) and c[0].startswith(b'verbosity')
               for w in writes for c in w):
            self.quiet_logs()
        for n, s in self.srv.items():
            if not s.alive():
                raise SystemExit('FAIL: %s %s; its log:\n%s' % (
                    n, s.how_gone(), s.log_tail()))
        res = compare.check(writes, sides['memcached'].units(),
                            sides['rhkvd'].units())
        return res, sides

    def quiet_logs(self):
        """verbosity is global: set it back, outside any sequence."""
        for s in self.srv.values():
            wire.run({'x': s.port}, [[[b'verbosity 0\r\n']]], b'', 1.0)

    def stop(self):
        rc = {n: s.stop() for n, s in self.srv.items()}
        if rc['rhkvd'] != 0:
            raise SystemExit('FAIL: rhkvd exited %d after SIGTERM; its '
                             'log:\n%s' % (rc['rhkvd'],
                                           self.srv['rhkvd'].log_tail()))


def fail(pair, writes, res, sides, shrink_seconds):
    print('FAIL: an undocumented difference:')
    shrink.report(writes, sides, res, NAMES)

    def fails(ws):
        return pair.run(ws)[0].kind == 'diff'

    small, runs = shrink.ddmin(writes, fails, shrink_seconds)
    res, sides = pair.run(small)
    again = res.kind == 'diff'
    print('shrink: %d commands in %d writes after %d runs; the '
          'reproduction (%s):' % (sum(map(len, small)), len(small), runs,
                                  'fails again' if again else
                                  'did not fail again: timing?'))
    shrink.report(small, sides, res, NAMES)
    print('(each write ends with mn, the tester\'s marker; key spaces '
          'are fresh: repeat with --send)')


def send(pair, writes):
    ws = [[[w.encode('latin-1').decode('unicode_escape').encode('latin-1')]]
          for w in writes]
    res, sides = pair.run(ws)
    print('result: %s' % (res.kind if res.kind != 'documented' else
                          'documented: %s' % res.doc))
    shrink.report(ws, sides, res, NAMES)
    return res.kind != 'diff'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seconds', type=float, default=10)
    ap.add_argument('--long', action='store_true',
                    help='a soak: an hour (or --seconds N)')
    ap.add_argument('--seed', type=int)
    ap.add_argument('--shrink-seconds', type=float, default=120)
    ap.add_argument('--quiet', type=float,
                    default=float(os.environ.get('RHKV_DIFF_QUIET', 0.3)),
                    help='seconds without a byte that end a reply whose '
                    'marker was swallowed (0.3)')
    ap.add_argument('--keep-going', action='store_true',
                    help='after a difference, go on with new sequences')
    ap.add_argument('--send', nargs='+', metavar='WRITE')
    a = ap.parse_args()
    # SIGTERM (meson's timeout) exits through atexit, which kills servers
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.long and '--seconds' not in sys.argv:
        a.seconds = 3600
    if reference() is None:
        print('SKIP: memcached not installed (apt-get install memcached)')
        return 77
    tmp = tempfile.mkdtemp(prefix='rhkv-diff-')
    pair = Pair(tmp, a.quiet)
    pair.start()
    print('diff_check: %s against %s' % (server_path(), reference()))
    if a.send:
        ok = send(pair, a.send)
        pair.stop()
        shutil.rmtree(tmp)
        return 0 if ok else 1
    seed = a.seed if a.seed is not None else random.randrange(1 << 62)
    print('diff_check: seed %d, %g s (repeat: --seed %d)' % (seed,
                                                             a.seconds, seed))
    sys.stdout.flush()
    g = Gen(seed, ITEM_MAX)
    docs = collections.Counter()
    n = cmds = failed = 0
    deadline = time.time() + a.seconds
    while time.time() < deadline:
        writes = g.sequence()
        n += 1
        cmds += sum(map(len, writes))
        res, sides = pair.run(writes)
        if res.kind == 'documented':
            docs[str(res.doc)] += 1
        elif res.kind == 'diff':
            print('sequence %d of seed %d:' % (n, seed))
            fail(pair, writes, res, sides, a.shrink_seconds)
            sys.stdout.flush()
            failed += 1
            if not a.keep_going:
                break
    pair.stop()
    print('diff_check: %d sequences, %d commands, %s; documented '
          'differences met:' % (n, cmds, '%d undocumented differences' %
                                failed if failed else
                                'no undocumented difference'))
    for d, k in sorted(docs.items()):
        print('  %5d  %s' % (k, d))
    if failed:
        print('logs: %s' % tmp)
        return 1
    shutil.rmtree(tmp)
    return 0


if __name__ == '__main__':
    sys.exit(main())
