"""TD3+BC: the BC-regularized actor loss, observation normalization inside the policy,
TorchRL layout, the Tianshou oracle, the preset and convergence from gathered data."""

from __future__ import annotations

import copy
import io
import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.imitation.td3_bc import TD3BC, TD3BCPolicy, dataset_obs_rms
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import DeterministicActor, QCritic
from tdrl.utils.normalize import TIANSHOU_EPS, RunningNorm

SPACE = gym.spaces.Box(-2.0, 2.0, (2,))


def _buffer() -> VectorReplayBuffer:
    """Random transitions with observations far from zero mean / unit variance."""
    rng = np.random.default_rng(0)
    buf = VectorReplayBuffer(60, 3)
    for _ in range(15):
        buf.add(
            Batch(
                obs=(rng.normal(size=(3, 3)) * [5.0, 0.5, 2.0] + [3.0, -1.0, 0.0]).astype(
                    np.float32
                ),
                act=rng.uniform(-1.0, 1.0, size=(3, 2)).astype(np.float32),
                rew=rng.normal(size=3).astype(np.float32),
                terminated=rng.random(3) < 0.15,
                truncated=rng.random(3) < 0.1,
                obs_next=(rng.normal(size=(3, 3)) * [5.0, 0.5, 2.0] + [3.0, -1.0, 0.0]).astype(
                    np.float32
                ),
            )
        )
    return buf


def _td3bc(buf: VectorReplayBuffer | None = None, **kw: Any) -> TD3BC:
    torch.manual_seed(0)
    rms = dataset_obs_rms(buf) if buf is not None else None
    policy = TD3BCPolicy(actor=DeterministicActor(3, 2, (16,)), action_space=SPACE, obs_rms=rms)
    return TD3BC(policy=policy, critic=QCritic(3, 2, (16,)), **kw)


