/*
 * librhkv in a few lines: connect, set, get, print, delete.
 * Usage: example [PORT] (default 11311, on 127.0.0.1).
 */
#include <rhkv.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 11311;
	struct rhkv_value v;
	rhkv *c;
	int rc;

	rc = rhkv_connect(&c, "127.0.0.1", port, NULL);
	if (rc == 0)
		rc = rhkv_set(c, "greeting", 8, "hello", 5, 0, 0, NULL);
	if (rc == 0)
		rc = rhkv_get(c, "greeting", 8, &v);
	if (rc == 0) {
		printf("greeting = %s\n", v.data);
		rhkv_value_free(&v);
		rc = rhkv_delete(c, "greeting", 8);
	}
	if (rc)
		fprintf(stderr, "example: %s (%s)\n", rhkv_strerror(rc),
			rhkv_errstr(c));
	rhkv_close(c);
	return rc ? 1 : 0;
}
