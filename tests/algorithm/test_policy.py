"""Policy / Algorithm bases: action mapping, eval switch, optimizers, target updates."""

from __future__ import annotations

import copy
import io

import gymnasium as gym
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tensordict import TensorDict
from tensordict.nn import TensorDictModuleBase
from torchrl.objectives import HardUpdate, SoftUpdate

from tdrl.algorithm.base import (
    AdamOptimizerFactory,
    Algorithm,
    GradStep,
    OptimizerFactory,
    Policy,
    make_batch,
    within_training_step,
)
from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.modelfree.ppo import ActorPolicy
from tdrl.algorithm.target import FastHardUpdate, FastSoftUpdate
from tdrl.utils.net import DiscreteActor, GaussianActor, QNet


def _box_policy(low: np.ndarray, high: np.ndarray, bound: str | None, scaling: bool = True):
    space = gym.spaces.Box(low.astype(np.float32), high.astype(np.float32))
    return ActorPolicy(
        actor=GaussianActor(2, len(low), (4,)),
        action_space=space,
        action_scaling=scaling,
        action_bound_method=bound,
    )


bounds = st.lists(st.tuples(st.floats(-5, 5), st.floats(0.1, 5)), min_size=1, max_size=3).map(
    lambda lw: (np.array([a for a, _ in lw]), np.array([a + w for a, w in lw]))
)


@settings(max_examples=40, deadline=None)
@given(lh=bounds, seed=st.integers(0, 10_000))
def test_map_action_round_trip_clip(lh: tuple[np.ndarray, np.ndarray], seed: int) -> None:
    low, high = lh
    p = _box_policy(low, high, "clip")
    raw = np.random.default_rng(seed).uniform(-1, 1, size=(6, len(low)))
    env_act = p.map_action(raw)
    assert np.all(env_act >= low.astype(np.float32) - 1e-5)
    assert np.all(env_act <= high.astype(np.float32) + 1e-5)
    np.testing.assert_allclose(p.map_action_inverse(env_act), raw, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(lh=bounds, seed=st.integers(0, 10_000))
def test_map_action_round_trip_tanh(lh: tuple[np.ndarray, np.ndarray], seed: int) -> None:
    low, high = lh
    p = _box_policy(low, high, "tanh")
    raw = np.random.default_rng(seed).uniform(-2, 2, size=(6, len(low)))
    np.testing.assert_allclose(p.map_action_inverse(p.map_action(raw)), raw, atol=1e-4)


def test_map_action_clips_and_accepts_tensors() -> None:
    p = _box_policy(np.array([-2.0]), np.array([2.0]), "clip")
    out = p.map_action(torch.tensor([[-5.0], [0.25], [9.0]]))
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out.ravel(), [-2.0, 0.5, 2.0])
    # no scaling: bound only
    q = _box_policy(np.array([-2.0]), np.array([2.0]), "clip", scaling=False)
    np.testing.assert_allclose(q.map_action(np.array([[3.0]])), [[1.0]])


def test_map_action_is_identity_for_discrete() -> None:
    p = DQNPolicy(model=QNet(2, 3, (4,)), action_space=gym.spaces.Discrete(3))
    a = np.array([0, 2, 1])
    np.testing.assert_array_equal(p.map_action(a), a)
    np.testing.assert_array_equal(p.map_action_inverse(torch.tensor(a)), a)


def test_policy_argument_errors() -> None:
    box = gym.spaces.Box(-1.0, 1.0, (1,))
    with pytest.raises(
        ValueError, match="action_bound_method: expected 'clip', 'tanh' or None, got 'sigmoid'"
    ):
        ActorPolicy(actor=GaussianActor(2, 1), action_space=box, action_bound_method="sigmoid")
    with pytest.raises(ValueError, match="action_scaling: expected False for a Discrete"):
        Policy(gym.spaces.Discrete(2), action_scaling=True)
    with pytest.raises(ValueError, match=r"action_space: expected .*got Text"):
        Policy(gym.spaces.Text(3))
    p = _box_policy(np.array([-2.0]), np.array([2.0]), None)
    with pytest.raises(ValueError, match=r"act: action scaling expects raw actions in \[-1, 1\]"):
        p.map_action(np.array([[1.5]]))


