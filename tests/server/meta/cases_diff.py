"""Differential cases: request sequences whose replies from the server under
test must match memcached 1.6.18's byte for byte (after metalib.Norm: CAS
values by order of appearance, times within a second, the me line's cls and
size). Nothing here states an expected reply: memcached is the oracle.

Each step (a string) is one write, "mn\\r\\n" appended; placeholders ($K
and the rest) are described in metalib. Keep to what 1.6.18 implements:
flags the current protocol.txt adds (E, md x, ms s, ms N in append mode)
belong in cases_golden.
"""

from metalib import Cases, Sleep

# Ways to create the item the case works on.
SET = "set $K 5 0 2\r\nhi\r\n"           # classic, flags 5, no expiry
MS = "ms $K 2 F7 T0\r\nhi\r\n"            # meta, flags 7
MS_TTL = "ms $K 2 F7 T100\r\nhi\r\n"      # meta, 100 s to live
NUM = "set $K 0 0 2\r\n10\r\n"             # a counter

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
    # No flags at all.
    cs.add("mg_noflags_hit", SET, "mg $K")
    cs.add("mg_noflags_miss", "mg $K")
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
    # Pipelined hits and misses with opaques, quiet.
    cs.add("mg_pipeline_opaque", MS,
           "mg $K v O1\r\nmg $K2 v O2\r\nmg $K v q O3\r\nmg $K2 v q O4\r\n"
           "mg $K3 k O5\r\n", bytewise=True)
    cs.add("mg_pipeline_quiet_mixed", MS + "ms $K2 3\r\nabc\r\n",
           "mg $K q v k\r\nmg $K3 q v k\r\nmg $K2 q v k\r\nmg $K4 q\r\n"
           "mg $K5 q k O7\r\n")
    # hit-before and last-access.
    cs.add("mg_h_twice", MS, "mg $K h", "mg $K h", "mg $K h v")
    cs.add("mg_h_after_get", MS, "get $K", "mg $K h")
    cs.add("mg_h_after_u", MS, "mg $K u v", "mg $K h")
    cs.add("mg_h_u_h", MS, "mg $K h u", "mg $K h u", "mg $K h", "mg $K h")
    cs.add("mg_l_after_sleep", MS, Sleep(2.1), "mg $K l h", "mg $K l")
    cs.add("mg_l_u_after_sleep", MS, Sleep(2.1), "mg $K l u", "mg $K l u")
    # TTLs.
    cs.add("mg_t_no_expiry", MS, "mg $K t")
    cs.add("mg_t_ttl", MS_TTL, "mg $K t", "mg $K t v")
    cs.add("mg_T_sets_ttl", MS, "mg $K T100", "mg $K t", "mg $K T0 t",
           "mg $K t")
    cs.add("mg_T_negative_expires", MS, "mg $K T-1 v", "mg $K v")
    cs.add("mg_T_absolute", MS, "mg $K T$NOW+200 t", "mg $K t")
    cs.add("mg_T_absolute_past", MS, "mg $K T$NOW-200 v", "mg $K v")
    cs.add("mg_T_miss", "mg $K T100 t")
    cs.add("mg_expired_after_sleep", "ms $K 2 T1\r\nhi\r\n", Sleep(2.2),
           "mg $K v t", "mg $K v N30 t")
    cs.add("mg_T_then_touch", MS, "mg $K T50 t", "touch $K 300",
           "mg $K t")
    cs.add("mg_touch_then_T", MS, "touch $K 300", "mg $K t",
           "mg $K T20 t", "gat 400 $K", "mg $K t")
    cs.add("mg_T_then_gats", MS, "mg $K T50", "gats 0 $K", "mg $K t c")
    # Item size, client flags.
    cs.add("mg_s_f_values", "ms $K 5 F4294967295\r\nabcde\r\n",
           "mg $K s f v")
    cs.add("mg_f_zero", "ms $K 1 F0\r\nx\r\n", "mg $K f")
    cs.add("mg_empty_value", "ms $K 0\r\n\r\n", "mg $K v s f")
    # Keys: control bytes, lengths, spacing.
    cs.add("mg_key_250", "ms $L250 1\r\nx\r\n", "mg $L250 v k")
    cs.add("mg_key_251", "mg $L251 v")
    cs.add("mg_key_251_ms", "ms $L251 1\r\nx\r\n", "mg $L251 v")
    cs.add("mg_key_tab", "set $K\t 0 0 1\r\nx\r\n", "mg $K\t v k")
    cs.add("mg_key_ctrl", "ms $K\x01\x7f 1\r\nx\r\n", "mg $K\x01\x7f v k",
           "get $K\x01\x7f")
    cs.add("mg_key_high_bytes", "ms $K\xe9\xff 1\r\nx\r\n",
           "mg $K\xe9\xff v k")
    cs.add("mg_spaces", MS, "mg  $K   v    c  ", "mg $K v \r\n")
    cs.add("mg_bare_lf", MS, "mg $K v\nmg $K k\n")
    cs.add("mg_cr_in_line", MS, "mg $K v\r\r\n")
    cs.add("mg_leading_space", MS, " mg $K v")
    # Errors.
    cs.add("mg_no_key", "mg")
    cs.add("mg_no_key_space", "mg ")
    cs.add("mg_upper", MS, "MG $K v")
    cs.add("mg_unknown_flag", MS, "mg $K v !")
    cs.add("mg_unknown_flag_x", MS, "mg $K x")
    cs.add("mg_unknown_flag_a", MS, "mg $K a")
    cs.add("mg_unknown_flag_digit", MS, "mg $K 5")
    cs.add("mg_flag_word", MS, "mg $K value")
    cs.add("mg_flag_comma", MS, "mg $K v,c")
    cs.add("mg_dup_v", MS, "mg $K v v")
    cs.add("mg_dup_O", MS, "mg $K O1 O2")
    cs.add("mg_N_no_token", "mg $K N")
    cs.add("mg_N_bad_token", "mg $K Nabc")
    cs.add("mg_N_negative", "mg $K N-1 v", "mg $K v")
    cs.add("mg_T_no_token", MS, "mg $K T", "mg $K t")
    cs.add("mg_T_bad_token", MS, "mg $K T1x", "mg $K t")
    cs.add("mg_T_huge", MS, "mg $K T99999999999", "mg $K t")
    cs.add("mg_R_no_token", MS, "mg $K R")
    cs.add("mg_R_bad_token", MS, "mg $K Rxyz")
    cs.add("mg_C_bad_token", MS, "mg $K Cxyz")
    cs.add("mg_F_token", MS, "mg $K F5 v f")
    cs.add("mg_F_bad", MS, "mg $K Fx v")
    cs.add("mg_M_token", MS, "mg $K ME v")
    cs.add("mg_D_J_tokens", MS, "mg $K D5 J1 v")
    cs.add("mg_opaque_32", MS, "mg $K v O" + "o" * 31)
    cs.add("mg_opaque_33", MS, "mg $K v O" + "o" * 32)
    cs.add("mg_opaque_33_miss", "mg $K v O" + "o" * 32)
    cs.add("mg_opaque_33_miss_q", "mg $K v q O" + "o" * 32)
    cs.add("mg_opaque_empty", MS, "mg $K v O")
    cs.add("mg_opaque_empty_miss", "mg $K v O")
    cs.add("mg_k_empty_then_flag", MS, "mg $K kv")
    cs.add("mg_flag_with_junk", MS, "mg $K vjunk cjunk")
    # More than 20 tokens (command, key, flags and one for the line end)
    # is too many: 16 flags after the key are the most.
    for n in (14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 30):
        fl = " ".join(["O%d" % i for i in range(1)] +
                      ["P%d" % i for i in range(n - 1)])
        cs.add("mg_tokens_%d" % n, MS, "mg $K v " + fl)
        cs.add("mg_tokens_%d_miss" % n, "mg $K v " + fl)
    cs.add("mg_two_keys", MS, "mg $K $K2 v")
    cs.add("mg_error_then_more", MS, "mg $K !\r\nmg $K v\r\n")
    # base64 keys.
    cs.add("mg_b64_binary_key", "ms $BK 2 b\r\nhi\r\n", "mg $BK b v k",
           "mg $BK b k c", "me $BK b", bytewise=True)
    cs.add("mg_b64_text_key_set_text", SET, "mg $BKT b v k f")
    cs.add("mg_b64_text_key_set_b64", "ms $BKT 2 b\r\nhi\r\n",
           "get $K", "mg $K v k", "mg $BKT b k")
    cs.add("mg_b64_miss_k", "mg $BK b k v O1")
    cs.add("mg_b64_bad", "mg $K! b v")
    cs.add("mg_b64_bad_len", "mg abc b v")
    cs.add("mg_b64_bad_pad", "mg YW=J b v")
    cs.add("mg_b64_one_char", "mg Y b v")
    cs.add("mg_b64_empty_decode", "mg ==== b v")
    cs.add("mg_b64_long", "mg %s b v" % ("QUFB" * 63))
    cs.add("mg_b64_dup", "mg $BK b b v")
    # Not k or me: 1.6.18 does not mark a vivified item's key binary, so
    # k and me print its raw bytes (META-FINDINGS.md); ms b does mark it.
    cs.add("mg_b64_vivify", "mg $BK b N30 v", "mg $BK b v c",
           "mg $BKT b v")


