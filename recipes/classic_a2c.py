"""A2C on CartPole: synchronous advantage actor-critic, one gradient step per rollout.

    python recipes/classic_a2c.py --task CartPole-v1 --seed 0
    python recipes/classic_a2c.py --help       # every hyperparameter, with its default

Loss: ``-log pi(a|s) * A + vf_coef * (V(s) - R)^2 - ent_coef * H[pi]`` over the whole
rollout, with GAE advantages. The defaults are tdrl's registry preset (``tdrl train a2c
CartPole-v1``).
"""

from __future__ import annotations

import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from tdrl.algorithm.modelfree.a2c import A2C, ActorPolicy
from tdrl.cli import parse_recipe_args, summary_line
from tdrl.data import Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.trainer import OnPolicyTrainer
from tdrl.utils.logger import make_logger
from tdrl.utils.net import MLP, DiscreteActor, GaussianActor, VCritic

ALGO, TASK = "a2c", "CartPole-v1"


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

    # actor and critic (ReLU MLPs; optionally one shared trunk), policy and algorithm
    actor: torch.nn.Module
    critic: torch.nn.Module
    if isinstance(act_space, gym.spaces.Discrete) and p.shared_trunk:
        trunk = MLP(d, 0, p.hidden_sizes, torch.nn.ReLU)
        actor = torch.nn.Sequential(trunk, torch.nn.Linear(trunk.output_dim, int(act_space.n)))
        critic = torch.nn.Sequential(trunk, torch.nn.Linear(trunk.output_dim, 1))
    elif isinstance(act_space, gym.spaces.Discrete):
        actor = DiscreteActor(d, int(act_space.n), p.hidden_sizes, activation=torch.nn.ReLU)
        critic = VCritic(d, p.hidden_sizes, activation=torch.nn.ReLU)
    else:
        a = int(np.prod(act_space.shape))
        actor = GaussianActor(d, a, p.hidden_sizes, state_dependent_std=False)
        critic = VCritic(d, p.hidden_sizes)
    policy = ActorPolicy(
        actor=actor, action_space=act_space, deterministic_eval=p.deterministic_eval
    )
    algorithm = A2C(
        policy=policy,
        critic=critic,
        optim=p.lr,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        vf_coef=p.vf_coef,
        ent_coef=p.ent_coef,
        max_grad_norm=p.max_grad_norm,
        return_scaling=p.return_scaling,
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
