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

import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from tdrl.algorithm.imitation.bcq import BCQ, BCQPolicy
from tdrl.cli import parse_recipe_args, summary_line
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.data.datasets import check_spaces, load_dataset
from tdrl.env import DummyVectorEnv
from tdrl.trainer import OfflineTrainer
from tdrl.utils.logger import make_logger
from tdrl.utils.net import QCritic
from tdrl.utils.net_vae import VAE, Perturbation

ALGO, TASK = "bcq", "Pendulum-v1"


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
