"""NPG: conjugate gradients, the Fisher-vector product, the natural-gradient step, the
critic iterations, TorchRL batches, the preset, and Tianshou 2.0.1 as the oracle."""

from __future__ import annotations

import copy
import warnings
from typing import Any
from unittest import mock

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict
from torch.distributions import Categorical, Independent, Normal, kl_divergence

import tdrl.algorithm.modelfree.npg as npg_module
from tdrl.algorithm.fisher import GaussNewtonFisher
from tdrl.algorithm.modelfree.npg import NPG, conjugate_gradients, flat_grad, set_flat_params
from tdrl.algorithm.policy_gradient import ActorPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.utils.net import DiscreteActor, GaussianActor, VCritic

OBS_DIM = 3


def rollout_data(
    continuous: bool, n_envs: int = 4, steps: int = 12, seed: int = 0
) -> list[dict[str, Any]]:
    """Random transitions, one dict per vector step."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        act = (
            rng.normal(size=(n_envs, 2)).astype(np.float32)
            if continuous
            else rng.integers(0, 3, n_envs)
        )
        out.append(
            dict(
                obs=rng.normal(size=(n_envs, OBS_DIM)).astype(np.float32),
                act=act,
                rew=rng.normal(size=n_envs).astype(np.float32),
                terminated=rng.random(n_envs) < 0.15,
                truncated=rng.random(n_envs) < 0.1,
                obs_next=rng.normal(size=(n_envs, OBS_DIM)).astype(np.float32),
            )
        )
    return out


def rollout(continuous: bool = False) -> VectorReplayBuffer:
    buf = VectorReplayBuffer(64, 4)
    for d in rollout_data(continuous):
        buf.add(Batch(**d))
    return buf


def make_npg(continuous: bool = False, cls: type[NPG] = NPG, **kw: Any) -> NPG:
    torch.manual_seed(0)
    if continuous:
        actor: torch.nn.Module = GaussianActor(OBS_DIM, 2, (8,), state_dependent_std=False)
        space: gym.Space = gym.spaces.Box(-1.0, 1.0, (2,))
    else:
        actor, space = DiscreteActor(OBS_DIM, 3, (8,)), gym.spaces.Discrete(3)
    policy = ActorPolicy(actor=actor, action_space=space)
    return cls(policy=policy, critic=VCritic(OBS_DIM, (8,)), **kw)


def minibatch(alg: NPG, continuous: bool = False) -> Batch:
    buf = rollout(continuous)
    idx = buf.sample_indices(0)
    return alg.preprocess(buf[idx], buf, idx)


# ----------------------------------------------------------------------------- helpers
def test_conjugate_gradients_solves_a_positive_definite_system() -> None:
    g = torch.Generator().manual_seed(0)
    m = torch.randn(6, 6, generator=g, dtype=torch.float64)
    a = m @ m.T + 0.5 * torch.eye(6, dtype=torch.float64)
    b = torch.randn(6, generator=g, dtype=torch.float64)
    x = conjugate_gradients(lambda v: a @ v, b, n_steps=6)
    torch.testing.assert_close(x, torch.linalg.solve(a, b))
    # b = 0: x = 0 at once, never 0 / 0
    calls: list[torch.Tensor] = []

    def matvec(v: torch.Tensor) -> torch.Tensor:
        calls.append(v)
        return a @ v

    zero = conjugate_gradients(matvec, torch.zeros(6, dtype=torch.float64), n_steps=6)
    assert torch.equal(zero, torch.zeros(6, dtype=torch.float64)) and not calls


def test_flat_grad_and_set_flat_params_round_trip() -> None:
    lin = torch.nn.Linear(3, 2)
    params = list(lin.parameters())
    flat = torch.arange(8, dtype=torch.float32)
    set_flat_params(params, flat)
    torch.testing.assert_close(torch.cat([p.reshape(-1) for p in params]), flat)
    g = flat_grad(lin(torch.ones(1, 3)).sum(), params)
    torch.testing.assert_close(g, torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]))


def _kl_hessian(alg: NPG, obs: torch.Tensor) -> torch.Tensor:
    """The Hessian of mean KL(pi_old || pi_theta) at theta = theta_old, by torch.func."""
    actor = alg.policy.actor
    names = [n for n, _ in actor.named_parameters()]
    shapes = [p.shape for p in actor.parameters()]
    theta = torch.cat([p.detach().reshape(-1) for p in actor.parameters()])
    with torch.no_grad():
        old = Categorical(logits=actor(obs))

    def kl(flat: torch.Tensor) -> torch.Tensor:
        parts, start = {}, 0
        for name, shape in zip(names, shapes):
            n = int(np.prod(shape))
            parts[name] = flat[start : start + n].reshape(shape)
            start += n
        logits = torch.func.functional_call(actor, parts, (obs,))
        return kl_divergence(old, Categorical(logits=logits)).mean()

    return torch.autograd.functional.hessian(kl, theta)


def test_fisher_vector_product_is_the_kl_hessian_plus_damping() -> None:
    torch.manual_seed(0)
    actor = torch.nn.Linear(OBS_DIM, 3)
    alg = NPG(
        policy=ActorPolicy(actor=actor, action_space=gym.spaces.Discrete(3)),
        critic=VCritic(OBS_DIM, (8,)),
        damping=0.3,
    )
    obs = torch.randn(10, OBS_DIM)
    td = Batch(obs=obs)
    params = list(actor.parameters())
    with torch.no_grad():
        old = alg.policy.dist(obs)[0]
    kl_grad = flat_grad(alg.kl(td, old), params, create_graph=True)
    v = torch.randn(12)
    h = _kl_hessian(alg, obs)
    torch.testing.assert_close(
        alg.fisher_vector_product(kl_grad, v, params), h @ v + 0.3 * v, atol=1e-6, rtol=1e-5
    )


def test_actor_step_moves_along_the_natural_gradient() -> None:
    torch.manual_seed(0)
    actor = torch.nn.Linear(OBS_DIM, 3)  # 12 parameters: 12 CG steps solve exactly
    alg = NPG(
        policy=ActorPolicy(actor=actor, action_space=gym.spaces.Discrete(3)),
        critic=VCritic(OBS_DIM, (8,)),
        trust_region_size=0.7,
        cg_iters=12,
    )
    n = 32
    td = Batch(
        obs=torch.randn(n, OBS_DIM),
        act=torch.randint(0, 3, (n,)),
        adv=torch.randn(n),
        returns=torch.randn(n),
        v_s=torch.zeros(n),
        logp_old=torch.zeros(n),
    )
    params = list(actor.parameters())
    before = torch.cat([p.detach().reshape(-1) for p in params])
    loss = alg.actor_losses(td)["loss_objective"]
    g = flat_grad(loss, params)
    fisher = _kl_hessian(alg, td["obs"]) + alg.damping * torch.eye(12)
    direction = -torch.linalg.solve(fisher, g)
    stats = alg.actor_step(td)
    after = torch.cat([p.detach().reshape(-1) for p in params])
    torch.testing.assert_close(after, before + 0.7 * direction, atol=1e-5, rtol=1e-4)
    assert stats["step_size"].item() == pytest.approx(0.7)
    assert stats["loss_objective"].item() == pytest.approx(loss.item())
    with torch.no_grad():
        new = alg.policy.dist(td["obs"])[0]
        old = Categorical(logits=torch.nn.functional.linear(td["obs"], *_unflatten(before)))
        expect_kl = kl_divergence(old, new).mean()
    assert stats["kl"].item() == pytest.approx(expect_kl.item(), rel=1e-5)


def _unflatten(flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return flat[:9].reshape(3, OBS_DIM), flat[9:]


def test_zero_policy_gradient_leaves_the_actor_unchanged() -> None:
    alg = make_npg(advantage_normalization=False)
    td = minibatch(alg)
    td["adv"] = torch.zeros_like(td["adv"])
    before = [p.detach().clone() for p in alg.policy.actor.parameters()]
    stats = alg.actor_step(td)
    for a, b in zip(before, alg.policy.actor.parameters()):
        assert torch.equal(a, b)
    assert stats["kl"].item() == 0.0


# ------------------------------------------------------------------------ the update
def test_advantages_are_normalized_over_the_whole_rollout() -> None:
    alg = make_npg()
    batch = minibatch(alg)
    assert batch["adv"].mean().abs().item() < 1e-6
    assert batch["adv"].std().item() == pytest.approx(1.0, rel=1e-5)
    raw = minibatch(make_npg(advantage_normalization=False))
    torch.testing.assert_close(batch["adv"], (raw["adv"] - raw["adv"].mean()) / raw["adv"].std())


@pytest.mark.parametrize("continuous", [False, True])
def test_update_steps_actor_then_critic_iterations(continuous: bool) -> None:
    buf = rollout(continuous)
    n = len(buf)
    alg = make_npg(continuous, optim_critic_iters=3)
    critic_steps: list[float] = []
    step = alg.optim.step

    def counting(loss: torch.Tensor) -> None:
        critic_steps.append(loss.item())
        step(loss)

    alg.optim.step = counting  # type: ignore[method-assign]
    actor0 = [p.detach().clone() for p in alg.policy.actor.parameters()]
    stats = alg.update(buf, batch_size=16, repeat=2)
    assert set(stats) == {
        "loss",
        "loss_objective",
        "loss_critic",
        "kl",
        "step_size",
        "gradient_steps",
    }
    minibatches = 2 * (n // 16)  # the short last minibatch is merged
    assert stats["gradient_steps"] == minibatches
    assert len(critic_steps) == 3 * minibatches
    assert stats["step_size"] == pytest.approx(0.5)
    assert stats["kl"] > 0 and all(np.isfinite(v) for v in stats.values())
    assert any(not torch.equal(a, b) for a, b in zip(actor0, alg.policy.actor.parameters()))
    assert not alg.policy.is_within_training_step


def test_critic_optimizer_holds_only_the_critic() -> None:
    alg = make_npg()
    held = {id(p) for g in alg.optim.optim.param_groups for p in g["params"]}
    assert held == {id(p) for p in alg.critic.parameters()}


def test_state_dict_round_trip() -> None:
    a = make_npg(True, return_scaling=True)
    a.update(rollout(True), batch_size=None, repeat=1)
    b = make_npg(True, return_scaling=True)
    b.load_state_dict(a.state_dict())
    obs = torch.randn(4, OBS_DIM)
    torch.testing.assert_close(b.policy.actor(obs)[0], a.policy.actor(obs)[0])
    torch.testing.assert_close(b.critic(obs), a.critic(obs))
    torch.testing.assert_close(b.ret_rms.var, a.ret_rms.var)


# ------------------------------------------------------------------- TorchRL layout
def _grads(alg: torch.nn.Module, term: torch.Tensor) -> set[str]:
    params = dict(alg.named_parameters())
    grads = torch.autograd.grad(term, list(params.values()), retain_graph=True, allow_unused=True)
    return {n for (n, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0}


def torchrl_batch(alg: NPG, n: int = 16, with_log_prob: bool = True) -> TensorDict:
    """A GymEnv-layout batch sampled by the policy (Box(-1, 1, (2,)) actions)."""
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    td = TensorDict({"observation": torch.randn(n, OBS_DIM)}, [n])
    with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
        alg.policy(td)
    td["next"] = TensorDict(
        {
            "observation": torch.randn(n, OBS_DIM),
            "reward": torch.randn(n, 1),
            "done": torch.zeros(n, 1, dtype=torch.bool),
            "terminated": torch.zeros(n, 1, dtype=torch.bool),
        },
        [n],
    )
    if not with_log_prob:
        del td["action_log_prob"]
    return td


@pytest.mark.parametrize("with_log_prob", [True, False])
def test_torchrl_batch_terms_reach_only_their_networks(with_log_prob: bool) -> None:
    alg = make_npg(True)
    alg.set_keys(observation="observation", action="action")
    td = torchrl_batch(alg, with_log_prob=with_log_prob)
    out = alg(td)
    assert set(out.keys()) == {"loss_objective", "loss_critic"}
    assert _grads(alg, out["loss_objective"]) == {
        n for n, _ in alg.named_parameters() if n.startswith("policy.actor.")
    }
    assert _grads(alg, out["loss_critic"]) == {
        n for n, _ in alg.named_parameters() if n.startswith("critic.")
    }
    # one-step TD advantages, normalized over the batch
    assert td["adv"].mean().abs().item() < 1e-5
    # the natural-gradient step works on the same batch
    before = [p.detach().clone() for p in alg.policy.actor.parameters()]
    stats = alg.actor_step(td)
    assert stats["kl"].item() > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, alg.policy.actor.parameters()))


# ----------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"optim_critic_iters": 0}, "optim_critic_iters: expected an int >= 1, got 0"),
        ({"cg_iters": 0}, "cg_iters: expected an int >= 1, got 0"),
        ({"trust_region_size": 0.0}, r"trust_region_size: expected a value > 0, got 0\.0"),
        ({"damping": -0.1}, r"damping: expected a value >= 0, got -0\.1"),
        ({"gae_lambda": 1.5}, r"gae_lambda: expected a value in \[0, 1\], got 1\.5"),
    ],
)
def test_argument_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_npg(**kwargs)


def test_missing_key_names_it() -> None:
    alg = make_npg()
    alg.set_keys(observation="observation", action="action")
    with pytest.raises(KeyError, match="the observation key 'observation' is missing"):
        alg(TensorDict({"obs": torch.zeros(2, OBS_DIM)}, [2]))


# --------------------------------------------------------------------------- preset
def test_preset_builds_npg_for_both_action_spaces() -> None:
    import tdrl

    alg = tdrl.make_algorithm("npg", "Pendulum-v1")
    assert type(alg).__name__ == "NPG" and alg.gamma == 0.95 and alg.return_scaling
    w = alg.policy.actor.trunk[0].weight
    torch.testing.assert_close(w.T @ w, torch.eye(w.shape[1]), atol=1e-5, rtol=0)  # orthogonal
    assert isinstance(alg.policy.actor.trunk[1], torch.nn.Tanh)
    assert type(tdrl.make_algorithm("npg", "CartPole-v1")).__name__ == "NPG"


# --------------------------------------------------------------------------- oracle
class SharedActor(torch.nn.Module):
    """An actor both libraries accept: ``actor(obs, state=None, info=None) -> (out, None)``."""

    def __init__(self, continuous: bool) -> None:
        super().__init__()
        self.net: torch.nn.Module = (
            GaussianActor(OBS_DIM, 2, (16,), state_dependent_std=False, activation=torch.nn.Tanh)
            if continuous
            else DiscreteActor(OBS_DIM, 3, (16,))
        )

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[Any, None]:
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


class SharedCritic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = VCritic(OBS_DIM, (16,))

    def forward(self, obs: Any, **kwargs: Any) -> torch.Tensor:
        return self.net(torch.as_tensor(obs, dtype=torch.float32))


def independent_normal(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Independent:
    return Independent(Normal(*loc_scale), 1)


def categorical(logits: torch.Tensor) -> Categorical:
    return Categorical(logits=logits)


def run_against_tianshou(
    ours_cls: type[NPG],
    peer_cls: Any,
    continuous: bool,
    repeat: int,
    batch_size: int | None = None,
    gauss_newton: bool = True,
    **kw: Any,
) -> dict[str, Any]:
    """Build both libraries' algorithm with the same weights on the same rollout and run
    one update of ``repeat`` passes over minibatches of ``batch_size`` (``None``: the
    whole rollout), shuffled in the same order on both sides; return what to compare."""
    from tianshou.algorithm.modelfree.reinforce import (
        DiscreteActorPolicy,
        ProbabilisticActorPolicy,
    )
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step

    torch.manual_seed(0)
    actor, critic = SharedActor(continuous), SharedCritic()
    space: gym.Space = gym.spaces.Box(-1.0, 1.0, (2,)) if continuous else gym.spaces.Discrete(3)
    dist_fn = independent_normal if continuous else categorical
    # tdrl's side gets the bare tdrl actor (same weights): its Gauss-Newton Fisher path
    ours = ours_cls(
        policy=ActorPolicy(actor=copy.deepcopy(actor).net, action_space=space, dist_fn=dist_fn),
        critic=copy.deepcopy(critic),
        optim=1e-3,
        gauss_newton=gauss_newton,
        **kw,
    )
    peer_policy: Any = ProbabilisticActorPolicy if continuous else DiscreteActorPolicy
    peer = peer_cls(
        policy=peer_policy(actor=copy.deepcopy(actor), action_space=space, dist_fn=dist_fn),
        critic=copy.deepcopy(critic),
        optim=AdamOptimizerFactory(lr=1e-3),
        **kw,
    )
    b_ours, b_peer = VectorReplayBuffer(64, 4), TVRB(64, 4)
    for d in rollout_data(continuous):
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))

    # the natural-gradient search directions, spied on both sides
    d_ours: list[torch.Tensor] = []
    d_peer: list[torch.Tensor] = []
    cg = npg_module.conjugate_gradients

    def spy_ours(*args: Any, **kwargs: Any) -> torch.Tensor:
        x = cg(*args, **kwargs)
        d_ours.append(-x.detach().clone())
        return x

    peer_cg = peer._conjugate_gradients

    def spy_peer(*args: Any, **kwargs: Any) -> torch.Tensor:
        x = peer_cg(*args, **kwargs)
        d_peer.append(-x.detach().clone())
        return x

    peer._conjugate_gradients = spy_peer
    # Tianshou shuffles each pass with np.random.permutation: replay its permutations
    n = len(b_ours)
    np.random.seed(1234)
    perms = iter([torch.as_tensor(np.random.permutation(n)) for _ in range(repeat)])
    np.random.seed(1234)
    npg_module.conjugate_gradients = spy_ours  # type: ignore[assignment]
    try:
        with mock.patch("torch.randperm", side_effect=lambda _: next(perms)):
            got = ours.update(b_ours, batch_size, repeat=repeat)
    finally:
        npg_module.conjugate_gradients = cg
    with policy_within_training_step(peer.policy), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Tianshou warns on every backtrack
        expected = peer.update(b_peer, batch_size, repeat)
    return {
        "got": got,
        "expected": expected,
        "directions": (d_ours, d_peer),
        "params": (
            list(ours.parameters()),
            [*peer.policy.actor.parameters(), *peer.critic.parameters()],
        ),
    }


def assert_matches_tianshou(r: dict[str, Any], steps: int) -> None:
    """Losses, KL, search directions and parameters to 1e-5 after ``steps`` minibatches."""
    got, expected = r["got"], r["expected"]
    assert got["gradient_steps"] == steps
    assert got["loss_objective"] == pytest.approx(expected.actor_loss.mean, abs=1e-5, rel=1e-5)
    assert got["loss_critic"] == pytest.approx(expected.vf_loss.mean, abs=1e-5, rel=1e-5)
    assert got["kl"] == pytest.approx(expected.kl.mean, abs=1e-5, rel=1e-5)
    d_ours, d_peer = r["directions"]
    assert len(d_ours) == len(d_peer) == steps
    for a, b in zip(d_ours, d_peer):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    for a, b in zip(*r["params"], strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    ("continuous", "batch_size", "steps", "gauss_newton"),
    [
        (False, None, 2, True),
        (True, None, 2, True),
        (True, 20, 4, True),  # 48 samples: minibatches 20 + 28
        (False, None, 2, False),  # the KL's double backward, as Tianshou computes F v
        (True, None, 2, False),
    ],
)
def test_update_matches_tianshou_exactly(
    continuous: bool,
    batch_size: int | None,
    steps: int,
    gauss_newton: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("tianshou")
    from tianshou.algorithm import NPG as TNPG

    kw = dict(
        gamma=0.95,
        gae_lambda=0.9,
        return_scaling=True,
        advantage_normalization=True,
        optim_critic_iters=3,
        trust_region_size=0.3,
    )
    products: list[int] = []
    product = GaussNewtonFisher.product

    def spy(self: GaussNewtonFisher, *args: Any) -> Any:
        products.append(1)
        return product(self, *args)

    monkeypatch.setattr(GaussNewtonFisher, "product", spy)
    r = run_against_tianshou(
        NPG, TNPG, continuous, repeat=2, batch_size=batch_size, gauss_newton=gauss_newton, **kw
    )
    assert len(products) == (steps if gauss_newton else 0)  # the path under test ran
    assert_matches_tianshou(r, steps)
    assert r["got"]["step_size"] == pytest.approx(0.3)  # NPG's fixed step


# ------------------------------------------------------------------------ convergence
@pytest.mark.slow
def test_npg_reaches_pendulum_threshold(tmp_path: Any) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="npg",
            task="Pendulum-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= -250.0
