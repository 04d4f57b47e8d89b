"""Fixtures: every vector env class under the same contract tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tdrl.env import DummyVectorEnv

try:
    from tdrl.env import ShmemVectorEnv, SubprocVectorEnv
except ImportError:  # pragma: no cover - during bring-up
    ShmemVectorEnv = SubprocVectorEnv = None  # type: ignore[assignment,misc]


def _makers() -> list[Any]:
    out: list[Any] = [pytest.param(DummyVectorEnv, id="dummy")]
    if SubprocVectorEnv is not None:
        out.append(
            pytest.param(
                lambda fns, **kw: SubprocVectorEnv(fns, context="fork", **kw), id="subproc"
            )
        )
        out.append(
            pytest.param(lambda fns, **kw: ShmemVectorEnv(fns, context="fork", **kw), id="shmem")
        )
    return out


@pytest.fixture(params=_makers())
def make_venv(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """Build a vector env of the parametrized class; closes what it built afterwards."""
    built: list[Any] = []

    def make(fns: list, **kw: Any) -> Any:
        venv = request.param(fns, **kw)
        built.append(venv)
        return venv

    yield make
    for venv in built:
        venv.close()
