"""GAIL presets (plain data; the builder imports torch when called).

``tdrl train gail Pendulum-v1 --dataset FILE.hdf5`` imitates the expert transitions of
``tdrl gather sac Pendulum-v1`` with GAIL (online PPO on the discriminator's reward; the
env reward is never used for learning, only for the test returns). The preset starts from
Tianshou's ``test/offline/test_gail.py``: ``(64, 64)`` actor and critic with orthogonal
weights, Adam 1e-3, gamma 0.95, GAE lambda 0.95, clip 0.2, value clipping, advantage
normalization, return scaling, value coefficient 0.25, no entropy bonus, gradient norm 0.5,
minibatches of 128, 16 envs, a ``(64, 64)`` tanh discriminator on ``[obs, act]``
(orthogonal weights, gain sqrt 2) with Adam 5e-4. As in tdrl's PPO Pendulum preset, the
rollouts are 800 steps (the critic bootstrapping unfinished episodes) with 4 epochs each
rather than Tianshou's 16 whole episodes with 2 epochs; with Tianshou's 2 discriminator
steps per update and no entropy bonus, seeds 0-2 first reached -1100 after 64k-83k env
steps; with 4 discriminator steps and an entropy bonus of 0.01 (what the preset uses)
after 35k-51k. Tests every 10k env steps, 100k at most.

The threshold, -1100 (the issue's and Tianshou's), is the preset's own: it is the stop
and success threshold of ``tdrl train gail Pendulum-v1`` (the registry's -250 for
Pendulum-v1 is for algorithms that learn from the env reward).

>>> p = GAILPreset()
>>> p.task, p.threshold, p.disc_update_num
('Pendulum-v1', -1100.0, 4)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from tdrl.presets import common
from tdrl.presets.common import POSITIVE, Rules, register_classic
from tdrl.presets.ppo import PPO_ARGS, PPOPreset

if TYPE_CHECKING:
    from tdrl.algorithm.imitation.gail import GAIL

__all__ = ["GAILPreset", "build"]


@dataclass(frozen=True)
class GAILPreset(PPOPreset):
    """:class:`~tdrl.presets.ppo.PPOPreset` plus the discriminator's settings (defaults:
    Pendulum-v1)."""

    algo: ClassVar[str] = "gail"
    rules: ClassVar[Rules] = {"disc_lr": POSITIVE, "disc_update_num": POSITIVE}

    task: str = "Pendulum-v1"
    threshold: float | None = -1100.0
    disc_hidden_sizes: tuple[int, ...] = (64, 64)
    lr: float = 1e-3
    disc_lr: float = 5e-4
    disc_update_num: int = 4
    gamma: float = 0.95
    vf_coef: float = 0.25
    ent_coef: float = 0.01
    advantage_normalization: bool = True
    value_clip: bool = True
    return_scaling: bool = True
    training_num: int = 16
    test_num: int = 20
    step_per_epoch: int = 10_000
    step_per_collect: int = 800
    repeat_per_collect: int = 4
    batch_size: int = 128


def build(p: GAILPreset, observation_space: Any, action_space: Any, dataset: Any = None) -> GAIL:
    """Create the actor (Gaussian, state-independent ``log std``; categorical for a
    ``Discrete`` space), the critic, the discriminator and GAIL on the expert ``dataset``."""
    import gymnasium as gym
    import numpy as np
    import torch

    from tdrl.algorithm.imitation.gail import GAIL
    from tdrl.data.datasets import check_spaces
    from tdrl.errors import PresetError
    from tdrl.utils.net import MLP, VCritic

    if dataset is None:
        raise PresetError("gail learns from expert data: expected --dataset FILE.hdf5, got none")
    check_spaces(dataset, observation_space, action_space)
    d = common.space_dim(observation_space)
    a = 1 if isinstance(action_space, gym.spaces.Discrete) else common.space_dim(action_space)
    actor = common.pg_actor(p, observation_space, action_space)
    critic = VCritic(d, p.hidden_sizes, activation=torch.nn.ReLU)
    common.orthogonal_init(actor, critic)
    disc = MLP(d + a, 1, p.disc_hidden_sizes, activation=torch.nn.Tanh)
    common.orthogonal_init(disc, gain=float(np.sqrt(2)))
    return GAIL(
        policy=common.actor_policy(p, actor, action_space),
        critic=critic,
        expert_buffer=dataset,
        disc_net=disc,
        optim=p.lr,
        disc_optim=p.disc_lr,
        disc_update_num=p.disc_update_num,
        **common.pick(p, PPO_ARGS),
    )


register_classic(
    __name__,
    GAILPreset(),
    trainer="onpolicy",
    exploration_noise=False,
    action_space="any",
    needs_dataset=True,
)
