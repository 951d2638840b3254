"""Differential cases: request sequences whose replies from the server under
test must match memcached 1.6.18's byte for byte (after metalib.Norm: CAS
values by order of appearance, times within a second, the me line's cls and
size). Nothing here states an expected reply: memcached is the oracle.

The cases written by hand are the lines of cases_diff.txt (its head says
how to read them); here are the ones computed: loops over flags, modes and
token counts, large values, and the generated matrices (mx_*: each command
with pairs of its flags in each item state; az_*: every character as a
flag of each command).

Each step (a string) is one write, "mn\\r\\n" appended; placeholders ($K
and the rest) are described in metalib. Keep to what 1.6.18 implements:
flags the current protocol.txt adds (E, md x, ms s, ms N in append mode)
belong in cases_golden.
"""

import os
import string

from metalib import Cases, Sleep

# Ways to create the item the case works on (@SET and so on in the table).
SET = "set $K 5 0 2\r\nhi\r\n"           # classic, flags 5, no expiry
MS = "ms $K 2 F7 T0\r\nhi\r\n"            # meta, flags 7
MS_TTL = "ms $K 2 F7 T100\r\nhi\r\n"      # meta, 100 s to live
NUM = "set $K 0 0 2\r\n10\r\n"             # a counter
SETUPS = {"SET": SET, "MS": MS, "MS_TTL": MS_TTL, "NUM": NUM}
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "cases_diff.txt")


def table_cases(cs, path=TABLE):
    """The cases of cases_diff.txt: NAME, then its steps, separated by
    tabs; a step is Python-escaped text (\\r \\n \\t \\xNN \\\\), @SET @MS
    @MS_TTL @NUM name the setups above, @sleep:SECONDS pauses; a name
    ending in + also runs one byte a write. # starts a comment line."""
    with open(path, encoding="ascii") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            name, *fields = line.split("\t")
            steps = []
            for fl in fields:
                if fl.startswith("@sleep:"):
                    steps.append(Sleep(float(fl[len("@sleep:"):])))
                elif fl.startswith("@"):
                    steps.append(SETUPS[fl[1:]])
                else:
                    steps.append(fl.encode("latin-1").decode(
                        "unicode_escape"))
            if not steps:
                raise ValueError("%s:%d: a case without steps" % (path, n))
            kw = {"bytewise": True} if name.endswith("+") else {}
            cs.add(name.rstrip("+"), *steps, **kw)


MG_FLAGS = ["b", "c", "f", "h", "k", "l", "O123", "Oabc", "q", "s", "t",
            "u", "v", "N30", "R30", "T30", "P/path", "L/x", "C1", "I"]


