"""Discrete CQL: the CQL(H) term on QR-DQN's quantile loss, one optimizer, TorchRL layout,
argument checks, the Tianshou 2.0.1 oracle and the CartPole preset."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import OptimizerFactory, within_training_step
from tdrl.algorithm.distributional import quantile_huber_loss, quantile_midpoints
from tdrl.algorithm.imitation.discrete_cql import DiscreteCQL, DiscreteCQLPolicy
from tdrl.algorithm.modelfree.qrdqn import QRDQNPolicy
from tdrl.data.batch import Batch
from tdrl.utils.net_distributional import DistributionalQNet


def _alg(n: int = 8, actions: int = 3, **kw: Any) -> DiscreteCQL:
    torch.manual_seed(0)
    policy = QRDQNPolicy(
        model=DistributionalQNet(4, actions, n, (16,)), action_space=gym.spaces.Discrete(actions)
    )
    return DiscreteCQL(policy=policy, num_quantiles=n, **kw)


def _batch(n: int = 6, quantiles: int = 8, seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    return Batch(
        obs=torch.randn(n, 4, generator=g),
        act=torch.randint(3, (n,), generator=g),
        returns=torch.randn(n, quantiles, generator=g),
    )


def test_cql_term_is_logsumexp_minus_data_q() -> None:
    alg = _alg(min_q_weight=2.5)
    batch = _batch()
    out = alg(batch)
    z = alg.policy.model(batch["obs"])
    q = z.mean(-1)
    q_a = q[torch.arange(6), batch["act"]]
    torch.testing.assert_close(out["loss_cql"], 2.5 * (torch.logsumexp(q, 1) - q_a).mean())
    pred = z[torch.arange(6), batch["act"]]
    per = quantile_huber_loss(pred, batch["returns"], quantile_midpoints(8))
    torch.testing.assert_close(out["loss_qvalue"], per.mean())
    assert out["loss_cql"].item() >= 0  # logsumexp >= max >= Q(s, a)
    zero = _alg(min_q_weight=0.0)(batch)
    assert zero["loss_cql"].item() == 0.0


def test_cql_gradient_lowers_unseen_actions() -> None:
    alg = _alg(min_q_weight=1.0, optim=OptimizerFactory(torch.optim.SGD, lr=0.5))
    batch = _batch(n=32)
    batch["act"] = torch.zeros(32, dtype=torch.long)  # the data always took action 0
    with torch.no_grad():
        batch["returns"] = alg.policy.model(batch["obs"])[:, 0]  # no TD error at first

    @torch.no_grad()
    def gap() -> float:
        q = alg.policy.q_values(batch["obs"])
        return float((q[:, 1:].mean(1) - q[:, 0]).mean())

    before = gap()
    for _ in range(5):
        alg._update_with_batch(batch.clone(), 32, 1)
    assert gap() < before - 0.1


def test_prioritized_weights_apply_to_the_quantile_loss_only() -> None:
    alg = _alg(min_q_weight=1.0)
    batch = _batch()
    plain = alg(batch.clone())
    batch["weight"] = torch.full((6,), 0.5)
    weighted = alg(batch)
    torch.testing.assert_close(weighted["loss_qvalue"], 0.5 * plain["loss_qvalue"])
    torch.testing.assert_close(weighted["loss_cql"], plain["loss_cql"])
    assert batch["td_error"].shape == (6,)


def test_torchrl_layout_one_step_target_and_gradients() -> None:
    alg = _alg(gamma=0.9, target_update_freq=10, min_q_weight=3.0)
    alg.set_keys(observation="observation", action="action")
    n = 6
    td = TensorDict(
        {
            "observation": torch.randn(n, 4),
            "action": torch.randint(3, (n,)),
            "next": {
                "observation": torch.randn(n, 4),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.tensor([[True], [False]] * 3),
            },
        },
        [n],
    )
    out = alg(td)
    assert set(out.keys()) == {"loss_qvalue", "loss_cql"}
    z = alg.next_quantiles(td["next", "observation"])
    keep = 1.0 - td["next", "terminated"].float()
    torch.testing.assert_close(td["returns"], td["next", "reward"] + 0.9 * keep * z)
    params = dict(alg.named_parameters())
    for term in ("loss_qvalue", "loss_cql"):
        grads = torch.autograd.grad(
            out[term], list(params.values()), allow_unused=True, retain_graph=True
        )
        reached = {k for k, g in zip(params, grads) if g is not None and g.abs().sum() > 0}
        assert reached and all(k.startswith(("policy.model.", "model_params.")) for k in reached)
    assert DiscreteCQLPolicy is QRDQNPolicy


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match=r"min_q_weight: expected a value >= 0, got -1\.0"):
        _alg(min_q_weight=-1.0)
    with pytest.raises(ValueError, match="num_quantiles: expected an int >= 2, got 1"):
        _alg(n=1)
    alg = _alg()
    with pytest.raises(ValueError, match=r"returns: expected the target quantiles \[B, 8\]"):
        alg(
            Batch(
                obs=torch.zeros(2, 4),
                act=torch.zeros(2, dtype=torch.long),
                returns=torch.zeros(2, 1),
            )
        )
    with pytest.raises(ValueError, match=r"num_quantiles=16\], got shape \(2, 3, 8\)"):
        DiscreteCQL(policy=alg.policy, num_quantiles=16)(_batch(2, 16))


# ------------------------------------------------------------------ Tianshou 2.0.1 oracle
def _pair(sgd: bool, freq: int = 2) -> tuple[DiscreteCQL, Any]:
    from tianshou.algorithm import DiscreteCQL as TCQL
    from tianshou.algorithm.modelfree.qrdqn import QRDQNPolicy as TQRDQNPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory

    from tests.algorithm.test_c51 import SharedNet

    torch.manual_seed(0)
    model = SharedNet(3, 8, softmax=False)
    space = gym.spaces.Discrete(3)
    ours = DiscreteCQL(
        policy=QRDQNPolicy(model=copy.deepcopy(model), action_space=space),
        optim=OptimizerFactory(torch.optim.SGD, lr=0.1) if sgd else 1e-3,
        min_q_weight=3.0,
        gamma=0.9,
        num_quantiles=8,
        n_step=3,
        target_update_freq=freq,
    )
    peer = TCQL(
        policy=TQRDQNPolicy(model=copy.deepcopy(model), action_space=space),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1) if sgd else AdamOptimizerFactory(),
        min_q_weight=3.0,
        gamma=0.9,
        num_quantiles=8,
        n_step_return_horizon=3,
        target_update_freq=freq,
    )
    return ours, peer


def _peer_step(peer: Any, buf: Any, idx: np.ndarray, weight: Any = None) -> tuple[Any, Any]:
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    with policy_within_training_step(peer.policy), torch_train_mode(peer):
        tb = peer._preprocess_batch(buf[idx], buf, idx)
        if weight is not None:
            tb.weight = torch.from_numpy(weight)
        returns = tb.returns.clone()
        stats = peer._update_with_batch(tb)
    return stats, (returns, tb)


@pytest.mark.parametrize("freq", [2, 0])
def test_update_matches_tianshou_exactly(freq: int) -> None:
    """n-step (3) target quantiles, the quantile and CQL losses over 6 updates (target syncs
    every 2, or no target network), the priorities and every parameter after them, against
    Tianshou 2.0.1's DiscreteCQL (SGD keeps a multi-step comparison exact). No deliberate
    difference (without action masks)."""
    pytest.importorskip("tianshou")
    from tests.algorithm.test_c51 import paired_buffers, sample_indices

    ours, peer = _pair(sgd=True, freq=freq)
    b_ours, b_peer = paired_buffers(3)
    rng = np.random.default_rng(0)
    for step in range(6):
        idx = sample_indices(b_ours, rng)
        batch = ours.preprocess(b_ours[idx], b_ours, idx)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(batch, 16, 1)
        stats, (returns, tb) = _peer_step(peer, b_peer, idx)
        torch.testing.assert_close(batch["returns"], returns)
        assert got["loss_qvalue"] == pytest.approx(stats.qr_loss, rel=1e-5), step
        assert got["loss_cql"] == pytest.approx(3.0 * stats.cql_loss, rel=1e-5), step
        assert got["loss"] == pytest.approx(stats.loss, rel=1e-5), step
        torch.testing.assert_close(batch["td_error"], tb.weight)
    for p_ours, p_peer in zip(ours.policy.model.parameters(), peer.policy.model.parameters()):
        torch.testing.assert_close(p_ours, p_peer)


def test_adam_and_prioritized_update_match_tianshou() -> None:
    """One Adam update (the preset's optimizer) with importance weights: the losses and
    every parameter after it."""
    pytest.importorskip("tianshou")
    from tests.algorithm.test_c51 import paired_buffers, sample_indices

    ours, peer = _pair(sgd=False)
    b_ours, b_peer = paired_buffers(3)
    rng = np.random.default_rng(1)
    idx = sample_indices(b_ours, rng)
    weight = rng.uniform(0.2, 1.0, len(idx)).astype(np.float32)
    batch = ours.preprocess(b_ours[idx], b_ours, idx)
    batch["weight"] = torch.from_numpy(weight)
    with within_training_step(ours.policy):
        got = ours._update_with_batch(batch, 16, 1)
    stats, _ = _peer_step(peer, b_peer, idx, weight)
    assert got["loss"] == pytest.approx(stats.loss, rel=1e-5)
    for p_ours, p_peer in zip(ours.policy.model.parameters(), peer.policy.model.parameters()):
        torch.testing.assert_close(p_ours, p_peer)


# ---------------------------------------------------------------------------- the preset
def test_preset_builds_and_checks_the_dataset() -> None:
    import tdrl
    from tdrl import registry
    from tdrl.data.buffer import ReplayBuffer
    from tdrl.data.datasets import DatasetError

    p: Any = registry.entry("discrete_cql", "CartPole-v1").preset
    assert (
        p.threshold == 170.0 and registry.entry("discrete_cql", "CartPole-v1").trainer == "offline"
    )
    with pytest.raises(registry.PresetError, match="discrete_cql learns from a dataset"):
        tdrl.make_algorithm("discrete_cql", "CartPole-v1")
    z = np.zeros(3, dtype=bool)
    good = ReplayBuffer.from_data(
        np.zeros((3, 4), np.float32), np.zeros(3, np.int64), np.ones(3, np.float32), z, z, z,
        np.zeros((3, 4), np.float32),
    )  # fmt: skip
    alg = tdrl.make_algorithm("discrete_cql", "CartPole-v1", dataset=good)
    assert type(alg).__name__ == "DiscreteCQL"
    bad = ReplayBuffer.from_data(
        np.zeros((3, 3), np.float32), np.zeros(3, np.int64), np.ones(3, np.float32), z, z, z,
        np.zeros((3, 3), np.float32),
    )  # fmt: skip
    with pytest.raises(DatasetError, match="observations of shape"):
        tdrl.make_algorithm("discrete_cql", "CartPole-v1", dataset=bad)


@pytest.mark.slow
def test_cartpole_preset_reaches_threshold(tmp_path: Any, cartpole_dataset: str) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="discrete_cql",
        task="CartPole-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        dataset=cartpole_dataset,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= 170.0
