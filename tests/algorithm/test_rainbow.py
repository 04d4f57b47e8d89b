"""Rainbow: C51 + noisy dueling nets + n-step + PER; noise drawn before every gradient step."""

from __future__ import annotations

import copy
import io
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict
from torchrl.envs.utils import ExplorationType, set_exploration_type

from tdrl.algorithm.base import make_batch, within_training_step
from tdrl.algorithm.modelfree.rainbow import Rainbow, RainbowPolicy
from tdrl.data.batch import Batch
from tdrl.data.buffer import VectorReplayBuffer
from tdrl.data.buffer.prio import PrioritizedVectorReplayBuffer
from tdrl.utils.net_rainbow import RainbowNet
from tdrl.utils.noisy import NoisyLinear
from tests.algorithm.fakebuf import FakePrioBuffer

N_ATOMS = 11


def _policy(obs_dim: int = 4, n: int = 2, noisy_std: float = 0.5, **kw: Any) -> RainbowPolicy:
    net = RainbowNet(obs_dim, n, num_atoms=N_ATOMS, hidden_sizes=(16,), noisy_std=noisy_std)
    return RainbowPolicy(
        model=net, action_space=gym.spaces.Discrete(n), num_atoms=N_ATOMS, v_min=-5, v_max=5, **kw
    )


def _fill(buf: VectorReplayBuffer, steps: int, seed: int = 0, n_env: int = 3) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        buf.add(
            Batch(
                obs=rng.normal(size=(n_env, 4)).astype(np.float32),
                act=rng.integers(0, 2, n_env),
                rew=rng.normal(size=n_env).astype(np.float32),
                terminated=rng.random(n_env) < 0.15,
                truncated=rng.random(n_env) < 0.1,
                obs_next=rng.normal(size=(n_env, 4)).astype(np.float32),
            )
        )


def _noise(net: torch.nn.Module) -> list[torch.Tensor]:
    return [b.clone() for b in net.buffers()]


def test_noise_is_redrawn_before_every_gradient_step_and_synced_with_the_target() -> None:
    torch.manual_seed(0)
    alg = Rainbow(policy=_policy(), gamma=0.9, n_step=2, target_update_freq=3)
    buf = VectorReplayBuffer(60, 3)
    _fill(buf, 15)
    online, target = alg.policy.model, alg.model_old
    assert target is not None
    seen = []
    for k in range(5):
        before = _noise(online)
        alg.update(buf, 8)
        after = _noise(online)
        assert all(not torch.equal(a, b) for a, b in zip(after, before))  # new noise each step
        seen.append(after)
        same = all(torch.equal(a, t) for a, t in zip(after, target.buffers()))
        # synced before updates 0 and 3: the target holds the online net's noise of that
        # step; in the other steps it has drawn its own
        assert same == (k % 3 == 0), k
    # the target net computes with its noise in training mode, with the mean weights in eval
    assert target.training
    x = torch.randn(4, 4)
    assert not torch.equal(target(x), online(x))  # (different weights anyway after updates)
    alg.eval()
    assert not target.training and not online.training
    alg.sync_target()
    torch.testing.assert_close(target(x), online(x))


def test_resample_counts_online_and_target_layers() -> None:
    alg = Rainbow(policy=_policy(), target_update_freq=5)
    assert alg.resample_noise() == 4  # advantage + value stream, online + target
    assert Rainbow(policy=_policy()).resample_noise() == 2  # no target network


def test_policy_acts_with_noise_in_training_mode_and_mean_weights_otherwise() -> None:
    torch.manual_seed(0)
    policy = _policy(noisy_std=5.0)
    obs = torch.randn(64, 4)
    batch = make_batch({"obs": obs}, 64)
    noisy = policy(batch)["logits"]
    policy.model.eval()
    mean = policy(batch)["logits"]
    assert not torch.allclose(noisy, mean)
    policy.model.train()
    # TorchRL's deterministic mode uses the mean weights whatever the module's mode
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        td = policy(TensorDict({"obs": obs}, [64]))
    torch.testing.assert_close(td["logits"], mean)
    assert policy.model.training  # the mode is restored
    # the mean weights give the Q of the eval-mode network: sum_i p_i z_i
    policy.model.eval()
    probs = policy.model(obs)
    torch.testing.assert_close(mean, (probs * policy.support).sum(-1))


