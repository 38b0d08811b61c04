/* Message buffers: page-aligned (or a given offset past a page boundary, --buffer-offset),
 * optionally a pool of slots cycled per iteration so that data comes from memory rather than
 * cache (--off-cache). */
#ifndef MPISCOPE_BUFFERS_H
#define MPISCOPE_BUFFERS_H

#include <stddef.h>

/* --buffer-offset's bound: below the smallest page, so that every slot keeps the offset */
enum { BUFFER_OFFSET_LIMIT = 4096 };

typedef struct buffers {
    char *send, *recv;       /* nslots consecutive slots each */
    char *send_base, *recv_base;  /* what was allocated: send and recv less their offsets */
    size_t send_stride, recv_stride;
    size_t nslots;
    size_t bytes;            /* total allocated */
} buffers_t;

/* Bytes buffers_alloc would take, to check memory limits first. */
size_t buffers_need(size_t send_bytes, size_t recv_bytes, long off_cache_bytes);
/* offset: the send and receive slots' bytes past a page boundary (0, 0: page-aligned) */
int buffers_alloc(buffers_t *b, size_t send_bytes, size_t recv_bytes, long off_cache_bytes, const long offset[2]);
void buffers_slot(const buffers_t *b, long iter, char **send, char **recv);
/* Where the send and receive slots start past a page boundary (every slot alike). */
void buffers_offsets(const buffers_t *b, long out[2]);
void buffers_free(buffers_t *b);

/* The last-level cache size in bytes (0 if unknown). */
long last_level_cache_bytes(void);
/* Memory available to new allocations on this host, in bytes. */
double available_memory_bytes(void);

#endif