def ms_cases(cs):
    cs.add("ms_basic", "ms $K 2\r\nhi\r\n", "mg $K v f t s",
           bytewise=True)
    cs.add("ms_then_get_gets", "ms $K 2 F9 T0\r\nhi\r\n", "get $K",
           "gets $K", "mg $K c")
    cs.add("ms_c", "ms $K 2 c\r\nhi\r\n", "mg $K c", "gets $K")
    cs.add("ms_c_twice", "ms $K 2 c\r\nhi\r\n", "ms $K 2 c\r\nho\r\n",
           "mg $K c")
    cs.add("ms_k", "ms $K 2 k\r\nhi\r\n")
    cs.add("ms_O", "ms $K 2 O77\r\nhi\r\n")
    cs.add("ms_all_return_flags", "ms $K 2 k O9 c\r\nhi\r\n",
           "ms $K 2 c O8 k\r\nhi\r\n")
    cs.add("ms_F", "ms $K 2 F123\r\nhi\r\n", "mg $K f", "get $K")
    cs.add("ms_F_max", "ms $K 2 F4294967295\r\nhi\r\n", "mg $K f")
    cs.add("ms_F_overflow", "ms $K 2 F4294967296\r\nhi\r\n", "mg $K f")
    cs.add("ms_F_negative", "ms $K 2 F-1\r\nhi\r\n", "mg $K f")
    cs.add("ms_F_alpha", "ms $K 2 Fx\r\nhi\r\n", "mg $K f")
    cs.add("ms_F_empty", "ms $K 2 F\r\nhi\r\n", "mg $K f")
    cs.add("ms_T", "ms $K 2 T100\r\nhi\r\n", "mg $K t")
    cs.add("ms_T_zero", "ms $K 2 T0\r\nhi\r\n", "mg $K t")
    cs.add("ms_T_negative", "ms $K 2 T-1\r\nhi\r\n", "mg $K v")
    cs.add("ms_T_absolute", "ms $K 2 T$NOW+500\r\nhi\r\n", "mg $K t")
    cs.add("ms_T_bad", "ms $K 2 Tx\r\nhi\r\n", "mg $K v")
    cs.add("ms_T_empty", "ms $K 2 T\r\nhi\r\n", "mg $K v")
    cs.add("ms_T_expires", "ms $K 2 T1\r\nhi\r\n", Sleep(2.2), "mg $K v",
           "ms $K 2 MA\r\nhi\r\n", "ms $K 2 ME\r\nho\r\n", "mg $K v")
    cs.add("ms_q_ok", "ms $K 2 q\r\nhi\r\n", "mg $K v")
    cs.add("ms_q_ns", "ms $K 2 q ME\r\nhi\r\n", "ms $K 2 q ME\r\nho\r\n")
    cs.add("ms_q_nf", "ms $K 2 q C5\r\nhi\r\n")
    cs.add("ms_q_ex", MS + "ms $K 2 q C1\r\nho\r\n", "mg $K v")
    cs.add("ms_q_k_O", "ms $K 2 q k O1\r\nhi\r\n",
           "ms $K 2 q k O2 MR\r\nho\r\n", "ms $K2 2 q k O3 MR\r\nho\r\n")
    cs.add("ms_b", "ms $BK 2 b\r\nhi\r\n", "mg $BK b v")
    cs.add("ms_b_k", "ms $BK 2 b k c\r\nhi\r\n")
    cs.add("ms_b_bad", "ms $K! 2 b\r\nhi\r\n")
    cs.add("ms_b_bad_then", "ms !!!! 2 b\r\nhi\r\nmg $K v\r\n")
    cs.add("ms_b_text", "ms $BKT 2 b k\r\nhi\r\n", "mg $K v k",
           "get $K")
    cs.add("ms_P_L_ignored", "ms $K 2 P/p L/l\r\nhi\r\n", "mg $K v")
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
    cs.add("ms_mode_bad_X", MS, "ms $K 2 MX\r\nho\r\n", "mg $K v")
    cs.add("ms_mode_bad_I", MS, "ms $K 2 MI\r\nho\r\n", "mg $K v")
    cs.add("ms_mode_empty", MS, "ms $K 2 M\r\nho\r\n", "mg $K v")
    cs.add("ms_mode_long", MS, "ms $K 2 MEE\r\nho\r\n", "mg $K v")
    cs.add("ms_mode_dup", MS, "ms $K 2 ME MA\r\nho\r\n", "mg $K v")
    cs.add("ms_append_twice", MS, "ms $K 1 MA\r\n1\r\n",
           "ms $K 1 MP\r\n0\r\n", "mg $K v s f t", "get $K")
    cs.add("ms_append_keeps_ttl_flags", MS_TTL,
           "ms $K 1 MA F1 T5\r\n!\r\n", "mg $K v f t")
    cs.add("ms_append_then_c", MS + "mg $K c",
           "ms $K 1 MA c\r\n!\r\n", "mg $K c")
    # CAS.
    cs.add("ms_C_ok", MS + "mg $K c", "ms $K 2 C$C1 c\r\nho\r\n",
           "mg $K c v")
    cs.add("ms_C_stale_cas", MS + "mg $K c", "ms $K 2 C$C1\r\nho\r\n",
           "ms $K 2 C$C1\r\nhu\r\n", "mg $K v")
    cs.add("ms_C_miss", "ms $K 2 C1\r\nhi\r\n", "mg $K v")
    cs.add("ms_C_zero", MS, "ms $K 2 C0\r\nho\r\n", "mg $K v")
    cs.add("ms_C_bad", MS, "ms $K 2 Cx\r\nho\r\n", "mg $K v")
    cs.add("ms_C_empty", MS, "ms $K 2 C\r\nho\r\n", "mg $K v")
    cs.add("ms_C_max", MS, "ms $K 2 C18446744073709551615\r\nho\r\n")
    cs.add("ms_C_overflow", MS, "ms $K 2 C18446744073709551616\r\nho\r\n")
    cs.add("ms_C_gets_cas", SET + "gets $K", "ms $K 2 C$C1 c\r\nho\r\n",
           "gets $K")
    cs.add("ms_c_then_cas_cmd", "ms $K 2 c\r\nhi\r\n",
           "cas $K 0 0 2 $C1\r\nho\r\n", "mg $K v c",
           "cas $K 0 0 2 $C1\r\nhu\r\n")
    # I: invalidation with an older CAS.
    cs.add("ms_I_older_cas", MS + "mg $K c",
           "ms $K 2 C$C1-1 I\r\nho\r\n", "mg $K v c", "mg $K v c",
           "ms $K 2\r\nhu\r\n", "mg $K v c")
    cs.add("ms_I_same_cas", MS + "mg $K c",
           "ms $K 2 C$C1 I\r\nho\r\n", "mg $K v c")
    cs.add("ms_I_newer_cas", MS + "mg $K c",
           "ms $K 2 C$C1+5 I\r\nho\r\n", "mg $K v c")
    cs.add("ms_I_no_C", MS, "ms $K 2 I\r\nho\r\n", "mg $K v c")
    cs.add("ms_I_miss", "ms $K 2 C5 I\r\nho\r\n", "mg $K v")
    cs.add("ms_I_after_md_I", MS, "md $K I", "mg $K c v",
           "ms $K 2 C$C1 I c\r\nho\r\n", "mg $K c v", "mg $K c v")
    cs.add("ms_clears_stale", MS, "md $K I", "mg $K v", "ms $K 2\r\nho\r\n",
           "mg $K v", "mg $K v")
    cs.add("ms_C_on_stale_item", MS, "md $K I", "mg $K c",
           "ms $K 2 C$C1\r\nho\r\n", "mg $K v c")
    # Data lengths and blocks.
    cs.add("ms_len_zero", "ms $K 0\r\n\r\n", "mg $K v s")
    cs.add("ms_len_missing", "ms $K\r\nhi\r\n", "mg $K v")
    cs.add("ms_len_negative", "ms $K -1\r\nhi\r\n", "mg $K v")
    cs.add("ms_len_alpha", "ms $K abc\r\nhi\r\n", "mg $K v")
    cs.add("ms_len_trailing", "ms $K 2x\r\nhi\r\n", "mg $K v")
    cs.add("ms_len_plus", "ms $K +2\r\nhi\r\n", "mg $K v")
    cs.add("ms_len_flag_first", "ms $K T0 2\r\nhi\r\n", "mg $K v")
    # 1.6.18 reads the length as 32 bits: 2^32 + 2 is 2 (stored).
    cs.add("ms_len_2pow32_plus2_quirk", "ms $K 4294967298\r\nhi\r\n",
           "mg $K v")
    cs.add("ms_len_int_max", "ms $K 2147483647\r\n", "mn")
    cs.add("ms_no_key", "ms\r\nhi\r\n")
    cs.add("ms_key_only_space", "ms \r\n")
    cs.add("ms_key_250", "ms $L250 2\r\nhi\r\n", "mg $L250 v")
    cs.add("ms_key_251", "ms $L251 2\r\nhi\r\n")
    cs.add("ms_bad_chunk_long", MS, "ms $K 2\r\nhiXX\r\n", "mg $K v")
    cs.add("ms_bad_chunk_lf", MS, "ms $K 2\r\nhi\n\r\n", "mg $K v")
    cs.add("ms_bad_chunk_cr", MS, "ms $K 2\r\nhi\rX", "mg $K v")
    cs.add("ms_bad_chunk_q", MS, "ms $K 2 q\r\nhiXX\r\n", "mg $K v")
    cs.add("ms_bad_chunk_then_more", "ms $K 2\r\nhiXXmg $K v\r\n",
           "mg $K v")
    cs.add("ms_short_data_eats_next",
           "ms $K 5\r\nhi\r\nmg $K2 v\r\n", "mg $K v")
    cs.add("ms_data_with_crlf", "ms $K 6\r\na\r\nb\r\n\r\n", "mg $K v s")
    cs.add("ms_data_mn_inside", "ms $K 8\r\n\r\nMN\r\nMN\r\n",
           "mg $K v\r\nget $K")
    cs.add("ms_data_binary",
           "ms $K 256\r\n" + "".join(chr(i) for i in range(256)) + "\r\n",
           "mg $K v s", "get $K", bytewise=True)
    cs.add("ms_data_va_inside", "ms $K 11\r\nVA 1\r\nx\r\nEN\r\n",
           "mg $K v")
    cs.add("ms_value_500k", "ms $K 500000\r\n" + "z" * 500000 + "\r\n",
           "mg $K s")
    cs.add("ms_too_large", MS, "ms $K 2000000\r\n" + "y" * 2000000 +
           "\r\n", "mg $K v")
    cs.add("ms_too_large_q", MS, "ms $K 2000000 q\r\n" + "y" * 2000000 +
           "\r\n", "mg $K v")
    cs.add("ms_too_large_then_mg", "ms $K 2000000 c k O1\r\n" +
           "y" * 2000000 + "\r\nmg $K v\r\n")
    # Flag errors: the data block is swallowed (or not).
    cs.add("ms_unknown_flag", MS, "ms $K 2 !\r\nho\r\n", "mg $K v")
    cs.add("ms_unknown_flag_v", MS, "ms $K 2 v\r\nho\r\n", "mg $K v")
    cs.add("ms_unknown_flag_S", MS, "ms $K 2 S2\r\nho\r\n", "mg $K v")
    cs.add("ms_known_get_flags", MS, "ms $K 2 t f h l u\r\nho\r\n",
           "mg $K v")
    cs.add("ms_flag_N_set_mode", "ms $K 2 N30\r\nho\r\n", "mg $K v t")
    cs.add("ms_dup_flag", MS, "ms $K 2 T1 T2\r\nho\r\n", "mg $K v")
    cs.add("ms_dup_c", MS, "ms $K 2 c c\r\nho\r\n", "mg $K v")
    cs.add("ms_opaque_32", "ms $K 2 O" + "p" * 31 + "\r\nhi\r\n")
    cs.add("ms_opaque_33", MS, "ms $K 2 O" + "p" * 32 + "\r\nho\r\n",
           "mg $K v")
    for n in (15, 16, 17, 18, 19, 20, 21, 24):
        fl = " ".join("P%d" % i for i in range(n))
        cs.add("ms_tokens_%d" % n, MS, "ms $K 2 %s\r\nho\r\n" % fl,
               "mg $K v")
    cs.add("ms_pipeline", "ms $K 1\r\na\r\nms $K2 1 q\r\nb\r\n"
           "ms $K3 1 O3\r\nc\r\nmg $K v\r\nmg $K2 v\r\nmg $K3 v\r\n",
           bytewise=True)


