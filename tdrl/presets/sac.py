"""SAC's ``classic`` preset (plain data; the builder imports torch when called).

Tuned on Pendulum-v1 (threshold -250), from Tianshou's
``test/continuous/test_sac_with_il.py``, with one gradient step per env step (Tianshou's
test uses 0.1, which needed 38k env steps and more gradient steps in total on seed 0): with
tdrl's collector and a minimal Tianshou-style loop (3 seeds, 20 test episodes after each
epoch of 1k steps) the threshold was first reached after 3k env steps on every seed, plus
1000 random warm-up steps. The ``mujoco`` preset lives in :mod:`tdrl.presets.mujoco`.

>>> p = SACPreset()
>>> p.auto_alpha, p.alpha, p.warmup_steps
(True, 0.2, 1000)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import OffPolicyFields, register_classic

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.sac import SAC

__all__ = ["SACPreset", "build"]


@dataclass(frozen=True)
class SACPreset(OffPolicyFields):
    """SAC hyperparameters and trainer settings (defaults: Pendulum-v1).

    With ``auto_alpha`` the temperature starts at ``alpha`` and is tuned (Adam
    ``alpha_lr``) towards the target entropy; otherwise ``alpha`` stays fixed. Warm up with
    ``collect(n_step=warmup_steps, random=True)``.
    """

    algo: ClassVar[str] = "sac"

    task: str = "Pendulum-v1"
    hidden_sizes: tuple[int, ...] = (128, 128)
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    gamma: float = 0.99
    tau: float = 0.005
    auto_alpha: bool = True
    alpha: float = 0.2
    alpha_lr: float = 3e-4
    n_step: int = 1


def build(p: SACPreset, observation_space: Any, action_space: Any) -> SAC:
    """Create the actor, twin critics, policy and algorithm.

    >>> import gymnasium as gym
    >>> alg = build(SACPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, alg.n_step
    ('SAC', 1)
    """
    from tdrl.algorithm.modelfree.sac import SAC, SACPolicy
    from tdrl.utils.net import GaussianActor, QCritic

    d, a = common.space_dim(observation_space), common.space_dim(action_space)
    policy = SACPolicy(actor=GaussianActor(d, a, p.hidden_sizes), action_space=action_space)
    critic_args = common.actor_critic_args(p, lambda: QCritic(d, a, p.hidden_sizes))
    return SAC(policy=policy, alpha=common.sac_alpha(p), **critic_args)


register_classic(
    __name__, SACPreset(), trainer="offpolicy", exploration_noise=False, action_space="continuous"
)
