"""ICM: the module, the wrapper on tdrl's and TorchRL's paths, Tianshou oracles, --icm."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.modelbased.icm import ICM, IntrinsicCuriosityModule
from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
from tdrl.algorithm.modelfree.ppo import PPO, ActorPolicy
from tdrl.data import Batch, VectorReplayBuffer
from tdrl.registry import PresetError

OBS, N_ACT, FEAT = 4, 2, 8
SPACE = gym.spaces.Discrete(N_ACT)


def _feature_net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(OBS, 16), torch.nn.ReLU(), torch.nn.Linear(16, FEAT))


def _icm_model(feature_net: torch.nn.Module | None = None) -> IntrinsicCuriosityModule:
    return IntrinsicCuriosityModule(
        feature_net=feature_net if feature_net is not None else _feature_net(),
        feature_dim=FEAT,
        action_dim=N_ACT,
        hidden_sizes=(16,),
    )


def _q_net() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(OBS, 16), torch.nn.ReLU(), torch.nn.Linear(16, N_ACT)
    )


class _Shared(torch.nn.Module):
    """A net both libraries accept: ``net(obs, state=None, info=None) -> (out, None)``."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), None


class _SharedCritic(_Shared):
    def forward(self, obs, **kwargs):  # type: ignore[no-untyped-def]
        return self.net(torch.as_tensor(obs, dtype=torch.float32))


def _dqn(model: torch.nn.Module | None = None, **kw) -> DQN:
    net = model if model is not None else _q_net()
    return DQN(policy=DQNPolicy(model=net, action_space=SPACE), **kw)


def _rows(n_envs: int = 3, steps: int = 15, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        dict(
            obs=rng.normal(size=(n_envs, OBS)).astype(np.float32),
            act=rng.integers(0, N_ACT, n_envs),
            rew=rng.normal(size=n_envs).astype(np.float32),
            terminated=rng.random(n_envs) < 0.15,
            truncated=rng.random(n_envs) < 0.1,
            obs_next=rng.normal(size=(n_envs, OBS)).astype(np.float32),
        )
        for _ in range(steps)
    ]


def _buffer(rows: list[dict], n_envs: int = 3) -> VectorReplayBuffer:
    buf = VectorReplayBuffer(n_envs * 20, n_envs)
    for row in rows:
        buf.add(Batch(**row))
    return buf


def _copy_params(src: torch.nn.Module, dst: torch.nn.Module) -> None:
    ps, pd = list(src.parameters()), list(dst.parameters())
    assert [p.shape for p in ps] == [p.shape for p in pd]
    with torch.no_grad():
        for a, b in zip(ps, pd):
            b.copy_(a)


# -- the module ---------------------------------------------------------------------------
def test_module_forward_error_and_inverse_logits() -> None:
    torch.manual_seed(0)
    m = _icm_model()
    obs, nxt = torch.randn(5, OBS), torch.randn(5, OBS)
    act = torch.tensor([0, 1, 1, 0, 1])
    err, logits = m(obs, act, nxt)
    phi1, phi2 = m.feature_net(obs), m.feature_net(nxt)
    pred = m.forward_model(torch.cat([phi1, torch.nn.functional.one_hot(act, N_ACT).float()], 1))
    torch.testing.assert_close(err, 0.5 * (pred - phi2).pow(2).sum(1))
    torch.testing.assert_close(logits, m.inverse_model(torch.cat([phi1, phi2], 1)))


def test_bad_input() -> None:
    with pytest.raises(ValueError, match=r"feature_dim, action_dim: expected ints >= 1, got 0, 2"):
        IntrinsicCuriosityModule(feature_net=_feature_net(), feature_dim=0, action_dim=2)
    dqn = _dqn()
    with pytest.raises(
        ValueError, match=r"forward_loss_weight: expected a value in \[0, 1\], got -0.5"
    ):
        ICM(wrapped=dqn, model=_icm_model(), forward_loss_weight=-0.5)
    with pytest.raises(
        ValueError, match=r"lr_scale, reward_scale: expected values >= 0, got 1.0, -1"
    ):
        ICM(wrapped=dqn, model=_icm_model(), reward_scale=-1)
    with pytest.raises(TypeError, match=r"wrapped: expected a tdrl Algorithm, got Linear"):
        ICM(wrapped=torch.nn.Linear(1, 1), model=_icm_model())  # type: ignore[arg-type]


