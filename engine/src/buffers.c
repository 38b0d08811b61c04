/* Buffer pools, check patterns and the memory facts they are sized by. */
#include "buffers.h"
#include "bench.h"
#include "sim.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t page_round(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return n == 0 ? page : (n + page - 1) / page * page;
}

/* Enough slots that one pass through them is twice the cache: every reuse misses. */
static size_t slot_count(size_t per_slot, long off_cache_bytes)
{
    if (off_cache_bytes <= 0) return 1;
    size_t n = (2 * (size_t)off_cache_bytes + per_slot - 1) / per_slot;
    return n < 2 ? 2 : n;
}

size_t buffers_need(size_t send_bytes, size_t recv_bytes, long off_cache_bytes)
{
    size_t per_slot = page_round(send_bytes) + page_round(recv_bytes);
    return per_slot * slot_count(per_slot, off_cache_bytes);
}

/* A page-aligned pool of bytes, offset bytes in: 0 when it cannot be had. */
static char *pool(size_t bytes, long offset, char **base)
{
    void *p = NULL;
    if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), bytes + (size_t)offset)) return NULL;
    *base = p;
    return (char *)p + offset;
}

int buffers_alloc(buffers_t *b, size_t send_bytes, size_t recv_bytes, long off_cache_bytes, const long offset[2])
{
    memset(b, 0, sizeof *b);
    b->send_stride = page_round(send_bytes);
    b->recv_stride = page_round(recv_bytes);
    b->nslots = slot_count(b->send_stride + b->recv_stride, off_cache_bytes);
    b->bytes = (b->send_stride + b->recv_stride) * b->nslots;
    /* simulated: nothing to touch, no fault is timed, and no copy to align */
    int shared = sim_buffers_alloc(b->send_stride * b->nslots, b->recv_stride * b->nslots, &b->send, &b->recv);
    if (shared) return shared > 0 ? 0 : -1;
    size_t sbytes = b->send_stride * b->nslots, rbytes = b->recv_stride * b->nslots;
    b->send = pool(sbytes, offset[0], &b->send_base);
    b->recv = b->send ? pool(rbytes, offset[1], &b->recv_base) : NULL;
    if (!b->recv) {
        free(b->send_base);
        memset(b, 0, sizeof *b);
        return -1;
    }
    /* touch every page now so that first-touch faults are not timed */
    memset(b->send, 'a', sbytes);
    memset(b->recv, 'b', rbytes);
    return 0;
}

void buffers_slot(const buffers_t *b, long iter, char **send, char **recv)
{
    size_t slot = (size_t)iter % b->nslots;
    *send = b->send + slot * b->send_stride;
    *recv = b->recv + slot * b->recv_stride;
}

void buffers_offsets(const buffers_t *b, long out[2])
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    out[0] = (long)((uintptr_t)b->send % page);
    out[1] = (long)((uintptr_t)b->recv % page);
}

void buffers_free(buffers_t *b)
{
    if (!sim_buffers_free(b->send, b->recv)) {
        free(b->send_base);
        free(b->recv_base);
    }
    memset(b, 0, sizeof *b);
}

long last_level_cache_bytes(void)
{
    long best = 0;
    for (int idx = 0; idx < 8; idx++) {
        char path[128], text[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (!f) break;
        if (fgets(text, sizeof text, f)) {
            char unit = 'B';
            long v = 0;
            if (sscanf(text, "%ld%c", &v, &unit) >= 1) {
                if (unit == 'K') v <<= 10;
                else if (unit == 'M') v <<= 20;
                if (v > best) best = v;
            }
        }
        fclose(f);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (best == 0) best = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return best > 0 ? best : 32L << 20;
}

double available_memory_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        long kib;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %ld kB", &kib) == 1) { fclose(f); return kib * 1024.0; }
        fclose(f);
    }
    return (double)sysconf(_SC_AVPHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
}

/* ---- --check patterns ---- */

static uint8_t pattern_byte(size_t i, int sender, long iter)
{
    uint32_t x = (uint32_t)i * 2654435761u ^ ((uint32_t)sender * 40503u + (uint32_t)iter * 2246822519u);
    x ^= x >> 15;
    return (uint8_t)(x ^ (x >> 8));
}

void check_fill(char *buf, size_t n, int sender, long iter)
{
    for (size_t i = 0; i < n; i++) buf[i] = (char)pattern_byte(i, sender, iter);
}

long check_compare(const char *buf, size_t n, int sender, long iter)
{
    long wrong = 0;
    for (size_t i = 0; i < n; i++) wrong += (uint8_t)buf[i] != pattern_byte(i, sender, iter);
    return wrong;
}
