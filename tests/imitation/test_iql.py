"""IQL: the paper's equations checked by hand on tiny fixed networks, stage order, TorchRL
layout, argument checks, the preset and convergence from gathered data."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import OptimizerFactory, make_batch
from tdrl.algorithm.imitation.iql import IQL, IQLPolicy, expectile_loss
from tdrl.data.batch import Batch
from tdrl.data.buffer import ReplayBuffer

BOX = gym.spaces.Box(-2.0, 2.0, (1,))

# a batch of three transitions, one terminal
S = np.array([0.5, -1.0, 2.0])
A = np.array([0.3, -0.6, 0.9])
R = np.array([1.0, -0.5, 0.25])
TERM = np.array([0.0, 1.0, 0.0])
S2 = np.array([1.5, 0.0, -0.5])
GAMMA = 0.9


class _Q(torch.nn.Module):
    """``Q(s, a) = w_s s + w_a a + b``."""

    def __init__(self, ws: float, wa: float, b: float) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 1).double()
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([[ws, wa]], dtype=torch.float64))
            self.lin.bias.fill_(b)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.cat([obs.double(), act.double()], -1))


class _V(torch.nn.Module):
    """``V(s) = c s + d``."""

    def __init__(self, c: float, d: float) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(1, 1).double()
        with torch.no_grad():
            self.lin.weight.fill_(c)
            self.lin.bias.fill_(d)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.lin(obs.double())


class _Pi(torch.nn.Module):
    """``pi(a | s) = N(tanh(k s), sigma)``."""

    def __init__(self, k: float, log_sigma: float) -> None:
        super().__init__()
        self.k = torch.nn.Parameter(torch.tensor(k, dtype=torch.float64))
        self.log_sigma = torch.nn.Parameter(torch.tensor([log_sigma], dtype=torch.float64))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loc = torch.tanh(self.k * obs.double())
        return loc, self.log_sigma.exp().expand_as(loc)


Q1 = (0.8, -0.5, 0.1)
Q2 = (0.6, 0.4, -0.2)
V0 = (0.3, 0.05)
PI = (0.7, math.log(0.5))


def _iql(beta: float = 2.0, expectile: float = 0.7, lr: float = 0.1, **kw: Any) -> IQL:
    sgd = OptimizerFactory(torch.optim.SGD, lr=lr)
    return IQL(
        policy=IQLPolicy(actor=_Pi(*PI), action_space=BOX, deterministic_eval=True),
        policy_optim=sgd,
        critic=_Q(*Q1),
        critic2=_Q(*Q2),
        critic_optim=sgd,
        value=_V(*V0),
        value_optim=sgd,
        gamma=GAMMA,
        expectile=expectile,
        beta=beta,
        **kw,
    )


def _batch() -> Batch:
    return make_batch(
        {
            "obs": torch.tensor(S).reshape(3, 1),
            "act": torch.tensor(A).reshape(3, 1),
            "rew": torch.tensor(R),
            "terminated": torch.tensor(TERM),
            "obs_next": torch.tensor(S2).reshape(3, 1),
        },
        3,
    )


def _q(params: tuple[float, float, float], s: np.ndarray, a: np.ndarray) -> np.ndarray:
    return params[0] * s + params[1] * a + params[2]


def _hand(
    beta: float, tau: float, v: tuple[float, float] = V0, max_w: float = 100.0
) -> dict[str, Any]:
    """The paper's losses, by hand in NumPy."""
    qmin = np.minimum(_q(Q1, S, A), _q(Q2, S, A))
    vs = v[0] * S + v[1]
    u = qmin - vs
    lv = np.mean(np.where(u < 0, 1 - tau, tau) * u**2)
    y = R + GAMMA * (1 - TERM) * (v[0] * S2 + v[1])
    lq = np.mean((_q(Q1, S, A) - y) ** 2 + (_q(Q2, S, A) - y) ** 2)
    w = np.minimum(np.exp(beta * u), max_w)
    loc, sigma = np.tanh(PI[0] * S), math.exp(PI[1])
    logp = -0.5 * ((A - loc) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2 * math.pi)
    return {"u": u, "loss_value": lv, "loss_qvalue": lq, "loss_actor": -np.mean(w * logp), "w": w}


