"""Tic-tac-toe, first seat against a random player: tdrl's per-agent transitions against
Tianshou 2.0.1's joint ones, same hyperparameters and budget, judged exactly.

Both train the recipe's DQN (``recipes/tictactoe_dqn.py``'s defaults: 128x128 MLP, lr
1e-3, gamma 0.9, 1-step targets, target sync every 100 steps, epsilon 0.1, 10 envs, 10
steps per collect, 0.5 gradient steps per step, batch 64) for ``--epochs`` x 1000 env
steps without early stopping. After every epoch the greedy agent is judged by its exact
win probability against the uniformly random player (every reply enumerated), so no test
games are sampled; the script prints each library's mean over the seeds, epoch by epoch.

    python scripts/tictactoe_vs_tianshou.py --seeds 0 1 2 --epochs 11
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def _winner(board: list[int]) -> int:
    for a, b, c in LINES:
        if board[a] and board[a] == board[b] == board[c]:
            return board[a]
    return 0


def view(board: tuple[int, ...] | list[int]) -> tuple[np.ndarray, np.ndarray]:
    """X's observation ``[3, 3, 2]`` (own marks, opponent's) and its legal-move mask."""
    grid = np.array(board).reshape(3, 3)
    obs = np.stack([grid == 1, grid == 2], axis=-1).astype(np.int8)
    return obs, np.array([x == 0 for x in board])


def exact(act: Callable[[tuple[int, ...]], int]) -> np.ndarray:
    """``[P(win), P(draw), P(loss)]`` of the greedy first player ``act(board)`` against a
    uniformly random second player (squares: 0 empty, 1 X, 2 O; PettingZoo's numbering)."""

    @lru_cache(None)
    def value(board: tuple[int, ...]) -> np.ndarray:
        b = list(board)
        b[act(board)] = 1
        if _winner(b) == 1:
            return np.array([1.0, 0.0, 0.0])
        free = [i for i in range(9) if b[i] == 0]
        if not free:
            return np.array([0.0, 1.0, 0.0])
        total = np.zeros(3)
        for f in free:
            c = list(b)
            c[f] = 2
            if _winner(c) == 2:
                total += (0.0, 0.0, 1.0)
            elif all(c):
                total += (0.0, 1.0, 0.0)
            else:
                total += value(tuple(c))
        return total / len(free)

    return value((0,) * 9)


def train_tdrl(seed: int, epochs: int) -> list[float]:
    """P(win) after each epoch."""
    spec = importlib.util.spec_from_file_location(
        "tictactoe_dqn", ROOT / "recipes/tictactoe_dqn.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    args = mod.get_args(
        ["--seed", str(seed), "--epoch", str(epochs), "--stop-win-rate", "2", "--test-games", "10"]
    )
    np.random.seed(seed)
    torch.manual_seed(seed)
    agents = mod.make_agents(args)  # the same initial weights as mod.train's own
    curve: list[float] = []

    def act(board: tuple[int, ...]) -> int:
        obs, mask = view(board)
        return int(agents.policy.compute_action({"agent_id": 0, "obs": obs, "mask": mask}))

    def judge(epoch: int, env_step: int) -> None:
        if epoch > 0:
            curve.append(float(exact(act)[0]))

    mod.make_agents = lambda _args: agents  # type: ignore[attr-defined]  # train these agents
    mod.train(args, test_fn=judge)
    return curve


def train_tianshou(seed: int, epochs: int) -> list[float]:
    """P(win) after each epoch."""
    from pettingzoo.classic import tictactoe_v3
    from tianshou.algorithm import (
        DQN,
        MARLRandomDiscreteMaskedOffPolicyAlgorithm,
        MultiAgentOffPolicyAlgorithm,
    )
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch, Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.env.pettingzoo_env import PettingZooEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    def make() -> PettingZooEnv:
        return PettingZooEnv(tictactoe_v3.env())

    train_envs = DummyVectorEnv([make for _ in range(10)])
    test_envs = DummyVectorEnv([make for _ in range(10)])
    np.random.seed(seed)
    torch.manual_seed(seed)
    train_envs.seed(seed)
    test_envs.seed(seed)
    env = make()
    net = Net(state_shape=(3, 3, 2), action_shape=9, hidden_sizes=[128, 128])
    policy = DiscreteQLearningPolicy(
        model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0
    )
    dqn = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=1,
        target_update_freq=100,
    )
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    ma = MultiAgentOffPolicyAlgorithm(algorithms=[dqn, opponent], env=env)
    train = Collector[CollectStats](
        ma, train_envs, VectorReplayBuffer(20_000, 10), exploration_noise=True
    )
    test = Collector[CollectStats](ma, test_envs, exploration_noise=True)
    curve: list[float] = []

    def act(board: tuple[int, ...]) -> int:
        obs, mask = view(board)
        with torch.no_grad():
            out = policy(Batch(obs=Batch(obs=obs[None], mask=mask[None]), info={}))
        return int(out.act[0])

    def judge(epoch: int, env_step: int | None) -> None:
        if epoch > 0:
            curve.append(float(exact(act)[0]))

    train.reset()
    train.collect(n_step=64 * 10)
    ma.run_training(
        OffPolicyTrainerParams(
            training_collector=train,
            test_collector=test,
            max_epochs=epochs,
            epoch_num_steps=1000,
            collection_step_num_env_steps=10,
            test_step_num_episodes=10,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.5,
            test_in_training=False,
            multi_agent_return_reduction=lambda r: r[:, 0],
            test_fn=judge,
            show_progress=False,
        )
    )
    return curve


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--epochs", type=int, default=11)
    args = p.parse_args(argv)
    for lib, train in (("tdrl", train_tdrl), ("tianshou", train_tianshou)):
        curves = []
        for seed in args.seeds:
            start = time.perf_counter()
            curves.append(train(seed, args.epochs))
            print(
                f"{lib} seed {seed}: P(win) by epoch "
                f"{' '.join(f'{w:.2f}' for w in curves[-1])} "
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
        mean = np.mean(curves, axis=0)
        print(f"{lib} mean over seeds: {' '.join(f'{w:.3f}' for w in mean)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
