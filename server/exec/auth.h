/*
 * rhkvd's credentials: the --auth-file (-Y), and the one check every
 * protocol's authentication makes against it (the text protocol's
 * handshake and `auth`, SASL PLAIN on memcached's binary protocol, the
 * msgpack protocol's AUTH).
 *
 * The file has one of two forms, told by its first line:
 *   - a user list, memcached's -Y form: every line `user:password` (the
 *     user name up to the first ':', the password the rest of the line;
 *     empty lines are skipped). A check needs a user name and its
 *     password.
 *   - a password: a first line with no ':' is the password (rhkvd's older
 *     form; the lines after it are not read). Any user name is accepted
 *     with it, or none.
 * Neither a user name nor a password may be empty or hold a space: the
 * text protocol separates them with spaces. A file that other users may
 * read or write is refused (the mode is checked on the open file).
 *
 * Ownership: auth_open() makes a struct auth, auth_destroy() frees it;
 * the entries are copied out of the file, which is read again only by
 * auth_reload(), from the path given to auth_open() (a relative one taken
 * from the working directory of that call: a daemon moves to "/").
 *
 * Threads: auth_check() runs on any thread registered with RCU
 * (common/rcu.h), outside or inside a read-side section, at any time
 * before auth_destroy(), concurrently with auth_reload(). auth_reload()
 * runs on one registered thread at a time (the main loop's SIGHUP), never
 * inside a read-side section: it publishes the new entries with a release
 * store, waits for a grace period, then wipes and frees the old ones, so a
 * check sees either the old list or the new one, whole. auth_form() never
 * changes after auth_open().
 */
#ifndef RHKV_SERVER_AUTH_H
#define RHKV_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

struct auth;

enum auth_form {
	AUTH_FORM_PASSWORD, /* one password, any user name */
	AUTH_FORM_USERS,    /* user:password lines */
};

/* Files larger than this are refused (a list of users, not a database). */
#define AUTH_FILE_MAX (1024 * 1024)

/*
 * Reads the file at path. 0 and *out set, or -1 with why in err (a
 * sentence naming the file, for "rhkvd: <err>"): it cannot be read, others
 * may read or write it, it is larger than AUTH_FILE_MAX, or a line is
 * malformed (its number is said, never its contents).
 */
int auth_open(struct auth **out, const char *path, char *err, size_t cap);

/* As auth_open(), from text in memory (label names it in messages); the
 * result has no file to reload. */
int auth_from_text(struct auth **out, const char *label, const char *text,
		   size_t len, char *err, size_t cap);

/*
 * Reads the file again and swaps the new entries in. 0, or -1 with why in
 * err, the old entries staying in use: the file cannot be read or is
 * refused as by auth_open(), or it now has the other form (a restart
 * changes the form).
 */
int auth_reload(struct auth *a, char *err, size_t cap);

/* Frees *a (its entries wiped first) and sets *a = NULL; NULL is fine.
 * No check may be running. */
void auth_destroy(struct auth **a);

enum auth_form auth_form(const struct auth *a);

/* How many users (1 for the password form). */
size_t auth_count(struct auth *a);

/*
 * Whether user and pass match an entry: for the user-list form a user of
 * that name with that password; for the password form the password, user
 * ignored. user may be NULL (none given): then only the password form can
 * match. Every entry is compared, in time that depends on neither where
 * the bytes differ nor which entry matches.
 */
bool auth_check(struct auth *a, const char *user, size_t ulen, const char *pass,
		size_t plen);

#endif
