/*
 * The snippets of Neil Brown's LWN article "The rhashtable documentation I
 * wanted to read" (2018), compiled nearly verbatim over
 * common/kernel_compat.h, each asserting what the article says it does.
 * Where the code differs from the article's text, a comment says why.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

/* kfree_rcu frees through test_kfree, which records what it frees. */
#define RHKV_KFREE test_kfree
static void test_kfree(void *ptr);

#include "common/kernel_compat.h"
#include "common/rhashtable.h"

TestSuite(seed, .init = rhkv_rcu_register_thread,
	  .fini = rhkv_rcu_unregister_thread, .timeout = 30);

enum { MAX_FREED = 256 };

static pthread_mutex_t freed_lock = PTHREAD_MUTEX_INITIALIZER;
static void *freed[MAX_FREED];
static unsigned int nfreed;

static void test_kfree(void *ptr)
{
	pthread_mutex_lock(&freed_lock);
	if (nfreed < MAX_FREED)
		freed[nfreed++] = ptr;
	pthread_mutex_unlock(&freed_lock);
	free(ptr);
}

/* Whether kfree_rcu's callback freed ptr (call after rhkv_rcu_barrier). */
static bool was_freed(const void *ptr)
{
	bool found = false;

	pthread_mutex_lock(&freed_lock);
	for (unsigned int i = 0; i < nfreed; i++)
		found |= freed[i] == ptr;
	pthread_mutex_unlock(&freed_lock);
	return found;
}

static unsigned int freed_count(void)
{
	unsigned int n;

	pthread_mutex_lock(&freed_lock);
	n = nfreed;
	pthread_mutex_unlock(&freed_lock);
	return n;
}

/* ---- "Creating your first hash table" ---- */

/*
 * The article's object, except the rcu_head's name: its struct calls it
 * rcu_read but its kfree_rcu calls name the field rcu_head; we keep the
 * calls.
 */
struct object {
	int key;
	struct rhash_head linkage;
	char content[64];
	refcount_t ref;
	struct rcu_head rcu_head;
};

/* The article writes "const static", which -Wextra flags as old-style. */
static const struct rhashtable_params object_params = {
	.key_len = sizeof(int),
	.key_offset = offsetof(struct object, key),
	.head_offset = offsetof(struct object, linkage),
};

struct rhashtable my_objects;

static struct object *object_new(int key)
{
	struct object *obj = calloc(1, sizeof(*obj));

	cr_assert(obj);
	obj->key = key;
	snprintf(obj->content, sizeof(obj->content), "object %d", key);
	refcount_set(&obj->ref, 1);
	return obj;
}

static void init_my_objects(void)
{
	int success;

	success = rhashtable_init(&my_objects, &object_params);
	cr_assert_eq(success, 0);
}

/* free_and_destroy's free_fn for the tests that end with objects left. */
static void free_object(void *ptr, void *arg)
{
	(void)arg;
	free(ptr);
}

static void fill_my_objects(int n)
{
	for (int key = 0; key < n; key++)
		cr_assert_eq(rhashtable_insert_fast(&my_objects,
						    &object_new(key)->linkage,
						    object_params),
			     0);
}

Test(seed, init_and_invalid_params)
{
	struct rhashtable t;
	struct rhashtable_params bad = object_params;

	init_my_objects();
	rhashtable_destroy(&my_objects);
	/* "can fail with -EINVAL if some of the parameters given are
	 * invalid": no key length and no obj_hashfn. */
	bad.key_len = 0;
	cr_assert_eq(rhashtable_init(&t, &bad), -EINVAL);
}

/* ---- "Putting objects in the table" ---- */

Test(seed, lookup_get_insert_returns_old_object)
{
	struct object *new_obj = object_new(42), *other = object_new(42);
	struct object *old_obj;

	init_my_objects();
	old_obj = rhashtable_lookup_get_insert_fast(
		&my_objects, &new_obj->linkage, object_params);
	cr_assert_null(old_obj, "inserted: NULL");
	/* Same key: the object already there comes back, other stays out. */
	old_obj = rhashtable_lookup_get_insert_fast(
		&my_objects, &other->linkage, object_params);
	cr_assert_eq(old_obj, new_obj);
	cr_assert_eq(rhashtable_nelems(&my_objects), 1);

	/* The other two: lookup_insert says -EEXIST; insert_fast inserts
	 * duplicates. */
	cr_assert_eq(rhashtable_lookup_insert_fast(&my_objects, &other->linkage,
						   object_params),
		     -EEXIST);
	cr_assert_eq(rhashtable_insert_fast(&my_objects, &other->linkage,
					    object_params),
		     0);
	cr_assert_eq(rhashtable_nelems(&my_objects), 2);
	rhashtable_free_and_destroy(&my_objects, free_object, NULL);
}

