/* The registry: one row per benchmark. Adding a benchmark is adding a kernel
 * and a row here. */
#include "bench.h"
#include "kernels/p2p.h"
#include "kernels/ringcs.h"
#include <string.h>

static const bench_t pingpong = {
    .name = "pingpong", .family = "p2p", .min_ranks = 2,
    .summary = "half round trip between ranks 0 and 1 (latency, bandwidth)",
    .flags = BENCH_SAMPLE_ROOT | BENCH_HALF_RTT,
    .ops_per_event = p2p_two, .bytes_per_op = p2p_size,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .event = pingpong_event, .verify = pingpong_verify,
};

static const bench_t pingping = {
    .name = "pingping", .family = "p2p", .min_ranks = 2,
    .summary = "ranks 0 and 1 send to each other at once (IMB PingPing)",
    .flags = BENCH_SAMPLE_ROOT,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_size,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .event = pingping_event, .verify = pingping_verify,
};

static const bench_t bw = {
    .name = "bw", .family = "p2p", .min_ranks = 2,
    .summary = "streaming bandwidth 0 -> 1: a window of nonblocking sends, then an ack",
    .flags = BENCH_SAMPLE_ROOT,
    .recv_slots = p2p_window_slots,
    .ops_per_event = p2p_window, .bytes_per_op = p2p_size, .msgs_per_event = window_msgs,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .event = bw_event, .verify = bw_verify,
};

static const bench_t bibw = {
    .name = "bibw", .family = "p2p", .min_ranks = 2,
    .summary = "bidirectional streaming bandwidth between ranks 0 and 1",
    .flags = BENCH_SAMPLE_ROOT,
    .recv_slots = p2p_window_slots,
    .ops_per_event = p2p_window, .bytes_per_op = p2p_twice_size, .msgs_per_event = bibw_msgs,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .event = bibw_event, .verify = bibw_verify,
};

static const bench_t msgrate = {
    .name = "msgrate", .family = "p2p", .min_ranks = 2,
    .summary = "N/2 pairs (i, i+N/2) stream at once: aggregate bandwidth and message rate",
    .flags = BENCH_SYNC_BARRIER,
    .recv_slots = p2p_window_slots,
    .ops_per_event = p2p_window, .bytes_per_op = msgrate_bytes, .msgs_per_event = msgrate_msgs,
    .is_active = msgrate_active, .pairs = msgrate_pairs,
    .event = msgrate_event, .verify = msgrate_verify,
};

static const bench_t ring = {
    .name = "ring", .family = "p2p", .min_ranks = 2,
    .summary = "a message goes round the ring; time of one send/recv (ARSC newsletter)",
    .flags = 0,
    .ops_per_event = p2p_ranks, .bytes_per_op = p2p_size,
    .pairs = p2p_ring_pairs,
    .event = ring_event, .verify = from_left_verify,
};

static const bench_t sendrecv = {
    .name = "sendrecv", .family = "p2p", .min_ranks = 2,
    .summary = "MPI_Sendrecv along a periodic chain (IMB Sendrecv)",
    .flags = 0,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_twice_size,
    .pairs = p2p_ring_pairs,
    .event = sendrecv_event, .verify = from_left_verify,
};

static const bench_t exchange = {
    .name = "exchange", .family = "p2p", .min_ranks = 2,
    .summary = "to and from both neighbours on a periodic chain (IMB Exchange)",
    .flags = 0,
    .recv_slots = p2p_two_slots,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_four_times_size,
    .pairs = p2p_ring_pairs,
    .event = exchange_event, .verify = exchange_verify,
};

static const bench_t ringcs1 = {
    .name = "ringcs1", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 1: compute, MPI_Send then MPI_Recv (relies on buffering: may deadlock)",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs1_event, .verify = ringcs1_verify,
};

static const bench_t ringcs2 = {
    .name = "ringcs2", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 2: compute, MPI_Sendrecv_replace",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs2_event, .verify = ringcs2_verify,
};

static const bench_t ringcs3 = {
    .name = "ringcs3", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 3: compute, MPI_Sendrecv with double buffering",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs3_event, .verify = ringcs3_verify,
};

static const bench_t ringcs4 = {
    .name = "ringcs4", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 4: MPI_Isend/MPI_Irecv, compute on a third buffer, MPI_Waitall",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs4_event, .verify = ringcs4_verify,
};

static const bench_t ringcs5 = {
    .name = "ringcs5", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 5: like ringcs4 with MPI_Testall every --nblock elements of computation",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs5_event, .verify = ringcs5_verify,
};

const bench_t *const registry[] = {
    &pingpong, &pingping, &bw, &bibw, &msgrate, &ring, &sendrecv, &exchange,
    &ringcs1, &ringcs2, &ringcs3, &ringcs4, &ringcs5,
};
const int registry_size = sizeof registry / sizeof registry[0];

const bench_t *bench_find(const char *name)
{
    for (int i = 0; i < registry_size; i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}
