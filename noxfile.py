"""nox sessions for tdrl.

Every session installs the CPU build of ``torch==2.13.0`` first: any other version pulls a
multi-GB CUDA build on the project's machines.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

TORCH = "torch==2.13.0"
TIANSHOU = "tianshou==2.0.1"


def _install(session: nox.Session, extras: str = "dev,hdf5,logging,mujoco") -> None:
    session.install(TORCH)
    session.install("-e", f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The default, fast suite (unit, property, doctest, short end-to-end)."""
    _install(session)
    session.run("pytest", "-q", *session.posargs, env={"RL_WARNINGS": "0"})


@nox.session
def slow(session: nox.Session) -> None:
    """Convergence tests: train agents to Tianshou's thresholds."""
    _install(session)
    session.run("pytest", "-q", "-m", "slow", "tests", *session.posargs, env={"RL_WARNINGS": "0"})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy on the package."""
    _install(session)
    session.run("mypy", "tdrl")


@nox.session
def oracle(session: nox.Session) -> None:
    """The default suite with Tianshou installed, so its differential tests run too."""
    _install(session)
    session.install(TIANSHOU)
    session.run("pytest", "-q", *session.posargs, env={"RL_WARNINGS": "0"})


@nox.session
def envpool(session: nox.Session) -> None:
    """The env-layer tests with EnvPool installed (about 0.7 GB of wheels and assets)."""
    _install(session, "dev,hdf5,logging,mujoco,envpool")
    session.run("pytest", "-q", "tests/env", "tests/data", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Speed benchmarks: tdrl and Tianshou side by side in one process, ratios printed."""
    _install(session)
    session.install(TIANSHOU)
    session.run("python", "-m", "benchmarks", *session.posargs, env={"RL_WARNINGS": "0"})
