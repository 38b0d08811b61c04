/* The registry: one row per benchmark. Adding a benchmark is adding a kernel
 * and a row here; a family's rows point at its option table. */
#include "registry.h"
#include "kernels/coll.h"
#include "kernels/congestion.h"
#include "kernels/hw.h"
#include "kernels/imbmt.h"
#include "kernels/layout.h"
#include "kernels/loggp.h"
#include "kernels/grid.h"
#include "kernels/nbc.h"
#include "kernels/neighbor.h"
#include "kernels/p2p.h"
#include "kernels/pairs.h"
#include "kernels/persistent.h"
#include "kernels/ringcs.h"
#include "kernels/fwq.h"
#include "kernels/rma.h"
#include "kernels/startup.h"
#include "kernels/threads.h"
#include <string.h>

static const bench_t pingpong = {
    .name = "pingpong", .family = "p2p", .min_ranks = 2,
    .summary = "half round trip between ranks 0 and 1 (latency, bandwidth)",
    .flags = BENCH_SAMPLE_ROOT | BENCH_HALF_RTT,
    .options = &p2p_options,
    .ops_per_event = p2p_two, .bytes_per_op = p2p_size,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .event = pingpong_event, .verify = pingpong_verify,
    .setup = layout_setup, .teardown = layout_teardown, .buffer_bytes = layout_buffers, .check_fill = layout_fill,
    .plan_skip = layout_plan_skip, .describe = layout_describe,  /* --layout (kernels/layout.c) */
};

static const bench_t pingping = {
    .name = "pingping", .family = "p2p", .min_ranks = 2,
    .summary = "ranks 0 and 1 send to each other at once (IMB PingPing)",
    .flags = BENCH_SAMPLE_ROOT,
    .options = &p2p_options,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_size,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .event = pingping_event, .verify = pingping_verify,
    .setup = layout_setup, .teardown = layout_teardown, .buffer_bytes = layout_buffers, .check_fill = layout_fill,
    .plan_skip = layout_plan_skip, .describe = layout_describe,  /* --layout (kernels/layout.c) */
};

static const bench_t bw = {
    .name = "bw", .family = "p2p", .min_ranks = 2,
    .summary = "streaming bandwidth 0 -> 1: a window of nonblocking sends, then an ack",
    .flags = BENCH_SAMPLE_ROOT,
    .options = &p2p_options,
    .recv_slots = p2p_window_slots,
    .ops_per_event = p2p_window_ops, .bytes_per_op = p2p_size, .msgs_per_event = window_msgs,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .event = bw_event, .verify = bw_verify,
    .setup = layout_setup, .teardown = layout_teardown, .buffer_bytes = p2p_stream_buffers,
    .check_fill = p2p_stream_fill, .working_set = bw_working_set,  /* --buffers (kernels/p2p.c) */
    .plan_skip = layout_plan_skip, .describe = stream_describe,  /* --layout (kernels/layout.c) */
};

static const bench_t bibw = {
    .name = "bibw", .family = "p2p", .min_ranks = 2,
    .summary = "bidirectional streaming bandwidth between ranks 0 and 1",
    .flags = BENCH_SAMPLE_ROOT,
    .options = &p2p_options,
    .recv_slots = p2p_window_slots,
    .ops_per_event = p2p_window_ops, .bytes_per_op = p2p_twice_size, .msgs_per_event = bibw_msgs,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .event = bibw_event, .verify = bibw_verify,
    .setup = layout_setup, .teardown = layout_teardown, .buffer_bytes = p2p_stream_buffers,
    .check_fill = p2p_stream_fill, .working_set = bibw_working_set,  /* --buffers (kernels/p2p.c) */
    .plan_skip = layout_plan_skip, .describe = stream_describe,  /* --layout (kernels/layout.c) */
};

static const bench_t msgrate = {
    .name = "msgrate", .family = "p2p", .min_ranks = 2,
    .summary = "N/2 pairs (i, i+N/2) stream at once: aggregate bandwidth and message rate",
    .flags = BENCH_SYNC_BARRIER,
    .options = &p2p_options,
    .recv_slots = p2p_window_slots,
    .ops_per_event = p2p_window_ops, .bytes_per_op = msgrate_bytes, .msgs_per_event = msgrate_msgs,
    .is_active = msgrate_active, .pairs = msgrate_pairs,
    .event = msgrate_event, .verify = msgrate_verify,
    .buffer_bytes = msgrate_buffers, .check_fill = p2p_stream_fill, .working_set = msgrate_working_set,
    .describe = msgrate_describe,  /* --buffers (kernels/p2p.c) */
};

static const bench_t ring = {
    .name = "ring", .family = "p2p", .min_ranks = 2,
    .summary = "a message goes round the ring; time of one send/recv (ARSC newsletter)",
    .flags = 0,
    .options = &p2p_options,
    .ops_per_event = p2p_ranks, .bytes_per_op = p2p_size,
    .pairs = p2p_ring_pairs,
    .event = ring_event, .verify = from_left_verify,
};

static const bench_t sendrecv = {
    .name = "sendrecv", .family = "p2p", .min_ranks = 2,
    .summary = "MPI_Sendrecv along a periodic chain (IMB Sendrecv)",
    .flags = 0,
    .options = &p2p_options,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_twice_size,
    .pairs = p2p_ring_pairs,
    .event = sendrecv_event, .verify = from_left_verify,
};

static const bench_t exchange = {
    .name = "exchange", .family = "p2p", .min_ranks = 2,
    .summary = "to and from both neighbours on a periodic chain (IMB Exchange)",
    .flags = 0,
    .options = &p2p_options,
    .recv_slots = p2p_two_slots,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_four_times_size,
    .pairs = p2p_ring_pairs,
    .event = exchange_event, .verify = exchange_verify,
};

static const bench_t ringcs1 = {
    .name = "ringcs1", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 1: compute, MPI_Send then MPI_Recv (relies on buffering: may deadlock)",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .options = &ringcs_options,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs1_event, .verify = ringcs1_verify, .describe = ringcs1_describe,
};

