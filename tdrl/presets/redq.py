"""REDQ presets (plain data; the builder imports torch when called).

``classic`` (tuned on Pendulum-v1, threshold -250) starts from Tianshou's
``test/continuous/test_redq.py`` (an ensemble of 4 critics with 2-critic min targets, critic
lr 1e-3, tau 0.005, gamma 0.99, 3 gradient steps per env step with an actor step every 3rd,
batch 64, 1000 random warm-up steps).

>>> p = REDQPreset()
>>> p.ensemble_size, p.subset_size, p.target_mode
(4, 2, 'min')
>>> p.replace(subset_size=5)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
tdrl.errors.PresetError: redq preset field 'subset_size': expected an int in [1, ...=4], got 5
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.errors import PresetError
from tdrl.presets.common import OffPolicyFields
from tdrl.presets.registry import register

__all__ = ["REDQPreset", "build"]


@dataclass(frozen=True)
class REDQPreset(OffPolicyFields):
    """REDQ hyperparameters and trainer settings (defaults: Pendulum-v1).

    ``ensemble_size`` critics, targets from random subsets of ``subset_size`` of them
    aggregated by ``target_mode`` (``"min"`` or ``"mean"``), an actor (and alpha) step every
    ``actor_delay`` critic steps; ``update_per_step`` is the update-to-data ratio. Warm up
    with ``collect(n_step=warmup_steps, random=True)``.

    >>> REDQPreset().replace(target_mode="max")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tdrl.errors.PresetError: redq preset field 'target_mode': expected a str ..., got 'max'
    """

    algo: ClassVar[str] = "redq"
    rules: ClassVar[dict[str, tuple[str, Callable[[Any], bool]]]] = {
        "ensemble_size": (">= 1", lambda v: v >= 1),
        "subset_size": (">= 1", lambda v: v >= 1),
        "actor_delay": (">= 1", lambda v: v >= 1),
        "target_mode": ("'min' or 'mean'", lambda v: v in ("min", "mean")),
    }

    task: str = "Pendulum-v1"
    threshold: float | None = None
    hidden_sizes: tuple[int, ...] = (64, 64)
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
    auto_alpha: bool = True
    alpha: float = 0.2
    alpha_lr: float = 3e-4
    ensemble_size: int = 4
    subset_size: int = 2
    actor_delay: int = 3
    target_mode: str = "min"
    n_step: int = 1
    step_per_epoch: int = 500
    update_per_step: float = 3.0
    batch_size: int = 64

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.subset_size > self.ensemble_size:
            raise PresetError(
                f"redq preset field 'subset_size': expected an int in "
                f"[1, ensemble_size={self.ensemble_size}], got {self.subset_size}"
            )


def build(p: REDQPreset, observation_space: Any, action_space: Any) -> Any:
    """Create the actor, the critic ensemble, the policy and
    :class:`~tdrl.algorithm.modelfree.redq.REDQ`.

    >>> import gymnasium as gym
    >>> alg = build(REDQPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, len(alg.critics), alg.actor_delay, alg.auto_alpha is not None
    ('REDQ', 4, 3, True)
    """
    import numpy as np

    from tdrl.algorithm.modelfree.redq import REDQ
    from tdrl.algorithm.modelfree.sac import AutoAlpha, SACPolicy
    from tdrl.utils.net import GaussianActor, QCritic

    d = int(np.prod(observation_space.shape))
    a = int(np.prod(action_space.shape))
    policy = SACPolicy(actor=GaussianActor(d, a, p.hidden_sizes), action_space=action_space)
    alpha: Any = p.alpha
    if p.auto_alpha:
        alpha = AutoAlpha("auto", log_alpha=float(np.log(p.alpha)), optim=p.alpha_lr)
    return REDQ(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=[QCritic(d, a, p.hidden_sizes) for _ in range(p.ensemble_size)],
        critic_optim=p.critic_lr,
        ensemble_size=p.ensemble_size,
        subset_size=p.subset_size,
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
        n_step=p.n_step,
        actor_delay=p.actor_delay,
        target_mode=p.target_mode,  # type: ignore[arg-type]
    )


register(
    "redq",
    "classic",
    REDQPreset(),
    builder="tdrl.presets.redq:build",
    trainer="offpolicy",
    exploration_noise=False,  # the policy samples inside training steps
    action_space="continuous",
)