def md_cases(cs):
    cs.add("md_hit", MS, "md $K", "mg $K v", bytewise=True)
    cs.add("md_miss", "md $K")
    cs.add("md_q_hit", MS, "md $K q", "mg $K v")
    cs.add("md_q_miss", "md $K q")
    cs.add("md_k_O", MS, "md $K k O1", "md $K k O2")
    cs.add("md_O_only", "md $K O5")
    cs.add("md_b", "ms $BK 2 b\r\nhi\r\n", "md $BK b k", "md $BK b k")
    cs.add("md_b_text", SET, "md $BKT b", "get $K")
    cs.add("md_b_bad", "md $K! b")
    cs.add("md_C_ok", MS + "mg $K c", "md $K C$C1", "mg $K v")
    cs.add("md_C_bad", MS + "mg $K c", "md $K C$C1+1", "mg $K v")
    cs.add("md_C_miss", "md $K C5")
    cs.add("md_C_bad_token", MS, "md $K Cx", "mg $K v")
    cs.add("md_C_q_bad", MS + "mg $K c", "md $K C$C1+1 q", "mg $K v")
    cs.add("md_I", MS, "md $K I", "mg $K v c t", "mg $K v c t",
           "mg $K v c t", bytewise=True)
    cs.add("md_I_then_get", MS, "md $K I", "get $K", "gets $K",
           "mg $K v")
    cs.add("md_I_T", MS, "md $K I T30", "mg $K t v")
    cs.add("md_I_T_zero", MS_TTL, "md $K I T0", "mg $K t")
    cs.add("md_T_without_I", MS, "md $K T30", "mg $K v")
    cs.add("md_I_q", MS, "md $K I q", "mg $K v")
    cs.add("md_I_miss", "md $K I")
    cs.add("md_I_twice", MS, "md $K I", "mg $K c", "md $K I",
           "mg $K v c", "mg $K v c")
    cs.add("md_I_C_ok", MS + "mg $K c", "md $K I C$C1", "mg $K c")
    cs.add("md_I_C_bad", MS + "mg $K c", "md $K I C$C1+1", "mg $K c")
    cs.add("md_I_k_O", MS, "md $K I k O3")
    cs.add("md_I_then_md", MS, "md $K I", "md $K", "mg $K v")
    cs.add("md_I_N", MS, "md $K I", "mg $K v N30", "mg $K v N30")
    cs.add("md_I_R", MS_TTL, "md $K I", "mg $K v R300", "mg $K v R300")
    cs.add("md_I_me", MS, "md $K I", "me $K")
    cs.add("md_unknown_flag", MS, "md $K !", "mg $K v")
    cs.add("md_flag_v", MS, "md $K v", "mg $K v")
    cs.add("md_dup", MS, "md $K q q", "mg $K v")
    cs.add("md_dup_I", MS, "md $K I I", "mg $K v")
    cs.add("md_T_bad", MS, "md $K I Tx", "mg $K v")
    cs.add("md_no_key", "md")
    cs.add("md_key_251", "md $L251")
    cs.add("md_key_250", "ms $L250 1\r\nx\r\n", "md $L250 k")
    cs.add("md_opaque_33", MS, "md $K O" + "o" * 32, "mg $K v")
    cs.add("md_opaque_33_q", MS, "md $K q O" + "o" * 32, "mg $K v")
    cs.add("md_classic_noreply", "md $K noreply")
    for n in (15, 16, 17, 18, 19, 20, 21, 24):
        cs.add("md_tokens_%d" % n, MS,
               "md $K " + " ".join("P%d" % i for i in range(n)), "mg $K v")
    cs.add("md_then_delete", MS, "md $K", "delete $K")
    cs.add("delete_then_md", SET, "delete $K", "md $K")
    cs.add("md_pipeline_quiet", MS + "ms $K2 1\r\nx\r\n",
           "md $K q\r\nmd $K3 q\r\nmd $K2 q O1\r\nmd $K2 q O2\r\n")


