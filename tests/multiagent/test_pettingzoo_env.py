"""PettingZoo wrappers (turn-based and parallel) and a pistonball smoke training."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest
import torch
from pettingzoo.butterfly import pistonball_v6
from pettingzoo.classic import tictactoe_v3
from pettingzoo.utils.env import ParallelEnv
from torch import nn

from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.multiagent import MultiAgentCollector, MultiAgentOffPolicyAlgorithm
from tdrl.env.pettingzoo import PettingZooEnv, PettingZooParallelEnv
from tdrl.trainer import OffPolicyTrainer

# PettingZoo >= 1.27 prefers pettingzoo.make("aec", ...); the module API still works (>= 1.24)
pytestmark = pytest.mark.filterwarnings("ignore:The old environment creation API")


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


class _Race(ParallelEnv):  # type: ignore[misc]
    """Two runners; action 1 moves one square. ``a`` earns 1 per move and stops after 2
    steps (terminated), ``b`` earns 2 per move and runs 4 steps (truncated)."""

    metadata = {"name": "race"}  # noqa: RUF012
    possible_agents = ["a", "b"]  # noqa: RUF012

    def __init__(self) -> None:
        self._obs_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
        self._act_space = gym.spaces.Discrete(2)

    def observation_space(self, agent: str) -> gym.Space:
        return self._obs_space

    def action_space(self, agent: str) -> gym.Space:
        return self._act_space

    def reset(self, seed=None, options=None):  # type: ignore[no-untyped-def]
        self.agents = list(self.possible_agents)
        self.pos = {"a": 0.0, "b": 0.0}
        self.t = 0
        return {a: np.array([0.0], np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):  # type: ignore[no-untyped-def]
        self.t += 1
        rew = {}
        for agent, act in actions.items():
            self.pos[agent] += act
            rew[agent] = float(act) * (1.0 if agent == "a" else 2.0)
        obs = {a: np.array([self.pos[a]], np.float32) for a in actions}
        term = {a: a == "a" and self.t == 2 for a in actions}
        trunc = {a: a == "b" and self.t == 4 for a in actions}
        self.agents = [a for a in self.agents if not (term[a] or trunc[a])]
        return obs, rew, term, trunc, {a: {} for a in actions}


def test_parallel_agents_store_their_own_transitions_and_stop_when_done() -> None:
    def make() -> PettingZooParallelEnv:
        return PettingZooParallelEnv(_Race())

    env = make()
    np.random.seed(0)
    algs = {  # both explore at random, so moves and rewards vary
        a: DQN(
            policy=DQNPolicy(model=nn.Linear(1, 2), action_space=env.action_space, eps_training=1.0)
        )
        for a in env.agents
    }
    ma = MultiAgentOffPolicyAlgorithm(algs, env.agents)
    ma.policy.is_within_training_step = True
    col = MultiAgentCollector(ma, [make], buffer=40, exploration_noise=True, return_reduction=1)
    stats = col.collect(n_episode=3)
    assert stats.lens.tolist() == [4, 4, 4]
    assert col.buffer is not None
    for k, (steps, scale, flag) in enumerate(((2, 1.0, "terminated"), (4, 2.0, "truncated"))):
        data = col.buffer[k][col.buffer[k].sample_indices(0)]
        assert len(data) == 3 * steps
        moved = data["obs_next"]["obs"][:, 0] - data["obs"]["obs"][:, 0]
        assert moved.tolist() == data["act"].float().tolist()  # its own next position
        assert data["rew"].tolist() == (data["act"].float() * scale).tolist()
        ends = data["done"].numpy()
        assert ends.sum() == 3 and data[flag].numpy()[ends].all()
    assert stats.returns.tolist() == stats.agent_returns[:, 1].tolist()
