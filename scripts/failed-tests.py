#!/usr/bin/env python3
"""failed-tests.py TESTLOG.json LABEL: prints each test in a meson test log
that did not pass (result other than OK or SKIP): its name, result and
duration, then the last lines of its output. scripts/test.sh prints these
at the end of its run, where CI's view of the output (its tail) shows them."""
import json
import re
import sys

TAIL_LINES = 15
# rhkvd's own warning and information lines (every start as root logs
# one) would crowd the test's assertions out of the tail.
SERVER_LOG = re.compile(r"rhkvd\[\d+\] (WARN|INFO|DEBUG) ")


def main():
    path, label = sys.argv[1], sys.argv[2]
    with open(path) as f:
        for line in f:
            test = json.loads(line)
            if test["result"] in ("OK", "SKIP"):
                continue
            print(f"-- {label}: {test['name']} {test['result']} "
                  f"after {test['duration']:.1f}s")
            out = ((test.get("stdout") or "") + (test.get("stderr") or ""))
            out = [text for text in out.rstrip("\n").split("\n")
                   if not SERVER_LOG.search(text)]
            for text in out[-TAIL_LINES:]:
                print(f"   {text[:200]}")


if __name__ == "__main__":
    main()
