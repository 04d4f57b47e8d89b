"""DRQN on CartPole: a recurrent (LSTM) Q-network; how its hidden state flows.

    python recipes/recurrent_drqn.py --task CartPole-v1 --seed 0
    python recipes/recurrent_drqn.py --help       # every hyperparameter, with its default

Acting, the collector carries each env's hidden state from step to step (zeroed when the
env resets): ``q_t, state_t = net(o_t, state_{t-1})``. The buffer stores single
observations, no hidden state; sampled with ``stack_num = T``, it returns each sample's
``T`` latest observations ``[B, T, obs_dim]`` (the episode's first frame repeated before
its start), and the learner runs the LSTM over them from a zero state. The loss is DQN's
(n-step target, target net). The final evaluation below steps the network by hand to
show the state being carried. The defaults are tdrl's registry preset (``tdrl train drqn
CartPole-v1``).
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import torch
from common import make_collectors, make_envs, run_dir, seed_everything, trainer_options, warm_up

from tdrl.algorithm.modelfree.drqn import DRQN, DRQNPolicy
from tdrl.cli import parse_recipe_args, summary_line
from tdrl.data import VectorReplayBuffer
from tdrl.trainer import OffPolicyTrainer
from tdrl.utils.net_recurrent import RecurrentQNet

ALGO, TASK = "drqn", "CartPole-v1"


def main(argv: list[str] | None = None) -> None:
    args, p = parse_recipe_args(ALGO, TASK, argv, description=__doc__)
    seed_everything(args.seed)

    # environments: training envs explore, test envs measure the policy
    train_envs, test_envs = make_envs(p)
    obs_space, act_space = train_envs.observation_space[0], train_envs.action_space[0]

    # embedding -> LSTM -> Q head; forward(obs, state) -> (q, new state)
    net = RecurrentQNet(
        obs_space.shape, int(act_space.n), hidden_size=p.hidden_size, num_layers=p.num_layers
    )
    policy = DRQNPolicy(
        model=net, action_space=act_space, eps_training=p.eps_train, eps_inference=p.eps_test
    )
    algorithm = DRQN(
        policy=policy,
        optim=p.lr,
        gamma=p.gamma,
        n_step=p.n_step,
        target_update_freq=p.target_update_freq,
    )

    # the buffer samples the stack_num latest observations of each sampled step; the
    # collectors carry each env's hidden state; a random warm-up fills the buffer first
    buffer = VectorReplayBuffer(p.buffer_size, p.training_num, stack_num=p.stack_num)
    train_collector, test_collector = make_collectors(
        policy, train_envs, test_envs, buffer, args.seed, noise=True
    )
    warm_up(train_collector, p)  # random steps, at most half the run's

    # logger and trainer: test after every epoch, stop at the task's threshold
    log_dir = run_dir(args, ALGO, p.task)
    trainer = OffPolicyTrainer(
        algorithm,
        train_collector,
        test_collector=test_collector,
        step_per_collect=p.step_per_collect,
        update_per_step=p.update_per_step,
        **trainer_options(args, p, log_dir),
    )
    start = time.perf_counter()
    result = trainer.run()

    # final evaluation by hand, to show the hidden state flowing: one LSTM step per env
    # step, the state carried from step to step and started from zeros (None) each episode
    net.eval()
    env, returns = gym.make(p.task), []
    for episode in range(min(p.test_num, 10)):
        obs, _ = env.reset(seed=args.seed + 200_000 + episode)
        state, total, done = None, 0.0, False
        while not done:
            with torch.no_grad():
                q, state = net(torch.as_tensor(obs[None], dtype=torch.float32), state=state)
            obs, reward, terminated, truncated, _ = env.step(int(q.argmax()))  # greedy
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    mean, std, n = np.mean(returns), np.std(returns), len(returns)
    print(f"final evaluation: {mean:.1f} ± {std:.1f} over {n} episodes")
    train_envs.close()
    test_envs.close()
    print(summary_line(ALGO, p.task, result, time.perf_counter() - start, log_dir))


if __name__ == "__main__":
    main()
