"""Tests for tdrl.algorithm.distributional: C51 projection, quantile Huber loss, fractions.

Oracles: Tianshou 2.0.1's ``C51`` (n-step returns through its own buffer, then its
``_target_dist``), ``QRDQN`` / ``IQN`` / ``FQF`` (one update through ``_update_with_batch`` with
fake networks whose outputs are fixed tables: the reported loss, the priority written back and,
with SGD at learning rate 1, the gradient), and TorchRL's ``DistributionalDQNLoss`` (per-sample
cross-entropy). Properties are checked with hypothesis.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tdrl.algorithm.distributional import (
    categorical_projection,
    categorical_support,
    quantile_huber_loss,
    quantile_midpoints,
    quantile_priority,
)

# ----------------------------------------------------------------------------- helpers


def point_mass(value: float, support: torch.Tensor) -> torch.Tensor:
    """The two-atom split of a single value, clamped to the support (written out by hand)."""
    z = support.double().tolist()
    v = min(max(value, z[0]), z[-1])
    out = torch.zeros(len(z), dtype=torch.float64)
    dz = (z[-1] - z[0]) / (len(z) - 1)
    pos = (v - z[0]) / dz
    i = min(int(np.floor(pos)), len(z) - 1)
    frac = pos - i if i < len(z) - 1 else 0.0
    out[i] += 1 - frac
    if frac > 0:
        out[i + 1] += frac
    return out


def random_probs(gen: torch.Generator, *shape: int, dtype=torch.float64) -> torch.Tensor:
    return torch.softmax(3 * torch.randn(*shape, generator=gen, dtype=dtype), dim=-1)


class TableModel(nn.Module):
    """``obs`` holds row ids into a fixed table; returns ``(table[ids] + 0 * dummy, None)``."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.table = table
        self.dummy = nn.Parameter(torch.zeros((), dtype=table.dtype))

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, None]:
        ids = torch.as_tensor(np.asarray(obs)).long().reshape(-1)
        return self.table[ids] + 0 * self.dummy, None


# ----------------------------------------------------------------------- C51 projection


def test_support_and_validation() -> None:
    z = categorical_support(-10.0, 10.0, 51)
    assert z.shape == (51,) and z[0] == -10 and z[-1] == 10
    with pytest.raises(ValueError, match="num_atoms"):
        categorical_support(0.0, 1.0, 1)
    with pytest.raises(ValueError, match="v_min"):
        categorical_support(1.0, 1.0, 5)
    with pytest.raises(ValueError, match="support"):
        categorical_projection(torch.ones(2, 3) / 3, 0.0, 1.0, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="next_probs"):
        categorical_projection(torch.ones(2, 4) / 4, 0.0, 1.0, z)
    # TorchRL-style [B, 1] rewards would silently broadcast to [B, B, n]
    with pytest.raises(ValueError, match="trailing dim of 1"):
        categorical_projection(torch.ones(3, 51) / 51, torch.zeros(3, 1), 1.0, z)
    with pytest.raises(ValueError, match="discount"):
        categorical_projection(torch.ones(3, 51) / 51, torch.zeros(3), torch.ones(2), z)


def test_projection_by_hand() -> None:
    z = categorical_support(-1.0, 1.0, 3)  # atoms -1, 0, 1; dz = 1
    p = torch.tensor([[0.2, 0.3, 0.5]], dtype=torch.float64)
    # Tz = 0.5 + 0.5 z = (0, 0.5, 1): 0.2 -> atom 0; 0.3 -> half to 0, half to 1; 0.5 -> atom 1
    out = categorical_projection(p, 0.5, 0.5, z.double())
    torch.testing.assert_close(out, torch.tensor([[0.0, 0.35, 0.65]], dtype=torch.float64))


