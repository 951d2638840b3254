/*
 * A batch job: load a large key set into the cache through one streaming
 * pipeline (sent as it is queued, results counted as they arrive: the
 * job's memory stays about one send budget however many keys it loads),
 * then check a sample back with one mget.
 *
 * Usage: batch_job PORT [KEYS] (127.0.0.1; default 200000 keys of 4 KB).
 * Prints what it stored, what the sample found, and the library's peak
 * buffer bytes; exits 0 when every key was stored and no sampled key came
 * back wrong (a key the cache evicted is a miss, not an error).
 */
#include <rhkv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE 100

struct job {
	rhkv_pipeline *p;
	long stored, failed;
	size_t peak;
};

static void on_stored(rhkv *c, const struct rhkv_result *r, void *arg)
{
	struct job *job = arg;
	size_t held = rhkv_pipeline_buffered(job->p);

	(void)c;
	if (r->status == 0)
		job->stored++;
	else
		job->failed++;
	if (held > job->peak)
		job->peak = held;
}

static size_t key_of(long i, char *buf, size_t cap)
{
	return (size_t)snprintf(buf, cap, "batch:%ld", i);
}

int main(int argc, char **argv)
{
	long keys = argc > 2 ? atol(argv[2]) : 200000;
	static char val[4096];
	char names[SAMPLE][32];
	const char *kp[SAMPLE];
	size_t kl[SAMPLE];
	struct rhkv_value out[SAMPLE];
	int st[SAMPLE], back = 0, evicted = 0, bad = 0;
	struct rhkv_options o;
	struct job job = { 0 };
	rhkv *c;
	int rc;

	if (argc < 2)
		return 2;
	rhkv_options_init(&o);
	o.io_timeout_ms = 5000;	    /* per reply, not for the whole job */
	o.send_budget = 256 * 1024; /* bytes queued before they go out */
	rc = rhkv_connect(&c, "127.0.0.1", atoi(argv[1]), &o);
	if (rc) {
		fprintf(stderr, "connect: %s\n", rhkv_errstr(c));
		rhkv_close(c);
		return 1;
	}
	memset(val, 'v', sizeof(val));
	job.p = rhkv_pipeline_stream(c, on_stored, &job);
	for (long i = 0; i < keys && job.p; i++) {
		char key[32];
		size_t kn = key_of(i, key, sizeof(key));

		if (rhkv_pipeline_set(job.p, key, kn, val, sizeof(val), 0,
				      3600) < 0)
			job.failed++;
	}
	rc = job.p ? rhkv_pipeline_exec(job.p) : RHKV_ENOMEM;
	rhkv_pipeline_free(job.p);
	for (int i = 0; i < SAMPLE; i++) {
		kl[i] = key_of(i * (keys / SAMPLE), names[i], sizeof(names[i]));
		kp[i] = names[i];
	}
	if (rc == 0)
		rc = rhkv_mget(c, SAMPLE, kp, kl, out, st);
	/* a cache smaller than the load evicts: a miss is not an error */
	for (int i = 0; i < SAMPLE && rc == 0; i++) {
		back += st[i] == 0 && out[i].len == sizeof(val);
		evicted += st[i] == RHKV_ENOTFOUND;
		bad += st[i] != RHKV_ENOTFOUND &&
		       (st[i] != 0 || out[i].len != sizeof(val));
		rhkv_value_free(&out[i]);
	}
	printf("stored %ld of %ld keys; sample of %d: %d read back, %d "
	       "evicted, %d wrong; peak %zu buffer bytes\n",
	       job.stored, keys, SAMPLE, back, evicted, bad, job.peak);
	if (rc)
		fprintf(stderr, "batch: %s (%s)\n", rhkv_strerror(rc),
			rhkv_errstr(c));
	rhkv_close(c);
	return rc || bad || job.stored != keys;
}