def mg_cases(cs):
    # Every flag alone, on a hit (classic set, meta set with a TTL) and on
    # a miss.
    for f in MG_FLAGS:
        slug = f[0] + ("tok" if len(f) > 1 else "")
        if f == "Oabc":
            slug = "Oalpha"
        key = "$BKT" if f == "b" else "$K"
        cs.add("mg_flag_%s_hit_set" % slug, SET, "mg %s %s" % (key, f),
               bytewise=f in ("v", "O123"))
        cs.add("mg_flag_%s_hit_ms_ttl" % slug, MS_TTL,
               "mg %s %s" % (key, f))
        cs.add("mg_flag_%s_miss" % slug, "mg %s %s" % (key, f))
        cs.add("mg_flag_%s_with_v_hit" % slug, MS_TTL,
               "mg %s v %s" % (key, f))
        cs.add("mg_flag_%s_with_v_miss" % slug, "mg %s v %s" % (key, f))
    # Combinations and orders.
    combos = [
        "v c f h k l O1 s t",
        "t s O1 l k h f c v",
        "k v",
        "v k",
        "O9 k v c",
        "c c",
        "q v k O5",
        "q k O5",
        "u h l",
        "v s f t c",
        "k O1 q",
        "N30 v c t",
        "v N30 t c k",
        "R30 v t c",
        "T60 t v",
        "t T60 v",
        "v T0 t",
        "b v k",
        "O1 O2",
        "k k",
        "v v",
        "q q",
        "N30 N40",
        "T1 T2",
        "P1 L2 v",
        "v P L",
    ]
    for i, fl in enumerate(combos):
        key = "$BKT" if fl.startswith("b") else "$K"
        cs.add("mg_combo_%02d_hit" % i, MS_TTL, "mg %s %s" % (key, fl),
               bytewise=i % 4 == 0)
        cs.add("mg_combo_%02d_miss" % i, "mg %s %s" % (key, fl))
    # Opaque tokens of 32 bytes (the most) and 33.
    cs.add("mg_opaque_32", MS, "mg $K v O" + "o" * 31)
    cs.add("mg_opaque_33", MS, "mg $K v O" + "o" * 32)
    cs.add("mg_opaque_33_miss", "mg $K v O" + "o" * 32)
    cs.add("mg_opaque_33_miss_q", "mg $K v q O" + "o" * 32)
    # More than 20 tokens (command, key, flags and one for the line end)
    # is too many: 16 flags after the key are the most.
    for n in (14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 30):
        fl = " ".join(["O%d" % i for i in range(1)] +
                      ["P%d" % i for i in range(n - 1)])
        cs.add("mg_tokens_%d" % n, MS, "mg $K v " + fl)
        cs.add("mg_tokens_%d_miss" % n, "mg $K v " + fl)
    # A base64 key of 252 characters (the decoded key would fit); one of
    # 248 (186 bytes decoded) is fine.
    cs.add("mg_b64_long", "mg %s b v" % ("QUFB" * 63))
    cs.add("mg_b64_key_248", "ms $BL248 2 b\r\nhi\r\n", "mg $BL248 b k v",
           "me $BL248 b", "md $BL248 b k q", "mg $BL248 b v")
    # Long tokens.
    cs.add("mg_token_long_k", MS, "mg $K k" + "x" * 1000 + " v")
    cs.add("mg_token_long_O", MS, "mg $K v O" + "x" * 1000)
    cs.add("ms_token_long_F", "ms $K 2 F" + "9" * 100 + "\r\nhi\r\n",
           "mg $K f")
    cs.add("ma_token_long_D", NUM, "ma $K v D" + "1" * 100)
    cs.add("mg_s_large", "ms $K 70000\r\n" + "q" * 70000 + "\r\n",
           "mg $K s", "mg $K v s")
    cs.add("mg_many_pipelined", MS, "".join(
        "mg $K v O%d\r\nmg $K2 O%d k\r\n" % (i, i) for i in range(50)))
    cs.add("mg_many_pipelined_q", MS, "".join(
        "mg $K q v O%d\r\nmg $K2 q O%d k\r\n" % (i, i) for i in range(50)))
    cs.add("quiet_many_misses", "".join("mg $K%d q v k\r\n" % (i % 10)
                                        for i in range(40)))
    # Long pipelines: 1,000 quiet gets (a few hits), 500 quiet sets, and
    # 4 MB of values to write back while more requests arrive.
    cs.add("pipeline_1000_quiet_mg", "ms $K3 1\r\nx\r\nms $K7 1\r\ny\r\n",
           "".join("mg $K%d q v k O%d\r\n" % (i % 10, i)
                   for i in range(1000)))
    cs.add("pipeline_500_quiet_ms", "".join(
        "ms $K%d 2 q T0 F%d\r\n%02d\r\n" % (i % 10, i, i % 100)
        for i in range(500)), "".join("mg $K%d v f\r\n" % i
                                      for i in range(10)))
    cs.add("pipeline_large_output", "ms $K 100000\r\n" + "L" * 100000 +
           "\r\n", "".join("mg $K v s O%d\r\n" % i for i in range(40)) +
           "md $K\r\nmg $K v\r\n")


