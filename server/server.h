/*
 * The daemon's state, which the top (main.c) sets up and takes down: the
 * settings, the cache, and each layer's part, handed to that layer: the
 * observe state (observe.h), the sessions' env (session.h), the net
 * layer's workers and sockets (net.h). Passed around explicitly (no
 * global); no layer below the top includes this file.
 */
#ifndef RHKV_SERVER_SERVER_H
#define RHKV_SERVER_SERVER_H

#include <event2/event.h>
#include <event2/listener.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "cache.h"
#include "config.h"
#include "net.h"
#include "observe.h"
#include "session.h"

struct server {
	struct config cfg;
	struct cache *cache;
	struct event_base *base; /* listeners and signals */
	/* The listener thread's: every TCP listener, or with --reuseport
	 * only the unix socket's (the kernel cannot spread those). */
	struct evconnlistener *listeners[2 * CONFIG_MAX_LISTEN + 1];
	int nlisteners;
	struct event *sigterm, *sigint;
	/* Counters, statistics, hot keys, watchers, the metrics endpoint
	 * (observe.h): set up once the cache is. */
	struct observe obs;
	/* What executors and front ends may reach (session.h): set by
	 * start() before the workers start. */
	struct session_env env;
	/* The workers, their sockets, the buffer budget, TLS (net.h). */
	struct net net;
	struct auth *auth;     /* -Y/--auth-file (auth.h); NULL: none */
	struct event *sighup;  /* reloads the TLS certificate, the auth file */
	struct event *sigusr1; /* stops, as SIGTERM (memcached's for -e) */
};

#endif
