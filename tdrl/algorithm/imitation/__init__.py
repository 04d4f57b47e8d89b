"""Offline and imitation algorithms: they learn from a dataset (``--dataset``) or from
demonstrations rather than from their own exploration alone.

BC (behaviour cloning), TD3+BC, IQL, BCQ, CQL, discrete BCQ/CQL/CRR, GAIL. Names are loaded
lazily, on first access, like :mod:`tdrl.algorithm`'s.

>>> from tdrl.algorithm.imitation import BC
>>> from tdrl.algorithm import Algorithm
>>> issubclass(BC, Algorithm)
True
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

_MODULES = {
    "bc": ("BC", "ImitationPolicy"),
    "td3_bc": ("TD3BC", "TD3BCPolicy", "dataset_obs_rms"),
    "iql": ("IQL", "IQLPolicy", "expectile_loss"),
    "bcq": ("BCQ", "BCQPolicy"),
    "cql": ("CQL",),
    "discrete_bcq": ("DiscreteBCQ", "DiscreteBCQPolicy"),
    "discrete_cql": ("DiscreteCQL",),
    "discrete_crr": ("DiscreteCRR", "DiscreteCRRPolicy"),
    "gail": ("GAIL",),
}
"""Module (under ``tdrl.algorithm.imitation``) -> the names it exports."""

_EXPORTS = {
    name: f"{__name__}.{module}"
    for module, names in _MODULES.items()
    if importlib.util.find_spec(f"{__name__}.{module}") is not None
    for name in names
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import an exported name on first access."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