# ------------------------------------------------------------------------------ by hand
@pytest.mark.parametrize(("beta", "tau"), [(2.0, 0.7), (0.0, 0.5), (3.0, 0.9)])
def test_losses_match_the_papers_equations(beta: float, tau: float) -> None:
    alg = _iql(beta=beta, expectile=tau)
    out = alg(_batch())
    hand = _hand(beta, tau)
    assert (hand["u"] > 0).any() and (hand["u"] < 0).any()  # both sides of the expectile
    for key in ("loss_value", "loss_qvalue", "loss_actor"):
        assert out[key].item() == pytest.approx(hand[key], rel=1e-9), key


def test_advantage_weights_are_clipped() -> None:
    alg = _iql(beta=40.0, max_weight=100.0)
    hand = _hand(40.0, 0.7)
    assert hand["w"].max() == 100.0 and hand["w"].min() < 100.0
    assert alg(_batch())["loss_actor"].item() == pytest.approx(hand["loss_actor"], rel=1e-9)
    assert alg(_batch())["adv_weight"].item() == pytest.approx(hand["w"].mean(), rel=1e-9)


def test_update_order_value_then_critics_with_the_new_value() -> None:
    """One update with SGD(0.1): the value step comes first, and the critics' target
    ``r + gamma (1 - term) V(s')`` uses the value after that step (Algorithm 1)."""
    lr, tau = 0.1, 0.7
    alg = _iql(lr=lr, expectile=tau)
    buf = ReplayBuffer.from_data(
        S.reshape(3, 1), A.reshape(3, 1), R, TERM.astype(bool), np.zeros(3, bool),
        TERM.astype(bool), S2.reshape(3, 1),
    )  # fmt: skip
    batch = _batch()
    got = alg._update_with_batch(batch, 3, 1)
    hand = _hand(2.0, tau)
    u = hand["u"]
    wgt = np.where(u < 0, 1 - tau, tau)
    grad_c, grad_d = np.mean(-2 * wgt * u * S), np.mean(-2 * wgt * u)
    v_new = (V0[0] - lr * grad_c, V0[1] - lr * grad_d)
    # (the update logs its terms as float32)
    assert got["loss_value"] == pytest.approx(hand["loss_value"], rel=1e-6)
    assert got["loss_qvalue"] == pytest.approx(_hand(2.0, tau, v=v_new)["loss_qvalue"], rel=1e-6)
    # the actor's advantage uses the new value too (the reference implementation's order)
    assert got["loss_actor"] == pytest.approx(_hand(2.0, tau, v=v_new)["loss_actor"], rel=1e-6)
    value: Any = alg.value
    torch.testing.assert_close(
        value.lin.weight.reshape(()), torch.tensor(v_new[0], dtype=torch.float64)
    )
    # targets: soft update after the critics' step (default tau 0.005)
    critic: Any = alg.critics[0]
    online = critic.lin.weight.detach()
    target = alg.critics_old[0].lin.weight.detach()
    torch.testing.assert_close(target, 0.995 * torch.tensor([Q1[:2]]).double() + 0.005 * online)
    assert len(buf) == 3 and alg.update(buf, 3)["loss_value"] > 0


def test_expectile_loss() -> None:
    u = torch.tensor([-2.0, -0.5, 0.0, 1.0, 3.0])
    tau = 0.8
    expected = torch.tensor([0.2 * 4, 0.2 * 0.25, 0.0, 0.8, 0.8 * 9])
    torch.testing.assert_close(expectile_loss(u, tau), expected)
    # tau = 0.5: half the squared error, V tends to the mean of Q
    torch.testing.assert_close(expectile_loss(u, 0.5), 0.5 * u**2)


