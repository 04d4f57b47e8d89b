"""Defects found in review of the algorithm layer, each pinned by a test.

Targets that detach on ``.to()``/``.double()``, masks that made losses non-finite and a
warm-up that ignored them, recurrent state and ``info`` never reaching the models, PPO
with a per-dimension ``Normal``, ``map_action``'s dtype.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Normal

from tdrl.algorithm import DQN, PPO, SAC, ActorPolicy, AutoAlpha, DQNPolicy, SACPolicy
from tdrl.algorithm.base import make_batch
from tdrl.data import Batch, Collector, VectorReplayBuffer
from tdrl.env import DummyVectorEnv
from tdrl.utils.net import GaussianActor, QCritic, QNet, VCritic
from tests.algorithm.fakebuf import episode_buffer


# -- targets follow .to() / .double() ---------------------------------------------------
def _dqn(**kw: Any) -> DQN:
    policy = DQNPolicy(model=QNet(3, 2, (8,)), action_space=gym.spaces.Discrete(2))
    return DQN(policy=policy, target_update_freq=2, **kw)


def _sac() -> SAC:
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    policy = SACPolicy(actor=GaussianActor(3, 2, (8,)), action_space=box)
    return SAC(policy=policy, critic=QCritic(3, 2, (8,)), alpha=AutoAlpha("auto"))


def test_dqn_target_follows_double_and_hard_update_reaches_it() -> None:
    alg = _dqn().double()
    assert alg.model_old.trunk[0].weight.dtype == torch.float64
    with torch.no_grad():
        for p in alg.policy.model.parameters():
            p.add_(1.0)
    alg.sync_target()
    for t, s in zip(alg.model_old.parameters(), alg.policy.model.parameters()):
        assert torch.equal(t, s)
    # tdrl's own fused hard updater reaches the moved target too
    with torch.no_grad():
        for p in alg.policy.model.parameters():
            p.mul_(3.0)
    upd = alg._updaters[0]
    for _ in range(upd.value_network_update_interval + 1):
        upd.step()
    for t, s in zip(alg.model_old.parameters(), alg.policy.model.parameters()):
        assert torch.equal(t, s)


def test_sac_soft_update_reaches_targets_after_double() -> None:
    alg = _sac().double()
    obs = torch.randn(4, 3, dtype=torch.float64)
    act = torch.rand(4, 2, dtype=torch.float64)
    assert alg.critic1_old(obs, act).dtype == torch.float64
    before = [p.clone() for p in alg.critic1_old.parameters()]
    with torch.no_grad():
        for p in alg.critics[0].parameters():
            p.add_(1.0)
    alg._updaters[0].step()
    moved = list(alg.critic1_old.parameters())
    assert all(not torch.equal(b, m) for b, m in zip(before, moved))


def test_update_trains_after_double() -> None:
    alg = _sac().double()
    buf = episode_buffer(obs_dim=3, act_dim=2, n=20)
    stats = alg.update(buf, 8)
    assert np.isfinite(stats["loss_qvalue"]) and np.isfinite(stats["loss_actor"])


# -- action masks -------------------------------------------------------------------------
class _MaskNet(nn.Module):
    def __init__(self, n: int = 3) -> None:
        super().__init__()
        self.lin = nn.Linear(2, n)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.lin(obs)


def _masked_batch(mask_next: torch.Tensor, act: torch.Tensor) -> Batch:
    n = len(act)
    return Batch(
        {
            "obs": {"obs": torch.randn(n, 2), "mask": torch.ones(n, 3, dtype=torch.bool)},
            "obs_next": {"obs": torch.randn(n, 2), "mask": mask_next},
            "act": act,
            "rew": torch.ones(n),
            "terminated": torch.ones(n, dtype=torch.bool),
        },
        batch_size=[n],
    )


def test_all_illegal_terminal_next_state_gives_finite_targets_and_loss() -> None:
    policy = DQNPolicy(model=_MaskNet(), action_space=gym.spaces.Discrete(3))
    alg = DQN(policy=policy, target_update_freq=5, gamma=0.9)
    batch = _masked_batch(torch.zeros(4, 3, dtype=torch.bool), torch.tensor([0, 1, 2, 0]))
    v = alg.next_value(batch["obs_next"])
    assert torch.isfinite(v).all()
    out = alg(alg.prepare(batch))
    assert torch.isfinite(out["loss_qvalue"])
    torch.testing.assert_close(batch["returns"], torch.ones(4))  # terminated: r only


def test_illegal_stored_action_gives_a_finite_loss() -> None:
    policy = DQNPolicy(model=_MaskNet(), action_space=gym.spaces.Discrete(3))
    alg = DQN(policy=policy)
    batch = _masked_batch(torch.ones(2, 3, dtype=torch.bool), torch.tensor([2, 2]))
    batch["obs"]["mask"][:, 2] = False  # the stored action is illegal now
    out = alg(alg.prepare(batch))
    assert torch.isfinite(out["loss_qvalue"])
    out["loss_qvalue"].backward()
    assert all(torch.isfinite(p.grad).all() for p in policy.model.parameters())


class _MaskedEnv(gym.Env):
    """Five actions; only the ones in ``legal`` (changing each step) may be taken."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict(
            {"obs": gym.spaces.Box(-1, 1, (2,), np.float32), "mask": gym.spaces.MultiBinary(5)}
        )
        self.action_space = gym.spaces.Discrete(5)
        self.t = 0
        self.illegal = 0

    def _obs(self) -> dict[str, np.ndarray]:
        mask = np.zeros(5, dtype=np.int8)
        mask[[self.t % 5, (self.t + 2) % 5]] = 1
        self._mask = mask
        return {"obs": np.zeros(2, np.float32), "mask": mask}

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.illegal += int(self._mask[int(action)] == 0)
        self.t += 1
        return self._obs(), 0.0, False, self.t >= 7, {}