/* ---- "Lookup and object lifetimes" ---- */

Test(seed, lookup_fast)
{
	init_my_objects();
	fill_my_objects(50);
	{
		int key = 42;
		struct object *found = rhashtable_lookup_fast(&my_objects, &key,
							      object_params);

		cr_assert_not_null(found);
		cr_assert_eq(found->key, 42);
		cr_assert_str_eq(found->content, "object 42");
		key = 4242;
		cr_assert_null(rhashtable_lookup_fast(&my_objects, &key,
						      object_params));
	}
	rhashtable_free_and_destroy(&my_objects, free_object, NULL);
}

/* The article's lookup that takes a reference unless it is zero. */
static struct object *lookup_get(int k)
{
	const struct rhashtable_params params = object_params;
	struct object *obj;
	int key;

	key = k;
	rcu_read_lock();
	obj = rhashtable_lookup_fast(&my_objects, &key, params);
	if (obj && !refcount_inc_not_zero(&obj->ref))
		obj = NULL;
	rcu_read_unlock();
	return obj;
}

Test(seed, lookup_refcount_inc_not_zero)
{
	struct object *obj;

	init_my_objects();
	fill_my_objects(50);
	obj = lookup_get(42);
	cr_assert_not_null(obj);
	cr_assert_eq(obj->key, 42);
	cr_assert_eq(refcount_read(&obj->ref), 2);
	/* The count reached zero (the object is on its way out): the lookup
	 * finds it in the table but must not return it. */
	refcount_set(&obj->ref, 0);
	cr_assert_null(lookup_get(42));
	cr_assert_eq(refcount_read(&obj->ref), 0);
	cr_assert_null(lookup_get(4242));
	rhashtable_free_and_destroy(&my_objects, free_object, NULL);
}

/* ---- "Object removal" ---- */

/* The article's lookup + remove + kfree_rcu. */
static void remove_key(struct rhashtable *table, const int *key)
{
	const struct rhashtable_params params = object_params;
	struct object *obj;

	rcu_read_lock();
	obj = rhashtable_lookup_fast(table, key, params);
	if (obj && rhashtable_remove_fast(table, &obj->linkage, params) == 0)
		kfree_rcu(obj, rcu_head);
	rcu_read_unlock();
}

Test(seed, lookup_remove_kfree_rcu)
{
	int key = 42;
	struct object *obj;

	init_my_objects();
	fill_my_objects(50);
	obj = rhashtable_lookup_fast(&my_objects, &key, object_params);
	cr_assert_not_null(obj);
	remove_key(&my_objects, &key);
	cr_assert_null(
		rhashtable_lookup_fast(&my_objects, &key, object_params));
	cr_assert_eq(rhashtable_nelems(&my_objects), 49);
	/* Once more: nothing to remove, nothing freed. */
	remove_key(&my_objects, &key);
	rhkv_rcu_barrier();
	cr_assert(was_freed(obj), "kfree_rcu freed another pointer");
	cr_assert_eq(freed_count(), 1);
	/* remove_fast of an object not in the table: -ENOENT. */
	{
		struct object *stray = object_new(7);

		cr_assert_eq(rhashtable_remove_fast(&my_objects,
						    &stray->linkage,
						    object_params),
			     -ENOENT);
		free(stray);
	}
	rhashtable_free_and_destroy(&my_objects, free_object, NULL);
}

/* A reader inside a read-side section, holding what it looked up. */
struct reader {
	atomic_int stage; /* 1: holding the object, 2: may let go */
	struct object *seen;
	bool intact;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	int key = 42;

