"""DDPG on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_ddpg.py`` settings.

    python recipes/mujoco_ddpg.py --task Hopper-v5 --seed 0
    python recipes/mujoco_ddpg.py --help       # every hyperparameter, with its default

Deterministic actor with Gaussian exploration noise and one critic: target
``r + gamma * Q'(s', mu'(s'))``, actor loss ``-Q(s, mu(s))``, soft target updates (ReLU
MLPs 256-256).

One env, one env step per collect and one gradient step per env step, a 1M replay
buffer, a random warm-up (at most half of a short run). The defaults are tdrl's
``mujoco`` preset (``tdrl train ddpg Hopper-v5``): 50 epochs of 5000 steps.
"""

from __future__ import annotations

import numpy as np
from common import make_envs, seed_everything, train_off_policy

from tdrl.algorithm.exploration import GaussianNoise, OUNoise
from tdrl.algorithm.modelfree.ddpg import DDPG, ContinuousDeterministicPolicy
from tdrl.cli import parse_recipe_args
from tdrl.data import VectorReplayBuffer
from tdrl.utils.net import DeterministicActor, QCritic

ALGO, TASK = "ddpg", "Hopper-v5"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments: training envs explore, test envs measure the policy
    train_envs, test_envs = make_envs(p)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    d = int(np.prod(obs_space.shape))

    # deterministic actor with exploration noise, one critic, algorithm
    a = int(np.prod(act_space.shape))
    policy = ContinuousDeterministicPolicy(
        actor=DeterministicActor(d, a, p.hidden_sizes),
        action_space=act_space,
        exploration_noise=(
            GaussianNoise(sigma=p.noise_sigma)
            if p.exploration_noise == "gaussian"
            else OUNoise(sigma=p.noise_sigma)
        ),
    )
    algorithm = DDPG(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        tau=p.tau,
        gamma=p.gamma,
        n_step=p.n_step,
    )

    # replay buffer and collectors; a random warm-up fills the buffer first
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num)

    train_off_policy(ALGO, args, p, algorithm, buffer, (train_envs, test_envs), noise=True)


if __name__ == "__main__":
    main()
