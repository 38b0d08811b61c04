/* Message buffers: page-aligned, optionally a pool of slots cycled per
 * iteration so that data comes from memory rather than cache (--off-cache). */
#ifndef MPISCOPE_BUFFERS_H
#define MPISCOPE_BUFFERS_H

#include <stddef.h>

typedef struct buffers {
    char *send, *recv;       /* nslots consecutive slots each */
    size_t send_stride, recv_stride;
    size_t nslots;
    size_t bytes;            /* total allocated */
} buffers_t;

/* Bytes buffers_alloc would take, to check memory limits first. */
size_t buffers_need(size_t send_bytes, size_t recv_bytes, long off_cache_bytes);
int buffers_alloc(buffers_t *b, size_t send_bytes, size_t recv_bytes, long off_cache_bytes);
void buffers_slot(const buffers_t *b, long iter, char **send, char **recv);
void buffers_free(buffers_t *b);

/* The last-level cache size in bytes (0 if unknown). */
long last_level_cache_bytes(void);
/* Memory available to new allocations on this host, in bytes. */
double available_memory_bytes(void);

#endif