def test_projection_shapes_dtype_grad() -> None:
    gen = torch.Generator().manual_seed(0)
    z = categorical_support(-3.0, 3.0, 7)
    p = random_probs(gen, 4, 5, 7, dtype=torch.float32).requires_grad_()
    out = categorical_projection(p, torch.randn(4, 5), torch.full((4, 5), 0.9), z)
    assert out.shape == (4, 5, 7) and out.dtype == torch.float32
    out[..., 3].sum().backward()
    assert p.grad is not None and torch.isfinite(p.grad).all()
    # the support's dtype follows next_probs; float discount / reward broadcast
    out64 = categorical_projection(p.detach().double(), 0.3, 0.9, z)
    assert out64.dtype == torch.float64
    torch.testing.assert_close(out64.float(), categorical_projection(p.detach(), 0.3, 0.9, z))


def test_projection_nan_propagates_without_crash() -> None:
    z = categorical_support(-1.0, 1.0, 5)
    out = categorical_projection(torch.full((2, 5), 0.2), torch.tensor([float("nan"), 0.0]), 1.0, z)
    assert torch.isnan(out[0]).any() and torch.isfinite(out[1]).all()


finite = st.floats(-50, 50, allow_nan=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 31),
    lo=st.floats(-20, 5),
    width=st.floats(0.5, 30),
    rew=st.lists(finite, min_size=1, max_size=6),
    disc=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_projection_properties(n, lo, width, rew, disc, seed) -> None:
    gen = torch.Generator().manual_seed(seed)
    z = categorical_support(lo, lo + width, n, dtype=torch.float64)
    b = len(rew)
    p = random_probs(gen, b, n)
    r = torch.tensor(rew, dtype=torch.float64)
    d = torch.full((b,), disc, dtype=torch.float64)
    out = categorical_projection(p, r, d, z)
    # a distribution: nonnegative, rows sum to 1 (mass clamped at v_min / v_max is kept)
    assert (out >= 0).all()
    torch.testing.assert_close(out.sum(-1), torch.ones(b, dtype=torch.float64))
    # mass clamped below v_min lands on atom 0, above v_max on the last atom (and nowhere else)
    tz = r[:, None] + d[:, None] * z
    below = (p * (tz <= z[0])).sum(-1)
    above = (p * (tz >= z[-1])).sum(-1)
    assert (out[:, 0] >= below - 1e-12).all() and (out[:, -1] >= above - 1e-12).all()
    # the mean is preserved where nothing is clamped (linear interpolation keeps E[Z])
    inside = ((tz >= z[0]) & (tz <= z[-1])).all(-1)
    torch.testing.assert_close((out * z).sum(-1)[inside], (p * tz).sum(-1)[inside])
    # discount 0: everything goes to the projection of r alone, whatever next_probs is
    out0 = categorical_projection(p, r, torch.zeros(b, dtype=torch.float64), z)
    for i, ri in enumerate(rew):
        torch.testing.assert_close(out0[i], point_mass(ri, z))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 15), seed=st.integers(0, 2**31 - 1))
def test_projection_identity_on_support(n, seed) -> None:
    """r = 0, discount 1 maps every atom onto itself."""
    gen = torch.Generator().manual_seed(seed)
    z = categorical_support(-2.0, 7.0, n, dtype=torch.float64)
    p = random_probs(gen, 3, n)
    torch.testing.assert_close(categorical_projection(p, 0.0, 1.0, z), p)


# -- oracle: Tianshou C51


