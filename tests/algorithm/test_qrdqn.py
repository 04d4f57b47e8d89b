"""QR-DQN: n-step target quantiles over episode boundaries, the quantile Huber loss, PER,
TorchRL layout, argument checks, the Tianshou oracle and the CartPole preset."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import OptimizerFactory, make_batch, within_training_step
from tdrl.algorithm.distributional import quantile_huber_loss, quantile_midpoints
from tdrl.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
from tdrl.utils.net_distributional import DistributionalQNet
from tests.algorithm.fakebuf import FakePrioBuffer, FakeVectorBuffer
from tests.algorithm.test_c51 import SharedNet, paired_buffers, sample_indices


class Affine(torch.nn.Module):
    """Quantiles ``theta_i(s, a) = obs[0] * scale[a] + offset[a] + spread[i]``."""

    spread: torch.Tensor

    def __init__(self, scale: list[float], offset: list[float], n: int = 4) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(scale))
        self.offset = torch.nn.Parameter(torch.tensor(offset))
        self.register_buffer("spread", torch.linspace(-1.0, 1.0, n))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        q = obs[:, :1] * self.scale + self.offset  # [B, A]
        return q.unsqueeze(-1) + self.spread


def _alg(model: torch.nn.Module, n: int = 4, actions: int = 2, **kw: Any) -> QRDQN:
    policy = QRDQNPolicy(model=model, action_space=gym.spaces.Discrete(actions))
    return QRDQN(policy=policy, num_quantiles=n, **kw)


def _add(buf: Any, obs, act, rew, term, trunc, obs_next) -> None:  # type: ignore[no-untyped-def]
    buf.add(
        {
            "obs": np.asarray(obs, np.float32),
            "act": np.asarray(act),
            "rew": np.asarray(rew, np.float32),
            "terminated": np.asarray(term),
            "truncated": np.asarray(trunc),
            "obs_next": np.asarray(obs_next, np.float32),
        }
    )


def _episode_buffer() -> Any:
    """Steps 0-2 terminate at 2, 3-4 are truncated at 4, 5-6 are unfinished; obs_next = 10(t+1)."""
    buf = FakeVectorBuffer(10, 1)
    term = [0, 0, 1, 0, 0, 0, 0]
    trunc = [0, 0, 0, 0, 1, 0, 0]
    for t in range(7):
        _add(buf, [[t]], [0], [t + 1.0], [bool(term[t])], [bool(trunc[t])], [[10.0 * (t + 1)]])
    return buf


def test_expected_q_is_the_quantile_mean() -> None:
    policy = QRDQNPolicy(model=Affine([1.0, 0.0], [0.0, 2.5]), action_space=gym.spaces.Discrete(2))
    out = policy(make_batch({"obs": torch.tensor([[1.0], [3.0]])}, 2))
    torch.testing.assert_close(out["logits"], torch.tensor([[1.0, 2.5], [3.0, 2.5]]))
    assert out["act"].tolist() == [1, 0]


def test_nstep_target_quantiles_follow_episode_rules() -> None:
    # theta'(s') = obs_next + spread for action 0 (action 1 is worse): the target quantiles
    # are the n-step return of each quantile, bootstrapped at the chain's last obs_next
    alg = _alg(Affine([1.0, 1.0], [0.0, -100.0]), gamma=0.5, n_step=3)
    buf = _episode_buffer()
    idx = np.arange(7)
    batch = alg.preprocess(buf[idx], buf, idx)
    g, spread = 0.5, torch.linspace(-1.0, 1.0, 4)
    expected = [
        (1 + g * 2 + g**2 * 3, 0.0, 0.0),  # terminated at 2: no bootstrap
        (2 + g * 3, 0.0, 0.0),
        (3.0, 0.0, 0.0),
        (4 + g * 5, g**2, 50.0),  # truncated at 4: bootstrap from obs_next[4]
        (5.0, g, 50.0),
        (6 + g * 7, g**2, 70.0),  # unfinished at 6: bootstrap from obs_next[6]
        (7.0, g, 70.0),
    ]
    want = torch.stack([r + d * (v + spread) for r, d, v in expected])
    torch.testing.assert_close(batch["returns"], want)


def test_double_and_nature_bootstrap_action() -> None:
    obs = torch.zeros(1, 1)
    for is_double, mean in ((True, 2.0), (False, 3.0)):
        # the online net prefers action 1 (1 > -1), the target net action 0 (3 > 2)
        alg = _alg(Affine([0.0, 0.0], [-1.0, 1.0]), target_update_freq=5, is_double=is_double)
        with torch.no_grad():
            alg.target_model_params["offset"].copy_(torch.tensor([3.0, 2.0]))
        assert alg.next_quantiles(obs).mean().item() == pytest.approx(mean)
    alg = _alg(Affine([0.0, 0.0], [-1.0, 1.0]))
    assert alg.model_old is None and alg.next_quantiles(obs).mean().item() == pytest.approx(1.0)
    # masks: an illegal action is never the bootstrap action
    mask = torch.tensor([[True, False]])
    z = alg.next_quantiles(TensorDict({"obs": obs, "mask": mask}, [1]))
    assert z.mean().item() == pytest.approx(-1.0)


def test_quantile_huber_loss_priorities_and_weights() -> None:
    torch.manual_seed(0)
    buf = FakePrioBuffer(10, 1)
    for t in range(7):
        _add(buf, [[float(t)]], [t % 2], [1.0], [t == 6], [False], [[float(t + 1)]])
    net = DistributionalQNet(1, 2, 8, (8,))
    alg = _alg(net, n=8, gamma=0.9)
    idx = np.arange(7)
    batch = alg.preprocess(buf[idx], buf, idx)
    assert batch["returns"].shape == (7, 8) and batch["returns"].dtype == torch.float32
    loss = alg(batch)["loss_qvalue"]
    pred = net(batch["obs"])[torch.arange(7), batch["act"].long()]
    target = batch["returns"]
    # written out as in the paper: |tau_i - 1{u_ij < 0}| * huber(u_ij), mean_i sum_j
    u = target[:, None, :] - pred[:, :, None]
    huber = torch.where(u.abs() <= 1, 0.5 * u**2, u.abs() - 0.5)
    tau = quantile_midpoints(8)[None, :, None]
    per = ((tau - (u < 0).float()).abs() * huber).sum(-1).mean(-1)
    torch.testing.assert_close(loss, (batch["weight"].float() * per).mean())
    torch.testing.assert_close(batch["td_error"], huber.sum(-1).mean(-1).detach())
    alg.update(buf, 5)
    ((written_idx, written),) = buf.updates
    assert written_idx.shape == (5,) and written.shape == (5,) and bool((written > 0).all())


def test_torchrl_layout_one_step_target_and_gradients() -> None:
    torch.manual_seed(0)
    net = DistributionalQNet(3, 2, 8, (8,))
    alg = _alg(net, n=8, gamma=0.9, n_step=3, target_update_freq=10)
    alg.set_keys(observation="observation", action="action")
    n = 6
    td = TensorDict(
        {
            "observation": torch.randn(n, 3),
            "action": torch.randint(2, (n,)),
            "next": {
                "observation": torch.randn(n, 3),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.tensor([[True], [False]] * 3),
            },
        },
        [n],
    )
    out = alg(td)
    assert set(out.keys()) == {"loss_qvalue"}
    z = alg.next_quantiles(td["next", "observation"])
    keep = 1.0 - td["next", "terminated"].float()
    torch.testing.assert_close(td["returns"], td["next", "reward"] + 0.9 * keep * z)
    params = dict(alg.named_parameters())
    grads = torch.autograd.grad(out["loss_qvalue"], list(params.values()), allow_unused=True)
    reached = {k for k, g in zip(params, grads) if g is not None and g.abs().sum() > 0}
    assert reached and all(k.startswith("policy.model.") for k in reached)
    # the loss equals the shared helper's
    pred = net(td["observation"])[torch.arange(n), td["action"]]
    per = quantile_huber_loss(pred, td["returns"], quantile_midpoints(8))
    torch.testing.assert_close(out["loss_qvalue"], per.mean())


def test_value_estimator_td0_only() -> None:
    from torchrl.objectives import ValueEstimators

    alg = _alg(Affine([1.0, 1.0], [0.0, -1.0]), gamma=0.9)
    alg.set_keys(observation="observation", action="action")
    alg.make_value_estimator(ValueEstimators.TD0, gamma=0.0)
    td = TensorDict(
        {
            "observation": torch.zeros(2, 1),
            "action": torch.tensor([0, 1]),
            "next": {
                "observation": torch.ones(2, 1),
                "reward": torch.tensor([[1.0], [-2.0]]),
                "done": torch.zeros(2, 1, dtype=torch.bool),
                "terminated": torch.zeros(2, 1, dtype=torch.bool),
            },
        },
        [2],
    )
    alg(td)  # gamma 0: every target quantile is the reward
    torch.testing.assert_close(td["returns"], torch.tensor([[1.0] * 4, [-2.0] * 4]))
    with pytest.raises(NotImplementedError, match=r"value_type: QRDQN supports \['TD0'\]"):
        alg.make_value_estimator(ValueEstimators.TD1)


def test_argument_errors() -> None:
    net = DistributionalQNet(1, 2, 8, (4,))
    with pytest.raises(ValueError, match="num_quantiles: expected an int >= 2, got 1"):
        _alg(net, n=1)
    with pytest.raises(TypeError, match="policy: expected a QRDQNPolicy, got DQNPolicy"):
        from tdrl.algorithm.modelfree.dqn import DQNPolicy

        QRDQN(policy=DQNPolicy(model=net, action_space=gym.spaces.Discrete(2)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"gamma: expected a value in \[0, 1\], got -0.1"):
        _alg(net, n=8, gamma=-0.1)
    with pytest.raises(ValueError, match="action_space: QRDQNPolicy needs a Discrete"):
        QRDQNPolicy(model=net, action_space=gym.spaces.Box(-1, 1, (1,)))
    flat = QRDQNPolicy(model=torch.nn.Linear(1, 2), action_space=gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match=r"expected \[B, n_actions, num_quantiles\], got shape"):
        flat(make_batch({"obs": torch.zeros(3, 1)}, 3))
    alg = _alg(net, n=16)  # the model has 8 quantiles
    batch = make_batch({"obs": torch.zeros(3, 1), "act": torch.zeros(3, dtype=torch.long)}, 3)
    batch["returns"] = torch.zeros(3, 16)
    with pytest.raises(ValueError, match=r"num_quantiles=16\], got shape \(3, 2, 8\)"):
        alg(batch)
    batch["returns"] = torch.zeros(3, 1)
    with pytest.raises(ValueError, match=r"returns: expected the target quantiles \[B, 8\]"):
        _alg(net, n=8)(batch)


# ------------------------------------------------------------------ Tianshou 2.0.1 oracle
def _pair(sgd: bool, n_step: int = 3) -> tuple[QRDQN, Any]:
    from tianshou.algorithm import QRDQN as TQRDQN
    from tianshou.algorithm.modelfree.qrdqn import QRDQNPolicy as TQRDQNPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory

    torch.manual_seed(0)
    model = SharedNet(3, 8, softmax=False)
    space = gym.spaces.Discrete(3)
    ours = QRDQN(
        policy=QRDQNPolicy(model=copy.deepcopy(model), action_space=space),
        optim=OptimizerFactory(torch.optim.SGD, lr=0.1) if sgd else 1e-3,
        gamma=0.9,
        num_quantiles=8,
        n_step=n_step,
        target_update_freq=2,
    )
    peer = TQRDQN(
        policy=TQRDQNPolicy(model=copy.deepcopy(model), action_space=space),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1) if sgd else AdamOptimizerFactory(),
        gamma=0.9,
        num_quantiles=8,
        n_step_return_horizon=n_step,
        target_update_freq=2,
    )
    return ours, peer


def _peer_step(peer: Any, buf: Any, idx: np.ndarray, weight: np.ndarray | None = None) -> Any:
    """Tianshou's preprocess and update; returns ``(loss, batch)`` (priorities in ``weight``)."""
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    with policy_within_training_step(peer.policy), torch_train_mode(peer):
        tb = peer._preprocess_batch(buf[idx], buf, idx)
        if weight is not None:
            tb.weight = torch.from_numpy(weight)
        returns = tb.returns.clone()
        loss = float(peer._update_with_batch(tb).loss)
    return loss, tb, returns


