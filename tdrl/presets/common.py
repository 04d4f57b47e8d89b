"""Helpers the preset modules share (plain data: no torch at import; not a preset module).

The keyword arguments many builders pass the same way, read from a preset's fields, so a
builder names only what is its own:

>>> from tdrl.presets.c51 import C51Preset
>>> p = C51Preset()
>>> q_learning_args(p)
{'optim': 0.001, 'gamma': 0.9, 'n_step': 3, 'target_update_freq': 160}
>>> eps_args(p), support_args(p)
({'eps_training': 0.1, 'eps_inference': 0.05}, {'num_atoms': 51, 'v_min': -10.0, 'v_max': 10.0})
>>> pick(p, ("gamma", "no_such_field"))
{'gamma': 0.9}
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tdrl.presets.registry import Preset

__all__ = [
    "OffPolicyFields",
    "QLearningFields",
    "eps_args",
    "pick",
    "q_learning_args",
    "support_args",
]


def pick(p: Any, names: Iterable[str]) -> dict[str, Any]:
    """``{name: p.name}`` for each of ``names`` that preset ``p`` has (the others are left
    to the algorithm's defaults)."""
    return {n: getattr(p, n) for n in names if hasattr(p, n)}


def q_learning_args(p: Any) -> dict[str, Any]:
    """The Q-learning base's arguments: ``optim`` (``p.lr``), ``gamma``, ``n_step`` and
    ``target_update_freq``."""
    return {"optim": p.lr, **pick(p, ("gamma", "n_step", "target_update_freq"))}


def eps_args(p: Any) -> dict[str, Any]:
    """An epsilon-greedy policy's epsilons: ``eps_train`` inside training steps, ``eps_test``
    outside."""
    return {"eps_training": p.eps_train, "eps_inference": p.eps_test}


def support_args(p: Any) -> dict[str, Any]:
    """A distributional policy's support: ``num_atoms`` atoms on ``[v_min, v_max]``."""
    return pick(p, ("num_atoms", "v_min", "v_max"))


@dataclass(frozen=True)
class OffPolicyFields(Preset):
    """The off-policy trainer's fields, with the ``classic`` SAC/DDPG/TD3 defaults
    (Pendulum-v1); a preset class derives from it and overrides the defaults it tunes.

    Warm up with ``collect(n_step=warmup_steps, random=True)``.
    """

    buffer_size: int = 20_000
    training_num: int = 10
    test_num: int = 10
    warmup_steps: int = 1000
    max_epochs: int = 20
    step_per_epoch: int = 1000
    step_per_collect: int = 10
    update_per_step: float = 1.0
    batch_size: int = 128


@dataclass(frozen=True)
class QLearningFields(OffPolicyFields):
    """:class:`OffPolicyFields` plus the Q-learning fields of the DQN family, with DQN's
    ``classic`` defaults (CartPole-v1): Adam ``lr``, ``gamma``, ``n_step`` returns, a
    target sync every ``target_update_freq`` gradient steps, epsilon-greedy ``eps_train``
    inside training steps and ``eps_test`` outside (:func:`eps_args`)."""

    lr: float = 1e-3
    gamma: float = 0.9
    n_step: int = 3
    target_update_freq: int = 320
    eps_train: float = 0.1
    eps_test: float = 0.05
    test_num: int = 100
    warmup_steps: int = 640
    max_epochs: int = 10
    step_per_epoch: int = 10_000
    update_per_step: float = 0.1
    batch_size: int = 64
