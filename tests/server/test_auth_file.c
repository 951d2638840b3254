/*
 * The credentials module (server/exec/auth.h): both forms of the auth file,
 * every refusal (each message names the file and the line, never the
 * secret), the checks, the mode check, and the reload, which keeps the
 * old users when the new file is refused.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rcu.h"
#include "server/exec/auth.h"

static struct auth *a;
static char path[] = "/tmp/rhkv-authfile-XXXXXX";
static bool made;
static char err[512];

static void setup(void)
{
	rhkv_rcu_register_thread();
}

static void teardown(void)
{
	auth_destroy(&a);
	if (made)
		unlink(path);
	rhkv_rcu_unregister_thread();
}

TestSuite(auth_file, .init = setup, .fini = teardown, .timeout = 30);

static int from_text(const char *text)
{
	auth_destroy(&a);
	return auth_from_text(&a, "F", text, strlen(text), err, sizeof(err));
}

static bool ok(const char *user, const char *pass)
{
	return auth_check(a, user, user ? strlen(user) : 0, pass, strlen(pass));
}

/* Writes the file (made 0600 by mkstemp) with mode. */
static void write_file(const char *text, mode_t mode)
{
	int fd;

	if (!made) {
		fd = mkstemp(path);
		made = true;
	} else {
		fd = open(path, O_WRONLY | O_TRUNC);
	}
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(chmod(path, mode), 0);
}

Test(auth_file, a_password_accepts_any_user)
{
	cr_assert_eq(from_text("s3cret!\nnot:read\n"), 0, "%s", err);
	cr_assert_eq(auth_form(a), AUTH_FORM_PASSWORD);
	cr_assert_eq(auth_count(a), 1);
	cr_assert(ok(NULL, "s3cret!"));
	cr_assert(ok("anyone", "s3cret!"));
	cr_assert(!ok(NULL, "s3cret"));
	cr_assert(!ok(NULL, "s3cret!!"));
	cr_assert(!ok(NULL, "not:read"));
	cr_assert(!auth_check(a, NULL, 0, NULL, 0));
	cr_assert_eq(from_text("pw\r\n"), 0, "%s", err);
	cr_assert(ok(NULL, "pw"));
}

Test(auth_file, a_user_list_needs_the_user)
{
	cr_assert_eq(from_text("alice:wonder\n\nbob:builder\r\n\r\n"
			       "carol:pa:ss\ndup:one\ndup:two"),
		     0, "%s", err);
	cr_assert_eq(auth_form(a), AUTH_FORM_USERS);
	cr_assert_eq(auth_count(a), 5);
	cr_assert(ok("alice", "wonder"));
	cr_assert(ok("bob", "builder"));
	cr_assert(ok("carol", "pa:ss"));
	cr_assert(ok("dup", "one"));
	cr_assert(ok("dup", "two"));
	cr_assert(!ok("alice", "builder"));
	cr_assert(!ok("bob", "wonder"));
	cr_assert(!ok(NULL, "wonder"));
	cr_assert(!ok("", "wonder"));
	cr_assert(!ok("alic", "wonder"));
	cr_assert(!ok("alicee", "wonder"));
	cr_assert(!ok("alice", "wonde"));
	cr_assert(!ok("carol", "pa"));
	cr_assert(!ok("alice:wonder", ""));
}

struct bad {
	const char *text;
	const char *why;
};