def _tianshou_c51(
    table: torch.Tensor, num_atoms: int, v_min: float, v_max: float, n_step: int
) -> Any:
    """Tianshou's C51 over a fixed probability table, in the table's dtype. In float64 its
    support is replaced by an exactly spaced float64 one: Tianshou builds it with a float32
    ``linspace``, whose atoms sit up to ~1 float32 ulp off the grid ``v_min + i * Δz`` that its
    projection formula assumes (an error of ulp / Δz in the weights, ~1e-6 at 51 atoms on
    [-10, 10], that would swamp a float64 comparison)."""
    gym = pytest.importorskip("gymnasium")
    c51 = pytest.importorskip("tianshou.algorithm.modelfree.c51")
    from tianshou.algorithm.optim import AdamOptimizerFactory

    policy = c51.C51Policy(
        model=TableModel(table),
        action_space=gym.spaces.Discrete(table.shape[1]),
        num_atoms=num_atoms,
        v_min=v_min,
        v_max=v_max,
    )
    algo = c51.C51(
        policy=policy, optim=AdamOptimizerFactory(), gamma=0.9, n_step_return_horizon=n_step
    )
    if table.dtype == torch.float64:
        algo.double()
        algo.policy.support.data = categorical_support(v_min, v_max, num_atoms, dtype=table.dtype)
    return algo


def _nstep_reference(rew, term, done, last, idx, gamma, n):
    """Reward sum and bootstrap discount by walking the episode forward (chains stop at done and
    at the newest step ``last`` of the unfinished episode; discount 0 after a terminal)."""
    g, k, j = 0.0, 0, idx
    while True:
        g += gamma**k * rew[j]
        k += 1
        if done[j] or j == last or k == n:
            break
        j += 1
    return g, (0.0 if term[j] else gamma**k)


# float64: 1e-6 as asked (the agreement is ~1e-15). float32: both formulas round differently
# and each is ~1e-6 off the exact projection at 51 atoms on [-10, 10] (Tianshou's own float32
# result included), so the float32 comparison allows 1e-5.
DTYPE_ATOL = [(torch.float64, 1e-6), (torch.float32, 1e-5)]


@pytest.mark.parametrize("n_step", [1, 3])
@pytest.mark.parametrize(("dtype", "atol"), DTYPE_ATOL)
def test_projection_matches_tianshou_c51(n_step: int, dtype: torch.dtype, atol: float) -> None:
    """Tianshou's n-step returns over its own buffer (terminated, truncated and unfinished
    episodes), then its ``_target_dist``; ours from a hand-written n-step walk."""
    pytest.importorskip("tianshou")
    from tianshou.data import Batch, ReplayBuffer

    num_atoms, v_min, v_max, n_act, gamma = 51, -10.0, 10.0, 3, 0.9
    gen = torch.Generator().manual_seed(1)
    steps = 60
    table = random_probs(gen, steps + 1, n_act, num_atoms, dtype=dtype)
    rng = np.random.default_rng(0)
    rew = rng.normal(0, 6.0, steps)  # rewards large enough to clamp at v_min / v_max
    term = rng.random(steps) < 0.1
    trunc = ~term & (rng.random(steps) < 0.1)
    buf = ReplayBuffer(steps)
    for t in range(steps):
        buf.add(
            Batch(
                obs=np.array([t]),
                act=0,
                rew=rew[t],
                terminated=term[t],
                truncated=trunc[t],
                obs_next=np.array([t + 1]),
                info={},
            )
        )
    algo = _tianshou_c51(table, num_atoms, v_min, v_max, n_step)
    idx = np.arange(steps)
    batch = algo._preprocess_batch(buf[idx], buf, idx)
    expected = algo._target_dist(batch)

    # ours: the n-step reward sum and discount per sample, written out independently
    done = term | trunc
    rd = [_nstep_reference(rew, term, done, steps - 1, i, gamma, n_step) for i in idx]
    r = torch.tensor([x[0] for x in rd], dtype=dtype)
    d = torch.tensor([x[1] for x in rd], dtype=dtype)
    support = algo.policy.support.data
    # the greedy next action by expected value; Tianshou's C51 takes the next-state probabilities
    # from ``obs_next`` of the sampled step (s_{t+1}) even when n_step > 1
    nxt = table[torch.as_tensor(idx + 1)]
    act = (nxt * support).sum(-1).argmax(-1)
    next_probs = nxt[torch.arange(steps), act]
    ours = categorical_projection(next_probs, r, d, support)
    assert (d == 0).any() and ((r + d * v_max) > v_max).any() and ((r + d * v_min) < v_min).any()
    assert ours.dtype == expected.dtype == dtype
    torch.testing.assert_close(ours, expected, atol=atol, rtol=0)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 60),
    lo=st.floats(-20, 5),
    width=st.floats(0.5, 40),
    seed=st.integers(0, 2**31 - 1),
)
def test_projection_matches_tianshou_target_dist_random(n, lo, width, seed) -> None:
    """Tianshou's ``_target_dist`` with ``returns = r + d * support`` on random inputs."""
    pytest.importorskip("tianshou")
    from tianshou.data import Batch

    gen = torch.Generator().manual_seed(seed)
    b, n_act = 16, 2
    table = random_probs(gen, b, n_act, n)
    algo = _tianshou_c51(table, n, lo, lo + width, 1)
    support = algo.policy.support.data
    r = width * torch.randn(b, generator=gen, dtype=torch.float64)
    d = torch.rand(b, generator=gen, dtype=torch.float64) * (torch.rand(b, generator=gen) > 0.2)
    batch = Batch(obs_next=np.arange(b)[:, None], returns=r[:, None] + d[:, None] * support)
    expected = algo._target_dist(batch)
    act = (table * support).sum(-1).argmax(-1)
    ours = categorical_projection(table[torch.arange(b), act], r, d, support)
    torch.testing.assert_close(ours, expected, atol=1e-6, rtol=0)