def test_policy_is_a_tensordict_module() -> None:
    from tensordict.nn import TensorDictModule, TensorDictSequential

    p = DQNPolicy(model=QNet(4, 2, (8,)), action_space=gym.spaces.Discrete(2))
    assert isinstance(p, TensorDictModuleBase)
    assert p.in_keys == ["obs"] and p.out_keys == ["act"]
    # Tianshou style: a Batch in, a new Batch out
    b = make_batch({"obs": torch.zeros(5, 4)}, 5)
    out = p(b)
    assert out is not b and "act" in out and "act" not in b
    # TorchRL style: a plain TensorDict is written in place, so TorchRL containers compose it
    td = TensorDict({"observation": torch.zeros(5, 4)}, [5])
    pre = TensorDictModule(lambda x: x + 1.0, in_keys=["observation"], out_keys=["obs"])
    res = TensorDictSequential(pre, p)(td)
    assert res is td and {"obs", "act", "logits"} <= set(td.keys())
    assert td["act"].shape == (5,)


def test_deterministic_eval_switch() -> None:
    torch.manual_seed(0)
    actor = DiscreteActor(3, 4, (8,))
    p = ActorPolicy(actor=actor, action_space=gym.spaces.Discrete(4), deterministic_eval=True)
    obs = torch.randn(200, 3)
    batch = make_batch({"obs": obs}, 200)
    greedy = actor(obs).argmax(-1)
    with torch.inference_mode():
        assert torch.equal(p(batch)["act"], greedy)  # outside training: the mode
        assert p.deterministic
        with within_training_step(p):
            assert not p.deterministic
            sampled = p(batch)["act"]
    assert not torch.equal(sampled, greedy)  # inside training: sampled
    p.deterministic_eval = False
    assert not p.deterministic


def test_compute_action_discrete_and_continuous() -> None:
    p = DQNPolicy(model=QNet(4, 2, (8,)), action_space=gym.spaces.Discrete(2))
    a = p.compute_action(np.zeros(4, dtype=np.float64))
    assert isinstance(a, int) and a in (0, 1)
    c = _box_policy(np.array([-2.0, 0.0]), np.array([2.0, 1.0]), "clip")
    c.deterministic_eval = True
    ac = c.compute_action(np.zeros(2))
    assert isinstance(ac, np.ndarray) and ac.shape == (2,)
    assert -2.0 <= ac[0] <= 2.0 and 0.0 <= ac[1] <= 1.0


def test_exploration_noise_base_is_identity_and_alias() -> None:
    p = _box_policy(np.array([-1.0]), np.array([1.0]), "clip")
    a = np.array([[0.3]])
    assert p.exploration_noise(a, make_batch({}, 1)) is a
    assert p.add_exploration_noise(a, make_batch({}, 1)) is a


def test_optimizer_factory_and_grad_clipping() -> None:
    with pytest.raises(TypeError, match="optim: expected an OptimizerFactory or a float lr"):
        OptimizerFactory.coerce("adam")  # type: ignore[arg-type]
    assert isinstance(OptimizerFactory.coerce(0.1), AdamOptimizerFactory)
    w = torch.nn.Parameter(torch.zeros(3))
    opt, _ = OptimizerFactory(torch.optim.SGD, lr=1.0).create([w])
    gs = GradStep(opt, [w], max_grad_norm=0.5)
    gs.step((w * torch.tensor([30.0, 40.0, 0.0])).sum())  # gradient norm 50
    torch.testing.assert_close(w.detach(), torch.tensor([-0.3, -0.4, 0.0]))


