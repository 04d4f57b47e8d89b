"""BCQ (batch-constrained Q-learning) from a dataset of transitions, tested in the real env.

    tdrl gather sac Pendulum-v1 --out sac-pendulum.hdf5     # an expert's transitions
    python recipes/offline_bcq.py --dataset sac-pendulum.hdf5 --seed 0
    python recipes/offline_bcq.py --help       # every hyperparameter, with its default

A VAE models the dataset's actions; the policy perturbs VAE samples by at most
``phi`` and picks the best by the critic, so it stays near the data.

Defaults: tdrl's preset, as ``tdrl train bcq Pendulum-v1 --dataset FILE``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_offline

from tdrl.algorithm.imitation.bcq import BCQ, BCQPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import QCritic
from tdrl.utils.net_vae import VAE, Perturbation

ALGO, TASK = "bcq", "Pendulum-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space, dataset: Any) -> BCQ:
    """VAE of the dataset's actions, perturbation actor, twin critics (inside BCQ),
    policy."""
    d = int(np.prod(obs_space.shape))

    a = int(np.prod(act_space.shape))
    policy = BCQPolicy(
        actor_perturbation=Perturbation(d, a, p.hidden_sizes, phi=p.phi),
        critic=QCritic(d, a, p.hidden_sizes),
        vae=VAE(d, a, p.vae_hidden_sizes, p.latent_dim),
        action_space=act_space,
        observation_space=obs_space,
        forward_sampled_times=p.forward_sampled_times,  # candidates per state when acting
    )
    return BCQ(
        policy=policy,
        actor_perturbation_optim=p.actor_lr,
        critic_optim=p.critic_lr,
        vae_optim=p.vae_lr,
        gamma=p.gamma,
        tau=p.tau,
        lmbda=p.lmbda,  # weight of the min in the soft clipped double-Q target
        num_sampled_action=p.num_sampled_action,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__, dataset=True)
    # seed, test envs, the --dataset, build(...), the offline trainer, a final evaluation
    # and tdrl train's summary line (common.py)
    train_offline(ALGO, args, p, build)