static const bench_t ringcs2 = {
    .name = "ringcs2", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 2: compute, MPI_Sendrecv_replace",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .options = &ringcs_options,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs2_event, .verify = ringcs2_verify, .describe = ringcs2_describe,
};

static const bench_t ringcs3 = {
    .name = "ringcs3", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 3: compute, MPI_Sendrecv with double buffering",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .options = &ringcs_options,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs3_event, .verify = ringcs3_verify, .describe = ringcs3_describe,
};

static const bench_t ringcs4 = {
    .name = "ringcs4", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 4: MPI_Isend/MPI_Irecv, compute on a third buffer, MPI_Waitall",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .options = &ringcs_options,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs4_event, .verify = ringcs4_verify, .describe = ringcs4_describe,
};

static const bench_t ringcs5 = {
    .name = "ringcs5", .family = "ringcs", .min_ranks = 2,
    .summary = "ring case study algorithm 5: like ringcs4 with MPI_Testall every --nblock elements of computation",
    .flags = BENCH_SYNC_BARRIER | BENCH_EVEN_RANKS | BENCH_DOUBLES,
    .options = &ringcs_options,
    .recv_slots = ringcs_slots,
    .ops_per_event = ringcs_iterations, .bytes_per_op = ringcs_bytes,
    .pairs = p2p_ring_pairs,
    .event = ringcs5_event, .verify = ringcs5_verify, .describe = ringcs5_describe,
};

/* LogGP overheads, netgauge method (kernels/loggp.c): rank 0's time inside the call. */
static const bench_t overhead_send = {
    .name = "overhead_send", .family = "loggp", .min_ranks = 2,
    .summary = "LogGP o_s: rank 0's time inside MPI_Send to rank 1 (netgauge)",
    .flags = BENCH_SAMPLE_ROOT | BENCH_SYNC_BARRIER,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_size,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .event = overhead_send_event, .verify = overhead_send_verify,
};

static const bench_t overhead_recv = {
    .name = "overhead_recv", .family = "loggp", .min_ranks = 2,
    .summary = "LogGP o_r: rank 0's time inside MPI_Recv of a message already arrived (netgauge)",
    .flags = BENCH_SAMPLE_ROOT | BENCH_SYNC_BARRIER,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_size,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .setup = overhead_recv_setup, .event = overhead_recv_event, .teardown = overhead_recv_teardown,
    .verify = overhead_recv_verify,
};

/* The hardware's limit (kernels/hw.c): no MPI message is timed. */
static const bench_t memcpy_row = {
    .name = "memcpy", .family = "hw", .min_ranks = 1,
    .summary = "single-core memcpy bandwidth on rank 0 (in cache when small, from memory when large)",
    .flags = BENCH_SAMPLE_ROOT,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_size,
    .is_active = hw_rank0_active,
    .event = memcpy_event, .verify = memcpy_verify,
};

static const bench_t reduce_local_row = {
    .name = "reduce_local", .family = "hw", .min_ranks = 1,
    .summary = "MPI_Reduce_local of size/4 floats (sum) on rank 0: gamma of the collective models",
    .flags = BENCH_SAMPLE_ROOT,
    .ops_per_event = p2p_one, .bytes_per_op = p2p_size,
    .is_active = hw_rank0_active,
    .event = reduce_local_event, .verify = reduce_local_verify,
};

static const bench_t cacheline = {
    .name = "cacheline", .family = "hw", .min_ranks = 2,
    .summary = "core-to-core latency: ranks 0 and 1 bounce a cache line in shared memory (half round trip)",
    .flags = BENCH_SAMPLE_ROOT | BENCH_HALF_RTT | BENCH_NO_SIZE,
    .ops_per_event = p2p_two, .bytes_per_op = p2p_size,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01, .buffer_bytes = cacheline_buffers,
    .setup = cacheline_setup, .event = cacheline_event, .teardown = cacheline_teardown,
    .verify = cacheline_verify,
};

/* Collectives: every rank takes part; the figure per sample is the slowest
 * rank's (from the common start under window sync). */
#define COLL_ROW(nm, flg, summ, bytes, busbw)                                                        \
    static const bench_t nm##_row = {                                                                \
        .name = #nm, .family = "coll", .min_ranks = 1, .summary = summ,                              \
        .flags = BENCH_COLLECTIVE | (flg), .options = &coll_options, .ops_per_event = coll_one,      \
        .bytes_per_op = bytes, .busbw_factor = busbw, .buffer_bytes = nm##_buffers,                  \
        .check_fill = nm##_fill, .setup = nm##_setup, .teardown = coll_teardown, .event = nm##_event, \
        .verify = nm##_verify, .plan_skip = coll_plan_skip, .describe = coll_describe,               \
    }

/* Nonblocking collectives: three phases (pure, compute, overlapped), the
 * blocking twin's buffers and checks. */
#define NBC_ROW(nm, twin, flg, summ, bytes, busbw)                                                    \
    static const bench_t nm##_row = {                                                                 \
        .name = #nm, .family = "nbc", .min_ranks = 1, .summary = summ,                                \
        .flags = BENCH_COLLECTIVE | (flg), .options = &coll_options, .ops_per_event = coll_one,       \
        .bytes_per_op = bytes, .busbw_factor = busbw, .buffer_bytes = twin##_buffers,                 \
        .check_fill = twin##_fill, .setup = twin##_setup, .teardown = coll_teardown,                  \
        .event = nm##_event, .verify = twin##_verify, .phases = 3, .calibrate = nbc_calibrate,        \
        .plan_skip = coll_plan_skip, .describe = nbc_describe,                                         \
    }