def test_network_is_dueling_per_atom_with_noisy_streams() -> None:
    torch.manual_seed(0)
    net = RainbowNet(4, 3, num_atoms=5, hidden_sizes=(8,), head_hidden_sizes=(6,))
    assert [type(m).__name__ for m in net.advantage] == ["NoisyLinear", "ReLU", "NoisyLinear"]
    assert sum(isinstance(m, NoisyLinear) for m in net.modules()) == 4
    net.eval()
    x = torch.randn(7, 4)
    h = net.trunk(x)
    adv = net.advantage(h).view(7, 3, 5)
    v = net.value(h).view(7, 1, 5)  # type: ignore[misc]
    torch.testing.assert_close(net(x), torch.softmax(adv - adv.mean(1, keepdim=True) + v, -1))
    plain = RainbowNet(4, 3, num_atoms=5, hidden_sizes=(8,), noisy=False, dueling=False)
    assert plain.value is None and not any(isinstance(m, NoisyLinear) for m in plain.modules())


def test_prioritized_replay_weights_the_loss_and_gets_the_cross_entropy_back() -> None:
    torch.manual_seed(0)
    buf = FakePrioBuffer(60, 3)
    _fill(buf, 15)
    alg = Rainbow(policy=_policy(), gamma=0.9, n_step=3, target_update_freq=4)
    idx = buf.sample_indices(0)[:10]
    batch = alg.preprocess(buf[idx], buf, idx)
    assert "weight" in batch
    loss = alg(batch)["loss_qvalue"]
    ce = batch["td_error"]
    assert bool((ce > 0).all())
    torch.testing.assert_close(loss, (batch["weight"].reshape(-1) * ce).mean())
    alg.update(buf, 8)
    ((written_idx, written),) = buf.updates
    assert written_idx.shape == (8,) and bool((written > 0).all())


def test_prioritized_training_through_the_python_api() -> None:
    """A short CartPole run with a PrioritizedVectorReplayBuffer and tdrl's trainer."""
    from tdrl.data.collector import Collector
    from tdrl.env import DummyVectorEnv
    from tdrl.presets.rainbow import RainbowPreset, build
    from tdrl.trainer import OffPolicyTrainer

    torch.manual_seed(0)
    preset = RainbowPreset(hidden_sizes=(32,), num_atoms=N_ATOMS)
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")] * 2)
    alg = build(preset, envs.observation_space[0], envs.action_space[0])
    buf = PrioritizedVectorReplayBuffer(
        2000, 2, alpha=preset.alpha, beta=preset.beta, weight_norm=True
    )
    train = Collector(alg.policy, envs, buf, exploration_noise=True)
    train.reset(seed=0)
    train.collect(n_step=128, random=True)
    before = buf.get_weight(buf.sample_indices(0)).copy()
    result = OffPolicyTrainer(
        alg,
        train,
        max_epochs=1,
        step_per_epoch=200,
        step_per_collect=8,
        batch_size=32,
        update_per_step=0.25,
    ).run()
    assert result.gradient_step == 50
    after = buf.get_weight(buf.sample_indices(0)[: len(before)])
    assert not np.allclose(before, after)  # priorities came back from the updates
    envs.close()