# -- the wrapper on tdrl's path -----------------------------------------------------------
def test_bonus_is_added_for_the_targets_and_removed_afterwards() -> None:
    torch.manual_seed(0)
    icm = ICM(wrapped=_dqn(n_step=1, gamma=0.9), model=_icm_model(), reward_scale=0.5)
    buf = _buffer(_rows())
    idx = np.arange(12)
    raw = buf[idx]
    batch = icm.preprocess(buf[idx], buf, idx)
    with torch.no_grad():
        err, _ = icm.model(raw["obs"], raw["act"], raw["obs_next"])
    torch.testing.assert_close(batch["rew"].float(), raw["rew"].float() + 0.5 * err)
    icm.postprocess(batch, buf, idx)
    torch.testing.assert_close(batch["rew"], raw["rew"])
    assert "rew_extrinsic" not in batch


@pytest.mark.parametrize("n_step", [1, 3])
def test_bonus_in_targets_adds_the_discounted_bonus_of_the_chain(n_step: int) -> None:
    """tdrl's option (off by default, as Tianshou): the off-policy n-step ``returns`` read
    rewards from the buffer, so the bonus is added to them along each chain."""
    from tdrl.algorithm.returns import compute_nstep_return

    torch.manual_seed(0)
    net, model = _q_net(), _icm_model()

    def icm(on: bool) -> ICM:
        dqn = _dqn(copy.deepcopy(net), gamma=0.9, n_step=n_step)
        return ICM(wrapped=dqn, model=copy.deepcopy(model), reward_scale=0.5, bonus_in_targets=on)

    buf = _buffer(_rows())
    idx = buf.sample_indices(0)[::2]
    plain = icm(False).preprocess(buf[idx], buf, idx)
    shaped = icm(True).preprocess(buf[idx], buf, idx)
    everything = buf.sample_indices(0)
    with torch.no_grad():
        err, _ = model(buf[everything]["obs"], buf[everything]["act"], buf[everything]["obs_next"])
    bonus = np.zeros(len(np.asarray(buf.done)))
    bonus[everything] = 0.5 * err.double().numpy()

    class View:  # the buffer with the bonus of every row as its reward
        rew, done, terminated = bonus, buf.done, buf.terminated
        maxsize = bonus.shape[0]
        next = staticmethod(buf.next)
        unfinished_index = staticmethod(buf.unfinished_index)

    zero = lambda _b, i: torch.zeros(len(i), dtype=torch.float64)  # noqa: E731
    extra = compute_nstep_return({}, View(), idx, zero, gamma=0.9, n_step=n_step)["returns"]
    ret = plain["returns"]  # [B, 1] for DQN
    torch.testing.assert_close(shaped["returns"], ret + extra.reshape(ret.shape).to(ret.dtype))
    if n_step == 1:
        first = (plain["rew"] - plain["rew_extrinsic"]).reshape(ret.shape).to(ret.dtype)
        torch.testing.assert_close(shaped["returns"], ret + first)


def test_update_trains_both_and_keeps_the_policy() -> None:
    torch.manual_seed(0)
    dqn = _dqn(target_update_freq=2)
    icm = ICM(wrapped=dqn, model=_icm_model())
    assert icm.policy is dqn.policy and not icm.on_policy
    buf = _buffer(_rows())
    q0 = [p.clone() for p in dqn.policy.model.parameters()]
    m0 = [p.clone() for p in icm.model.parameters()]
    rew0 = torch.as_tensor(buf.rew).clone()
    stats = icm.update(buf, 8, repeat=2)
    assert {"loss_qvalue", "loss_icm_inverse", "loss_icm_forward"} <= set(stats)
    assert stats["loss"] == pytest.approx(
        stats["loss_qvalue"] + stats["loss_icm_inverse"] + stats["loss_icm_forward"]
    )
    assert all(not torch.equal(a, b) for a, b in zip(q0, dqn.policy.model.parameters()))
    assert all(not torch.equal(a, b) for a, b in zip(m0, icm.model.parameters()))
    assert dqn.n_updates == icm.n_updates == 1
    assert torch.equal(torch.as_tensor(buf.rew), rew0)  # the buffer keeps extrinsic rewards


