"""REDQ presets (plain data; the builder imports torch when called).

``classic`` (tuned on Pendulum-v1, threshold -250) starts from Tianshou's
``test/continuous/test_redq.py`` (an ensemble of 4 critics with 2-critic min targets, critic
lr 1e-3, tau 0.005, gamma 0.99, 3 gradient steps per env step with an actor step every 3rd,
batch 64, 1000 random warm-up steps).

>>> p = REDQPreset()
>>> p.ensemble_size, p.subset_size, p.target_mode
(4, 2, 'min')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tdrl.errors import PresetError
from tdrl.presets import common
from tdrl.presets.common import AT_LEAST_1, Rules, register_classic
from tdrl.presets.sac import SACPreset

__all__ = ["REDQPreset", "build"]


@dataclass(frozen=True)
class REDQPreset(SACPreset):
    """REDQ hyperparameters and trainer settings (defaults: Pendulum-v1): SAC's fields
    (:class:`~tdrl.presets.sac.SACPreset`) and the ensemble's.

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
    rules: ClassVar[Rules] = {
        "ensemble_size": AT_LEAST_1,
        "subset_size": AT_LEAST_1,
        "actor_delay": AT_LEAST_1,
        "target_mode": common.either("min", "mean"),
    }

    hidden_sizes: tuple[int, ...] = (64, 64)
    ensemble_size: int = 4
    subset_size: int = 2
    actor_delay: int = 3
    target_mode: str = "min"
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
    from tdrl.algorithm.modelfree.redq import REDQ
    from tdrl.algorithm.modelfree.sac import SACPolicy
    from tdrl.utils.net import GaussianActor, QCritic

    d, a = common.space_dim(observation_space), common.space_dim(action_space)
    policy = SACPolicy(actor=GaussianActor(d, a, p.hidden_sizes), action_space=action_space)
    ensemble = common.actor_critic_args(
        p, lambda: [QCritic(d, a, p.hidden_sizes) for _ in range(p.ensemble_size)]
    )
    return REDQ(
        policy=policy,
        alpha=common.sac_alpha(p),
        **ensemble,
        ensemble_size=p.ensemble_size,
        subset_size=p.subset_size,
        actor_delay=p.actor_delay,
        target_mode=p.target_mode,  # type: ignore[arg-type]
    )


register_classic(
    __name__,
    REDQPreset(),
    trainer="offpolicy",
    exploration_noise=False,  # the policy samples inside training steps
    action_space="continuous",
)
