"""The Gauss-Newton Fisher-vector product against the KL's double backward (Tianshou's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torch.distributions import Categorical, Independent, Normal, kl_divergence

from tdrl.algorithm.fisher import GaussNewtonFisher
from tdrl.utils.net import MLP, DiscreteActor, GaussianActor


def normal(z: Any) -> Independent:
    return Independent(Normal(z[0], z[1]), 1)


def categorical(z: torch.Tensor) -> Categorical:
    return Categorical(logits=z)


def double_backward(
    actor: nn.Module, obs: torch.Tensor, dist_fn: Callable[[Any], Any], v: torch.Tensor
) -> torch.Tensor:
    """``H v`` of ``mean KL(pi_old || pi_theta)`` at ``pi_old = pi_theta``, as Tianshou."""
    params = [p for p in actor.parameters() if p.requires_grad]
    with torch.no_grad():
        old = dist_fn(actor(obs))
    kl = kl_divergence(old, dist_fn(actor(obs))).mean()
    grads = torch.autograd.grad(kl, params, create_graph=True)
    flat = torch.cat([g.reshape(-1) for g in grads])
    hv = torch.autograd.grad((flat * v).sum(), params)
    return torch.cat([h.reshape(-1) for h in hv])


def gauss_newton(
    actor: nn.Module, obs: torch.Tensor, dist_fn: Callable[[Any], Any], v: torch.Tensor
) -> torch.Tensor:
    params = [p for p in actor.parameters() if p.requires_grad]
    fisher = GaussNewtonFisher.for_actor(actor)
    assert fisher is not None
    with fisher.recording():
        z = actor(obs)
    detached = tuple(t.detach() for t in z) if isinstance(z, tuple) else z.detach()
    old = dist_fn(detached)
    return fisher.product(z, params, dist_fn, lambda new: kl_divergence(old, new).mean())(v)


def gaussian(**kw: Any) -> GaussianActor:
    return GaussianActor(5, 3, (16, 8), state_dependent_std=False, **kw)


ACTORS: dict[str, tuple[Callable[[], nn.Module], Callable[[Any], Any]]] = {
    "gaussian tanh": (lambda: gaussian(activation=nn.Tanh), normal),
    "gaussian relu": (lambda: gaussian(activation=nn.ReLU), normal),
    "gaussian bounded loc": (lambda: gaussian(activation=nn.Tanh, bounded_loc=True), normal),
    "discrete tanh": (lambda: DiscreteActor(5, 4, (16, 8)), categorical),
    "discrete relu": (lambda: DiscreteActor(5, 4, (16,), activation=nn.ReLU), categorical),
    "mlp output activation": (lambda: MLP(5, 4, (8,), nn.Tanh, nn.Tanh), categorical),
}


@pytest.mark.parametrize("name", list(ACTORS))
@pytest.mark.parametrize("frozen", [None, "first layer", "log_std"])
def test_product_is_the_kl_hessian_product(name: str, frozen: str | None) -> None:
    build, dist_fn = ACTORS[name]
    torch.manual_seed(0)
    actor = build().double()
    if frozen == "first layer":
        first = next(m for m in actor.modules() if isinstance(m, nn.Linear))
        first.weight.requires_grad_(False)
    elif frozen == "log_std":
        if not isinstance(actor, GaussianActor):
            pytest.skip("no log std")
        assert isinstance(actor.log_std, nn.Parameter)
        actor.log_std.data.normal_()
        actor.log_std.requires_grad_(False)
    obs = torch.randn(32, 5, dtype=torch.float64)
    n = sum(p.numel() for p in actor.parameters() if p.requires_grad)
    for _ in range(3):
        v = torch.randn(n, dtype=torch.float64)
        expected = double_backward(actor, obs, dist_fn, v)
        torch.testing.assert_close(gauss_newton(actor, obs, dist_fn, v), expected)


def test_an_output_the_distribution_ignores() -> None:
    """A fixed scale: the actor's ``scale`` output never reaches the KL."""

    def fixed_scale(z: Any) -> Independent:
        return Independent(Normal(z[0], torch.ones_like(z[0])), 1)

    torch.manual_seed(2)
    actor = gaussian(activation=nn.Tanh).double()
    obs = torch.randn(16, 5, dtype=torch.float64)
    params = [p for p in actor.parameters() if p is not actor.log_std]
    actor.log_std.requires_grad_(False)
    v = torch.randn(sum(p.numel() for p in params), dtype=torch.float64)
    expected = double_backward(actor, obs, fixed_scale, v)
    torch.testing.assert_close(gauss_newton(actor, obs, fixed_scale, v), expected)


def test_float32_agrees_to_rounding() -> None:
    torch.manual_seed(1)
    actor = gaussian(activation=nn.Tanh)
    obs = torch.randn(256, 5)
    v = torch.randn(sum(p.numel() for p in actor.parameters()))
    expected = double_backward(actor, obs, normal, v)
    torch.testing.assert_close(gauss_newton(actor, obs, normal, v), expected, rtol=1e-5, atol=1e-6)


def test_other_actors_take_the_autograd_path() -> None:
    assert GaussNewtonFisher.for_actor(GaussianActor(3, 2, (8,))) is None  # state-dependent
    assert GaussNewtonFisher.for_actor(nn.Sequential(nn.Linear(3, 2))) is None
    assert GaussNewtonFisher.for_actor(MLP(3, 2, (8,), nn.ELU)) is None  # unknown activation

    class Doubled(MLP):
        def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            return 2 * super().forward(x)

    assert GaussNewtonFisher.for_actor(Doubled(3, 2, (8,))) is None
    hooked = DiscreteActor(3, 2, (8,))
    handle = hooked[0].register_forward_hook(lambda m, a, out: out * 2)
    assert GaussNewtonFisher.for_actor(hooked) is None
    handle.remove()
    assert GaussNewtonFisher.for_actor(hooked) is not None
    handle = nn.modules.module.register_module_forward_hook(lambda m, a, out: None)
    try:
        assert GaussNewtonFisher.for_actor(hooked) is None  # a global hook
    finally:
        handle.remove()


def test_recording_leaves_no_hooks_behind() -> None:
    actor = gaussian(activation=nn.Tanh)
    fisher = GaussNewtonFisher.for_actor(actor)
    assert fisher is not None
    with fisher.recording():
        actor(torch.randn(2, 5))
    assert all(not m._forward_hooks for m in actor.modules())
    assert GaussNewtonFisher.for_actor(actor) is not None
