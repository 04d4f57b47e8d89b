"""Every name ``tdrl.algorithm`` exports resolves, and every algorithm is a LossModule."""

from __future__ import annotations

import pytest
from torchrl.objectives import LossModule

import tdrl.algorithm as alg


@pytest.mark.parametrize("name", alg.__all__)
def test_export_resolves(name: str) -> None:
    obj = getattr(alg, name)
    assert obj is not None and obj.__doc__


def test_algorithms_are_loss_modules_on_the_base() -> None:
    classes = [getattr(alg, n) for n in alg.__all__ if isinstance(getattr(alg, n), type)]
    algos = [c for c in classes if issubclass(c, alg.Algorithm) and c is not alg.Algorithm]
    assert len(algos) >= 15
    assert all(issubclass(c, LossModule) for c in algos)