# -- oracle: TorchRL DistributionalDQNLoss


def test_projection_matches_torchrl_distributional_dqn_loss() -> None:
    """TorchRL keeps its projection inside the loss; compare the per-sample cross-entropy it
    writes as priority, ``-sum_i m_i log p_i(s, a)``, for three different online distributions
    per transition (a random linear functional of the projected ``m``)."""
    from tensordict import TensorDict
    from torchrl.modules import DistributionalQValueActor
    from torchrl.objectives import DistributionalDQNLoss

    b, k, n_act, n = 8, 3, 3, 11
    gen = torch.Generator().manual_seed(3)
    z = categorical_support(-2.0, 3.0, n)
    # rows [0, b*k): current states; rows [b*k, b*k + b): next states; layout [atoms, actions]
    table = 2 * torch.randn(b * k + b, n, n_act, generator=gen)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dummy = nn.Parameter(torch.zeros(()))

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            return table[obs.long().squeeze(-1)] + self.dummy

    actor = DistributionalQValueActor(
        Net(), in_keys=["observation"], support=z, action_space="categorical"
    )
    loss_fn = DistributionalDQNLoss(actor, gamma=0.9, delay_value=True)
    nxt = torch.arange(b).repeat_interleave(k)  # transition of each row
    rew = 3 * torch.randn(b, 1, generator=gen)
    term = torch.rand(b, 1, generator=gen) < 0.3
    steps = torch.randint(1, 4, (b, 1), generator=gen)
    act = torch.randint(n_act, (b * k,), generator=gen)
    td = TensorDict(
        {
            "observation": torch.arange(b * k).unsqueeze(-1).float(),
            "action": act,
            "steps_to_next_obs": steps[nxt],
            "next": {
                "observation": (b * k + nxt).unsqueeze(-1).float(),
                "reward": rew[nxt],
                "done": term[nxt],
                "terminated": term[nxt],
            },
        },
        [b * k],
    )
    loss_fn(td)
    expected = td["td_error"].squeeze(-1)

    logp = torch.log_softmax(table, dim=-2)
    pn = logp[b * k :].exp()
    a_star = (pn * z[:, None]).sum(-2).argmax(-1)
    next_probs = pn[torch.arange(b), :, a_star]
    discount = 0.9 ** steps.squeeze(-1).float() * (~term.squeeze(-1)).float()
    m = categorical_projection(next_probs, rew.squeeze(-1), discount, z)
    ours = -(m[nxt] * logp[torch.arange(b * k), :, act]).sum(-1)
    assert (discount == 0).any()
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-6)


