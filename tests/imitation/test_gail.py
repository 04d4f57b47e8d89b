"""GAIL: the discriminator's reward and update, Tianshou oracle, TorchRL layout, preset."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict
from torch.distributions import Independent, Normal

from tdrl.algorithm.imitation.gail import GAIL
from tdrl.algorithm.modelfree.ppo import ActorPolicy
from tdrl.data import Batch, ReplayBuffer, VectorReplayBuffer
from tdrl.utils.net import MLP, GaussianActor, VCritic

OBS, ACT = 3, 1
SPACE = gym.spaces.Box(-1.0, 1.0, (ACT,))


def _dist(loc_scale):
    loc, scale = loc_scale
    return Independent(Normal(loc, scale), 1)


def _expert(n: int = 40, seed: int = 5) -> ReplayBuffer:
    rng = np.random.default_rng(seed)
    buf = ReplayBuffer(n)
    for _ in range(n):
        buf.add(
            Batch(
                obs=rng.normal(size=OBS).astype(np.float32),
                act=rng.uniform(-1, 1, size=ACT).astype(np.float32),
                rew=0.0,
                terminated=False,
                truncated=False,
                obs_next=rng.normal(size=OBS).astype(np.float32),
            )
        )
    return buf


def _rows(n_envs: int = 4, steps: int = 9, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        dict(
            obs=rng.normal(size=(n_envs, OBS)).astype(np.float32),
            act=rng.normal(size=(n_envs, ACT)).astype(np.float32),
            rew=rng.normal(size=n_envs).astype(np.float32),
            terminated=rng.random(n_envs) < 0.15,
            truncated=rng.random(n_envs) < 0.1,
            obs_next=rng.normal(size=(n_envs, OBS)).astype(np.float32),
        )
        for _ in range(steps)
    ]


def _buffer(rows: list[dict], n_envs: int = 4) -> VectorReplayBuffer:
    buf = VectorReplayBuffer(n_envs * 16, n_envs)
    for row in rows:
        buf.add(Batch(**row))
    return buf


def _gail(expert: ReplayBuffer | None = None, **kw) -> GAIL:
    torch.manual_seed(0)
    actor = GaussianActor(OBS, ACT, (8,), state_dependent_std=False)
    return GAIL(
        policy=ActorPolicy(actor=actor, action_space=SPACE, dist_fn=_dist),
        critic=VCritic(OBS, (8,)),
        expert_buffer=expert if expert is not None else _expert(),
        disc_net=MLP(OBS + ACT, 1, (8,), activation=torch.nn.Tanh),
        **kw,
    )


def test_reward_is_the_discriminators() -> None:
    alg = _gail(gamma=0.9)
    buf = _buffer(_rows())
    idx = buf.sample_indices(0)
    raw = buf[idx]
    batch = alg.preprocess(buf[idx], buf, idx)
    with torch.no_grad():
        logits = alg.disc_net(torch.cat([raw["obs"], raw["act"]], 1)).reshape(-1)
    torch.testing.assert_close(batch["rew"], -torch.nn.functional.logsigmoid(-logits))
    torch.testing.assert_close(batch["rew"], torch.log1p(torch.exp(logits)))  # -log(1 - D)
    assert not torch.equal(torch.as_tensor(buf.rew), batch["rew"])  # the buffer keeps its own


def test_discriminator_steps_before_the_policy() -> None:
    alg = _gail(disc_update_num=3)
    sizes: list[tuple[int, int]] = []
    losses = alg.disc_losses

    def spy(td, expert=None):
        sizes.append((td.shape[0], expert.shape[0]))
        return losses(td, expert)

    alg.disc_losses = spy  # type: ignore[method-assign]
    d0 = [p.clone() for p in alg.disc_net.parameters()]
    stats = alg.update(_buffer(_rows()), 10, repeat=2)
    assert sizes == [(12, 12), (12, 12), (12, 12)]  # 36 transitions in 3 chunks
    assert {"loss_disc", "acc_pi", "acc_exp", "loss_objective"} <= set(stats)
    assert all(not torch.equal(a, b) for a, b in zip(d0, alg.disc_net.parameters()))
    # a short last chunk is merged into the one before; the expert sample keeps its size
    sizes.clear()
    alg.disc_update_num = 5
    alg.update(_buffer(_rows()), 10)
    assert sizes == [(7, 7)] * 4 + [(8, 7)]  # 36 = 4 * 7 + 8


def test_torchrl_terms_reach_only_their_parameters() -> None:
    alg = _gail()
    alg.set_keys(observation="observation", action="action")
    g = torch.Generator().manual_seed(0)
    n = 16
    td = TensorDict(
        {
            "observation": torch.randn(n, OBS, generator=g),
            "action": torch.rand(n, ACT, generator=g) * 2 - 1,
            "action_log_prob": torch.full((n,), -1.0),
            "next": {
                "observation": torch.randn(n, OBS, generator=g),
                "reward": torch.randn(n, 1, generator=g),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )
    rew0 = td["next", "reward"].clone()
    out = alg(td)
    torch.testing.assert_close(td["next", "reward"], rew0)  # the caller's batch is untouched
    disc = list(alg.disc_net.parameters())
    ac = [*alg.policy.actor.parameters(), *alg.critic.parameters()]
    terms = [k for k in out.keys() if k.startswith("loss_")]  # noqa: SIM118
    assert set(terms) == {"loss_objective", "loss_critic", "loss_entropy", "loss_disc"}
    for k in terms:
        grads = torch.autograd.grad(out[k], disc + ac, allow_unused=True, retain_graph=True)
        hit_disc = any(x is not None and x.abs().sum() > 0 for x in grads[: len(disc)])
        assert hit_disc == (k == "loss_disc"), k
    # PPO's one-step target used the discriminator's reward
    with torch.no_grad():
        logits = alg.disc(td["observation"], alg.act_of(td)).reshape(-1)
        v_next = alg.critic(td["next", "observation"]).reshape(-1)
        v = alg.critic(td["observation"]).reshape(-1)
    prepared = alg.prepare(td)
    torch.testing.assert_close(
        prepared["adv"], -torch.nn.functional.logsigmoid(-logits) + alg.gamma * v_next - v
    )


def test_bad_input() -> None:
    with pytest.raises(ValueError, match=r"disc_update_num: expected an int >= 1, got 0"):
        _gail(disc_update_num=0)
    with pytest.raises(
        ValueError, match=r"expert_buffer: expected a non-empty replay buffer, got 0"
    ):
        _gail(expert=ReplayBuffer(10))


def test_preset_needs_a_dataset_that_fits() -> None:
    from tdrl import registry
    from tdrl.presets.gail import build

    p = registry.preset("gail", "Pendulum-v1")
    assert registry.entry("gail", "Pendulum-v1").needs_dataset
    env = gym.make("Pendulum-v1")
    with pytest.raises(registry.PresetError, match="gail learns from expert data"):
        build(p, env.observation_space, env.action_space)  # type: ignore[arg-type]
    cartpole = gym.make("CartPole-v1")
    with pytest.raises(ValueError, match="obs"):
        build(p, cartpole.observation_space, cartpole.action_space, dataset=_expert())  # type: ignore[arg-type]
    alg = build(p, env.observation_space, env.action_space, dataset=_expert())  # type: ignore[arg-type]
    assert isinstance(alg, GAIL) and alg.disc_update_num == p.disc_update_num


# -- the oracle ---------------------------------------------------------------------------
def test_update_matches_tianshou_exactly(monkeypatch) -> None:
    """Two rollouts: the discriminator's reward, GAE returns and advantages on it, the
    discriminator loss (two chunks against the same expert indices on both sides) and
    PPO's loss (to 1e-5), then every actor, critic and discriminator parameter."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import GAIL as TGAIL
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import ReplayBuffer as TRB
    from tianshou.data import VectorReplayBuffer as TVRB
    from tianshou.utils.net.common import ModuleWithVectorOutput
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    from tdrl.algorithm.base import within_training_step

    class Actor(ModuleWithVectorOutput):
        def __init__(self, net: torch.nn.Module) -> None:
            super().__init__(ACT)
            self.net = net

        def forward(self, obs, state=None, info=None):  # type: ignore[no-untyped-def]
            return self.net(torch.as_tensor(obs, dtype=torch.float32)), None

    class Critic(torch.nn.Module):
        def __init__(self, net: torch.nn.Module) -> None:
            super().__init__()
            self.net = net

        def forward(self, obs, **kwargs):  # type: ignore[no-untyped-def]
            return self.net(torch.as_tensor(obs, dtype=torch.float32))

    torch.manual_seed(0)
    actor_net = GaussianActor(OBS, ACT, (8,), state_dependent_std=False)
    critic_net, disc = VCritic(OBS, (8,)), MLP(OBS + ACT, 1, (8,), activation=torch.nn.Tanh)
    kw = dict(
        gamma=0.95,
        gae_lambda=0.9,
        max_grad_norm=0.5,
        vf_coef=0.25,
        ent_coef=0.0,
        value_clip=True,
        return_scaling=True,
        disc_update_num=2,
    )
    expert = _expert()
    ours = GAIL(
        policy=ActorPolicy(
            actor=Actor(copy.deepcopy(actor_net)), action_space=SPACE, dist_fn=_dist
        ),
        critic=Critic(copy.deepcopy(critic_net)),
        expert_buffer=expert,
        disc_net=copy.deepcopy(disc),
        optim=1e-3,
        disc_optim=5e-4,
        **kw,
    )
    t_expert = TRB(40)
    for i in range(40):
        row = expert[i]
        t_expert.add(
            TBatch(
                info={},
                **{k: row[k].numpy() for k in ("obs", "act", "obs_next")},
                rew=0.0,
                terminated=False,
                truncated=False,
            )
        )
    peer = TGAIL(
        policy=ProbabilisticActorPolicy(
            actor=Actor(copy.deepcopy(actor_net)), dist_fn=_dist, action_space=SPACE
        ),
        critic=Critic(copy.deepcopy(critic_net)),
        optim=AdamOptimizerFactory(lr=1e-3),
        expert_buffer=t_expert,
        disc_net=copy.deepcopy(disc),
        disc_optim=AdamOptimizerFactory(lr=5e-4),
        **kw,
    )
    # the same expert indices on both sides; the same minibatch permutations
    plan = np.random.default_rng(7).integers(0, 40, size=(4, 18))
    calls = {"ours": 0, "peer": 0}

    def ours_sample(n: int) -> Batch:
        idx = plan[calls["ours"]][:n]
        calls["ours"] += 1
        return expert[idx]

    def peer_sample(n: int):
        idx = plan[calls["peer"]][:n]
        calls["peer"] += 1
        return t_expert[idx], idx

    monkeypatch.setattr(ours, "expert_sample", ours_sample)
    monkeypatch.setattr(t_expert, "sample", peer_sample)
    monkeypatch.setattr(torch, "randperm", lambda n: torch.as_tensor(np.random.permutation(n)))
    for rollout in range(2):
        rows = _rows(seed=rollout)
        b_ours, b_peer = _buffer(rows), TVRB(64, 4)
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
        assert got["loss_disc"] == pytest.approx(expected.disc_loss.mean, rel=1e-5)
        assert got["acc_pi"] == pytest.approx(expected.acc_pi.mean)
        assert got["acc_exp"] == pytest.approx(expected.acc_exp.mean)
        ppo_loss = got["loss_objective"] + got["loss_critic"] + got["loss_entropy"]
        assert ppo_loss == pytest.approx(expected.loss.mean, rel=1e-4, abs=1e-6)
    assert calls["ours"] == calls["peer"] == 4
    pairs = [
        (ours.policy.actor, peer.policy.actor),
        (ours.critic, peer.critic),
        (ours.disc_net, peer.disc_net),
    ]
    for a, b in pairs:
        for p, q in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_gail_reaches_the_threshold(pendulum_dataset: str, tmp_path) -> None:
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="gail",
            task="Pendulum-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
            dataset=pendulum_dataset,
            stop_reward=-1100.0,
        )
    )
    assert result.best_reward >= -1100.0