@pytest.mark.parametrize("max_grad_norm", [None, 0.1])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_gradstep_fast_fused_adam_matches_optimizer_step(
    max_grad_norm: float | None, weight_decay: float
) -> None:
    """GradStep's direct fused-Adam call and lean clipping give bit-identical parameters and
    optimizer state to ``clip_grad_norm_`` + ``Adam(fused=True).step()``."""
    torch.manual_seed(0)
    net_a = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    net_b = copy.deepcopy(net_a)
    kw = {"lr": 1e-2, "fused": True, "weight_decay": weight_decay}
    opt_a = torch.optim.Adam(net_a.parameters(), **kw)
    opt_b = torch.optim.Adam(net_b.parameters(), **kw)
    fast = GradStep(opt_a, list(net_a.parameters()), max_grad_norm=max_grad_norm)
    for _ in range(5):
        x = torch.randn(16, 3)
        fast.step(net_a(x).pow(2).sum())
        opt_b.zero_grad()
        net_b(x).pow(2).sum().backward()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(net_b.parameters(), max_grad_norm, foreach=True)
        opt_b.step()
    for pa, pb in zip(net_a.parameters(), net_b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)
    sa, sb = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
    for k in sb:
        for name in ("step", "exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(sa[k][name], sb[k][name], rtol=0, atol=0)


def test_gradstep_cached_adam_lists_follow_missing_grads_and_reloaded_state() -> None:
    """The reused kernel lists stay bit-identical to ``Adam(fused=True).step()`` when a
    parameter has no gradient in a step (its counter does not advance) and after
    ``load_state_dict`` swaps the optimizer's state (the lists are rebuilt)."""
    torch.manual_seed(1)
    net_a = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    net_b = copy.deepcopy(net_a)
    opt_a = torch.optim.Adam(net_a.parameters(), lr=1e-2, fused=True)
    opt_b = torch.optim.Adam(net_b.parameters(), lr=1e-2, fused=True)
    fast = GradStep(opt_a, list(net_a.parameters()))

    def loss(net: torch.nn.Module, x: torch.Tensor, head_only: bool) -> torch.Tensor:
        h = net[1](net[0](x))
        return net[2](h.detach() if head_only else h).pow(2).sum()

    for t in range(8):
        x = torch.randn(16, 3)
        head_only = t in (3, 4)  # the first layer gets no gradient in these steps
        for p in net_a[0].parameters():
            p.grad = None
        fast.step(
            loss(net_a, x, head_only),
        )
        opt_b.zero_grad(set_to_none=True)
        loss(net_b, x, head_only).backward()
        opt_b.step()
        if t == 5:  # a checkpoint round trip replaces the state object
            saved = io.BytesIO()
            torch.save(opt_a.state_dict(), saved)
            saved.seek(0)
            opt_a.load_state_dict(torch.load(saved))
    for pa, pb in zip(net_a.parameters(), net_b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)
    sa, sb = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
    assert [float(sb[k]["step"]) for k in sb] == [6.0, 6.0, 8.0, 8.0]
    for k in sb:
        for name in ("step", "exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(sa[k][name], sb[k][name], rtol=0, atol=0)


def test_gradstep_falls_back_to_optimizer_step_with_hooks() -> None:
    """A step hook on the optimizer disables the direct kernel call, so the hook runs."""
    w = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.Adam([w], lr=0.1, fused=True)
    calls: list[int] = []
    opt.register_step_post_hook(lambda *_: calls.append(1))
    gs = GradStep(opt, [w])
    for _ in range(3):
        gs.step(w.sum())
    assert len(calls) == 3


def test_lr_scheduler_steps_per_update_and_state_dict() -> None:
    from tests.algorithm.fakebuf import FakeVectorBuffer

    factory = OptimizerFactory(torch.optim.SGD, lr=0.1).with_lr_scheduler(
        lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5)
    )
    buf = FakeVectorBuffer(20, 1)
    for t in range(6):
        buf.add(
            {
                "obs": np.ones((1, 2), np.float32),
                "act": np.array([t % 2]),
                "rew": np.ones(1, np.float32),
                "terminated": np.array([t == 5]),
                "truncated": np.array([False]),
                "obs_next": np.ones((1, 2), np.float32),
            }
        )
    alg = DQN(
        policy=DQNPolicy(model=QNet(2, 2, (4,)), action_space=gym.spaces.Discrete(2)), optim=factory
    )
    alg.update(buf, 4)
    alg.update(buf, 4)
    assert alg.optim.optim.param_groups[0]["lr"] == pytest.approx(0.025)
    sd = alg.state_dict()
    alg2 = DQN(
        policy=DQNPolicy(model=QNet(2, 2, (4,)), action_space=gym.spaces.Discrete(2)), optim=factory
    )
    alg2.load_state_dict(sd)
    assert alg2.optim.optim.param_groups[0]["lr"] == pytest.approx(0.025)
    assert alg2.lr_schedulers[0].last_epoch == 2
    assert alg2.n_updates == 2


class _TwoNets(Algorithm):
    a: torch.nn.Module
    a_params: TensorDict
    target_a_params: TensorDict

    def __init__(self) -> None:
        super().__init__(Policy(gym.spaces.Discrete(2)))
        self.net = torch.nn.Linear(3, 2)
        self.a_old = self._add_target(self.net, "a")


def _perturb(module: torch.nn.Module) -> None:
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn_like(p))


