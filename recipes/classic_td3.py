"""TD3 on Pendulum: a deterministic actor, twin critics, target smoothing, delayed actor.

    python recipes/classic_td3.py --task Pendulum-v1 --seed 0
    python recipes/classic_td3.py --help       # every hyperparameter, with its default

Critic target: ``r + gamma * min(Q1', Q2')(s', clip(mu'(s') + clip(eps, -c, c)))``; the
actor maximises ``Q1(s, mu(s))`` every ``update_actor_freq`` critic steps. The defaults
are tdrl's registry preset (``tdrl train td3 Pendulum-v1``).
"""

from __future__ import annotations

import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from tdrl.algorithm.exploration import GaussianNoise, OUNoise
from tdrl.algorithm.modelfree.td3 import TD3, ContinuousDeterministicPolicy
from tdrl.cli import parse_recipe_args, summary_line
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.trainer import OffPolicyTrainer
from tdrl.utils.logger import make_logger
from tdrl.utils.net import DeterministicActor, QCritic

ALGO, TASK = "td3", "Pendulum-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small networks: one thread is fastest

    # environments: training envs explore, test envs measure the policy
    train_envs = DummyVectorEnv([lambda: gym.make(p.task)] * p.training_num)
    test_envs = DummyVectorEnv([lambda: gym.make(p.task)] * p.test_num)
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
    train_collector = Collector(policy, train_envs, buffer, exploration_noise=True)
    test_buffer = VectorReplayBuffer(2 * p.test_num, p.test_num)  # tests only count returns
    test_collector = Collector(policy, test_envs, test_buffer, exploration_noise=True)
    train_collector.reset(seed=args.seed)
    test_collector.reset(seed=args.seed + 100_000)
    # (at most half the run's steps: a short run still trains on its own data)
    warmup = min(p.warmup_steps, max(p.step_per_epoch, p.max_epochs * p.step_per_epoch // 2))
    train_collector.collect(n_step=warmup, random=True)

    # logger and trainer: test after every epoch, stop at the task's threshold
    log_dir = Path(args.logdir) / f"{ALGO}-{p.task}-seed{args.seed}-{time.strftime('%H%M%S')}"
    trainer = OffPolicyTrainer(
        algorithm,
        train_collector,
        test_collector=test_collector,
        max_epochs=p.max_epochs,
        step_per_epoch=p.step_per_epoch,
        step_per_collect=p.step_per_collect,
        update_per_step=p.update_per_step,
        batch_size=p.batch_size,
        episode_per_test=p.test_num,
        stop_fn=None if p.threshold is None else lambda best: best >= p.threshold,
        test_in_train=p.threshold is not None,
        logger=make_logger(args.logger, log_dir),
        show_progress=not args.no_progress,
    )
    start = time.perf_counter()
    result = trainer.run()

    # final evaluation of the trained policy, then the summary line `tdrl train` prints
    policy.is_within_training_step = False
    policy.eval()
    test_collector.reset()
    final = test_collector.collect(n_episode=p.test_num).returns_stat
    assert final is not None
    print(f"final evaluation: {final.mean:.1f} ± {final.std:.1f} over {p.test_num} episodes")
    train_envs.close()
    test_envs.close()
    print(summary_line(ALGO, p.task, result, time.perf_counter() - start, log_dir))


if __name__ == "__main__":
    main()
