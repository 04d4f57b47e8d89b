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
>>> p.replace(vf_coef=-1.0)
Traceback (most recent call last):
...
tdrl.errors.PresetError: a2c preset field 'vf_coef': expected a float >= 0, got -1.0
"""

from __future__ import annotations

from collections.abc import Callable  # noqa: F401  (resolves the base Preset's annotations)
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.errors import PresetError
from tdrl.presets.registry import Preset, register

if TYPE_CHECKING:
    from tdrl.algorithm.modelfree.a2c import A2C

__all__ = ["A2CPreset", "build"]


@dataclass(frozen=True)
class A2CPreset(Preset):
    """A2C hyperparameters and trainer settings (defaults: CartPole-v1).

    Collect ``episode_per_collect`` whole episodes (or ``step_per_collect`` steps; exactly
    one of the two is set) per update. ``shared_trunk``: actor and critic heads on one MLP
    (as Tianshou's test builds them) rather than two MLPs.
    """

    algo: ClassVar[str] = "a2c"

    task: str = "CartPole-v1"
    threshold: float | None = None
    hidden_sizes: tuple[int, ...] = (64, 64)
    shared_trunk: bool = False
    lr: float = 2e-3
    gamma: float = 0.99
    gae_lambda: float = 0.95
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float | None = 0.5
    return_scaling: bool = False
    deterministic_eval: bool = False
    buffer_size: int = 20_000
    training_num: int = 16
    test_num: int = 100
    max_epochs: int = 4
    step_per_epoch: int = 50_000
    step_per_collect: int | None = 512
    episode_per_collect: int | None = None
    repeat_per_collect: int = 1
    batch_size: int = 128

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.step_per_collect is None) == (self.episode_per_collect is None):
            raise PresetError(
                f"{self.algo} preset fields 'step_per_collect' and 'episode_per_collect': "
                f"expected exactly one of them set, got {self.step_per_collect} and "
                f"{self.episode_per_collect}"
            )

    def trainer_kwargs(self) -> dict[str, Any]:
        """The base's trainer arguments plus ``episode_per_collect``."""
        return {**super().trainer_kwargs(), "episode_per_collect": self.episode_per_collect}


def build(p: A2CPreset, observation_space: Any, action_space: Any) -> A2C:
    """Create the actor (categorical for ``Discrete``, Gaussian for ``Box``), the critic,
    the policy and A2C."""
    import gymnasium as gym
    import numpy as np
    import torch

    from tdrl.algorithm.modelfree.a2c import A2C, ActorPolicy
    from tdrl.utils.net import MLP, DiscreteActor, GaussianActor, VCritic

    d = int(np.prod(observation_space.shape))
    relu = torch.nn.ReLU
    actor: torch.nn.Module
    critic: torch.nn.Module
    if isinstance(action_space, gym.spaces.Discrete):
        n = int(action_space.n)
        if p.shared_trunk:
            trunk = MLP(d, 0, p.hidden_sizes, relu)
            actor = torch.nn.Sequential(trunk, torch.nn.Linear(trunk.output_dim, n))
            critic = torch.nn.Sequential(trunk, torch.nn.Linear(trunk.output_dim, 1))
        else:
            actor = DiscreteActor(d, n, p.hidden_sizes, activation=relu)
            critic = VCritic(d, p.hidden_sizes, activation=relu)
    else:
        a = int(np.prod(action_space.shape))
        actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False)
        critic = VCritic(d, p.hidden_sizes)
    policy = ActorPolicy(
        actor=actor, action_space=action_space, deterministic_eval=p.deterministic_eval
    )
    return A2C(
        policy=policy,
        critic=critic,
        optim=p.lr,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        vf_coef=p.vf_coef,
        ent_coef=p.ent_coef,
        max_grad_norm=p.max_grad_norm,
        return_scaling=p.return_scaling,
    )


register(
    "a2c",
    "classic",
    A2CPreset(),
    builder="tdrl.presets.a2c:build",
    trainer="onpolicy",
    exploration_noise=False,
    action_space="any",
)