def ma_cases(cs):
    cs.add("ma_miss", "ma $K")
    cs.add("ma_miss_q", "ma $K q")
    cs.add("ma_basic", NUM, "ma $K", "ma $K v", "get $K", bytewise=True)
    cs.add("ma_hit_q", NUM, "ma $K q", "ma $K q v", "mg $K v")
    cs.add("ma_N_create", "ma $K N0 v", "ma $K v", "mg $K v t f")
    cs.add("ma_N_J", "ma $K N0 J42 v", "ma $K N0 J99 v")
    cs.add("ma_N_ttl", "ma $K N100 v t", "mg $K t")
    cs.add("ma_N_J_decr", "ma $K N0 J42 MD v", "ma $K v MD")
    cs.add("ma_J_without_N", "ma $K J42 v")
    cs.add("ma_N_q", "ma $K N0 q", "mg $K v")
    cs.add("ma_D", NUM, "ma $K D5 v", "ma $K D0 v")
    cs.add("ma_D_big", NUM, "ma $K D18446744073709551615 v")
    cs.add("ma_D_overflow_token", NUM, "ma $K D18446744073709551616 v")
    cs.add("ma_D_bad", NUM, "ma $K Dx v")
    cs.add("ma_D_negative", NUM, "ma $K D-1 v")
    cs.add("ma_D_empty", NUM, "ma $K D v")
    cs.add("ma_J_bad", "ma $K N0 Jx v")
    cs.add("ma_N_bad", "ma $K Nx v")
    cs.add("ma_wrap", "set $K 0 0 20\r\n18446744073709551615\r\n",
           "ma $K v", "get $K")
    cs.add("ma_decr_floor", NUM, "ma $K MD D100 v", "get $K")
    for m in ("I", "i", "+", "D", "d", "-", "X", "", "II"):
        tag = {"+": "plus", "-": "minus", "": "empty"}.get(m, m)
        if m in ("i", "d"):
            tag = m + "_lower"
        cs.add("ma_mode_%s" % tag, NUM, "ma $K M%s v D3" % m, "get $K")
    cs.add("ma_decr_shrinks", "set $K 0 0 3\r\n100\r\n", "ma $K MD v",
           "get $K", "mg $K v s", "ma $K v", "get $K")
    cs.add("ma_incr_grows", "set $K 0 0 2\r\n99\r\n", "ma $K v", "get $K",
           "mg $K s")
    cs.add("ma_non_numeric", SET, "ma $K v", "ma $K q")
    cs.add("ma_leading_space_value", "set $K 0 0 3\r\n 12\r\n", "ma $K v")
    cs.add("ma_trailing_space_value", "set $K 0 0 3\r\n12 \r\n", "ma $K v")
    cs.add("ma_empty_value", "set $K 0 0 0\r\n\r\n", "ma $K v")
    cs.add("ma_long_number", "set $K 0 0 21\r\n123456789012345678901\r\n",
           "ma $K v")
    cs.add("ma_t", NUM, "ma $K t v", "ma $K T100 t v", "mg $K t")
    cs.add("ma_T_miss", "ma $K T100 v")
    cs.add("ma_T_bad", NUM, "ma $K Tx v")
    cs.add("ma_c", NUM, "ma $K c", "mg $K c", "ma $K c v")
    cs.add("ma_C_ok", NUM + "mg $K c", "ma $K C$C1 v c", "mg $K c")
    cs.add("ma_C_bad", NUM + "mg $K c", "ma $K C$C1+1 v", "get $K")
    cs.add("ma_C_bad_q", NUM + "mg $K c", "ma $K C$C1+1 q")
    cs.add("ma_C_miss", "ma $K C5 v")
    cs.add("ma_C_miss_N", "ma $K C5 N0 v")
    cs.add("ma_k_O", NUM, "ma $K k O1 v", "ma $K2 k O2", "ma $K2 k O3 q")
    cs.add("ma_all_flags", NUM, "ma $K O1 k t c v D2 T50")
    cs.add("ma_flags_reversed", NUM, "ma $K T50 D2 v c t k O1")
    cs.add("ma_b", "ms $BK 1 b\r\n5\r\n", "ma $BK b v k", "me $BK b")
    cs.add("ma_b_N", "ma $BK b N0 J7 v k")
    cs.add("ma_b_bad", "ma $K! b v")
    cs.add("ma_unknown_flag", NUM, "ma $K !")
    cs.add("ma_flag_f", NUM, "ma $K f v")
    cs.add("ma_flag_s", NUM, "ma $K s v")
    cs.add("ma_flag_h_l", NUM, "ma $K h l v")
    cs.add("ma_flag_u", NUM, "ma $K u v")
    cs.add("ma_flag_F", NUM, "ma $K F5 v", "mg $K f")
    cs.add("ma_flag_I", NUM, "ma $K I v")
    cs.add("ma_dup", NUM, "ma $K v v")
    cs.add("ma_no_key", "ma")
    cs.add("ma_key_251", "ma $L251 v")
    cs.add("ma_opaque_33", NUM, "ma $K v O" + "o" * 32, "get $K")
    for n in (15, 16, 17, 18, 19, 20, 21, 24):
        cs.add("ma_tokens_%d" % n, NUM,
               "ma $K v " + " ".join("P%d" % i for i in range(n)))
    cs.add("ma_on_stale", NUM, "md $K I", "ma $K v c", "mg $K v c")
    cs.add("ma_on_vivified", "mg $K N30", "ma $K v", "mg $K v")
    cs.add("ma_expired", "set $K 0 1 1\r\n5\r\n", Sleep(2.2), "ma $K v",
           "ma $K N0 J3 v")
    cs.add("ma_flags_kept", "set $K 77 0 1\r\n5\r\n", "ma $K", "mg $K f v")


