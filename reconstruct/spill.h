/*
 * spill.h - temporary files next to the output for tables that would
 * otherwise grow in memory with the length of the logs (the blocks,
 * images and streams of input.c, pass 1's channel ends and connections
 * of pair.c, the row spool of db_rows.c).
 *
 * A spill file is created as OUTPUT.tmp-PID-WHAT and unlinked at once, so
 * it disappears with the process however it ends.  It is read and written
 * with pread/pwrite, or mapped shared: a mapping's pages are given back
 * (MADV_DONTNEED) every RC_SPILL_TOUCHES accesses the caller counts with
 * rc_spill_touch, so the resident part follows the accesses, not the
 * table's size.  The pages stay in the page cache (or go to the file)
 * and fault in again when needed.  A read fault maps the neighbouring
 * cached pages too (fault-around), so a mapping read at random is better
 * read with rc_spill_read.
 */
#ifndef RC_SPILL_H
#define RC_SPILL_H

#include <stddef.h>
#include <stdint.h>

/* Accesses between two give-backs of a mapping: at most 4 MiB of 4 KiB
 * pages resident at once, even when every access hits another page. */
#define RC_SPILL_TOUCHES 1024u

struct rc_ctx;

struct rc_spill {
	int      open;           /* 0 (a zeroed struct): no file */
	int      fd;
	void    *p;              /* shared mapping, or NULL */
	size_t   len;            /* mapped length */
	uint32_t touches;        /* since the last give-back */
};

/* Create S (an unlinked file named after the output and WHAT).  0, or
 * RC_EXIT_OUTPUT with the error recorded (rc_fail). */
int rc_spill_open(struct rc_ctx *c, struct rc_spill *s, const char *what);
/* Size S to LEN bytes (zeros) and map it read-write; 0 or as above. */
int rc_spill_map(struct rc_ctx *c, struct rc_spill *s, size_t len);
/* Write / read N bytes at OFF; 0 or as above. */
int rc_spill_write(struct rc_ctx *c, struct rc_spill *s, const void *buf,
		   size_t n, uint64_t off);
int rc_spill_read(struct rc_ctx *c, struct rc_spill *s, void *buf,
		  size_t n, uint64_t off);
/* In a process forked from the one that made S: S a copy of its own
 * (the same content, mapped at the same address), so that what this
 * process writes does not reach the other's; 0 or as above. */
int rc_spill_fork(struct rc_ctx *c, struct rc_spill *s, const char *what);
/* Copy the first LEN bytes of file IN to file OUT (both from offset 0;
 * copy_file_range, or read and write where the kernel cannot); 0 or an
 * errno. */
int rc_file_copy(int in, int out, uint64_t len);
/* Give the mapping's resident pages back now. */
void rc_spill_release(struct rc_spill *s);
/* Count one access to the mapping; give its pages back every
 * RC_SPILL_TOUCHES. */
static inline void rc_spill_touch(struct rc_spill *s)
{
	if (++s->touches >= RC_SPILL_TOUCHES)
		rc_spill_release(s);
}
/* Unmap (the file stays open for rc_spill_read and _write). */
void rc_spill_unmap(struct rc_spill *s);
/* Unmap and close (the file goes with it). */
void rc_spill_close(struct rc_spill *s);

#endif /* RC_SPILL_H */