# ------------------------------------------------------------------- quantile Huber loss


def test_quantile_midpoints() -> None:
    torch.testing.assert_close(quantile_midpoints(1), torch.tensor([0.5]))
    torch.testing.assert_close(
        quantile_midpoints(5, dtype=torch.float64),
        torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9], dtype=torch.float64),
    )
    with pytest.raises(ValueError, match="n must be"):
        quantile_midpoints(0)


def test_quantile_midpoints_match_tianshou_qrdqn() -> None:
    gym = pytest.importorskip("gymnasium")
    qrdqn = pytest.importorskip("tianshou.algorithm.modelfree.qrdqn")
    from tianshou.algorithm.optim import AdamOptimizerFactory

    for n in (2, 7, 200):
        policy = qrdqn.QRDQNPolicy(
            model=TableModel(torch.zeros(1, 2, n)), action_space=gym.spaces.Discrete(2)
        )
        algo = qrdqn.QRDQN(policy=policy, optim=AdamOptimizerFactory(), num_quantiles=n)
        torch.testing.assert_close(quantile_midpoints(n), algo.tau_hat.data.view(-1))


def elementwise_reference(pred, target, taus, kappa):
    """``rho[b, i, j]`` written out per element in float64."""
    bsz, n = pred.shape
    m = target.shape[1]
    taus = taus.expand(bsz, n)
    out = torch.zeros(bsz, n, m, dtype=torch.float64)
    for b in range(bsz):
        for i in range(n):
            for j in range(m):
                u = float(target[b, j] - pred[b, i])
                if kappa == 0:
                    h = abs(u)
                elif abs(u) <= kappa:
                    h = 0.5 * u * u / kappa
                else:
                    h = abs(u) - 0.5 * kappa
                out[b, i, j] = abs(float(taus[b, i]) - (u < 0)) * h
    return out


