#!/usr/bin/python3
"""compare_report: the tables, plots and BENCHMARKS.md of tests/bench/compare.

Reads the runs that compare recorded (a TSV file of lines, one per run, each
naming the rhkv-bench --json file of that run), takes medians over the
rounds, prints the tables, writes the gnuplot data and PNGs (plot.gp) and
the Markdown file. Run by compare; not meant to be run by hand. The memory
and W7 sections are tests/bench/memory's and tests/bench/large's markdown
(--memory-md, --w7-md), taken as they are.

Lines of the results file (tab-separated):
  run  WORKLOAD SERVER ROUND JSON ITEMS   a load run (ITEMS: curr_items
                                          after it, or empty)
  w5   SERVER TRY MEMORY_MB JSON RSS_KB ITEMS
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

SERVERS = ("rhkvd", "memcached", "fixed-reply")
PCTS = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99_9", 99.9))


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def ratio(a, b):
    return "n/a" if a is None or b is None or b == 0 else "%.2f×" % (a / b)


class Runs:
    def __init__(self, path):
        self.runs = {}  # (workload, server) -> [(json dict, items)]
        self.w5 = []  # (server, try, mb, json, rss_kb, items)
        for line in open(path):
            f = line.rstrip("\n").split("\t")
            if f[0] == "run":
                d = load(f[4])
                if d is None:
                    continue
                items = int(f[5]) if len(f) > 5 and f[5].isdigit() else None
                self.runs.setdefault((f[1], f[2]), []).append((d, items))
            elif f[0] == "w5":
                self.w5.append((f[1], int(f[2]), int(f[3]), load(f[4]),
                                int(f[5]) if f[5].isdigit() else None,
                                int(f[6]) if f[6].isdigit() else None,
                                f[7] if len(f) > 7 else "?"))

    def has(self, w, s):
        return (w, s) in self.runs

    def ops(self, w, s):
        return med(d["ops_per_sec"] for d, _ in self.runs.get((w, s), []))

    def lat(self, w, s, name):
        return med(d["latency_us"][name] for d, _ in self.runs.get((w, s), []))

    def items(self, w, s):
        return med(i for _, i in self.runs.get((w, s), []))

    def errors(self, w, s):
        return sum(int(d["errors"]) for d, _ in self.runs.get((w, s), []))

    def count(self, w, s):
        return med(d["ops"] for d, _ in self.runs.get((w, s), []))


def main_tables(r):
    lines = []
    lines.append("| workload | server | ops/s | p50 (µs) | p99 (µs) | p99.9 (µs) | max (µs) | errors |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for w in ("W1", "W2", "W3", "W4"):
        for s in SERVERS:
            if not r.has(w, s):
                continue
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %d |" % (
                w, s, fmt(r.ops(w, s), ",.0f"), fmt(r.lat(w, s, "p50"), ".1f"),
                fmt(r.lat(w, s, "p99"), ".1f"), fmt(r.lat(w, s, "p99_9"), ".1f"),
                fmt(r.lat(w, s, "max"), ".1f"), r.errors(w, s)))
    lines.append("")
    lines.append("| workload | ops/s rhkvd/memcached | ops/s rhkvd/ceiling | memcached/ceiling | p99 rhkvd/memcached | p99.9 rhkvd/memcached |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for w in ("W1", "W2", "W3", "W4"):
        if not any(r.has(w, s) for s in SERVERS):
            continue
        o = [r.ops(w, s) for s in SERVERS]
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            w, ratio(o[0], o[1]), ratio(o[0], o[2]), ratio(o[1], o[2]),
            ratio(r.lat(w, "rhkvd", "p99"), r.lat(w, "memcached", "p99")),
            ratio(r.lat(w, "rhkvd", "p99_9"), r.lat(w, "memcached", "p99_9"))))
    return lines


def w4_tables(r, p):
    if not any(r.has("W4", s) for s in SERVERS):
        return []
    target = int(p.get("w4_target", "1500000"))
    lines = []
    lines.append("| W4 (100%% set, %s keys) | growth ops/s | growth p99.9 (µs) | items reached (from empty, %s s) | overwrite ops/s (full table, %s s) | items after prefill |" % (
        format(int(p["w4_keys"]), ","), p["w4_seconds"], p["w6_after_seconds"]))
    lines.append("|---|---:|---:|---:|---:|---:|")
    for s in ("rhkvd", "memcached"):
        if not r.has("W4", s):
            continue
        it = r.items("W4", s)
        its = fmt(it, ",.0f")
        if it is not None and it < target:
            its += " (below %s)" % format(target, ",")
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            s, fmt(r.ops("W4", s), ",.0f"), fmt(r.lat("W4", s, "p99_9"), ".1f"),
            its, fmt(r.ops("W4-over", s), ",.0f"),
            fmt(r.items("W4-over", s), ",.0f")))
    lines.append("")
    lines.append("| W6 probe (get, %s/s open loop) | phase | gets | p50 (µs) | p99 (µs) | p99.9 (µs) | max (µs) | errors |" % p["w6_rate"])
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for s in ("rhkvd", "memcached"):
        for w, phase in (("W6-grow", "during growth"), ("W6-after", "after growth")):
            if not r.has(w, s):
                continue
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %d |" % (
                s, phase, fmt(r.count(w, s), ",.0f"), fmt(r.lat(w, s, "p50"), ".1f"),
                fmt(r.lat(w, s, "p99"), ".1f"), fmt(r.lat(w, s, "p99_9"), ".1f"),
                fmt(r.lat(w, s, "max"), ".1f"), r.errors(w, s)))
    lines.append("")
    lines.append("| W6 | p99.9 during / after growth | p99 during / after | max during / after | target (rhkvd) ≤ 2 |")
    lines.append("|---|---:|---:|---:|---|")
    for s in ("rhkvd", "memcached"):
        if not r.has("W6-grow", s):
            continue
        a = r.lat("W6-grow", s, "p99_9")
        b = r.lat("W6-after", s, "p99_9")
        met = ""
        if s == "rhkvd" and a is not None and b:
            met = "met" if a / b <= 2 else "MISSED"
        lines.append("| %s | %s | %s | %s | %s |" % (
            s, ratio(a, b),
            ratio(r.lat("W6-grow", s, "p99"), r.lat("W6-after", s, "p99")),
            ratio(r.lat("W6-grow", s, "max"), r.lat("W6-after", s, "max")), met))
    return lines


def w5_tables(r, p):
    if not r.w5:
        return [], None
    lines = []
    keys = int(p["w5_keys"])
    lines.append("| W5 (zipf 0.99, get + set on miss, %s keys, %s B values) | try | -m (MiB) | warm-up (s) | RSS (MiB) | items | keys / items | hit ratio | ops/s |" % (
        format(keys, ","), p["w5_values"]))
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s, t, mb, d, rss, items, warm in r.w5:
        hr = None
        if d is not None and d["hits"] + d["misses"] > 0:
            hr = 100.0 * d["hits"] / (d["hits"] + d["misses"])
        lines.append("| %s | %d | %d | %s | %s | %s | %s | %s | %s |" % (
            s, t, mb, warm, fmt(rss / 1024 if rss else None, ".1f"), fmt(items, ",.0f"),
            fmt(keys / items if items else None, ".1f"),
            fmt(hr, ".2f") + ("%" if hr is not None else ""),
            fmt(d["ops_per_sec"] if d else None, ",.0f")))
    # The verdict: memcached's run against rhkvd's closest try.
    mc = [x for x in r.w5 if x[0] == "memcached" and x[4]]
    rh = [x for x in r.w5 if x[0] == "rhkvd" and x[4]]
    verdict = None
    if mc and rh:
        m = mc[-1]
        best = min(rh, key=lambda x: abs(x[4] - m[4]))
        def hit(x):
            d = x[3]
            return None if d is None or d["hits"] + d["misses"] == 0 else \
                100.0 * d["hits"] / (d["hits"] + d["misses"])
        diff = abs(best[4] - m[4]) / m[4]
        if diff <= 0.02:
            verdict = ("RSS matched within 2%% (rhkvd -m %d: %.1f MiB, memcached -m %d: %.1f MiB): "
                       "hit ratio rhkvd %s%% vs memcached %s%%" % (
                           best[2], best[4] / 1024, m[2], m[4] / 1024,
                           fmt(hit(best), ".2f"), fmt(hit(m), ".2f")))
        else:
            verdict = ("**RSS not matched: rhkvd %.1f MiB vs memcached %.1f MiB** "
                       "(rhkvd's closest try, -m %d, is %.0f%% off; the hit ratios, "
                       "rhkvd %s%% vs memcached %s%%, are not comparable)" % (
                           best[4] / 1024, m[4] / 1024, best[2], 100 * diff,
                           fmt(hit(best), ".2f"), fmt(hit(m), ".2f")))
    lines.append("")
    if verdict:
        lines.append(verdict)
    return lines, verdict


def mem_tables(path):
    """A script's markdown taken as it is (tests/bench/memory's, large's):
    its table, details and commands."""
    if not path or not os.path.exists(path):
        return []
    return open(path).read().rstrip().splitlines()


def table_bench(path):
    """The headline of bench-rhashtable's output: its lookup rows and the
    resize losses, and the raw output."""
    if not path or not os.path.exists(path):
        return [], None
    text = open(path).read()
    rows = []
    resize = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 8 and f[2] == "lookup" and f[0].isdigit():
            rows.append(f)
        if line.strip().startswith(("re-seed", "grow")) and "resizes of" in line:
            resize.append([line.strip()])
        elif "per wall second" in line and resize:
            resize[-1].append(line.strip())
    lines = []
    if rows:
        lines.append("| keys | threads | rhashtable Mops/s | cds_lfht Mops/s | rwlock table Mops/s | lookups rht/lfht |")
        lines.append("|---:|---:|---:|---:|---:|---:|")
        for f in rows:
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                format(int(f[0]), ","), f[1], f[3], f[4], f[5], f[6].replace("x", "×")))
    if resize:
        lines.append("")
        lines.append("| resize test (one reader doing lookups) | resizes | reader Mops/s idle / resizing (per wall second) | reader loss (target ≤ 10%) |")
        lines.append("|---|---|---:|---:|")
        for r in resize:
            kind, _, rest = r[0].partition(" ")
            what = rest.split(";")[0].strip()
            wall = r[1] if len(r) > 1 else ""
            w = wall.replace(",", " ").split()
            try:
                idle = w[w.index("idle") + 1]
                res = w[w.index("resizing") + 1]
                loss = w[w.index("loss") + 1]
                verdict = w[w.index("loss") + 2] if len(w) > w.index("loss") + 2 else ""
            except (ValueError, IndexError):
                idle = res = loss = verdict = "?"
            lines.append("| %s | %s | %s / %s | %s %s |" % (kind, what, idle, res, loss, verdict))
    return lines, text


def cdf_data(r, plotdir, workloads):
    """gnuplot data: per workload, per server, the percentile curve."""
    made = []
    for w, title, series in workloads:
        path = os.path.join(plotdir, "latency-%s.dat" % w)
        blocks = []
        for label, key in series:
            if (key[0], key[1]) not in r.runs:
                continue
            pts = []
            for name, pc in PCTS:
                v = r.lat(key[0], key[1], name)
                pts.append((1.0 / (1.0 - pc / 100.0), v, pc))
            mx = r.lat(key[0], key[1], "max")
            pts.append((10000.0, mx, 100.0))
            blocks.append((label, pts))
        if not blocks:
            continue
        with open(path, "w") as f:
            for label, pts in blocks:
                f.write("# %s\n" % label)
                for x, v, pc in pts:
                    if v is not None:
                        f.write("%g %g %g\n" % (x, max(v, 0.1), pc))
                f.write("\n\n")
        made.append((w, title, path, [b[0] for b in blocks]))
    return made


def plots(r, p, plotdir, gnuplot, gp):
    os.makedirs(plotdir, exist_ok=True)
    # Throughput bars: one row per workload, columns rhkvd memcached fixed.
    bars = os.path.join(plotdir, "throughput.dat")
    with open(bars, "w") as f:
        f.write("workload rhkvd memcached fixed-reply\n")
        for w, label in (("W1", "W1"), ("W2", "W2 (pipeline 16)"),
                         ("W3", "W3 (4 KiB)"), ("W4", "W4 (set, growth)"),
                         ("W4-over", "W4 (set, full table)")):
            if not any(r.has(w, s) for s in SERVERS):
                continue
            vals = [r.ops(w, s) for s in SERVERS]
            f.write('"%s" %s\n' % (label, " ".join(
                "%g" % (v / 1000.0) if v is not None else "-" for v in vals)))
    pngs = [("Throughput per workload", "throughput.png")]
    run = [(bars, os.path.join(plotdir, "throughput.png"), "bars", "", "")]
    workloads = [
        ("W1", "W1: 10% set / 90% get, 32 B, 50 conns",
         [(s, ("W1", s)) for s in SERVERS]),
        ("W2", "W2: W1 with pipeline 16", [(s, ("W2", s)) for s in SERVERS]),
        ("W3", "W3: W1 with 4 KiB values", [(s, ("W3", s)) for s in SERVERS]),
        ("W4", "W4: 100% set from an empty server",
         [(s, ("W4", s)) for s in ("rhkvd", "memcached")]),
        ("W6", "W6: get probe at %s/s during and after growth" % p.get("w6_rate", "1000"),
         [("rhkvd during growth", ("W6-grow", "rhkvd")),
          ("rhkvd after growth", ("W6-after", "rhkvd")),
          ("memcached during growth", ("W6-grow", "memcached")),
          ("memcached after growth", ("W6-after", "memcached"))]),
    ]
    for w, title, path, labels in cdf_data(r, plotdir, workloads):
        png = os.path.join(plotdir, "latency-%s.png" % w)
        run.append((path, png, "cdf", title, "|".join(labels)))
        pngs.append(("Latency percentiles, " + title, "latency-%s.png" % w))
    ok = []
    for data, png, kind, title, labels in run:
        cmd = [gnuplot, "-e",
               "kind='%s'; data='%s'; out='%s'; ttl='%s'; labels='%s'" % (
                   kind, data, png, title.replace("'", ""), labels), gp]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0 or not os.path.exists(png):
            print("compare: gnuplot failed for %s: %s" % (png, res.stderr.strip()),
                  file=sys.stderr)
            continue
        ok.append(png)
    return [(t, os.path.join(plotdir, n)) for t, n in pngs
            if os.path.join(plotdir, n) in ok]


KEEP_MARKER = "<!-- hand-written below: compare keeps it -->"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--commands", required=True)
    ap.add_argument("--machine", default="")
    ap.add_argument("--mc-version", default="memcached")
    ap.add_argument("--table-output", default="")
    ap.add_argument("--memory-md", default="", help="tests/bench/memory --out")
    ap.add_argument("--w7-md", default="", help="tests/bench/large --out")
    ap.add_argument("--plot-dir", default="")
    ap.add_argument("--gnuplot", default="")
    ap.add_argument("--plot-gp", default="")
    ap.add_argument("--plot-skip", default="", help="why there are no plots")
    ap.add_argument("--param", action="append", default=[],
                    help="KEY=VALUE for the text")
    a = ap.parse_args()
    p = dict(x.split("=", 1) for x in a.param)
    r = Runs(a.results)

    sections = []
    main = main_tables(r)
    w4 = w4_tables(r, p)
    w5, verdict = w5_tables(r, p)
    mem = mem_tables(a.memory_md)
    w7 = mem_tables(a.w7_md)
    tbl, tbl_text = table_bench(a.table_output)
    for title, body in (("Throughput and latency (W1–W4)", main),
                        ("W4 growth and W6 latency during resizes", w4),
                        ("W5 hit ratio at equal RSS", w5),
                        ("W7 large values (tests/bench/large)", w7),
                        ("Memory (tests/bench/memory)", mem),
                        ("Hashtable: rhashtable vs cds_lfht (bench-rhashtable)", tbl)):
        if body:
            sections.append((title, body))
    for title, body in sections:
        print()
        print("## " + title)
        print()
        print("\n".join(body))

    outdir = os.path.dirname(os.path.abspath(a.out))
    plot_lines = []
    if a.plot_dir and a.gnuplot and a.plot_gp:
        made = plots(r, p, a.plot_dir, a.gnuplot, a.plot_gp)
        for title, png in made:
            rel = os.path.relpath(png, outdir)
            plot_lines.append("![%s](%s)" % (title, rel))
            plot_lines.append("")
        if made:
            print("\nplots:", ", ".join(png for _, png in made))
    elif a.plot_skip:
        print("\ncompare: no plots:", a.plot_skip)

    rounds = p.get("rounds", "?")
    duration = p.get("duration", "?")
    doc = []
    doc.append("# Benchmarks")
    doc.append("")
    doc.append("""Produced by `tests/bench/compare` (never run by the test suite or CI) on