# ------------------------------------------------------------------------------ semantics
def test_dataset_statistics_and_normalization() -> None:
    buf = _buffer()
    rms = dataset_obs_rms(buf)
    obs = np.asarray(buf[buf.sample_indices(0)].obs, dtype=np.float64)
    np.testing.assert_allclose(rms.mean.numpy(), obs.mean(0))
    np.testing.assert_allclose(rms.var.numpy(), obs.var(0))
    assert rms.eps == TIANSHOU_EPS and math.isinf(rms.clip)
    alg = _td3bc(buf)
    x = torch.as_tensor(obs[:5], dtype=torch.float32)
    expected = (obs[:5] - obs.mean(0)) / np.sqrt(obs.var(0) + TIANSHOU_EPS)
    np.testing.assert_allclose(alg.policy.normalize(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    # the policy acts on raw observations: it normalizes them itself
    raw = alg.policy(make_batch({"obs": x}, 5))["act"]
    torch.testing.assert_close(raw, alg.policy.actor(torch.as_tensor(expected).float()))


def test_actor_loss_is_scaled_q_plus_behaviour_cloning() -> None:
    buf = _buffer()
    alg = _td3bc(buf, alpha=1.5)
    b = buf[np.arange(16)]
    out = alg.actor_losses(b)
    obs = alg.policy.normalize(b["obs"])
    act = alg.policy.actor(obs)
    q = alg.critics[0](obs, act).reshape(-1)
    lmbda = 1.5 / q.abs().mean()
    expected = -lmbda * q.mean() + F.mse_loss(act, b["act"])
    torch.testing.assert_close(out["loss_actor"], expected)
    torch.testing.assert_close(out["lmbda"], lmbda.detach())
    torch.testing.assert_close(out["bc_mse"], F.mse_loss(act, b["act"]).detach())


def test_critics_and_targets_see_normalized_observations() -> None:
    buf = _buffer()
    alg = _td3bc(buf, policy_noise=0.0)
    obs_next = torch.as_tensor(np.asarray(buf[np.arange(8)].obs_next))
    n = alg.policy.normalize(obs_next)
    a = alg.actor_old(n)
    expected = torch.min(alg.critic1_old(n, a), alg.critic2_old(n, a)).reshape(-1)
    torch.testing.assert_close(alg.next_value(obs_next), expected)


def test_normalizer_is_saved_and_restored_with_the_policy() -> None:
    buf = _buffer()
    trained = _td3bc(buf)
    fresh = _td3bc()  # no dataset: identity statistics until loaded
    fresh.policy.obs_rms = RunningNorm(3, clip=math.inf, eps=TIANSHOU_EPS)
    fresh = TD3BC(policy=fresh.policy, critic=QCritic(3, 2, (16,)))
    data = io.BytesIO()
    torch.save(trained.policy.state_dict(), data)
    data.seek(0)
    fresh.policy.load_state_dict(torch.load(data))
    x = torch.randn(4, 3) * 4
    torch.testing.assert_close(fresh.policy.normalize(x), trained.policy.normalize(x))
    torch.testing.assert_close(
        fresh.policy(make_batch({"obs": x}, 4))["act"],
        trained.policy(make_batch({"obs": x}, 4))["act"],
    )


def test_torchrl_layout_terms_reach_their_own_parameters() -> None:
    buf = _buffer()
    alg = _td3bc(buf)
    alg.set_keys(observation="observation", action="action")
    n = 16
    td = TensorDict(
        {
            "observation": torch.randn(n, 3) * 4,
            "action": torch.rand(n, 2) * 4 - 2,
            "next": {
                "observation": torch.randn(n, 3) * 4,
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.rand(n, 1) < 0.3,
            },
        },
        [n],
    )
    out = alg(td)
    params = dict(alg.named_parameters())

    def reached(term: torch.Tensor) -> set[str]:
        grads = torch.autograd.grad(
            term, list(params.values()), allow_unused=True, retain_graph=True
        )
        return {k for (k, _), g in zip(params.items(), grads, strict=True) if g is not None}

    assert reached(out["loss_actor"]) and all(
        k.startswith("policy.actor") for k in reached(out["loss_actor"])
    )
    assert all(k.startswith("critic") for k in reached(out["loss_qvalue"]))
    # the BC term compares with the raw action (env action mapped back)
    obs = alg.policy.normalize(td["observation"])
    bc = F.mse_loss(alg.policy.actor(obs), td["action"] / 2.0)
    torch.testing.assert_close(out["bc_mse"], bc.detach())
    with torch.no_grad():
        acted = alg.policy(TensorDict({"observation": torch.randn(3, 3)}, [3]))
    assert acted["action"].shape == (3, 2)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="alpha: expected a value > 0, got 0"):
        _td3bc(alpha=0)
    with pytest.raises(ValueError, match="policy: expected a ContinuousDeterministicPolicy"):
        TD3BC(policy=torch.nn.Linear(2, 2), critic=QCritic(3, 2, (4,)))  # type: ignore[arg-type]


def test_offline_update_runs_and_delays_the_actor() -> None:
    buf = _buffer()
    alg = _td3bc(buf, update_actor_freq=2)
    before = [p.clone() for p in alg.policy.actor.parameters()]
    alg.update(buf, 16)  # step 0: critic and actor
    moved = [p.clone() for p in alg.policy.actor.parameters()]
    assert any(not torch.equal(a, b) for a, b in zip(before, moved, strict=True))
    alg.update(buf, 16)  # step 1: critic only
    assert all(torch.equal(a, b) for a, b in zip(moved, alg.policy.actor.parameters(), strict=True))


# ------------------------------------------------------------------------------ the oracle
class _SharedActor(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = DeterministicActor(3, 2, (16,))
        self.max_action = 1.0

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), state


class _SharedCritic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = QCritic(3, 2, (16,))

    def forward(self, obs, act):  # type: ignore[no-untyped-def]
        return self.net(
            torch.as_tensor(obs, dtype=torch.float32), torch.as_tensor(act, dtype=torch.float32)
        )


def test_update_matches_tianshou_exactly() -> None:
    """Same weights, batches and torch seeds: tdrl's TD3BC on the raw buffer with its
    in-policy normalizer, Tianshou 2.0.1's TD3BC on the buffer normalized beforehand with
    the same statistics (its example's way). Over 5 updates (actor every 2nd) the n-step
    targets, critic losses (Tianshou's two summed), actor losses and every network and
    target network agree."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm.imitation.td3_bc import TD3BC as TTD3BC
    from tianshou.algorithm.modelfree.ddpg import (
        ContinuousDeterministicPolicy as TPolicy,
    )
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    b_ours = _buffer()
    rms = dataset_obs_rms(b_ours)
    mean, std = rms.mean.numpy(), np.sqrt(rms.var.numpy() + TIANSHOU_EPS)
    b_peer = TVRB(60, 3)
    for i in range(15):
        idx = np.array([i, 20 + i, 40 + i])
        b = b_ours[idx]
        b_peer.add(
            TBatch(
                obs=((np.asarray(b.obs) - mean) / std).astype(np.float32),
                act=np.asarray(b.act),
                rew=np.asarray(b.rew),
                terminated=np.asarray(b.terminated),
                truncated=np.asarray(b.truncated),
                obs_next=((np.asarray(b.obs_next) - mean) / std).astype(np.float32),
                info={},
            )
        )
    torch.manual_seed(0)
    actor, c1, c2 = _SharedActor(), _SharedCritic(), _SharedCritic()
    kw = dict(tau=0.1, gamma=0.9, policy_noise=0.3, noise_clip=0.4, update_actor_freq=2)
    ours = TD3BC(
        policy=TD3BCPolicy(actor=copy.deepcopy(actor), action_space=SPACE, obs_rms=rms),
        policy_optim=1e-3,
        critic=copy.deepcopy(c1),
        critic_optim=1e-3,
        critic2=copy.deepcopy(c2),
        alpha=2.0,
        n_step=3,
        **kw,  # type: ignore[arg-type]
    )
    adam = AdamOptimizerFactory(lr=1e-3)
    peer = TTD3BC(
        policy=TPolicy(actor=copy.deepcopy(actor), action_space=SPACE),  # type: ignore[arg-type]
        policy_optim=adam,
        critic=copy.deepcopy(c1),
        critic_optim=adam,
        critic2=copy.deepcopy(c2),
        critic2_optim=adam,
        alpha=2.0,
        n_step_return_horizon=3,
        **kw,  # type: ignore[arg-type]
    )
    rng = np.random.default_rng(1)
    for step in range(5):
        idx = rng.choice(b_ours.sample_indices(0), 16)
        with within_training_step(ours.policy):
            torch.manual_seed(100 + step)
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            got = ours._update_with_batch(batch, 16, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            torch.manual_seed(100 + step)
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            expected = peer._update_with_batch(tb)
        torch.testing.assert_close(
            batch["returns"].reshape(-1), tb.returns.flatten(), atol=1e-5, rtol=1e-5
        )
        exp_q = expected.critic1_loss + expected.critic2_loss
        assert got["loss_qvalue"] == pytest.approx(exp_q, rel=1e-5), step
        assert got["loss_actor"] == pytest.approx(expected.actor_loss, rel=1e-5, abs=1e-6), step
    pairs = [
        (ours.policy.actor, peer.policy.actor),
        (ours.critics[0], peer.critic),
        (ours.critics[1], peer.critic2),
        (ours.actor_old, peer.actor_old),
        (ours.critic1_old, peer.critic_old),
        (ours.critic2_old, peer.critic2_old),
    ]
    for a, b in pairs:
        for p_ours, p_peer in zip(a.parameters(), b.parameters(), strict=True):
            torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------ preset
def test_preset_normalizes_with_the_dataset() -> None:
    from tdrl import registry
    from tdrl.presets.td3_bc import build

    p: Any = registry.preset("td3_bc", "Pendulum-v1")
    assert registry.entry("td3_bc", "Pendulum-v1").trainer == "offline"
    buf = _buffer()
    alg = build(p, gym.spaces.Box(-10, 10, (3,)), SPACE, dataset=buf)
    torch.testing.assert_close(alg.policy.obs_rms.mean, dataset_obs_rms(buf).mean)
    assert (
        build(p.replace(norm_obs=False), gym.spaces.Box(-10, 10, (3,)), SPACE).policy.obs_rms
        is None
    )


@pytest.mark.slow
def test_preset_reaches_pendulum_threshold(pendulum_dataset: str, tmp_path: Path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="td3_bc",
        task="Pendulum-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        dataset=pendulum_dataset,
        stop_reward=-300.0,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= -300.0