	rhkv_rcu_register_thread();
	rcu_read_lock();
	r->seen = rhashtable_lookup_fast(&my_objects, &key, object_params);
	atomic_store(&r->stage, 1);
	while (atomic_load(&r->stage) != 2)
		sched_yield();
	/* Removed meanwhile, but not freed: still readable. */
	r->intact = r->seen && r->seen->key == 42 &&
		    !strcmp(r->seen->content, "object 42");
	rcu_read_unlock();
	rhkv_rcu_unregister_thread();
	return NULL;
}

/*
 * "it is important to use kfree_rcu() ... so the memory doesn't get reused
 * while some other thread is performing a concurrent lookup": the object is
 * not freed while a reader that found it is still in its section.
 */
Test(seed, kfree_rcu_waits_for_readers)
{
	struct reader r = { 0 };
	struct timespec pause = { .tv_nsec = 50 * 1000 * 1000 };
	pthread_t thread;
	int key = 42;

	init_my_objects();
	fill_my_objects(50);
	pthread_create(&thread, NULL, reader_main, &r);
	while (atomic_load(&r.stage) != 1)
		sched_yield();
	cr_assert_not_null(r.seen);
	remove_key(&my_objects, &key);
	nanosleep(&pause, NULL);
	cr_assert_eq(freed_count(), 0, "freed under a reader");
	atomic_store(&r.stage, 2);
	pthread_join(thread, NULL);
	cr_assert(r.intact);
	rhkv_rcu_barrier();
	cr_assert(was_freed(r.seen));
	rhashtable_free_and_destroy(&my_objects, free_object, NULL);
}

/* The article's "removed when the reference count becomes zero". */
static void obj_put(struct object *obj)
{
	if (refcount_dec_and_test(&obj->ref)) {
		rhashtable_remove_fast(&my_objects, &obj->linkage,
				       object_params);
		kfree_rcu(obj, rcu_head);
	}
}

Test(seed, remove_when_refcount_reaches_zero)
{
	struct object *obj;

	init_my_objects();
	fill_my_objects(10);
	obj = lookup_get(7); /* two references now */
	cr_assert_not_null(obj);
	obj_put(obj);
	cr_assert_eq(lookup_get(7), obj, "still in the table at one ref");
	obj_put(obj);
	obj_put(obj);
	cr_assert_null(lookup_get(7));
	cr_assert_eq(rhashtable_nelems(&my_objects), 9);
	rhkv_rcu_barrier();
	cr_assert(was_freed(obj));
	cr_assert_eq(freed_count(), 1);
	rhashtable_free_and_destroy(&my_objects, free_object, NULL);
}

/* ---- "Walking all the objects in the table" ---- */

enum { WALK_N = 40 };
static unsigned int printed[WALK_N], slow_done[WALK_N], walked[WALK_N];

static void printk_obj(struct object *obj)
{
	cr_assert_lt(obj->key, WALK_N);
	printed[obj->key]++;
	if (obj->key < 3)
		printk("%s\n", obj->content);
}

/*
 * The plain walk under the read lock: every object that was in the table
 * at the start and still is at the end is printed (here, exactly once:
 * nothing else changes). "It is quite safe to remove the object that you
 * are visiting": with remove_visited, even keys are removed as visited.
 */
static void plain_walk(bool remove_visited)
{
	struct rhashtable_iter iter;
	struct object *obj;

	rhashtable_walk_enter(&my_objects, &iter);
	rhashtable_walk_start(&iter);
	while ((obj = rhashtable_walk_next(&iter)) != NULL) {
		if (IS_ERR(obj))
			continue;
		printk_obj(obj);
		if (remove_visited && obj->key % 2 == 0 &&
		    rhashtable_remove_fast(&my_objects, &obj->linkage,
					   object_params) == 0)
			kfree_rcu(obj, rcu_head);
	}
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
}

Test(seed, walk_plain)
{
	init_my_objects();
	fill_my_objects(WALK_N);
	plain_walk(false);
	for (int k = 0; k < WALK_N; k++)
		cr_assert_eq(printed[k], 1, "key %d printed %u times", k,
			     printed[k]);

	memset(printed, 0, sizeof(printed));
	plain_walk(true);
	for (int k = 0; k < WALK_N; k++) {
		cr_assert_eq(printed[k], 1, "key %d printed %u times", k,
			     printed[k]);
		cr_assert_eq(lookup_get(k) != NULL, k % 2 == 1);
	}
	rhkv_rcu_barrier();
	cr_assert_eq(freed_count(), WALK_N / 2);
	rhashtable_free_and_destroy(&my_objects, free_object, NULL);
}

