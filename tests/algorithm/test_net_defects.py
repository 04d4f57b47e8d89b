"""Regression tests for tdrl.utils.net: inner layers run through ``nn.Module.__call__``
(hooks, pruning, spectral norm, observers) and networks follow their own dtype."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize, prune

from tdrl.utils.net import (
    MLP,
    DeterministicActor,
    DiscreteActor,
    GaussianActor,
    QCritic,
    QNet,
    VCritic,
)


def _chain(m: MLP, x: torch.Tensor, weights: dict[int, torch.Tensor] | None = None) -> torch.Tensor:
    """The MLP's computation written out layer by layer (``weights`` overrides a
    Linear's weight by index)."""
    weights = weights or {}
    for i, layer in enumerate(m):
        if isinstance(layer, nn.Linear):
            w = weights.get(i, layer.weight)
            x = F.linear(x, w, layer.bias)
        else:
            x = layer(x)
    return x


# -- 1. inner layers are called as modules ------------------------------------------------
def test_forward_hook_on_inner_layer_fires() -> None:
    torch.manual_seed(0)
    m = MLP(4, 2, (8, 8))
    seen: list[torch.Tensor] = []
    pre: list[int] = []
    h1 = m[2].register_forward_hook(lambda mod, inp, out: seen.append(out.detach()))
    h2 = m[0].register_forward_pre_hook(lambda mod, inp: pre.append(inp[0].shape[0]))
    x = torch.randn(5, 4)
    m(x)
    assert len(seen) == 1 and pre == [5]
    torch.testing.assert_close(seen[0], m[2](m[1](m[0](x))), rtol=0, atol=0)
    # a forward hook may replace the layer's output
    h1.remove()
    h2.remove()
    m[0].register_forward_hook(lambda mod, inp, out: torch.zeros_like(out))
    torch.testing.assert_close(m(x), m[4](m[3](m[2](torch.zeros(5, 8)))), rtol=0, atol=0)


def test_hooks_fire_through_wrapping_networks() -> None:
    q = QNet(3, 2, (8,), dueling=True)
    calls: list[str] = []
    q.trunk[0].register_forward_hook(lambda *a: calls.append("trunk"))
    q.head.advantage[0].register_forward_hook(lambda *a: calls.append("adv"))
    q(torch.zeros(4, 3))
    assert calls == ["trunk", "adv"]


def test_l1_pruning_survives_training_steps() -> None:
    torch.manual_seed(0)
    m = MLP(6, 3, (16, 16))
    prune.l1_unstructured(m[2], "weight", amount=0.5)
    mask = m[2].weight_mask
    assert int((mask == 0).sum()) == 16 * 16 // 2
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(32, 6)
    for _ in range(2):  # the second backward crashed when the pruning pre-hook did not run
        opt.zero_grad()
        out = m(x)
        # the output is the pruned network's: weight_orig * mask, pruned entries zero
        expected = _chain(m, x, {2: (m[2].weight_orig * mask).detach()})
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
        assert bool((m[2].weight[mask == 0] == 0).all())
        out.square().mean().backward()
        assert bool((m[2].weight_orig.grad[mask == 0] == 0).all())
        opt.step()
    # the pruned entries of weight_orig never reach the output
    w0 = m[2].weight_orig.detach().clone()
    with torch.no_grad():
        m[2].weight_orig[mask == 0] += 100.0
        torch.testing.assert_close(m(x), _chain(m, x, {2: w0 * mask}))


def test_old_style_spectral_norm_normalizes_the_used_weight() -> None:
    torch.manual_seed(0)
    m = MLP(5, 2, (12,))
    with torch.no_grad():
        m[0].weight.mul_(10.0)  # spectral norm well above 1
    nn.utils.spectral_norm(m[0], n_power_iterations=5)
    x = torch.randn(7, 5)
    for _ in range(20):  # training-mode forwards run the power iteration
        out = m(x)
    w_orig = m[0].weight_orig.detach()
    sigma = torch.linalg.matrix_norm(w_orig, ord=2)
    assert float(sigma) > 5.0
    # the forward used weight_orig / sigma (the hook's fresh weight), not a stale copy
    torch.testing.assert_close(out, _chain(m, x, {0: m[0].weight}), rtol=0, atol=0)
    torch.testing.assert_close(out, _chain(m, x, {0: w_orig / sigma}), rtol=1e-4, atol=1e-5)
    assert abs(float(torch.linalg.matrix_norm(m[0].weight.detach(), ord=2)) - 1.0) < 1e-3


