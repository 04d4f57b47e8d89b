"""PettingZoo wrappers (turn-based and parallel) and a pistonball smoke training."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from pettingzoo.butterfly import pistonball_v6
from pettingzoo.classic import tictactoe_v3
from torch import nn

from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.multiagent import MultiAgentCollector, MultiAgentOffPolicyAlgorithm
from tdrl.env.pettingzoo import PettingZooEnv, PettingZooParallelEnv
from tdrl.trainer import OffPolicyTrainer


def test_turn_based_env_reports_every_agents_reward() -> None:
    env = PettingZooEnv(tictactoe_v3.env())
    obs, _ = env.reset(seed=0)
    assert env.agents == ["player_1", "player_2"] and env.agent_idx["player_2"] == 1
    assert set(obs) == {"agent_id", "obs", "mask"} and obs["mask"].dtype == bool
    assert env.observation_space["agent_id"].n == 2  # type: ignore[index]
    # X takes the left column (0, 1, 2), O plays 3 and 4
    for move, mover in ((0, 0), (3, 1), (1, 0), (4, 1)):
        assert int(obs["agent_id"]) == mover
        obs, rew, term, trunc, _ = env.step(move)
        assert rew.tolist() == [0.0, 0.0] and not term
        assert not obs["mask"][move]
    obs, rew, term, trunc, _ = env.step(2)
    assert rew.tolist() == [1.0, -1.0] and term and not trunc
    final = env.observe("player_1")
    assert final["obs"][..., 0].sum() == 3 and env.observe(1)["obs"][..., 1].sum() == 3


def test_wrappers_reject_the_other_api_and_unknown_agents() -> None:
    with pytest.raises(TypeError, match="expected a PettingZoo AECEnv"):
        PettingZooEnv(pistonball_v6.parallel_env(n_pistons=3))
    with pytest.raises(TypeError, match="expected a PettingZoo ParallelEnv"):
        PettingZooParallelEnv(tictactoe_v3.env())
    env = PettingZooEnv(tictactoe_v3.env())
    env.reset(seed=0)
    with pytest.raises(KeyError, match="unknown agent 'player_9'"):
        env.observe("player_9")
    par = PettingZooParallelEnv(pistonball_v6.parallel_env(continuous=False, n_pistons=3))
    par.reset(seed=2)
    with pytest.raises(
        ValueError, match=r"action: expected one action per agent, shape \(3, ...\)"
    ):
        par.step(np.array([1, 1]))


def test_parallel_env_stacks_the_agents() -> None:
    env = PettingZooParallelEnv(pistonball_v6.parallel_env(continuous=False, n_pistons=3))
    obs, _ = env.reset(seed=2)
    assert obs["agent_id"].tolist() == [0, 1, 2]
    assert obs["obs"].shape == (3, 457, 120, 3) and obs["obs"].dtype == np.uint8
    assert obs["mask"].all()
    n = 0
    while True:
        obs, rew, term, trunc, info = env.step(np.array([1, 1, 1]))
        n += 1
        assert rew.shape == (3,) and info["terminated"].shape == (3,)
        if term or trunc:
            break
    assert n == 125 and trunc and not term  # seed 2: the ball never reaches the wall


class _PixelQ(nn.Module):
    """A small CNN on ``[B, 457, 120, 3]`` uint8 frames."""

    def __init__(self, n_actions: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=8, stride=8),
            nn.ReLU(),
            nn.Conv2d(8, 8, kernel_size=4, stride=4),
            nn.ReLU(),
            nn.Flatten(),
            nn.LazyLinear(n_actions),
        )
        self.net(torch.zeros(1, 3, 457, 120))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = torch.as_tensor(obs).permute(0, 3, 1, 2).float() / 255.0
        return self.net(x)


def test_pistonball_smoke_training_with_a_shared_policy() -> None:
    """Parallel API, image observations, one DQN shared by the three pistons."""
    torch.manual_seed(0)
    np.random.seed(0)

    def make_env() -> PettingZooParallelEnv:
        return PettingZooParallelEnv(pistonball_v6.parallel_env(continuous=False, n_pistons=3))

    env = make_env()
    policy = DQNPolicy(
        model=_PixelQ(int(env.action_space.n)),  # type: ignore[attr-defined]
        action_space=env.action_space,
        eps_training=0.1,
    )
    dqn = DQN(policy=policy, optim=1e-3, gamma=0.9, n_step=3, target_update_freq=20)
    agents = MultiAgentOffPolicyAlgorithm(dict.fromkeys(env.agents, dqn), env.agents)
    train = MultiAgentCollector(agents, [make_env], buffer=240, exploration_noise=True, seed=2)
    test = MultiAgentCollector(agents.policy, [make_env], seed=3)
    start = time.perf_counter()
    result = OffPolicyTrainer(
        agents,
        train,
        max_epochs=1,
        step_per_epoch=60,
        step_per_collect=10,
        update_per_step=0.2,
        batch_size=16,
        test_collector=test,
        episode_per_test=1,
        show_progress=False,
        verbose=False,
    ).run()
    assert result.env_step == 60 and result.gradient_step == 12
    assert np.isfinite(result.best_reward)
    assert (
        train.buffer is not None and len(train.buffer[0]) == 180
    )  # 3 pistons x 60 steps, one ring per (env, piston)
    assert dqn.n_updates == 12
    assert time.perf_counter() - start < 30