def test_torchrl_batch_term_reaches_only_the_online_network() -> None:
    torch.manual_seed(0)
    alg = Rainbow(policy=_policy(), gamma=0.9, target_update_freq=10)
    alg.set_keys(observation="observation", action="action")
    n = 16
    td = TensorDict(
        {
            "observation": torch.randn(n, 4),
            "action": torch.randint(2, (n,)),
            "next": {
                "observation": torch.randn(n, 4),
                "reward": torch.randn(n, 1),
                "done": torch.zeros(n, 1, dtype=torch.bool),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        [n],
    )
    before = _noise(alg.policy.model)
    out = alg(td)
    assert set(out.keys()) == {"loss_qvalue"} and torch.isfinite(out["loss_qvalue"])
    assert not all(torch.equal(a, b) for a, b in zip(before, alg.policy.model.buffers()))
    params = dict(alg.named_parameters())
    grads = torch.autograd.grad(out["loss_qvalue"], list(params.values()), allow_unused=True)
    reached = {k for (k, _), g in zip(params.items(), grads) if g is not None and g.abs().sum() > 0}
    assert reached and all(k.startswith("policy.model.") for k in reached)
    assert any("sigma" in k for k in reached)  # the noise scales learn too
    # the one-step target: R = r, d = gamma (1 - terminated)
    torch.testing.assert_close(td["target_reward"], td["next", "reward"].reshape(-1))
    torch.testing.assert_close(td["target_discount"], torch.full((n,), 0.9))


def test_state_dict_round_trip_keeps_noise_target_and_optimizer() -> None:
    torch.manual_seed(0)
    buf = VectorReplayBuffer(60, 3)
    _fill(buf, 15)

    def make() -> Rainbow:
        return Rainbow(policy=_policy(), gamma=0.9, n_step=2, target_update_freq=2)

    a = make()
    for _ in range(3):
        a.update(buf, 8)
    f = io.BytesIO()
    torch.save(a.state_dict(), f)
    f.seek(0)
    b = make()
    b.load_state_dict(torch.load(f, weights_only=False))
    x = torch.randn(5, 4)
    torch.testing.assert_close(b.policy.model(x), a.policy.model(x))  # same noise too
    assert a.model_old is not None and b.model_old is not None
    torch.testing.assert_close(b.model_old(x), a.model_old(x))
    idx = buf.sample_indices(0)[:8]
    torch.manual_seed(1)
    la = a._update_with_batch(a.preprocess(buf[idx], buf, idx), 8, 1)["loss_qvalue"]
    torch.manual_seed(1)
    lb = b._update_with_batch(b.preprocess(buf[idx], buf, idx), 8, 1)["loss_qvalue"]
    assert la == pytest.approx(lb)


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="num_atoms: expected an int >= 2, got 1"):
        RainbowPolicy(
            model=RainbowNet(4, 2, num_atoms=1), action_space=gym.spaces.Discrete(2), num_atoms=1
        )
    with pytest.raises(ValueError, match=r"v_max: expected a value > v_min = 1\.0, got 0\.0"):
        RainbowPolicy(
            model=RainbowNet(4, 2, num_atoms=3),
            action_space=gym.spaces.Discrete(2),
            num_atoms=3,
            v_min=1.0,
            v_max=0.0,
        )
    with pytest.raises(ValueError, match="n_actions: expected an int >= 1, got 0"):
        RainbowNet(4, 0)
    with pytest.raises(ValueError, match=r"noisy_std: expected a float >= 0, got -0\.1"):
        RainbowNet(4, 2, noisy_std=-0.1)
    with pytest.raises(ValueError, match=r"gamma: expected a value in \[0, 1\], got 2.0"):
        Rainbow(policy=_policy(), gamma=2.0)
    with pytest.raises(TypeError, match="policy: expected a C51Policy, got DQNPolicy"):
        from tdrl.algorithm.modelfree.dqn import DQNPolicy

        Rainbow(policy=DQNPolicy(model=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model output: expected"):
        p = RainbowPolicy(
            model=torch.nn.Linear(4, 2), action_space=gym.spaces.Discrete(2), num_atoms=3
        )
        p(make_batch({"obs": torch.zeros(1, 4)}, 1))


# --------------------------------------------------------------------------- Tianshou
def _tianshou_net(noisy_std: float) -> torch.nn.Module:
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.discrete import NoisyLinear as TNoisyLinear

    def noisy(x: int, y: int) -> torch.nn.Module:
        return TNoisyLinear(x, y, noisy_std)

    return Net(
        state_shape=4,
        action_shape=2,
        hidden_sizes=[16, 16],
        softmax=True,
        num_atoms=N_ATOMS,
        dueling_param=({"linear_layer": noisy}, {"linear_layer": noisy}),
    )


def test_update_matches_tianshou_exactly() -> None:
    """Same weights, noise seeds, buffer and indices: same losses, parameters, noise and
    priorities as Tianshou 2.0.1's ``RainbowDQN`` over 6 updates (target syncs at 0, 2, 4),
    with prioritized replay. ``n_step = 1``: with more steps tdrl bootstraps at
    ``s_{t+n}`` and Tianshou at ``s_{t+1}`` (C51's deliberate difference)."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm import RainbowDQN
    from tianshou.algorithm.modelfree.c51 import C51Policy as TC51Policy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch as TBatch
    from tianshou.data import PrioritizedVectorReplayBuffer as TPVRB
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    torch.manual_seed(0)
    tnet = _tianshou_net(0.1)
    net = RainbowNet(4, 2, num_atoms=N_ATOMS, hidden_sizes=(16, 16), noisy_std=0.1)
    # the same layers in the same order: (weight, bias) per linear layer, then
    # (mu_W, sigma_W, mu_bias, sigma_bias, eps_p, eps_q) per noisy layer
    net.load_state_dict(
        dict(zip(net.state_dict(), copy.deepcopy(list(tnet.state_dict().values()))))
    )
    space = gym.spaces.Discrete(2)
    ours = Rainbow(
        policy=RainbowPolicy(model=net, action_space=space, num_atoms=N_ATOMS, v_min=-5, v_max=5),
        gamma=0.9,
        target_update_freq=2,
    )
    peer = RainbowDQN(
        policy=TC51Policy(model=tnet, action_space=space, num_atoms=N_ATOMS, v_min=-5, v_max=5),
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        target_update_freq=2,
    )
    b_ours = PrioritizedVectorReplayBuffer(60, 3, alpha=0.6, beta=0.4, weight_norm=True)
    b_peer = TPVRB(60, 3, alpha=0.6, beta=0.4, weight_norm=True)
    rng = np.random.default_rng(0)
    for _ in range(15):
        d: dict[str, Any] = dict(
            obs=rng.normal(size=(3, 4)).astype(np.float32),
            act=rng.integers(0, 2, 3),
            rew=rng.normal(size=3).astype(np.float32),
            terminated=rng.random(3) < 0.15,
            truncated=rng.random(3) < 0.1,
            obs_next=rng.normal(size=(3, 4)).astype(np.float32),
        )
        b_ours.add(Batch(**d))
        b_peer.add(TBatch(info={}, **d))
    stored = b_ours.sample_indices(0)
    for step in range(6):
        idx = rng.integers(0, 45, 16)
        idx = idx[np.isin(idx, stored)]
        torch.manual_seed(100 + step)  # the noise both draw at the start of the step
        with within_training_step(ours.policy):
            bo = ours.preprocess(b_ours[idx], b_ours, idx)
            got = ours._update_with_batch(bo, 16, 1)
            ours.postprocess(bo, b_ours, idx)
        torch.manual_seed(100 + step)
        with policy_within_training_step(peer.policy), torch_train_mode(peer):
            tb = peer._preprocess_batch(b_peer[idx], b_peer, idx)
            expected = peer._update_with_batch(tb)
            peer._postprocess_batch(tb, b_peer, idx)
        assert got["loss"] == pytest.approx(expected.loss, rel=1e-5), step
        # the priorities written back: (|cross-entropy| + eps) ** alpha
        np.testing.assert_allclose(
            b_ours.prio_sampler.tree[stored], b_peer.weight[stored], rtol=1e-5
        )
    # parameters and noise buffers (Tianshou's noise tensors are parameters), online and target
    for t_ours, t_peer in zip(ours.policy.model.state_dict().values(), tnet.state_dict().values()):
        torch.testing.assert_close(t_ours, t_peer, rtol=1e-5, atol=1e-6)
    assert ours.model_old is not None and peer.model_old is not None
    for t_ours, t_peer in zip(
        ours.model_old.state_dict().values(), peer.model_old.state_dict().values()
    ):
        torch.testing.assert_close(t_ours, t_peer, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- convergence
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_rainbow_cartpole_reaches_threshold(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tdrl.launch import ExperimentConfig, run_experiment

    result, _ = run_experiment(
        ExperimentConfig(
            algo="rainbow",
            task="CartPole-v1",
            seed=0,
            logger="none",
            log_dir=str(tmp_path),
            show_progress=False,
            plot=False,
        )
    )
    assert result.best_reward >= 195
