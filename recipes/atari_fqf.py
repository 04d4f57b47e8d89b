"""FQF on Atari (default Pong) with Tianshou's ``examples/atari/atari_fqf.py`` settings.

    python recipes/atari_fqf.py --task PongNoFrameskip-v4 --seed 0
    python recipes/atari_fqf.py --task BreakoutNoFrameskip-v4 --epochs 10
    python recipes/atari_fqf.py --help       # every hyperparameter, with its default

Fully parameterized quantiles: a fraction proposal network (RMSprop) picks the
fractions, IQN's quantile function values them.

The defaults are tdrl's ``atari`` preset (``tdrl train fqf PongNoFrameskip-v4``): 10 envs,
100 epochs of 100k env steps, 0.1 gradient steps per env step.
"""

from __future__ import annotations

import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from tdrl.algorithm.base import OptimizerFactory
from tdrl.algorithm.exploration import LinearSchedule
from tdrl.algorithm.modelfree.fqf import FQF, FQFPolicy
from tdrl.cli import parse_recipe_args, summary_line
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.env.atari import wrap_deepmind
from tdrl.trainer import OffPolicyTrainer
from tdrl.utils.logger import make_logger
from tdrl.utils.net_atari import fqf_net

ALGO, TASK = "fqf", "PongNoFrameskip-v4"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small networks: one thread is fastest

    # DeepMind wrappers (noop reset, frame skip 4, 84x84 grayscale, 4 stacked frames); the
    # training envs also end an episode per life and clip rewards, the test envs play games
    def make_env(training: bool) -> gym.Env:
        return wrap_deepmind(gym.make(p.task), frame_stack=p.frames_stack, training=training)

    train_envs = DummyVectorEnv([lambda: make_env(True)] * p.training_num)
    test_envs = DummyVectorEnv([lambda: make_env(False)] * p.test_num)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    cnn = {"obs_shape": obs_space.shape, "n_actions": int(act_space.n)}
    cnn["scale"] = 255.0 if p.scale_obs else None  # raw 0..255 pixels by default

    # quantile function and fraction proposal on the Nature CNN, the policy, the algorithm
    net, fractions = fqf_net(
        **cnn,
        num_fractions=p.num_fractions,
        num_cosines=p.num_cosines,
        hidden_sizes=p.hidden_sizes,
    )
    policy = FQFPolicy(
        model=net,
        fraction_model=fractions,
        action_space=act_space,
        eps_training=p.eps_train,
        eps_inference=p.eps_test,
    )
    algorithm = FQF(
        policy=policy,
        optim=p.lr,
        fraction_optim=OptimizerFactory(torch.optim.RMSprop, lr=p.fraction_lr),
        gamma=p.gamma,
        ent_coef=p.ent_coef,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )

    # replay buffer (each frame stored once, the stacks of 4 rebuilt when it samples) and
    # collectors; a random warm-up fills the buffer first
    frames = {"stack_num": p.frames_stack, "save_only_last_obs": True, "ignore_obs_next": True}
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num, **frames)
    train_collector = Collector(policy, train_envs, buffer, exploration_noise=True)
    test_buffer = VectorReplayBuffer(2 * p.test_num, p.test_num)  # tests only count returns
    test_collector = Collector(policy, test_envs, test_buffer, exploration_noise=True)
    train_collector.reset(seed=args.seed)
    test_collector.reset(seed=args.seed + 100_000)
    # (at most half the run's steps: a short run still trains on its own data)
    warmup = min(p.warmup_steps, max(p.step_per_epoch, p.max_epochs * p.step_per_epoch // 2))
    train_collector.collect(n_step=warmup, random=True)

    # epsilon decays linearly from eps_train to eps_train_final over eps_decay_steps
    eps = LinearSchedule(p.eps_train, p.eps_train_final, p.eps_decay_steps)

    def train_fn(epoch: int, env_step: int) -> None:
        policy.set_eps_training(eps(env_step))

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
        train_fn=train_fn,
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
