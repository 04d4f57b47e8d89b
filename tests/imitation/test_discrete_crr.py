"""Discrete CRR: the one-step target under the target actor, the advantage weights of the
three improvement modes, the CQL term, target syncs, TorchRL layout, argument checks, the
Tianshou 2.0.1 oracle and the CartPole preset."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from tdrl.algorithm.base import OptimizerFactory, within_training_step
from tdrl.algorithm.imitation.discrete_crr import DiscreteCRR, DiscreteCRRPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer


class ActorHead(torch.nn.Module):
    """``trunk -> linear`` logits with Tianshou's actor signature ``-> (logits, state)``."""

    def __init__(self, trunk: torch.nn.Module, n_out: int) -> None:
        super().__init__()
        self.trunk = trunk
        self.last = torch.nn.Linear(16, n_out)

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return self.last(self.trunk(torch.as_tensor(obs, dtype=torch.float32))), state


class CriticHead(ActorHead):
    """``trunk -> linear`` Q-values ``[B, |A|]`` (a plain tensor, as Tianshou's critic)."""

    def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
        return super().forward(obs, state, info)[0]


def _nets(n_actions: int = 3, seed: int = 0) -> tuple[ActorHead, CriticHead]:
    torch.manual_seed(seed)
    trunk = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU())
    return ActorHead(trunk, n_actions), CriticHead(trunk, n_actions)


def _alg(**kw: Any) -> DiscreteCRR:
    actor, critic = _nets()
    policy = DiscreteCRRPolicy(actor=actor, action_space=gym.spaces.Discrete(3))
    return DiscreteCRR(policy=policy, critic=critic, **kw)