def test_update_matches_tianshou_exactly() -> None:
    """n-step (3) target quantiles, losses and priorities over 6 updates (hard target syncs
    every 2) and the parameters after them, against Tianshou 2.0.1's QRDQN. SGD keeps the
    comparison exact over several steps (Adam turns rounding-level gradients into
    full-size steps); Adam is compared over one update below. No deliberate difference."""
    pytest.importorskip("tianshou")
    ours, peer = _pair(sgd=True)
    b_ours, b_peer = paired_buffers(3)
    rng = np.random.default_rng(0)
    for step in range(6):
        idx = sample_indices(b_ours, rng)
        batch = ours.preprocess(b_ours[idx], b_ours, idx)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(batch, 16, 1)
        loss, tb, returns = _peer_step(peer, b_peer, idx)
        torch.testing.assert_close(batch["returns"], returns)
        assert got["loss"] == pytest.approx(loss, rel=1e-5), step
        torch.testing.assert_close(batch["td_error"], tb.weight)
    for p_ours, p_peer in zip(ours.policy.model.parameters(), peer.policy.model.parameters()):
        torch.testing.assert_close(p_ours, p_peer)


def test_adam_update_matches_tianshou() -> None:
    """One update with Adam (the presets' optimizer): the loss and every parameter after it."""
    pytest.importorskip("tianshou")
    ours, peer = _pair(sgd=False)
    b_ours, b_peer = paired_buffers(3)
    idx = sample_indices(b_ours, np.random.default_rng(1))
    with within_training_step(ours.policy):
        got = ours._update_with_batch(ours.preprocess(b_ours[idx], b_ours, idx), 16, 1)
    assert got["loss"] == pytest.approx(_peer_step(peer, b_peer, idx)[0], rel=1e-5)
    for p_ours, p_peer in zip(ours.policy.model.parameters(), peer.policy.model.parameters()):
        torch.testing.assert_close(p_ours, p_peer)


