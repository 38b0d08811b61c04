# Spack recipe for mpiscope: the Python package, and its measurement engine built with the
# MPI that Spack provides (spec["mpi"].mpicc) through the engine's own Makefile.
#
# Use (docs/clusters.md, "Spack"):  spack repo add packaging/spack && spack install mpiscope ^openmpi
from pathlib import Path

from spack.package import *


class Mpiscope(PythonPackage):
    """Measure, model and compare how an MPI library moves data: a C measurement engine built
    with the site's MPI, and a Python package that launches it (mpiexec or srun), keeps every
    run, fits models and reports intra-node and inter-node figures apart."""

    # No public release yet: the recipe builds the checkout it lives in (packaging/spack/mpiscope/
    # is three levels below the repository's root), so a site installs exactly what it reviewed.
    git = "file://" + str(Path(__file__).resolve().parents[3])

    license("MIT")

    version("main", branch="main")

    variant("slurm", default=False,
            description="Slurm's srun and sbatch at run time, for --launcher srun and --submit slurm")

    # build: the wheel (hatchling); run: mpiscope compiles, launches and reads the engine
    depends_on("python@3.10:", type=("build", "run"))
    depends_on("py-hatchling@1.18:", type="build")
    depends_on("gmake", type=("build", "run"))
    # a run dependency too: `spack load mpiscope` then puts this MPI's mpicc and mpiexec on PATH,
    # where mpiscope finds it (its `path` library) without `mpiscope mpi add`
    depends_on("mpi", type=("build", "link", "run"))
    for dep in ("py-numpy", "py-scipy", "py-pandas", "py-pyarrow", "py-rich", "py-matplotlib"):
        depends_on(dep, type=("build", "run"))
    depends_on("py-tomli", when="^python@:3.10", type=("build", "run"))  # spec files on Python 3.10
    depends_on("slurm", when="+slurm", type="run")

    # The `mpich` wheel that pyproject.toml names is the laptop default; Spack installs with
    # pip --no-deps, so the site MPI above is the only one and nothing is downloaded.

    @run_after("install")
    def build_engine(self):
        """Build the engine once with Spack's MPI, so a broken MPI/compiler pairing fails the
        install, not the first run (no WERROR: a site compiler newer than the ones the code is
        checked with may warn). The binary in libexec/mpiscope serves hand-written job
        scripts; mpiscope itself builds its cached copy from the same sources and mpicc."""
        make("-C", join_path(self.stage.source_path, "engine"), f"MPICC={self.spec['mpi'].mpicc}",
             f"BUILD={self.prefix.libexec.mpiscope}")
