/*
 * The memory file's layout, which cache_file.c writes and opens,
 * cache_file_restore.c checks and adopts, and the file fuzzer builds
 * images of: the one definition every reader of the file agrees on.
 * Private to the cache module (and its fuzzer).
 *
 *   header        one page: magic, format, the layout (limit, segment
 *                 size, segments, item size limit), the stop time, a
 *                 delayed flush_all pending then, the large items' area,
 *                 whether it is sealed, a checksum
 *   records       a record per segment: sealed or free, bytes used, its
 *                 eviction log and place in it, a checksum of its bytes
 *   arena         the segments, items as they are in memory
 *   large items   written at the stop (they live in allocations of their
 *                 own while the server runs), each with a checksum
 */
#ifndef RHKV_SERVER_CACHE_FILE_H
#define RHKV_SERVER_CACHE_FILE_H

#include "cache_internal.h"

#define CACHE_FILE_MAGIC   "RHKVARN1"
#define CACHE_FILE_VERSION 2u
#define CACHE_FILE_PAGE	   4096u

/* An item that was not live when the file was sealed (a usage bit no
 * running cache sets). */
#define ITEM_SEALED_DEAD 128u

struct cache_file_header {
	char magic[8];
	uint32_t version;
	uint32_t sealed; /* 1: a graceful stop wrote it, nothing since */
	uint64_t limit, seg_size, nsegs;
	uint32_t item_max, threads;
	uint64_t records_off, arena_off;
	uint64_t large_off, large_bytes, large_count;
	int64_t stopped;      /* unix seconds */
	int64_t flush_due_ns; /* a delayed flush_all's time (unix ns), or 0 */
	uint64_t cas_high;    /* the highest cas given out before the stop */
	uint64_t check;	      /* of the bytes above */
};

enum { CACHE_REC_FREE, CACHE_REC_SEALED };

struct cache_seg_record {
	uint32_t state;
	uint32_t used;
	uint32_t order; /* place in its log, oldest first */
	uint8_t log;
	uint8_t pad[3];
	uint64_t check;
};

/* A large item in the area after the arena: this, then its size bytes
 * (header and data, as in memory), padded to 8. */
struct cache_large_record {
	uint32_t size;	 /* item_size() */
	uint32_t nbytes; /* its value's length */
	uint64_t check;	 /* of the item's bytes */
};

/* The smallest large record: the record, then an item with a key of one
 * byte, padded to 8. */
#define CACHE_LARGE_RECORD_MIN               \
	(sizeof(struct cache_large_record) + \
	 ((ITEM_HEADER_BYTES + 1 + 7) & ~(size_t)7))

/* Four independent lanes of multiply and shift: a checksum against torn
 * and flipped bytes (not an adversary), at several bytes a cycle. */
uint64_t cache__file_checksum(const void *p, size_t n);

static inline uint64_t
cache__file_header_check(const struct cache_file_header *h)
{
	return cache__file_checksum(h,
				    offsetof(struct cache_file_header, check));
}

/* The open file, between cache__file_open and cache__file_close. */
struct cache_file {
	int fd;
	char *map; /* header, records, arena */
	size_t map_bytes;
	uint64_t records_off, arena_off;
	/* The layout's: -m at the start (cache_memlimit may change the
	 * limit later, not the file's segments) and -I. */
	uint64_t limit;
	uint32_t item_max;
	struct cache_restore restore;
};

static inline struct cache_file_header *cache__file_header(struct cache *c)
{
	return (struct cache_file_header *)c->file->map;
}

static inline struct cache_seg_record *cache__file_records(struct cache *c)
{
	return (struct cache_seg_record *)(c->file->map + c->file->records_off);
}

#endif
