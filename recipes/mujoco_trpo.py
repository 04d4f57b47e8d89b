"""TRPO on MuJoCo (default Hopper-v5) with Tianshou's ``examples/mujoco/mujoco_trpo.py`` settings.

    python recipes/mujoco_trpo.py --task Hopper-v5 --seed 0
    python recipes/mujoco_trpo.py --help       # every hyperparameter, with its default

NPG's natural-gradient direction, then a backtracking line search that keeps the KL
below ``max_kl`` and the surrogate improving; the critic takes ``optim_critic_iters`` Adam
steps per update. The defaults are tdrl's ``mujoco`` preset (``tdrl train trpo
Hopper-v5``).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from tdrl.algorithm.base import AdamOptimizerFactory, OptimizerFactory
from tdrl.algorithm.modelfree.trpo import TRPO
from tdrl.algorithm.policy_gradient import ActorPolicy
from tdrl.cli import parse_recipe_args, summary_line
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import NormObsDummyVectorEnv
from tdrl.trainer import OnPolicyTrainer
from tdrl.utils.logger import make_logger
from tdrl.utils.net import GaussianActor, VCritic
from tdrl.utils.schedule import linear_lr_decay

ALGO, TASK = "trpo", "Hopper-v5"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # small networks: one thread is fastest

    # environments; observations normalized by a running mean/std of the training envs'
    # observations (Tianshou's VectorEnvNormObs on a DummyVectorEnv, as `tdrl train` makes
    # them), shared frozen with the test envs
    train_envs = NormObsDummyVectorEnv([lambda: gym.make(p.task)] * p.training_num)
    test_envs = NormObsDummyVectorEnv(
        [lambda: gym.make(p.task)] * p.test_num, obs_rms=train_envs.obs_rms, update_obs_rms=False
    )
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]
    d, a = int(np.prod(obs_space.shape)), int(np.prod(act_space.shape))

    # Tianshou's MuJoCo networks: tanh MLPs, orthogonal init, the mean's last layer x 0.01,
    # a free log std at -0.5; actions clipped into the Box
    actor = GaussianActor(
        d, a, p.hidden_sizes, state_dependent_std=False, init_log_std=-0.5, activation=torch.nn.Tanh
    )
    critic = VCritic(d, p.hidden_sizes, activation=torch.nn.Tanh)
    with torch.no_grad():
        for m in [*actor.modules(), *critic.modules()]:
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.orthogonal_(m.weight, gain=float(np.sqrt(2)))
                torch.nn.init.zeros_(m.bias)
        actor.loc.weight.mul_(0.01)
    policy = ActorPolicy(
        actor=actor,
        action_space=act_space,
        deterministic_eval=p.deterministic_eval,
        action_bound_method=p.action_bound_method,
    )
    # the critic's Adam; the actor takes natural-gradient steps
    optim: OptimizerFactory = AdamOptimizerFactory(lr=p.lr)
    if p.lr_decay:  # linearly to 0 over the run's updates (one per collect)
        updates = math.ceil(p.step_per_epoch / p.step_per_collect) * p.max_epochs
        optim = optim.with_lr_scheduler(linear_lr_decay(updates))
    algorithm = TRPO(
        policy=policy,
        critic=critic,
        optim=optim,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        return_scaling=p.return_scaling,
        advantage_normalization=p.advantage_normalization,
        optim_critic_iters=p.optim_critic_iters,
        max_kl=p.max_kl,
        backtrack_coeff=p.backtrack_coeff,
        max_backtracks=p.max_backtracks,
    )

    # on-policy: the buffer holds one rollout, emptied after each update
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num)
    train_collector = Collector(policy, train_envs, buffer)
    test_collector = Collector(policy, test_envs, VectorReplayBuffer(2 * p.test_num, p.test_num))
    train_collector.reset(seed=args.seed)
    test_collector.reset(seed=args.seed + 100_000)

    # logger and trainer: test after every epoch, stop at the task's threshold
    log_dir = Path(args.logdir) / f"{ALGO}-{p.task}-seed{args.seed}-{time.strftime('%H%M%S')}"
    trainer = OnPolicyTrainer(
        algorithm,
        train_collector,
        test_collector=test_collector,
        max_epochs=p.max_epochs,
        step_per_epoch=p.step_per_epoch,
        step_per_collect=p.step_per_collect,
        repeat_per_collect=p.repeat_per_collect,
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