def test_expectile_value_tends_to_an_upper_expectile() -> None:
    """Fitting a constant V to samples of Q by the expectile loss gives their expectile:
    above the mean for tau > 0.5."""
    q = torch.tensor([0.0, 1.0, 2.0, 10.0])
    v = torch.zeros((), requires_grad=True)
    opt = torch.optim.Adam([v], lr=0.1)
    for _ in range(2000):
        opt.zero_grad()
        expectile_loss(q - v, 0.9).mean().backward()
        opt.step()
    # the 0.9-expectile solves 0.9 sum_{q>v}(q - v) = 0.1 sum_{q<v}(v - q)
    v = v.detach()
    above, below = (q - v).clamp(min=0).sum(), (v - q).clamp(min=0).sum()
    assert float(0.9 * above) == pytest.approx(float(0.1 * below), abs=1e-3)
    assert v.item() > q.mean().item()


def test_torchrl_layout_terms_reach_their_own_parameters() -> None:
    alg = _iql()
    alg.set_keys(observation="observation", action="action")
    n = 6
    td = TensorDict(
        {
            "observation": torch.randn(n, 1, dtype=torch.float64),
            "action": torch.rand(n, 1, dtype=torch.float64) * 4 - 2,
            "next": {
                "observation": torch.randn(n, 1, dtype=torch.float64),
                "reward": torch.randn(n, 1, dtype=torch.float64),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.rand(n, 1) < 0.3,
            },
        },
        [n],
    )
    out = alg(td)
    params = dict(alg.named_parameters())

    def reached(term: torch.Tensor) -> set[str]:
        grads = torch.autograd.grad(
            term, list(params.values()), allow_unused=True, retain_graph=True
        )
        return {k for (k, _), g in zip(params.items(), grads, strict=True) if g is not None}

    assert reached(out["loss_value"]) == {"value.lin.weight", "value.lin.bias"}
    assert reached(out["loss_qvalue"]) and all(
        k.startswith("critics.") for k in reached(out["loss_qvalue"])
    )
    assert reached(out["loss_actor"]) == {"policy.actor.k", "policy.actor.log_sigma"}
    # the policy acts with its mean when evaluating, in the env's range
    with torch.no_grad():
        acted = alg.policy(TensorDict({"observation": torch.tensor([[1.0]])}, [1]))
    assert acted["action"].item() == pytest.approx(2.0 * math.tanh(0.7), rel=1e-6)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"expectile: expected a value in \(0, 1\), got 1.0"):
        _iql(expectile=1.0)
    with pytest.raises(ValueError, match=r"beta: expected a value >= 0, got -1\.0"):
        _iql(beta=-1.0)
    with pytest.raises(ValueError, match=r"max_weight: expected a value > 0, got 0"):
        _iql(max_weight=0)
    with pytest.raises(ValueError, match="policy: expected an ActorPolicy, got Linear"):
        IQL(policy=torch.nn.Linear(1, 1), critic=_Q(*Q1), value=_V(*V0))  # type: ignore[arg-type]
    discrete = IQLPolicy(actor=torch.nn.Linear(1, 2), action_space=gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match="policy: expected a policy over a Box action space"):
        IQL(policy=discrete, critic=_Q(*Q1), value=_V(*V0))


# ------------------------------------------------------------------------------ preset
def test_preset_builds_a_gaussian_policy_with_a_tanh_mean() -> None:
    from tdrl import registry
    from tdrl.presets.iql import build

    p: Any = registry.preset("iql", "Pendulum-v1")
    assert registry.entry("iql", "Pendulum-v1").trainer == "offline"
    alg = build(p, gym.spaces.Box(-1, 1, (3,)), BOX)
    loc, scale = alg.policy.actor(torch.randn(5, 3) * 100)
    assert loc.abs().max() <= 1.0 and scale.shape == loc.shape


@pytest.mark.slow
def test_preset_reaches_pendulum_threshold(pendulum_dataset: str, tmp_path: Path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="iql",
        task="Pendulum-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        dataset=pendulum_dataset,
        stop_reward=-300.0,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= -300.0
