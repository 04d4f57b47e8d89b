"""The networks skip ``nn.Module.__call__`` only where it does nothing
(:func:`tdrl.utils.net.apply_layers`, :func:`tdrl.utils.net.call_module`).

Hooks of every kind, parametrizations, pruning masks, compiled layers, ``functional_call``
and TensorDict's ``to_module`` must see what they see with ``__call__``.
"""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch import nn
from torch.nn.modules import module as module_mod
from torch.nn.utils import parametrize, prune

from tdrl.utils.net import MLP, QCritic, QNet, apply_layers, call_module
from tdrl.utils.net_quantile import ImplicitQuantileNetwork
from tdrl.utils.net_rainbow import RainbowNet


def _mlp() -> MLP:
    torch.manual_seed(0)
    return MLP(3, 2, (4, 4))


def _reference(m: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    for layer in m:
        x = layer(x)
    return x


X = torch.randn(5, 3)


def test_a_forward_hook_on_a_layer_runs_and_can_change_its_output() -> None:
    m = _mlp()
    plain = m(X)
    seen: list[str] = []

    def double(mod: nn.Module, inp: tuple[torch.Tensor], out: torch.Tensor) -> torch.Tensor:
        seen.append(type(mod).__name__)
        return out * 2

    m[4].register_forward_hook(double)
    out = m(X)
    assert seen == ["Linear"]
    assert torch.equal(out, 2 * plain)
    assert torch.equal(out, _reference(m, X))


def test_a_forward_pre_hook_on_an_activation_runs() -> None:
    m = _mlp()
    m[1].register_forward_pre_hook(lambda mod, inp: (inp[0] - 100.0,))  # ReLU sees < 0
    out = m(X)
    after_dead_relu = m[4](m[3](m[2](torch.zeros(5, 4))))
    assert torch.allclose(out, after_dead_relu)


def test_a_global_forward_hook_sees_every_layer() -> None:
    m = _mlp()
    seen: list[str] = []
    handle = module_mod.register_module_forward_hook(
        lambda mod, inp, out: seen.append(type(mod).__name__)
    )
    try:
        m(X)
    finally:
        handle.remove()
    assert seen == ["Linear", "ReLU", "Linear", "ReLU", "Linear", "MLP"]


def test_a_full_backward_hook_on_a_layer_runs() -> None:
    m = _mlp()
    grads: list[torch.Tensor] = []
    m[0].register_full_backward_hook(lambda mod, gin, gout: grads.append(gout[0]))
    m(X.clone().requires_grad_()).sum().backward()
    assert len(grads) == 1 and grads[0].shape == (5, 4)


def test_pruning_and_parametrizations_apply() -> None:
    m = _mlp()
    prune.l1_unstructured(m[0], "weight", amount=0.5)  # a forward pre-hook and a mask
    parametrize.register_parametrization(m[4], "weight", _Zero())  # a new class of layer
    out = m(X)
    assert torch.equal(out, _reference(m, X))
    assert torch.equal(out, m[4].bias.expand(5, 2))


class _Zero(nn.Module):
    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(w)


def test_functional_call_and_to_module_swap_the_parameters() -> None:
    m = _mlp()
    zeros = {k: torch.zeros_like(v) for k, v in m.state_dict().items()}
    assert torch.equal(torch.func.functional_call(m, zeros, (X,)), torch.zeros(5, 2))
    params = TensorDict.from_module(m).apply(torch.zeros_like)
    with params.to_module(m):
        assert torch.equal(m(X), torch.zeros(5, 2))
    assert not torch.equal(m(X), torch.zeros(5, 2))  # restored


def test_an_inplace_relu_and_unknown_layers_still_apply() -> None:
    layers = [nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Tanh(), nn.Linear(4, 1)]
    assert torch.equal(apply_layers(X, layers), nn.Sequential(*layers)(X))


def test_a_compiled_layer_is_called_as_a_module(monkeypatch: pytest.MonkeyPatch) -> None:
    lin = nn.Linear(3, 2)
    calls: list[int] = []
    monkeypatch.setattr(lin, "_compiled_call_impl", lambda x: calls.append(1) or lin.forward(x))
    assert torch.equal(call_module(lin, X), lin.forward(X))
    assert torch.equal(apply_layers(X, [lin]), lin.forward(X))
    assert calls == [1, 1]


@pytest.mark.parametrize(
    "make",
    [
        lambda: QNet(3, 2, hidden_sizes=(4,), dueling=True),
        lambda: ImplicitQuantileNetwork(3, 2, hidden_sizes=(4, 4), num_cosines=5),
        lambda: RainbowNet(3, 2, num_atoms=5, hidden_sizes=(4,)),
    ],
)
def test_hooks_on_inner_modules_of_the_networks_run(make: object) -> None:
    torch.manual_seed(0)
    net = make()  # type: ignore[operator]
    seen: list[str] = []
    for name, sub in net.named_modules():
        if name:
            sub.register_forward_hook(lambda mod, inp, out, name=name: seen.append(name))
    args = (X, torch.rand(5, 6)) if isinstance(net, ImplicitQuantileNetwork) else (X,)
    net(*args)
    expected = {name for name, sub in net.named_modules() if name}
    assert set(seen) == expected


def test_a_critic_hook_runs() -> None:
    critic = QCritic(3, 1, (4,))
    seen: list[int] = []
    critic.net.register_forward_hook(lambda mod, inp, out: seen.append(out.shape[0]))
    critic(X, torch.zeros(5, 1))
    assert seen == [5]


def test_a_noisy_layer_reads_swapped_parameters_and_noise() -> None:
    from tdrl.utils.noisy import NoisyLinear

    torch.manual_seed(0)
    layer = NoisyLinear(3, 2)
    zeros = {k: torch.zeros_like(v) for k, v in layer.state_dict().items()}
    assert torch.equal(torch.func.functional_call(layer, zeros, (X,)), torch.zeros(5, 2))
    expected = (
        X @ (layer.weight_mu + layer.weight_sigma * torch.outer(layer.eps_out, layer.eps_in)).T
    )
    assert torch.allclose(layer(X), expected + layer.bias_mu + layer.bias_sigma * layer.eps_out)

    class Scaled(NoisyLinear):  # a subclass reads its tensors through getattr
        pass

    torch.manual_seed(0)
    sub = Scaled(3, 2)
    assert torch.equal(sub(X), layer(X))


def test_the_cosine_frequencies_follow_the_fractions_dtype() -> None:
    net = ImplicitQuantileNetwork(3, 2, hidden_sizes=(4,), num_cosines=5)
    f32 = net(X, torch.rand(5, 6))
    assert f32.dtype == torch.float32
    net = net.double()
    taus = torch.rand(5, 6, dtype=torch.float64)
    cos = torch.cos(taus.unsqueeze(-1) * (torch.pi * torch.arange(1, 6, dtype=torch.float64)))
    expected = net.embed_model.net(cos)
    assert torch.equal(net.embed_model(taus), expected)
