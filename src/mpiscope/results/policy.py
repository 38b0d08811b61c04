"""Every numeric constant of the launch-level statistics, in one object, each beside the evidence
for its value (docs/statistics.md, "The constants"). Code reads `POLICY.name`; a study of another
value makes a `dataclasses.replace(POLICY, ...)` and passes it where a function takes `policy`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

# The 3 % (two levels) and 1 % (three levels) quantiles of the share of variance a best split
# leaves within its levels, for L launches drawn from one log-normal level (100 000-200 000
# simulated sets per L): one level is called several in at most ~4 % of cases whatever its spread.
_MODE_MAX_R2 = {4: 0.0199, 5: 0.0366, 6: 0.0553, 7: 0.0744, 8: 0.0913, 9: 0.107, 10: 0.1199, 11: 0.1318,
                12: 0.142, 13: 0.1519, 14: 0.1594, 15: 0.1663, 16: 0.1735, 17: 0.1789, 18: 0.1852, 19: 0.1907,
                20: 0.1942}
_MODE_MAX_R3 = {6: 0.008, 7: 0.0106, 8: 0.015, 9: 0.0197, 10: 0.0246, 11: 0.0293, 12: 0.0341, 13: 0.0384,
                14: 0.0432, 15: 0.047, 16: 0.0504, 17: 0.0545, 18: 0.0571, 19: 0.0611, 20: 0.0632}


@dataclass(frozen=True)
class Policy:
    # --- distributions (definitions, not tuning) ---
    z95: float = 1.959964          # the normal 97.5 % quantile: a 95 % interval's half-width in SEs
    mad_sigma: float = 1.4826      # MAD -> standard deviation at the normal distribution
    level: float = 0.95            # the level of every interval shown

    # --- the robust launch-level estimate ---
    # From this many launches on, wild launches are left out of the estimate: the MAD of 3-4
    # launches cannot tell a wild launch from spread (tried: Huber's M-estimate with a MAD scale
    # on 3 launches clipped a normal launch in about a third of sets and its interval then ignored
    # it: bench/evidence/run.py's false slower/faster rose from 0 to 12 %). Below, the geometric
    # mean and Student interval, whose width shows a wild launch as "insufficient evidence" and
    # earns the point more launches.
    robust_min_launches: int = 5
    # A wild launch lies more than wild_sd robust SDs and wild_ratio-fold from the median launch:
    # 3.5 SDs is beyond the tail of one normal level (p < 5e-4 a launch), 1.5-fold beyond the
    # spread of one level here (launches differ by 1.2x-1.6x; Open MPI's second mode is 2-3x);
    # robust_keep of the launches must stay, so a real second mode (> 30 %) is kept and named.
    wild_sd: float = 3.5
    wild_ratio: float = 1.5
    robust_keep: float = 0.7
    # An interval whose high/low exceeds this carries no usable information (a factor 2 either
    # way): it is shown as "insufficient evidence: about N more launches", never as a band.
    max_span: float = 2.0
    # Where more than this share of a point's launches is disturbed, it says "machine busy: CAUSE".
    busy_share: float = 0.5

    # --- the disturbance rule (results.disturbance), the counters the engine records per point ---
    # Measured on kept bench/evidence runs (2026-11-25): 373 (point, launch) pairs on a quiet
    # machine, 638 under the bench's half-core load (a load of about 2.5 on 2 cores), 1563 at a
    # load of 8-16; "effect" is a flagged launch's median over the median of the same run's
    # unflagged launches of that point.
    # Involuntary switches per event (warm-up and samples) beyond which a point is disturbed: a
    # switch takes the core for up to a scheduler slice, longer than most events, so each can
    # inflate a sample; with a share f inflated the median is the 0.5/(1-f) quantile of the clean
    # ones, the 62.5th at 0.2.
    switch_share: float = 0.2
    # ...and never for fewer switches than this. Every flag of the switch rule fell on points of
    # under 200 events (long events: 1 MiB collectives, large bw), whose ranks see the kernel's
    # and the launcher's own switches at 85-140 a second on a nearly quiet machine. At 10, the
    # half-core load flagged 19/638 such points (0.2-0.6 switches an event, 10-29 switches) and
    # those launches were 2-4 % faster than their unflagged neighbours, not slower; at 30, 1/638.
    # Under load 8-16, 30 still flags 23 % of the pairs (median +7 % against their neighbours).
    min_switches: int = 30
    # Share of the host's CPU time a hypervisor stole during the point (0 on this VM so far).
    steal_share: float = 0.05
    # Share of the samples left out as invalid (a rank started late): the valid ones are then a
    # selection of the quick events. At load 8-16 the flagged launches' medians were 2.8x their
    # neighbours' (the band 0.2-0.5 alone 2x); under the half-core load +2 % (62/638 flagged).
    invalid_share: float = 0.2
    # The clock-offset error bound as a share of one event beyond which window-synchronised starts
    # no longer start the ranks together. The bound's floor here is 0.2-0.25 us (the ping time),
    # about one event of an 8 B allreduce or a 4 B bcast on 2 ranks: at 1.0 it flagged 13/373
    # quiet pairs and 17/638 under the half-core load, whose medians were 1-6 % faster than their
    # neighbours'; nothing on the quiet or half-core machine exceeded 1.12, so 2.0.
    clock_error_share: float = 2.0

    # --- launches of one run (mpiscope.plan.schedule) ---
    min_launches: int = 3           # the fewest that estimate a between-launch variance with a spare
    max_launches: int = 10          # auto launches stop here (cost: ~1 s a launch on this machine)
    launch_target: float = 0.05     # the launch-level half-width auto launches aim at (relative)
    auto_budget_s: float = 25.0     # measuring time of an auto run without --time-budget
    first_round_ci_target: float = 0.05   # a light first round: between-launch spread is 5-20 % here
    first_round_max_time_s: float = 0.2
    # The default run (no -b, no --sizes): a first round of 5 launches at half the time per point
    # (launch-level spread, not samples, limits its intervals here; 5 launches also leave a wild
    # launch out), at about the wall time of 3 launches at 0.2 s (bench/default_plan/run.py).
    default_plan_launches: int = 5
    default_plan_max_time_s: float = 0.1
    # ...each launch stopping a point at +-2 % rather than the first round's usual 5 %: most small
    # points stop on that target, not on time, and at 5 % one launch's own sampling error (an SE
    # of 2.5 %) was most of their launches' spread (3-4 %), so 5 launches left them off the
    # +-5 % launch target. bench/default_plan/run.py, runs alternated at load 8-14: on target
    # 30 % of the points over 10 runs at 5 %, 36 % over 4 runs at 2 %, at about the same wall
    # time (50-58 s); the runs spread 19-47 %, so this is a direction, not a proof.
    default_plan_ci_target: float = 0.02
    # ...and then auto launches get this long of their own, nearest the target first (the first
    # round and refinement alone took 30-45 s of the 25 s budget at load 8-14, so none ran): a
    # default run at load 9 had 36 of 95 points on target and 24 more one or two launches from
    # it, each such launch of the points near the target taking 3-4 s here.
    default_plan_then_s: float = 10.0
    # No more launches when the launches' variance is at most this share of the drift: the
    # half-width could shrink by under 1 - sqrt(3/4) < 15 %.
    drift_dominates: float = 1 / 3
    # A simulated point (SMPI) repeats its figures: its samples agree when their spread is within
    # this share of the median (a part per million, far below any figure a network model sets) or
    # within simulated_tick_us, SimGrid's own rounding (smpirun's surf/precision 1e-9 s: a 2-rank
    # allreduce after a pingpong read 4.217 and 4.218 us, launches 10.9325 and 10.933 us); only a
    # point whose samples differ within its launch or between launches gets one more launch (a
    # simulation's auto launches: at most simulated_launches).
    simulated_agree: float = 1e-6
    simulated_tick_us: float = 0.002
    simulated_launches: int = 2
    ci_target_min: float = 0.005    # bounds on the engine's per-launch --ci-target (Kalibera & Jones)
    ci_target_max: float = 0.2

    # --- modes (levels the launches fall into; simulated in tests/analysis/test_launches.py) ---
    mode_min_launches: int = 2      # one odd launch is an outlier, not a mode
    mode_min_ratio: float = 1.10    # levels closer than 10 % are not worth naming
    mode_min_gap_se: float = 4.0    # a gap inside 4 SEs of the launches' own error is no gap
    mode_max_levels: int = 3
    mode_max_r2: Mapping[int, float] = field(default_factory=lambda: dict(_MODE_MAX_R2))
    mode_max_r3: Mapping[int, float] = field(default_factory=lambda: dict(_MODE_MAX_R3))

    # --- runs: the drift from one run to the next ---
    drift_min_runs: int = 3         # runs (this one included) of two launches or more
    history_runs: int = 10          # the latest runs of a configuration the drift is learnt from
    history_days: int = 7           # older runs may describe another state of the machine
    # Until the drift is learnt, a stated prior for it: a run effect of this standard deviation on
    # the log scale, treated as known. Measured (bench/evidence/run.py's kept runs, 64 points whose
    # launches were not mostly disturbed, 4 consecutive runs each): the drift's SD had a median of
    # 0.010, a root mean square of 0.027 and a 90 % quantile of 0.031; 0.07 is more than twice
    # that. The former 0.15 (ten runs of the days before disturbed launches were told apart spread
    # 1.2x-3x) hid every change under about 1.5x: re-tallying the kept runs with 0.07 took the
    # moved points called slower/faster from 9/12 to 12/12 (quiet) and 12/22 to 14/22 (load
    # 11-16), false alarms 0/80 and 2/80 -> 1/80, coverage of the next run from the first run
    # 100 % and 81-88 % (0.05 gave the same verdicts).
    prior_drift_sd: float = 0.07
    # A run whose estimate differs from this one's by more than this factor sits in another state
    # of the machine (a changed link, another machine): not learnt from, named with the reason.
    # The changed link was 100x; quiet runs here spread by up to 3.1x (launch-noise notes)
    # and runs under other engineers' load by more than 4x at 8 B (4 left out real runs of one
    # configuration in tests/test_launches.py), so 10x.
    state_ratio: float = 10.0

    # --- the machine-state control (results.control; docs/statistics.md, "The machine-state control") ---
    control_reps: int = 5           # the engine's repetitions of each piece (engine/src/control.c)
    # The least log noise of a piece. bench/control/run.py (20 runs of 3 launches, load 9-14): the
    # handoff's log SD was 0.003-0.010 within a launch and 0.000-0.010 between launches, the compute
    # loop's 0.027 and 0.006-0.012, but the compute loop's runs spread by a log SD of 0.023-0.035:
    # below 0.05 its between-run spread would read as a switch.
    control_noise_floor: float = 0.05
    # A switch is a move of the level beyond this many noises and beyond this ratio. The handoff's
    # two states here lay 3.6-4.9x apart (0.063-0.070 against 0.253-0.305 us one way), the runs of
    # one state up to 1.2x: with 4 noises and 1.25x, 91 of 190 same-configuration pairs were told
    # apart, and the false slower/faster at 64 B fell from 86/190 to 14/190.
    control_shift_sd: float = 4.0
    control_min_ratio: float = 1.25
    # The pieces that decide between runs but name no launch of a run as switched: the copy, whose
    # launches moved 1.3-1.9x from their run's with the points unmoved (4 of 5 such flags in 180
    # launches, docs/statistics.md, "The machine-state control").
    control_launch_excluded: tuple[str, ...] = ("copy_us",)
    # The most a switch of state is taken to move a point, whatever the control's own ratio (a
    # handoff that waits for a time slice moves 1000x): the largest, MPICH's 256 KiB bcast
    # at 33 against 160 us, 4.8x. A change beyond the control's move (or this) is still called.
    control_max_cover: float = 5.0
    # ...and a switch covers every change within that, not only within the control's own move: a
    # point's protocol moves by more than the piece that shows the switch (Open MPI's 2 KiB
    # pingpong 3.65-3.85x where the handoff moved 3.7-3.9x: 9 of 435 pairs of one configuration
    # called it "slower", load 0-7, 2026-12-02). False: the control's own move (the rule before).
    control_cover_max: bool = True
    # Between launches of one configuration identity (a run's own; two runs of the same library,
    # environment, options and placement: results.history.same_configuration) the MPI pingpong
    # decides too, since nothing but the machine can move it there: it moved with Open MPI's
    # whole-run states 2.5x (0.16-0.17 against 0.41-0.43 us, the 64 B points 2.7x) and with
    # MPICH's 1.6x. False: the pieces above only (the rule before, bench/evidence's before/after).
    control_mpi_same_config: bool = True
    # ...a move of it beyond this ratio (and control_shift_sd noises) is a switch: runs of one
    # state spread by up to 1.07x (Open MPI) and 1.29x (MPICH) quiet, the states 1.6-2.5x apart.
    control_mpi_min_ratio: float = 1.4
    # A state of the machine a run did not meet (results.states): earlier launches on the same
    # machine, any configuration, whose level lies beyond the run's noise from all of its own, at
    # least this many of this many runs and this share of the machine's launches kept. The handoff's
    # other state held 20-50 % of a quiet session's launches here, a compute loop that waited for a
    # time slice 2 of 96 (the idle bench of 3 December); the history keeps the latest runs only, so
    # a state the machine no longer shows leaves it.
    unmet_min_launches: int = 5
    unmet_min_runs: int = 3
    unmet_min_share: float = 0.1
    machine_runs: int = 30          # the latest sessions of a machine its history keeps (store.machine)
    machine_launches: int = 100     # ...and of each run its latest launches (a state's share is one of launches)

    # --- comparisons ---
    alpha: float = 0.05             # significance after Benjamini-Hochberg adjustment
    margin: float = 0.05            # equivalence margin and least change called slower/faster
    power: float = 0.80             # the chance of a decision the "launches needed" figure aims at
    # Cochran's Q below this: a point's launches differ by more than their own intervals allow
    # (the sweep summary's "launches differ"; one test per size, so stricter than `alpha`).
    heterogeneity_alpha: float = 0.01
    # A drift whose share of a difference's variance is at least this caps the test's degrees of
    # freedom at the drift's own (a smaller one barely moves Welch's test).
    drift_material: float = 0.05

    # --- history: change points along a series of runs (results.changes; docs/history.md, "Parameters") ---
    # The penalty of one more change point, in units of the weighted cost (a chi-square of the
    # standardised runs): history_penalty x ln(runs); 3 found twice the spurious changes, 5 lost a
    # fifth of the 1.1x steps (simulated, docs/history.md).
    history_penalty: float = 4.0
    history_min_segment: int = 2    # runs a segment needs (a single odd run is an outlier, not a level)
    history_min_runs: int = 4       # clean runs a series needs before it is segmented (two segments of two)
    history_drift_runs: int = 5     # clean runs from which the run-to-run variance is learnt (else the prior)


POLICY = Policy()