def me_cases(cs):
    cs.add("me_hit", MS, "me $K", bytewise=True)
    cs.add("me_hit_ttl", MS_TTL, "me $K")
    cs.add("me_after_fetch", MS, "mg $K v", "me $K")
    cs.add("me_miss", "me $K")
    cs.add("me_no_key", "me")
    cs.add("me_key_251", "me $L251")
    cs.add("me_key_250", "ms $L250 1\r\nx\r\n", "me $L250")
    cs.add("me_b", "ms $BK 2 b\r\nhi\r\n", "me $BK b")
    cs.add("me_b_text_key", MS, "me $BKT b")
    cs.add("me_b_bad", "me $K! b")
    cs.add("me_b_miss", "me $BK b")
    cs.add("me_extra_flag", MS, "me $K v")
    cs.add("me_extra_tokens", MS, "me $K a b c")
    cs.add("me_after_sleep", MS, Sleep(2.1), "me $K")
    cs.add("me_stale", MS, "md $K I", "me $K")
    cs.add("me_vivified", "mg $K N30", "me $K")
    cs.add("me_cas_matches", MS, "mg $K c", "me $K", "gets $K")


def mn_cases(cs):
    cs.add("mn_alone", "mn", bytewise=True)
    cs.add("mn_extra_tokens", "mn foo bar")
    cs.add("mn_bare_lf", "mn\n")
    cs.add("mn_upper", "MN")
    cs.add("mn_many", "mn\r\nmn\r\nmn\r\n")
    cs.add("mn_no_space", "mnx")
    cs.add("meta_unknown_cmd", "mx $K")
    cs.add("meta_unknown_cmd_mz", "mz")
    cs.add("meta_m_alone", "m")
    cs.add("meta_three_letters", "mgg $K v")


