"""REDQ on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_redq.py`` settings.

    python recipes/mujoco_redq.py --task Hopper-v5 --seed 0
    python recipes/mujoco_redq.py --help       # every hyperparameter, with its default

SAC with an ensemble of ``ensemble_size`` critics: each target takes the min over a random
subset of ``subset_size`` target critics; 20 critic updates per env step (the
update-to-data ratio), the actor updated every ``actor_delay`` of them. One env, a 1M
replay buffer, a random warm-up (at most half of a short run). The defaults are tdrl's
``mujoco`` preset (``tdrl train redq Hopper-v5``): 50 epochs of 5000 steps.
"""

from __future__ import annotations

import numpy as np
from common import make_envs, seed_everything, train_off_policy

from tdrl.algorithm.modelfree.redq import REDQ
from tdrl.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tdrl.cli import parse_recipe_args
from tdrl.data import VectorReplayBuffer
from tdrl.utils.net import GaussianActor, QCritic

ALGO, TASK = "redq", "Hopper-v5"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments: training envs explore, test envs measure the policy
    train_envs, test_envs = make_envs(p)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    d = int(np.prod(obs_space.shape))

    # squashed Gaussian actor, an ensemble of Q critics, entropy temperature, algorithm
    a = int(np.prod(act_space.shape))
    policy = SACPolicy(actor=GaussianActor(d, a, p.hidden_sizes), action_space=act_space)
    alpha: float | AutoAlpha = p.alpha
    if p.auto_alpha:
        alpha = AutoAlpha("auto", log_alpha=float(np.log(p.alpha)), optim=p.alpha_lr)
    algorithm = REDQ(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=[QCritic(d, a, p.hidden_sizes) for _ in range(p.ensemble_size)],
        critic_optim=p.critic_lr,
        ensemble_size=p.ensemble_size,
        subset_size=p.subset_size,
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
        n_step=p.n_step,
        actor_delay=p.actor_delay,
        target_mode=p.target_mode,
    )

    # replay buffer and collectors; a random warm-up fills the buffer first
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num)

    train_off_policy(ALGO, args, p, algorithm, buffer, (train_envs, test_envs), noise=False)


if __name__ == "__main__":
    main()