def test_prioritized_update_matches_tianshou() -> None:
    """Importance weights in the loss and the priorities written back (the same weights given
    to both: tdrl's PER weights differ by design, see tdrl/data/buffer/prio.py)."""
    pytest.importorskip("tianshou")
    ours, peer = _pair(sgd=True, n_step=1)
    b_ours, b_peer = paired_buffers(3, prioritized=True)
    rng = np.random.default_rng(2)
    for step in range(3):
        idx = sample_indices(b_ours, rng)
        weight = rng.uniform(0.2, 1.0, len(idx)).astype(np.float32)
        batch = ours.preprocess(b_ours[idx], b_ours, idx)
        batch["weight"] = torch.from_numpy(weight)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(batch, 16, 1)
        ours.postprocess(batch, b_ours, idx)
        loss, tb, _ = _peer_step(peer, b_peer, idx, weight)
        assert got["loss"] == pytest.approx(loss, rel=1e-5), step
        np.testing.assert_allclose(
            np.asarray(b_ours.updates[-1][1]), tb.weight.numpy(), rtol=1e-5, atol=1e-6
        )


# ---------------------------------------------------------------------------- the preset
def test_preset_builds_the_network() -> None:
    import tdrl
    from tdrl import registry

    p: Any = registry.preset("qrdqn", "CartPole-v1")
    assert type(p).__name__ == "QRDQNPreset" and p.threshold == 195.0
    alg = tdrl.make_algorithm("qrdqn", "CartPole-v1")
    assert isinstance(alg, QRDQN) and alg.num_quantiles == p.num_quantiles
    assert alg.n_step == p.n_step and alg.target_update_freq == p.target_update_freq
    assert alg.policy.model(torch.zeros(3, 4)).shape == (3, 2, p.num_quantiles)
    with pytest.raises(registry.PresetError, match="qrdqn preset field 'num_quantiles'"):
        registry.preset("qrdqn", "CartPole-v1", num_quantiles=1)


@pytest.mark.slow
def test_cartpole_preset_reaches_threshold(tmp_path: Any) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="qrdqn",
        task="CartPole-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= 195.0