COLL_ROW(barrier, BENCH_NO_SIZE, "MPI_Barrier (no data; measured once per rank count)", coll_zero, NULL);
COLL_ROW(bcast, 0, "MPI_Bcast of size bytes from the root", coll_size, coll_busbw_one);
COLL_ROW(reduce, BENCH_REDUCTION, "MPI_Reduce of size bytes per rank to the root", coll_size, coll_busbw_one);
COLL_ROW(allreduce, BENCH_REDUCTION, "MPI_Allreduce of size bytes per rank", coll_size, coll_busbw_allreduce);
COLL_ROW(allgather, 0, "MPI_Allgather: each rank contributes size bytes", coll_ranks_size, coll_busbw_spread);
COLL_ROW(allgatherv, 0, "MPI_Allgatherv: each rank contributes size bytes (uneven under --check)",
         coll_ranks_size, coll_busbw_spread);
COLL_ROW(alltoall, 0, "MPI_Alltoall: size bytes to every rank", coll_ranks_size, coll_busbw_spread);
COLL_ROW(alltoallv, 0, "MPI_Alltoallv: size bytes to every rank (uneven under --check)", coll_ranks_size,
         coll_busbw_spread);
COLL_ROW(gather, 0, "MPI_Gather: each rank sends size bytes to the root", coll_ranks_size, coll_busbw_spread);
COLL_ROW(gatherv, 0, "MPI_Gatherv: each rank sends size bytes to the root (uneven under --check)",
         coll_ranks_size, coll_busbw_spread);
COLL_ROW(scatter, 0, "MPI_Scatter: the root sends size bytes to each rank", coll_ranks_size, coll_busbw_spread);
COLL_ROW(scatterv, 0, "MPI_Scatterv: the root sends size bytes to each rank (uneven under --check)",
         coll_ranks_size, coll_busbw_spread);
COLL_ROW(reduce_scatter, BENCH_REDUCTION, "MPI_Reduce_scatter of a size-byte vector, about size/ranks each",
         coll_size, coll_busbw_spread);
COLL_ROW(reduce_scatter_block, BENCH_REDUCTION, "MPI_Reduce_scatter_block of a size-byte vector, size/ranks each",
         coll_size, coll_busbw_spread);
COLL_ROW(scan, BENCH_REDUCTION, "MPI_Scan of size bytes per rank", coll_size, NULL);
COLL_ROW(exscan, BENCH_REDUCTION, "MPI_Exscan of size bytes per rank", coll_size, NULL);

NBC_ROW(ibarrier, barrier, BENCH_NO_SIZE, "MPI_Ibarrier: pure, compute and overlapped time", coll_zero, NULL);
NBC_ROW(ibcast, bcast, 0, "MPI_Ibcast with overlapped compute", coll_size, coll_busbw_one);
NBC_ROW(ireduce, reduce, BENCH_REDUCTION, "MPI_Ireduce with overlapped compute", coll_size, coll_busbw_one);
NBC_ROW(iallreduce, allreduce, BENCH_REDUCTION, "MPI_Iallreduce with overlapped compute", coll_size,
        coll_busbw_allreduce);
NBC_ROW(iallgather, allgather, 0, "MPI_Iallgather with overlapped compute", coll_ranks_size, coll_busbw_spread);
NBC_ROW(ialltoall, alltoall, 0, "MPI_Ialltoall with overlapped compute", coll_ranks_size, coll_busbw_spread);
NBC_ROW(ireduce_scatter, reduce_scatter, BENCH_REDUCTION, "MPI_Ireduce_scatter with overlapped compute",
        coll_size, coll_busbw_spread);

/* One-sided (RMA), kernels/rma.c: one labelled point per --rma-sync mode; the
 * pair rows run on ranks 0 and 1, the others on every rank. */
#define RMA_ROW(nm, flg, active, summ, ...)                                                                   \
    static const bench_t nm##_row = {                                                                       \
        .name = #nm, .family = "rma", .min_ranks = 2, .summary = summ, .flags = (flg),                      \
        .options = &rma_options, .recv_slots = rma_recv_slots, .buffer_bytes = rma_buffers,                 \
        .ops_per_event = rma_ops, .bytes_per_op = rma_bytes, .is_active = active, .pairs = rma_pairs,       \
        .setup = rma_setup, .event = rma_event, .teardown = rma_teardown, .check_fill = rma_fill,           \
        .verify = rma_verify, .variants = rma_variants, .variant_label = rma_variant_label,                 \
        .variant_skip = rma_variant_skip, .describe = rma_describe, .working_set = rma_working_set,         \
        __VA_ARGS__                                                                                         \
    }

RMA_ROW(put_latency, BENCH_SAMPLE_ROOT, rma_pair_active,
        "MPI_Put 0 -> 1 and its completion (OSU put_latency; IMB Unidir_put, Put_local with flush_local)", );
RMA_ROW(get_latency, BENCH_SAMPLE_ROOT, rma_pair_active,
        "MPI_Get 0 <- 1 and its completion (OSU get_latency; IMB Unidir_get)", );
RMA_ROW(put_bw, BENCH_SAMPLE_ROOT, rma_pair_active,
        "--rma-ops MPI_Puts 0 -> 1 per epoch (OSU put_bw; IMB Unidir_put aggregate)", .msgs_per_event = rma_msgs);
RMA_ROW(get_bw, BENCH_SAMPLE_ROOT, rma_pair_active,
        "--rma-ops MPI_Gets 0 <- 1 per epoch (OSU get_bw; IMB Unidir_get aggregate)", .msgs_per_event = rma_msgs);
RMA_ROW(put_bibw, BENCH_SAMPLE_ROOT, rma_pair_active,
        "--rma-ops MPI_Puts each way between 0 and 1 per epoch (OSU put_bibw; IMB Bidir_put)",
        .msgs_per_event = rma_msgs);
RMA_ROW(get_bibw, BENCH_SAMPLE_ROOT, rma_pair_active,
        "--rma-ops MPI_Gets each way between 0 and 1 per epoch (IMB Bidir_get)", .msgs_per_event = rma_msgs);
RMA_ROW(acc_latency, BENCH_SAMPLE_ROOT, rma_pair_active,
        "MPI_Accumulate (sum of bytes) 0 -> 1 and its completion (OSU acc_latency; IMB Accumulate)", );
