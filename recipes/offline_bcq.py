"""BCQ (batch-constrained Q-learning) from a dataset of transitions, tested in the real env.

    tdrl gather sac Pendulum-v1 --out sac-pendulum.hdf5     # an expert's transitions
    python recipes/offline_bcq.py --dataset sac-pendulum.hdf5 --seed 0
    python recipes/offline_bcq.py --help       # every hyperparameter, with its default

A VAE models the dataset's actions; the policy perturbs VAE samples by at most
``phi`` and picks the best by the critic, so it stays near the data.

``--dataset`` is an HDF5 replay buffer (``tdrl gather``, Tianshou's or a D4RL-style flat
file) or ``minari:NAME``. The defaults are tdrl's registry preset for the task (``tdrl
train bcq Pendulum-v1 --dataset FILE`` trains the same thing).
"""

from __future__ import annotations

import numpy as np
from common import load_offline, seed_everything, train_offline

from tdrl.algorithm.imitation.bcq import BCQ, BCQPolicy
from tdrl.cli import parse_recipe_args
from tdrl.utils.net import QCritic
from tdrl.utils.net_vae import VAE, Perturbation

ALGO, TASK = "bcq", "Pendulum-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__, dataset=True)
    seed_everything(args.seed)

    # the dataset to learn from (a ReplayBuffer of transitions), test envs to measure the
    # policy in, and their spaces (a one-line error if the dataset does not fit them)
    dataset, test_envs, obs_space, act_space = load_offline(args, p)
    d = int(np.prod(obs_space.shape))

    # VAE of the dataset's actions, perturbation actor, twin critics (inside BCQ), policy
    a = int(np.prod(act_space.shape))
    policy = BCQPolicy(
        actor_perturbation=Perturbation(d, a, p.hidden_sizes, phi=p.phi),
        critic=QCritic(d, a, p.hidden_sizes),
        vae=VAE(d, a, p.vae_hidden_sizes, p.latent_dim),
        action_space=act_space,
        observation_space=obs_space,
        forward_sampled_times=p.forward_sampled_times,  # candidates per state when acting
    )
    algorithm = BCQ(
        policy=policy,
        actor_perturbation_optim=p.actor_lr,
        critic_optim=p.critic_lr,
        vae_optim=p.vae_lr,
        gamma=p.gamma,
        tau=p.tau,
        lmbda=p.lmbda,  # weight of the min in the soft clipped double-Q target
        num_sampled_action=p.num_sampled_action,
    )

    train_offline(ALGO, args, p, algorithm, dataset, test_envs)


if __name__ == "__main__":
    main()
