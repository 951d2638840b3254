"""Golden cases (cases_golden.txt, whose head says how to read it): what
the current protocol.txt adds to 1.6.18, with expected replies written from
its text; run against the server under test only.
"""

import os

from metalib import Cases

MS = "ms $K 2 F7 T0\r\nhi\r\n"
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "cases_golden.txt")


class Golden:
    def __init__(self, case, expect, source):
        self.case = case
        self.expect = expect      # a reply a step, MN included
        self.source = source      # the sentence of protocol.txt followed


def unescape(text):
    return text.encode("latin-1").decode("unicode_escape")


def build(path=TABLE):
    cs = Cases(auto_bytewise=0)
    out = []
    cur = None

    def close():
        if cur is None:
            return
        name, literal, source, steps, expect = cur
        if not steps or len(steps) != len(expect):
            raise ValueError("%s: case %s wants > and < in pairs" %
                             (path, name))
        cs.add(name, *steps, literal_cas=literal)
        out.append(Golden(cs.all[-1], expect, source))

    with open(path, encoding="ascii") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("= "):
                close()
                words = line[2:].split()
                cur = (words[0], "literal" in words[1:], "", [], [])
            elif cur is None or not line.strip():
                continue
            elif line.startswith("# ") and not cur[2] and not cur[3]:
                cur = cur[:2] + (line[2:],) + cur[3:]
            elif line.startswith("> "):
                step = line[2:]
                cur[3].append(MS if step == "@MS" else unescape(step))
            elif line.startswith("<"):
                cur[4].append(unescape(line[2:]) + "MN\r\n")
    close()
    return GoldenList(out)


class GoldenList:
    def __init__(self, items):
        self.all = items
