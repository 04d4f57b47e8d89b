"""IQN: cosine embedding, sampled fractions, quantile n-step targets, loss, TorchRL, oracle."""

from __future__ import annotations

import copy
import io
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch
from tdrl.algorithm.distributional import quantile_huber_loss, quantile_priority
from tdrl.algorithm.modelfree.iqn import IQN, IQNPolicy, take_action
from tdrl.utils.net_quantile import CosineEmbeddingNetwork, ImplicitQuantileNetwork
from tests.algorithm.fakebuf import FakePrioBuffer, FakeVectorBuffer

SPACE = gym.spaces.Discrete(2)


def _add(buf, obs, act, rew, term, trunc, obs_next) -> None:  # type: ignore[no-untyped-def]
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


def _episode_buffer() -> FakeVectorBuffer:
    """Steps 0-2 terminate at 2, steps 3-4 are truncated at 4, steps 5-6 are unfinished."""
    buf = FakeVectorBuffer(10, 1)
    term = [0, 0, 1, 0, 0, 0, 0]
    trunc = [0, 0, 0, 0, 1, 0, 0]
    for t in range(7):
        _add(
            buf, [[float(t)]], [0], [t + 1.0], [bool(term[t])], [bool(trunc[t])], [[10.0 * (t + 1)]]
        )
    return buf