RMA_ROW(get_acc_latency, BENCH_SAMPLE_ROOT, rma_pair_active,
        "MPI_Get_accumulate (sum of bytes) 0 -> 1 (OSU get_acc_latency; IMB Get_accumulate)", );
RMA_ROW(fop_latency, BENCH_SAMPLE_ROOT | BENCH_NO_SIZE, rma_pair_active,
        "MPI_Fetch_and_op (sum, one uint64) 0 -> 1 (OSU fop_latency; IMB Fetch_and_op)", );
RMA_ROW(cas_latency, BENCH_SAMPLE_ROOT | BENCH_NO_SIZE, rma_pair_active,
        "MPI_Compare_and_swap (one uint64) 0 -> 1 (OSU cas_latency; IMB Compare_and_swap)", );
RMA_ROW(one_put_all, BENCH_SAMPLE_ROOT | BENCH_SYNC_BARRIER, NULL,
        "rank 0 puts size bytes to every other rank in one epoch (IMB One_put_all)", );
RMA_ROW(one_get_all, BENCH_SAMPLE_ROOT | BENCH_SYNC_BARRIER, NULL,
        "rank 0 gets size bytes from every other rank in one epoch (IMB One_get_all)", );
RMA_ROW(all_put_all, BENCH_SYNC_BARRIER, NULL,
        "every rank puts size bytes to every other rank in one epoch (IMB All_put_all)", );
RMA_ROW(all_get_all, BENCH_SYNC_BARRIER, NULL,
        "every rank gets size bytes from every other rank in one epoch (IMB All_get_all)", );
RMA_ROW(exchange_put, BENCH_SYNC_BARRIER, NULL,
        "every rank puts size bytes to both ring neighbours in one epoch (IMB Exchange_put)", );
RMA_ROW(exchange_get, BENCH_SYNC_BARRIER, NULL,
        "every rank gets size bytes from both ring neighbours in one epoch (IMB Exchange_get)", );
RMA_ROW(truly_passive_put, BENCH_SAMPLE_ROOT | BENCH_SYNC_BARRIER, rma_pair_active,
        "MPI_Put 0 -> 1 with the target idle in MPI, then computing outside MPI (IMB Truly_passive_put)",
        .phases = 2, .calibrate = rma_calibrate);

/* HPL's process grid: one point per grid shape and size, phases step / row / column. */
static const bench_t grid = {
    .name = "grid", .family = "grid", .min_ranks = 1,
    .summary = "HPL step on every P x Q grid: panel bcast along rows, then allreduce along columns",
    .flags = BENCH_SYNC_BARRIER, .options = &grid_options,
    .ops_per_event = grid_one, .bytes_per_op = grid_size,
    .buffer_bytes = grid_buffers, .setup = grid_setup, .teardown = grid_teardown,
    .event = grid_event, .verify = grid_verify, .phases = 3,
    .variants = grid_variants, .variant_label = grid_variant_label, .describe = grid_describe,
    .no_variant = "no grid shape fits these ranks (--grid)",
};

/* The pair map: one phase per pair and per ring shift, a rank x rank matrix per mode. */
static const bench_t pairs = {
    .name = "pairs", .family = "p2p", .min_ranks = 2,
    .summary = "every pair alone (ping-pong) and all pairs at once in shifted rings: rank x rank matrices",
    .flags = BENCH_SYNC_BARRIER,
    .options = &p2p_options,
    .recv_slots = pairs_slots,
    .ops_per_event = pairs_ops, .bytes_per_op = pairs_size,
    .is_active = pairs_active, .event = pairs_event, .verify = pairs_verify,
    .phase_count = pairs_phase_count, .describe = pairs_describe,
};

/* Persistent point-to-point (kernels/persistent.c): pingpong and bw with
 * requests made once and restarted; --window comes from the p2p table. */
static const bench_t pingpong_persistent = {
    .name = "pingpong_persistent", .family = "persistent", .min_ranks = 2,
    .summary = "pingpong with persistent requests (MPI_Send_init / MPI_Recv_init / MPI_Start)",
    .flags = BENCH_SAMPLE_ROOT | BENCH_HALF_RTT,
    .ops_per_event = p2p_two, .bytes_per_op = p2p_size,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .setup = persistent_setup, .event = pingpong_persistent_event, .teardown = persistent_teardown,
    .verify = pingpong_verify,
};

static const bench_t bw_persistent = {
    .name = "bw_persistent", .family = "persistent", .min_ranks = 2,
    .summary = "bw with persistent requests: MPI_Startall of a window of sends 0 -> 1, then an ack",
    .flags = BENCH_SAMPLE_ROOT, .options = &p2p_options,
    .recv_slots = p2p_window_slots,
    .ops_per_event = p2p_window_ops, .bytes_per_op = p2p_size, .msgs_per_event = window_msgs,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .setup = persistent_setup, .event = bw_persistent_event, .teardown = persistent_teardown,
    .verify = bw_verify,
};

/* ---- fwq (mpiscope doctor's OS-noise probe, kernels/fwq.c) ----
 * Sizeless: every rank computes one fixed work quantum after a barrier; the
 * sample is the slowest rank's quantum. */
static const bench_t fwq_row = {
    .name = "fwq", .family = "hw", .min_ranks = 1,
    .summary = "fixed work quantum on every rank after a barrier: OS noise as a synchronised job sees it",
    .flags = BENCH_SYNC_BARRIER | BENCH_NO_SIZE,
    .ops_per_event = fwq_one, .bytes_per_op = fwq_zero,
    .setup = fwq_setup, .event = fwq_event, .teardown = fwq_teardown, .verify = fwq_verify,
    .collect = fwq_collect, .describe = fwq_describe,  /* every rank's own quanta */
};
/* ---- issue 17: alltoallw, the rest of the nonblocking collectives, persistent
 * collectives (MPI 4.0) and neighbourhood collectives ---- */

COLL_ROW(alltoallw, 0, "MPI_Alltoallw: size bytes to every rank, a type and byte displacement per peer",
         coll_ranks_size, coll_busbw_spread);