def quiet_cases(cs):
    # What q hides and what it does not, terminated by mn.
    cs.add("quiet_all_commands",
           "ms $K 2 q\r\nhi\r\n"          # HD hidden
           "ms $K 2 q ME\r\nho\r\n"       # NS shown
           "ms $K 2 q C1\r\nho\r\n"       # EX shown
           "ms $K2 2 q C1\r\nho\r\n"      # NF shown
           "mg $K q v\r\n"                # VA shown
           "mg $K q\r\n"                  # HD (hit, no value)
           "mg $K3 q v\r\n"               # EN hidden
           "md $K3 q\r\n"                 # NF shown
           "ma $K3 q\r\n"                 # NF shown
           "md $K q\r\n"                  # HD hidden
           "mg $K q v\r\n", bytewise=True)
    cs.add("quiet_errors_shown", "mg $K q !\r\nms $K 2 q !\r\nhi\r\n"
           "md $K q !\r\nma $K q !\r\n")
    cs.add("quiet_vivify", "mg $K q N30\r\nmg $K q N30\r\nmg $K q N30 v\r\n")
    cs.add("quiet_stale", MS, "md $K q I\r\nmg $K q v\r\nmg $K q\r\n")
    cs.add("quiet_ma_counter", NUM, "ma $K q\r\nma $K q v\r\nma $K q N0\r\n"
           "mg $K v\r\n")
    cs.add("quiet_many_misses", "".join("mg $K%d q v k\r\n" % (i % 10)
                                        for i in range(40)))
    cs.add("quiet_k_O_miss", "mg $K q k O1\r\nmg $K k O2\r\n")
    cs.add("quiet_mn_only_after", "mg $K q", "mg $K q v")


def classic_cases(cs):
    cs.add("classic_set_mg", SET, "mg $K v f c s t", "gets $K")
    cs.add("classic_gets_cas_same_as_mg", SET, "gets $K", "mg $K c",
           "me $K")
    cs.add("classic_cas_with_mg_cas", SET, "mg $K c",
           "cas $K 1 0 2 $C1\r\nho\r\n", "mg $K v f c")
    cs.add("classic_cas_after_ms", "ms $K 2 c\r\nhi\r\n",
           "cas $K 1 0 2 $C1\r\nho\r\n", "gets $K")
    cs.add("classic_add_after_ms", MS, "add $K 0 0 2\r\nho\r\n",
           "mg $K v f")
    cs.add("classic_replace_after_ms", MS, "replace $K 3 0 2\r\nho\r\n",
           "mg $K v f")
    cs.add("classic_append_after_ms", MS, "append $K 0 0 2\r\nho\r\n",
           "prepend $K 0 0 1\r\n<\r\n", "mg $K v f s")
    cs.add("classic_incr_then_ma", NUM, "incr $K 5", "ma $K v",
           "decr $K 100", "ma $K v MD", "ma $K v")
    cs.add("classic_ma_then_incr", "ma $K N0 J5", "incr $K 1", "get $K")
    cs.add("classic_ma_cas_then_gets", NUM, "ma $K c", "gets $K")
    cs.add("classic_incr_cas_then_mg", NUM, "gets $K", "incr $K 1",
           "gets $K", "mg $K c")
    cs.add("classic_touch_vs_mg_T", MS, "touch $K 100", "mg $K t",
           "mg $K T200 t", "mg $K t", "touch $K 0", "mg $K t")
    cs.add("classic_gat_then_mg", MS, "gat 300 $K", "mg $K t v")
    cs.add("classic_delete_after_ms", MS, "delete $K", "mg $K v")
    cs.add("classic_md_then_get", SET, "md $K", "get $K")
    cs.add("classic_set_flags_mg_f", "set $K 4294967295 0 1\r\nx\r\n",
           "mg $K f")
    cs.add("classic_noreply_and_mn", "set $K 0 0 1 noreply\r\nx\r\n",
           "get $K")
    cs.add("classic_verbosity_pipelined", MS,
           "mg $K v\r\nverbosity 1\r\nmg $K v")
    cs.add("classic_mg_N_then_get", "mg $K N30", "get $K", "gets $K")
    cs.add("classic_mg_N_then_add", "mg $K N30", "add $K 0 0 2\r\nhi\r\n",
           "mg $K v")
    cs.add("classic_mg_N_then_set", "mg $K N30 c", "set $K 0 0 2\r\nhi\r\n",
           "mg $K v c")
    cs.add("classic_md_I_then_set", MS, "md $K I", "set $K 0 0 2\r\nho\r\n",
           "mg $K v")
    cs.add("classic_md_I_then_touch", MS, "md $K I", "touch $K 50",
           "mg $K v t")
    cs.add("classic_md_I_then_incr", NUM, "md $K I", "incr $K 1",
           "mg $K v")
    cs.add("classic_md_I_then_append", MS, "md $K I",
           "append $K 0 0 1\r\n!\r\n", "mg $K v")
    cs.add("classic_interleaved_pipeline", MS,
           "get $K\r\nmg $K v\r\nset $K2 0 0 1\r\nx\r\nmg $K2 v k\r\n"
           "gets $K2\r\nmd $K2\r\ndelete $K2\r\n", bytewise=True)