static bool uninteresting(struct object *obj)
{
	return obj->key % 3 == 0;
}

static void do_something_slow(struct object *obj)
{
	struct timespec pause = { .tv_nsec = 200 * 1000 };

	/* Not in a read-side section: we may sleep. */
	nanosleep(&pause, NULL);
	slow_done[obj->key]++;
}

/*
 * The walk that stops around slow work, holding a reference: the object is
 * still in the table, so the walk restarts exactly where it left off. With
 * nothing else changing, every object is returned exactly once and every
 * interesting one gets the slow work exactly once.
 */
Test(seed, walk_stop_start_around_slow_work)
{
	struct rhashtable_iter iter;
	struct object *obj;

	init_my_objects();
	fill_my_objects(WALK_N);

	rhashtable_walk_enter(&my_objects, &iter);
	rhashtable_walk_start(&iter);
	while ((obj = rhashtable_walk_next(&iter)) != NULL) {
		if (IS_ERR(obj))
			continue;
		walked[obj->key]++;
		if (uninteresting(obj))
			continue;
		if (!refcount_inc_not_zero(&obj->ref))
			continue;
		rhashtable_walk_stop(&iter);
		do_something_slow(obj);
		rhashtable_walk_start(&iter);
		obj_put(obj);
	}
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);

	for (int k = 0; k < WALK_N; k++) {
		cr_assert_eq(walked[k], 1, "key %d walked %u times", k,
			     walked[k]);
		cr_assert_eq(slow_done[k], k % 3 ? 1 : 0,
			     "key %d: slow work %u times", k, slow_done[k]);
		obj = lookup_get(k);
		cr_assert_not_null(obj);
		cr_assert_eq(refcount_read(&obj->ref), 2, "key %d refs", k);
	}
	cr_assert_eq(rhashtable_nelems(&my_objects), WALK_N);
	rhashtable_free_and_destroy(&my_objects, free_object, NULL);
}

/* ---- "The rest of the API" ---- */

struct free_ctx {
	unsigned int calls;
	unsigned int per_key[WALK_N];
};

static void count_and_free(void *ptr, void *arg)
{
	struct free_ctx *ctx = arg;
	struct object *obj = ptr;

	cr_assert_lt(obj->key, WALK_N);
	ctx->per_key[obj->key]++;
	ctx->calls++;
	free(obj);
}

Test(seed, free_and_destroy_frees_every_object_once)
{
	struct free_ctx ctx = { 0 };

	init_my_objects();
	fill_my_objects(WALK_N);
	rhashtable_free_and_destroy(&my_objects, count_and_free, &ctx);
	cr_assert_eq(ctx.calls, WALK_N);
	for (int k = 0; k < WALK_N; k++)
		cr_assert_eq(ctx.per_key[k], 1, "key %d freed %u times", k,
			     ctx.per_key[k]);
}

/*
 * A key hashed and compared by user functions (a NUL-terminated string
 * through a pointer in the object): "the key_len is largely ignored, though
 * it should be given a non-zero value". obj_cmpfn returns -ESRCH.
 */
struct named {
	const char *name;
	struct rhash_head linkage;
};