NBC_ROW(igather, gather, 0, "MPI_Igather with overlapped compute", coll_ranks_size, coll_busbw_spread);
NBC_ROW(igatherv, gatherv, 0, "MPI_Igatherv with overlapped compute", coll_ranks_size, coll_busbw_spread);
NBC_ROW(iscatter, scatter, 0, "MPI_Iscatter with overlapped compute", coll_ranks_size, coll_busbw_spread);
NBC_ROW(iscatterv, scatterv, 0, "MPI_Iscatterv with overlapped compute", coll_ranks_size, coll_busbw_spread);
NBC_ROW(iallgatherv, allgatherv, 0, "MPI_Iallgatherv with overlapped compute", coll_ranks_size,
        coll_busbw_spread);
NBC_ROW(ialltoallv, alltoallv, 0, "MPI_Ialltoallv with overlapped compute", coll_ranks_size, coll_busbw_spread);
NBC_ROW(ialltoallw, alltoallw, 0, "MPI_Ialltoallw with overlapped compute", coll_ranks_size, coll_busbw_spread);
NBC_ROW(ireduce_scatter_block, reduce_scatter_block, BENCH_REDUCTION,
        "MPI_Ireduce_scatter_block with overlapped compute", coll_size, coll_busbw_spread);
NBC_ROW(iscan, scan, BENCH_REDUCTION, "MPI_Iscan with overlapped compute", coll_size, NULL);
NBC_ROW(iexscan, exscan, BENCH_REDUCTION, "MPI_Iexscan with overlapped compute", coll_size, NULL);

/* Persistent collectives: the blocking twin's buffers and checks; the request
 * is made once (MPI_Bcast_init ...) and started per event, in the nbc rows'
 * three phases. Unavailable with an MPI that lacks them (coll.h says which). */
#define PCOLL_ROW(nm, flg, summ, bytes, busbw)                                                          \
    static const bench_t nm##_persistent_row = {                                                        \
        .name = #nm "_persistent", .family = "persistent", .min_ranks = 1, .summary = summ,             \
        .flags = BENCH_COLLECTIVE | (flg), .options = &coll_options, .ops_per_event = coll_one,         \
        .bytes_per_op = bytes, .busbw_factor = busbw, .buffer_bytes = nm##_buffers,                     \
        .check_fill = nm##_fill, .setup = nm##_setup, .teardown = coll_teardown,                        \
        .event = nm##_persistent_event, .verify = nm##_verify, .plan_skip = coll_plan_skip,             \
        .describe = coll_persistent_describe, .unavailable = COLL_PERSISTENT_UNAVAILABLE,               \
        .phases = 3, .calibrate = nbc_calibrate,                                                        \
    }

PCOLL_ROW(barrier, BENCH_NO_SIZE, "MPI_Barrier_init, then MPI_Start and MPI_Wait per call", coll_zero, NULL);
PCOLL_ROW(bcast, 0, "MPI_Bcast_init: persistent broadcast of size bytes", coll_size, coll_busbw_one);
PCOLL_ROW(reduce, BENCH_REDUCTION, "MPI_Reduce_init: persistent reduce of size bytes", coll_size, coll_busbw_one);
PCOLL_ROW(allreduce, BENCH_REDUCTION, "MPI_Allreduce_init: persistent allreduce of size bytes", coll_size,
          coll_busbw_allreduce);
PCOLL_ROW(allgather, 0, "MPI_Allgather_init: each rank contributes size bytes", coll_ranks_size,
          coll_busbw_spread);
PCOLL_ROW(allgatherv, 0, "MPI_Allgatherv_init: each rank contributes size bytes", coll_ranks_size,
          coll_busbw_spread);
PCOLL_ROW(alltoall, 0, "MPI_Alltoall_init: size bytes to every rank", coll_ranks_size, coll_busbw_spread);
PCOLL_ROW(alltoallv, 0, "MPI_Alltoallv_init: size bytes to every rank", coll_ranks_size, coll_busbw_spread);
PCOLL_ROW(alltoallw, 0, "MPI_Alltoallw_init: size bytes to every rank", coll_ranks_size, coll_busbw_spread);
PCOLL_ROW(gather, 0, "MPI_Gather_init: each rank sends size bytes to the root", coll_ranks_size,
          coll_busbw_spread);
PCOLL_ROW(gatherv, 0, "MPI_Gatherv_init: each rank sends size bytes to the root", coll_ranks_size,
          coll_busbw_spread);
PCOLL_ROW(scatter, 0, "MPI_Scatter_init: the root sends size bytes to each rank", coll_ranks_size,
          coll_busbw_spread);
PCOLL_ROW(scatterv, 0, "MPI_Scatterv_init: the root sends size bytes to each rank", coll_ranks_size,
          coll_busbw_spread);
PCOLL_ROW(reduce_scatter, BENCH_REDUCTION, "MPI_Reduce_scatter_init of a size-byte vector", coll_size,
          coll_busbw_spread);
PCOLL_ROW(reduce_scatter_block, BENCH_REDUCTION, "MPI_Reduce_scatter_block_init of a size-byte vector",
          coll_size, coll_busbw_spread);
PCOLL_ROW(scan, BENCH_REDUCTION, "MPI_Scan_init of size bytes per rank", coll_size, NULL);
PCOLL_ROW(exscan, BENCH_REDUCTION, "MPI_Exscan_init of size bytes per rank", coll_size, NULL);

/* Neighbourhood collectives on --topology: size bytes per neighbour; the
 * nonblocking rows have the nbc rows' three phases. */
