"""TRPO presets (plain data; torch is imported by :func:`build` only).

``classic`` (Pendulum-v1) starts from Tianshou's ``test/continuous/test_trpo.py``: the
networks and rollout settings of the NPG preset (:mod:`tdrl.presets.npg`, including its
1024 steps per collect and epochs of 5000 steps), with the step found by line search
(backtrack coefficient 0.8, 10 trials) within ``max_kl = 0.01`` (TRPO's default and
Tianshou's MuJoCo setting; the test's 0.005 needed 50-90k env steps against 25-60k).
``max_kl = 0.02`` made a seed fail.

>>> from tdrl.presets import registry
>>> p = registry.preset("trpo", "Pendulum-v1")
>>> p.max_kl, p.threshold, registry.entry("trpo", "Pendulum-v1").trainer
(0.01, -250.0, 'onpolicy')
>>> p.replace(backtrack_coeff=1.5)
Traceback (most recent call last):
...
tdrl.errors.PresetError: trpo preset field 'backtrack_coeff': expected a float in (0, 1), got 1.5
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets.registry import Preset, register

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.trpo import TRPO

__all__ = ["TRPOPreset", "build"]


@dataclass(frozen=True)
class TRPOPreset(Preset):
    """TRPO hyperparameters and trainer settings (defaults: Pendulum-v1)."""

    algo: ClassVar[str] = "trpo"
    rules: ClassVar[dict[str, tuple[str, Callable[[Any], bool]]]] = {
        "max_kl": ("> 0", lambda v: v > 0),
        "backtrack_coeff": ("in (0, 1)", lambda v: 0 < v < 1),
        "max_backtracks": ("> 0", lambda v: v > 0),
        "optim_critic_iters": ("> 0", lambda v: v > 0),
    }

    task: str = "Pendulum-v1"
    threshold: float | None = None
    hidden_sizes: tuple[int, ...] = (64, 64)
    lr: float = 1e-3
    gamma: float = 0.95
    gae_lambda: float = 0.95
    return_scaling: bool = True
    advantage_normalization: bool = True
    optim_critic_iters: int = 5
    max_kl: float = 0.01
    backtrack_coeff: float = 0.8
    max_backtracks: int = 10
    deterministic_eval: bool = True
    buffer_size: int = 50_000
    training_num: int = 16
    test_num: int = 10
    max_epochs: int = 50
    step_per_epoch: int = 5000
    step_per_collect: int = 1024
    repeat_per_collect: int = 2
    batch_size: int = 99_999


def build(p: TRPOPreset, observation_space: Any, action_space: Any) -> TRPO:
    """Create the actor, critic, policy and TRPO."""
    from tdrl.algorithm.modelfree.trpo import TRPO
    from tdrl.presets.npg import build_networks

    policy, critic = build_networks(p, observation_space, action_space)
    return TRPO(
        policy=policy,
        critic=critic,
        optim=p.lr,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        return_scaling=p.return_scaling,
        advantage_normalization=p.advantage_normalization,
        optim_critic_iters=p.optim_critic_iters,
        max_kl=p.max_kl,
        backtrack_coeff=p.backtrack_coeff,
        max_backtracks=p.max_backtracks,
    )


register(
    "trpo",
    "classic",
    TRPOPreset(),
    builder="tdrl.presets.trpo:build",
    trainer="onpolicy",
    exploration_noise=False,
    action_space="any",
)
