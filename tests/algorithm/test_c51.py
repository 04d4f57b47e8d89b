"""C51: the projected n-step target over episode boundaries, cross-entropy, PER, TorchRL
layout, argument checks, the Tianshou oracle and the CartPole preset."""

from __future__ import annotations

import copy
import io
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import OptimizerFactory, make_batch, within_training_step
from tdrl.algorithm.distributional import categorical_projection
from tdrl.algorithm.modelfree.c51 import C51, C51Policy
from tdrl.utils.net_distributional import DistributionalQNet
from tests.algorithm.fakebuf import FakePrioBuffer, FakeVectorBuffer

SUPPORT = torch.linspace(-10.0, 10.0, 21)  # atoms -10..10, spacing 1


class PointMass(torch.nn.Module):
    """Action ``a`` puts all its mass on the atom nearest ``obs[0] + shift[a]``."""

    support: torch.Tensor

    def __init__(self, shift: list[float], support: torch.Tensor = SUPPORT) -> None:
        super().__init__()
        self.shift = torch.nn.Parameter(torch.tensor(shift))
        self.register_buffer("support", support)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        value = obs[:, :1] + self.shift  # [B, A]
        idx = (value.unsqueeze(-1) - self.support).abs().argmin(-1)  # [B, A]
        return torch.nn.functional.one_hot(idx, self.support.numel()).float()


def _policy(model: torch.nn.Module, n: int = 2, **kw: Any) -> C51Policy:
    kw = {"num_atoms": 21, "v_min": -10.0, "v_max": 10.0, **kw}
    return C51Policy(model=model, action_space=gym.spaces.Discrete(n), **kw)


def _add(buf: Any, obs, act, rew, term, trunc, obs_next) -> None:  # type: ignore[no-untyped-def]
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


def _episode_buffer() -> Any:
    """Steps 0-2 terminate at 2, 3-4 are truncated at 4, 5-6 are unfinished; obs_next = t + 1."""
    buf = FakeVectorBuffer(10, 1)
    term = [0, 0, 1, 0, 0, 0, 0]
    trunc = [0, 0, 0, 0, 1, 0, 0]
    for t in range(7):
        _add(buf, [[t]], [0], [0.5], [bool(term[t])], [bool(trunc[t])], [[t + 1.0]])
    return buf


def test_expected_q_and_greedy_action() -> None:
    probs = torch.tensor([[[0.5, 0.5, 0.0], [0.0, 0.2, 0.8]]])
    net = torch.nn.Sequential(torch.nn.Flatten(0), torch.nn.Unflatten(0, (1, 2, 3)))
    policy = C51Policy(
        model=net, action_space=gym.spaces.Discrete(2), num_atoms=3, v_min=-1, v_max=1
    )
    torch.testing.assert_close(policy.q_from_output(probs), torch.tensor([[-0.5, 0.8]]))
    out = policy(make_batch({"obs": probs.reshape(1, 6)}, 1))
    assert out["act"].tolist() == [1]
    torch.testing.assert_close(out["logits"], torch.tensor([[-0.5, 0.8]]))


def test_nstep_target_bootstraps_at_the_last_state_of_the_chain() -> None:
    # p'(s') is a point mass at obs_next of the chain's last step (action 0; action 1 is
    # worse), so the target is that atom shifted by R and scaled by d, then projected
    alg = C51(policy=_policy(PointMass([0.0, -5.0])), gamma=0.5, n_step=3)
    buf = _episode_buffer()
    idx = np.arange(7)
    batch = alg.preprocess(buf[idx], buf, idx)
    target = alg.target_distribution(batch)
    g = 0.5
    r3, r2 = 0.5 * (1 + g + g * g), 0.5 * (1 + g)
    # (R, d, bootstrap obs_next) per row, by the episode rules (tests/algorithm/test_dqn.py)
    rows = [(r3, 0.0, 3.0), (r2, 0.0, 3.0), (0.5, 0.0, 3.0), (r2, g**2, 5.0), (0.5, g, 5.0)]
    rows += [(r2, g**2, 7.0), (0.5, g, 7.0)]
    for t, (r, d, z) in enumerate(rows):
        one_hot = SUPPORT.eq(z).float()[None]
        expected = categorical_projection(one_hot, torch.tensor([r]), torch.tensor([d]), SUPPORT)
        torch.testing.assert_close(target[t], expected[0], msg=f"row {t}")
    # row 3: R = 0.75, d = 0.25, z = 5 -> 2.0 exactly (atom 12); row 5: 0.75 + 0.25 * 7 = 2.5
    assert target[3].argmax().item() == 12
    torch.testing.assert_close(target[5][12:14], torch.tensor([0.5, 0.5]))
    # the bootstrap observation is gathered only where a chain ends past obs_next
    assert "bootstrap_obs" in batch
    one = C51(policy=_policy(PointMass([0.0, -5.0])), gamma=0.5, n_step=1)
    assert "bootstrap_obs" not in one.preprocess(buf[idx], buf, idx)


