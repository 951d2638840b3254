/*
 * rhkvd's credentials (auth.h): reading and checking the auth file, and
 * its reload, where the new list is published by an atomic pointer swap
 * and the old one freed after an RCU grace period.
 */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rcu.h"

struct entry {
	const char *user; /* NULL: the password form, any user */
	size_t ulen;
	const char *pass;
	size_t plen;
};

/* One version of the file's entries; they point into text, a copy of the
 * file. Never changed once published. */
struct list {
	char *text;
	size_t len;
	size_t n;
	struct entry e[];
};

struct auth {
	char *path; /* NULL: made from text, no reload */
	enum auth_form form;
	/* The entries checks read: published with a release store by
	 * auth_reload (paired with the acquire load in auth_check), freed
	 * after a grace period. */
	struct list *_Atomic list;
};

static void list_free(struct list *l)
{
	if (!l)
		return;
	explicit_bzero(l->text, l->len);
	free(l->text);
	explicit_bzero(l->e, l->n * sizeof(l->e[0]));
	free(l);
}

/* The file's name in messages. */
struct ctx {
	const char *label;
	char *err;
	size_t cap;
};

static struct list *fail(const struct ctx *x, size_t line, const char *why)
{
	if (line)
		snprintf(x->err, x->cap, "the auth file '%s': line %zu %s",
			 x->label, line, why);
	else
		snprintf(x->err, x->cap, "the auth file '%s' %s", x->label,
			 why);
	return NULL;
}

/* The password form: the first line, up to its "\r" or "\n". */
static struct list *parse_password(const struct ctx *x, struct list *l)
{
	size_t n = strcspn(l->text, "\r\n");

	if (n == 0)
		return fail(x, 0, "has no password on its first line");
	if (memchr(l->text, ' ', n)) {
		snprintf(x->err, x->cap,
			 "the password in '%s' has a space, which the text "
			 "protocol's auth cannot send",
			 x->label);
		return NULL;
	}
	l->e[0] = (struct entry){ NULL, 0, l->text, n };
	l->n = 1;
	return l;
}

/* One `user:password` line (its "\n" not in it): the password ends at a
 * "\r", as memcached reads it. */
static struct list *parse_user(const struct ctx *x, struct list *l, char *line,
			       size_t len, size_t lineno)
{
	char *colon = memchr(line, ':', len);
	char *cr;
	size_t plen;

	if (!colon)
		return fail(x, lineno, "is not user:password");
	cr = memchr(colon + 1, '\r', len - (size_t)(colon + 1 - line));
	plen = (size_t)((cr ? cr : line + len) - (colon + 1));
	if (colon == line)
		return fail(x, lineno, "has no user name");
	if (plen == 0)
		return fail(x, lineno, "has no password");
	if (memchr(line, ' ', (size_t)(colon - line) + 1 + plen))
		return fail(x, lineno,
			    "has a space, which the text protocol cannot "
			    "send");
	l->e[l->n++] =
		(struct entry){ line, (size_t)(colon - line), colon + 1, plen };
	return l;
}

/* The user-list form: every line not empty (nor only "\r"). */
static struct list *parse_users(const struct ctx *x, struct list *l)
{
	char *p = l->text, *end = l->text + l->len;
	size_t lineno = 0;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);

		lineno++;
		if (len && !(len == 1 && p[0] == '\r') &&
		    !parse_user(x, l, p, len, lineno))
			return NULL;
		p += len + 1;
	}
	return l;
}

/* Parses text (taken: freed on failure). */
static struct list *parse(const struct ctx *x, char *text, size_t len,
			  enum auth_form *form)
{
	size_t lines = 1, first = strcspn(text, "\n");
	struct list *l;

	if (memchr(text, '\0', len)) {
		free(text);
		return fail(x, 0, "has a NUL byte");
	}
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	l = calloc(1, sizeof(*l) + lines * sizeof(l->e[0]));
	if (!l) {
		free(text);
		return fail(x, 0, "cannot be read: out of memory");
	}
	l->text = text;
	l->len = len;
	*form = memchr(text, ':', first) ? AUTH_FORM_USERS : AUTH_FORM_PASSWORD;
	if (!(*form == AUTH_FORM_USERS ? parse_users(x, l)
				       : parse_password(x, l))) {
		list_free(l);
		return NULL;
	}
	return l;
}

/* The whole of fd, NUL-terminated, in a new buffer; NULL with errno. */
static char *read_all(int fd, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap), *p;
	ssize_t got;

	while (buf) {
		if (n > AUTH_FILE_MAX) {
			errno = EFBIG;
			break;
		}
		if (n + 1 == cap) {
			p = realloc(buf, cap * 2);
			if (!p)
				break;
			buf = p;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - 1 - n);
		if (got == 0) {
			buf[n] = '\0';
			*len = n;
			return buf;
		}
		if (got < 0 && errno != EINTR)
			break;
		if (got > 0)
			n += (size_t)got;
	}
	if (buf) {
		int e = errno;

		explicit_bzero(buf, cap);
		free(buf);
		errno = e;
	}
	return NULL;
}

