"""Shrinks a failing sequence and prints it.

Delta debugging (ddmin) over the sequence's commands: drop chunks of
commands while the rest still shows an undocumented difference (each run
in a fresh key space), halving the chunks down to single commands, for
at most `seconds`. Commands keep their writes (a write left empty goes),
so what was pipelined stays pipelined.
"""

import time


def regroup(cmds):
    writes, last = [], None
    for w, c in cmds:
        if w != last:
            writes.append([])
            last = w
        writes[-1].append(c)
    return writes


def ddmin(writes, fails, seconds):
    """The smallest sequence found (a list of writes) that still fails,
    and how many runs that took."""
    deadline = time.time() + seconds
    cmds = [(w, c) for w, cs in enumerate(writes) for c in cs]
    n, runs = 2, 0
    while len(cmds) >= 2 and time.time() < deadline:
        size = -(-len(cmds) // n)
        smaller = False
        for start in range(0, len(cmds), size):
            cand = cmds[:start] + cmds[start + size:]
            runs += 1
            if fails(regroup(cand)):
                cmds, n, smaller = cand, max(n - 1, 2), True
                break
            if time.time() >= deadline:
                break
        if not smaller:
            if n >= len(cmds):
                break
            n = min(len(cmds), 2 * n)
    return regroup(cmds), runs


def show(title, data):
    """Bytes as Python literals, a line each, indented."""
    print(title)
    i = 0
    while i < len(data):
        j = data.find(b'\n', i)
        j = len(data) if j < 0 else j + 1
        chunk = data[i:j]
        if len(chunk) > 300:
            chunk = chunk[:120] + b'...(%d bytes)...' % len(chunk) + \
                chunk[-40:]
        print('    %r' % chunk)
        i = j


def report(writes, sides, res, names):
    """Prints what was sent (per write; per server where the cas values
    differ) and both replies, marking the first unit that differs."""
    for i in range(len(writes)):
        sent = [sides[n].sent[i] if i < len(sides[n].sent) else b''
                for n in names]
        if all(s == sent[0] for s in sent):
            show('  write %d, to both:' % (i + 1), sent[0])
        else:
            for n, s in zip(names, sent):
                show('  write %d, to %s:' % (i + 1, n), s)
    for n in names:
        print('  %s replied:' % n)
        for k, u in enumerate(sides[n].units()):
            mark = '  <- differs' if k == res.at else ''
            text = repr(u if len(u) < 300 else u[:120] + b'...' + u[-40:])
            print('    %s%s' % (text, mark))
