"""A2C presets (plain data; torch is imported by :func:`build` only).

``classic`` (CartPole-v1) starts from Tianshou's ``test/discrete/test_a2c_with_il.py``
(Adam 1e-3, gamma 0.9, GAE lambda 1, value coefficient 0.5, no entropy bonus, no gradient
clipping, 16 whole episodes per collect, one epoch of minibatches of 64). Those settings
reached 195 on 8 of 10 seeds: on the other two the policy collapsed to a deterministic one
(entropy ~0.01, returns ~9), because a collect of long episodes gives dozens of plain
policy-gradient steps on the same data. The preset collects fixed-length rollouts instead,
as the A2C paper and OpenAI baselines do: 16 envs x 32 steps, the critic bootstrapping
unfinished episodes, 4 minibatches of 128 per collect, Adam 2e-3, gamma 0.99, GAE lambda
0.95, gradient norm 0.5, ``(64, 64)`` ReLU networks; 10 of 10 seeds reached 195 after
17k-37k env steps.

>>> from tdrl.presets import registry
>>> p = registry.preset("a2c", "CartPole-v1")
>>> p.gamma, p.threshold, registry.entry("a2c", "CartPole-v1").trainer
(0.99, 195.0, 'onpolicy')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import EpisodeCollectFields, OnPolicyFields, register_classic

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.a2c import A2C

__all__ = ["A2C_ARGS", "A2CPreset", "build"]

A2C_ARGS = ("gamma", "gae_lambda", "vf_coef", "ent_coef", "max_grad_norm", "return_scaling")
"""The A2C arguments an A2C preset's fields of the same names set."""


@dataclass(frozen=True)
class A2CPreset(EpisodeCollectFields, OnPolicyFields):
    """A2C hyperparameters and trainer settings (defaults: CartPole-v1).

    Collect ``episode_per_collect`` whole episodes (or ``step_per_collect`` steps; exactly
    one of the two is set) per update. ``shared_trunk``: actor and critic heads on one MLP
    (as Tianshou's test builds them) rather than two MLPs.
    """

    algo: ClassVar[str] = "a2c"

    task: str = "CartPole-v1"
    shared_trunk: bool = False
    lr: float = 2e-3
    gae_lambda: float = 0.95
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float | None = 0.5
    return_scaling: bool = False
    deterministic_eval: bool = False
    training_num: int = 16
    max_epochs: int = 4
    step_per_collect: int | None = 512  # type: ignore[assignment]  # EpisodeCollectFields'
    repeat_per_collect: int = 1
    batch_size: int = 128


def build(p: A2CPreset, observation_space: Any, action_space: Any) -> A2C:
    """Create the actor (categorical for ``Discrete``, Gaussian for ``Box``), the critic,
    the policy and A2C."""
    import gymnasium as gym
    import torch

    from tdrl.algorithm.modelfree.a2c import A2C
    from tdrl.utils.net import MLP, VCritic

    d, relu = common.space_dim(observation_space), torch.nn.ReLU
    actor: torch.nn.Module
    critic: torch.nn.Module
    if not isinstance(action_space, gym.spaces.Discrete):
        actor, critic = (
            common.pg_actor(p, observation_space, action_space),
            VCritic(d, p.hidden_sizes),
        )
    elif p.shared_trunk:
        trunk, n = MLP(d, 0, p.hidden_sizes, relu), int(action_space.n)
        actor = torch.nn.Sequential(trunk, torch.nn.Linear(trunk.output_dim, n))
        critic = torch.nn.Sequential(trunk, torch.nn.Linear(trunk.output_dim, 1))
    else:
        actor = common.pg_actor(p, observation_space, action_space, relu)
        critic = VCritic(d, p.hidden_sizes, activation=relu)
    policy = common.actor_policy(p, actor, action_space)
    return A2C(policy=policy, critic=critic, optim=p.lr, **common.pick(p, A2C_ARGS))


register_classic(
    __name__, A2CPreset(), trainer="onpolicy", exploration_noise=False, action_space="any"
)
