"""Tests for tdrl.utils.noisy: NoisyLinear and resample_noise.

Oracles: Tianshou 2.0.1's ``tianshou.utils.net.discrete.NoisyLinear`` and TorchRL's
``torchrl.modules.NoisyLinear``: same seed -> same initialisation and noise, same weights and
noise -> same outputs in training and eval mode.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from tdrl.utils.noisy import NoisyLinear, resample_noise


def f(x: torch.Tensor) -> torch.Tensor:
    return x.sign() * x.abs().sqrt()


def test_init_ranges_and_noise_draws() -> None:
    torch.manual_seed(0)
    p, q, std = 7, 5, 0.4
    layer = NoisyLinear(p, q, std)
    bound = 1 / math.sqrt(p)
    for mu in (layer.weight_mu, layer.bias_mu):
        assert (mu.abs() <= bound).all() and mu.abs().max() > 0.5 * bound
    for sigma in (layer.weight_sigma, layer.bias_sigma):
        torch.testing.assert_close(sigma, torch.full_like(sigma, std / math.sqrt(p)))
    # the construction's draws, replayed: U(mu_w), U(mu_b), then randn(p), randn(q)
    torch.manual_seed(0)
    w = torch.empty(q, p).uniform_(-bound, bound)
    b = torch.empty(q).uniform_(-bound, bound)
    e_in, e_out = f(torch.randn(p)), f(torch.randn(q))
    assert torch.equal(layer.weight_mu, w) and torch.equal(layer.bias_mu, b)
    assert torch.equal(layer.eps_in, e_in) and torch.equal(layer.eps_out, e_out)


def test_forward_formula_train_and_eval() -> None:
    torch.manual_seed(1)
    layer = NoisyLinear(4, 3)
    x = torch.randn(6, 4)
    w = layer.weight_mu + layer.weight_sigma * torch.outer(layer.eps_out, layer.eps_in)
    b = layer.bias_mu + layer.bias_sigma * layer.eps_out
    torch.testing.assert_close(layer(x), x @ w.T + b)
    torch.testing.assert_close(layer.weight, w)
    layer.eval()
    assert torch.equal(layer(x), torch.nn.functional.linear(x, layer.weight_mu, layer.bias_mu))
    assert layer.weight is layer.weight_mu and layer.bias is layer.bias_mu


def test_noise_only_on_sample() -> None:
    torch.manual_seed(2)
    layer = NoisyLinear(4, 3)
    x = torch.randn(2, 4)
    y = layer(x)
    assert torch.equal(y, layer(x))
    layer.sample_noise()
    y2 = layer(x)
    assert not torch.equal(y, y2)
    layer.reset_noise()
    assert not torch.equal(y2, layer(x))
    layer.eval()
    y_eval = layer(x)
    layer.sample_noise()
    assert torch.equal(y_eval, layer(x))


def test_seeding_global_and_generator() -> None:
    torch.manual_seed(3)
    a = NoisyLinear(5, 4)
    torch.manual_seed(3)
    b = NoisyLinear(5, 4)
    for (na, ta), (_, tb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(ta, tb), na
    # an explicit generator leaves the global stream alone
    torch.manual_seed(4)
    before = torch.get_rng_state()
    g1 = NoisyLinear(5, 4, generator=torch.Generator().manual_seed(9))
    assert torch.equal(before, torch.get_rng_state())
    g2 = NoisyLinear(5, 4, generator=torch.Generator().manual_seed(9))
    g1.sample_noise()
    g2.sample_noise()
    assert torch.equal(g1.eps_in, g2.eps_in) and torch.equal(g1.weight_mu, g2.weight_mu)
    g3 = copy.deepcopy(g1)  # the copy carries the generator's state
    g1.sample_noise()
    g3.sample_noise()
    assert torch.equal(g1.eps_out, g3.eps_out)


def test_dtype_and_device_follow() -> None:
    layer = NoisyLinear(3, 2).double()
    assert layer.eps_in.dtype == torch.float64 and layer.weight_mu.dtype == torch.float64
    layer.sample_noise()
    assert layer.eps_out.dtype == torch.float64
    assert layer(torch.ones(1, 3, dtype=torch.float64)).dtype == torch.float64
    layer = NoisyLinear(3, 2, dtype=torch.float64)
    assert layer.eps_in.dtype == torch.float64
    layer = layer.to(torch.float32)
    assert layer.eps_in.dtype == torch.float32 and layer(torch.ones(3)).shape == (2,)
    if torch.cuda.is_available():
        cuda = NoisyLinear(3, 2).cuda()
        cuda.sample_noise()
        assert cuda.eps_in.is_cuda and cuda(torch.ones(1, 3, device="cuda")).is_cuda


def test_state_dict_round_trip_reproduces_noise() -> None:
    a = NoisyLinear(4, 3)
    b = NoisyLinear(4, 3)
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 4)
    assert torch.equal(a(x), b(x))
    assert set(a.state_dict()) == {
        "weight_mu",
        "weight_sigma",
        "bias_mu",
        "bias_sigma",
        "eps_in",
        "eps_out",
    }


def test_gradients() -> None:
    layer = NoisyLinear(4, 3)
    layer(torch.randn(5, 4)).sum().backward()
    for p in layer.parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0
    assert not layer.eps_in.requires_grad
    layer.zero_grad()
    layer.eval()
    layer(torch.randn(5, 4)).sum().backward()
    assert layer.weight_sigma.grad is None and layer.weight_mu.grad is not None


def test_hooks_run() -> None:
    layer = NoisyLinear(4, 3)
    seen: list[str] = []
    layer.register_forward_pre_hook(lambda m, args: seen.append("pre"))
    layer.register_forward_hook(lambda m, args, out: seen.append("post"))
    layer(torch.zeros(1, 4))
    assert seen == ["pre", "post"]


def test_validation() -> None:
    with pytest.raises(ValueError, match=r"noisy_std must be >= 0, got -0\.1"):
        NoisyLinear(2, 2, -0.1)
    with pytest.raises(ValueError, match="in_features"):
        NoisyLinear(0, 2)
    with pytest.raises(ValueError, match="out_features"):
        NoisyLinear(2, 1.5)  # type: ignore[arg-type]
    assert "noisy_std=0.5" in repr(NoisyLinear(2, 3))


def test_resample_noise_counts_and_draws() -> None:
    torchrl_modules = pytest.importorskip("torchrl.modules")
    ours, theirs = NoisyLinear(4, 8), torchrl_modules.NoisyLinear(8, 2)
    net = nn.Sequential(ours, nn.ReLU(), theirs)
    before = (ours.eps_in.clone(), theirs.weight_epsilon.clone())
    assert resample_noise(net) == 2
    assert not torch.equal(before[0], ours.eps_in)
    assert not torch.equal(before[1], theirs.weight_epsilon)
    assert resample_noise(nn.Sequential(nn.Linear(2, 2))) == 0


# ----------------------------------------------------------------------------- oracles


@pytest.mark.parametrize(("p", "q"), [(6, 4), (3, 9)])
def test_matches_tianshou_noisy_linear(p: int, q: int) -> None:
    discrete = pytest.importorskip("tianshou.utils.net.discrete")
    torch.manual_seed(5)
    theirs = discrete.NoisyLinear(p, q, noisy_std=0.3)
    torch.manual_seed(5)
    ours = NoisyLinear(p, q, noisy_std=0.3)
    # same seed: identical initialisation and noise
    assert torch.equal(ours.weight_mu, theirs.mu_W) and torch.equal(ours.bias_mu, theirs.mu_bias)
    assert torch.equal(ours.weight_sigma, theirs.sigma_W)
    assert torch.equal(ours.bias_sigma, theirs.sigma_bias)
    assert torch.equal(ours.eps_in, theirs.eps_p) and torch.equal(ours.eps_out, theirs.eps_q)
    x = torch.randn(7, p)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-6)
    # same seed again for the next draw: Tianshou's sample() against our sample_noise()
    torch.manual_seed(6)
    theirs.sample()
    torch.manual_seed(6)
    ours.sample_noise()
    assert torch.equal(ours.eps_in, theirs.eps_p) and torch.equal(ours.eps_out, theirs.eps_q)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-6)
    ours.eval()
    theirs.eval()
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize(("p", "q"), [(6, 4), (3, 9)])
def test_matches_torchrl_noisy_linear(p: int, q: int) -> None:
    modules = pytest.importorskip("torchrl.modules")
    torch.manual_seed(7)
    theirs = modules.NoisyLinear(p, q, std_init=0.5, use_exploration_type=False)
    torch.manual_seed(7)
    ours = NoisyLinear(p, q, noisy_std=0.5)
    # same seed: same draws; TorchRL scales its bias sigma by 1/sqrt(out_features)
    assert torch.equal(ours.weight_mu, theirs.weight_mu)
    assert torch.equal(ours.bias_mu, theirs.bias_mu)
    assert torch.equal(ours.weight_sigma, theirs.weight_sigma)
    torch.testing.assert_close(theirs.bias_sigma, torch.full((q,), 0.5 / math.sqrt(q)))
    assert torch.equal(torch.outer(ours.eps_out, ours.eps_in), theirs.weight_epsilon)
    assert torch.equal(ours.eps_out, theirs.bias_epsilon)
    # same weights copied in (bias sigma included), same noise -> same outputs
    with torch.no_grad():
        theirs.bias_sigma.copy_(ours.bias_sigma)
    x = torch.randn(5, p)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-6)
    torch.manual_seed(8)
    theirs.reset_noise()
    torch.manual_seed(8)
    ours.reset_noise()
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-6)
    ours.eval()
    theirs.eval()
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-6)
