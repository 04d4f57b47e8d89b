"""tdrl.utils.tianshou_net: Tianshou 2.0's network classes with its keyword signatures.

Construction with the keywords Tianshou's test scripts use, output shapes and the
``(output, state)`` contract; then, against the installed Tianshou (skipped without it),
the same state-dict keys and shapes, and the same outputs after loading Tianshou's weights.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from tensordict import TensorDict
from torch import nn

from tdrl.algorithm.policy import call_model
from tdrl.utils.noisy import resample_noise
from tdrl.utils.tianshou_net import common, continuous, discrete
from tdrl.utils.tianshou_net.common import (
    MLP,
    ActionReprNet,
    ActionReprNetDataParallelWrapper,
    ActorCritic,
    BranchingNet,
    DataParallelNet,
    EnsembleLinear,
    ModuleWithVectorOutput,
    Net,
    Recurrent,
    miniblock,
)
from tdrl.utils.tianshou_net.continuous import (
    VAE,
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
    Perturbation,
    RecurrentActorProb,
    RecurrentCritic,
)
from tdrl.utils.tianshou_net.discrete import (
    DiscreteActor,
    DiscreteCritic,
    FractionProposalNetwork,
    FullQuantileFunction,
    ImplicitQuantileNetwork,
    IntrinsicCuriosityModule,
    NoisyLinear,
)

B, OBS, ACT = 5, 4, 2


# -- common -----------------------------------------------------------------------------
def test_mlp_layers_norms_activations_and_identity() -> None:
    mlp = MLP(input_dim=3, output_dim=6, hidden_sizes=[128])
    assert mlp(torch.rand(B, 3)).shape == (B, 6)
    ident = MLP(input_dim=6, output_dim=0)
    x = torch.rand(B, 6)
    assert torch.equal(ident(x), x) and ident.output_dim == 6
    norm_args: list[Any] = [{"eps": 1e-3}, ()]
    act_args: list[Any] = [None, (0.2,)]
    mlp = MLP(
        input_dim=4,
        hidden_sizes=[8, 8],
        norm_layer=[nn.LayerNorm, nn.BatchNorm1d],
        norm_args=norm_args,
        activation=[nn.Tanh, nn.LeakyReLU],
        act_args=act_args,
    )
    kinds = [type(m).__name__ for m in mlp.model]
    assert kinds == ["Linear", "LayerNorm", "Tanh", "Linear", "BatchNorm1d", "LeakyReLU"]
    assert mlp.model[1].eps == 1e-3 and mlp.model[5].negative_slope == 0.2  # type: ignore[union-attr]
    assert mlp.output_dim == 8 == mlp.get_output_dim()
    assert mlp(np.ones((B, 2, 2), dtype=np.int64)).shape == (B, 8)  # cast and flattened
    assert MLP(input_dim=3, hidden_sizes=[4], flatten_input=False)(torch.ones(2, 7, 3)).shape == (
        2,
        7,
        4,
    )
    with pytest.raises(ValueError, match="one per hidden layer"):
        MLP(input_dim=3, hidden_sizes=[4, 4], activation=[nn.ReLU])


def test_mlp_follows_dtype_and_miniblock() -> None:
    mlp = MLP(input_dim=3, output_dim=2, hidden_sizes=[4]).double()
    assert mlp(np.zeros((2, 3), np.float32)).dtype == torch.float64
    names = [type(m).__name__ for m in miniblock(3, 4, None, None, nn.ELU, {"alpha": 0.5})]
    assert names == ["Linear", "ELU"]


def test_net_variants_as_the_scripts_build_them() -> None:
    x = torch.rand(B, 10, 2)
    net = Net(
        state_shape=(10, 2),
        action_shape=(5,),
        hidden_sizes=[16, 16],
        norm_layer=nn.LayerNorm,
        activation=None,
    )
    out, state = net(x)
    assert out.shape == (B, 5) and state is None
    assert str(net).count("LayerNorm") == 2 and str(net).count("ReLU") == 0
    dueling = ({"hidden_sizes": [8]}, {"hidden_sizes": [8]})
    net = Net(state_shape=(10, 2), action_shape=5, hidden_sizes=[16], dueling_param=dueling)
    assert net(x)[0].shape == (B, 5) and net.output_dim == 5
    net = Net(state_shape=(10, 2), action_shape=5, hidden_sizes=[16], concat=True)
    assert net(torch.rand(B, 25))[0].shape == (B, 16) and net.output_dim == 16
    net = Net(state_shape=4, hidden_sizes=[16, 8])  # a feature net: no output layer
    assert net(torch.rand(B, 4))[0].shape == (B, 8) and net.get_output_dim() == 8
    net = Net(state_shape=4, action_shape=3, hidden_sizes=[8], num_atoms=7, softmax=True)
    probs, _ = net(torch.rand(B, 4))
    assert probs.shape == (B, 3, 7) and torch.allclose(probs.sum(-1), torch.ones(B, 3))
    assert net(torch.rand(B, 4), state="h")[1] == "h"  # the state passes through


def test_net_follows_the_call_model_contract() -> None:
    net = Net(state_shape=4, action_shape=3, hidden_sizes=[8])
    out, state = call_model(net, torch.zeros(2, 4), state=None, info={"x": 1})
    assert out.shape == (2, 3) and state is None


def test_recurrent_carries_a_batch_first_state() -> None:
    net = Recurrent(layer_num=2, state_shape=(4,), action_shape=3, hidden_layer_size=8)
    q, st = net(torch.rand(B, 6, 4))
    assert q.shape == (B, 3) and isinstance(st, TensorDict)
    assert st["hidden"].shape == st["cell"].shape == (B, 2, 8) and not st["hidden"].requires_grad
    q1, st1 = net(torch.rand(B, 4), state=st)
    assert q1.shape == (B, 3) and st1.batch_size == (B,)
    q2, _ = net(torch.rand(B, 4), state={"hidden": st["hidden"], "cell": st["cell"]})
    assert q2.shape == (B, 3)
    with pytest.raises(ValueError, match="'hidden' and 'cell'"):
        net(torch.rand(B, 4), state={"h": st["hidden"]})
    assert net.get_preprocess_net().get_output_dim() == 3


def test_branching_net_shape_and_centred_advantages() -> None:
    net = BranchingNet(
        state_shape=3,
        num_branches=4,
        action_per_branch=5,
        common_hidden_sizes=[8],
        value_hidden_sizes=[8],
        action_hidden_sizes=[8],
    )
    q, _ = net(torch.rand(B, 3))
    assert q.shape == (B, 4, 5)
    value = net.value(net.common(torch.zeros(1, 3)))
    torch.testing.assert_close(net(torch.zeros(1, 3))[0].mean(-1), value.expand(1, 4))
    with pytest.raises(ValueError, match="common_hidden_sizes"):
        BranchingNet(state_shape=3, num_branches=2)


def test_ensemble_linear_members_are_independent() -> None:
    layer = EnsembleLinear(3, 4, 2)
    x = torch.rand(B, 4)
    out = layer(x)
    assert out.shape == (3, B, 2)
    torch.testing.assert_close(out[1], x @ layer.weight[1] + layer.bias_weights[1])  # type: ignore[index]
    assert layer(torch.rand(3, B, 4)).shape == (3, B, 2)
    assert EnsembleLinear(3, 4, 2, bias=False).bias_weights is None
    assert float(layer.weight.detach().abs().max()) <= 0.5  # U(-1/sqrt(4), 1/sqrt(4))


def test_vector_output_adapter_and_abstract_bases() -> None:
    adapted = ModuleWithVectorOutput.from_module(nn.Linear(3, 7), 7)
    assert adapted.get_output_dim() == 7 and adapted(torch.zeros(1, 3)).shape == (1, 7)
    with pytest.raises(TypeError):
        ActionReprNet()  # type: ignore[abstract]
    ac = ActorCritic(nn.Linear(2, 2), nn.Linear(2, 1))
    assert sum(p.numel() for p in ac.parameters()) == 9


def test_data_parallel_wrappers_on_cpu() -> None:
    wrapped = ActionReprNetDataParallelWrapper(Net(state_shape=3, action_shape=2))
    out, state = wrapped(np.zeros((B, 3)), state="s")
    assert out.shape == (B, 2) and state == "s"
    assert DataParallelNet(DiscreteCritic(preprocess_net=Net(state_shape=3, hidden_sizes=[4])))(
        np.zeros((B, 3))
    ).shape == (B, 1)


# -- discrete ---------------------------------------------------------------------------
def test_discrete_actor_probs_or_logits_and_critic() -> None:
    net = Net(state_shape=OBS, hidden_sizes=[16])
    probs, hidden = DiscreteActor(preprocess_net=net, action_shape=3)(torch.rand(B, OBS))
    assert probs.shape == (B, 3) and hidden is None
    torch.testing.assert_close(probs.sum(-1), torch.ones(B))
    actor = DiscreteActor(
        preprocess_net=net, action_shape=3, hidden_sizes=[8], softmax_output=False
    )
    obs = torch.rand(B, OBS)
    logits, _ = actor(obs)
    torch.testing.assert_close(logits, actor.last(net(obs)[0]))  # the head's raw output
    assert actor.get_preprocess_net() is net
    critic = DiscreteCritic(preprocess_net=net, hidden_sizes=[8], last_size=3)
    assert critic(torch.rand(B, OBS)).shape == (B, 3)  # a tensor, not a pair
    # a preprocessing net of any kind: a plain module with output_dim
    plain = DiscreteActor(preprocess_net=MLP(input_dim=OBS, hidden_sizes=[6]), action_shape=2)
    assert plain(torch.rand(B, OBS))[0].shape == (B, 2)
    with pytest.raises(ValueError, match="preprocess_net"):
        DiscreteActor(preprocess_net=nn.Identity(), action_shape=2)


def test_implicit_quantile_network_contract_and_halves() -> None:
    feat = Net(state_shape=OBS, action_shape=16, hidden_sizes=[16])
    net = ImplicitQuantileNetwork(preprocess_net=feat, action_shape=3, num_cosines=8)
    assert net.input_dim == net.feature_dim == 16
    torch.manual_seed(1)
    (z, taus), hidden = net(torch.rand(B, OBS), sample_size=6)
    assert z.shape == (B, 3, 6) and taus.shape == (B, 6) and hidden is None
    x = torch.rand(B, OBS)
    torch.manual_seed(2)
    (z, taus), _ = net(x, sample_size=6)
    torch.testing.assert_close(net.quantiles(net.features(x), taus), z)


def test_full_quantile_function_contract() -> None:
    feat = Net(state_shape=OBS, action_shape=16, hidden_sizes=[16])
    net = FullQuantileFunction(
        preprocess_net=feat, action_shape=3, hidden_sizes=[16], num_cosines=8
    )
    fpn = FractionProposalNetwork(5, net.input_dim)
    (z, fr, z_tau), _ = net(torch.rand(B, OBS), propose_model=fpn)
    assert z.shape == (B, 3, 5) and z_tau is not None and z_tau.shape == (B, 3, 4)
    assert fr.taus.shape == (B, 6) and fr.tau_hats.shape == (B, 5) and fr.entropies.shape == (B,)
    net.eval()
    (z2, fr2, z_tau2), _ = net(torch.rand(B, OBS), propose_model=fpn, fractions=fr)
    assert z_tau2 is None and fr2 is fr and z2.shape == (B, 3, 5)


def test_noisy_linear_noise_modes_and_resampling() -> None:
    torch.manual_seed(0)
    layer = NoisyLinear(3, 4, noisy_std=0.5)
    assert {k for k, _ in layer.named_parameters()} == {"mu_W", "sigma_W", "mu_bias", "sigma_bias"}
    assert set(layer.state_dict()) == {"mu_W", "sigma_W", "mu_bias", "sigma_bias", "eps_p", "eps_q"}
    torch.testing.assert_close(layer.sigma_W, torch.full((4, 3), 0.5 / np.sqrt(3)))
    x = torch.ones(2, 3)
    noisy = layer(x)
    torch.testing.assert_close(layer(x), noisy)  # no new noise without sample()
    eps = layer.eps_q.clone()
    assert resample_noise(nn.Sequential(layer)) == 1
    assert not torch.equal(eps, layer.eps_q)
    layer.eval()
    torch.testing.assert_close(layer(x), x @ layer.mu_W.T + layer.mu_bias)
    net = Net(
        state_shape=3,
        action_shape=2,
        hidden_sizes=[8],
        linear_layer=functools.partial(NoisyLinear, noisy_std=0.1),
    )
    assert sum(isinstance(m, NoisyLinear) for m in net.modules()) == 2


def test_icm_module_error_and_inverse_logits() -> None:
    icm = IntrinsicCuriosityModule(
        feature_net=MLP(input_dim=OBS, output_dim=8, hidden_sizes=[8]),
        feature_dim=8,
        action_dim=3,
        hidden_sizes=[8],
    )
    err, act_hat = icm(np.zeros((B, OBS)), np.array([0, 1, 2, 0, 1]), np.ones((B, OBS)))
    assert err.shape == (B,) and act_hat.shape == (B, 3) and bool((err >= 0).all())
    # a feature net with Tianshou's (output, state) contract
    icm2 = IntrinsicCuriosityModule(
        feature_net=Net(state_shape=OBS, hidden_sizes=[8]), feature_dim=8, action_dim=3
    )
    assert icm2(torch.zeros(B, OBS), torch.zeros(B), torch.ones(B, OBS))[0].shape == (B,)


# -- continuous -------------------------------------------------------------------------
def _concat_net(hidden: list[int] | None = None, **kw: Any) -> Net:
    return Net(state_shape=OBS, action_shape=ACT, hidden_sizes=hidden or [16], concat=True, **kw)


def test_continuous_actors_and_critic() -> None:
    net = Net(state_shape=OBS, hidden_sizes=[16])
    act, hidden = ContinuousActorDeterministic(
        preprocess_net=net, action_shape=ACT, max_action=2.0
    )(torch.rand(B, OBS) * 50)
    assert act.shape == (B, ACT) and hidden is None and float(act.detach().abs().max()) <= 2.0
    actor = ContinuousActorProbabilistic(preprocess_net=net, action_shape=ACT)
    (mu, sigma), state = actor(torch.rand(B, OBS), state="s")
    assert mu.shape == sigma.shape == (B, ACT) and state == "s"
    torch.testing.assert_close(sigma, torch.ones(B, ACT))  # sigma_param starts at 0
    with pytest.warns(UserWarning, match="max_action"):
        unbounded = ContinuousActorProbabilistic(
            preprocess_net=net, action_shape=ACT, max_action=3.0, unbounded=True
        )
    assert unbounded.max_action == 1.0
    critic = ContinuousCritic(preprocess_net=_concat_net())
    assert critic(np.zeros((B, OBS)), np.zeros((B, ACT))).shape == (B, 1)
    v = ContinuousCritic(preprocess_net=Net(state_shape=OBS, hidden_sizes=[16]))
    assert v(torch.zeros(B, OBS)).shape == (B, 1)


def test_ensemble_critic_outputs_every_member() -> None:
    def linear(x: int, y: int) -> nn.Module:
        return EnsembleLinear(3, x, y)

    critic = ContinuousCritic(
        preprocess_net=_concat_net(linear_layer=linear), linear_layer=linear, flatten_input=False
    )
    assert critic(torch.rand(B, OBS), torch.rand(B, ACT)).shape == (3, B, 1)


def test_recurrent_actor_and_critic() -> None:
    actor = RecurrentActorProb(
        layer_num=3,
        state_shape=(OBS,),
        action_shape=(ACT,),
        conditioned_sigma=True,
        hidden_layer_size=8,
    )
    (mu, sigma), st = actor(torch.rand(B, OBS))
    assert mu.shape == sigma.shape == (B, ACT) and st["hidden"].shape == (B, 3, 8)
    assert actor(torch.rand(B, 7, OBS), state=st)[0][0].shape == (B, ACT)
    critic = RecurrentCritic(layer_num=3, state_shape=(OBS,), action_shape=(ACT,))
    assert critic(torch.rand(B, 8, OBS), torch.rand(B, ACT)).shape == (B, 1)
    assert RecurrentCritic(1, (OBS,))(torch.rand(B, 8, OBS)).shape == (B, 1)


def test_vae_and_perturbation() -> None:
    vae = VAE(
        encoder=MLP(input_dim=OBS + ACT, hidden_sizes=[16]),
        decoder=MLP(input_dim=OBS + 4, output_dim=ACT, hidden_sizes=[16]),
        hidden_dim=16,
        latent_dim=4,
        max_action=2.0,
    )
    recon, mean, std = vae(torch.rand(B, OBS), torch.rand(B, ACT))
    assert recon.shape == (B, ACT) and mean.shape == std.shape == (B, 4)
    assert float(vae.decode(torch.rand(B, OBS)).detach().abs().max()) <= 2.0
    xi = Perturbation(
        preprocess_net=MLP(input_dim=OBS + ACT, output_dim=ACT, hidden_sizes=[8]),
        max_action=1.0,
        phi=0.1,
    )
    a = torch.zeros(B, ACT)
    out = xi(torch.rand(B, OBS) * 10, a)
    assert out.shape == (B, ACT) and float(out.detach().abs().max()) <= 0.1 + 1e-6
    assert len({tuple(r.tolist()) for r in out}) > 1  # per-state perturbations


# -- against Tianshou ---------------------------------------------------------------------
def _namespaces() -> tuple[Any, Any]:
    pytest.importorskip("tianshou")
    import tianshou.utils.net.common as t_common
    import tianshou.utils.net.continuous as t_continuous
    import tianshou.utils.net.discrete as t_discrete

    ours = types.SimpleNamespace(common=common, discrete=discrete, continuous=continuous)
    theirs = types.SimpleNamespace(common=t_common, discrete=t_discrete, continuous=t_continuous)
    return ours, theirs


def _x(*shape: int, seed: int = 7) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


def _seeded(fn: Callable[..., Any], seed: int = 3) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        torch.manual_seed(seed)
        return fn(*args, **kwargs)

    return run


def _ensemble_critic(ns: Any) -> nn.Module:
    def linear(x: int, y: int) -> nn.Module:
        return ns.common.EnsembleLinear(3, x, y)

    net = ns.common.Net(
        state_shape=OBS, action_shape=ACT, hidden_sizes=[8], concat=True, linear_layer=linear
    )
    return ns.continuous.ContinuousCritic(
        preprocess_net=net, linear_layer=linear, flatten_input=False
    )


def _fqf(ns: Any) -> nn.Module:
    q = ns.discrete.FullQuantileFunction(
        preprocess_net=ns.common.Net(state_shape=OBS, action_shape=8, hidden_sizes=[8]),
        action_shape=3,
        hidden_sizes=[8],
        num_cosines=4,
    )
    return nn.ModuleDict({"q": q, "f": ns.discrete.FractionProposalNetwork(5, q.input_dim)})


def _fqf_out(m: Any) -> list[torch.Tensor]:
    (z, fr, z_tau), _ = m["q"](_x(B, OBS), propose_model=m["f"])
    taus, tau_hats, entropies = fr.taus, fr.tau_hats, fr.entropies
    return [z, taus, tau_hats, entropies, z_tau]


def _recurrent_out(m: Any) -> list[torch.Tensor]:
    q, st = m(_x(B, 3, OBS))
    q2, st2 = m(_x(B, OBS, seed=8), state=st)
    return [q, st["hidden"], st["cell"], q2, st2["hidden"]]


_DUELING = ({"hidden_sizes": [8]}, {"hidden_sizes": [8]})

CASES: dict[str, tuple[Callable[[Any], nn.Module], Callable[[Any], Any]]] = {
    "mlp": (
        lambda ns: ns.common.MLP(
            input_dim=OBS,
            output_dim=3,
            hidden_sizes=[8, 8],
            norm_layer=nn.LayerNorm,
            activation=[nn.Tanh, nn.ReLU],
        ),
        lambda m: m(_x(B, OBS)),
    ),
    "net": (
        lambda ns: ns.common.Net(state_shape=(2, 2), action_shape=3, hidden_sizes=[8, 8]),
        lambda m: m(_x(B, 2, 2))[0],
    ),
    "net_dueling_atoms_softmax": (
        lambda ns: ns.common.Net(
            state_shape=OBS,
            action_shape=3,
            hidden_sizes=[8],
            num_atoms=5,
            softmax=True,
            dueling_param=_DUELING,
        ),
        lambda m: m(_x(B, OBS))[0],
    ),
    "net_concat": (
        lambda ns: ns.common.Net(
            state_shape=OBS, action_shape=ACT, hidden_sizes=[8], concat=True, activation=nn.Tanh
        ),
        lambda m: m(_x(B, OBS + ACT))[0],
    ),
    "recurrent": (
        lambda ns: ns.common.Recurrent(
            layer_num=2, state_shape=OBS, action_shape=3, hidden_layer_size=8
        ),
        _recurrent_out,
    ),
    "branching": (
        lambda ns: ns.common.BranchingNet(
            state_shape=OBS,
            num_branches=3,
            action_per_branch=4,
            common_hidden_sizes=[8],
            value_hidden_sizes=[8],
            action_hidden_sizes=[8],
        ),
        lambda m: m(_x(B, OBS))[0],
    ),
    "ensemble_linear": (
        lambda ns: ns.common.EnsembleLinear(3, OBS, 2),
        lambda m: m(_x(B, OBS)),
    ),
    "discrete_actor": (
        lambda ns: ns.discrete.DiscreteActor(
            preprocess_net=ns.common.Net(state_shape=OBS, action_shape=8),
            action_shape=3,
            hidden_sizes=[8],
        ),
        lambda m: m(_x(B, OBS))[0],
    ),
    "discrete_critic": (
        lambda ns: ns.discrete.DiscreteCritic(
            preprocess_net=ns.common.Net(state_shape=OBS, hidden_sizes=[8]),
            hidden_sizes=[8],
            last_size=3,
        ),
        lambda m: m(_x(B, OBS)),
    ),
    "iqn": (
        lambda ns: ns.discrete.ImplicitQuantileNetwork(
            preprocess_net=ns.common.Net(state_shape=OBS, action_shape=8, hidden_sizes=[8]),
            action_shape=3,
            num_cosines=4,
        ),
        lambda m: _seeded(m)(_x(B, OBS), sample_size=6)[0],
    ),
    "fqf": (_fqf, _fqf_out),
    "noisy_linear": (
        lambda ns: ns.discrete.NoisyLinear(OBS, 3, noisy_std=0.3),
        lambda m: [m(_x(B, OBS)), m.eval()(_x(B, OBS))],
    ),
    "icm": (
        lambda ns: ns.discrete.IntrinsicCuriosityModule(
            feature_net=ns.common.MLP(input_dim=OBS, output_dim=8, hidden_sizes=[8]),
            feature_dim=8,
            action_dim=3,
            hidden_sizes=[8],
        ),
        lambda m: m(_x(B, OBS), torch.tensor([0, 1, 2, 1, 0]), _x(B, OBS, seed=9)),
    ),
    "actor_deterministic": (
        lambda ns: ns.continuous.ContinuousActorDeterministic(
            preprocess_net=ns.common.Net(state_shape=OBS, hidden_sizes=[8]),
            action_shape=ACT,
            hidden_sizes=[8],
            max_action=2.0,
        ),
        lambda m: m(_x(B, OBS))[0],
    ),
    "actor_prob": (
        lambda ns: ns.continuous.ContinuousActorProbabilistic(
            preprocess_net=ns.common.Net(state_shape=OBS, hidden_sizes=[8]),
            action_shape=ACT,
            max_action=2.0,
        ),
        lambda m: m(_x(B, OBS))[0],
    ),
    "actor_prob_conditioned": (
        lambda ns: ns.continuous.ContinuousActorProbabilistic(
            preprocess_net=ns.common.Net(state_shape=OBS, hidden_sizes=[8]),
            action_shape=ACT,
            unbounded=True,
            conditioned_sigma=True,
        ),
        lambda m: m(_x(B, OBS))[0],
    ),
    "critic": (
        lambda ns: ns.continuous.ContinuousCritic(
            preprocess_net=ns.common.Net(
                state_shape=OBS, action_shape=ACT, hidden_sizes=[8], concat=True
            ),
            hidden_sizes=[8],
        ),
        lambda m: m(_x(B, OBS), _x(B, ACT, seed=8)),
    ),
    "critic_ensemble": (_ensemble_critic, lambda m: m(_x(B, OBS), _x(B, ACT, seed=8))),
    "recurrent_actor_prob": (
        lambda ns: ns.continuous.RecurrentActorProb(
            layer_num=2, state_shape=(OBS,), action_shape=(ACT,), hidden_layer_size=8
        ),
        lambda m: [*m(_x(B, 3, OBS))[0], m(_x(B, OBS))[1]["hidden"]],
    ),
    "recurrent_critic": (
        lambda ns: ns.continuous.RecurrentCritic(2, (OBS,), (ACT,), 8),
        lambda m: m(_x(B, 3, OBS), _x(B, ACT, seed=8)),
    ),
    "perturbation": (
        lambda ns: ns.continuous.Perturbation(
            preprocess_net=ns.common.Net(state_shape=OBS + ACT, action_shape=ACT, hidden_sizes=[8]),
            max_action=1.0,
            phi=0.5,
        ),
        lambda m: m(_x(B, OBS), _x(B, ACT, seed=8) * 2 - 1),
    ),
    "vae": (
        lambda ns: ns.continuous.VAE(
            encoder=ns.common.MLP(input_dim=OBS + ACT, hidden_sizes=[8]),
            decoder=ns.common.MLP(input_dim=OBS + 3, output_dim=ACT, hidden_sizes=[8]),
            hidden_dim=8,
            latent_dim=3,
            max_action=2.0,
        ),
        lambda m: [*_seeded(m)(_x(B, OBS), _x(B, ACT, seed=8)), _seeded(m.decode)(_x(B, OBS))],
    ),
}


def _flat(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in _flat(o)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_state_dict_and_outputs_match_tianshou(case: str) -> None:
    """Same constructor arguments: the same state-dict keys and shapes (each side's state
    dict loads strictly into the other); after loading Tianshou's weights, the same outputs
    for the same input (and the same fractions / latent draws under the same seed)."""
    ours_ns, theirs_ns = _namespaces()
    build, run = CASES[case]
    torch.manual_seed(0)
    theirs = build(theirs_ns)
    ours = build(ours_ns)
    t_sd, o_sd = theirs.state_dict(), ours.state_dict()
    assert list(o_sd) == list(t_sd)
    assert all(o_sd[k].shape == t_sd[k].shape for k in t_sd)
    ours.load_state_dict(t_sd)
    theirs.load_state_dict(ours.state_dict())
    got, expected = _flat(run(ours)), _flat(run(theirs))
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, torch.as_tensor(e), rtol=1e-5, atol=1e-6)


def test_seeded_initialisation_matches_tianshou() -> None:
    """Layers that draw their own initial values draw them as Tianshou's do."""
    ours_ns, theirs_ns = _namespaces()
    for build in (
        lambda ns: ns.discrete.NoisyLinear(OBS, 3),
        lambda ns: ns.common.EnsembleLinear(3, OBS, 2),
    ):
        torch.manual_seed(11)
        theirs = build(theirs_ns)
        torch.manual_seed(11)
        ours = build(ours_ns)
        for k, v in theirs.state_dict().items():
            torch.testing.assert_close(ours.state_dict()[k], v)


def test_perturbation_with_a_plain_net_differs_from_tianshou_by_design() -> None:
    """Tianshou takes element 0 of a plain module's output (its first row) for every
    state; tdrl perturbs each state with its own row. Row 0 agrees."""
    ours_ns, theirs_ns = _namespaces()
    torch.manual_seed(0)
    build = lambda ns: ns.continuous.Perturbation(  # noqa: E731
        preprocess_net=ns.common.MLP(input_dim=OBS + ACT, output_dim=ACT, hidden_sizes=[8]),
        max_action=1.0,
        phi=0.5,
    )
    theirs, ours = build(theirs_ns), build(ours_ns)
    ours.load_state_dict(theirs.state_dict())
    s, a = _x(B, OBS), torch.zeros(B, ACT)
    got, expected = ours(s, a), theirs(s, a)
    torch.testing.assert_close(got[0], expected[0])
    assert torch.allclose(expected, expected[:1].expand(B, ACT))  # Tianshou: one row for all
    assert not torch.allclose(got, got[:1].expand(B, ACT))
