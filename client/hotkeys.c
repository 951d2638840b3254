/*
 * rhkv_hotkeys(): the server's `stats hotkeys [n]` group, read with
 * rhkv_stats() and parsed into structs, binary keys decoded from the
 * base64 the server prints them in.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Decodes standard padded base64 in place; the length, or -1 if it is
 * not base64. */
static long b64_decode(char *s)
{
	size_t n = strlen(s), out = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (n % 4)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *p;

		if (s[i] == '=') {
			/* only at the end, at most two */
			if (i + 2 < n || (i + 1 < n && s[i + 1] != '='))
				return -1;
			break;
		}
		p = strchr(b64_alphabet, s[i]);
		if (!p || !*p)
			return -1;
		acc = acc << 6 | (uint32_t)(p - b64_alphabet);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			s[out++] = (char)(acc >> bits);
		}
	}
	s[out] = '\0';
	return (long)out;
}

/* "<rps> <share> <count> <err> exact|approx <key>[ b]" into *h. */
static int parse_key(const char *v, struct rhkv_hotkey *h)
{
	char exact[8];
	int off = 0;
	size_t kn;
	long dn;
	unsigned long long count, err;

	if (sscanf(v, "%lf %lf %llu %llu %7s %n", &h->rps, &h->share, &count,
		   &err, exact, &off) != 5 ||
	    !off)
		return RHKV_EPROTO;
	h->count = count;
	h->err = err;
	h->exact = !strcmp(exact, "exact");
	v += off;
	kn = strcspn(v, " ");
	if (!kn || (v[kn] && strcmp(v + kn, " b")))
		return RHKV_EPROTO;
	h->key = strndup(v, kn);
	if (!h->key)
		return RHKV_ENOMEM;
	h->klen = kn;
	if (v[kn]) { /* " b": a binary key, in base64 */
		dn = b64_decode(h->key);
		if (dn <= 0)
			return RHKV_EPROTO;
		h->klen = (size_t)dn;
	}
	return 0;
}

/* One STAT entry into *r: "sample", "seconds", "<class>:requests",
 * "<class>:error_bound", "<class>:<rank>"; others are skipped. */
static int parse_entry(const struct rhkv_stat *st, struct rhkv_hotkeys *r,
		       unsigned int n)
{
	static const char *const cls[2] = { "read:", "write:" };

	if (!strcmp(st->name, "sample"))
		r->sample = (uint32_t)strtoul(st->value, NULL, 10);
	else if (!strcmp(st->name, "seconds"))
		r->seconds = strtod(st->value, NULL);
	for (int c = 0; c < 2; c++) {
		size_t pre = strlen(cls[c]);
		const char *what = st->name + pre;
		char *end;
		unsigned long rank;

		if (strncmp(st->name, cls[c], pre))
			continue;
		if (!strcmp(what, "requests"))
			r->requests[c] = strtoull(st->value, NULL, 10);
		else if (!strcmp(what, "error_bound"))
			r->bound[c] = strtoull(st->value, NULL, 10);
		else {
			rank = strtoul(what, &end, 10);
			if (*end || rank != r->n[c] + 1 || rank > n)
				return RHKV_EPROTO;
			return parse_key(st->value, &r->top[c][r->n[c]++]);
		}
	}
	return 0;
}

int rhkv_hotkeys(rhkv *c, unsigned int n, struct rhkv_hotkeys **out)
{
	struct rhkv_hotkeys *r;
	struct rhkv_stat *st = NULL;
	size_t nst = 0;
	char group[32];
	int rc;

	if (!c || !out || n > 100)
		return RHKV_EINVAL;
	*out = NULL;
	if (!n)
		n = 10;
	snprintf(group, sizeof(group), "hotkeys %u", n);
	rc = rhkv_stats(c, group, &st, &nst);
	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	if (r) {
		r->top[0] = calloc(n, sizeof(*r->top[0]));
		r->top[1] = calloc(n, sizeof(*r->top[1]));
	}
	if (!r || !r->top[0] || !r->top[1])
		rc = RHKV_ENOMEM;
	for (size_t i = 0; !rc && i < nst; i++)
		rc = parse_entry(&st[i], r, n);
	rhkv_stats_free(st, nst);
	if (rc) {
		rhkv_hotkeys_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void rhkv_hotkeys_free(struct rhkv_hotkeys *r)
{
	if (!r)
		return;
	for (int c = 0; c < 2; c++) {
		for (size_t i = 0; r->top[c] && i < r->n[c]; i++)
			free(r->top[c][i].key);
		free(r->top[c]);
	}
	free(r);
}