class _Ramp(torch.nn.Module):
    """Quantiles ``Z_tau(s, a) = s * w_a + tau * spread``: known values at known fractions."""

    def __init__(self, w: list[float], spread: float = 0.0) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(w))
        self.spread = spread

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(obs, dtype=torch.float32).reshape(-1, 1)

    def quantiles(self, features: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        return (features * self.w).unsqueeze(-1) + self.spread * taus.unsqueeze(1)


def _net(seed: int = 0, obs_dim: int = 4) -> ImplicitQuantileNetwork:
    torch.manual_seed(seed)
    return ImplicitQuantileNetwork(obs_dim, 2, hidden_sizes=(16, 16), num_cosines=8)


def _policy(model: torch.nn.Module, **kw: object) -> IQNPolicy:
    return IQNPolicy(model=model, action_space=SPACE, **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ network
def test_cosine_embedding_is_relu_of_linear_cosines() -> None:
    torch.manual_seed(0)
    phi = CosineEmbeddingNetwork(num_cosines=3, embedding_dim=2)
    taus = torch.tensor([[0.0, 0.25], [0.5, 1.0]])
    lin = phi.net[0]
    assert isinstance(lin, torch.nn.Linear)
    cos = torch.stack([torch.cos(math.pi * i * taus) for i in (1, 2, 3)], dim=-1)
    torch.testing.assert_close(phi(taus), torch.relu(cos @ lin.weight.T + lin.bias))


def test_quantile_network_mixes_features_and_fraction_embedding() -> None:
    net = _net()
    obs, taus = torch.randn(3, 4), torch.rand(3, 5)
    z = net(obs, taus)
    assert z.shape == (3, 2, 5)
    feats = net.features(obs)
    mixed = (feats[:, None, :] * net.embed_model(taus)).reshape(15, -1)
    by_hand = net.last(mixed).reshape(3, 5, 2).transpose(1, 2)
    torch.testing.assert_close(z, by_hand)
    # each fraction is evaluated independently of the others
    torch.testing.assert_close(net(obs, taus[:, 2:3]), z[:, :, 2:3])
    with pytest.raises(ValueError, match="hidden_sizes: expected at least one width"):
        ImplicitQuantileNetwork(4, 2, hidden_sizes=())
    with pytest.raises(ValueError, match="num_cosines, embedding_dim: expected ints >= 1"):
        CosineEmbeddingNetwork(0, 4)


# ------------------------------------------------------------------------------- policy
def test_policy_acts_on_the_mean_over_sample_size_fractions() -> None:
    gen = torch.Generator().manual_seed(3)
    p = _policy(_Ramp([1.0, -1.0], spread=1.0), sample_size=4, generator=gen)
    out = p(make_batch({"obs": torch.tensor([[2.0], [-2.0]])}, 2))
    taus = torch.rand(2, 4, generator=torch.Generator().manual_seed(3))
    expected = torch.tensor([[2.0, -2.0], [-2.0, 2.0]]) + taus.mean(1, keepdim=True)
    torch.testing.assert_close(out["logits"], expected)
    assert out["act"].tolist() == [0, 1]


def test_fractions_come_from_the_generator_or_torchs_global_rng() -> None:
    net = _net()
    obs = torch.randn(6, 4)
    a = _policy(net, generator=torch.Generator().manual_seed(7)).quantiles(obs, 5)
    b = _policy(net, generator=torch.Generator().manual_seed(7)).quantiles(obs, 5)
    torch.testing.assert_close(a[0], b[0])
    assert a[1].shape == (6, 5) and bool(((a[1] >= 0) & (a[1] < 1)).all())
    torch.manual_seed(1)
    c = _policy(net).quantiles(obs, 5)
    torch.manual_seed(1)
    torch.testing.assert_close(c[1], torch.rand(6, 5))


def test_action_mask_restricts_the_greedy_action() -> None:
    p = _policy(_Ramp([3.0, 1.0]))
    obs = TensorDict({"obs": torch.ones(2, 1), "mask": torch.tensor([[1, 1], [0, 1]]).bool()}, [2])
    assert p(make_batch({"obs": obs}, 2))["act"].tolist() == [0, 1]


# ------------------------------------------------------------------------------ targets
def test_quantile_nstep_target_follows_episode_rules() -> None:
    # Z(s', a) = obs_next * [1, 0] + tau: the greedy action 0 bootstraps obs_next + tau_k
    alg = IQN(
        policy=_policy(_Ramp([1.0, 0.0], spread=1.0), online_sample_size=3, target_sample_size=4),
        gamma=0.5,
        n_step=3,
        target_update_freq=5,
    )
    buf = _episode_buffer()
    idx = np.arange(7)
    torch.manual_seed(0)
    batch = alg.preprocess(buf[idx], buf, idx)
    torch.manual_seed(0)
    torch.rand(7, 3)  # the online fractions that pick a*
    tau_target = torch.rand(7, 4)
    g = 0.5
    rewards = [1 + g * 2 + g**2 * 3, 2 + g * 3, 3.0, 4 + g * 5, 5.0, 6 + g * 7, 7.0]
    boot = [0.0, 0.0, 0.0, g**2, g, g**2, g]  # terminated chains do not bootstrap
    nxt = [0.0, 0.0, 0.0, 50.0, 50.0, 70.0, 70.0]
    expected = torch.tensor(rewards)[:, None] + torch.tensor(boot)[:, None] * (
        torch.tensor(nxt)[:, None] + tau_target  # one row of fresh fractions per sample
    )
    assert batch["returns"].shape == (7, 4)
    torch.testing.assert_close(batch["returns"], expected)


def test_double_target_picks_with_online_net_and_rates_with_target_net() -> None:
    obs_next = torch.tensor([[1.0]])
    for is_double, expected in ((True, -2.0), (False, 5.0)):
        alg = IQN(policy=_policy(_Ramp([1.0, 2.0])), target_update_freq=5, is_double=is_double)
        with torch.no_grad():  # the target net rates [5, -2]; the online net picks action 1
            alg.target_model_params["w"].copy_(torch.tensor([5.0, -2.0]))
        z = alg.next_value(obs_next)
        assert z.shape == (1, 8) and torch.allclose(z, torch.full((1, 8), expected))
    # without a target net: the online net's quantiles of its greedy action, online size
    alg = IQN(policy=_policy(_Ramp([1.0, 2.0]), online_sample_size=3))
    assert alg.model_old is None
    torch.testing.assert_close(alg.next_value(obs_next), torch.full((1, 3), 2.0))


# --------------------------------------------------------------------------------- loss
def test_loss_is_the_quantile_huber_loss_at_the_online_fractions() -> None:
    net = _net()
    alg = IQN(policy=_policy(net, online_sample_size=5), target_update_freq=3)
    obs, act = torch.randn(6, 4), torch.tensor([0, 1, 1, 0, 1, 0])
    returns = torch.randn(6, 7)
    batch = make_batch({"obs": obs, "act": act, "returns": returns}, 6)
    torch.manual_seed(11)
    loss = alg(batch)["loss_qvalue"]
    torch.manual_seed(11)
    taus = torch.rand(6, 5)
    z_a = take_action(net(obs, taus), act)
    torch.testing.assert_close(loss, quantile_huber_loss(z_a, returns, taus).mean())
    torch.testing.assert_close(batch["td_error"], quantile_priority(z_a, returns))
    assert not batch["td_error"].requires_grad
    loss.backward()
    assert all(p.grad is not None for p in net.parameters())
    assert all(not t.requires_grad for t in alg.target_model_params.values(True, True))


def test_prioritized_weights_used_and_priorities_written_back() -> None:
    torch.manual_seed(0)
    buf = FakePrioBuffer(10, 1)
    for t in range(7):
        _add(buf, [[float(t)] * 4], [t % 2], [1.0], [t == 6], [False], [[float(t + 1)] * 4])
    alg = IQN(policy=_policy(_net()), gamma=0.9)
    idx = np.arange(7)
    batch = alg.preprocess(buf[idx], buf, idx)
    assert "weight" in batch
    torch.manual_seed(2)
    weighted = alg(batch)["loss_qvalue"]
    torch.manual_seed(2)
    taus = torch.rand(7, 8)
    z_a = take_action(alg.policy.model(batch["obs"], taus), batch["act"])
    per = quantile_huber_loss(z_a, batch["returns"], taus)
    torch.testing.assert_close(weighted, (batch["weight"] * per).mean())
    alg.update(buf, 5)
    ((written_idx, written),) = buf.updates
    assert written_idx.shape == (5,) and written.shape == (5,)
    assert bool((written >= 0).all())


def test_hard_target_update_every_freq_gradient_steps() -> None:
    net = _net()
    alg = IQN(policy=_policy(net), optim=0.05, target_update_freq=3)
    buf = FakeVectorBuffer(20, 1)
    for t in range(7):
        _add(buf, [[float(t)] * 4], [t % 2], [1.0], [t == 6], [False], [[float(t + 1)] * 4])

    def params() -> list[torch.Tensor]:
        return [p.detach().clone() for p in net.parameters()]

    history = [params()]
    assert alg.model_old is not None
    for k in range(7):
        alg.update(buf, 4)
        history.append(params())
        synced = history[3 * (k // 3)]
        for tgt, s in zip(alg.model_old.parameters(), synced):
            torch.testing.assert_close(tgt, s)


def test_state_dict_round_trip_continues_identically() -> None:
    buf = _episode_buffer()

    def make() -> IQN:
        model = ImplicitQuantileNetwork(1, 2, hidden_sizes=(8,), num_cosines=4)
        return IQN(policy=_policy(model), target_update_freq=2, n_step=2)

    torch.manual_seed(0)
    a = make()
    for _ in range(3):
        a.update(buf, 4)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = make()
    b.load_state_dict(torch.load(f, weights_only=False))
    idx = np.array([0, 3, 5, 6])
    torch.manual_seed(5)
    la = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 4, 1)["loss_qvalue"]
    torch.manual_seed(5)
    lb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 4, 1)["loss_qvalue"]
    assert la == pytest.approx(lb)
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters()):
        torch.testing.assert_close(pa, pb)


def test_argument_errors() -> None:
    net = _net()
    with pytest.raises(ValueError, match="online_sample_size: expected an int >= 2, got 1"):
        _policy(net, online_sample_size=1)
    with pytest.raises(ValueError, match="target_sample_size: expected an int >= 2, got 0"):
        _policy(net, target_sample_size=0)
    with pytest.raises(
        ValueError, match="action_space: IQNPolicy needs a Discrete action space, got Box"
    ):
        IQNPolicy(model=net, action_space=gym.spaces.Box(-1, 1, (1,)))
    from tdrl.algorithm.modelfree.dqn import DQNPolicy

    with pytest.raises(TypeError, match="policy: expected an IQNPolicy, got DQNPolicy"):
        IQN(policy=DQNPolicy(model=torch.nn.Linear(4, 2), action_space=SPACE))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"gamma: expected a value in \[0, 1\], got 2"):
        IQN(policy=_policy(net), gamma=2)


