"""What doctor measured, as plain data: the records each launch gave, its stderr, its exit,
and what was read on this machine. Saved as JSON it can be judged again later."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mpiscope.records import Context, Point, RecordError, parse_line
from mpiscope.util import bounded
from mpiscope.util.output import write_output

MAX_FACTS_BYTES = 64 << 20  # a host's facts: a few kB each


@dataclass
class LaunchFacts:
    """One launch: argv, how it ended, its record lines and stderr (tail)."""
    argv: list[str]
    status: str = "ok"              # ok | failed | timeout | not-started
    exit_code: int | None = None
    elapsed_s: float = 0.0
    limit_s: float = 0.0
    hosts: list[str] = field(default_factory=list)  # the hosts it was asked to use ([] = this machine)
    stdout: list[str] = field(default_factory=list)  # every line of standard output
    stderr: list[str] = field(default_factory=list)  # the lines of standard error kept

    @property
    def records(self) -> list[Any]:
        out = []
        for line in self.stdout:
            if line.startswith("{"):
                try:
                    out.append(parse_line(line))
                except RecordError:
                    continue
        return out

    @property
    def contexts(self) -> list[Context]:
        return [r for r in self.records if isinstance(r, Context)]

    def points(self, benchmark: str) -> list[Point]:
        return [r for r in self.records if isinstance(r, Point) and r.benchmark == benchmark]

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.exit_code == 0


@dataclass
class Facts:
    """Everything the checks decide on."""
    mpi_name: str = ""
    vendor: str = ""
    version: str = ""
    launcher: str = "mpiexec"        # mpiexec | srun
    pmi: str | None = None           # srun's --mpi plugin
    singleton_fix: str = ""
    ranks: int = 2
    hosts: list[str] = field(default_factory=list)  # asked for ([] = this machine or the allocation)
    local_host: str = ""
    local_cores: int = 1
    clocksource: str | None = None
    clocksources: list[str] = field(default_factory=list)
    governors: dict[str, list[int]] = field(default_factory=dict)  # on this machine's CPUs the job used
    library_params: dict[str, str] = field(default_factory=dict)  # eager limits as the library reports them
    doctor_env: dict[str, str] = field(default_factory=dict)  # variables doctor added (verbosity)
    reach: LaunchFacts | None = None  # a plain command on every host (no MPI)
    reach_bisection: list[LaunchFacts] = field(default_factory=list)  # when no host answered it
    job: LaunchFacts | None = None    # the hello: the engine over every rank (its context record)
    pairs: LaunchFacts | None = None  # the pair map over the same ranks, the library reporting transports
    noise: LaunchFacts | None = None  # the engine's fwq row on the same ranks
    bisection: list[LaunchFacts] = field(default_factory=list)  # launches made to find a culprit
    pair_tests: list[LaunchFacts] = field(default_factory=list)  # a suspected slow host against a good pair
    # simulated platforms: two launches per halving, each timing a barrier over one half
    slow_bisection: list[LaunchFacts] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Facts":
        d = dict(d)
        for k in ("reach", "job", "pairs", "noise"):
            if d.get(k) is not None:
                d[k] = LaunchFacts(**d[k])
        for k in ("bisection", "reach_bisection", "pair_tests", "slow_bisection"):
            d[k] = [LaunchFacts(**b) for b in d.get(k, [])]
        return cls(**d)

    def save(self, path: Path) -> None:
        """A file whole or not at all (a temporary file renamed into place); a FIFO or a device
        written into, never replaced (util.output)."""
        write_output(path, json.dumps(self.to_json(), indent=1))

    @classmethod
    def load(cls, path: Path) -> "Facts":
        return cls.from_json(bounded.read_json(path, MAX_FACTS_BYTES, "a facts file"))