%s. Medians of %s interleaved round(s) (rhkvd, memcached, fixed-reply, then
again; W5 and the hashtable benchmark run once, after the rounds); every server is started fresh for every run on a free loopback port
and stopped afterwards. `fixed-reply` (tests/bench/fixed_reply.c) answers
every set with `STORED` and every get with a fixed value of the workload's
size, storing nothing: the loopback ceiling on this machine. The load
generator (rhkv-bench) shares the machine with the server.""" % (
        datetime.date.today().isoformat(), rounds))
    doc.append("")
    doc.append("- Machine: %s" % a.machine)
    doc.append("- Compared against: %s" % a.mc_version)
    doc.append("- Server threads %s, memory limit %s MiB for W1–W4 and the "
               "per-item memory shapes (nothing is evicted), %s connections "
               "in all." % (
                   p.get("server_threads", "2"), p.get("memory_mb", "1024"),
                   p.get("conns_total", "50")))
    doc.append("""- Workloads:
  - W1: 50 conns, no pipelining, 10%% set / 90%% get, 32 B values, 100k keys
    prefilled, %s s; W2 = W1 with pipeline 16; W3 = W1 with 4 KiB values.
  - W4: 100%% set, 32 B values, uniform over %s keys, from an empty server
    for %s s (the table resizes from empty towards %s keys; `items reached` is
    `curr_items` from `stats` after the run). Then every key is set once
    (`--prefill`, not measured) and the same load runs again for %s s over
    the full table: overwrites only, no growth (`W4-over`).
  - W6: a second rhkv-bench, an open-loop `get` probe (%s requests/s, 1
    thread, 1 connection, the same keys), runs during both W4 phases; its
    p99.9 during growth against after growth shows what resizes cost a
    reader.
  - W5: hit ratio under Zipf(0.99) `get` with `--miss-set` (set on a miss),
    %s keys (about 10× what memcached -m %s holds), %s B values, at equal
    process RSS: memcached runs with -m %s; rhkvd's -m is adjusted (up to
    %s tries, proportionally to the RSS gap; the search stops when the RSS
    does not follow -m) until its VmRSS after the workload is within 2%% of
    memcached's. Each try: a pipelined (16) warm-up of %s s steps
    (memcached's goes on until it evicts, at most 2 steps; rhkvd's as long
    as memcached's), then %s s measured (closed loop, %s connections), then
    VmRSS and `curr_items`.
  - memory (tests/bench/memory, once, after W5): VmRSS after loading minus
    the empty server's VmRSS, per item stored, for 1M items of 16 B keys and
    100 B values, 1M of 10 B keys and 10 B values, and 200k of 16 B keys and
    log-normal values (50 B–16 KiB, median 500 B); rhkvd's VmRSS over the
    bytes it accounts against -m 64 under mixed-size sets that evict all
    along (memcached: VmRSS over its limit); both servers' VmRSS at -m 64
    after 4× that in values.""" % (
        duration, format(int(p.get("w4_keys", "0")), ","), p.get("w4_seconds"),
        format(int(p.get("w4_keys", "0")), ","), p.get("w6_after_seconds"),
        p.get("w6_rate"), format(int(p.get("w5_keys", "0")), ","),
        p.get("w5_mc_mb"), p.get("w5_values"), p.get("w5_mc_mb"),
        p.get("w5_tries"), p.get("w5_warm"), p.get("w5_seconds"),
        p.get("conns_total", "50")))
    doc.append("")
    doc.append("## Results")
    for title, body in sections:
        if title.startswith("Hashtable"):
            continue
        doc.append("")
        doc.append("### " + title)
        doc.append("")
        doc.extend(body)
    if tbl:
        doc.append("")
        doc.append("## Hashtable: rhashtable vs cds_lfht")
        doc.append("")
        doc.append("`build-release/tests/bench/bench-rhashtable %s` (its own medians; "
                   "targets: lookups ≥ 1.5× cds_lfht at the largest size, ≥ 1.0× "
                   "elsewhere; a reader loses ≤ 10%% during resizes). The lookup "
                   "rows and the resize tests:" % p.get("table_args", ""))
        doc.append("")
        doc.extend(tbl)
        doc.append("")
        doc.append("<details><summary>full bench-rhashtable output</summary>")
        doc.append("")
        doc.append("```")
        doc.append(tbl_text.rstrip())
        doc.append("```")
        doc.append("")
        doc.append("</details>")
    if plot_lines:
        doc.append("")
        doc.append("## Plots")
        doc.append("")
        doc.append("Throughput in thousands of requests/s; latency as percentile "
                   "curves through the points rhkv-bench reports (p50, p90, p99, "
                   "p99.9, max), medians over the rounds.")
        doc.append("")
        doc.extend(plot_lines[:-1])
    elif a.plot_skip:
        doc.append("")
        doc.append("## Plots")
        doc.append("")
        doc.append("Not made: %s." % a.plot_skip)
    doc.append("")
    doc.append("## Not yet measured")
    doc.append("")
    nm = []
    if verdict and verdict.startswith("**RSS not matched"):
        nm.append("- W5 at equal RSS: rhkvd does not evict yet, so its RSS "
                  "does not follow -m and the hit ratios above are not at equal "
                  "memory; rerun once eviction lands.")
    if not tbl:
        nm.append("- The hashtable benchmark (this run had `--no-table`).")
    else:
        nm.append("- The hashtable benchmark's 10M-key rows (the size of its "
                  "≥ 1.5× target): its default run takes well over 3 minutes, "
                  "so compare runs `%s`; run "
                  "`build-release/tests/bench/bench-rhashtable` by hand for "
                  "them." % p.get("table_args", ""))
    nm.append("- Full latency distributions: rhkv-bench's --json has only p50, "
              "p90, p99, p99.9 and max, so the plotted curves are through those "
              "points.")
    doc.extend(nm)
    doc.append("")
    doc.append("## Exact commands")
    doc.append("")
    doc.append("```")
    doc.append(open(a.commands).read().rstrip())
    doc.append("```")
    # Hand-written analysis after the marker survives regeneration.
    kept = ""
    try:
        old = open(a.out).read()
        if KEEP_MARKER in old:
            kept = old[old.index(KEEP_MARKER):]
    except OSError:
        pass
    with open(a.out, "w") as f:
        f.write("\n".join(doc) + "\n")
        if kept:
            f.write("\n" + kept)
    print("\nwrote", a.out)


if __name__ == "__main__":
    main()
