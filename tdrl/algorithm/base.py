"""Compatibility alias: the policy and algorithm bases, now in their own modules.

``from tdrl.algorithm.base import X`` keeps working for every name this module had; the
homes are :mod:`tdrl.algorithm.policy` (:class:`Policy`, :func:`make_batch`,
:func:`call_model`, :func:`within_training_step`), :mod:`tdrl.algorithm.optim`
(:class:`OptimizerFactory`, :class:`AdamOptimizerFactory`, :class:`GradStep`,
:class:`Stage`), :mod:`tdrl.algorithm.checks` (:func:`require_unit`,
:func:`require_at_least`), :mod:`tdrl.algorithm.loss_keys` and
:mod:`tdrl.algorithm.algorithm_base` (:class:`Algorithm`). Library code imports the homes.
"""

from __future__ import annotations

from tdrl.algorithm.algorithm_base import (
    Algorithm,
    _accept_aliases,
    _check_update_args,
    _reset_flag,
)
from tdrl.algorithm.checks import require_at_least, require_unit
from tdrl.algorithm.optim import AdamOptimizerFactory, GradStep, OptimizerFactory, Stage
from tdrl.algorithm.policy import (
    _STATEFUL,
    ActBoundMethod,
    Policy,
    _flatten_lead,
    _takes_state,
    _to_numpy,
    _train_mode,
    call_model,
    make_batch,
    within_training_step,
)

__all__ = [
    "_STATEFUL",
    "ActBoundMethod",
    "AdamOptimizerFactory",
    "Algorithm",
    "GradStep",
    "OptimizerFactory",
    "Policy",
    "Stage",
    "_accept_aliases",
    "_check_update_args",
    "_flatten_lead",
    "_reset_flag",
    "_takes_state",
    "_to_numpy",
    "_train_mode",
    "call_model",
    "make_batch",
    "require_at_least",
    "require_unit",
    "within_training_step",
]
