"""SAC on Pendulum: a squashed Gaussian actor, twin Q critics, an auto-tuned entropy bonus.

    python recipes/classic_sac.py --task Pendulum-v1 --seed 0
    python recipes/classic_sac.py --help       # every hyperparameter, with its default

Critic target: ``r + gamma * (min(Q1', Q2')(s', a') - alpha * log pi(a'|s'))``, ``a' ~ pi``;
actor loss: ``alpha * log pi(a|s) - min(Q1, Q2)(s, a)``; soft target updates (``tau``).
The defaults are tdrl's registry preset (``tdrl train sac Pendulum-v1``).
"""

from __future__ import annotations

import numpy as np
from common import make_envs, seed_everything, train_off_policy

from tdrl.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
from tdrl.cli import parse_recipe_args
from tdrl.data import VectorReplayBuffer
from tdrl.utils.net import GaussianActor, QCritic

ALGO, TASK = "sac", "Pendulum-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments: training envs explore, test envs measure the policy
    train_envs, test_envs = make_envs(p)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    d = int(np.prod(obs_space.shape))

    # squashed Gaussian actor, twin Q critics (inside SAC), entropy temperature, algorithm
    a = int(np.prod(act_space.shape))
    policy = SACPolicy(actor=GaussianActor(d, a, p.hidden_sizes), action_space=act_space)
    alpha: float | AutoAlpha = p.alpha  # fixed, or tuned towards the target entropy
    if p.auto_alpha:
        alpha = AutoAlpha("auto", log_alpha=float(np.log(p.alpha)), optim=p.alpha_lr)
    algorithm = SAC(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),  # SAC makes the second critic a copy
        critic_optim=p.critic_lr,
        tau=p.tau,
        gamma=p.gamma,
        alpha=alpha,
        n_step=p.n_step,
    )

    # replay buffer and collectors; a random warm-up fills the buffer first
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num)

    train_off_policy(ALGO, args, p, algorithm, buffer, (train_envs, test_envs), noise=False)


if __name__ == "__main__":
    main()