def test_double_and_nature_bootstrap_action() -> None:
    obs = torch.zeros(1, 1)
    for is_double, atom in ((True, 2.0), (False, 3.0)):
        # the online net prefers action 1 (mean 1 > -1), the target net action 0 (3 > 2)
        alg = C51(policy=_policy(PointMass([-1.0, 1.0])), target_update_freq=5, is_double=is_double)
        with torch.no_grad():
            alg.target_model_params["shift"].copy_(torch.tensor([3.0, 2.0]))
        assert SUPPORT[alg.next_probs(obs)[0].argmax()].item() == atom
    # without a target network: the online net's own greedy distribution
    alg = C51(policy=_policy(PointMass([-1.0, 1.0])))
    assert alg.model_old is None and SUPPORT[alg.next_probs(obs)[0].argmax()].item() == 1.0


def test_masked_actions_never_bootstrap() -> None:
    alg = C51(policy=_policy(PointMass([4.0, 1.0, -2.0]), n=3))
    mask = torch.tensor([[False, True, True], [False, False, True]])
    p = alg.next_probs(TensorDict({"obs": torch.zeros(2, 1), "mask": mask}, [2]))
    assert SUPPORT[p.argmax(-1)].tolist() == [1.0, -2.0]


def test_cross_entropy_priorities_and_weights() -> None:
    torch.manual_seed(0)
    buf = FakePrioBuffer(10, 1)
    for t in range(7):
        _add(buf, [[float(t)]], [t % 2], [1.0], [t == 6], [False], [[float(t + 1)]])
    net = DistributionalQNet(1, 2, 21, (8,), softmax=True)
    alg = C51(policy=_policy(net), gamma=0.9)
    idx = np.arange(7)
    batch = alg.preprocess(buf[idx], buf, idx)
    loss = alg(batch)["loss_qvalue"]
    probs = net(batch["obs"])[torch.arange(7), batch["act"].long()]
    ce = -(batch["target_dist"] * torch.log(probs + 1e-8)).sum(-1)
    torch.testing.assert_close(batch["td_error"], ce.detach())
    torch.testing.assert_close(loss, (batch["weight"].float() * ce).mean())
    assert loss.dtype == torch.float32
    # the target of a terminal step is the reward's own atom: 1.0 -> atom 11
    torch.testing.assert_close(batch["target_dist"][6], SUPPORT.eq(1.0).float())
    alg.update(buf, 5)
    ((written_idx, written),) = buf.updates
    assert written_idx.shape == (5,) and written.shape == (5,) and bool((written > 0).all())


def test_torchrl_layout_one_step_target_and_gradients() -> None:
    torch.manual_seed(0)
    net = DistributionalQNet(3, 2, 21, (8,), softmax=True)
    alg = C51(policy=_policy(net), gamma=0.9, n_step=3, target_update_freq=10)
    alg.set_keys(observation="observation", action="action")
    n = 6
    td = TensorDict(
        {
            "observation": torch.randn(n, 3),
            "action": torch.randint(2, (n,)),
            "next": {
                "observation": torch.randn(n, 3),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.tensor([[True], [False]] * 3),
            },
        },
        [n],
    )
    out = alg(td)
    assert set(out.keys()) == {"loss_qvalue"}
    p = alg.next_probs(td["next", "observation"])
    term = td["next", "terminated"].reshape(-1).float()
    expected = categorical_projection(
        p, td["next", "reward"].reshape(-1), 0.9 * (1 - term), SUPPORT
    )
    torch.testing.assert_close(td["target_dist"], expected)
    params = dict(alg.named_parameters())
    grads = torch.autograd.grad(out["loss_qvalue"], list(params.values()), allow_unused=True)
    reached = {k for k, g in zip(params, grads) if g is not None and g.abs().sum() > 0}
    assert reached and all(k.startswith("policy.model.") for k in reached)
    assert all(
        id(t) not in {id(q) for q in alg.parameters()}
        for t in alg.target_model_params.values(True, True)
    )
    # a TorchRL prioritized buffer's key gets |td_error|
    alg.set_keys(priority="td_error_abs")
    td2 = td.exclude("target_dist")
    alg(td2)
    torch.testing.assert_close(td2["td_error_abs"], td2["td_error"].abs())