Test(auth_file, malformed_files_are_refused_without_their_secrets)
{
	static const struct bad bad[] = {
		{ "", "the auth file 'F' has no password on its first line" },
		{ "\nsecret\n",
		  "the auth file 'F' has no password on its first line" },
		{ "sec ret\n", "the password in 'F' has a space" },
		{ "alice:wonder\nsecret\n",
		  "the auth file 'F': line 2 is not user:password" },
		{ "alice:wonder\n\nx:y\nsecret",
		  "the auth file 'F': line 4 is not user:password" },
		{ ":secret\n", "the auth file 'F': line 1 has no user name" },
		{ "alice:\n", "the auth file 'F': line 1 has no password" },
		{ "alice:\rsecret\n",
		  "the auth file 'F': line 1 has no password" },
		{ "al ice:secret\n", "the auth file 'F': line 1 has a space" },
		{ "alice:sec ret\n", "the auth file 'F': line 1 has a space" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(from_text(bad[i].text), -1, "'%s' taken",
			     bad[i].text);
		cr_assert_null(a);
		cr_assert_not_null(strstr(err, bad[i].why), "'%s': %s",
				   bad[i].text, err);
		cr_assert_null(strstr(err, "secret"), "%s", err);
	}
	cr_assert_eq(auth_from_text(&a, "F", "a:b\0c", 5, err, sizeof(err)),
		     -1);
	cr_assert_not_null(strstr(err, "has a NUL byte"), "%s", err);
}

Test(auth_file, a_file_others_may_read_or_write_is_refused)
{
	write_file("alice:wonder\n", 0604);
	cr_assert_eq(auth_open(&a, path, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "may be read or written by other "
				       "users (mode 0604)"),
			   "%s", err);
	cr_assert_not_null(strstr(err, path), "%s", err);
	write_file("alice:wonder\n", 0602);
	cr_assert_eq(auth_open(&a, path, err, sizeof(err)), -1);
	/* The owner's group may read it (root:rhkv 0640). */
	write_file("alice:wonder\n", 0640);
	cr_assert_eq(auth_open(&a, path, err, sizeof(err)), 0, "%s", err);
	cr_assert(ok("alice", "wonder"));
	auth_destroy(&a);
	cr_assert_null(a);
	cr_assert_eq(auth_open(&a, "/nonexistent/users", err, sizeof(err)), -1);
	cr_assert_str_eq(err, "cannot read the auth file "
			      "'/nonexistent/users': No such file or "
			      "directory");
}

Test(auth_file, a_file_over_1_mib_is_refused)
{
	size_t n = AUTH_FILE_MAX + 2;
	char *big = malloc(n + 1);

	cr_assert_not_null(big);
	memset(big, 'x', n);
	memcpy(big, "a:", 2);
	big[n] = '\0';
	write_file(big, 0600);
	free(big);
	cr_assert_eq(auth_open(&a, path, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "is larger than 1 MiB"), "%s", err);
}

Test(auth_file, reload_swaps_the_users_or_keeps_the_old_ones)
{
	write_file("alice:wonder\n", 0600);
	cr_assert_eq(auth_open(&a, path, err, sizeof(err)), 0, "%s", err);
	write_file("bob:builder\ndave:diver\n", 0600);
	cr_assert(ok("alice", "wonder"), "read again before the reload");
	cr_assert_eq(auth_reload(a, err, sizeof(err)), 0, "%s", err);
	cr_assert(!ok("alice", "wonder"));
	cr_assert(ok("bob", "builder"));
	cr_assert(ok("dave", "diver"));
	cr_assert_eq(auth_count(a), 2);

	/* Refused: the old users stay. */
	write_file("erin:e\n", 0644);
	cr_assert_eq(auth_reload(a, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "mode 0644"), "%s", err);
	write_file("erin:e\nfrank\n", 0600);
	cr_assert_eq(auth_reload(a, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "line 2"), "%s", err);
	write_file("justapassword\n", 0600);
	cr_assert_eq(auth_reload(a, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "changed form"), "%s", err);
	unlink(path);
	made = false;
	cr_assert_eq(auth_reload(a, err, sizeof(err)), -1);
	cr_assert_not_null(strstr(err, "cannot read"), "%s", err);
	cr_assert(ok("bob", "builder"));
	cr_assert(!ok("erin", "e"));
	cr_assert(!ok(NULL, "justapassword"));

	/* Made from text: nothing to reload. */
	cr_assert_eq(from_text("pw\n"), 0);
	cr_assert_eq(auth_reload(a, err, sizeof(err)), -1);
}

/* A relative path is reloaded from the directory auth_open() ran in, as
 * after -d the daemon runs in "/". */
Test(auth_file, a_relative_path_reloads_after_a_chdir)
{
	char *cwd = getcwd(NULL, 0);

	write_file("alice:wonder\n", 0600);
	cr_assert_not_null(cwd);
	cr_assert_eq(chdir("/tmp"), 0);
	cr_assert_eq(auth_open(&a, path + 5, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(chdir("/"), 0);
	write_file("bob:builder\n", 0600);
	cr_assert_eq(auth_reload(a, err, sizeof(err)), 0, "%s", err);
	cr_assert(ok("bob", "builder"));
	cr_assert_eq(chdir(cwd), 0);
	free(cwd);
}
