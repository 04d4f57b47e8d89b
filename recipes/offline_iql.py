"""IQL (implicit Q-learning) from a dataset of transitions, tested in the real env.

    tdrl gather sac Pendulum-v1 --out sac-pendulum.hdf5     # an expert's transitions
    python recipes/offline_iql.py --dataset sac-pendulum.hdf5 --seed 0
    python recipes/offline_iql.py --help       # every hyperparameter, with its default

A value net fit by expectile regression to the critics (never querying unseen
actions), critics to ``r + gamma * V(s')``, and the actor by advantage-weighted
regression ``exp(beta * (Q - V)) * log pi(a|s)``.

Defaults: tdrl's preset, as ``tdrl train iql Pendulum-v1 --dataset FILE``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_offline
from torch import nn

from tdrl.algorithm.imitation.iql import IQL, IQLPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import GaussianActor, QCritic, VCritic

ALGO, TASK = "iql", "Pendulum-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space, dataset: Any) -> IQL:
    """Gaussian actor with a bounded mean, twin critics, a value net, policy, algorithm."""
    d = int(np.prod(obs_space.shape))

    a = int(np.prod(act_space.shape))
    actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False, bounded_loc=True)
    policy = IQLPolicy(
        actor=actor, action_space=act_space, observation_space=obs_space, deterministic_eval=True
    )
    return IQL(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        critic2=QCritic(d, a, p.hidden_sizes),
        value=VCritic(d, p.hidden_sizes, activation=nn.ReLU),
        value_optim=p.value_lr,
        tau=p.tau,
        gamma=p.gamma,
        expectile=p.expectile,
        beta=p.beta,
        max_weight=p.max_weight,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__, dataset=True)
    # seed, test envs, the --dataset, build(...), the offline trainer, a final evaluation
    # and tdrl train's summary line (common.py)
    train_offline(ALGO, args, p, build)