def test_value_estimator_td0_only() -> None:
    from torchrl.objectives import ValueEstimators

    torch.manual_seed(0)
    alg = C51(policy=_policy(DistributionalQNet(3, 2, 21, (8,), softmax=True)), gamma=0.9)
    alg.set_keys(observation="observation", action="action")
    alg.make_value_estimator(ValueEstimators.TD0, gamma=0.0)
    td = TensorDict(
        {
            "observation": torch.randn(2, 3),
            "action": torch.tensor([0, 1]),
            "next": {
                "observation": torch.randn(2, 3),
                "reward": torch.tensor([[1.0], [-2.0]]),
                "done": torch.zeros(2, 1, dtype=torch.bool),
                "terminated": torch.zeros(2, 1, dtype=torch.bool),
            },
        },
        [2],
    )
    alg(td)  # gamma 0: the target is the reward's atom
    assert SUPPORT[td["target_dist"].argmax(-1)].tolist() == [1.0, -2.0]
    with pytest.raises(NotImplementedError, match=r"value_type: C51 supports \['TD0'\]"):
        alg.make_value_estimator(ValueEstimators.TDLambda, lmbda=0.9)


def test_argument_errors() -> None:
    net = DistributionalQNet(1, 2, 21, (4,), softmax=True)
    with pytest.raises(ValueError, match="num_atoms: expected an int >= 2, got 1"):
        _policy(net, num_atoms=1)
    with pytest.raises(ValueError, match=r"v_max: expected a value > v_min = 1.0, got -1.0"):
        _policy(net, v_min=1.0, v_max=-1.0)
    with pytest.raises(ValueError, match="action_space: C51Policy needs a Discrete"):
        C51Policy(model=net, action_space=gym.spaces.Box(-1, 1, (1,)))
    with pytest.raises(TypeError, match="policy: expected a C51Policy, got DQNPolicy"):
        from tdrl.algorithm.modelfree.dqn import DQNPolicy

        C51(policy=DQNPolicy(model=net, action_space=gym.spaces.Discrete(2)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"gamma: expected a value in \[0, 1\], got 1.5"):
        C51(policy=_policy(net), gamma=1.5)
    with pytest.raises(ValueError, match="n_step: expected an int >= 1, got 0"):
        C51(policy=_policy(net), n_step=0)
    wrong = _policy(DistributionalQNet(1, 2, 11, (4,), softmax=True))  # 11 atoms, support 21
    with pytest.raises(
        ValueError, match=r"expected \[B, n_actions, num_atoms=21\], got shape \(3, 2, 11\)"
    ):
        wrong(make_batch({"obs": torch.zeros(3, 1)}, 3))


def test_state_dict_round_trip() -> None:
    torch.manual_seed(0)
    buf = _episode_buffer()

    def make() -> C51:
        net = DistributionalQNet(1, 2, 21, (8,), softmax=True)
        return C51(policy=_policy(net), n_step=2, target_update_freq=2)

    a = make()
    for _ in range(3):
        a.update(buf, 4)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = make()
    b.load_state_dict(torch.load(f, weights_only=False))
    idx = np.array([0, 3, 5, 6])
    la = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 4, 1)["loss_qvalue"]
    lb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 4, 1)["loss_qvalue"]
    assert la == pytest.approx(lb)
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters()):
        torch.testing.assert_close(pa, pb)


# ------------------------------------------------------------------ Tianshou 2.0.1 oracle
class SharedNet(torch.nn.Module):
    """A distributional net both libraries accept: ``(obs, state, info) -> (out, None)``."""

    def __init__(self, n_actions: int, num_atoms: int, softmax: bool) -> None:
        super().__init__()
        self.net = DistributionalQNet(4, n_actions, num_atoms, (16, 16), softmax=softmax)

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