def swr_cases(cs):
    # Stale-while-revalidate and recache flows.
    cs.add("swr_md_I_X_W_then_Z", MS, "md $K I", "mg $K v c",
           "mg $K v c", "mg $K c t", bytewise=True)
    cs.add("swr_md_I_recache_ms", MS, "md $K I", "mg $K v c",
           "ms $K 2 C$C1\r\nho\r\n", "mg $K v c")
    cs.add("swr_md_I_recache_with_I", MS, "md $K I", "mg $K v c",
           "ms $K 2 C$C1 I\r\nho\r\n", "mg $K v c")
    cs.add("swr_md_I_ms_old_cas", MS + "mg $K c", "md $K I",
           "ms $K 2 C$C1\r\nho\r\n", "ms $K 2 C$C1 I\r\nho\r\n",
           "mg $K v c")
    cs.add("swr_N_miss_W_then_Z", "mg $K v N30 t", "mg $K v N30 t",
           "mg $K v t", "ms $K 2\r\nhi\r\n", "mg $K v t N30")
    cs.add("swr_N_hit_no_W", MS, "mg $K v N30")
    cs.add("swr_N_zero_ttl", "mg $K v N0 t", "mg $K t")
    cs.add("swr_N_then_md_I", "mg $K N30", "md $K I", "mg $K v", "mg $K v")
    cs.add("swr_N_then_ms_C", "mg $K N30 c", "ms $K 2 C$C1\r\nhi\r\n",
           "mg $K v c")
    cs.add("swr_N_then_ma", "mg $K N30", "ma $K v")
    cs.add("swr_N_k_O", "mg $K N30 k O1", "mg $K N30 k O2 q")
    cs.add("swr_R_below", "ms $K 2 T10\r\nhi\r\n", "mg $K v R30",
           "mg $K v R30", "mg $K v", "ms $K 2 T10\r\nhi\r\n",
           "mg $K v R30")
    cs.add("swr_R_above", "ms $K 2 T100\r\nhi\r\n", "mg $K v R30")
    cs.add("swr_R_equal", "ms $K 2 T30\r\nhi\r\n", "mg $K v R30")
    cs.add("swr_R_no_ttl", MS, "mg $K v R30")
    cs.add("swr_R_miss", "mg $K v R30")
    cs.add("swr_R_and_N_miss", "mg $K v R30 N30", "mg $K v R30 N30")
    cs.add("swr_R_then_T", "ms $K 2 T10\r\nhi\r\n", "mg $K R30 T100 t",
           "mg $K R30 t")
    cs.add("swr_T_then_R", "ms $K 2 T10\r\nhi\r\n", "mg $K T100 R30 t",
           "mg $K R30 t")
    cs.add("swr_stale_R", "ms $K 2 T10\r\nhi\r\n", "md $K I",
           "mg $K v R30", "mg $K v R30")
    cs.add("swr_W_Z_with_q", "mg $K q N30 v", "mg $K q N30 v")
    cs.add("swr_flag_order", "ms $K 2 T10\r\nhi\r\n", "md $K I",
           "mg $K R30 c k O1 t v", "mg $K O2 t k R30")
    cs.add("swr_md_I_T_expire", MS, "md $K I T1", Sleep(2.2), "mg $K v")
    cs.add("swr_vivify_expire", "mg $K N1", Sleep(2.2), "mg $K v N30")
    cs.add("swr_ms_I_plain_item", MS, "ms $K 2 I\r\nho\r\n", "mg $K v")


