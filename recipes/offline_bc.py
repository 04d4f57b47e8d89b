"""Behavior cloning from a dataset of transitions, tested in the real env.

    tdrl gather sac Pendulum-v1 --out sac-pendulum.hdf5     # an expert's transitions
    python recipes/offline_bc.py --dataset sac-pendulum.hdf5 --seed 0
    python recipes/offline_bc.py --help       # every hyperparameter, with its default

Supervised learning of the dataset's actions: mean squared error for a Box (a
deterministic actor), cross-entropy for a Discrete action space (``--task CartPole-v1``
with ``tdrl gather dqn CartPole-v1`` data).

``--dataset`` is an HDF5 replay buffer (``tdrl gather``, Tianshou's or a D4RL-style flat
file) or ``minari:NAME``. The defaults are tdrl's registry preset for the task (``tdrl
train bc Pendulum-v1 --dataset FILE`` trains the same thing).
"""

from __future__ import annotations

import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from tdrl.algorithm.imitation.bc import BC, ImitationPolicy
from tdrl.cli import parse_recipe_args, summary_line
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.data.datasets import check_spaces, load_dataset
from tdrl.env import DummyVectorEnv
from tdrl.trainer import OfflineTrainer
from tdrl.utils.logger import make_logger
from tdrl.utils.net import MLP, DeterministicActor

ALGO, TASK = "bc", "Pendulum-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__, dataset=True)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small networks: one thread is fastest

    # the dataset to learn from, and test envs to measure the policy in
    dataset = load_dataset(args.dataset)  # a ReplayBuffer of transitions
    test_envs = DummyVectorEnv([lambda: gym.make(p.task)] * p.test_num)
    obs_space, act_space = test_envs.observation_space[0], test_envs.action_space[0]
    check_spaces(dataset, obs_space, act_space)  # a one-line error if they do not fit
    d = int(np.prod(obs_space.shape))

    # the actor (logits for Discrete, a tanh-bounded action for Box), policy, algorithm
    actor: nn.Module
    if isinstance(act_space, gym.spaces.Discrete):
        actor = MLP(d, int(act_space.n), p.hidden_sizes, output_activation=None)
        if p.output == "probs":
            actor = nn.Sequential(actor, nn.Softmax(dim=-1))
    else:
        actor = DeterministicActor(d, int(np.prod(act_space.shape)), p.hidden_sizes)
    policy = ImitationPolicy(
        actor=actor,
        action_space=act_space,
        observation_space=obs_space,
        output=p.output,
        action_scaling=isinstance(act_space, gym.spaces.Box),
    )
    algorithm = BC(policy=policy, optim=p.lr)

    # no training envs: the trainer samples the dataset; the test collector counts returns
    test_collector = Collector(policy, test_envs, VectorReplayBuffer(2 * p.test_num, p.test_num))
    test_collector.reset(seed=args.seed + 100_000)

    # logger and trainer: step_per_epoch gradient steps per epoch, then a test
    log_dir = Path(args.logdir) / f"{ALGO}-{p.task}-seed{args.seed}-{time.strftime('%H%M%S')}"
    trainer = OfflineTrainer(
        algorithm,
        dataset,
        test_collector=test_collector,
        max_epochs=p.max_epochs,
        step_per_epoch=p.step_per_epoch,
        batch_size=p.batch_size,
        episode_per_test=p.test_num,
        stop_fn=None if p.threshold is None else lambda best: best >= p.threshold,
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
    test_envs.close()
    print(summary_line(ALGO, p.task, result, time.perf_counter() - start, log_dir, offline=True))


if __name__ == "__main__":
    main()