def test_state_dict_round_trip() -> None:
    torch.manual_seed(0)
    a = ICM(wrapped=_dqn(target_update_freq=3), model=_icm_model())
    a.update(_buffer(_rows()), 8, repeat=3)
    torch.manual_seed(1)
    b = ICM(wrapped=_dqn(target_update_freq=3), model=_icm_model())
    b.load_state_dict(copy.deepcopy(a.state_dict()))
    for (k, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y), k
    assert b.wrapped.n_updates == a.wrapped.n_updates == 1
    assert b.icm_optim.optim.state_dict()["state"][0]["step"] == 3
    assert b.wrapped.optim.optim.state_dict()["state"][0]["step"] == 3
    with pytest.raises(RuntimeError, match="unexpected keys"):
        b.load_state_dict({**a.state_dict(), "bogus": torch.zeros(1)})


def test_on_policy_wrapper_runs_the_epochs_then_one_icm_step() -> None:
    torch.manual_seed(0)
    ppo = PPO(
        policy=ActorPolicy(actor=_q_net(), action_space=SPACE), critic=torch.nn.Linear(OBS, 1)
    )
    icm = ICM(wrapped=ppo, model=_icm_model())
    assert icm.on_policy
    calls: list[int] = []
    stage = icm._stages[0]
    losses = stage.losses
    stage.losses = lambda td: calls.append(td.shape[0]) or losses(td)  # type: ignore[assignment]
    stats = icm.update(_buffer(_rows()), 10, repeat=2)
    assert stats["gradient_steps"] == 8.0  # 45 transitions: 4 minibatches, 2 epochs
    assert calls == [45]  # one ICM step on the whole batch


