"""NPG presets (plain data; torch is imported by :func:`build` only).

``classic`` (Pendulum-v1) starts from Tianshou's ``test/continuous/test_npg.py``: a
``(64, 64)`` tanh MLP actor (state-independent ``log std``, unbounded mean) and critic,
orthogonal weights and zero biases, gamma 0.95, GAE lambda 0.95, return scaling and
advantage normalization, 5 critic steps per actor step, trust region size 0.5, full-batch
updates twice per collect, 16 training envs, no observation normalization. Changed for
speed: 1024 env steps per collect (Tianshou's test: 2048; reached the threshold in about
60k env steps against 70-100k) and epochs of 5000 steps (a test every 5 collects; the
budget stays 250k steps). A larger trust region (1.0), more critic steps (10) or more
passes per collect (4) made some seeds fail.

>>> from tdrl.presets import registry
>>> p = registry.preset("npg", "Pendulum-v1")
>>> p.trust_region_size, p.threshold, registry.entry("npg", "Pendulum-v1").trainer
(0.5, -250.0, 'onpolicy')
>>> p.replace(optim_critic_iters=0)
Traceback (most recent call last):
...
tdrl.errors.PresetError: npg preset field 'optim_critic_iters': expected an int > 0, got 0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets.registry import Preset, register

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.npg import NPG

__all__ = ["NPGPreset", "build", "build_networks"]


@dataclass(frozen=True)
class NPGPreset(Preset):
    """NPG hyperparameters and trainer settings (defaults: Pendulum-v1)."""

    algo: ClassVar[str] = "npg"
    rules: ClassVar[dict[str, tuple[str, Callable[[Any], bool]]]] = {
        "trust_region_size": ("> 0", lambda v: v > 0),
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
    trust_region_size: float = 0.5
    deterministic_eval: bool = True
    buffer_size: int = 50_000
    training_num: int = 16
    test_num: int = 10
    max_epochs: int = 50
    step_per_epoch: int = 5000
    step_per_collect: int = 1024
    repeat_per_collect: int = 2
    batch_size: int = 99_999


def build_networks(p: Any, observation_space: Any, action_space: Any) -> tuple[Any, Any]:
    """The policy (tanh MLP Gaussian actor) and critic of an NPG/TRPO preset, with
    orthogonal weights and zero biases as in Tianshou's tests."""
    import gymnasium as gym
    import numpy as np
    import torch

    from tdrl.algorithm.policy_gradient import ActorPolicy
    from tdrl.utils.net import DiscreteActor, GaussianActor, VCritic

    d = int(np.prod(observation_space.shape))
    actor: torch.nn.Module
    if isinstance(action_space, gym.spaces.Discrete):
        actor = DiscreteActor(d, int(action_space.n), p.hidden_sizes)
    else:
        a = int(np.prod(action_space.shape))
        actor = GaussianActor(
            d, a, p.hidden_sizes, state_dependent_std=False, activation=torch.nn.Tanh
        )
    critic = VCritic(d, p.hidden_sizes)
    for m in [*actor.modules(), *critic.modules()]:
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.orthogonal_(m.weight)
            torch.nn.init.zeros_(m.bias)
    policy = ActorPolicy(
        actor=actor, action_space=action_space, deterministic_eval=p.deterministic_eval
    )
    return policy, critic


def build(p: NPGPreset, observation_space: Any, action_space: Any) -> NPG:
    """Create the actor, critic, policy and NPG."""
    from tdrl.algorithm.modelfree.npg import NPG

    policy, critic = build_networks(p, observation_space, action_space)
    return NPG(
        policy=policy,
        critic=critic,
        optim=p.lr,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        return_scaling=p.return_scaling,
        advantage_normalization=p.advantage_normalization,
        optim_critic_iters=p.optim_critic_iters,
        trust_region_size=p.trust_region_size,
    )


register(
    "npg",
    "classic",
    NPGPreset(),
    builder="tdrl.presets.npg:build",
    trainer="onpolicy",
    exploration_noise=False,
    action_space="any",
)