def test_spectral_norm_parametrization_runs_once_per_forward() -> None:
    torch.manual_seed(0)
    m = MLP(5, 2, (12,))
    sn = nn.utils.parametrizations.spectral_norm(m[0]).parametrizations.weight
    x = torch.randn(7, 5)
    v0 = sn[0]._v.clone()
    out = m(x)
    w = sn.original.detach()
    # one power iteration in this (training-mode) forward, and the output uses its sigma
    u1 = F.normalize(w @ v0, dim=0, eps=1e-12)
    v1 = F.normalize(w.T @ u1, dim=0, eps=1e-12)
    torch.testing.assert_close(sn[0]._u, u1)
    torch.testing.assert_close(sn[0]._v, v1)
    torch.testing.assert_close(out, _chain(m, x, {0: w / (u1 @ w @ v1)}))


def test_parametrization_of_first_layer_evaluated_once_per_forward() -> None:
    """Finding the network's dtype/device must not evaluate a parametrized weight (for
    spectral norm that is an extra power iteration per forward)."""

    class Counted(nn.Module):
        calls = 0

        def forward(self, w: torch.Tensor) -> torch.Tensor:
            Counted.calls += 1
            return w * 2.0

    torch.manual_seed(0)
    m = MLP(5, 2, (12,))
    w = m[0].weight.detach().clone()
    parametrize.register_parametrization(m[0], "weight", Counted())
    Counted.calls = 0
    x = torch.randn(3, 5)
    out = m(x)
    assert Counted.calls == 1
    torch.testing.assert_close(out, _chain(m, x, {0: 2.0 * w}), rtol=0, atol=0)


def test_observer_like_hook_sees_activations() -> None:
    """An activation observer (as eager-mode quantization inserts) records each layer's
    output range through a forward hook."""

    class MinMax(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("lo", torch.tensor(float("inf")))
            self.register_buffer("hi", torch.tensor(float("-inf")))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.lo = torch.minimum(self.lo, x.detach().min())
            self.hi = torch.maximum(self.hi, x.detach().max())
            return x

    torch.manual_seed(0)
    m = MLP(4, 3, (8, 8))
    observers = {}
    for i in (0, 2, 4):
        obs = MinMax()
        m[i].add_module("activation_post_process", obs)
        m[i].register_forward_hook(lambda mod, inp, out: mod.activation_post_process(out))
        observers[i] = obs
    xs = [torch.randn(10, 4) for _ in range(3)]
    with torch.no_grad():
        for x in xs:
            m(x)
        # the activations, computed without calling the observed layers
        x = torch.cat(xs)
        h0 = F.linear(x, m[0].weight, m[0].bias)
        h2 = F.linear(h0.relu(), m[2].weight, m[2].bias)
        h4 = F.linear(h2.relu(), m[4].weight, m[4].bias)
    for i, h in ((0, h0), (2, h2), (4, h4)):
        assert float(observers[i].lo) == pytest.approx(float(h.min()))
        assert float(observers[i].hi) == pytest.approx(float(h.max()))


# -- 2. networks follow their own dtype ---------------------------------------------------
def _obs_batches(n: int, d: int) -> list[torch.Tensor]:
    return [
        torch.randn(n, d),
        torch.randn(n, d, dtype=torch.float64),
        torch.randint(0, 5, (n, d)),
        torch.randint(0, 255, (n, d), dtype=torch.uint8),
        torch.rand(n, d) > 0.5,
    ]


@pytest.mark.parametrize("dueling", [False, True])
def test_double_qnet(dueling: bool) -> None:
    q = QNet(4, 3, (8,), dueling=dueling).double()
    for obs in _obs_batches(5, 4):
        out = q(obs)
        assert out.dtype == torch.float64 and out.shape == (5, 3)
    obs64 = torch.randn(5, 4, dtype=torch.float64)
    q(obs64).sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float64 for p in q.parameters())


