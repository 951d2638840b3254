#!/usr/bin/python3
"""memcached's meta protocol (mg ms md ma mn me): the server under test
against memcached 1.6.18, reply for reply (differential cases, cases_diff),
against the current protocol.txt where it adds to 1.6.18 (golden cases,
cases_golden, the server under test only), and 50 connections racing for
one recache token, one add, one counter (race, both servers).

    conformance.py --port P [--ref-port R] [--golden] [--race] [--brief]
                   [--bytewise-all] [--list] [--dump FILE] [FILTER...]

Without --ref-port no differential case runs. A FILTER is a substring of
case names (several: any of them); it applies to every part. Exit status:
0 when all ran agree, 1 on any mismatch.
"""

import argparse
import concurrent.futures
import os
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases_diff  # noqa: E402
import cases_golden  # noqa: E402
from metalib import (Conn, Norm, Reply, Sleep, compare, norm_equal,  # noqa
                     run_case, small)

JOBS = 12
BRIEF = False  # --brief: names of the failing cases only


def wanted(name, filters):
    return not filters or any(f in name for f in filters)


def show_case(case, ctx):
    """The case's requests as sent (expanded for one server)."""
    out = []
    for i, step in enumerate(case.steps):
        if isinstance(step, Sleep):
            out.append("    step %d: sleep %ss" % (i, step.seconds))
        else:
            data = ctx.expand(step)
            if not data.endswith(b"\n"):
                data += b"\r\n"
            out.append("    step %d: %r" % (i, data + b"mn\r\n"))
    return "\n".join(out)


def show_replies(label, replies):
    out = []
    for i, r in enumerate(replies):
        if r is not None:
            out.append("    %s %d: %r" % (label, i, r))
    return "\n".join(out)


def run_differential(ref_port, port, filters, dump, bytewise_all=False):
    cases = [c for c in cases_diff.build().all if wanted(c.name, filters)]
    jobs = []
    for c in cases:
        jobs.append((c, "d:" + c.name, False))
        if c.bytewise or (bytewise_all and small(c.steps, 100000)):
            jobs.append((c, "b:" + c.name, True))

    def one(job):
        c, key, bw = job
        ra, ca = run_case(ref_port, c, key, bw)
        rb, cb = run_case(port, c, key, bw)
        return c, key, bw, ra, ca, rb, cb

    bad = broken = 0
    names = []
    dumpf = open(dump, "w") if dump else None
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        for c, key, bw, ra, ca, rb, cb in ex.map(one, jobs):
            mode = " (one byte a write)" if bw else ""
            if dumpf:
                dumpf.write("== %s%s\n%s\n%s\n" % (
                    c.name, mode, show_case(c, ca),
                    show_replies("memcached", ra)))
            if any(r is not None and r.end != "ok" and
                   not r.end == "closed" for r in ra):
                # memcached itself did not finish a step: the case is wrong
                broken += 1
                print("BROKEN CASE %s%s: memcached did not answer MN\n%s\n%s"
                      % (c.name, mode, show_case(c, ca),
                         show_replies("memcached", ra)))
                continue
            if not compare(ra, rb, c.literal_cas):
                bad += 1
                names.append(c.name + (" (bytewise)" if bw else ""))
                if BRIEF:
                    continue
                print("MISMATCH %s%s\n%s\n%s\n%s" % (
                    c.name, mode, show_case(c, cb),
                    show_replies("memcached", ra),
                    show_replies("server   ", rb)))
    if dumpf:
        dumpf.close()
    if names:
        print("mismatched: " + " ".join(names))
    print("differential: %d cases (%d runs), %d mismatched, %d broken" % (
        len(cases), len(jobs), bad, broken))
    return bad + broken


def run_golden(port, filters):
    cases = [c for c in cases_golden.build().all
             if wanted(c.case.name, filters)]

    def one(c):
        replies, ctx = run_case(port, c.case, "g:" + c.case.name)
        return c, replies, ctx

    bad = 0
    names = []
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        for g, replies, ctx in ex.map(one, cases):
            want = [None if isinstance(s, Sleep) else
                    Reply(ctx.expand(e), "ok")
                    for s, e in zip(g.case.steps, g.expect)]
            nw, ng = Norm(g.case.literal_cas), Norm(g.case.literal_cas)
            ok = len(replies) == len(want) and all(
                norm_equal(nw.reply(w), ng.reply(r))
                for w, r in zip(want, replies))
            if not ok:
                bad += 1
                names.append(g.case.name)
                if BRIEF:
                    continue
                print("GOLDEN MISMATCH %s (%s)\n%s\n%s\n%s" % (
                    g.case.name, g.source, show_case(g.case, ctx),
                    show_replies("expected", want),
                    show_replies("server  ", replies)))
    if names:
        print("golden mismatched: " + " ".join(names))
    print("golden: %d cases, %d mismatched" % (len(cases), bad))
    return bad


def race_round(port, key, prepare, request, conns=50):
    """conns connections send request at once (after prepare on another
    connection); returns the list of reply lines."""
    c0 = Conn(port)
    c0.send(prepare + b"mn\r\n")
    r = c0.read_until_mn()
    c0.close()
    if r.end != "ok":
        return None, "prepare failed: %r" % r
    socks = [Conn(port) for _ in range(conns)]
    barrier = threading.Barrier(conns)
    replies = [None] * conns

    def go(i):
        barrier.wait()
        socks[i].send(request + b"mn\r\n")
        replies[i] = socks[i].read_until_mn(total=5.0)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in socks:
        s.close()
    return replies, None