static u32 name_hash(const void *data, u32 len, u32 seed)
{
	const char *s = *(const char *const *)data;
	u32 h = seed ^ 2166136261u;

	(void)len;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int name_cmp(struct rhashtable_compare_arg *arg, const void *obj)
{
	const struct named *n = obj;

	return strcmp(n->name, *(const char *const *)arg->key) ? -ESRCH : 0;
}

Test(seed, hashfn_and_obj_cmpfn)
{
	const struct rhashtable_params params = {
		.key_len = sizeof(const char *),
		.key_offset = offsetof(struct named, name),
		.head_offset = offsetof(struct named, linkage),
		.hashfn = name_hash,
		.obj_cmpfn = name_cmp,
	};
	struct named a = { .name = "alpha" }, b = { .name = "beta" };
	struct named a2 = { .name = "alpha" };
	char buf[16];
	const char *key = buf;
	struct rhashtable t;

	cr_assert_eq(rhashtable_init(&t, &params), 0);
	cr_assert_eq(rhashtable_lookup_insert_fast(&t, &a.linkage, params), 0);
	cr_assert_eq(rhashtable_lookup_insert_fast(&t, &b.linkage, params), 0);
	cr_assert_eq(rhashtable_lookup_insert_fast(&t, &a2.linkage, params),
		     -EEXIST);
	strcpy(buf, "alpha"); /* another copy of the string */
	cr_assert_eq(rhashtable_lookup_fast(&t, &key, params), &a);
	strcpy(buf, "gamma");
	cr_assert_null(rhashtable_lookup_fast(&t, &key, params));
	rhashtable_destroy(&t);
}

/*
 * The insert_key form, for a key that is not in the object as it is given
 * to lookups (the Mellanox example): the lookup key is a linked list of
 * values, the object holds an array. key_len 0, obj_hashfn for objects,
 * hashfn for keys (this port requires it when key_len is 0: see
 * rhashtable.h), obj_cmpfn comparing a key with an object.
 */
struct value {
	u32 v;
	const struct value *next;
};

struct vkey {
	const struct value *values;
};

struct vobj {
	u32 values[4];
	unsigned int nvalues;
	struct rhash_head linkage;
};

static u32 mix(u32 h, u32 v)
{
	return (h ^ v) * 16777619u;
}

static u32 vkey_hash(const void *data, u32 len, u32 seed)
{
	const struct vkey *key = data;
	u32 h = seed ^ 2166136261u;

	(void)len;
	for (const struct value *v = key->values; v; v = v->next)
		h = mix(h, v->v);
	return h;
}

static u32 vobj_hash(const void *data, u32 len, u32 seed)
{
	const struct vobj *obj = data;
	u32 h = seed ^ 2166136261u;

	(void)len;
	for (unsigned int i = 0; i < obj->nvalues; i++)
		h = mix(h, obj->values[i]);
	return h;
}

static int vobj_cmp(struct rhashtable_compare_arg *arg, const void *data)
{
	const struct vkey *key = arg->key;
	const struct vobj *obj = data;
	const struct value *v = key->values;
	unsigned int i;

	for (i = 0; i < obj->nvalues && v; i++, v = v->next)
		if (obj->values[i] != v->v)
			return -ESRCH;
	return i == obj->nvalues && !v ? 0 : -ESRCH;
}

Test(seed, insert_key_with_obj_hashfn)
{
	const struct rhashtable_params params = {
		.head_offset = offsetof(struct vobj, linkage),
		.hashfn = vkey_hash,
		.obj_hashfn = vobj_hash,
		.obj_cmpfn = vobj_cmp,
	};
	struct rhashtable_params no_key_hash = params;
	struct value v3 = { 3, NULL }, v2 = { 2, &v3 }, v1 = { 1, &v2 };
	struct value w2 = { 2, NULL }, w1 = { 1, &w2 };
	struct value c3 = { 3, NULL }, c2 = { 2, &c3 }, c1 = { 1, &c2 };
	struct vkey k123 = { &v1 }, k12 = { &w1 }, copy = { &c1 };
	struct vobj o123 = { { 1, 2, 3 }, 3, { NULL } };
	struct vobj o12 = { { 1, 2 }, 2, { NULL } };
	struct vobj dup = { { 1, 2, 3 }, 3, { NULL } };
	struct rhashtable t;

	/* key_len 0 needs obj_hashfn and obj_cmpfn, and here a hashfn. */
	no_key_hash.hashfn = NULL;
	cr_assert_eq(rhashtable_init(&t, &no_key_hash), -EINVAL);
	no_key_hash = params;
	no_key_hash.obj_cmpfn = NULL;
	cr_assert_eq(rhashtable_init(&t, &no_key_hash), -EINVAL);

	cr_assert_eq(rhashtable_init(&t, &params), 0);
	cr_assert_eq(
		rhashtable_lookup_insert_key(&t, &k123, &o123.linkage, params),
		0);
	cr_assert_null(rhashtable_lookup_get_insert_key(&t, &k12, &o12.linkage,
							params));
	/* Equal values, another object: not inserted. */
	cr_assert_eq(
		rhashtable_lookup_insert_key(&t, &copy, &dup.linkage, params),
		-EEXIST);
	cr_assert_eq(rhashtable_lookup_get_insert_key(&t, &copy, &dup.linkage,
						      params),
		     &o123);
	/* A lookup by another list with the same values finds the object. */
	cr_assert_eq(rhashtable_lookup_fast(&t, &copy, params), &o123);
	cr_assert_eq(rhashtable_lookup_fast(&t, &k12, params), &o12);
	v3.v = 4; /* k123 is now 1 2 4 */
	cr_assert_null(rhashtable_lookup_fast(&t, &k123, params));
	cr_assert_eq(rhashtable_nelems(&t), 2);
	cr_assert_eq(rhashtable_remove_fast(&t, &o123.linkage, params), 0);
	cr_assert_null(rhashtable_lookup_fast(&t, &copy, params));
	rhashtable_destroy(&t);
}

/* rhltables: several objects per key. */
struct lobject {
	int key;
	int id;
	struct rhlist_head list;
	struct rcu_head rcu_head;
};

static const struct rhashtable_params lobject_params = {
	.key_len = sizeof(int),
	.key_offset = offsetof(struct lobject, key),
	.head_offset = offsetof(struct lobject, list),
};

static unsigned int list_ids(struct rhltable *hlt, int key, unsigned int *ids)
{
	struct rhlist_head *list, *pos;
	struct lobject *obj;
	unsigned int n = 0;

	rcu_read_lock();
	list = rhltable_lookup(hlt, &key, lobject_params);
	rhl_for_each_entry_rcu (obj, pos, list, list) {
		cr_assert_eq(obj->key, key);
		ids[n++] = 1u << obj->id;
	}
	rcu_read_unlock();
	return n;
}

static unsigned int id_mask(struct rhltable *hlt, int key)
{
	unsigned int ids[16], mask = 0, n = list_ids(hlt, key, ids);

	for (unsigned int i = 0; i < n; i++) {
		cr_assert_eq(mask & ids[i], 0, "listed twice");
		mask |= ids[i];
	}
	return mask;
}

static void count_lobject(void *ptr, void *arg)
{
	struct lobject *obj = ptr;

	*(unsigned int *)arg |= 1u << obj->id;
	free(obj);
}

Test(seed, rhltable_several_objects_per_key)
{
	struct rhltable hlt;
	struct lobject *objs[6];
	struct rhashtable_iter iter;
	unsigned int walked_ids = 0, freed_ids = 0;
	struct lobject *obj;

	cr_assert_eq(rhltable_init(&hlt, &lobject_params), 0);
	for (int i = 0; i < 6; i++) {
		objs[i] = calloc(1, sizeof(*objs[i]));
		cr_assert(objs[i]);
		objs[i]->key = i < 4 ? 1 : 2;
		objs[i]->id = i;
		if (i % 2)
			cr_assert_eq(rhltable_insert(&hlt, &objs[i]->list,
						     lobject_params),
				     0);
		else
			cr_assert_eq(rhltable_insert_key(&hlt, &objs[i]->key,
							 &objs[i]->list,
							 lobject_params),
				     0);
	}
	cr_assert_eq(id_mask(&hlt, 1), 0x0f);
	cr_assert_eq(id_mask(&hlt, 2), 0x30);
	cr_assert_eq(id_mask(&hlt, 3), 0);

	cr_assert_eq(rhltable_remove(&hlt, &objs[2]->list, lobject_params), 0);
	cr_assert_eq(rhltable_remove(&hlt, &objs[2]->list, lobject_params),
		     -ENOENT);
	kfree_rcu(objs[2], rcu_head);
	cr_assert_eq(id_mask(&hlt, 1), 0x0b);

	rhltable_walk_enter(&hlt, &iter);
	rhashtable_walk_start(&iter);
	while ((obj = rhashtable_walk_next(&iter)) != NULL) {
		if (IS_ERR(obj))
			continue;
		cr_assert_eq(walked_ids & (1u << obj->id), 0, "walked twice");
		walked_ids |= 1u << obj->id;
	}
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
	cr_assert_eq(walked_ids, 0x3b);

	rhltable_free_and_destroy(&hlt, count_lobject, &freed_ids);
	cr_assert_eq(freed_ids, 0x3b);
	rhkv_rcu_barrier();
	cr_assert(was_freed(objs[2]));
}
