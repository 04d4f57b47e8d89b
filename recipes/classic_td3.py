"""TD3 on Pendulum: a deterministic actor, twin critics, target smoothing, delayed actor.

    python recipes/classic_td3.py --task Pendulum-v1 --seed 0
    python recipes/classic_td3.py --help       # every hyperparameter, with its default

Critic target: ``r + gamma * min(Q1', Q2')(s', clip(mu'(s') + clip(eps, -c, c)))``; the
actor maximises ``Q1(s, mu(s))`` every ``update_actor_freq`` critic steps. The defaults
are tdrl's registry preset (``tdrl train td3 Pendulum-v1``).
"""

from __future__ import annotations

import numpy as np
from common import make_envs, seed_everything, train_off_policy

from tdrl.algorithm.exploration import GaussianNoise, OUNoise
from tdrl.algorithm.modelfree.td3 import TD3, ContinuousDeterministicPolicy
from tdrl.cli import parse_recipe_args
from tdrl.data import VectorReplayBuffer
from tdrl.utils.net import DeterministicActor, QCritic

ALGO, TASK = "td3", "Pendulum-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments: training envs explore, test envs measure the policy
    train_envs, test_envs = make_envs(p)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    d = int(np.prod(obs_space.shape))

    # deterministic actor with Gaussian exploration noise, twin critics, algorithm
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
    algorithm = TD3(
        policy=policy,
        policy_optim=p.actor_lr,
        critic=QCritic(d, a, p.hidden_sizes),
        critic_optim=p.critic_lr,
        critic2=QCritic(d, a, p.hidden_sizes),
        tau=p.tau,
        gamma=p.gamma,
        policy_noise=p.policy_noise,  # target policy smoothing
        noise_clip=p.noise_clip,
        update_actor_freq=p.update_actor_freq,  # delayed actor updates
        n_step=p.n_step,
    )

    # replay buffer and collectors; a random warm-up fills the buffer first
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num)

    train_off_policy(ALGO, args, p, algorithm, buffer, (train_envs, test_envs), noise=True)


if __name__ == "__main__":
    main()