def check_tokens(replies):
    """One reply with W, every other with Z (recache races)."""
    heads = [r.data.split(b"\r\n", 1)[0] for r in replies]
    flags = [h.split()[2:] if h.startswith(b"VA") else [] for h in heads]
    wins = sum(1 for f in flags if b"W" in f)
    zs = sum(1 for f in flags if b"Z" in f and b"W" not in f)
    if wins == 1 and zs == len(replies) - 1:
        return None
    return "%d W, %d Z of %d" % (wins, zs, len(replies))


def check_add(replies):
    """One HD, every other NS (ms ME races)."""
    heads = [r.data.split(b"\r\n", 1)[0] for r in replies]
    if heads.count(b"HD") == 1 and heads.count(b"NS") == len(heads) - 1:
        return None
    return "%d HD, %d NS of %d" % (heads.count(b"HD"), heads.count(b"NS"),
                                  len(heads))


def check_incr(replies):
    """Every increment seen once: the values 1..n, each once (ma races)."""
    vals = sorted(r.data.split(b"\r\n")[1] for r in replies
                  if r.data.startswith(b"VA"))
    want = sorted(b"%d" % i for i in range(1, len(replies) + 1))
    return None if vals == want else "values %r" % vals


# name: (what to do first, what 50 connections send at once, the check)
RACES = {
    "vivify": (b"", b"mg %s v N30 c\r\n", check_tokens),
    "stale": (b"ms %s 2 T60\r\nhi\r\nmd %s I\r\n", b"mg %s v c\r\n",
              check_tokens),
    "recache": (b"ms %s 2 T10\r\nhi\r\n", b"mg %s v c R30\r\n",
                check_tokens),
    "add": (b"", b"ms %s 2 ME\r\nhi\r\n", check_add),
    "incr": (b"ma %s N0 q\r\n", b"ma %s v\r\n", check_incr),
}


def run_race(port, label, filters, rounds=3):
    """50 connections at once: one W among them, the others Z, for a missing
    key fetched with N30, a stale key (md I) fetched plainly, a key with
    10 s to live fetched with R30; one add stores, 49 do not; 50 increments
    give 1 to 50."""
    bad = runs = 0
    for kind, (prepare, request, check) in RACES.items():
        name = "race_" + kind
        if not wanted(name, filters):
            continue
        for rnd in range(rounds):
            key = b"race:%s:%d:%d" % (kind.encode(), rnd, os.getpid())
            runs += 1
            replies, err = race_round(
                port, key, prepare.replace(b"%s", key),
                request.replace(b"%s", key))
            if not err:
                if any(r.end != "ok" for r in replies):
                    err = "a reply did not end with MN"
                else:
                    err = check(replies)
            if err:
                bad += 1
                print("RACE %s round %d on %s: %s; replies:" % (
                    name, rnd, label, err))
                for r in sorted(set(repr(r) for r in (replies or []))):
                    print("    " + r)
    print("race (%s): %d rounds, %d failed" % (label, runs, bad))
    return bad


def answers_mn(port):
    try:
        c = Conn(port)
    except OSError:
        return False
    c.send(b"mn\r\n")
    r = c.read_until_mn(total=5.0)
    c.close()
    return r.end == "ok" and r.data == b"MN\r\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int,
                    help="the server under test")
    ap.add_argument("--ref-port", type=int,
                    help="memcached 1.6.18 (differential cases)")
    ap.add_argument("--golden", action="store_true",
                    help="run the golden cases (the server under test only)")
    ap.add_argument("--race", action="store_true", help="run the race test")
    ap.add_argument("--list", action="store_true", help="list case names")
    ap.add_argument("--brief", action="store_true",
                    help="name the failing cases only, no replies")
    ap.add_argument("--dump", help="write memcached's replies to FILE")
    ap.add_argument("--bytewise-all", action="store_true",
                    help="run every differential case one byte a write too")
    ap.add_argument("filters", nargs="*", help="substrings of case names")
    a = ap.parse_args()
    if a.list:
        for c in cases_diff.build().all:
            print("diff   " + c.name + (" (+bytewise)" if c.bytewise else ""))
        for g in cases_golden.build().all:
            print("golden " + g.case.name)
        for kind in RACES:
            print("race   race_" + kind)
        return 0
    if not a.port:
        ap.error("--port is needed")
    global BRIEF
    BRIEF = a.brief
    t0 = time.monotonic()
    # Without mn every step would wait for its timeout: stop at once.
    for label, port in (("server under test", a.port),
                        ("memcached", a.ref_port)):
        if port and not answers_mn(port):
            print("FAIL: the %s (port %d) does not answer mn with MN: no "
                  "meta protocol there" % (label, port))
            return 1
    failed = 0
    if a.ref_port:
        failed += run_differential(a.ref_port, a.port, a.filters, a.dump,
                                   a.bytewise_all)
        if a.race:
            failed += run_race(a.ref_port, "memcached", a.filters)
    if a.golden:
        failed += run_golden(a.port, a.filters)
    if a.race:
        failed += run_race(a.port, "server under test", a.filters)
    print("%s: %d failures in %.1f s" % (
        "FAIL" if failed else "PASS", failed, time.monotonic() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