def test_random_warmup_samples_only_legal_actions() -> None:
    envs = [_MaskedEnv() for _ in range(3)]
    venv = DummyVectorEnv([lambda e=e: e for e in envs])
    policy = DQNPolicy(model=_MaskNet(5), action_space=gym.spaces.Discrete(5))
    coll = Collector(policy, venv, VectorReplayBuffer(300, 3))
    coll.reset(seed=0)
    coll.collect(n_step=150, random=True)
    assert sum(e.illegal for e in envs) == 0
    # a greedy policy over masked Q-values also stays legal
    coll.collect(n_step=60)
    assert sum(e.illegal for e in envs) == 0


# -- recurrent state and info reach the models ---------------------------------------------
class _RecurrentActor(nn.Module):
    """A GRU actor with Tianshou's ``forward(obs, state=None, info=None)`` signature."""

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.gru = nn.GRUCell(obs_dim, 16)
        self.head = nn.Linear(16, n_actions)
        self.seen_states: list[bool] = []
        self.seen_info: list[bool] = []

    def forward(
        self, obs: torch.Tensor, state: Any = None, info: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self.seen_states.append(state is not None)
        self.seen_info.append(info is not None)
        obs = torch.as_tensor(obs, dtype=torch.float32)
        h = self.gru(obs, state)
        return self.head(h), h


def test_recurrent_ppo_gets_its_hidden_state_and_info() -> None:
    actor = _RecurrentActor(4, 2)
    policy = ActorPolicy(actor=actor, action_space=gym.spaces.Discrete(2))
    alg = PPO(policy=policy, critic=VCritic(4, (16,)))
    venv = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    coll = Collector(policy, venv, VectorReplayBuffer(200, 2))
    coll.reset(seed=0)
    coll.collect(n_step=40)
    # the first step starts from no state; afterwards the collector feeds it back
    assert actor.seen_states[0] is False and all(actor.seen_states[1:])
    assert all(actor.seen_info)
    out = policy(make_batch({"obs": torch.zeros(2, 4)}, 2), state=torch.zeros(2, 16))
    assert out["state"].shape == (2, 16)
    stats = alg.update(coll.buffer, batch_size=16, repeat=2)
    assert np.isfinite(stats["loss"]) and stats["gradient_steps"] > 0


def test_dqn_passes_state_and_info_to_a_recurrent_q_network() -> None:
    class RecurrentQ(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cell = nn.GRUCell(4, 8)
            self.head = nn.Linear(8, 2)
            self.got: list[Any] = []

        def forward(self, obs: Any, state: Any = None, info: Any = None) -> Any:
            self.got.append(state)
            h = self.cell(torch.as_tensor(obs, dtype=torch.float32), state)
            return self.head(h), h

    model = RecurrentQ()
    policy = DQNPolicy(model=model, action_space=gym.spaces.Discrete(2))
    h0 = torch.ones(3, 8)
    out = policy(make_batch({"obs": torch.zeros(3, 4)}, 3), state=h0)
    assert model.got[-1] is h0 and out["state"].shape == (3, 8)


# -- PPO with a per-dimension distribution ------------------------------------------------
def test_ppo_with_per_dimension_normal_updates() -> None:
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    actor = GaussianActor(3, 2, (8,), state_dependent_std=False)
    policy = ActorPolicy(actor=actor, action_space=box, dist_fn=lambda ls: Normal(*ls))
    alg = PPO(policy=policy, critic=VCritic(3, (8,)))
    buf = episode_buffer(obs_dim=3, act_dim=2, n=24)
    stats = alg.update(buf, batch_size=8, repeat=2)
    assert np.isfinite(stats["loss"])
    # one ratio per action dimension, as Tianshou: logp_old is [B, 2]
    batch = alg.preprocess(buf[buf.sample_indices(0)], buf, buf.sample_indices(0))
    assert batch["logp_old"].shape == (len(buf), 2)


# -- map_action keeps the Box dtype ----------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_map_action_returns_the_box_dtype(dtype: type) -> None:
    box = gym.spaces.Box(-2.0, 2.0, (1,), dtype)
    policy = SACPolicy(actor=GaussianActor(3, 1, (8,)), action_space=box)
    assert policy.map_action(np.array([[0.5]], dtype=np.float64)).dtype == dtype
    assert policy.map_action(torch.tensor([[0.5]])).dtype == dtype
    assert policy.map_action_inverse(np.array([[1.0]], dtype=np.float64)).dtype == dtype


# -- the loss math is written once: forward and update agree ----------------------------------
def test_forward_and_update_compute_the_same_terms() -> None:
    buf = episode_buffer(obs_dim=3, act_dim=2, n=20)
    a, b = _sac(), _sac()
    b.load_state_dict(a.state_dict())
    idx = buf.sample_indices(0)[:8]
    torch.manual_seed(3)
    fwd = a(a.preprocess(buf[idx], buf, idx))
    torch.manual_seed(3)
    upd = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 8, 1)
    assert upd["loss_qvalue"] == pytest.approx(fwd["loss_qvalue"].item(), rel=1e-6)
