"""PPO's ``classic`` preset (plain data; the builder imports torch when called).

Tuned on CartPole-v1 (threshold 195), from Tianshou's ``test/discrete/test_ppo_discrete.py``;
with tdrl's collector and a minimal Tianshou-style loop (3 seeds, 20 test episodes after
each epoch of 2k steps) the threshold was first reached after 4k env steps on every seed
(2000 steps per collect, 10 epochs per collect). ``step_per_epoch`` is Tianshou's. The
task-specific Pendulum-v1 entry lives in :mod:`tdrl.presets.ppo_pendulum`, the ``mujoco``
one in :mod:`tdrl.presets.mujoco`.

>>> p = PPOPreset()
>>> p.lr, p.step_per_collect, p.trainer_kwargs()["repeat_per_collect"]
(0.0003, 2000, 10)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import OnPolicyFields, register_classic

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.ppo import PPO

__all__ = ["PPO_ARGS", "PPOPreset", "build"]

PPO_ARGS = (
    *("gamma", "gae_lambda", "eps_clip", "dual_clip", "vf_coef", "ent_coef", "max_grad_norm"),
    *("advantage_normalization", "recompute_advantage", "value_clip", "return_scaling"),
)
"""The PPO arguments a PPO preset's fields of the same names set (those it has)."""


@dataclass(frozen=True)
class PPOPreset(OnPolicyFields):
    """PPO hyperparameters and trainer settings (defaults: CartPole-v1; the trainer's and
    the actor's are :class:`~tdrl.presets.common.OnPolicyFields`')."""

    algo: ClassVar[str] = "ppo"

    task: str = "CartPole-v1"
    gae_lambda: float = 0.95
    eps_clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    advantage_normalization: bool = False
    value_clip: bool = False
    return_scaling: bool = False


def build(p: PPOPreset, observation_space: Any, action_space: Any) -> PPO:
    """Create the actor (categorical for ``Discrete``, Gaussian for ``Box``), critic, policy.

    >>> import gymnasium as gym
    >>> alg = build(PPOPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, type(alg.policy.actor).__name__
    ('PPO', 'GaussianActor')
    """
    from tdrl.algorithm.modelfree.ppo import PPO
    from tdrl.utils.net import VCritic

    policy = common.actor_policy(
        p, common.pg_actor(p, observation_space, action_space), action_space
    )
    critic = VCritic(common.space_dim(observation_space), p.hidden_sizes)
    return PPO(policy=policy, critic=critic, optim=p.lr, **common.pick(p, PPO_ARGS))


register_classic(
    __name__, PPOPreset(), trainer="onpolicy", exploration_noise=False, action_space="any"
)
