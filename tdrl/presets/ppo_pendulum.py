"""PPO's Pendulum-v1 preset (plain data; torch is imported by :func:`build` only).

A task-specific entry: it wins over PPO's CartPole-tuned ``classic`` entry for Pendulum-v1
only. It starts from Tianshou's ``test/continuous/test_ppo.py``: ``(64, 64)`` ReLU MLPs for
the Gaussian actor (state-independent ``log std``, unbounded mean, actions clipped to
``[-1, 1]`` and scaled to the Box) and the critic, orthogonal weights and zero biases,
Adam 1e-3, gamma 0.95, GAE lambda 0.95, clip 0.2, value clipping, advantage normalization,
return scaling, value coefficient 0.25, no entropy bonus, gradient norm 0.5, minibatches
of 128, 16 envs. Tianshou's rollouts (16 whole episodes, 3200 steps, 2 epochs) reached -250
after 70k env steps on seed 0; shorter rollouts with more epochs learn faster: 800 steps
(50 per env, the critic bootstrapping the unfinished episodes) and 4 epochs per collect
reached -250 on 10 of 10 seeds after 26k-38k env steps. Tests use 20 episodes.

>>> from tdrl.presets import registry
>>> p = registry.preset("ppo", "Pendulum-v1")
>>> type(p).__name__, p.threshold, registry.entry("ppo", "Pendulum-v1").builder
('PPOPendulumPreset', -250.0, 'tdrl.presets.ppo_pendulum:build')
>>> type(registry.preset("ppo", "CartPole-v1")).__name__
'PPOPreset'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets.common import Rules, actor_policy, orthogonal_init, pg_actor, pick, space_dim
from tdrl.presets.ppo import PPO_ARGS, PPOPreset
from tdrl.presets.registry import register

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.ppo import PPO

__all__ = ["PPOPendulumPreset", "build"]


@dataclass(frozen=True)
class PPOPendulumPreset(PPOPreset):
    """:class:`~tdrl.presets.ppo.PPOPreset` plus the Gaussian actor's initial ``log std``,
    orthogonal initialization, advantage recompute and dual clip (defaults: Pendulum-v1)."""

    rules: ClassVar[Rules] = {"dual_clip": ("> 1", lambda v: v > 1)}

    task: str = "Pendulum-v1"
    init_log_std: float = 0.0
    orthogonal_init: bool = True
    lr: float = 1e-3
    gamma: float = 0.95
    dual_clip: float | None = None
    vf_coef: float = 0.25
    advantage_normalization: bool = True
    recompute_advantage: bool = False
    value_clip: bool = True
    return_scaling: bool = True
    training_num: int = 16
    test_num: int = 20
    max_epochs: int = 4
    step_per_collect: int = 800
    repeat_per_collect: int = 4
    batch_size: int = 128


def build(p: PPOPendulumPreset, observation_space: Any, action_space: Any) -> PPO:
    """Create the Gaussian actor (state-independent ``log std``) or, for a ``Discrete``
    space, the categorical actor, the critic, the policy and PPO."""
    import torch

    from tdrl.algorithm.modelfree.ppo import PPO
    from tdrl.utils.net import VCritic

    relu = torch.nn.ReLU
    actor = pg_actor(p, observation_space, action_space, relu, init_log_std=p.init_log_std)
    critic = VCritic(space_dim(observation_space), p.hidden_sizes, activation=relu)
    if p.orthogonal_init:
        orthogonal_init(actor, critic)
    policy = actor_policy(p, actor, action_space)
    return PPO(policy=policy, critic=critic, optim=p.lr, **pick(p, PPO_ARGS))


register(
    "ppo",
    "classic",
    PPOPendulumPreset(),
    task="Pendulum-v1",
    builder="tdrl.presets.ppo_pendulum:build",
    trainer="onpolicy",
    exploration_noise=False,
    action_space="any",
)