def ms_cases(cs):
    # Modes.
    for m in "EAPRS":
        for lower in (False, True):
            mm = m.lower() if lower else m
            tag = m + ("_lower" if lower else "")
            cs.add("ms_mode_%s_miss" % tag, "ms $K 2 M%s\r\nhi\r\n" % mm,
                   "mg $K v f")
            cs.add("ms_mode_%s_hit" % tag, MS,
                   "ms $K 3 M%s F9 T50\r\nabc\r\n" % mm, "mg $K v f t")
            cs.add("ms_mode_%s_cas_ok" % tag, MS + "mg $K c",
                   "ms $K 3 M%s C$C1 c\r\nabc\r\n" % mm, "mg $K v c")
            cs.add("ms_mode_%s_cas_bad" % tag, MS + "mg $K c",
                   "ms $K 3 M%s C$C1+1000 c\r\nabc\r\n" % mm, "mg $K v c")
            cs.add("ms_mode_%s_cas_miss" % tag,
                   "ms $K 3 M%s C12345 c\r\nabc\r\n" % mm, "mg $K v c")
            cs.add("ms_mode_%s_q" % tag, MS,
                   "ms $K 3 M%s q\r\nabc\r\n" % mm,
                   "ms $K2 3 M%s q\r\nabc\r\n" % mm, "mg $K v\r\nmg $K2 v")
    # Values: every byte; large; over the item size limit (-I 1m).
    cs.add("ms_data_binary",
           "ms $K 256\r\n" + "".join(chr(i) for i in range(256)) + "\r\n",
           "mg $K v s", "get $K", bytewise=True)
    cs.add("ms_value_500k", "ms $K 500000\r\n" + "z" * 500000 + "\r\n",
           "mg $K s")
    cs.add("ms_too_large", MS, "ms $K 2000000\r\n" + "y" * 2000000 +
           "\r\n", "mg $K v")
    cs.add("ms_too_large_q", MS, "ms $K 2000000 q\r\n" + "y" * 2000000 +
           "\r\n", "mg $K v")
    cs.add("ms_too_large_then_mg", "ms $K 2000000 c k O1\r\n" +
           "y" * 2000000 + "\r\nmg $K v\r\n")
    # Opaque errors swallow the data block; too many tokens do not.
    cs.add("ms_opaque_32", "ms $K 2 O" + "p" * 31 + "\r\nhi\r\n")
    cs.add("ms_opaque_33", MS, "ms $K 2 O" + "p" * 32 + "\r\nho\r\n",
           "mg $K v")
    cs.add("ms_opaque_33_q", MS, "ms $K 2 q O" + "p" * 32 + "\r\nho\r\n",
           "mg $K v")
    cs.add("ms_b_key_too_long", "ms %s 2 b\r\nhi\r\n" % ("QUFB" * 63))
    for n in (15, 16, 17, 18, 19, 20, 21, 24):
        fl = " ".join("P%d" % i for i in range(n))
        cs.add("ms_tokens_%d" % n, MS, "ms $K 2 %s\r\nho\r\n" % fl,
               "mg $K v")


def md_cases(cs):
    cs.add("md_opaque_33", MS, "md $K O" + "o" * 32, "mg $K v")
    cs.add("md_opaque_33_q", MS, "md $K q O" + "o" * 32, "mg $K v")
    for n in (15, 16, 17, 18, 19, 20, 21, 24):
        cs.add("md_tokens_%d" % n, MS,
               "md $K " + " ".join("P%d" % i for i in range(n)), "mg $K v")


def ma_cases(cs):
    for m in ("I", "i", "+", "D", "d", "-", "X", "", "II"):
        tag = {"+": "plus", "-": "minus", "": "empty"}.get(m, m)
        if m in ("i", "d"):
            tag = m + "_lower"
        cs.add("ma_mode_%s" % tag, NUM, "ma $K M%s v D3" % m, "get $K")
    cs.add("ma_opaque_33", NUM, "ma $K v O" + "o" * 32, "get $K")
    for n in (15, 16, 17, 18, 19, 20, 21, 24):
        cs.add("ma_tokens_%d" % n, NUM,
               "ma $K v " + " ".join("P%d" % i for i in range(n)))


# States an item can be in before a generated case's command, as setup
# steps; the ms/ma/md cases then read the CAS with me (which, unlike mg,
# neither hands out a recache token nor marks the item fetched) so that $C1
# is the CAS (a miss has none).
STATES = {
    "hit": [MS_TTL],
    "classic": [SET],
    "miss": [],
    "stale": [MS, "md $K I"],
    "won": ["mg $K N30"],              # vivified, token sent: Z next
    "stalewon": [MS, "md $K I", "mg $K"],
    "expired": ["ms $K 2 T-1\r\nhi\r\n"],
    "counter": [NUM],
    "counterstale": [NUM, "md $K I"],
}
PROBE = "mg $K v c t f s"


