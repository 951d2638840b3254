"""Golden cases: what the current protocol.txt (memcached's doc/protocol.txt
after 1.6.18) adds to the meta commands, with the expected replies written
from its text. memcached 1.6.18 answers these with CLIENT_ERROR (E, md x)
or ignores the flag (ms s, ms N), so they run against the server under test
only, never in the differential part.

Each expected reply ends with the "MN\\r\\n" of the step's mn. CAS values
are written $1, $2 ... (the n-th distinct CAS of the case, as metalib.Norm
maps them) unless the case compares them literally (E sets them).

The sentences quoted are from protocol.txt's flag lists:
  mg: "E(token): use token as new CAS value if item is modified"
  ms: "E(token): use token as new CAS value (see metaget for detail)"
      "s: return the size of the stored item"
      "N(token): if in append mode, autovivify on miss with supplied TTL"
  md: "E(token): use token as new CAS value (see metaget for detail)"
      "x: removes the item value, but leaves the item in place."
  ma: "E(token): use token as new CAS value (see metaget for detail)"
The order of returned flags follows the request ("it is returned in the
same order as they were in the original command"); W/X/Z come last, in
1.6.18's order (X before W, Z before X), which the differential cases pin.
"""

from metalib import Cases

MS = "ms $K 2 F7 T0\r\nhi\r\n"
MN = "MN\r\n"


class Golden:
    def __init__(self, case, expect, source):
        self.case = case
        self.expect = expect
        self.source = source


