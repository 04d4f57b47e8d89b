"""Rainbow on CartPole: C51 with dueling noisy streams, n-step targets and prioritized replay.

    python recipes/classic_rainbow.py --task CartPole-v1 --seed 0
    python recipes/classic_rainbow.py --help       # every hyperparameter, with its default

Noisy linear layers (``noisy_std``) explore on top of epsilon-greedy; the replay buffer
samples transitions in proportion to ``priority ** alpha`` and corrects with importance
weights ``** beta``. The defaults are tdrl's registry preset (``tdrl train rainbow
CartPole-v1``).
"""

from __future__ import annotations

import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from tdrl.algorithm.modelfree.rainbow import Rainbow, RainbowPolicy
from tdrl.cli import parse_recipe_args, summary_line
from tdrl.data import Collector, PrioritizedVectorReplayBuffer, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.trainer import OffPolicyTrainer
from tdrl.utils.logger import make_logger
from tdrl.utils.net_rainbow import RainbowNet

ALGO, TASK = "rainbow", "CartPole-v1"


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

    # dueling noisy distributional network, policy and algorithm
    net = RainbowNet(
        d,
        int(act_space.n),
        p.num_atoms,
        p.hidden_sizes,
        head_hidden_sizes=p.head_hidden_sizes,
        noisy_std=p.noisy_std,
    )
    policy = RainbowPolicy(
        model=net,
        action_space=act_space,
        num_atoms=p.num_atoms,
        v_min=p.v_min,
        v_max=p.v_max,
        eps_training=p.eps_train,
        eps_inference=p.eps_test,
    )
    algorithm = Rainbow(
        policy=policy,
        optim=p.lr,
        gamma=p.gamma,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )

    # replay buffer and collectors; a random warm-up fills the buffer first
    buffer = (
        PrioritizedVectorReplayBuffer(  # importance weights divided by the batch maximum
            p.buffer_size, p.training_num, alpha=p.alpha, beta=p.beta, weight_norm=True
        )
        if p.prioritized_replay
        else VectorReplayBuffer(p.buffer_size, p.training_num)
    )
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