def slug(flags):
    """A case name's part for a flag list: "C$C1 I" is "Ccas_I"."""
    return flags.replace("$C1", "cas").replace(" ", "_") or "none"


def matrix_cases(cs):
    """Generated combinations: each command with each pair of its flags in
    each item state, then a probe of the item."""
    mgf = ["v", "c", "f", "h", "k", "l", "O7", "q", "s", "t", "u", "N30",
           "R30", "T60"]
    for st in ("hit", "miss", "stale", "won"):
        for i, a in enumerate(mgf):
            for b in mgf[i + 1:]:
                cs.add("mx_mg_%s_%s_%s" % (st, a, b), *STATES[st],
                       "mg $K %s %s" % (a, b), PROBE)
    for st in ("classic", "stalewon", "expired"):
        for a in mgf:
            cs.add("mx_mg_%s_%s" % (st, a), *STATES[st], "mg $K %s" % a,
                   PROBE)
    modes = ["", "ME", "MA", "MP", "MR", "MS"]
    extras = ["", "c", "k O1", "q", "c q", "I", "C$C1 c", "C$C1 I", "T30 F3"]
    for st in ("hit", "miss", "stale", "won", "expired"):
        for m in modes:
            for x in extras:
                fl = " ".join(t for t in (m, x) if t)
                cs.add("mx_ms_%s_%s_%s" % (st, m or "none", slug(x)),
                       *STATES[st], "me $K", "ms $K 3 %s\r\nabc\r\n" % fl,
                       PROBE)
    mamodes = ["", "MI", "MD"]
    maextras = ["v", "q", "N0 v", "N0 J5 q v", "t v", "c k O1", "C$C1 v",
                "T30 t v", "D7 v"]
    for st in ("counter", "miss", "counterstale", "won", "classic",
               "expired"):
        for m in mamodes:
            for x in maextras:
                fl = " ".join(t for t in (m, x) if t)
                cs.add("mx_ma_%s_%s_%s" % (st, m or "none", slug(x)),
                       *STATES[st], "me $K", "ma $K %s" % fl, PROBE)
    mdextras = ["", "q", "I", "I q", "I T30", "k O1", "C$C1", "C$C1 I",
                "C$C1 q", "I k O2 T0"]
    for st in ("hit", "miss", "stale", "won", "stalewon", "expired"):
        for x in mdextras:
            cs.add("mx_md_%s_%s" % (st, slug(x)),
                   *STATES[st], "me $K", "md $K %s" % x, PROBE,
                   "mg $K c v")


# Flags the current protocol.txt adds (cases_golden): left out here.
NEW_FLAGS = {"mg": "E", "ms": "Es", "md": "Ex", "ma": "E", "me": ""}
FLAG_CHARS = (string.ascii_letters + string.digits +
              "!#%&*+-./:;<=>?@[]^_`{|}~,\"'()")


def alphabet_cases(cs):
    """Every letter, digit and punctuation mark as a flag of each command,
    bare and with a numeric token: which are refused, which ignored, which
    want a token, and what the item looks like after."""
    setups = {
        "mg": (MS_TTL, "mg $K %s"),
        "ms": (MS_TTL, "ms $K 3 %s\r\nabc\r\n"),
        "md": (MS_TTL, "md $K %s"),
        "ma": (NUM, "ma $K %s"),
        "me": (MS_TTL, "me $K %s"),
    }
    for cmd, (setup, req) in setups.items():
        for ch in FLAG_CHARS:
            if ch in NEW_FLAGS[cmd]:
                continue
            tag = ch if ch.isalnum() else "x%02x" % ord(ch)
            if ch.isalpha():
                tag += "_upper" if ch.isupper() else "_lower"
            cs.add("az_%s_%s" % (cmd, tag), setup, req % ch, PROBE)
            cs.add("az_%s_%s_token" % (cmd, tag), setup, req % (ch + "5"),
                   PROBE)


def build():
    cs = Cases()
    table_cases(cs)
    mg_cases(cs)
    ms_cases(cs)
    md_cases(cs)
    ma_cases(cs)
    matrix_cases(cs)
    alphabet_cases(cs)
    return cs