@pytest.mark.parametrize("kappa", [0.0, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("per_sample_taus", [False, True])
def test_quantile_huber_loss_elementwise(kappa: float, per_sample_taus: bool) -> None:
    gen = torch.Generator().manual_seed(4)
    b, n, m = 3, 4, 6
    pred = 2 * torch.randn(b, n, generator=gen, dtype=torch.float64)
    target = 2 * torch.randn(b, m, generator=gen, dtype=torch.float64)
    taus = torch.rand(b, n, generator=gen, dtype=torch.float64)
    if not per_sample_taus:
        taus = quantile_midpoints(n, dtype=torch.float64)
    rho = elementwise_reference(pred, target, taus, kappa)
    torch.testing.assert_close(quantile_huber_loss(pred, target, taus, kappa), rho.sum(-1).mean(-1))
    torch.testing.assert_close(
        quantile_huber_loss(pred, target, taus, kappa, sum_over="pred"), rho.mean(-1).sum(-1)
    )


def test_quantile_huber_loss_grad_and_validation() -> None:
    pred = torch.tensor([[0.0, 1.0]], requires_grad=True)
    target = torch.tensor([[0.5, 3.0]], requires_grad=True)
    taus = torch.tensor([[0.3, 0.6]], requires_grad=True)
    quantile_huber_loss(pred, target, taus).sum().backward()
    assert pred.grad is not None and target.grad is None and taus.grad is None
    with pytest.raises(ValueError, match="kappa"):
        quantile_huber_loss(pred, target, taus, kappa=-1.0)
    with pytest.raises(ValueError, match="sum_over"):
        quantile_huber_loss(pred, target, taus, sum_over="both")  # type: ignore[arg-type]
    assert quantile_priority(pred, target).requires_grad is False
    with pytest.raises(ValueError, match="same batch shape"):
        quantile_huber_loss(pred, target[0], taus)
    with pytest.raises(ValueError, match="taus"):
        quantile_huber_loss(pred, target, torch.rand(3))
    with pytest.raises(ValueError, match="taus"):
        quantile_huber_loss(pred, target, torch.rand(2, 2))


def test_quantile_loss_minimiser_is_the_quantile() -> None:
    """With kappa = 0 the loss of one predicted value is minimised at the tau-quantile of the
    targets (the defining property of quantile regression)."""
    targets = torch.linspace(0.0, 100.0, 101, dtype=torch.float64).unsqueeze(0)
    grid = torch.linspace(0.0, 100.0, 1001, dtype=torch.float64)
    for tau in (0.1, 0.25, 0.5, 0.9):
        losses = torch.stack(
            [
                quantile_huber_loss(g.view(1, 1), targets, torch.tensor([tau]).double(), 0.0)[0]
                for g in grid
            ]
        )
        best = grid[losses.argmin()].item()
        assert abs(best - 100 * tau) <= 1.0


# -- oracles: Tianshou QRDQN / IQN / FQF, one update each


def _sgd():
    from tianshou.algorithm.optim import TorchOptimizerFactory

    return TorchOptimizerFactory(torch.optim.SGD, lr=1.0)


class QuantileModel(nn.Module):
    """Fake quantile net: ``P[ids]`` (a parameter, so SGD at lr 1 exposes its gradient), and for
    IQN the fixed per-sample fractions ``taus[ids]``."""

    def __init__(self, quantiles: torch.Tensor, taus: torch.Tensor | None = None) -> None:
        super().__init__()
        self.P = nn.Parameter(quantiles.clone())
        self.taus = taus

    def forward(self, obs: Any, state: Any = None, info: Any = None, **kwargs: Any) -> Any:
        ids = torch.as_tensor(np.asarray(obs)).long().reshape(-1)
        if self.taus is None:
            return self.P[ids], None
        return (self.P[ids], self.taus[ids]), None


class FQFModel(nn.Module):
    """Fake FQF quantile net with a fraction net whose (fixed) fractions carry a graph."""

    def __init__(self, quantiles: torch.Tensor, taus: torch.Tensor) -> None:
        super().__init__()
        self.P = nn.Parameter(quantiles.clone())
        self.taus = taus  # [K, N + 1], from 0 to 1

    def forward(self, obs: Any, propose_model: Any, state: Any = None, **kwargs: Any) -> Any:
        from tianshou.data import Batch

        ids = torch.as_tensor(np.asarray(obs)).long().reshape(-1)
        taus = self.taus[ids] + 0 * propose_model.w
        tau_hats = (taus[:, 1:] + taus[:, :-1]) / 2
        fractions = Batch(taus=taus, tau_hats=tau_hats, entropies=0 * taus.sum(-1))
        quantiles_tau = self.P[ids][:, :, 1:].detach()
        return (self.P[ids], fractions, quantiles_tau), None


class FractionNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(()))


def _quantile_case(kind: str, seed: int = 5):
    gen = torch.Generator().manual_seed(seed)
    b, n_act, n = 5, 3, 6
    m = 9 if kind == "iqn" else n  # IQN: target sample count differs from the online one
    quantiles = 2 * torch.randn(b, n_act, n, generator=gen)
    act = np.asarray(torch.randint(n_act, (b,), generator=gen))
    returns = 2 * torch.randn(b, m, generator=gen)
    taus = torch.sort(torch.rand(b, n, generator=gen), dim=-1).values
    edges = torch.cat([torch.zeros(b, 1), taus[:, :-1], torch.ones(b, 1)], dim=-1)
    return quantiles, act, returns, taus, edges


def _tianshou_update(kind: str, quantiles, act, returns, taus, edges, weight):
    """One Tianshou update; returns (reported quantile loss, priority, gradient of P)."""
    gym = pytest.importorskip("gymnasium")
    pytest.importorskip("tianshou")
    from tianshou.algorithm.modelfree.fqf import FQF, FQFPolicy
    from tianshou.algorithm.modelfree.iqn import IQN, IQNPolicy
    from tianshou.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
    from tianshou.data import Batch

    space = gym.spaces.Discrete(quantiles.shape[1])
    n = quantiles.shape[2]
    if kind == "qrdqn":
        model: Any = QuantileModel(quantiles)
        algo: Any = QRDQN(
            policy=QRDQNPolicy(model=model, action_space=space), optim=_sgd(), num_quantiles=n
        )
    elif kind == "iqn":
        model = QuantileModel(quantiles, taus)
        algo = IQN(policy=IQNPolicy(model=model, action_space=space), optim=_sgd())
    else:
        model = FQFModel(quantiles, edges)
        policy = FQFPolicy(
            model=model,  # type: ignore[arg-type]
            fraction_model=FractionNet(),  # type: ignore[arg-type]
            action_space=space,
        )
        algo = FQF(policy=policy, optim=_sgd(), fraction_optim=_sgd(), num_fractions=n)
    b = len(act)
    batch = Batch(
        obs=np.arange(b)[:, None],
        act=act,
        returns=returns,
        weight=torch.as_tensor(weight),
        info=[None] * b,
    )
    before = model.P.detach().clone()
    stats = algo._update_with_batch(batch)
    loss = stats.quantile_loss if kind == "fqf" else stats.loss
    return loss, batch.weight, before - model.P.detach()


@pytest.mark.parametrize("kind", ["qrdqn", "iqn", "fqf"])
def test_quantile_huber_loss_matches_tianshou(kind: str) -> None:
    """Per-sample loss (one-hot importance weights pick one sample), the priority written back,
    and the gradient of a PER-weighted mean, all through Tianshou's own update, to 1e-6."""
    quantiles, act, returns, taus, edges = _quantile_case(kind)
    b = len(act)
    n = quantiles.shape[2]
    if kind == "qrdqn":
        fractions = quantile_midpoints(n)
    elif kind == "iqn":
        fractions = taus
    else:
        fractions = (edges[:, 1:] + edges[:, :-1]) / 2
    p = quantiles.clone().requires_grad_()
    pred = p[torch.arange(b), torch.as_tensor(act)]
    ours = quantile_huber_loss(pred, returns, fractions)
    for i in range(b):
        onehot = np.zeros(b, dtype=np.float32)
        onehot[i] = b
        loss, _, _ = _tianshou_update(kind, quantiles, act, returns, taus, edges, onehot)
        assert abs(loss - ours[i].item()) <= 1e-6 * max(1.0, abs(loss))
    weight = np.random.default_rng(0).uniform(0.2, 2.0, b).astype(np.float32)
    loss, prio, grad = _tianshou_update(kind, quantiles, act, returns, taus, edges, weight)
    (ours * torch.as_tensor(weight)).mean().backward()
    assert p.grad is not None
    torch.testing.assert_close(p.grad, grad, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(
        quantile_priority(pred, returns), torch.as_tensor(prio), atol=1e-6, rtol=1e-6
    )
    if kind == "iqn":  # N != M here: the papers' reduction differs by M / N
        alt = quantile_huber_loss(pred, returns, fractions, sum_over="pred")
        torch.testing.assert_close(alt * returns.shape[1] / n, ours)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=3).map(tuple), min_size=1, max_size=3)
)
def test_shape_broadcast_is_torchs(shapes: list[tuple[int, ...]]) -> None:
    """The plain-Python shape broadcast used by the loss checks agrees with torch's."""
    from tdrl.algorithm.distributional import _broadcast

    try:
        expected: tuple[int, ...] | None = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        expected = None
    assert _broadcast(*shapes) == expected