#define NEIGHBOR_ROW(nm, summ)                                                                           \
    static const bench_t nm##_row = {                                                                    \
        .name = #nm, .family = "neighbor", .min_ranks = 1, .summary = summ,                              \
        .flags = BENCH_COLLECTIVE, .options = &neighbor_options, .ops_per_event = coll_one,              \
        .bytes_per_op = neighbor_bytes, .buffer_bytes = nm##_buffers, .check_fill = nm##_fill,           \
        .setup = neighbor_setup, .teardown = neighbor_teardown, .event = nm##_event,                     \
        .verify = nm##_verify, .plan_skip = neighbor_plan_skip, .describe = neighbor_describe,           \
    };                                                                                                   \
    static const bench_t i##nm##_row = {                                                                 \
        .name = "i" #nm, .family = "neighbor", .min_ranks = 1, .summary = "nonblocking " summ,           \
        .flags = BENCH_COLLECTIVE, .options = &neighbor_options, .ops_per_event = coll_one,              \
        .bytes_per_op = neighbor_bytes, .buffer_bytes = nm##_buffers, .check_fill = nm##_fill,           \
        .setup = neighbor_setup, .teardown = neighbor_teardown, .event = i##nm##_event,                  \
        .verify = nm##_verify, .phases = 3, .calibrate = neighbor_calibrate,                             \
        .plan_skip = neighbor_plan_skip, .describe = neighbor_describe,                                  \
    }

NEIGHBOR_ROW(neighbor_allgather, "MPI_Neighbor_allgather: size bytes to every neighbour");
NEIGHBOR_ROW(neighbor_allgatherv, "MPI_Neighbor_allgatherv: size bytes to every neighbour (uneven under --check)");
NEIGHBOR_ROW(neighbor_alltoall, "MPI_Neighbor_alltoall: a size-byte block per neighbour");
NEIGHBOR_ROW(neighbor_alltoallv, "MPI_Neighbor_alltoallv: a size-byte block per neighbour (uneven under --check)");
NEIGHBOR_ROW(neighbor_alltoallw, "MPI_Neighbor_alltoallw: a size-byte block per neighbour, byte displacements");
/* ---- threads (kernels/threads.c): osu_latency_mt, IMB-MT; needs MPI_THREAD_MULTIPLE ---- */
static const bench_t latency_mt = {
    .name = "latency_mt", .family = "threads", .min_ranks = 2,
    .summary = "--threads threads of rank 0 (--threads-recv of rank 1) ping-pong at once (osu_latency_mt -t S:R)",
    .flags = BENCH_SAMPLE_ROOT | BENCH_HALF_RTT | BENCH_THREAD_MULTIPLE,
    .options = &threads_options,
    .recv_slots = threads_slots,
    .ops_per_event = threads_ops, .bytes_per_op = p2p_size, .msgs_per_event = threads_msgs,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .setup = threads_setup, .event = latency_mt_event, .teardown = threads_teardown,
    .verify = latency_mt_verify, .plan_skip = threads_plan_skip, .describe = threads_describe,
};

/* ---- start-up (kernels/startup.c): osu_init, osu_hello; one sample per rank per launch ---- */
static const bench_t init_row = {
    .name = "init", .family = "startup", .min_ranks = 1,
    .summary = "time of MPI_Init on each rank, one sample per launch (osu_init); the figure is the slowest rank's",
    .flags = BENCH_ONCE | BENCH_NO_SIZE | BENCH_SYNC_BARRIER,
    .ops_per_event = startup_one, .bytes_per_op = startup_zero, .once = startup_init_once,
    .setup = startup_setup, .event = startup_event, .teardown = startup_teardown,
    .verify = startup_verify, .describe = startup_describe,
};

static const bench_t hello_row = {
    .name = "hello", .family = "startup", .min_ranks = 1,
    .summary = "MPI_Init and a barrier that hears from every rank, one sample per launch (osu_hello)",
    .flags = BENCH_ONCE | BENCH_NO_SIZE | BENCH_SYNC_BARRIER,
    .ops_per_event = startup_one, .bytes_per_op = startup_zero, .once = startup_hello_once,
    .setup = startup_setup, .event = startup_event, .teardown = startup_teardown,
    .verify = startup_verify, .describe = startup_describe,
};

/* ---- many pairs and congestion (kernels/congestion.c): OSU multi_lat, latency_mp, bw_fan_in/out; IMB-P2P ---- */
static const bench_t multi_lat = {
    .name = "multi_lat", .family = "congestion", .min_ranks = 2,
    .summary = "N/2 pairs (i, i+N/2) ping-pong at once: latency per message of the slowest pair (osu_multi_lat)",
    .flags = BENCH_SYNC_BARRIER | BENCH_HALF_RTT, .options = &congestion_options,
    .ops_per_event = p2p_two, .bytes_per_op = p2p_size, .msgs_per_event = multi_lat_msgs,
    .is_active = msgrate_active, .pairs = msgrate_pairs,
    .event = multi_lat_event, .verify = multi_lat_verify,
};

static const bench_t latency_mp = {
    .name = "latency_mp", .family = "congestion", .min_ranks = 2,
    .summary = "pingpong 0 <-> 1 while each has --procs forked (sleeping) child processes (osu_latency_mp)",
    .flags = BENCH_SAMPLE_ROOT | BENCH_HALF_RTT, .options = &congestion_options,
    .ops_per_event = p2p_two, .bytes_per_op = p2p_size,
    .is_active = p2p_first_two_active, .pairs = p2p_pair01,
    .setup = latency_mp_setup, .event = pingpong_event, .teardown = latency_mp_teardown,
    .verify = pingpong_verify, .describe = latency_mp_describe,
};

static const bench_t fan_in = {
    .name = "fan_in", .family = "congestion", .min_ranks = 2,
    .summary = "ranks 1..N-1 each stream --window messages to rank 0: aggregate bandwidth (osu_bw_fan_in)",
    .flags = BENCH_SYNC_BARRIER, .options = &congestion_options,
    .recv_slots = fan_in_slots,
    .ops_per_event = p2p_window_ops, .bytes_per_op = fan_bytes, .msgs_per_event = fan_msgs,
    .pairs = fan_pairs,
    .setup = fan_setup, .event = fan_in_event, .teardown = fan_teardown, .verify = fan_in_verify,
};

