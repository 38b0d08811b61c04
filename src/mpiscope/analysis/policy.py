"""Every threshold of the models (fits, switches, bursts, topology, LogGP, the copy-rate mark) in
one object, each beside the evidence for its value (docs/models.md, "The constants"); the
launch-level statistics have theirs in `results.policy`. Code reads `ANALYSIS.name`; a study of
another value makes a `dataclasses.replace(ANALYSIS, ...)`."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnalysisPolicy:
    # --- definitions ---
    tukey_c: float = 4.685          # Tukey's biweight: 95 % efficiency at the normal distribution

    # --- the weight of a point (analysis/measured.py's sigma) ---
    # A CI narrower than this fraction of the median is not believed: the medians of neighbouring
    # sizes scatter more than their own CIs say (cache state, page placement), so weights built
    # from raw CIs would let one point dominate.
    rel_sigma_floor: float = 0.005
    abs_sigma_floor_us: float = 0.002  # below the timer's practical resolution nothing is resolved

    # --- the Hockney fit (analysis/hockney.py) ---
    bootstrap_min_points: int = 8   # below this many sizes, resampled sets are degenerate: WLS instead
    bootstrap_reps: int = 2000      # resamples of one fit...
    switch_reps: int = 1000         # ...and of each regime's fit inside the switch search
    # A negative intercept smaller than this share of the regime's shortest time is the line's
    # curvature at large sizes (alpha there is an intercept, not a latency), not a claim of one.
    negative_latency_share: float = 0.05
    # `mpiscope model`: a regime's throughput above this many times the fastest memcpy the run
    # measured (in cache) is an artefact of the fit: a message is copied at least once, by a core.
    memcpy_ceiling: float = 10.0
    min_sizes_for_switches: int = 6  # two segments of min_segment_sizes: below, one line is all there is

    # --- segmentation (analysis/segment.py; docs/models.md, steps 1-3) ---
    spike_sd: float = 6.0           # Hampel filter: a point this many robust SDs from its window median...
    spike_window: int = 2           # ...of this many sizes each side (a switch moves every later point)
    penalty: float = 2.0            # twice BIC: the break position is chosen from all N places
    min_segment_sizes: int = 3      # a line and a break need three points
    max_segments: int = 30          # far more regimes than any MPI has (they have 2-4)
    # A spike-made break: one robust line fits both neighbouring segments within break_fit_sd after
    # giving up at most break_give_up of their points (2 at least), and no more than spike_budget
    # of all points (2 at least) is given up so, so a real short regime is not eroded.
    break_fit_sd: float = 4.0
    break_give_up: float = 0.10
    spike_budget: float = 0.05

    # --- staircases (packetisation) ---
    step_spacing_tol: float = 0.15  # breaks of a staircase sit within 15 % of a period of the grid
    min_step_breaks: int = 4        # three intervals at least make a period
    # The first break of a staircase stays a protocol switch when it jumps this many times the
    # median step (a switch at 1000 bytes, then ~480-byte steps).
    step_switch_jump: float = 2.0

    # --- confirming a switch in every launch (docs/models.md, step 6) ---
    # Each launch is judged locally, on its own confirm_near measured sizes nearest the bracket on
    # each side (inside the two regimes), and can judge when it has confirm_min_side of them on
    # each side (Open MPI, eager limit 4096: launches with fewer refused the real switch).
    confirm_near: int = 4
    confirm_min_side: int = 2
    # A launch judges a break only from sizes near it: its nearest size below the bracket at least
    # 1/judge_reach of the bracket's lower end, its nearest above at most judge_reach times the
    # upper (a launch of powers of two that skipped one size still judges; one whose nearest sizes
    # are 256 B and 256 KiB says nothing about a switch at 4 KiB), and none of its sizes
    # judge_span-fold or further from the bracket (384 KiB..1 MiB carried to 4096 B along the
    # curved rendezvous regime gave about nothing; 8 and 10 KiB carried to 512 B judge well).
    judge_reach: float = 4.0
    judge_span: float = 32.0
    # It shows the break when it has show_share of what the launch-level points at the same sizes
    # show, the same way (log scale; one launch's point scatters by 10-15 % on Open MPI, so a half
    # refused real switches in runs of 30 launches), in the jump or in the change of the per-byte
    # cost, whichever the launch-level break shows clearly: a jump of direction_jump or more, a
    # per-byte cost changing direction_ratio-fold or more that moves T by direction_jump.
    show_share: float = 1 / 3
    direction_jump: float = 0.03
    direction_ratio: float = 1.25
    # A launch with no jump at the bracket but one measured size of its own to either side places
    # the same switch there (Open MPI, eager limit 4096: T at 4096 B on the eager line, the jump
    # only by 6144 B) when the launch-level jump is placed_jump-fold or more (a third of it is then
    # far beyond one launch's scatter).
    placed_jump: float = 1.5
    # A launch whose own lines jump at the bracket by other_mode times the launch-level break and
    # by other_mode_jump-fold at least, either way, shows it too, as does one that jumps
    # other_mode_jump-fold either way while changing its offset from the launch-level points by as
    # much (another mode on one side only: Open MPI's fast launches up to the eager limit).
    other_mode: float = 2.0
    other_mode_jump: float = 1.5
    # "Launches disagree": launches of one size differ by more than disagree_ratio times their own
    # intervals' span and by more than disagree_floor (a few % is the drift of a quiet machine).
    disagree_ratio: float = 3.0
    disagree_floor: float = 0.05

    # --- refinement (mpptest-style; docs/models.md, "Adaptive refinement") ---
    refine_tolerance: float = 0.05  # a switch is located when its bracket is within 5 % of its size
    refine_per_gap: int = 3         # new sizes a round: a bracket shrinks about 4x a round
    refine_max_rounds: int = 10     # 3 rounds locate a switch between powers of two within 5 %
    refine_geometric: float = 4.0   # a bracket wider than this ratio gets geometrically spaced sizes
    refine_default_tolerance: float = 0.10  # the default run's refinement, within its budget
    drawn_reps: int = 200           # resamples of a regime's fit drawn in a plot (`mpiscope model` has the CIs)

    # --- bursts of a rate limiter (analysis/burst.py) ---
    # A point near a burst has a fastest sample at most 1/burst_fast_share of its bytes x the shaped
    # regime's per-byte cost (measured 1/5-1/100 around a 64 kB bucket; a point of a protocol
    # regime cannot go below 1, noise aside).
    burst_fast_share: float = 3.0
    # A point is split when its median is burst_split_ratio times its fastest sample (1.1-1.6
    # without a bucket on a loaded machine, though a busy moment can split single points 6-80x).
    burst_split_ratio: float = 3.0
    # A break is a burst when at least burst_split_min of the burst_split_near sizes on each side
    # are split and that fast, and the largest size measured is whole again.
    burst_split_near: int = 4
    burst_split_min: int = 2

    # --- topology from the pair map (analysis/topology.py) ---
    # Two distances belong to different link levels when the larger is at least this much the
    # smaller: one more link (a hop through a switch) adds a link latency to a route of two or more.
    level_gap: float = 1.2
    # Two close ranks are in one group when more than this share of their close ranks is common
    # (one group: 16 of 24 in a dragonfly of 4 x 4 routers of 4 nodes; a global link's ends: 8 of 32).
    group_shared: float = 0.5

    # --- LogGP (analysis/loggp.py) ---
    loggp_large_bytes: int = 64 * 1024  # G from sizes past any eager limit seen on shared memory or a NIC
    loggp_large_sizes: int = 3          # ...and from at least the largest three sizes

    # --- collective models (analysis/predict.py) ---
    gamma_min_bytes: int = 4096     # reduce_local's slope from here up, past its call overhead

    # --- studies ---
    nearest_size_ratio: float = 1.5  # a measured size stands for a target within this factor (log scale)

    # --- tuning (analysis/tune.py; docs/tune.md, "Liveness") ---
    # A side's fastest launch mode is the machine's usual state, and alone compared, when it holds
    # at least this share of the side's launches; a loaded machine runs a whole launch 100-1000 x
    # slower now and then, and a fast mode of a few launches is the rare state.
    usual_mode_share: float = 0.5

    # --- the copy-rate mark (analysis/cache.py; docs/benchmarks.md, "Working set and copy rate") ---
    # A stream's figure is marked above this many times its reference copy rate. Genuine one-copy
    # transfers (put_bw/get_bw at 64 KiB and 1 MiB, distinct places, MPICH on 2 ranks) read up
    # to 1.15x the copy rate of their working set, 1.36x when a loaded host slowed the copy's
    # samples; one place per epoch (--rma-buffers single) reads 2.5-38x the out-of-cache rate.
    copy_margin: float = 1.5

    # --- the twin: calibration and the closed form's contention check (docs/simulation.md) ---
    # A held-out size is every twin_hold_every-th size inside a regime of at least twin_hold_min
    # sizes, never a regime's first or last two: the sizes that fix a regime's ends stay in its fit.
    twin_hold_every: int = 3
    twin_hold_min: int = 5
    # A flat regime (no bandwidth to fit) prices its largest size's bytes at this share of its latency.
    twin_flat_share: float = 0.01
    # Validation targets by what a point is to the fit: the sizes it fitted, the sizes it left out,
    # and what the pingpong never showed it (a window of messages, the collectives' algorithms).
    twin_target_fitted: float = 0.05
    twin_target_held_out: float = 0.10
    twin_target_not_fitted: float = 0.15
    # Where the messages and bytes of the closed form's algorithm that cross the platform's
    # narrowest shared link take this share of the closed form's time or more, contention makes
    # the closed form unreliable: on SimGrid's `cluster` at 1024 ranks the 8 B allreduce (share
    # 0.12, its algorithm's messages counted) took 12.8 % longer than the closed form, 3.1 % at 256
    # ranks (0.03); counted by the fewest bytes, the 1 KiB binomial reduce and bcast (share 0.5)
    # missed it by 31-33 %, the 64 KiB allreduce (16) by 99 % (docs/simulation.md, "Fitted at 4-16
    # ranks, validated at 1024 ranks", "`predict`'s contention check").
    contention_share: float = 0.1
    # What a message costs a shared link besides its payload, in bytes (the check counts it per
    # message of the closed form's algorithm). SimGrid 3.32 charges about 16 B: on
    # cluster:nodes=16,bb-bw=1GBps (factors 1) the 64 zero-byte messages of a 16-rank
    # dissemination barrier took 1.07 us more than on a backbone that never binds, the 8 B
    # recursive-doubling allreduce 1.61 us (64 x 24 B at 1 GB/s: 1.54 us, crosstraffic's 4 % the
    # rest); at 1024 ranks on the 100 GB/s backbone the same fit (4-256 B) gives 16 B. A real
    # link's frame headers are larger (Ethernet, IP and TCP: 66 B).
    message_link_bytes: float = 16.0

    # --- tune's proof that a coll/han level reaches the timed calls (analysis/tunelayers.py) ---
    # han's own set-up and the engine's bookkeeping (gathers, bcasts of a few values) call the same
    # collectives through han's levels: at 4 ranks on 2 hosts their lookups were of 4-1248 bytes
    # (Open MPI 5.0.11), the timed calls' of the timed size and up. A timed size at or below this
    # is not told from theirs.
    han_setup_bytes: int = 4096


ANALYSIS = AnalysisPolicy()
