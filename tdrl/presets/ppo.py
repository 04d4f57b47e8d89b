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

from tdrl.presets.registry import Preset, register

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.ppo import PPO

__all__ = ["PPOPreset", "build"]


@dataclass(frozen=True)
class PPOPreset(Preset):
    """PPO hyperparameters and trainer settings (defaults: CartPole-v1)."""

    algo: ClassVar[str] = "ppo"

    task: str = "CartPole-v1"
    threshold: float | None = None
    hidden_sizes: tuple[int, ...] = (64, 64)
    lr: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    eps_clip: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    advantage_normalization: bool = False
    value_clip: bool = False
    return_scaling: bool = False
    deterministic_eval: bool = True
    buffer_size: int = 20_000
    training_num: int = 20
    test_num: int = 100
    max_epochs: int = 10
    step_per_epoch: int = 50_000
    step_per_collect: int = 2000
    repeat_per_collect: int = 10
    batch_size: int = 64


def build(p: PPOPreset, observation_space: Any, action_space: Any) -> PPO:
    """Create the actor (categorical for ``Discrete``, Gaussian for ``Box``), critic, policy.

    >>> import gymnasium as gym
    >>> alg = build(PPOPreset(hidden_sizes=(8,)), gym.spaces.Box(-1, 1, (3,)),
    ...             gym.spaces.Box(-2, 2, (1,)))
    >>> type(alg).__name__, type(alg.policy.actor).__name__
    ('PPO', 'GaussianActor')
    """
    import gymnasium as gym
    import numpy as np
    import torch

    from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
    from tdrl.utils.net import DiscreteActor, GaussianActor, VCritic

    d = int(np.prod(observation_space.shape))
    actor: torch.nn.Module
    if isinstance(action_space, gym.spaces.Discrete):
        actor = DiscreteActor(d, int(action_space.n), p.hidden_sizes)
    else:
        a = int(np.prod(action_space.shape))
        actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False)
    policy = ActorPolicy(
        actor=actor, action_space=action_space, deterministic_eval=p.deterministic_eval
    )
    return PPO(
        policy=policy,
        critic=VCritic(d, p.hidden_sizes),
        optim=p.lr,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        eps_clip=p.eps_clip,
        vf_coef=p.vf_coef,
        ent_coef=p.ent_coef,
        max_grad_norm=p.max_grad_norm,
        advantage_normalization=p.advantage_normalization,
        value_clip=p.value_clip,
        return_scaling=p.return_scaling,
    )


register(
    "ppo",
    "classic",
    PPOPreset(),
    builder="tdrl.presets.ppo:build",
    trainer="onpolicy",
    exploration_noise=False,
    action_space="any",
)