def build():
    cs = Cases()
    out = []

    def g(name, source, pairs, literal_cas=False):
        """pairs: (step, expected reply without the final MN)."""
        cs.add(name, *[p[0] for p in pairs], literal_cas=literal_cas)
        out.append(Golden(cs.all[-1], [p[1] + MN for p in pairs], source))

    # ---- E on ms
    src = "ms E(token): use token as new CAS value"
    g("golden_ms_E_sets_cas", src, [
        ("ms $K 2 E12345\r\nhi\r\n", "HD\r\n"),
        ("mg $K c v", "VA 2 c12345\r\nhi\r\n"),
        ("gets $K", "VALUE $K 0 2 12345\r\nhi\r\nEND\r\n"),
    ], literal_cas=True)
    g("golden_ms_E_c_returns_it", src, [
        ("ms $K 2 E555 c\r\nhi\r\n", "HD c555\r\n"),
    ], literal_cas=True)
    g("golden_ms_E_then_C", src + "; C compares with it", [
        ("ms $K 2 E1000\r\nhi\r\n", "HD\r\n"),
        ("ms $K 2 C1000 E2000 c\r\nho\r\n", "HD c2000\r\n"),
        ("ms $K 2 C1000\r\nhu\r\n", "EX\r\n"),
        ("mg $K v c", "VA 2 c2000\r\nho\r\n"),
    ], literal_cas=True)
    g("golden_ms_E_append", src + " (append mode modifies the item)", [
        (MS, "HD\r\n"),
        ("ms $K 1 MA E4242 c\r\n!\r\n", "HD c4242\r\n"),
        ("mg $K c v", "VA 3 c4242\r\nhi!\r\n"),
    ], literal_cas=True)
    g("golden_ms_E_not_stored", src + " (only when stored)", [
        (MS, "HD\r\n"),
        ("ms $K 2 ME E99\r\nho\r\n", "NS\r\n"),
        ("mg $K v", "VA 2\r\nhi\r\n"),
    ], literal_cas=True)
    g("golden_ms_E_bad_token", "E takes a numeric token (like C)", [
        (MS, "HD\r\n"),
        ("ms $K 2 Exyz\r\nho\r\n",
         "CLIENT_ERROR bad token in command line format\r\n"),
        ("mg $K v", "VA 2\r\nhi\r\n"),
    ])
    # ---- E on mg (vivify is the modification mg makes)
    src = "mg E(token): use token as new CAS value if item is modified"
    g("golden_mg_E_vivify", src, [
        ("mg $K N30 E777 c", "HD c777 W\r\n"),
        ("mg $K c", "HD c777 Z\r\n"),
    ], literal_cas=True)
    g("golden_mg_E_hit_unmodified", src + " (a plain hit modifies nothing)",
      [
          ("ms $K 2 E10\r\nhi\r\n", "HD\r\n"),
          ("mg $K E20 c v", "VA 2 c10\r\nhi\r\n"),
      ], literal_cas=True)
    # ---- E on md and ma
    src = "md E(token): use token as new CAS value"
    g("golden_md_I_E", src + " (I bumps the CAS: to the token)", [
        (MS, "HD\r\n"),
        ("md $K I E31337", "HD\r\n"),
        ("mg $K c", "HD c31337 X W\r\n"),
    ], literal_cas=True)
    src = "ma E(token): use token as new CAS value"
    g("golden_ma_E", src, [
        ("set $K 0 0 1\r\n5\r\n", "STORED\r\n"),
        ("ma $K E9000 c v", "VA 1 c9000\r\n6\r\n"),
        ("gets $K", "VALUE $K 0 1 9000\r\n6\r\nEND\r\n"),
    ], literal_cas=True)
    g("golden_ma_E_autoviv", src + " (with N, the created item)", [
        ("ma $K N0 J3 E8080 c v", "VA 1 c8080\r\n3\r\n"),
    ], literal_cas=True)
    # ---- md x
    src = "md x: removes the item value, but leaves the item in place"
    g("golden_md_x", src, [
        ("ms $K 5 F7 T0\r\nhello\r\n", "HD\r\n"),
        ("md $K x", "HD\r\n"),
        ("mg $K v s f t", "VA 0 s0 f7 t-1\r\n\r\n"),
    ])
    g("golden_md_x_keeps_ttl", src, [
        ("ms $K 5 T100\r\nhello\r\n", "HD\r\n"),
        ("md $K x", "HD\r\n"),
        ("mg $K v t", "VA 0 t100\r\n\r\n"),
    ])
    g("golden_md_x_miss", src + " (nothing to remove: NF)", [
        ("md $K x", "NF\r\n"),
        ("mg $K v", "EN\r\n"),
    ])
    g("golden_md_x_q_k_O", src + "; q hides HD", [
        (MS, "HD\r\n"),
        ("md $K x q", ""),
        ("md $K x k O5", "HD k$K O5\r\n"),
        ("mg $K v", "VA 0\r\n\r\n"),
    ])
    g("golden_md_x_C", src + "; C compares first", [
        ("ms $K 2 c\r\nhi\r\n", "HD c$1\r\n"),
        ("md $K x C$C1+1", "EX\r\n"),
        ("mg $K v", "VA 2\r\nhi\r\n"),
        ("md $K x C$C1", "HD\r\n"),
        ("mg $K v", "VA 0\r\n\r\n"),
    ])
    g("golden_md_x_then_append", src + " (the item is still there)", [
        (MS, "HD\r\n"),
        ("md $K x", "HD\r\n"),
        ("ms $K 2 MA\r\nho\r\n", "HD\r\n"),
        ("mg $K v f", "VA 2 f7\r\nho\r\n"),
    ])
    # ---- ms s
    src = "ms s: return the size of the stored item"
    g("golden_ms_s", src, [
        ("ms $K 5 s\r\nhello\r\n", "HD s5\r\n"),
    ])
    g("golden_ms_s_append", src + " (the new size on append)", [
        ("ms $K 5 s\r\nhello\r\n", "HD s5\r\n"),
        ("ms $K 3 MA s\r\n!!!\r\n", "HD s8\r\n"),
        ("ms $K 1 MP s c\r\n<\r\n", "HD s9 c$1\r\n"),
    ])
    g("golden_ms_s_order", src + "; flags in request order", [
        ("ms $K 2 k s O1 c\r\nhi\r\n", "HD k$K s2 O1 c$1\r\n"),
    ])
    g("golden_ms_s_q", src + "; q hides HD", [
        ("ms $K 2 s q\r\nhi\r\n", ""),
        ("mg $K s", "HD s2\r\n"),
    ])
    # ---- ms N in append mode
    src = "ms N(token): if in append mode, autovivify on miss with TTL"
    g("golden_ms_append_N_miss", src, [
        ("ms $K 2 MA N30\r\nhi\r\n", "HD\r\n"),
        ("mg $K v t", "VA 2 t30\r\nhi\r\n"),
    ])
    g("golden_ms_append_N_hit", src + " (a hit appends as usual)", [
        ("ms $K 2 T0\r\nhi\r\n", "HD\r\n"),
        ("ms $K 1 MA N30\r\n!\r\n", "HD\r\n"),
        ("mg $K v t", "VA 3 t-1\r\nhi!\r\n"),
    ])
    g("golden_ms_append_no_N_miss", "append mode without N: NS, as 1.6.18",
      [
          ("ms $K 2 MA\r\nhi\r\n", "NS\r\n"),
          ("mg $K v", "EN\r\n"),
      ])
    return GoldenList(out)


class GoldenList:
    def __init__(self, items):
        self.all = items