def _batch(n: int = 6, seed: int = 0) -> Batch:
    g = torch.Generator().manual_seed(seed)
    return Batch(
        obs=torch.randn(n, 4, generator=g),
        act=torch.randint(3, (n,), generator=g),
        rew=torch.randn(n, generator=g),
        terminated=torch.tensor([True, False] * (n // 2)),
        obs_next=torch.randn(n, 4, generator=g),
    )


# ------------------------------------------------------------------------------ semantics
@pytest.mark.parametrize("mode", ["exp", "binary", "all"])
def test_losses_written_out(mode: str) -> None:
    alg = _alg(gamma=0.9, policy_improvement_mode=mode, beta=0.5, ratio_upper_bound=3.0,
               min_q_weight=2.0, target_update_freq=4)  # fmt: skip
    batch = _batch()
    out = alg(batch)
    obs, act = batch["obs"], batch["act"]
    with torch.no_grad():
        pi_next = torch.softmax(alg.actor_old(batch["obs_next"])[0], -1)
        v_next = (alg.critic_old(batch["obs_next"]) * pi_next).sum(-1)
    y = batch["rew"] + 0.9 * (1.0 - batch["terminated"].float()) * v_next
    torch.testing.assert_close(batch["returns"].reshape(-1), y)
    q = alg.critic(obs)
    q_a = q[torch.arange(6), act]
    logits = alg.policy.actor(obs)[0]
    log_pi = torch.log_softmax(logits, -1)
    adv = q_a - (q * log_pi.exp()).sum(-1)
    f = {
        "exp": (adv / 0.5).exp().clamp(max=3.0),
        "binary": (adv > 0).float(),
        "all": torch.ones(6),
    }[mode].detach()
    torch.testing.assert_close(out["loss_actor"], -(log_pi[torch.arange(6), act] * f).mean())
    torch.testing.assert_close(out["loss_qvalue"], 0.5 * (q_a - y).pow(2).mean())
    torch.testing.assert_close(out["loss_cql"], 2.0 * (q.logsumexp(1) - q_a).mean())


def test_each_term_reaches_only_its_network_in_torchrl_layout() -> None:
    # separate actor and critic: the actor's weight f(A) carries no gradient into the critic
    torch.manual_seed(0)
    space = gym.spaces.Discrete(3)
    actor, critic = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    alg = DiscreteCRR(
        policy=DiscreteCRRPolicy(actor=actor, action_space=space),
        critic=critic,
        gamma=0.9,
        target_update_freq=5,
    )
    alg.set_keys(observation="observation", action="action")
    n = 6
    td = TensorDict(
        {
            "observation": torch.randn(n, 4),
            "action": torch.randint(3, (n,)),
            "next": {
                "observation": torch.randn(n, 4),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.tensor([[True], [False]] * 3),
            },
        },
        [n],
    )
    out = alg(td)
    assert set(out.keys()) == {"loss_actor", "loss_qvalue", "loss_cql"}
    v = alg.next_value(td["next", "observation"])
    keep = 1.0 - td["next", "terminated"].float().reshape(-1)
    torch.testing.assert_close(td["returns"], td["next", "reward"].reshape(-1) + 0.9 * keep * v)
    params = dict(alg.named_parameters())
    reached = {}
    for term in ("loss_actor", "loss_qvalue", "loss_cql"):
        grads = torch.autograd.grad(
            out[term], list(params.values()), allow_unused=True, retain_graph=True
        )
        reached[term] = {k for k, g in zip(params, grads) if g is not None and g.abs().sum() > 0}
    actor_ids = {id(p) for p in actor.parameters()}
    critic_ids = {id(p) for p in critic.parameters()}
    assert {id(params[k]) for k in reached["loss_actor"]} == actor_ids
    assert {id(params[k]) for k in reached["loss_qvalue"]} == critic_ids
    assert {id(params[k]) for k in reached["loss_cql"]} == critic_ids
    # the policy samples (with its log-probability) in TorchRL's layout
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    act_td = TensorDict({"observation": torch.randn(5, 4)}, [5])
    with set_exploration_type(ExplorationType.RANDOM):
        alg.policy(act_td)
    assert act_td["action"].shape == (5,) and act_td["action_log_prob"].shape == (5,)


def test_target_networks_sync_before_the_step_every_freq() -> None:
    alg = _alg(target_update_freq=2, optim=OptimizerFactory(torch.optim.SGD, lr=0.1))
    buf = VectorReplayBuffer(10, 1)
    for t in range(8):
        buf.add(
            Batch(
                obs=np.full((1, 4), t / 8, np.float32),
                act=np.array([t % 3]),
                rew=np.ones(1, np.float32),
                terminated=np.array([False]),
                truncated=np.array([False]),
                obs_next=np.full((1, 4), (t + 1) / 8, np.float32),
            )
        )
    synced = []
    for _ in range(5):
        actor_w = alg.policy.actor.last.weight.detach().clone()
        critic_w = alg.critic.last.weight.detach().clone()
        alg.update(buf, 4)
        a = torch.equal(alg.target_actor_params["last", "weight"], actor_w)
        c = torch.equal(alg.target_critic_params["last", "weight"], critic_w)
        assert a == c
        synced.append(a)
    assert synced == [True, False, True, False, True]
    # without targets the online networks give the target
    no_target = _alg(target_update_freq=0)
    assert (
        no_target.actor_old is no_target.policy.actor and no_target.critic_old is no_target.critic
    )


def test_argument_errors() -> None:
    actor, critic = _nets()
    space = gym.spaces.Discrete(3)
    policy = DiscreteCRRPolicy(actor=actor, action_space=space)
    with pytest.raises(ValueError, match="policy_improvement_mode: expected 'exp', 'binary' or"):
        DiscreteCRR(policy=policy, critic=critic, policy_improvement_mode="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="beta: expected a value > 0, got 0"):
        DiscreteCRR(policy=policy, critic=critic, beta=0)
    with pytest.raises(ValueError, match=r"ratio_upper_bound: expected a value > 0, got -1\.0"):
        DiscreteCRR(policy=policy, critic=critic, ratio_upper_bound=-1.0)
    with pytest.raises(ValueError, match=r"min_q_weight: expected a value >= 0, got -2"):
        DiscreteCRR(policy=policy, critic=critic, min_q_weight=-2)
    with pytest.raises(ValueError, match=r"gamma: expected a value in \[0, 1\], got 1\.5"):
        DiscreteCRR(policy=policy, critic=critic, gamma=1.5)
    with pytest.raises(ValueError, match="target_update_freq: expected an int >= 0, got -1"):
        DiscreteCRR(policy=policy, critic=critic, target_update_freq=-1)
    with pytest.raises(ValueError, match="action_space: DiscreteCRRPolicy needs a Discrete"):
        DiscreteCRRPolicy(actor=actor, action_space=gym.spaces.Box(-1, 1, (2,)))
    from tdrl.algorithm.modelfree.dqn import DQNPolicy

    with pytest.raises(TypeError, match="policy: expected a DiscreteCRRPolicy"):
        DiscreteCRR(policy=DQNPolicy(model=critic, action_space=space), critic=critic)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="the next observation key 'obs_next' is missing"):
        DiscreteCRR(policy=policy, critic=critic)(Batch(obs=torch.zeros(2, 4)))


# ------------------------------------------------------------------ Tianshou 2.0.1 oracle
def _paired_buffers(truncation: bool, seed: int = 0) -> tuple[Any, Any]:
    """The same random transitions (3 envs x 15 steps) in a tdrl and a Tianshou buffer;
    episodes end by termination (and, with ``truncation``, by time limits too)."""
    from tianshou.data import Batch as TBatch
    from tianshou.data import VectorReplayBuffer as TVRB

    ours, peer = VectorReplayBuffer(60, 3), TVRB(60, 3)
    rng = np.random.default_rng(seed)
    for _ in range(15):
        d: dict[str, Any] = dict(
            obs=rng.normal(size=(3, 4)).astype(np.float32),
            act=rng.integers(0, 3, 3),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=(rng.random(3) < 0.15) & truncation,
            obs_next=rng.normal(size=(3, 4)).astype(np.float32),
        )
        ours.add(Batch(**d))
        peer.add(TBatch(info={}, **d))
    return ours, peer


def _pair(mode: str, sgd: bool, freq: int = 2) -> tuple[DiscreteCRR, Any]:
    from tianshou.algorithm import DiscreteCRR as TCRR
    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory

    actor, critic = _nets()
    nets = copy.deepcopy(torch.nn.ModuleList([actor, critic]))  # keeps the shared trunk
    space = gym.spaces.Discrete(3)
    kw: dict[str, Any] = dict(
        gamma=0.9,
        policy_improvement_mode=mode,
        ratio_upper_bound=1.5,
        beta=0.7,
        min_q_weight=3.0,
        target_update_freq=freq,
    )
    ours = DiscreteCRR(
        policy=DiscreteCRRPolicy(actor=actor, action_space=space),
        critic=critic,
        optim=OptimizerFactory(torch.optim.SGD, lr=0.1) if sgd else 1e-3,
        **kw,
    )
    peer = TCRR(
        policy=DiscreteActorPolicy(actor=nets[0], action_space=space),
        critic=nets[1],
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1) if sgd else AdamOptimizerFactory(),
        **kw,
    )
    return ours, peer


def _steps(ours: DiscreteCRR, peer: Any, b_ours: Any, b_peer: Any, n: int) -> list[Any]:
    """``n`` updates of both on the same sampled indices; returns (ours, peer) stats."""
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tests.algorithm.test_c51 import sample_indices

    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        idx = sample_indices(b_ours, rng)
        batch = ours.preprocess(b_ours[idx], b_ours, idx)
        with within_training_step(ours.policy):
            got = ours._update_with_batch(batch, 16, 1)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            stats = peer._update_with_batch(peer._preprocess_batch(b_peer[idx], b_peer, idx))
        out.append((got, stats))
    return out


def _params(alg: Any) -> list[torch.Tensor]:
    return list(torch.nn.ModuleList([alg.policy.actor, alg.critic]).parameters())


@pytest.mark.parametrize("freq", [2, 0])
def test_update_matches_tianshou_exactly(freq: int) -> None:
    """The three losses over 6 updates (target syncs every 2, or no targets) and every
    parameter after them, against Tianshou 2.0.1's DiscreteCRR (SGD keeps a multi-step
    comparison exact), on episodes that end by termination, in the "all" mode (weight 1).
    The weighted modes and truncations differ deliberately: see the tests below."""
    pytest.importorskip("tianshou")
    ours, peer = _pair("all", sgd=True, freq=freq)
    b_ours, b_peer = _paired_buffers(truncation=False)
    for step, (got, stats) in enumerate(_steps(ours, peer, b_ours, b_peer, 6)):
        assert got["loss_actor"] == pytest.approx(stats.actor_loss, rel=1e-5), step
        assert got["loss_qvalue"] == pytest.approx(stats.critic_loss, rel=1e-5), step
        assert got["loss_cql"] == pytest.approx(3.0 * stats.cql_loss, rel=1e-5), step
        assert got["loss"] == pytest.approx(stats.loss, rel=1e-5), step
    for p_ours, p_peer in zip(_params(ours), _params(peer), strict=True):
        torch.testing.assert_close(p_ours, p_peer)


def test_adam_update_matches_tianshou() -> None:
    """One Adam update (the preset's optimizer): the losses and every parameter."""
    pytest.importorskip("tianshou")
    ours, peer = _pair("all", sgd=False)
    b_ours, b_peer = _paired_buffers(truncation=False)
    ((got, stats),) = _steps(ours, peer, b_ours, b_peer, 1)
    assert got["loss"] == pytest.approx(stats.loss, rel=1e-5)
    for p_ours, p_peer in zip(_params(ours), _params(peer), strict=True):
        torch.testing.assert_close(p_ours, p_peer)


@pytest.mark.parametrize("mode", ["binary", "exp"])
def test_per_sample_weights_deliberately_differ_from_tianshou(mode: str) -> None:
    """Deliberate difference (docs/differences.md): tdrl weights each sample's
    log-likelihood by its own ``f(A(s, a))``, ``mean_b(f_b * -log pi_b)``, as the paper, and
    ``f`` carries no gradient. Tianshou 2.0.1 multiplies a ``[B]`` log-likelihood by a
    ``[B, 1]`` weight, which broadcasts to ``[B, B]`` and gives ``mean(f) * mean(-log pi)``
    (plain behaviour cloning scaled by the mean weight), and in "exp" mode backpropagates
    through ``f``. The same ``f`` and ``log pi`` give both numbers; the critic and CQL
    losses agree."""
    pytest.importorskip("tianshou")
    from tests.algorithm.test_c51 import sample_indices

    ours, peer = _pair(mode, sgd=True)
    b_ours, b_peer = _paired_buffers(truncation=False)
    idx = sample_indices(b_ours, np.random.default_rng(0))
    with torch.no_grad():
        batch = b_ours[idx]
        q = ours.critic(batch["obs"])
        q_a = q[torch.arange(len(idx)), batch["act"].long()]
        dist = ours.policy.dist(batch["obs"])[0]
        f = ours.improvement_weight(q_a - (q * dist.probs).sum(-1))  # type: ignore[attr-defined]
        nll = -dist.log_prob(batch["act"].long())
    ((got, stats),) = _steps(ours, peer, b_ours, b_peer, 1)
    assert got["loss_actor"] == pytest.approx((f * nll).mean().item(), rel=1e-5)
    assert stats.actor_loss == pytest.approx((f.mean() * nll.mean()).item(), rel=1e-5)
    assert got["loss_qvalue"] == pytest.approx(stats.critic_loss, rel=1e-5)
    assert got["loss_cql"] == pytest.approx(3.0 * stats.cql_loss, rel=1e-5)


def test_truncated_steps_bootstrap_deliberately_unlike_tianshou() -> None:
    """Deliberate difference (docs/differences.md): tdrl bootstraps at time-limit
    truncations (only ``terminated`` ends the value); Tianshou's DiscreteCRR masks the
    bootstrap wherever ``done``. Only the critic loss differs, when a truncated step is
    sampled."""
    pytest.importorskip("tianshou")
    ours, peer = _pair("all", sgd=True)
    b_ours, b_peer = _paired_buffers(truncation=True)
    truncated = b_ours[b_ours.sample_indices(0)]["truncated"]
    assert bool(truncated.any())
    ((got, stats),) = _steps(ours, peer, b_ours, b_peer, 1)
    assert got["loss_actor"] == pytest.approx(stats.actor_loss, rel=1e-5)
    assert got["loss_cql"] == pytest.approx(3.0 * stats.cql_loss, rel=1e-5)
    assert got["loss_qvalue"] != pytest.approx(stats.critic_loss, rel=1e-5)


# ---------------------------------------------------------------------------- the preset
def test_preset_builds_and_checks_the_dataset() -> None:
    import tdrl
    from tdrl import registry
    from tdrl.data.buffer import ReplayBuffer
    from tdrl.data.datasets import DatasetError

    p: Any = registry.entry("discrete_crr", "CartPole-v1").preset
    assert (
        p.threshold == 180.0 and registry.entry("discrete_crr", "CartPole-v1").trainer == "offline"
    )
    with pytest.raises(registry.PresetError, match="discrete_crr learns from a dataset"):
        tdrl.make_algorithm("discrete_crr", "CartPole-v1")
    z = np.zeros(3, dtype=bool)
    good = ReplayBuffer.from_data(
        np.zeros((3, 4), np.float32), np.zeros(3, np.int64), np.ones(3, np.float32), z, z, z,
        np.zeros((3, 4), np.float32),
    )  # fmt: skip
    alg = tdrl.make_algorithm("discrete_crr", "CartPole-v1", dataset=good)
    assert type(alg).__name__ == "DiscreteCRR"
    bad = ReplayBuffer.from_data(
        np.zeros((3, 3), np.float32), np.zeros(3, np.int64), np.ones(3, np.float32), z, z, z,
        np.zeros((3, 3), np.float32),
    )  # fmt: skip
    with pytest.raises(DatasetError, match="observations of shape"):
        tdrl.make_algorithm("discrete_crr", "CartPole-v1", dataset=bad)


@pytest.mark.slow
def test_cartpole_preset_reaches_threshold(tmp_path: Any, cartpole_dataset: str) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    cfg = ExperimentConfig(
        algo="discrete_crr",
        task="CartPole-v1",
        seed=0,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
        dataset=cartpole_dataset,
    )
    result, _ = run_experiment(cfg)
    assert result.best_reward >= 180.0


def test_trains_in_a_plain_torchrl_loop() -> None:
    """One Adam over ``loss.parameters()`` on the sum of the terms, TorchRL's HardUpdate for
    the targets: the losses fall on a fixed TorchRL batch and the targets follow."""
    from torchrl.objectives import HardUpdate

    alg = _alg(gamma=0.9, target_update_freq=1000, policy_improvement_mode="binary")
    alg.set_keys(observation="observation", action="action")
    g = torch.Generator().manual_seed(1)
    n = 64
    td = TensorDict(
        {
            "observation": torch.randn(n, 4, generator=g),
            "action": torch.randint(3, (n,), generator=g),
            "next": {
                "observation": torch.randn(n, 4, generator=g),
                "reward": torch.randn(n, 1, generator=g),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.ones(n, 1, dtype=torch.bool),  # y = r: a fixed target
            },
        },
        [n],
    )
    optim = torch.optim.Adam(alg.parameters(), lr=1e-2)
    updater = HardUpdate(alg, value_network_update_interval=10)
    first = None
    for _ in range(30):
        out = alg(td.clone())
        total = sum(v for k, v in out.items() if k.startswith("loss_"))
        first = float(total.detach()) if first is None else first
        optim.zero_grad()
        total.backward()
        optim.step()
        updater.step()
    assert float(total.detach()) < first
    torch.testing.assert_close(
        alg.target_critic_params["last", "weight"].data,
        alg.critic.last.weight.data,
        atol=0.2,
        rtol=0,
    )
