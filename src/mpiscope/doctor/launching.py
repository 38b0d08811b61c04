"""The launch: one job of N ranks (not N singletons), made by which launcher and PMI."""
from __future__ import annotations

from mpiscope.analysis.checks import split_job
from mpiscope.doctor import Check, fail, ok, skip
from mpiscope.doctor.facts import Facts

GROUP = "launch"
GENERIC_FIX = ("the launcher belongs to a different MPI than the engine, so it started separate 1-rank jobs: "
               "use --mpi with the library whose launcher this is")


def pairing(f: Facts) -> str:
    lib = f"{f.vendor} {f.version}".strip()
    if f.launcher == "srun":
        return f"srun --mpi={f.pmi or '?'} with {lib}"
    return f"the library's own mpiexec with {lib}"


def one_job(f: Facts) -> Check:
    name = "one job of N ranks"
    job = f.job
    if job is None:
        return skip(name, "no job was launched")
    sizes = [c.world_size for c in job.contexts]
    if not sizes:
        return skip(name, f"no rank reported (launch {job.status}, exit {job.exit_code}): see 'hello on every host'")
    if split_job(sizes, f.ranks):
        return fail(name, f"asked for {f.ranks} ranks; {pairing(f)} gave {len(sizes)} job(s) of "
                          f"{'/'.join(map(str, sorted(set(sizes))))} rank(s)", f.singleton_fix or GENERIC_FIX)
    given = len(f.hosts)
    if job.hosts and given > len(job.hosts):  # hosts that did not answer were left out of the job
        return ok(name, f"one job of {sizes[0]} ranks on the {len(job.hosts)} of {given} hosts that answered "
                        f"({pairing(f)})")
    return ok(name, f"one job of {sizes[0]} ranks ({pairing(f)})")


def checks(f: Facts) -> list[Check]:
    return [Check(**{**c.__dict__, "group": GROUP}) for c in [one_job(f)]]