def paired_buffers(n_actions: int, prioritized: bool = False, seed: int = 0) -> tuple[Any, Any]:
    """The same random transitions (3 envs x 15 steps, random ends) in a tdrl and a Tianshou
    buffer."""
    from tianshou.data import Batch as TBatch
    from tianshou.data import PrioritizedVectorReplayBuffer as TPVRB
    from tianshou.data import VectorReplayBuffer as TVRB

    from tdrl.data.batch import Batch
    from tdrl.data.buffer import VectorReplayBuffer

    ours: Any
    peer: Any
    if prioritized:
        ours, peer = FakePrioBuffer(60, 3), TPVRB(60, 3, alpha=0.6, beta=0.4)
    else:
        ours, peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    rng = np.random.default_rng(seed)
    for _ in range(15):
        d: dict[str, Any] = dict(
            obs=rng.normal(size=(3, 4)).astype(np.float32),
            act=rng.integers(0, n_actions, 3),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=rng.random(3) < 0.1,
            obs_next=rng.normal(size=(3, 4)).astype(np.float32),
        )
        ours.add(Batch(**d))
        peer.add(TBatch(info={}, **d))
    return ours, peer


def sample_indices(buf: Any, rng: np.random.Generator) -> np.ndarray:
    idx = rng.integers(0, 45, 16)
    return idx[np.isin(idx, buf.sample_indices(0))]


def chain_last(buf: Any, idx: np.ndarray, n_step: int) -> np.ndarray:
    """The index the n-step chain of each ``idx`` ends at (where its bootstrap state is)."""
    last = idx
    for _ in range(n_step - 1):
        last = buf.next(last)
    return last


def _pair(n_step: int, sgd: bool, target_update_freq: int = 2) -> tuple[C51, Any]:
    from tianshou.algorithm import C51 as TC51
    from tianshou.algorithm.modelfree.c51 import C51Policy as TC51Policy
    from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory

    torch.manual_seed(0)
    model = SharedNet(3, 11, softmax=True)
    space = gym.spaces.Discrete(3)
    atoms: dict[str, Any] = {"num_atoms": 11, "v_min": -3.0, "v_max": 3.0}
    ours = C51(
        policy=C51Policy(model=copy.deepcopy(model), action_space=space, **atoms),
        optim=OptimizerFactory(torch.optim.SGD, lr=0.1) if sgd else 1e-3,
        gamma=0.9,
        n_step=n_step,
        target_update_freq=target_update_freq,
    )
    peer = TC51(
        policy=TC51Policy(model=copy.deepcopy(model), action_space=space, **atoms),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1)
        if sgd
        else AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=n_step,
        target_update_freq=target_update_freq,
    )
    return ours, peer


def _peer_batch(peer: Any, buf: Any, idx: np.ndarray, n_step: int) -> Any:
    """Tianshou's preprocessed batch, its bootstrap observation pointed at ``s_{t+n}``."""
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    with policy_within_training_step(peer.policy), torch_train_mode(peer):
        tb = peer._preprocess_batch(buf[idx], buf, idx)
    tb.obs_next = buf[chain_last(buf, idx, n_step)].obs_next
    return tb


def _peer_update(peer: Any, tb: Any) -> float:
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    with policy_within_training_step(peer.policy), torch_train_mode(peer):
        return float(peer._update_with_batch(tb).loss)


@pytest.mark.parametrize("n_step", [1, 3])
def test_update_matches_tianshou_exactly(n_step: int) -> None:
    """Losses and per-sample cross-entropies (the priorities) over 6 updates (hard target
    syncs every 2) and the parameters after them, against Tianshou 2.0.1's C51.

    Deliberate difference (docs/differences.md): with ``n_step > 1`` Tianshou bootstraps
    from the distribution at ``s_{t+1}``; tdrl from ``s_{t+n}``. Tianshou's batch gets the
    ``s_{t+n}`` observation here (with ``n_step = 1`` that changes nothing). SGD keeps the
    comparison exact over several steps (Adam's first steps turn rounding-level gradients
    of ~1e-8 into full-size steps); Adam is compared over one update below.
    """
    pytest.importorskip("tianshou")
    ours, peer = _pair(n_step, sgd=True)
    b_ours, b_peer = paired_buffers(3)
    rng = np.random.default_rng(0)
    for step in range(6):
        idx = sample_indices(b_ours, rng)
        batch = ours.preprocess(b_ours[idx], b_ours, idx)
        tb = _peer_batch(peer, b_peer, idx, n_step)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(batch, 16, 1)
        assert got["loss"] == pytest.approx(_peer_update(peer, tb), rel=1e-5), step
        torch.testing.assert_close(batch["td_error"], tb.weight, atol=1e-5, rtol=1e-5)
    for p_ours, p_peer in zip(ours.policy.model.parameters(), peer.policy.model.parameters()):
        torch.testing.assert_close(p_ours, p_peer, atol=1e-5, rtol=1e-5)


