"""Tic-tac-toe: train a DQN agent that moves first against a random player, then play it.

    python recipes/tictactoe_dqn.py                # train (under a minute on one CPU core),
                                                   # report the greedy win rate over 200 games
    python recipes/tictactoe_dqn.py --play         # play against the trained agent (you are O)

The agent ("player_1", X) and its opponent ("player_2", O, uniformly random over the legal
squares) share one PettingZoo game. The policy manager routes each player's observations
to its own policy; only the DQN learns, from its own transitions: its reward is +1 / -1 /
0 for a win / loss / draw and arrives after the opponent's reply, and its next
observation is the board at its own next turn. Illegal squares are masked out of the
argmax, the bootstrap and the random exploration moves.

The trained weights are saved to ``--path`` (``--play`` trains first when the file is
missing). Moves are read from stdin as square numbers 1-9::

     1 | 2 | 3
    ---+---+---
     4 | 5 | 6
    ---+---+---
     7 | 8 | 9
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch
from pettingzoo.classic import tictactoe_v3

from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.multiagent import (
    MultiAgentCollector,
    MultiAgentOffPolicyAlgorithm,
    RandomPolicy,
)
from tdrl.env.pettingzoo import PettingZooEnv
from tdrl.trainer import OffPolicyTrainer
from tdrl.utils.net import QNet


def get_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--play", action="store_true", help="play against the trained agent")
    p.add_argument("--path", default="log/tictactoe_dqn.pt", help="where the weights live")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=0.9)
    p.add_argument("--n-step", type=int, default=1)
    p.add_argument("--target-update-freq", type=int, default=100)
    p.add_argument("--hidden-sizes", type=int, nargs="*", default=[128, 128])
    p.add_argument("--eps-train", type=float, default=0.1)
    p.add_argument("--buffer-size", type=int, default=20_000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-train-envs", type=int, default=10)
    p.add_argument("--step-per-collect", type=int, default=10)
    p.add_argument("--update-per-step", type=float, default=0.5)
    p.add_argument("--epoch", type=int, default=20)
    p.add_argument("--step-per-epoch", type=int, default=1000)
    p.add_argument("--test-games", type=int, default=200, help="games per test phase")
    p.add_argument("--stop-win-rate", type=float, default=0.98)
    p.add_argument("--eval-games", type=int, default=200)
    return p.parse_args(argv)


def make_env() -> PettingZooEnv:
    return PettingZooEnv(tictactoe_v3.env())


def make_agents(args: argparse.Namespace) -> MultiAgentOffPolicyAlgorithm:
    """X: a DQN on the 18 board features (own marks, opponent's marks); O: random."""
    env = make_env()
    n_actions = int(env.action_space.n)  # type: ignore[attr-defined]
    net = QNet(18, n_actions, hidden_sizes=args.hidden_sizes)
    policy = DQNPolicy(
        model=net, action_space=env.action_space, eps_training=args.eps_train, eps_inference=0.0
    )
    dqn = DQN(
        policy=policy,
        optim=args.lr,
        gamma=args.gamma,
        n_step=args.n_step,
        target_update_freq=args.target_update_freq,
    )
    opponent = RandomPolicy(env.action_space)
    return MultiAgentOffPolicyAlgorithm({"player_1": dqn, "player_2": opponent}, env.agents)


def win_rate(agent_returns: np.ndarray) -> np.ndarray:
    """Per game: 1.0 when X won (its return is +1)."""
    return (agent_returns[:, 0] > 0).astype(np.float64)


def train(
    args: argparse.Namespace, test_fn: Callable[[int, int], None] | None = None
) -> tuple[MultiAgentOffPolicyAlgorithm, Any]:
    """Train X against the random O; return the algorithm and the trainer's result
    (``test_fn(epoch, env_step)`` runs before each test)."""
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    agents = make_agents(args)
    train_collector = MultiAgentCollector(
        agents,
        [make_env for _ in range(args.num_train_envs)],
        buffer=args.buffer_size,
        exploration_noise=True,
        return_reduction=win_rate,
        seed=args.seed,
    )
    test_collector = MultiAgentCollector(
        agents.policy,
        [make_env for _ in range(10)],
        return_reduction=win_rate,
        seed=args.seed + 100,
    )
    train_collector.collect(n_step=args.batch_size * args.num_train_envs)
    trainer = OffPolicyTrainer(
        agents,
        train_collector,
        max_epochs=args.epoch,
        step_per_epoch=args.step_per_epoch,
        step_per_collect=args.step_per_collect,
        update_per_step=args.update_per_step,
        batch_size=args.batch_size,
        test_collector=test_collector,
        episode_per_test=args.test_games,
        stop_fn=lambda rate: rate >= args.stop_win_rate,
        test_fn=test_fn,
        show_progress=False,
        verbose=False,
    )
    return agents, trainer.run()


def evaluate(agents: MultiAgentOffPolicyAlgorithm, n_games: int, seed: int) -> dict[str, float]:
    """Greedy X against random O over ``n_games``: win, draw and loss rates."""
    agents.policy.is_within_training_step = False
    agents.policy.eval()
    collector = MultiAgentCollector(agents.policy, [make_env for _ in range(10)], seed=seed)
    x = collector.collect(n_episode=n_games).agent_returns[:, 0]
    return {
        "win": float((x > 0).mean()),
        "draw": float((x == 0).mean()),
        "loss": float((x < 0).mean()),
    }


def board_text(obs: dict[str, Any]) -> str:
    """The board from the observation of the player to move (X is player_1)."""
    grid = np.asarray(obs["obs"])  # grid[c, r, k]: square c*3+r (PettingZoo's numbering)
    me, other = ("X", "O") if int(obs["agent_id"]) == 0 else ("O", "X")
    rows = []
    for r in range(3):
        cells = []
        for c in range(3):
            mark = me if grid[c, r, 0] else other if grid[c, r, 1] else str(3 * r + c + 1)
            cells.append(f" {mark} ")
        rows.append("|".join(cells))
    return "\n---+---+---\n".join(rows)


def play(
    agents: MultiAgentOffPolicyAlgorithm, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout
) -> float:
    """One game: the agent is X and moves first, you are O and type squares 1-9.

    Returns X's reward (+1 X won, -1 you won, 0 a draw).
    """
    agents.policy.is_within_training_step = False
    env = make_env()
    obs, _ = env.reset()
    print("You are O. Squares are numbered 1-9, left to right, top to bottom.", file=stdout)
    while True:
        if int(obs["agent_id"]) == 0:
            move = int(agents.policy.compute_action(obs))
            print(f"X plays {move % 3 * 3 + move // 3 + 1}", file=stdout)
        else:
            print(board_text(obs), file=stdout)
            move = _read_move(obs, stdin, stdout)
        obs, rewards, terminated, truncated, _ = env.step(move)
        if terminated or truncated:
            print(board_text(env.observe(0)), file=stdout)
            x = float(rewards[0])
            print({1.0: "X wins.", -1.0: "You win!"}.get(x, "Draw."), file=stdout)
            return x


def _read_move(obs: dict[str, Any], stdin: TextIO, stdout: TextIO) -> int:
    """A legal move from stdin (square 1-9 -> PettingZoo's column-major action)."""
    while True:
        print("Your move (1-9): ", end="", file=stdout, flush=True)
        line = stdin.readline()
        if not line:
            raise SystemExit("no more input")
        text = line.strip()
        if text.isdigit() and 1 <= int(text) <= 9:
            square = int(text) - 1
            action = square % 3 * 3 + square // 3
            if obs["mask"][action]:
                return action
            print(f"Square {text} is taken.", file=stdout)
        else:
            print(f"Type a square number 1-9, got {text!r}.", file=stdout)


def main(argv: list[str] | None = None) -> int:
    args = get_args(argv)
    path = Path(args.path)
    if args.play and path.exists():
        agents = make_agents(args)
        agents.load_state_dict(torch.load(path, weights_only=False))
    else:
        agents, result = train(args)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(agents.state_dict(), path)
        rates = evaluate(agents, args.eval_games, seed=args.seed + 1000)
        print(
            f"trained in {result.env_step} env steps, {result.timing.total_time:.0f} s; "
            f"greedy X vs random O over {args.eval_games} games: win {rates['win']:.1%}, "
            f"draw {rates['draw']:.1%}, loss {rates['loss']:.1%}; weights in {path}"
        )
    if args.play:
        while True:
            play(agents)
            print("Again? [y/N] ", end="", flush=True)
            if not sys.stdin.readline().strip().lower().startswith("y"):
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