static const bench_t fan_out = {
    .name = "fan_out", .family = "congestion", .min_ranks = 2,
    .summary = "rank 0 streams --window messages to each of ranks 1..N-1: aggregate bandwidth (osu_bw_fan_out)",
    .flags = BENCH_SYNC_BARRIER, .options = &congestion_options,
    .recv_slots = fan_out_slots,
    .ops_per_event = p2p_window_ops, .bytes_per_op = fan_bytes, .msgs_per_event = fan_msgs,
    .pairs = fan_pairs,
    .setup = fan_setup, .event = fan_out_event, .teardown = fan_teardown, .verify = fan_out_verify,
};

static const bench_t unirandom = {
    .name = "unirandom", .family = "congestion", .min_ranks = 2,
    .summary = "N one-way messages between random pairs per event: time per message of the job (IMB-P2P Unirandom)",
    .flags = BENCH_SYNC_BARRIER, .options = &congestion_options,
    .recv_slots = random_slots,
    .ops_per_event = random_msgs, .bytes_per_op = p2p_size, .msgs_per_event = random_msgs,
    .event = unirandom_event, .verify = unirandom_verify,
};

static const bench_t birandom = {
    .name = "birandom", .family = "congestion", .min_ranks = 2,
    .summary = "N exchanges (both ways) between random pairs per event (IMB-P2P Birandom)",
    .flags = BENCH_SYNC_BARRIER, .options = &congestion_options,
    .recv_slots = random_slots,
    .ops_per_event = birandom_msgs, .bytes_per_op = p2p_size, .msgs_per_event = birandom_msgs,
    .event = birandom_event, .verify = birandom_verify,
};

static const bench_t corandom = {
    .name = "corandom", .family = "congestion", .min_ranks = 1,
    .summary = "a random ring per event: every rank sends to its successor at once (IMB-P2P Corandom)",
    .flags = BENCH_SYNC_BARRIER, .options = &congestion_options,
    .ops_per_event = random_msgs, .bytes_per_op = p2p_size, .msgs_per_event = random_msgs,
    .event = corandom_event, .verify = corandom_verify,
};

static const bench_t stencil2d = {
    .name = "stencil2d", .family = "congestion", .min_ranks = 1,
    .summary = "halo exchange with the 4 neighbours of a periodic 2-D grid (IMB-P2P Stencil2D)",
    .flags = BENCH_SYNC_BARRIER, .options = &congestion_options,
    .recv_slots = stencil_slots,
    .ops_per_event = p2p_one, .bytes_per_op = stencil_bytes, .msgs_per_event = stencil_msgs,
    .setup = stencil_setup, .event = stencil_event, .teardown = stencil_teardown,
    .verify = stencil_verify, .describe = stencil_describe,
};

static const bench_t stencil3d = {
    .name = "stencil3d", .family = "congestion", .min_ranks = 1,
    .summary = "halo exchange with the 6 neighbours of a periodic 3-D grid (IMB-P2P Stencil3D)",
    .flags = BENCH_SYNC_BARRIER, .options = &congestion_options,
    .recv_slots = stencil_slots,
    .ops_per_event = p2p_one, .bytes_per_op = stencil_bytes, .msgs_per_event = stencil_msgs,
    .setup = stencil_setup, .event = stencil_event, .teardown = stencil_teardown,
    .verify = stencil_verify, .describe = stencil_describe,
};

/* ---- IMB-MT (kernels/imbmt.c): --threads threads per rank, each on its own
 * duplicated communicator, run an IMB-MPI1 kernel at once; needs
 * MPI_THREAD_MULTIPLE. Pairs (i, i + N/2) as IMB-MT's default stride. ---- */
#define MT_P2P_ROW(nm, flg, summ, ops, bytes, msgs, active, prs)                                              \
    static const bench_t nm##_mt_row = {                                                                    \
        .name = #nm "_mt", .family = "threads", .min_ranks = 2, .summary = summ,                            \
        .flags = BENCH_THREAD_MULTIPLE | BENCH_SYNC_BARRIER | (flg), .options = &threads_options,           \
        .ops_per_event = ops, .bytes_per_op = bytes, .msgs_per_event = msgs, .is_active = active,           \
        .pairs = prs, .buffer_bytes = nm##_mt_buffers, .check_fill = imbmt_fill, .setup = nm##_mt_setup,    \
        .event = imbmt_event, .teardown = imbmt_teardown, .verify = imbmt_verify,                           \
        .plan_skip = threads_plan_skip, .describe = imbmt_describe,                                         \
    }
#define MT_COLL_ROW(nm, flg, summ, bytes)                                                                     \
    static const bench_t nm##_mt_row = {                                                                    \
        .name = #nm "_mt", .family = "threads", .min_ranks = 1, .summary = summ,                            \
        .flags = BENCH_THREAD_MULTIPLE | BENCH_COLLECTIVE | (flg), .options = &threads_options,             \
        .ops_per_event = coll_one, .bytes_per_op = bytes, .buffer_bytes = nm##_mt_buffers,                  \
        .check_fill = imbmt_fill, .setup = nm##_mt_setup, .event = imbmt_event, .teardown = imbmt_teardown, \
        .verify = imbmt_verify, .plan_skip = imbmt_coll_plan_skip, .describe = imbmt_describe,              \
    }
MT_P2P_ROW(pingpong, BENCH_HALF_RTT, "IMB-MT PingPongMT: every thread of pairs (i, i+N/2) ping-pongs at once",
           p2p_two, imbmt_t_size, imbmt_pingpong_msgs, msgrate_active, msgrate_pairs);
MT_P2P_ROW(pingping, 0, "IMB-MT PingPingMT: every thread of pairs (i, i+N/2) sends to its twin at once",
           p2p_one, imbmt_t_size, imbmt_pingpong_msgs, msgrate_active, msgrate_pairs);
MT_P2P_ROW(sendrecv, 0, "IMB-MT SendRecvMT: every thread MPI_Sendrecv N/2 ranks on round the ring",
           p2p_one, imbmt_2t_size, imbmt_ring_msgs, NULL, imbmt_ring_pairs);
MT_P2P_ROW(exchange, 0, "IMB-MT ExchangeMT: every thread to and from both neighbours N/2 ranks away",
           p2p_one, imbmt_4t_size, imbmt_exchange_msgs, NULL, imbmt_ring_pairs);
