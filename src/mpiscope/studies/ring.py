"""The ring case study of the performance-programming chapter, as series of
engine launches: five algorithms balanced and unbalanced, algorithm 5 across
MPI_Testall frequencies, optionally across tuning variables.

Each algorithm is its own launch, so algorithm 1's deadlock ends only its own
series; its larger sizes are then recorded as not measured (a library that
deadlocks at N bytes deadlocks beyond N too)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

ALGORITHMS = {
    1: "Send, Recv",
    2: "Sendrecv_replace",
    3: "Sendrecv, double buffer",
    4: "Isend/Irecv, Waitall",
    5: "Isend/Irecv, Testall",
}
CHAPTER_NBLOCKS = [128, 256, 384, 512, 1024, 2048, 4096, 8192, 10240, 12288, 16384]
CHAPTER_TESTALL_SIZES = [64 << 10, 1 << 20]  # FIGURE 4-9's two message sizes, bytes


@dataclass(frozen=True)
class Series:
    """One engine launch of the study and the factors that tell it apart."""
    name: str
    benchmark: str
    engine_args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    factors: tuple[tuple[str, str], ...] = ()


@dataclass
class RingStudyConfig:
    ranks: int = 4
    max_words: int = 500_000
    imbalance: tuple[int, int] = (1, 200)
    nblocks: list[int] = field(default_factory=lambda: list(CHAPTER_NBLOCKS))
    testall_sizes: list[int] = field(default_factory=lambda: list(CHAPTER_TESTALL_SIZES))
    env_levels: dict[str, list[str]] = field(default_factory=dict)  # --env NAME=v1,v2
    max_time: float = 0.3
    ci_target: float = 0.05

    def common_args(self) -> list[str]:
        # per-point warm-up stays small: the chapter pumps data once, not per size
        return ["--units", "words", "--max-time", f"{self.max_time:g}", "--ci-target", f"{self.ci_target:g}",
                "--warmup", "2", "--warmup-bytes", "16M"]


def env_combinations(levels: dict[str, list[str]]) -> list[tuple[tuple[str, str], ...]]:
    """Every combination of the tuning variables' levels (one empty one without any)."""
    names = sorted(levels)
    return [tuple(zip(names, combo)) for combo in itertools.product(*(levels[n] for n in names))]


def series(cfg: RingStudyConfig) -> list[Series]:
    sizes = f"0:{cfg.max_words}:*1.2"
    a, b = cfg.imbalance
    out: list[Series] = []
    for env in env_combinations(cfg.env_levels):
        tag = "".join(f" {k}={v}" for k, v in env)
        for load, ncompute in (("balanced", "0"), ("imbalanced", f"{a},{b}")):
            for k in ALGORITHMS:
                out.append(Series(
                    name=f"alg{k} {load}{tag}", benchmark=f"ringcs{k}",
                    engine_args=(*cfg.common_args(), "--sizes", sizes, "--ncompute", ncompute, f"ringcs{k}"),
                    env=env, factors=(("algorithm", str(k)), ("load", load), *env)))
        testall_words = ",".join(str(s // 8) for s in cfg.testall_sizes if s // 8 <= cfg.max_words)
        if testall_words:
            for nblock in cfg.nblocks:
                out.append(Series(
                    name=f"alg5 nblock={nblock}{tag}", benchmark="ringcs5",
                    engine_args=(*cfg.common_args(), "--sizes", testall_words, "--ncompute", f"{a},{b}",
                                 "--nblock", str(nblock), "ringcs5"),
                    env=env, factors=(("algorithm", "5"), ("load", "imbalanced"), ("nblock", str(nblock)), *env)))
    return out


def deadlocks(records: list[dict]) -> list[dict]:
    """Where each series deadlocked: the engine's watchdog records."""
    return [{"series": r.get("series"), "benchmark": r["benchmark"], "size": r["size"], "limit_s": r.get("limit_s")}
            for r in records if r.get("type") == "timeout"]