@pytest.mark.parametrize("state_dependent_std", [True, False])
def test_double_gaussian_actor(state_dependent_std: bool) -> None:
    a = GaussianActor(3, 2, (8,), state_dependent_std=state_dependent_std).double()
    for obs in _obs_batches(4, 3):
        loc, scale = a(obs)
        assert loc.dtype == scale.dtype == torch.float64
        assert loc.shape == scale.shape == (4, 2)


def test_double_and_bf16_other_networks() -> None:
    for obs in _obs_batches(4, 3):
        assert DeterministicActor(3, 2, (8,)).double()(obs).dtype == torch.float64
        assert DiscreteActor(3, 2, (8,)).double()(obs).dtype == torch.float64
        v = VCritic(3, (8,)).to(torch.bfloat16)(obs)
        assert v.dtype == torch.bfloat16 and v.shape == (4, 1)
        assert QNet(3, 2, (8,), dueling=True).to(torch.bfloat16)(obs).dtype == torch.bfloat16


def test_double_qcritic_and_features() -> None:
    c = QCritic(3, 2, (8,)).double()
    acts = [torch.randn(4, 2), torch.randn(4, 2, dtype=torch.float64), torch.randint(0, 2, (4, 2))]
    for obs in _obs_batches(4, 3):
        for act in acts:
            q = c(obs, act)
            assert q.dtype == torch.float64 and q.shape == (4, 1)
    obs = torch.randn(4, 3, dtype=torch.float64)
    act = torch.randn(4, 2, dtype=torch.float64)
    # the critic's forward keeps float64 precision end to end
    x = torch.cat([obs, act], -1)
    torch.testing.assert_close(c(obs, act), c.net[2](c.net[1](c.net[0](x))), rtol=0, atol=0)
    # the shared-input call used by SAC keeps working (float32 by default) ...
    shared = QCritic.features(obs, act)
    assert shared.dtype == torch.float32 and shared.shape == (4, 5)
    assert c.net(shared).dtype == torch.float64
    # ... and can be asked for the critic's dtype
    shared64 = QCritic.features(obs, act, torch.float64)
    assert shared64.dtype == torch.float64
    torch.testing.assert_close(c.net(shared64), c(obs, act), rtol=0, atol=0)
    assert QCritic.features(obs, act, dtype=torch.bfloat16).dtype == torch.bfloat16


def test_float32_networks_are_unchanged() -> None:
    """float32 models: outputs bit-identical to the plain float32 layer chain, inputs of
    any dtype cast to float32 first (as before)."""
    torch.manual_seed(0)
    m = MLP(6, 3, (16, 16))
    for obs in _obs_batches(9, 6):
        out = m(obs)
        assert out.dtype == torch.float32
        assert torch.equal(out, _chain(m, obs.float()))
    c = QCritic(3, 2, (8,))
    obs, act = torch.randn(4, 3, dtype=torch.float64), torch.randint(0, 2, (4, 2))
    x = torch.cat([obs.float(), act.float()], -1)
    assert torch.equal(c(obs, act), _chain(c.net, x))
    assert torch.equal(QCritic.features(obs, act), x)


def test_flattening_and_numpy_inputs() -> None:
    torch.manual_seed(0)
    m = MLP(6, 2, (4,)).double()
    img = torch.randint(0, 255, (3, 2, 3), dtype=torch.uint8)
    out = m(img)
    assert out.shape == (3, 2) and out.dtype == torch.float64
    torch.testing.assert_close(out, m(img.reshape(3, 6).double()), rtol=0, atol=0)
    arr = img.numpy()
    torch.testing.assert_close(m(arr), out, rtol=0, atol=0)  # type: ignore[arg-type]


def test_networks_without_float_parameters_fall_back_to_float32() -> None:
    empty = MLP(3, 0, ())  # no layers at all
    out = empty(torch.ones(2, 3, dtype=torch.int64))
    assert out.dtype == torch.float32 and torch.equal(out, torch.ones(2, 3))
    m = MLP(3, 0, (4,))
    m[0] = nn.Identity()  # parameterless layers only
    assert m(torch.ones(2, 3, dtype=torch.uint8)).dtype == torch.float32


def test_parameter_in_a_nested_child_sets_the_dtype() -> None:
    m = MLP(3, 2, (4,)).double()
    # the first layer wrapped in a container: its parameters are no direct child's
    m[0] = nn.Sequential(m[0])
    assert m(torch.zeros(2, 3)).dtype == torch.float64