# ----------------------------------------------------------------------------- TorchRL
def _torchrl_batch(n: int) -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(n, 4),
            "action": torch.randint(2, (n,)),
            "next": {
                "observation": torch.randn(n, 4),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.tensor([[True]] + [[False]] * (n - 1)),
            },
        },
        [n],
    )


def test_torchrl_batch_gets_one_step_quantile_targets() -> None:
    import tdrl

    loss = tdrl.make_algorithm("iqn", "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    td = _torchrl_batch(16)
    torch.manual_seed(4)
    out = loss(td)
    assert set(out.keys()) == {"loss_qvalue"} and torch.isfinite(out["loss_qvalue"])
    torch.manual_seed(4)
    z = loss.next_value(td["next", "observation"])
    term = td["next", "terminated"].float()
    expected = td["next", "reward"] + loss.gamma * (1 - term) * z
    assert td["returns"].shape == (16, 8)
    torch.testing.assert_close(td["returns"], expected)
    torch.testing.assert_close(td["returns"][0], td["next", "reward"][0].expand(8))
    # the term reaches only the online quantile network
    params = dict(loss.named_parameters())
    grads = torch.autograd.grad(out["loss_qvalue"], list(params.values()), allow_unused=True)
    reached = {n for (n, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0}
    assert reached and all(n.startswith("policy.model.") for n in reached)
    assert {n for n in params if n.startswith("policy.model.")} == reached


def test_torchrl_policy_acts_and_value_estimators_are_refused() -> None:
    from torchrl.objectives import ValueEstimators

    import tdrl

    loss = tdrl.make_algorithm("iqn", "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    td = loss.policy(TensorDict({"observation": torch.randn(5, 4)}, [5]))
    assert td["action"].shape == (5,) and td["action"].dtype == torch.int64
    with pytest.raises(NotImplementedError, match=r"value_type: IQN supports \['TD0'\]"):
        loss.make_value_estimator(ValueEstimators.TDLambda, lmbda=0.9)
    assert torch.isfinite(loss(_torchrl_batch(4))["loss_qvalue"])  # refused, still usable


# ------------------------------------------------------------------------------ oracle
def test_update_matches_tianshou_exactly() -> None:
    """Same weights, buffer, sampled indices and torch seed: the same fractions are drawn in
    the same order (bootstrap action, target quantiles, online quantiles), so the n-step
    quantile targets, the losses and the weights after each update agree."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import IQN as TIQN
    from tianshou.algorithm.modelfree.iqn import IQNPolicy as TIQNPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.discrete import ImplicitQuantileNetwork as TNet
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.algorithm.base import within_training_step
    from tdrl.data.batch import Batch
    from tdrl.data.buffer import VectorReplayBuffer

    torch.manual_seed(0)
    peer_net = TNet(
        preprocess_net=Net(state_shape=4, action_shape=16, hidden_sizes=[16]),
        action_shape=2,
        num_cosines=8,
    )
    our_net = ImplicitQuantileNetwork(4, 2, hidden_sizes=(16, 16), num_cosines=8)
    with torch.no_grad():
        for mine, theirs in zip(our_net.parameters(), peer_net.parameters(), strict=True):
            mine.copy_(theirs)
    ours = IQN(
        policy=IQNPolicy(
            model=our_net,
            action_space=SPACE,
            sample_size=6,
            online_sample_size=5,
            target_sample_size=7,
        ),
        optim=1e-3,
        gamma=0.9,
        n_step=3,
        target_update_freq=2,
    )
    peer = TIQN(
        policy=TIQNPolicy(
            model=copy.deepcopy(peer_net),
            action_space=SPACE,
            sample_size=6,
            online_sample_size=5,
            target_sample_size=7,
        ),
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=2,
    )
    rng = np.random.default_rng(0)
    b_ours, b_peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    for _ in range(15):
        d = dict(
            obs=rng.normal(size=(3, 4)).astype(np.float32),
            act=rng.integers(0, 2, 3),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=rng.random(3) < 0.1,
            obs_next=rng.normal(size=(3, 4)).astype(np.float32),
        )
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    for step in range(5):
        idx = rng.integers(0, 45, 16)
        idx = idx[np.isin(idx, b_ours.sample_indices(0))]
        torch.manual_seed(100 + step)
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            got = ours._update_with_batch(batch, 16, 1)
        torch.manual_seed(100 + step)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            expected = peer._update_with_batch(tb)
        torch.testing.assert_close(batch["returns"], tb.returns, rtol=1e-5, atol=1e-5)
        assert got["loss"] == pytest.approx(expected.loss, rel=1e-5), step
        torch.testing.assert_close(batch["td_error"], torch.as_tensor(tb.weight))
    for mine, theirs in zip(ours.policy.model.parameters(), peer.policy.model.parameters()):
        torch.testing.assert_close(mine, theirs)


# -------------------------------------------------------------------------- convergence
@pytest.mark.slow
def test_preset_reaches_threshold_on_cartpole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="iqn",
            task="CartPole-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= 195.0
