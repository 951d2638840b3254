/*
 * rhkvd: start-up (options, listeners, privileges, workers), the accept
 * loop on the main thread (every listener, or with --reuseport only the
 * unix socket's: each worker then accepts on its own TCP sockets), and an
 * orderly shutdown on SIGTERM/SIGINT/SIGUSR1 (which the shutdown command,
 * with -A, sends to the process), which seals --memory-file for the next
 * start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/thread.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "auth.h"
#include "common/log.h"
#include "conn.h"
#include "process.h"
#include "server.h"
#include "tls.h"

#define EXIT_OS_ERROR 71 /* EX_OSERR, as memcached on a failed bind */

/* -P: the pid file is ours to remove (not another server's). */
static bool pid_written;

/* A new connection: a slot, then a worker (round-robin); tls says which
 * listener it came from. */
static void accepted(struct server *srv, evutil_socket_t fd,
		     struct sockaddr *sa, bool tls)
{
	if (conn_admit(&srv->net, fd, sa))
		worker_hand_off(&srv->net.workers[srv->net.next_worker++ %
						  srv->net.nworkers],
				fd, tls);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *sa, int socklen, void *arg)
{
	(void)l;
	(void)socklen;
	accepted(arg, fd, sa, false);
}

static void on_accept_tls(struct evconnlistener *l, evutil_socket_t fd,
			  struct sockaddr *sa, int socklen, void *arg)
{
	(void)l;
	(void)socklen;
	accepted(arg, fd, sa, true);
}

/* -o sock_cookie_id: memcached marks its listening sockets (SO_MARK, for
 * firewall rules); as there, a refusal (no CAP_NET_ADMIN) is only logged. */
static void mark_socket(const struct server *srv, int fd)
{
	uint32_t mark = srv->cfg.sock_mark;

	if (mark && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)))
		log_warn("cannot set SO_MARK %u (-o sock_cookie_id): %s",
			 (unsigned int)mark, strerror(errno));
}