# -- TorchRL's path -----------------------------------------------------------------------
def _torchrl_batch(n: int = 32, seed: int = 0) -> TensorDict:
    g = torch.Generator().manual_seed(seed)
    return TensorDict(
        {
            "observation": torch.randn(n, OBS, generator=g),
            "action": torch.randint(0, N_ACT, (n,), generator=g),
            "action_log_prob": torch.full((n,), -0.69),
            "next": {
                "observation": torch.randn(n, OBS, generator=g),
                "reward": torch.randn(n, 1, generator=g),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )


@pytest.mark.parametrize("kind", ["dqn", "ppo"])
def test_torchrl_terms_reach_only_their_parameters(kind: str) -> None:
    torch.manual_seed(0)
    wrapped = (
        _dqn()
        if kind == "dqn"
        else PPO(
            policy=ActorPolicy(actor=_q_net(), action_space=SPACE), critic=torch.nn.Linear(OBS, 1)
        )
    )
    icm = ICM(wrapped=wrapped, model=_icm_model(), reward_scale=0.3)
    icm.set_keys(observation="observation", action="action")
    assert icm.policy.in_keys == ["observation"] and wrapped.torchrl_layout
    td = _torchrl_batch()
    rew0 = td["next", "reward"].clone()
    out = icm(td)
    torch.testing.assert_close(td["next", "reward"], rew0)  # the caller's batch is untouched
    terms = [k for k in out.keys() if k.startswith("loss_")]  # noqa: SIM118
    assert {"loss_icm_inverse", "loss_icm_forward"} < set(terms)
    icm_params = list(icm.model.parameters())
    other = [p for n, p in wrapped.named_parameters() if "target" not in n]
    for k in terms:
        grads = torch.autograd.grad(
            out[k], icm_params + other, allow_unused=True, retain_graph=True
        )
        reach_icm = any(g is not None and g.abs().sum() > 0 for g in grads[: len(icm_params)])
        reach_other = any(g is not None and g.abs().sum() > 0 for g in grads[len(icm_params) :])
        assert reach_icm == k.startswith("loss_icm"), k
        assert reach_other != k.startswith("loss_icm"), k
    # the wrapped algorithm saw the bonus: its one-step target uses r + reward_scale * e
    ref = copy.deepcopy(wrapped)
    td2 = _torchrl_batch()
    with torch.no_grad():
        err, _ = icm.model(td2["observation"], td2["action"], td2["next", "observation"])
    td2["next", "reward"] = td2["next", "reward"] + 0.3 * err.reshape(-1, 1)
    expected = ref(td2)
    for k in terms:
        if not k.startswith("loss_icm"):
            torch.testing.assert_close(out[k], expected[k])


# -- oracles -------------------------------------------------------------------------------
def _tianshou_icm(model: IntrinsicCuriosityModule):
    from tianshou.utils.net.discrete import IntrinsicCuriosityModule as TICM

    peer = TICM(
        feature_net=copy.deepcopy(model.feature_net),
        feature_dim=FEAT,
        action_dim=N_ACT,
        hidden_sizes=(16,),
    )
    _copy_params(model, peer)
    return peer


def test_off_policy_update_matches_tianshou_exactly() -> None:
    """DQN (3-step returns, target sync every 2) wrapped in ICM, five updates on the same
    sampled indices: the bonus added to ``rew``, the ICM loss and its two parts, DQN's
    loss (to 1e-5), then every DQN and ICM parameter."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import DQN as TDQN
    from tianshou.algorithm.modelbased.icm import ICMOffPolicyWrapper
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.algorithm.base import within_training_step

    torch.manual_seed(0)
    net, model = _Shared(_q_net()), _icm_model()
    kw = dict(lr_scale=0.7, reward_scale=0.1, forward_loss_weight=0.3)
    ours = ICM(
        wrapped=_dqn(copy.deepcopy(net), gamma=0.9, n_step=3, target_update_freq=2),
        model=copy.deepcopy(model),
        optim=1e-3,
        **kw,
    )
    peer = ICMOffPolicyWrapper(
        wrapped_algorithm=TDQN(
            policy=DiscreteQLearningPolicy(model=copy.deepcopy(net), action_space=SPACE),
            optim=AdamOptimizerFactory(lr=1e-3),
            gamma=0.9,
            n_step_return_horizon=3,
            target_update_freq=2,
        ),
        model=_tianshou_icm(model),
        optim=AdamOptimizerFactory(lr=1e-3),
        **kw,
    )
    rows = _rows()
    b_ours, b_peer = _buffer(rows), TVRB(60, 3)
    for row in rows:
        b_peer.add(TBatch(info={}, **row))
    rng = np.random.default_rng(1)
    for step in range(5):
        idx = rng.integers(0, 45, 16)
        idx = idx[np.isin(idx, b_ours.sample_indices(0))]
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            bonus = batch["rew"] - batch["rew_extrinsic"]
            got = ours._update_with_batch(batch, 16, 1)
            ours.postprocess(batch, b_ours, idx)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            raw = b_peer[idx].rew.copy()  # Tianshou's orig_rew aliases the updated rew
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            t_bonus = tb.rew - raw
            expected = peer._update_with_batch(tb)
            peer._postprocess_batch(tb, b_peer, idx)
        np.testing.assert_allclose(bonus.numpy(), t_bonus, rtol=1e-5, atol=1e-7)
        icm_loss = got["loss_icm_inverse"] + got["loss_icm_forward"]
        assert icm_loss == pytest.approx(expected.icm_loss, rel=1e-5), step
        assert got["icm_forward_loss"] == pytest.approx(expected.icm_forward_loss, rel=1e-5)
        assert got["icm_inverse_loss"] == pytest.approx(expected.icm_inverse_loss, rel=1e-5)
        assert got["loss_qvalue"] == pytest.approx(expected.wrapped_stats.loss, rel=1e-5)
        np.testing.assert_allclose(batch["rew"].numpy(), raw)  # the extrinsic reward back
    for p, q in zip(ours.wrapped.policy.model.parameters(), peer.policy.model.parameters()):
        torch.testing.assert_close(p, q)
    for p, q in zip(ours.model.parameters(), peer.model.parameters()):
        torch.testing.assert_close(p, q)


def test_on_policy_update_matches_tianshou_exactly(monkeypatch) -> None:
    """PPO wrapped in ICM, two rollouts: the bonus, the GAE returns and advantages it
    shapes, the ICM loss (to 1e-5), then the actor, critic and ICM parameters after two
    epochs of minibatches (the same permutations on both sides)."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import PPO as TPPO
    from tianshou.algorithm.modelbased.icm import ICMOnPolicyWrapper
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.algorithm.base import within_training_step

    torch.manual_seed(0)
    actor, critic = _Shared(_q_net()), _SharedCritic(torch.nn.Linear(OBS, 1))
    model = _icm_model()
    ppo_kw = dict(gamma=0.95, gae_lambda=0.9, max_grad_norm=0.5, ent_coef=0.01)
    kw = dict(lr_scale=1.0, reward_scale=0.05, forward_loss_weight=0.2)
    ours = ICM(
        wrapped=PPO(
            policy=ActorPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
            critic=copy.deepcopy(critic),
            optim=1e-3,
            **ppo_kw,
        ),
        model=copy.deepcopy(model),
        optim=3e-4,
        **kw,
    )
    peer = ICMOnPolicyWrapper(
        wrapped_algorithm=TPPO(
            policy=DiscreteActorPolicy(actor=copy.deepcopy(actor), action_space=SPACE),
            critic=copy.deepcopy(critic),
            optim=AdamOptimizerFactory(lr=1e-3),
            **ppo_kw,
        ),
        model=_tianshou_icm(model),
        optim=AdamOptimizerFactory(lr=3e-4),
        **kw,
    )
    monkeypatch.setattr(torch, "randperm", lambda n: torch.as_tensor(np.random.permutation(n)))
    for rollout in range(2):
        rows = _rows(seed=rollout)
        b_ours, b_peer = _buffer(rows), TVRB(60, 3)
        for row in rows:
            b_peer.add(TBatch(info={}, **row))
        idx = b_ours.sample_indices(0)
        with within_training_step(ours.policy):
            batch = ours.preprocess(b_ours[idx], b_ours, idx)
            np.random.seed(rollout)
            got = ours._update_with_batch(batch, 10, 2)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            np.random.seed(rollout)
            expected = peer._update_with_batch(tb, 10, 2)
        np.testing.assert_allclose(batch["rew"].numpy(), tb.rew, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(batch["returns"].numpy(), tb.returns, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(batch["adv"].numpy(), tb.adv, rtol=1e-5, atol=1e-6)
        icm_loss = got["loss_icm_inverse"] + got["loss_icm_forward"]
        assert icm_loss == pytest.approx(expected.icm_loss, rel=1e-5)
    ours_params = [*ours.wrapped.policy.actor.parameters(), *ours.wrapped.critic.parameters()]
    peer_params = [*peer.policy.actor.parameters(), *peer.wrapped_algorithm.critic.parameters()]
    for p, q in zip(ours_params, peer_params):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-4)
    for p, q in zip(ours.model.parameters(), peer.model.parameters()):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-4)


# -- the launcher hook ----------------------------------------------------------------------
def test_apply_icm_wraps_the_presets_and_rejects_others() -> None:
    from tdrl.algorithm.presets import make_algorithm
    from tdrl.presets.icm import apply_icm

    env = gym.make("CartPole-v1")
    for algo in ("dqn", "ppo"):
        alg = make_algorithm(algo, "CartPole-v1")
        icm = apply_icm(alg, algo, "CartPole-v1", env.observation_space, env.action_space)
        assert isinstance(icm, ICM) and icm.wrapped is alg and icm.policy is alg.policy
    with pytest.raises(PresetError, match=r"--icm: no ICM settings for sac; ICM wraps: dqn, ppo"):
        apply_icm(alg, "sac", "Pendulum-v1", env.observation_space, env.action_space)
    with pytest.raises(
        PresetError, match=r"--icm needs a Discrete action space; Pendulum-v1 has Box"
    ):
        apply_icm(alg, "ppo", "Pendulum-v1", env.observation_space, gym.spaces.Box(-1, 1, (1,)))
    with pytest.raises(PresetError, match=r"--icm needs a Box observation space; T has Discrete"):
        apply_icm(alg, "ppo", "T", gym.spaces.Discrete(3), env.action_space)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["dqn", "ppo"])
def test_icm_reaches_the_threshold(algo: str, tmp_path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo=algo,
            task="CartPole-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
            icm=True,
        )
    )
    assert result.best_reward >= 195