/* Reads and parses path; its mode is checked on the open file. */
static struct list *load(const char *path, enum auth_form *form, char *err,
			 size_t cap)
{
	const struct ctx x = { path, err, cap };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *text, why[160];
	size_t len;

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, cap, "cannot read the auth file '%s': %s", path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (st.st_mode & (S_IROTH | S_IWOTH)) {
		close(fd);
		snprintf(why, sizeof(why),
			 "may be read or written by other users (mode %04o): "
			 "it holds passwords, chmod o-rw it",
			 (unsigned int)(st.st_mode & 07777));
		return fail(&x, 0, why);
	}
	text = read_all(fd, &len);
	close(fd);
	if (!text && errno == EFBIG)
		return fail(&x, 0, "is larger than 1 MiB");
	if (!text) {
		snprintf(err, cap, "cannot read the auth file '%s': %s", path,
			 strerror(errno));
		return NULL;
	}
	return parse(&x, text, len, form);
}

/* path as reloads read it: a relative path from the directory of the
 * start, since a daemon (-d) moves to "/". Symbolic links stay unresolved:
 * a mounted secret is often one whose target is replaced. */
static char *reload_path(const char *path)
{
	char *cwd, *abs;

	if (path[0] == '/' || !(cwd = getcwd(NULL, 0)))
		return strdup(path);
	if (asprintf(&abs, "%s/%s", cwd, path) < 0)
		abs = NULL;
	free(cwd);
	return abs;
}

static int make(struct auth **out, const char *path, struct list *l,
		enum auth_form form, char *err, size_t cap)
{
	struct auth *a = calloc(1, sizeof(*a));

	if (a && path && !(a->path = reload_path(path))) {
		free(a);
		a = NULL;
	}
	if (!a) {
		list_free(l);
		snprintf(err, cap, "out of memory");
		return -1;
	}
	a->form = form;
	atomic_init(&a->list, l);
	*out = a;
	return 0;
}

int auth_open(struct auth **out, const char *path, char *err, size_t cap)
{
	enum auth_form form;
	struct list *l = load(path, &form, err, cap);

	if (!l)
		return -1;
	return make(out, path, l, form, err, cap);
}

int auth_from_text(struct auth **out, const char *label, const char *text,
		   size_t len, char *err, size_t cap)
{
	const struct ctx x = { label, err, cap };
	enum auth_form form;
	char *copy = malloc(len + 1);
	struct list *l;

	if (!copy) {
		snprintf(err, cap, "out of memory");
		return -1;
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	l = parse(&x, copy, len, &form);
	if (!l)
		return -1;
	return make(out, NULL, l, form, err, cap);
}

int auth_reload(struct auth *a, char *err, size_t cap)
{
	enum auth_form form;
	struct list *l, *old;

	if (!a->path) {
		snprintf(err, cap, "the credentials have no file to reload");
		return -1;
	}
	if (!(l = load(a->path, &form, err, cap)))
		return -1;
	if (form != a->form) {
		list_free(l);
		snprintf(err, cap,
			 "the auth file '%s' changed form (%s): restart rhkvd "
			 "to change it",
			 a->path,
			 a->form == AUTH_FORM_USERS
				 ? "a password instead of user:password lines"
				 : "user:password lines instead of a password");
		return -1;
	}
	/* Release: a check that loads the new pointer sees its entries. */
	old = atomic_exchange_explicit(&a->list, l, memory_order_acq_rel);
	/* Checks that may still read the old entries end first. */
	rhkv_rcu_synchronize();
	list_free(old);
	return 0;
}

void auth_destroy(struct auth **a)
{
	if (!a || !*a)
		return;
	list_free(atomic_load_explicit(&(*a)->list, memory_order_relaxed));
	free((*a)->path);
	free(*a);
	*a = NULL;
}

enum auth_form auth_form(const struct auth *a)
{
	return a->form;
}

size_t auth_count(struct auth *a)
{
	size_t n;

	rhkv_rcu_read_lock();
	n = atomic_load_explicit(&a->list, memory_order_acquire)->n;
	rhkv_rcu_read_unlock();
	return n;
}

/* Non-zero unless given equals the stored bytes; the time depends on the
 * stored length only. */
static unsigned char differs(const char *stored, size_t slen, const char *given,
			     size_t glen)
{
	volatile unsigned char d = (unsigned char)(slen != glen);

	for (size_t i = 0; i < slen; i++)
		d |= (unsigned char)(stored[i] ^ (i < glen ? given[i] : 0));
	return d;
}

bool auth_check(struct auth *a, const char *user, size_t ulen, const char *pass,
		size_t plen)
{
	const struct list *l;
	unsigned char ok = 0;

	if (!pass)
		plen = 0;
	rhkv_rcu_read_lock();
	/* Acquire: pairs with auth_reload's exchange. */
	l = atomic_load_explicit(&a->list, memory_order_acquire);
	for (size_t i = 0; i < l->n; i++) {
		const struct entry *e = &l->e[i];
		unsigned char d = differs(e->pass, e->plen, pass, plen);

		if (e->user)
			d |= user ? differs(e->user, e->ulen, user, ulen) : 1;
		ok |= (unsigned char)(d == 0);
	}
	rhkv_rcu_read_unlock();
	return ok != 0;
}
