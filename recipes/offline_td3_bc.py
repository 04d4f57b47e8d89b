"""TD3+BC from a dataset of transitions, tested in the real env.

    tdrl gather sac Pendulum-v1 --out sac-pendulum.hdf5     # an expert's transitions
    python recipes/offline_td3_bc.py --dataset sac-pendulum.hdf5 --seed 0
    python recipes/offline_td3_bc.py --help       # every hyperparameter, with its default

TD3 whose actor loss adds a behavior-cloning term: ``-lambda * Q(s, mu(s)) +
(mu(s) - a)^2`` with ``lambda = alpha / mean|Q|``; observations normalized by the
dataset's mean and std.

Defaults: tdrl's preset, as ``tdrl train td3_bc Pendulum-v1 --dataset FILE``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from common import train_offline

from tdrl.algorithm.imitation.td3_bc import TD3BC, TD3BCPolicy, dataset_obs_rms
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import DeterministicActor, QCritic

ALGO, TASK = "td3_bc", "Pendulum-v1"


def build(p: Any, obs_space: gym.Space, act_space: gym.Space, dataset: Any) -> TD3BC:
    """Deterministic actor, twin critics, a policy that normalizes observations by the
    dataset's statistics (also in the test envs), algorithm."""
    d = int(np.prod(obs_space.shape))

    a = int(np.prod(act_space.shape))
    policy = TD3BCPolicy(
        actor=DeterministicActor(d, a, p.hidden_sizes),
        action_space=act_space,
        observation_space=obs_space,
        obs_rms=dataset_obs_rms(dataset) if p.norm_obs else None,
    )
    return TD3BC(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        critic2=QCritic(d, a, p.hidden_sizes),
        tau=p.tau,
        gamma=p.gamma,
        policy_noise=p.policy_noise,
        noise_clip=p.noise_clip,
        update_actor_freq=p.update_actor_freq,
        alpha=p.alpha,
        n_step=p.n_step,
    )


if __name__ == "__main__":
    args, p = parse_recipe_args(ALGO, TASK, description=__doc__, dataset=True)
    # seed, test envs, the --dataset, build(...), the offline trainer, a final evaluation
    # and tdrl train's summary line (common.py)
    train_offline(ALGO, args, p, build)
