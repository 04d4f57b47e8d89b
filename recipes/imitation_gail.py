"""GAIL on Pendulum: imitate an expert's transitions by PPO on a learned reward.

    tdrl gather sac Pendulum-v1 --out sac-pendulum.hdf5     # the expert's transitions
    python recipes/imitation_gail.py --dataset sac-pendulum.hdf5 --seed 0
    python recipes/imitation_gail.py --help       # every hyperparameter, with its default

A discriminator ``D(s, a)`` learns to tell the expert's pairs (label 1) from the policy's
(label 0); PPO maximises the reward ``-log(1 - D(s, a))``. The env reward is never used
for learning, only for the test returns. ``--dataset`` is an HDF5 replay buffer or
``minari:NAME``. The defaults are tdrl's registry preset (``tdrl train gail Pendulum-v1
--dataset FILE``); the run stops at the task's -250, the preset's success threshold is
-1100 (``--stop-reward -1100``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from common import train_on_policy

from tdrl.algorithm.imitation.gail import GAIL
from tdrl.algorithm.modelfree.ppo import ActorPolicy
from tdrl.cli import parse_recipe_args
from tdrl.data.datasets import check_spaces, load_dataset
from tdrl.utils.net import MLP, DiscreteActor, GaussianActor, VCritic

ALGO, TASK = "gail", "Pendulum-v1"


def orthogonal_init(nets: list[torch.nn.Module], gain: float) -> None:
    """Orthogonal weights and zero biases for every linear layer of ``nets``."""
    with torch.no_grad():
        for m in (m for net in nets for m in net.modules()):
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.orthogonal_(m.weight, gain=gain)
                torch.nn.init.zeros_(m.bias)


def build(p: Any, obs_space: gym.Space, act_space: gym.Space, expert: Any) -> GAIL:
    """PPO's actor and critic (orthogonal init) and a discriminator D(s, a) (tanh MLP)
    trained on the ``expert``'s transitions."""
    check_spaces(expert, obs_space, act_space)  # a one-line error if they do not fit
    d = int(np.prod(obs_space.shape))
    actor: torch.nn.Module
    if isinstance(act_space, gym.spaces.Discrete):
        actor, a = DiscreteActor(d, int(act_space.n), p.hidden_sizes), 1
    else:
        a = int(np.prod(act_space.shape))
        actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False)
    critic = VCritic(d, p.hidden_sizes, activation=torch.nn.ReLU)
    orthogonal_init([actor, critic], gain=1.0)
    disc = MLP(d + a, 1, p.disc_hidden_sizes, activation=torch.nn.Tanh)
    orthogonal_init([disc], gain=float(np.sqrt(2)))
    policy = ActorPolicy(
        actor=actor, action_space=act_space, deterministic_eval=p.deterministic_eval
    )
    return GAIL(
        policy=policy,
        critic=critic,
        expert_buffer=expert,
        disc_net=disc,
        optim=p.lr,
        disc_optim=p.disc_lr,
        disc_update_num=p.disc_update_num,  # discriminator steps per update
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


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__, dataset=True)
    # the expert's transitions (a ReplayBuffer of (obs, act, ...)); PPO's training envs
    expert = load_dataset(args.dataset)
    train_on_policy(ALGO, args, p, lambda p, obs, act: build(p, obs, act, expert))