/* A socket of --reuseport's group, bound and listening. */
static int reuseport_socket(const struct server *srv, const struct sockaddr *sa,
			    int len)
{
	int one = 1;
	int fd = socket(sa->sa_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	mark_socket(srv, fd);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    bind(fd, sa, (socklen_t)len) || listen(fd, srv->cfg.backlog)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/*
 * --reuseport: one listening socket per worker on the same address, each
 * with SO_REUSEPORT, so that the kernel spreads new connections over them
 * (by a hash of the addresses and ports) and each worker accepts its own,
 * without the listener thread and the hand-off. The workers make their
 * listeners from these (worker.c).
 */
static int listen_reuseport(struct server *srv, const struct sockaddr *sa,
			    int len, const char *spec, bool tls)
{
	int n = srv->cfg.threads;
	int *fds = &srv->net.worker_listen_fd[srv->net.nworker_listen * n];
	int probe = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, i;

	/* SO_REUSEPORT would also let the group join another process's on
	 * this port (the same user's) and share its connections; a socket
	 * without it fails to bind where anything listens, as a plain
	 * listener does. */
	if (probe < 0 ||
	    setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(probe, sa, (socklen_t)len)) {
		log_error("cannot listen on %s: %s", spec, strerror(errno));
		if (probe >= 0)
			close(probe);
		return -1;
	}
	close(probe);
	for (i = 0; i < n; i++) {
		fds[i] = reuseport_socket(srv, sa, len);
		if (fds[i] < 0)
			break;
		srv->net.listen_fd[srv->net.nlisten_fd++] = fds[i];
	}
	if (i < n) {
		log_error("cannot listen on %s: %s", spec, strerror(errno));
		srv->net.nlisten_fd -= i;
		while (i > 0)
			close(fds[--i]);
		return -1;
	}
	srv->net.worker_listen_tls[srv->net.nworker_listen++] = tls;
	log_info("listening on %s%s, a socket per worker", spec,
		 tls ? " (TLS)" : "");
	return 0;
}

/* A host name of -l (memcached takes `-l localhost`): its first IPv4
 * address, or its first address. 0, or -1 when it has none. */
static int resolve(const char *addr, int port, struct sockaddr_storage *ss,
		   int *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res, *a, *pick = NULL;
	char service[16];
	int rc;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(addr, service, &hints, &res);
	if (rc) {
		log_error("cannot resolve listen address '%s': %s", addr,
			  gai_strerror(rc));
		return -1;
	}
	for (a = res; a && !pick; a = a->ai_next)
		if (a->ai_family == AF_INET)
			pick = a;
	if (!pick)
		pick = res;
	memcpy(ss, pick->ai_addr, pick->ai_addrlen);
	*len = (int)pick->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* A TCP listener on addr:port; TLS when tls. */
static int listen_tcp(struct server *srv, const char *addr, int port, bool tls)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	char spec[300];
	struct evconnlistener *l;

	snprintf(spec, sizeof(spec), strchr(addr, ':') ? "[%s]:%d" : "%s:%d",
		 addr, port);
	if (evutil_parse_sockaddr_port(spec, (struct sockaddr *)&ss, &len) &&
	    resolve(addr, port, &ss, &len))
		return -1;
	if (srv->cfg.reuseport)
		return listen_reuseport(srv, (struct sockaddr *)&ss, len, spec,
					tls);
	l = evconnlistener_new_bind(
		srv->base, tls ? on_accept_tls : on_accept, srv,
		LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
			LEV_OPT_CLOSE_ON_EXEC,
		srv->cfg.backlog, (struct sockaddr *)&ss, len);
	if (!l) {
		log_error("cannot listen on %s: %s", spec, strerror(errno));
		return -1;
	}
	mark_socket(srv, evconnlistener_get_fd(l));
	srv->net.listen_fd[srv->net.nlisten_fd++] = evconnlistener_get_fd(l);
	srv->listeners[srv->nlisteners++] = l;
	log_info("listening on %s%s", spec, tls ? " (TLS)" : "");
	return 0;
}

/* -U: a UDP socket on addr:port, which a worker will serve (udp.h). */
static int listen_udp(struct server *srv, const char *addr, int port)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss), one = 1, fd;
	char spec[300];

	snprintf(spec, sizeof(spec), strchr(addr, ':') ? "[%s]:%d" : "%s:%d",
		 addr, port);
	if (evutil_parse_sockaddr_port(spec, (struct sockaddr *)&ss, &len) &&
	    resolve(addr, port, &ss, &len))
		return -1;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, (socklen_t)len)) {
		log_error("cannot listen on UDP %s: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	mark_socket(srv, fd);
	srv->net.udp_fd[srv->net.nudp_fd++] = fd;
	srv->net.listen_fd[srv->net.nlisten_fd++] = fd;
	log_info("listening on UDP %s", spec);
	return 0;
}

static int listen_unix(struct server *srv, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct evconnlistener *l;
	mode_t old;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_error("unix socket path too long: %s", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	unlink(path); /* a stale socket from a previous run */
	old = umask(~srv->cfg.unix_mask & 0777);
	l = evconnlistener_new_bind(
		srv->base, on_accept, srv,
		LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, srv->cfg.backlog,
		(struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (!l) {
		log_error("cannot listen on %s: %s", path, strerror(errno));
		return -1;
	}
	srv->net.listen_fd[srv->net.nlisten_fd++] = evconnlistener_get_fd(l);
	srv->listeners[srv->nlisteners++] = l;
	log_info("listening on unix socket %s", path);
	return 0;
}

/* The uid the server runs as once started (-u), which must own the
 * memory file. */
static unsigned int server_uid(const char *user)
{
	struct passwd *pw;

	if (user && (getuid() == 0 || geteuid() == 0) && (pw = getpwnam(user)))
		return (unsigned int)pw->pw_uid;
	return (unsigned int)geteuid();
}

/* Says what the start found in the memory file. */
static void log_restore(const struct server *srv)
{
	struct cache_restore r;

	cache_get_restore(srv->cache, &r);
	if (r.slow_fs)
		log_warn("memory file %s is not on tmpfs: every write to the "
			 "cache reaches its filesystem; use tmpfs (or a DAX "
			 "file) for speed",
			 srv->cfg.memory_file);
	switch (r.how) {
	case CACHE_RESTORE_NEW:
		log_info("memory file %s: new, starting empty",
			 srv->cfg.memory_file);
		break;
	case CACHE_RESTORE_EMPTY:
		log_warn("memory file %s not restored, starting empty: %s",
			 srv->cfg.memory_file, r.why);
		break;
	case CACHE_RESTORE_RESTORED:
		log_info("memory file %s: restored %lu items (%lu large) from "
			 "%lu segments in %.3f s after %lld s down; skipped "
			 "%lu expired, %lu corrupt segments, %lu corrupt "
			 "large items",
			 srv->cfg.memory_file, r.items, r.large_items,
			 r.segments, r.seconds, (long long)r.down_seconds,
			 r.expired, r.corrupt_segments, r.corrupt_large);
		break;
	case CACHE_RESTORE_NONE:
		break;
	}
}

/* The cache, on anonymous memory or in --memory-file: 0, or an exit
 * code (64 when the file is refused: its mode, its owner). */
static int create_cache(struct server *srv)
{
	char err[300];
	bool refused = false;

	if (!srv->cfg.memory_file) {
		srv->cache = cache_create((unsigned int)srv->cfg.threads,
					  srv->cfg.memory_limit);
		return 0;
	}
	srv->cache = cache_create_file(
		(unsigned int)srv->cfg.threads, srv->cfg.memory_limit,
		&(struct cache_file_config){ .path = srv->cfg.memory_file,
					     .owner = server_uid(srv->cfg.user),
					     .item_max =
						     srv->cfg.max_item_size },
		err, sizeof(err), &refused);
	if (!srv->cache) {
		log_error("%s", err);
		return refused ? CONFIG_EXIT_USAGE : EXIT_OS_ERROR;
	}
	log_restore(srv);
	return 0;
}

static int drop_privileges(const char *user)
{
	struct passwd *pw;

	if (getuid() != 0 && geteuid() != 0) {
		if (user)
			log_warn("not root: ignoring -u %s", user);
		return 0;
	}
	if (!user) {
		log_warn("running as root; use -u USER to drop privileges");
		return 0;
	}
	pw = getpwnam(user);
	if (!pw) {
		log_error("unknown user '%s'", user);
		return -1;
	}
	if (setgid(pw->pw_gid) || initgroups(pw->pw_name, pw->pw_gid) ||
	    setuid(pw->pw_uid)) {
		log_error("cannot become '%s': %s", user, strerror(errno));
		return -1;
	}
	return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;

	(void)what;
	log_info("signal %d: shutting down", (int)sig);
	event_base_loopbreak(srv->base);
}

/* SIGHUP: the TLS certificate and key are read again (tls.h), and the
 * auth file (auth.h); a file that fails leaves the old one in use. */
static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
	struct server *srv = arg;
	char err[512];

	(void)sig;
	(void)what;
	if (srv->net.tls)
		tls_reload(srv->net.tls, &srv->cfg);
	if (!srv->auth)
		return;
	if (auth_reload(srv->auth, err, sizeof(err)))
		log_warn("auth: reload refused, the old users stay: %s", err);
	else
		log_info("auth: %zu %s reloaded from %s", auth_count(srv->auth),
			 auth_form(srv->auth) == AUTH_FORM_USERS ? "user(s)"
								 : "password",
			 srv->cfg.auth_file);
}

/* refresh_certs (session.h's tls_reload). */
static const char *reload_certs(void *arg)
{
	struct server *srv = arg;

	return tls_reload(srv->net.tls, &srv->cfg);
}

static int start(struct server *srv)
{
	int per = srv->cfg.reuseport ? srv->cfg.threads : 1;

	srv->env = (struct session_env){
		.cfg = &srv->cfg,
		.cache = srv->cache,
		.obs = &srv->obs,
		.auth = srv->auth,
		.tls_reload = srv->net.tls ? reload_certs : NULL,
		.tls_arg = srv,
	};
	srv->net.cfg = &srv->cfg;
	srv->net.env = &srv->env;
	srv->net.obs = &srv->obs;

	srv->net.listen_fd =
		calloc((size_t)(3 * srv->cfg.nlisten * per + 1), sizeof(int));
	srv->net.worker_listen_fd = calloc(
		(size_t)(2 * srv->cfg.nlisten * srv->cfg.threads), sizeof(int));
	if (!srv->net.listen_fd || !srv->net.worker_listen_fd) {
		log_error("out of memory at start-up");
		return EXIT_OS_ERROR;
	}
	/* Each -l address on its own port (HOST:PORT) or -p's (0: none),
	 * TLS with -Z but for notls: ones; --tls-port: a TLS listener on
	 * each address without a port of its own; -U: a UDP socket on each
	 * address. */
	for (int i = 0; i < srv->cfg.nlisten; i++) {
		int port = srv->cfg.listen_port[i] ? srv->cfg.listen_port[i]
						   : srv->cfg.port;

		if (port &&
		    listen_tcp(srv, srv->cfg.listen[i], port,
			       srv->cfg.tls_all && !srv->cfg.listen_notls[i]))
			return EXIT_OS_ERROR;
	}
	for (int i = 0; srv->cfg.tls_port && i < srv->cfg.nlisten; i++)
		if (!srv->cfg.listen_port[i] &&
		    listen_tcp(srv, srv->cfg.listen[i], srv->cfg.tls_port,
			       true))
			return EXIT_OS_ERROR;
	for (int i = 0; srv->cfg.udp_port && i < srv->cfg.nlisten; i++)
		if (listen_udp(srv, srv->cfg.listen[i], srv->cfg.udp_port))
			return EXIT_OS_ERROR;
	if (srv->cfg.unix_socket && listen_unix(srv, srv->cfg.unix_socket))
		return EXIT_OS_ERROR;
	if (metrics_start(&srv->obs, srv->base))
		return EXIT_OS_ERROR;
	/* As root, before privileges go: /run is root's. */
	if (srv->cfg.pid_file) {
		if (process_write_pid(srv->cfg.pid_file)) {
			log_error("cannot write the pid file %s: %s",
				  srv->cfg.pid_file, strerror(errno));
			return EXIT_OS_ERROR;
		}
		pid_written = true;
	}
	if (drop_privileges(srv->cfg.user))
		return EXIT_OS_ERROR;
	srv->sigterm = evsignal_new(srv->base, SIGTERM, on_signal, srv);
	srv->sigint = evsignal_new(srv->base, SIGINT, on_signal, srv);
	srv->sighup = evsignal_new(srv->base, SIGHUP, on_sighup, srv);
	/* memcached's signal for a stop that keeps the cache (-e). */
	srv->sigusr1 = evsignal_new(srv->base, SIGUSR1, on_signal, srv);
	if (!srv->sigterm || !srv->sigint || !srv->sighup || !srv->sigusr1 ||
	    event_add(srv->sigterm, NULL) || event_add(srv->sigint, NULL) ||
	    event_add(srv->sighup, NULL) || event_add(srv->sigusr1, NULL) ||
	    workers_start(&srv->net)) {
		log_error("cannot start: out of resources");
		return EXIT_OS_ERROR;
	}
	log_info("rhkvd %s ready: %d threads, %u MiB, max item %u bytes",
		 RHKV_VERSION, srv->cfg.threads,
		 (unsigned int)(srv->cfg.memory_limit >> 20),
		 srv->cfg.max_item_size);
	process_ready(srv->cfg.verbose > 0, srv->cfg.coredumps);
	event_base_dispatch(srv->base);
	return 0;
}

static void stop(struct server *srv)
{
	/* Stop accepting first, then let workers finish their replies (with
	 * --reuseport each worker closes its own sockets as it stops). */
	for (int i = 0; i < srv->nlisteners; i++)
		evconnlistener_free(srv->listeners[i]);
	srv->nlisteners = 0;
	metrics_stop(&srv->obs);
	if (srv->cfg.unix_socket)
		unlink(srv->cfg.unix_socket);
	if (srv->net.workers)
		workers_stop(&srv->net);
	/* --reuseport sockets no worker took over (a failed start). */
	for (int i = 0; i < srv->net.nworker_listen * srv->cfg.threads; i++)
		if (srv->net.worker_listen_fd[i] >= 0)
			close(srv->net.worker_listen_fd[i]);
	srv->net.nworker_listen = 0;
	/* The workers no longer read them. */
	for (int i = 0; i < srv->net.nudp_fd; i++)
		close(srv->net.udp_fd[i]);
	srv->net.nudp_fd = 0;
	if (srv->sigterm)
		event_free(srv->sigterm);
	if (srv->sigint)
		event_free(srv->sigint);
	if (srv->sighup)
		event_free(srv->sighup);
	if (srv->sigusr1)
		event_free(srv->sigusr1);
	/* Freeing the events gave the signals back their default action,
	 * which ends the process: a second SIGTERM from an impatient
	 * supervisor would then kill it in the middle of sealing the memory
	 * file. The stop is under way; these ask for nothing more. */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
}

int main(int argc, char **argv)
{
	static struct server srv;
	int64_t started;
	int rc;

	rc = config_parse(&srv.cfg, argc, argv);
	if (rc)
		return rc == 1 ? 0 : rc;
	rc = config_check_access(&srv.cfg);
	if (rc)
		return rc;
	/* Read as the user that starts rhkvd, before -d moves the process
	 * to /; a reload reads it as the user -u names. */
	if (config_has_auth(&srv.cfg)) {
		char err[512];

		if (auth_open(&srv.auth, srv.cfg.auth_file, err, sizeof(err))) {
			fprintf(stderr, "rhkvd: %s\n", err);
			return CONFIG_EXIT_USAGE;
		}
	}
	if (srv.cfg.coredumps && process_enable_coredumps()) {
		fprintf(stderr, "rhkvd: -r: cannot enable core files: %s\n",
			strerror(errno));
		return EXIT_OS_ERROR;
	}
	/* Before any thread: the child alone goes on. */
	if (srv.cfg.daemonize && process_daemonize()) {
		fprintf(stderr, "rhkvd: -d: cannot fork: %s\n",
			strerror(errno));
		return EXIT_OS_ERROR;
	}
	log_init("rhkvd", config_log_level(srv.cfg.verbose));
	for (int i = 0; i < srv.cfg.nnotes; i++)
		log_warn("%s", srv.cfg.notes[i]);
	if (srv.cfg.lock_memory && process_lock_memory())
		log_warn("-k: cannot lock memory (mlockall): %s; going on "
			 "without",
			 strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	rhkv_rcu_register_thread();
	if (evthread_use_pthreads()) {
		log_error("libevent has no pthreads support");
		return EXIT_OS_ERROR;
	}
	conn_budget_init(&srv.net.budget, srv.cfg.conn_memory);
	started = cache_now(); /* uptime counts a restore too */
	rc = create_cache(&srv);
	if (rc)
		return rc;
	if (srv.cache && observe_init(&srv.obs, &srv.cfg, srv.cache,
				      (unsigned int)srv.cfg.threads)) {
		log_error("out of memory at start-up");
		cache_destroy(srv.cache);
		return EXIT_OS_ERROR;
	}
	srv.obs.started = started;
	if (srv.cache) {
		cache_set_evict_hook(srv.cache, watch_evict, &srv.obs.watch);
		cache_set_evictions(srv.cache, !srv.cfg.disable_evictions);
		if (!cache_set_max_prefix_flushes(
			    srv.cache,
			    (unsigned int)srv.cfg.max_prefix_flushes)) {
			cache_destroy(srv.cache);
			srv.cache = NULL;
		}
	}
	srv.base = event_base_new();
	if (!srv.cache || !srv.base) {
		log_error("out of memory at start-up");
		if (srv.cache)
			cache_destroy(srv.cache);
		observe_destroy(&srv.obs);
		return EXIT_OS_ERROR;
	}
	if (srv.cfg.detail_at_start)
		stats_detail_enable(&srv.obs, true); /* -D */
	if (srv.cfg.sweep_off)
		cache_sweep_enable(srv.cache, false); /* -o no_lru_crawler */
	/* The files are read before privileges are dropped; a reload reads
	 * them as the user -u names. */
	if (config_tls_enabled(&srv.cfg) &&
	    !(srv.net.tls = tls_create(&srv.cfg)))
		rc = CONFIG_EXIT_USAGE;
	else
		rc = start(&srv);
	stop(&srv);
	/* Every worker has stopped: nothing writes any more. */
	if (srv.cfg.memory_file) {
		if (cache_seal(srv.cache))
			log_error(
				"memory file %s could not be sealed: the next "
				"start will be empty",
				srv.cfg.memory_file);
		else
			log_info("memory file %s sealed", srv.cfg.memory_file);
	}
	cache_destroy(srv.cache);
	tls_destroy(srv.net.tls);
	event_base_free(srv.base);
	free(srv.net.listen_fd);
	free(srv.net.worker_listen_fd);
	observe_destroy(&srv.obs);
	conn_budget_destroy(&srv.net.budget);
	rhkv_rcu_unregister_thread();
	libevent_global_shutdown();
	auth_destroy(&srv.auth);
	if (pid_written && unlink(srv.cfg.pid_file))
		log_warn("cannot remove the pid file %s: %s", srv.cfg.pid_file,
			 strerror(errno));
	if (!rc)
		log_info("stopped");
	return rc;
}