def test_fast_soft_update_matches_torchrl_exactly() -> None:
    torch.manual_seed(0)
    fast, ref = _TwoNets(), _TwoNets()
    ref.load_state_dict(fast.state_dict())
    _perturb(fast.net)
    ref.net.load_state_dict(fast.net.state_dict())
    FastSoftUpdate(fast, tau=0.1).step()
    SoftUpdate(ref, tau=0.1).step()
    for k in ("weight", "bias"):
        torch.testing.assert_close(fast.target_a_params[k], ref.target_a_params[k])
    # the target module computes with the updated target parameters
    x = torch.randn(4, 3)
    expected = torch.nn.functional.linear(
        x, fast.target_a_params["weight"], fast.target_a_params["bias"]
    )
    torch.testing.assert_close(fast.a_old(x), expected)


def test_fast_hard_update_matches_torchrl_schedule() -> None:
    torch.manual_seed(0)
    fast, ref = _TwoNets(), _TwoNets()
    ref.load_state_dict(fast.state_dict())
    uf = FastHardUpdate(fast, value_network_update_interval=2)
    ur = HardUpdate(ref, value_network_update_interval=2)
    for _ in range(7):
        _perturb(fast.net)
        ref.net.load_state_dict(fast.net.state_dict())
        uf.step()
        ur.step()
        torch.testing.assert_close(fast.target_a_params["weight"], ref.target_a_params["weight"])
        assert uf.counter == ur.counter


def test_presets_build_and_update() -> None:
    from tdrl.algorithm.presets import DQN_CARTPOLE, PPO_CARTPOLE, SAC_PENDULUM
    from tests.algorithm.fakebuf import FakeVectorBuffer

    for preset in (DQN_CARTPOLE, PPO_CARTPOLE, SAC_PENDULUM):
        env = gym.make(preset.task)
        alg = preset.build(env.observation_space, env.action_space)
        buf = FakeVectorBuffer(40, 2)
        obs, _ = env.reset(seed=0)
        for t in range(8):
            act = env.action_space.sample()
            nxt, rew, term, trunc, _ = env.step(act)
            buf.add(
                {
                    "obs": np.stack([obs, obs]),
                    "act": np.stack([act, act]),
                    "rew": np.array([rew, rew], np.float32),
                    "terminated": np.array([term] * 2),
                    "truncated": np.array([trunc or t == 7] * 2),
                    "obs_next": np.stack([nxt, nxt]),
                }
            )
            obs = nxt
        stats = alg.update(buf, 8, 1)
        assert stats and all(np.isfinite(v) for v in stats.values())
        assert set(preset.trainer_kwargs()) >= {"max_epochs", "step_per_epoch", "batch_size"}