def more_cases(cs):
    # Flags that every command ignores (proxy hints) and odd spacing.
    cs.add("ignored_P_L_all", NUM, "ma $K P1 L2 v", "md $K P1 L2 q",
           "mg $K P L v", "ms $K 1 P L\r\n1\r\n", "me $K P L")
    cs.add("ms_spaces", "ms  $K   2   T0  \r\nhi\r\n", "mg $K v")
    cs.add("ms_bare_lf", "ms $K 2\nhi\r\n", "mg $K v")
    cs.add("md_spaces", MS, "md   $K   q  ", "mg $K v")
    cs.add("ma_spaces", NUM, "ma  $K  v  ", "get $K")
    # ms with a zero length: its terminator is the data block.
    cs.add("ms_len_zero_bad_terminator", "ms $K 0\r\nxy\r\n", "mg $K v")
    # The data block may hold anything, a request included.
    cs.add("ms_data_is_request", "ms $K 10\r\nmg $K v\r\n\r\n",
           "mg $K v")
    cs.add("ms_data_nul", "ms $K 3\r\na\x00b\r\n", "mg $K v s")
    cs.add("ms_data_only_crlf", "ms $K 2\r\n\r\n\r\n", "mg $K v")
    cs.add("ms_binary_b64_key_binary_value",
           "ms $BK 4 b F3\r\n\x00\r\n\xff\r\n", "mg $BK b v f k s")
    # Flags after an error on the same line do not matter.
    cs.add("ms_error_then_valid_flags", MS, "ms $K 2 ! c k\r\nho\r\n",
           "mg $K v")
    cs.add("ms_bad_b64_q", "ms $K! 2 b q\r\nhi\r\n", "mg $K v")
    cs.add("ms_b_key_too_long", "ms %s 2 b\r\nhi\r\n" % ("QUFB" * 63))
    cs.add("ms_opaque_33_q", MS, "ms $K 2 q O" + "p" * 32 + "\r\nho\r\n",
           "mg $K v")
    cs.add("ms_mode_E_T", "ms $K 2 ME T100\r\nhi\r\n", "mg $K t v")
    cs.add("ms_mode_R_keeps_cas_rule", MS + "mg $K c",
           "ms $K 2 MR c\r\nho\r\n", "mg $K c")
    cs.add("ms_mode_S_explicit_C", MS + "mg $K c",
           "ms $K 2 MS C$C1 q\r\nho\r\n", "ms $K 2 MS C$C1 q\r\nhu\r\n",
           "mg $K v")
    cs.add("ms_mode_E_C", "ms $K 2 ME C1\r\nhi\r\n", "mg $K v")
    cs.add("ms_mode_E_I", "ms $K 2 ME I\r\nhi\r\n", "mg $K v")
    cs.add("ms_mode_A_I_older", MS + "mg $K c",
           "ms $K 1 MA C$C1-1 I\r\n!\r\n", "mg $K v c")
    cs.add("ms_mode_P_stale_item", MS, "md $K I",
           "ms $K 1 MP\r\n<\r\n", "mg $K v")
    cs.add("ms_mode_A_vivified", "mg $K N30", "ms $K 2 MA\r\nhi\r\n",
           "mg $K v t")
    cs.add("ms_F_T_then_modes", "ms $K 2 F1 T100\r\nhi\r\n",
           "ms $K 2 MR F2\r\nho\r\n", "mg $K f t v")
    # mg: h after a miss that vivified; t after T on a vivified item.
    cs.add("mg_vivified_h_t", "mg $K N30 h t", "mg $K h t s f v")
    cs.add("mg_vivified_T", "mg $K N30", "mg $K T100 t")
    cs.add("mg_N_T_miss", "mg $K N30 T100 t")
    cs.add("mg_T_N_miss", "mg $K T100 N30 t")
    cs.add("mg_u_T", MS, "mg $K u T100 t h", "mg $K h t")
    cs.add("mg_O_special", MS, "mg $K O:a/b-c_d", "mg $K2 O:a/b-c_d")
    cs.add("mg_k_b_text_item", MS, "mg $BKT b k", "mg $BKT b k c O1")
    cs.add("mg_s_large", "ms $K 70000\r\n" + "q" * 70000 + "\r\n",
           "mg $K s", "mg $K v s")
    cs.add("mg_many_pipelined", MS, "".join(
        "mg $K v O%d\r\nmg $K2 O%d k\r\n" % (i, i) for i in range(50)))
    cs.add("mg_many_pipelined_q", MS, "".join(
        "mg $K q v O%d\r\nmg $K2 q O%d k\r\n" % (i, i) for i in range(50)))
    # md with I and C on a stale item; md x-like flags left out (golden).
    cs.add("md_I_stale_C", MS, "md $K I", "mg $K c", "md $K C$C1",
           "mg $K v")
    cs.add("md_I_then_ms_I", MS + "mg $K c", "md $K I",
           "ms $K 2 C$C1 I\r\nho\r\n", "mg $K v c")
    cs.add("md_q_k_O_hit", MS, "md $K q k O1", "mg $K v")
    cs.add("md_b_k_text_item", SET, "md $BKT b k")
    # ma more.
    cs.add("ma_N_J_max", "ma $K N0 J18446744073709551615 v", "ma $K v")
    cs.add("ma_J_overflow", "ma $K N0 J18446744073709551616 v")
    cs.add("ma_N_T", "ma $K N50 T100 t v", "mg $K t")
    cs.add("ma_N_existing", NUM, "ma $K N100 J5 t v")
    cs.add("ma_decr_zero", "set $K 0 0 1\r\n0\r\n", "ma $K MD v",
           "ma $K M- D0 v")
    cs.add("ma_q_v_miss_N", "ma $K q v N0 J9", "mg $K v")
    cs.add("ma_q_EX_shown", NUM + "mg $K c", "ma $K q C$C1+1 v")
    cs.add("ma_C_I_stale", NUM, "md $K I", "mg $K c", "ma $K C$C1 v c",
           "mg $K c")
    cs.add("ma_value_20_digits", "set $K 0 0 20\r\n18446744073709551614\r\n",
           "ma $K v", "ma $K v")
    cs.add("ma_value_with_letters", "set $K 0 0 3\r\n1a2\r\n", "ma $K v")
    cs.add("ma_value_negative", "set $K 0 0 2\r\n-1\r\n", "ma $K v")
    cs.add("ma_after_append", NUM, "append $K 0 0 1\r\n5\r\n", "ma $K v",
           "mg $K s v")
    cs.add("ma_binary_value", "set $K 0 0 3\r\n1\x002\r\n", "ma $K v")
    # Classic after meta, more.
    cs.add("classic_gets_after_ma_c", "ma $K N0 J1 c", "gets $K",
           "ma $K c", "gets $K")
    cs.add("classic_cas_on_vivified", "mg $K N30 c",
           "cas $K 0 0 2 $C1\r\nhi\r\n", "mg $K v c")
    cs.add("classic_touch_on_stale", MS, "md $K I", "touch $K 100",
           "mg $K t v")
    cs.add("classic_gat_on_vivified", "mg $K N30", "gat 100 $K",
           "mg $K t v")
    cs.add("classic_delete_noreply_md", MS, "delete $K noreply\r\nmd $K")
    cs.add("classic_verbosity_between", "mg $K q v\r\nverbosity 1\r\n"
           "mg $K q v\r\n", "mn")
    cs.add("classic_get_b64_stored_key", "ms $BK 2 b\r\nhi\r\n",
           "mg $BK b k v")


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
                cs.add("mx_ms_%s_%s_%s" % (st, m or "none",
                                           x.replace(" ", "_") or "none"),
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
                cs.add("mx_ma_%s_%s_%s" % (st, m or "none",
                                           x.replace(" ", "_")),
                       *STATES[st], "me $K", "ma $K %s" % fl, PROBE)
    mdextras = ["", "q", "I", "I q", "I T30", "k O1", "C$C1", "C$C1 I",
                "C$C1 q", "I k O2 T0"]
    for st in ("hit", "miss", "stale", "won", "stalewon", "expired"):
        for x in mdextras:
            cs.add("mx_md_%s_%s" % (st, x.replace(" ", "_") or "none"),
                   *STATES[st], "me $K", "md $K %s" % x, PROBE,
                   "mg $K c v")


def build():
    cs = Cases()
    mn_cases(cs)
    mg_cases(cs)
    ms_cases(cs)
    md_cases(cs)
    ma_cases(cs)
    me_cases(cs)
    quiet_cases(cs)
    classic_cases(cs)
    swr_cases(cs)
    more_cases(cs)
    matrix_cases(cs)
    return cs