def test_adam_update_matches_tianshou() -> None:
    """One update with Adam (the presets' optimizer): the loss and every parameter after it."""
    pytest.importorskip("tianshou")
    ours, peer = _pair(3, sgd=False)
    b_ours, b_peer = paired_buffers(3)
    idx = sample_indices(b_ours, np.random.default_rng(1))
    with within_training_step(ours.policy):
        got = ours._update_with_batch(ours.preprocess(b_ours[idx], b_ours, idx), 16, 1)
    assert got["loss"] == pytest.approx(
        _peer_update(peer, _peer_batch(peer, b_peer, idx, 3)), rel=1e-5
    )
    for p_ours, p_peer in zip(ours.policy.model.parameters(), peer.policy.model.parameters()):
        torch.testing.assert_close(p_ours, p_peer)


def test_prioritized_update_matches_tianshou() -> None:
    """Importance weights in the loss and the priorities written back (same weights given to
    both: tdrl's PER weights differ by design, see tdrl/data/buffer/prio.py)."""
    pytest.importorskip("tianshou")
    ours, peer = _pair(1, sgd=True)
    b_ours, b_peer = paired_buffers(3, prioritized=True)
    rng = np.random.default_rng(2)
    for step in range(3):
        idx = sample_indices(b_ours, rng)
        batch = ours.preprocess(b_ours[idx], b_ours, idx)
        weight = rng.uniform(0.2, 1.0, len(idx)).astype(np.float32)
        batch["weight"] = torch.from_numpy(weight)
        tb = _peer_batch(peer, b_peer, idx, 1)
        tb.weight = torch.from_numpy(weight)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(batch, 16, 1)
        ours.postprocess(batch, b_ours, idx)
        expected = _peer_update(peer, tb)
        assert got["loss"] == pytest.approx(expected, rel=1e-5), step
        np.testing.assert_allclose(
            np.asarray(b_ours.updates[-1][1]), tb.weight.numpy(), rtol=1e-5, atol=1e-6
        )


def test_tianshou_bootstraps_nstep_from_the_next_state() -> None:
    """The documented difference itself: Tianshou's n-step C51 projects the distribution at
    ``s_{t+1}`` (its batch's ``obs_next``); rows whose chain has one step agree exactly,
    the others differ."""
    pytest.importorskip("tianshou")
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    ours, peer = _pair(3, sgd=True, target_update_freq=0)
    b_ours, b_peer = paired_buffers(3)
    idx = b_ours.sample_indices(0)
    target = ours.target_distribution(ours.preprocess(b_ours[idx], b_ours, idx))
    with policy_within_training_step(peer.policy), torch_train_mode(peer), torch.no_grad():
        theirs = peer._target_dist(peer._preprocess_batch(b_peer[idx], b_peer, idx))
    one_step = chain_last(b_ours, idx, 3) == idx
    assert one_step.any() and (~one_step).any()
    torch.testing.assert_close(target[one_step], theirs[one_step], atol=1e-6, rtol=1e-5)
    differ = (target[~one_step] - theirs[~one_step]).abs().amax(-1) > 1e-3
    assert bool(differ.any())


# ---------------------------------------------------------------------------- the preset
def test_preset_builds_the_tianshou_network() -> None:
    import tdrl
    from tdrl import registry

    p: Any = registry.preset("c51", "CartPole-v1")
    assert type(p).__name__ == "C51Preset" and p.threshold == 195.0
    alg = tdrl.make_algorithm("c51", "CartPole-v1")
    assert isinstance(alg, C51) and alg.n_step == p.n_step and alg.gamma == p.gamma
    assert alg.policy.support[0].item() == p.v_min and alg.policy.num_atoms == p.num_atoms
    assert alg.policy.eps_training == p.eps_train and alg.policy.eps_inference == p.eps_test
    out = alg.policy.model(torch.zeros(3, 4))
    assert out.shape == (3, 2, p.num_atoms)
    torch.testing.assert_close(out.sum(-1), torch.ones(3, 2))
    with pytest.raises(registry.PresetError, match="c51 preset field 'lr'"):
        registry.preset("c51", "CartPole-v1", lr=0.0)
    with pytest.raises(registry.PresetError, match="c51 needs a Discrete action space"):
        tdrl.make_algorithm("c51", "Pendulum-v1")


@pytest.mark.slow
def test_cartpole_preset_reaches_threshold(tmp_path: Any) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="c51",
        task="CartPole-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= 195.0
