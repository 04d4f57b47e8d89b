"""nox sessions for tdrl.

Every session installs the CPU build of ``torch==2.13.0`` first: any other version pulls a
multi-GB CUDA build on the project's machines.

CI (``.ci/run``) runs ``tests lint typecheck`` (the README's test command), then ``oracle``
(the suite again with Tianshou installed, so the differential tests run and may not be
skipped), then ``conformance`` (Tianshou's own ``test/base`` through an import-name shim), then
``slow`` (convergence, two workers). ``slower`` (long MuJoCo convergence
runs), ``envpool`` and ``bench`` are run by hand.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

TORCH = "torch==2.13.0"
TIANSHOU = "tianshou==2.0.1"
QUIET = {"RL_WARNINGS": "0"}


def _install(
    session: nox.Session,
    extras: str = "dev,hdf5,logging,mujoco,atari,offline,multiagent,bench,video,fast",
) -> None:
    session.install(TORCH)
    session.install("-e", f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The default, fast suite (unit, property, doctest, short end-to-end), on two workers."""
    _install(session)
    session.run("pytest", "-q", "-n", "2", *session.posargs, env=QUIET)


@nox.session
def slow(session: nox.Session) -> None:
    """Convergence tests (CI): train agents to Tianshou's thresholds, two at a time."""
    _install(session)
    session.run("pytest", "-q", "-m", "slow", "-n", "2", "tests", *session.posargs, env=QUIET)


@nox.session
def slower(session: nox.Session) -> None:
    """Long convergence tests outside CI (MuJoCo presets, up to an hour each), then
    Tianshou 2.0.1's algorithm scripts at their own default arguments (about 30 minutes),
    each judged by its own threshold assert, into ``conformance/results/default-budget.json``
    (resumable; the README's table is rendered from it)."""
    _install(session, "dev,hdf5,logging,multiagent")
    session.install("networkx", "deepdiff", "tensorboard", "tomli; python_version<'3.11'")
    session.run("pytest", "-q", "-m", "slower", "tests", *session.posargs, env=QUIET)
    session.run(
        "python", "conformance/run.py", "--scripts", "--default-budget", "--resume",
        "--conformance-dump", "conformance/results/default-budget.json", "--timeout=5400",
        env=QUIET,
    )  # fmt: skip


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check (installs ruff alone: no torch, no project)."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(venv_backend="none")
def typecheck(session: nox.Session) -> None:
    """mypy on the package, in the ``tests`` session's environment (built first when
    missing): one environment of torch and the project for both, not two."""
    import sys

    env = Path(".nox") / "tests"
    mypy = env / ("Scripts/mypy.exe" if sys.platform == "win32" else "bin/mypy")
    if not mypy.exists():
        session.run(sys.executable, "-m", "nox", "-s", "tests", "--install-only", external=True)
    session.run(str(mypy), "tdrl", external=True)


def _check_oracle_ran(report: Path) -> tuple[int, list[str]]:
    """(Tianshou tests run, tests skipped for want of Tianshou) in a JUnit report."""
    ran, skipped = 0, []
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        skip = case.find("skipped")
        if skip is not None and "tianshou" in (skip.get("message") or "").lower():
            skipped.append(name)
        elif skip is None and "tianshou" in name.lower():
            ran += 1
    return ran, skipped


@nox.session
def oracle(session: nox.Session) -> None:
    """The default suite with Tianshou installed, so its differential tests run too.

    Enforced: the session fails if Tianshou does not import or if any test was skipped for
    want of it.
    """
    _install(session)
    session.install(TIANSHOU)
    session.run(  # the installed Tianshou, never the conformance shim (conformance/shim)
        "python",
        "-c",
        "import tianshou, pathlib; assert tianshou.__version__ == '2.0.1'; "
        "assert 'site-packages' in pathlib.Path(tianshou.__file__).parts, tianshou.__file__",
    )
    report = Path(session.create_tmp()) / "oracle-junit.xml"
    session.run("pytest", "-q", "-rs", f"--junitxml={report}", *session.posargs, env=QUIET)
    ran, skipped = _check_oracle_ran(report)
    if skipped:
        session.error(f"{len(skipped)} oracle tests skipped for want of Tianshou: {skipped[:5]}")
    if ran == 0 and not session.posargs:
        session.error("no Tianshou differential test ran")
    session.log(f"{ran} Tianshou differential tests ran")


@nox.session
def conformance(session: nox.Session) -> None:
    """Tianshou 2.0.1's own tests against tdrl through the import-name shim.

    ``conformance/run.py`` checks the suite against its SHA256SUMS and compares every test's
    outcome with ``conformance/expected.toml`` (``test/base``) and, with ``--scripts``,
    ``conformance/expected_scripts.toml`` (the algorithm scripts at a small budget: does each
    one train?), strict both ways. Tianshou is not installed.
    """
    _install(session, "dev,hdf5,logging,multiagent")
    session.install(
        "networkx", "deepdiff", "tensorboard", "h5py", "tqdm", "tomli; python_version<'3.11'"
    )
    session.run("python", "conformance/run.py", *session.posargs, env=QUIET)
    if not session.posargs:
        session.run("python", "conformance/run.py", "--scripts", env=QUIET)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site (mkdocs-material + mkdocstrings), warnings as errors."""
    _install(session, "docs")
    site = str(Path(session.create_tmp()) / "site")
    session.run("mkdocs", "build", "--strict", "--site-dir", site)
    # no Sphinx role may reach a page as raw text (docs/griffe_doctests.py renders them)
    session.run("python", "-c", _NO_RAW_ROLES, site)


_NO_RAW_ROLES = """
import sys
sys.path.insert(0, "docs")
from griffe_doctests import raw_roles
found = raw_roles(sys.argv[1])
print(*found[:20], sep="\\n")
sys.exit(f"{len(found)} raw reStructuredText roles in the built site" if found else 0)
"""


@nox.session
def envpool(session: nox.Session) -> None:
    """The env-layer tests with EnvPool installed (about 0.7 GB of wheels and assets)."""
    _install(session, "dev,hdf5,logging,mujoco,envpool")
    session.run("pytest", "-q", "tests/env", "tests/data", *session.posargs)
    # Tianshou's test_psrl needs EnvPool (its conformance listing says "skip" without it)
    session.install("networkx", "deepdiff", "tensorboard", "tomli; python_version<'3.11'")
    session.run(
        "python", "conformance/run.py", "--scripts", "-k", "test_psrl",
        "--conformance-expected", "conformance/expected_envpool.toml", env=QUIET,
    )  # fmt: skip


@nox.session
def bench(session: nox.Session) -> None:
    """Speed benchmarks: tdrl and Tianshou side by side in one process, ratios printed;
    ``bench_peers`` adds SB3, SBX and TorchRL (one process per run)."""
    _install(session)
    session.install(TIANSHOU)
    # the peers of bench_peers; torch pinned so that no peer pulls another build
    session.install(TORCH, "stable-baselines3>=2.0,<3", "sbx-rl")
    session.run("python", "-m", "benchmarks", *session.posargs, env=QUIET)
