"""FQF: fraction proposals, the W1 fraction gradient, two optimizers, TorchRL, oracle."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import make_batch
from tdrl.algorithm.distributional import quantile_huber_loss, quantile_priority
from tdrl.algorithm.modelfree.fqf import FQF, FQFPolicy, fraction_gradient
from tdrl.algorithm.modelfree.iqn import take_action
from tdrl.utils.net_quantile import FractionProposalNetwork, Fractions, FullQuantileFunction
from tests.algorithm.fakebuf import FakePrioBuffer, FakeVectorBuffer

SPACE = gym.spaces.Discrete(2)


def _policy(seed: int = 0, n: int = 6, obs_dim: int = 4) -> FQFPolicy:
    torch.manual_seed(seed)
    net = FullQuantileFunction(obs_dim, 2, hidden_sizes=(16, 16), head_hidden_sizes=(16,))
    fpn = FractionProposalNetwork(n, net.feature_dim)
    with torch.no_grad():  # move away from the near-uniform initial proposal
        fpn.net.weight.normal_(0.0, 0.5)
    return FQFPolicy(model=net, fraction_model=fpn, action_space=SPACE)


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


def _buffer(prio: bool = False) -> Any:
    buf = FakePrioBuffer(20, 1) if prio else FakeVectorBuffer(20, 1)
    rng = np.random.default_rng(0)
    for t in range(9):
        _add(
            buf,
            rng.normal(size=(1, 4)),
            [t % 2],
            [1.0],
            [t == 8],
            [t == 4],
            rng.normal(size=(1, 4)),
        )
    return buf


# ---------------------------------------------------------------- fraction proposal net
def test_fraction_proposal_is_a_cumulative_softmax() -> None:
    torch.manual_seed(0)
    fpn = FractionProposalNetwork(5, 3)
    with torch.no_grad():
        fpn.net.weight.normal_()
    feats = torch.randn(4, 3)
    fr = fpn(feats)
    q = torch.softmax(fpn.net(feats), -1)
    torch.testing.assert_close(fr.taus[:, 1:] - fr.taus[:, :-1], q)
    assert bool((fr.taus[:, 0] == 0).all()) and torch.allclose(fr.taus[:, -1], torch.ones(4))
    torch.testing.assert_close(fr.tau_hats, (fr.taus[:, 1:] + fr.taus[:, :-1]) / 2)
    assert fr.taus.requires_grad and not fr.tau_hats.requires_grad
    dist = torch.distributions.Categorical(logits=fpn.net(feats))
    torch.testing.assert_close(fr.entropies, dist.entropy())
    # the initial proposal is nearly uniform
    fresh = FractionProposalNetwork(4, 3)(torch.randn(2, 3))
    torch.testing.assert_close(fresh.taus, torch.linspace(0, 1, 5).expand(2, 5), atol=0.02, rtol=0)
    with pytest.raises(ValueError, match="num_fractions, embedding_dim: expected ints >= 1"):
        FractionProposalNetwork(0, 3)


# ------------------------------------------------------------------- fraction gradient
def test_fraction_gradient_is_the_w1_derivative_for_monotone_quantiles() -> None:
    torch.manual_seed(0)
    z_hat = torch.randn(3, 5).sort(-1).values
    # F(tau_i) strictly between its neighbouring midpoints
    z_tau = z_hat[:, :-1] + torch.rand(3, 4) * (z_hat[:, 1:] - z_hat[:, :-1])
    expected = 2 * z_tau - z_hat[:, :-1] - z_hat[:, 1:]
    torch.testing.assert_close(fraction_gradient(z_tau, z_hat), expected)


def test_fraction_gradient_flips_the_sign_of_non_monotone_steps() -> None:
    # F(tau_1) = 3 lies above F(tau^_0) = 1 (step up: +2) but also above F(tau_2) = 2, its
    # upper neighbour, so its upper difference 3 - F(tau^_1) = 3 - 0 = 3 counts negative
    z_hat = torch.tensor([[1.0, 0.0, 4.0]])
    z_tau = torch.tensor([[3.0, 2.0]])
    g = fraction_gradient(z_tau, z_hat)
    assert g[0, 0].item() == pytest.approx(2.0 - 3.0)
    # F(tau_2) = 2: below its lower neighbour F(tau_1) = 3 -> -(2 - 0); below F(tau^_2) = 4
    assert g[0, 1].item() == pytest.approx(-2.0 + (2.0 - 4.0))


# -------------------------------------------------------------------------------- policy
def test_policy_q_is_the_fraction_weighted_quantile_sum() -> None:
    p = _policy()
    obs = torch.randn(5, 4)
    out = p(make_batch({"obs": obs}, 5))
    prop = p.propose(obs)
    widths = prop.fractions.taus[:, 1:] - prop.fractions.taus[:, :-1]
    q = (widths[:, None, :] * prop.quantiles).sum(-1)
    torch.testing.assert_close(out["logits"], q)
    assert out["act"].tolist() == q.argmax(1).tolist()
    torch.testing.assert_close(prop.quantiles, p.model(obs, prop.fractions.tau_hats))
    # a mask restricts the greedy action
    mask = torch.tensor([[True, False]] * 5)
    masked = p(make_batch({"obs": TensorDict({"obs": obs, "mask": mask}, [5])}, 5))
    assert masked["act"].tolist() == [0] * 5


def test_target_uses_the_online_fractions_and_action() -> None:
    p = _policy()
    alg = FQF(policy=p, target_update_freq=4)
    with torch.no_grad():
        for t in alg.target_model_params.values(True, True):
            t.mul_(1.5)
    obs = torch.randn(7, 4)
    z = alg.next_value(obs)
    online = p.propose(obs)
    act = p(make_batch({"obs": obs}, 7))["act"]
    assert alg.model_old is not None
    target = alg.model_old(obs, online.fractions.tau_hats)
    torch.testing.assert_close(z, take_action(target, act))
    # without a target net: the online quantiles of the greedy action
    alg = FQF(policy=p)
    torch.testing.assert_close(alg.next_value(obs), take_action(online.quantiles, act))


# ---------------------------------------------------------------------------------- loss
def test_losses_and_the_parameters_each_term_reaches() -> None:
    p = _policy()
    alg = FQF(policy=p, ent_coef=0.3, target_update_freq=3)
    obs, act = torch.randn(6, 4), torch.tensor([0, 1, 1, 0, 1, 0])
    returns = torch.randn(6, 6)
    batch = make_batch({"obs": obs, "act": act, "returns": returns}, 6)
    out = alg(batch)
    assert set(out.keys()) == {"loss_qvalue", "loss_fraction", "loss_entropy", "entropy"}
    prop = p.propose(obs)
    fr = prop.fractions
    z_hat = take_action(prop.quantiles, act)
    z_tau = take_action(p.model(obs, fr.taus[:, 1:-1]), act)
    torch.testing.assert_close(
        out["loss_qvalue"], quantile_huber_loss(z_hat, returns, fr.tau_hats).mean()
    )
    torch.testing.assert_close(batch["td_error"], quantile_priority(z_hat, returns))
    grad = fraction_gradient(z_tau.detach(), z_hat.detach())
    torch.testing.assert_close(out["loss_fraction"], (grad * fr.taus[:, 1:-1]).sum(1).mean())
    torch.testing.assert_close(out["entropy"], fr.entropies.mean())
    torch.testing.assert_close(out["loss_entropy"], -0.3 * fr.entropies.mean())
    params = dict(alg.named_parameters())

    def reached(term: torch.Tensor) -> set[str]:
        grads = torch.autograd.grad(
            term, list(params.values()), allow_unused=True, retain_graph=True
        )
        return {
            n for (n, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0
        }

    model = {n for n in params if n.startswith("policy.model.")}
    fraction = {n for n in params if n.startswith("policy.fraction_model.")}
    assert model and fraction and model | fraction == set(params)
    assert reached(out["loss_qvalue"]) == model
    assert reached(out["loss_fraction"]) == fraction
    assert reached(out["loss_entropy"]) == fraction


def test_update_steps_each_network_from_the_same_pre_step_pass() -> None:
    """One update: the quantile function moves by its Adam step on L_Z and the proposal
    by its SGD step on L_P, both evaluated at the weights before the update."""
    p = _policy()
    alg = FQF(
        policy=p,
        optim=1e-2,
        fraction_optim=_sgd(0.5),
        ent_coef=0.2,
    )
    ref = copy.deepcopy(alg)
    buf = _buffer()
    idx = np.arange(9)
    batch = alg.preprocess(buf[idx], buf, idx)
    ref_batch = ref.preprocess(buf[idx], buf, idx)
    alg._update_with_batch(batch, 9, 1)
    out = ref(ref_batch)
    frac = list(ref.policy.fraction_model.parameters())
    grads = torch.autograd.grad(out["loss_fraction"] + out["loss_entropy"], frac)
    for new, old, g in zip(p.fraction_model.parameters(), frac, grads, strict=True):
        torch.testing.assert_close(new, old - 0.5 * g)
    moved = [
        not torch.equal(a, b) for a, b in zip(p.model.parameters(), ref.policy.model.parameters())
    ]
    assert all(moved)


def _sgd(lr: float):  # type: ignore[no-untyped-def]
    from tdrl.algorithm.base import OptimizerFactory

    return OptimizerFactory(torch.optim.SGD, lr=lr)


def test_prioritized_weights_and_priorities() -> None:
    p = _policy()
    alg = FQF(policy=p, gamma=0.9)
    buf = _buffer(prio=True)
    idx = np.arange(9)
    batch = alg.preprocess(buf[idx], buf, idx)
    assert batch["returns"].shape == (9, 6) and "weight" in batch
    loss = alg(batch)["loss_qvalue"]
    prop = p.propose(batch["obs"])
    z_hat = take_action(prop.quantiles, batch["act"])
    per = quantile_huber_loss(z_hat, batch["returns"], prop.fractions.tau_hats)
    torch.testing.assert_close(loss, (batch["weight"] * per).mean())
    alg.update(buf, 5)
    ((written_idx, written),) = buf.updates
    assert written_idx.shape == (5,) and bool((written >= 0).all())


def test_fraction_stage_needs_the_quantile_stage_first() -> None:
    alg = FQF(policy=_policy())
    batch = make_batch({"obs": torch.randn(3, 4), "act": torch.zeros(3, dtype=torch.long)}, 3)
    with pytest.raises(KeyError, match="fraction_features"):
        alg.fraction_losses(batch)


def test_default_fraction_optimizer_is_rmsprop_and_argument_errors() -> None:
    alg = FQF(policy=_policy())
    opt = alg.fraction_optim.optim
    assert isinstance(opt, torch.optim.RMSprop) and opt.param_groups[0]["lr"] == 2.5e-9
    assert {id(q) for q in alg.optim.params} == {id(q) for q in alg.policy.model.parameters()}
    with pytest.raises(ValueError, match=r"ent_coef: expected a value >= 0, got -1\.0"):
        FQF(policy=_policy(), ent_coef=-1.0)
    from tdrl.algorithm.modelfree.dqn import DQNPolicy

    with pytest.raises(TypeError, match="policy: expected an FQFPolicy, got DQNPolicy"):
        FQF(policy=DQNPolicy(model=torch.nn.Linear(4, 2), action_space=SPACE))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_step: expected an int >= 1, got 0"):
        FQF(policy=_policy(), n_step=0)


# ------------------------------------------------------------------------------- TorchRL
def test_torchrl_batch_gets_targets_and_each_term_its_own_network() -> None:
    import tdrl

    loss = tdrl.make_algorithm("fqf", "CartPole-v1")
    loss.set_keys(observation="observation", action="action")
    n = 16
    td = TensorDict(
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
    out = loss(td)
    z = loss.next_value(td["next", "observation"])
    term = td["next", "terminated"].float()
    torch.testing.assert_close(td["returns"], td["next", "reward"] + 0.9 * (1 - term) * z)
    assert td["returns"].shape == (n, 32)
    total = sum(v for k, v in out.items() if k.startswith("loss_"))
    assert torch.isfinite(total)
    params = dict(loss.named_parameters())
    for key, prefix in (("loss_qvalue", "policy.model."), ("loss_fraction", "policy.fraction_")):
        grads = torch.autograd.grad(out[key], list(params.values()), allow_unused=True)
        hit = {k for (k, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0}
        assert hit and all(k.startswith(prefix) for k in hit), key
    acted = loss.policy(TensorDict({"observation": torch.randn(3, 4)}, [3]))
    assert acted["action"].shape == (3,)


# -------------------------------------------------------------------------------- oracle
def test_update_matches_tianshou_exactly() -> None:
    """Same weights, buffer and sampled indices: the n-step quantile targets, the quantile,
    fraction and entropy losses, the priorities and both networks' weights after each
    update agree. tdrl steps the quantile function before the proposal network (two stages)
    and Tianshou the other way round; both steps use the pre-update pass and move disjoint
    parameters, so the order does not change the result."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import FQF as TFQF
    from tianshou.algorithm.modelfree.fqf import FQFPolicy as TFQFPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory, RMSpropOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.discrete import FractionProposalNetwork as TFPN
    from tianshou.utils.net.discrete import FullQuantileFunction as TNet
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.algorithm.base import OptimizerFactory, within_training_step
    from tdrl.data.batch import Batch
    from tdrl.data.buffer import VectorReplayBuffer

    torch.manual_seed(0)
    peer_net = TNet(
        preprocess_net=Net(state_shape=4, action_shape=16, hidden_sizes=[16]),
        action_shape=2,
        hidden_sizes=[16],
        num_cosines=8,
    )
    peer_fpn = TFPN(6, 16)
    with torch.no_grad():
        peer_fpn.net.weight.normal_(0.0, 0.5)
    our_net = FullQuantileFunction(
        4, 2, hidden_sizes=(16, 16), head_hidden_sizes=(16,), num_cosines=8
    )
    our_fpn = FractionProposalNetwork(6, 16)
    with torch.no_grad():
        pairs = [(our_net, peer_net), (our_fpn, peer_fpn)]
        for mine_net, theirs_net in pairs:
            for mine, theirs in zip(mine_net.parameters(), theirs_net.parameters(), strict=True):
                mine.copy_(theirs)
    ours = FQF(
        policy=FQFPolicy(model=our_net, fraction_model=our_fpn, action_space=SPACE),
        optim=1e-3,
        fraction_optim=OptimizerFactory(torch.optim.RMSprop, lr=1e-3),
        gamma=0.9,
        ent_coef=0.5,
        n_step=3,
        target_update_freq=2,
    )
    peer = TFQF(
        policy=TFQFPolicy(
            model=copy.deepcopy(peer_net),
            fraction_model=copy.deepcopy(peer_fpn),
            action_space=SPACE,
        ),
        optim=AdamOptimizerFactory(lr=1e-3),
        fraction_optim=RMSpropOptimizerFactory(lr=1e-3),
        gamma=0.9,
        num_fractions=6,
        ent_coef=0.5,
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
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            got = ours._update_with_batch(batch, 16, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            expected = peer._update_with_batch(tb)
        torch.testing.assert_close(batch["returns"], tb.returns, rtol=1e-5, atol=1e-5)
        assert got["loss_qvalue"] == pytest.approx(expected.quantile_loss, rel=1e-5), step
        assert got["loss_fraction"] == pytest.approx(expected.fraction_loss, rel=1e-5, abs=1e-7)
        assert got["entropy"] == pytest.approx(expected.entropy_loss, rel=1e-5), step
        assert got["loss"] == pytest.approx(expected.loss, rel=1e-5), step
        torch.testing.assert_close(batch["td_error"], torch.as_tensor(tb.weight))
    for mine_net, theirs_net in (
        (ours.policy.model, peer.policy.model),
        (ours.policy.fraction_model, peer.policy.fraction_model),
    ):
        for mine, theirs in zip(mine_net.parameters(), theirs_net.parameters(), strict=True):
            torch.testing.assert_close(mine, theirs)


def test_fractions_are_a_named_tuple() -> None:
    fr = Fractions(torch.zeros(1, 3), torch.zeros(1, 2), torch.zeros(1))
    assert fr.taus.shape == (1, 3) and fr._fields == ("taus", "tau_hats", "entropies")


# --------------------------------------------------------------------------- convergence
@pytest.mark.slow
def test_preset_reaches_threshold_on_cartpole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="fqf",
            task="CartPole-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= 195.0


def test_num_fractions_must_match_the_fraction_model() -> None:
    """Tianshou's ``FQF(num_fractions=...)`` is accepted; the fraction model proposes the
    fractions, so a different count is an error naming both."""
    from tdrl.algorithm.modelfree.fqf import FQF, FQFPolicy
    from tdrl.utils.net_quantile import FractionProposalNetwork, FullQuantileFunction

    net = FullQuantileFunction(3, 2, hidden_sizes=(8,), num_cosines=4)
    p = FQFPolicy(model=net, fraction_model=FractionProposalNetwork(4, 8),
                  action_space=gym.spaces.Discrete(2))  # fmt: skip
    assert FQF(policy=p, num_fractions=4).policy is p
    with pytest.raises(ValueError, match="proposes 4 fractions, got num_fractions=5"):
        FQF(policy=p, num_fractions=5)
