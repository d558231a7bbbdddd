/*
 * dedup.c - stream bookkeeping for segment readers (see dedup.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "dedup.h"

#define DD_BUCKETS 4096u

struct dedup {
	struct dd_stream *b[DD_BUCKETS];
};

struct dedup *dedup_new(void)
{
	return calloc(1, sizeof(struct dedup));
}

void dedup_free(struct dedup *d)
{
	if (!d)
		return;
	for (unsigned i = 0; i < DD_BUCKETS; i++) {
		struct dd_stream *s = d->b[i], *n;
		for (; s; s = n) {
			n = s->next;
			free(s->dict);
			free(s);
		}
	}
	free(d);
}

static unsigned hash(const char *host, uint64_t ring, uint32_t pid,
		     uint16_t slot)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *p = host; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	h ^= ring * 0x9e3779b97f4a7c15ull;
	h ^= ((uint64_t)pid << 16 | slot) * 0xc2b2ae3d27d4eb4full;
	return (unsigned)(h ^ h >> 29) % DD_BUCKETS;
}

struct dd_stream *dedup_block(struct dedup *d, const char *host,
			      const struct bt_blk_header *h, size_t *skip,
			      uint64_t *gap)
{
	unsigned k = hash(host, h->ring_id, h->pid, h->slot);
	struct dd_stream *s;

	*skip = 0;
	*gap = 0;
	for (s = d->b[k]; s; s = s->next)
		if (s->ring_id == h->ring_id && s->pid == h->pid &&
		    s->slot == h->slot && strcmp(s->host, host) == 0)
			break;
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s)
			return NULL;
		strncpy(s->host, host, sizeof s->host - 1);
		s->ring_id = h->ring_id;
		s->pid = h->pid;
		s->slot = h->slot;
		s->next_off = h->stream_off;
		s->next = d->b[k];
		d->b[k] = s;
	}
	if (h->stream_off < s->next_off) {
		uint64_t seen = s->next_off - h->stream_off;
		*skip = seen >= h->len ? h->len : (size_t)seen;
		s->dup_bytes += *skip;
	} else if (h->stream_off > s->next_off) {
		*gap = h->stream_off - s->next_off;
		s->gap_bytes += *gap;
	}
	if (h->stream_off + h->len > s->next_off)
		s->next_off = h->stream_off + h->len;
	return s;
}

void dedup_foreach(struct dedup *d, void (*f)(struct dd_stream *, void *),
		   void *arg)
{
	for (unsigned i = 0; i < DD_BUCKETS; i++)
		for (struct dd_stream *s = d->b[i]; s; s = s->next)
			f(s, arg);
}