MT_P2P_ROW(uniband, 0, "IMB-MT UniBandMT: every thread streams a --window i -> i+N/2: aggregate bandwidth",
           p2p_window_ops, imbmt_pairs_t_size, imbmt_uniband_msgs, msgrate_active, msgrate_pairs);
MT_P2P_ROW(biband, 0, "IMB-MT BiBandMT: every thread streams a --window both ways in pairs (i, i+N/2)",
           imbmt_two_windows, imbmt_pairs_t_size, imbmt_biband_msgs, msgrate_active, msgrate_pairs);
MT_COLL_ROW(barrier, BENCH_NO_SIZE, "IMB-MT BarrierMT: every thread MPI_Barrier on its own communicator",
            coll_zero);
MT_COLL_ROW(bcast, 0, "IMB-MT BcastMT: every thread MPI_Bcast of size bytes on its own communicator",
            imbmt_t_coll_size);
MT_COLL_ROW(reduce, BENCH_REDUCTION, "IMB-MT ReduceMT: every thread MPI_Reduce of size bytes at once",
            imbmt_t_coll_size);
MT_COLL_ROW(allreduce, BENCH_REDUCTION, "IMB-MT AllReduceMT: every thread MPI_Allreduce of size bytes at once",
            imbmt_t_coll_size);
MT_COLL_ROW(gather, 0, "IMB-MT GatherMT (not built by IMB): every thread MPI_Gather of size bytes per rank",
            imbmt_t_ranks_size);
MT_COLL_ROW(scatter, 0, "IMB-MT ScatterMT (not built by IMB): every thread MPI_Scatter of size bytes per rank",
            imbmt_t_ranks_size);
MT_COLL_ROW(allgather, 0, "IMB-MT AllgatherMT (not built by IMB): every thread MPI_Allgather, size bytes each",
            imbmt_t_ranks_size);
MT_COLL_ROW(alltoall, 0, "IMB-MT AlltoallMT (not built by IMB): every thread MPI_Alltoall, size bytes per peer",
            imbmt_t_ranks_size);

const bench_t *const registry[] = {
    &pingpong, &pingping, &bw, &bibw, &msgrate, &ring, &sendrecv, &exchange,
    &ringcs1, &ringcs2, &ringcs3, &ringcs4, &ringcs5,
    &overhead_send, &overhead_recv, &memcpy_row, &reduce_local_row, &cacheline,
    &barrier_row, &bcast_row, &reduce_row, &allreduce_row, &allgather_row, &allgatherv_row,
    &alltoall_row, &alltoallv_row, &gather_row, &gatherv_row, &scatter_row, &scatterv_row,
    &reduce_scatter_row, &reduce_scatter_block_row, &scan_row, &exscan_row,
    &ibarrier_row, &ibcast_row, &ireduce_row, &iallreduce_row, &iallgather_row, &ialltoall_row,
    &ireduce_scatter_row,
    &put_latency_row, &get_latency_row, &put_bw_row, &get_bw_row, &put_bibw_row, &get_bibw_row,
    &acc_latency_row, &get_acc_latency_row, &fop_latency_row, &cas_latency_row, &one_put_all_row,
    &one_get_all_row, &all_put_all_row, &all_get_all_row, &exchange_put_row, &exchange_get_row,
    &truly_passive_put_row,
    &grid, &pairs,
    &pingpong_persistent, &bw_persistent,
    &fwq_row,
    /* issue 17: coll, nbc, persistent and neighbor rows */
    &alltoallw_row,
    &igather_row, &igatherv_row, &iscatter_row, &iscatterv_row, &iallgatherv_row, &ialltoallv_row,
    &ialltoallw_row, &ireduce_scatter_block_row, &iscan_row, &iexscan_row,
    &barrier_persistent_row, &bcast_persistent_row, &reduce_persistent_row, &allreduce_persistent_row,
    &allgather_persistent_row, &allgatherv_persistent_row, &alltoall_persistent_row, &alltoallv_persistent_row,
    &alltoallw_persistent_row, &gather_persistent_row, &gatherv_persistent_row, &scatter_persistent_row,
    &scatterv_persistent_row, &reduce_scatter_persistent_row, &reduce_scatter_block_persistent_row,
    &scan_persistent_row, &exscan_persistent_row,
    &neighbor_allgather_row, &neighbor_allgatherv_row, &neighbor_alltoall_row, &neighbor_alltoallv_row,
    &neighbor_alltoallw_row, &ineighbor_allgather_row, &ineighbor_allgatherv_row, &ineighbor_alltoall_row,
    &ineighbor_alltoallv_row, &ineighbor_alltoallw_row,
    /* threads, start-up */
    &latency_mt, &init_row, &hello_row,
    /* many pairs and congestion */
    &multi_lat, &latency_mp, &fan_in, &fan_out, &unirandom, &birandom, &corandom, &stencil2d, &stencil3d,
    /* IMB-MT: threads family, kernels/imbmt.c */
    &pingpong_mt_row, &pingping_mt_row, &sendrecv_mt_row, &exchange_mt_row, &uniband_mt_row, &biband_mt_row,
    &barrier_mt_row, &bcast_mt_row, &reduce_mt_row, &allreduce_mt_row, &gather_mt_row, &scatter_mt_row,
    &allgather_mt_row, &alltoall_mt_row,
};
const int registry_size = sizeof registry / sizeof registry[0];

const bench_t *bench_find(const char *name)
{
    for (int i = 0; i < registry_size; i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

int bench_any_with(char *const *names, int n, unsigned flags)
{
    for (int i = 0; i < n; i++) {
        const bench_t *b = bench_find(names[i]);
        if (b && (b->flags & flags) == flags) return 1;
    }
    return 0;
}

int bench_is_family(const char *name)
{
    if (bench_find(name)) return 0;
    for (int i = 0; i < registry_size; i++)
        if (strcmp(registry[i]->family, name) == 0) return 1;
    return 0;
}
