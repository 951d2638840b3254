/*
 * The `stats` groups that list things one by one: `stats conns` (every
 * listening socket and client connection, walked across the workers) and
 * `stats cachedump` (live items, walked through the table), and the
 * argument checks of the groups that take arguments.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/clock.h"
#include "observe.h"
#include "stats_internal.h"

/* "tcp:127.0.0.1:11211", "tcp6:[::1]:11211", "udp:0.0.0.0:11211",
 * "unix:/path"; false when the socket has no address to show. */
static bool format_addr(const struct sockaddr_storage *ss, socklen_t len,
			bool udp, char *buf, size_t n)
{
	const char *kind = udp ? "udp" : "tcp";
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(buf, n, "%s:%s:%u", kind, host, ntohs(a->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(buf, n, "%s6:[%s]:%u", kind, host,
			 ntohs(a->sin6_port));
	} else if (ss->ss_family == AF_UNIX &&
		   len > offsetof(struct sockaddr_un, sun_path)) {
		const struct sockaddr_un *a = (const void *)ss;

		snprintf(buf, n, "unix:%.*s",
			 (int)(len - offsetof(struct sockaddr_un, sun_path)),
			 a->sun_path);
	} else {
		return false;
	}
	return true;
}

static bool sock_addr(int fd, bool peer, bool udp, char *buf, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &len)
		      : getsockname(fd, (struct sockaddr *)&ss, &len);

	return rc == 0 && format_addr(&ss, len, udp, buf, n);
}

static void put_conn_text(const struct stats_sink *k, int fd, const char *name,
			  const char *help, const char *v)
{
	char full[48];

	snprintf(full, sizeof(full), "%d:%s", fd, name);
	stats__put_text(k, full, help, v);
}

static void put_conn_u(const struct stats_sink *k, int fd, const char *name,
		       const char *help, uint64_t v)
{
	char full[48];

	snprintf(full, sizeof(full), "%d:%s", fd, name);
	stats__put_u(k, STATS_GAUGE, full, help, v);
}

static const char help_addr[] = "The connection's peer, or the listening "
				"socket's own address";
static const char help_listen[] = "The listening socket it came in by";
static const char help_state[] = "What the connection waits for";
static const char help_idle[] = "Seconds since its last request";
static const char help_thread[] = "The worker thread that serves it (0-based)";

struct row_ctx {
	const struct stats_sink *k;
	int64_t now;
};

/* A client connection's lines; its fd stays open meanwhile (the walk's
 * promise). */
static void conn_row(void *arg, const struct stats_conn_row *r)
{
	const struct row_ctx *x = arg;
	char addr[160];

	if (sock_addr(r->fd, true, false, addr, sizeof(addr)))
		put_conn_text(x->k, r->fd, "addr", help_addr, addr);
	if (sock_addr(r->fd, false, false, addr, sizeof(addr)))
		put_conn_text(x->k, r->fd, "listen_addr", help_listen, addr);
	put_conn_text(x->k, r->fd, "state", help_state, r->state);
	put_conn_u(x->k, r->fd, "secs_since_last_cmd", help_idle,
		   x->now > r->last_active ? (uint64_t)(x->now - r->last_active)
					   : 0);
	put_conn_u(x->k, r->fd, "thread", help_thread, r->thread);
}

/*
 * `stats conns`: the listening sockets (-U's UDP sockets among them), then
 * every client connection with a socket, as the net layer's walk gives
 * them (struct observe_net's conns).
 */
struct listener_ctx {
	const struct stats_sink *k;
	uint64_t idle; /* seconds since the start */
};

static void listener_rows(void *arg, int fd, bool udp)
{
	const struct listener_ctx *x = arg;
	char addr[160];

	if (sock_addr(fd, false, udp, addr, sizeof(addr)))
		put_conn_text(x->k, fd, "addr", help_addr, addr);
	/* A UDP socket is read, as memcached's UDP connections are: its
	 * datagrams are its requests. */
	put_conn_text(x->k, fd, "state", help_state,
		      udp ? "conn_read" : "conn_listening");
	put_conn_u(x->k, fd, "secs_since_last_cmd", help_idle, x->idle);
}

void stats__conns(struct observe *obs, const struct stats_query *q,
		  const struct stats_sink *k)
{
	int64_t now = clock_now_s();
	struct listener_ctx lx = { k, (uint64_t)(now - obs->started) };

	if (obs->net.listeners)
		obs->net.listeners(obs->net.arg, listener_rows, &lx);
	if (obs->net.conns)
		obs->net.conns(obs->net.arg, q->self, conn_row,
			       &(struct row_ctx){ .k = k, .now = now });
}

/* memcached bounds a cachedump's reply to 2 MiB. */
#define CACHEDUMP_MAX_BYTES (2u << 20)

struct dump_ctx {
	const struct stats_sink *k;
	uint64_t limit, n; /* limit 0: no limit */
	size_t bytes;
	bool full;
};

static void dump_item(const struct item *it, void *arg)
{
	struct dump_ctx *d = arg;
	/* the key, or its base64 and " b" (proto_text_key) */
	char name[PROTO_TEXT_KEY_MAX + 3], value[64], line[sizeof(name) + 80];
	bool b64;
	size_t kn;
	struct stats_entry e = { .name = name,
				 .line = line,
				 .help = "An item: value bytes, and expiry "
					 "time (unix seconds; 0: never)",
				 .kind = STATS_TEXT,
				 .s = value };
	int len;

	if (d->full)
		return;
	kn = proto_text_key(name, item_key(it), it->nkey, false, &b64);
	memcpy(name + kn, b64 ? " b" : "", b64 ? 3 : 1);
	snprintf(value, sizeof(value), "[%" PRIu32 " b; %" PRIu32 " s]",
		 item_nbytes(it),
		 atomic_load_explicit(&it->exptime, memory_order_relaxed));
	len = snprintf(line, sizeof(line), "ITEM %s %s", name, value);
	if (d->bytes + (size_t)len + 2 > CACHEDUMP_MAX_BYTES) {
		d->full = true;
		return;
	}
	d->bytes += (size_t)len + 2;
	d->k->emit(d->k->arg, &e);
	if (d->limit && ++d->n == d->limit)
		d->full = true;
}

/*
 * `stats cachedump <class> <limit>`: up to limit live items of the class
 * (0: all, within 2 MiB of reply, as memcached), in hash table order; the
 * only class is 1. memcached 1.6 lists only its cold LRU here; rhkvd lists
 * every live item (libmemcached's memcdump reads this).
 */
void stats__cachedump(struct observe *obs, const struct stats_query *q,
		      const struct stats_sink *k)
{
	struct dump_ctx d = { .k = k };
	uint64_t cls, cursor = 0;
	size_t pos = 0;

	if (!stats__arg_u64(q->args, q->nargs, &pos, &cls) ||
	    !stats__arg_u64(q->args, q->nargs, &pos, &d.limit) ||
	    cls != STATS_ITEM_CLASS)
		return;
	do
		cursor = cache_scan(obs->cache, cursor, 256, dump_item, &d);
	while (cursor && !d.full);
}

const char *stats_args_error(const struct stats_query *q)
{
	size_t pos = 0;
	uint64_t v;

	if (q->n == 6 && !memcmp(q->group, "detail", 6) &&
	    !(q->nargs == 4 && !memcmp(q->args, "dump", 4)))
		return "usage: stats detail on|off|dump";
	if (q->n == 9 && !memcmp(q->group, "cachedump", 9) &&
	    (!stats__arg_u64(q->args, q->nargs, &pos, &v) ||
	     !stats__arg_u64(q->args, q->nargs, &pos, &v)))
		return "bad command line";
	if (q->n == 7 && !memcmp(q->group, "hotkeys", 7))
		return stats__hotkeys_args_error(q);
	return NULL;
}
