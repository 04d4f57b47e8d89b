"""MuJoCo presets (tdrl.presets.mujoco) and the launcher support they use: observation
normalization, linear learning-rate decay and the capped random warm-up.

Each preset runs through the launch API on Hopper-v5 for a few hundred env steps (seconds);
the normalization and the LR schedule are also checked against Tianshou 2.0.1's own
``VectorEnvNormObs`` and ``LRSchedulerFactoryLinear``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from tdrl.env import DummyVectorEnv
from tdrl.errors import PresetError
from tdrl.launch import (
    ExperimentConfig,
    NormObsDummyVectorEnv,
    run_experiment,
    warmup_steps,
)
from tdrl.presets import make_algorithm, mujoco, registry
from tdrl.presets.mujoco import linear_lr_decay, lr_decay_updates, mujoco_actor_critic
from tdrl.trainer.base import BaseTrainer
from tdrl.utils.normalize import TIANSHOU_EPS

pytest.importorskip("mujoco")

ON_POLICY = ["reinforce", "a2c", "ppo", "npg", "trpo"]
OFF_POLICY = ["ddpg", "td3", "sac", "redq"]
ALGOS = ON_POLICY + OFF_POLICY
TASK = "Hopper-v5"


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Record what a launcher run builds (algorithm, collectors) and every update's stats."""
    import tdrl.experiment.build as launch  # where a run makes its algorithm and collectors

    made: dict[str, list[Any]] = {"algorithms": [], "collectors": [], "updates": []}
    make, collector = launch.make_algorithm, launch.Collector

    def make_spy(*args: Any, **kwargs: Any) -> Any:
        made["algorithms"].append(make(*args, **kwargs))
        return made["algorithms"][-1]

    def collector_spy(*args: Any, **kwargs: Any) -> Any:
        made["collectors"].append(collector(*args, **kwargs))
        return made["collectors"][-1]

    log_update = BaseTrainer._log_update

    def log_spy(self: BaseTrainer, stats: dict[str, float]) -> dict[str, float]:
        made["updates"].append(dict(stats))
        return log_update(self, stats)

    monkeypatch.setattr(launch, "make_algorithm", make_spy)
    monkeypatch.setattr(launch, "Collector", collector_spy)
    monkeypatch.setattr(BaseTrainer, "_log_update", log_spy)
    return made


def _cfg(algo: str, tmp_path: Path, **kwargs: Any) -> ExperimentConfig:
    base: dict[str, Any] = {
        "seed": 0,
        "epochs": 1,
        "test_num": 1,
        "stop_reward": 1e9,  # never stop early
        "logger": "none",
        "log_dir": str(tmp_path),
        "show_progress": False,
        "plot": False,
    }
    if algo in ON_POLICY:
        # two collects of 128 steps on 2 envs, whole-rollout or preset minibatches
        base.update(step_per_epoch=256, training_num=2)
        overrides: dict[str, Any] = {
            "step_per_collect": 128,
            "repeat_per_collect": 2,
            "buffer_size": 512,
        }
    else:
        # the preset's 1 env; the warm-up is capped at the one 128-step epoch
        base.update(step_per_epoch=128)
        overrides = {"batch_size": 32, "buffer_size": 10_000}
        if algo == "redq":
            overrides["update_per_step"] = 1.0
    base.update(kwargs)
    base["overrides"] = {**overrides, **base.get("overrides", {})}
    return ExperimentConfig(algo=algo, task=TASK, **base)


# ----------------------------------------------------------------------- the presets
@pytest.mark.parametrize("algo", ALGOS)
def test_mujoco_tasks_select_the_mujoco_preset(algo: str) -> None:
    e = registry.entry(algo, TASK)
    assert e.family == "mujoco" and e.action_space == "continuous"
    assert registry.families(algo)[:2] == ["classic", "mujoco"]
    p: Any = registry.preset(algo, "Walker2d-v5")
    assert p.task == "Walker2d-v5" and p.threshold is None  # gymnasium has none
    assert registry.preset(algo, TASK).threshold == 3800.0
    assert getattr(p, "obs_norm", False) is (algo in ON_POLICY)
    assert getattr(p, "lr_decay", False) is (algo in ON_POLICY)
    assert getattr(p, "warmup_steps", 0) == {"ddpg": 25_000, "td3": 25_000}.get(
        algo, 10_000 if algo in OFF_POLICY else 0
    )


@pytest.mark.parametrize(("algo", "task"), [("ppo", "HalfCheetah-v5"), ("td3", "Ant-v5")])
def test_builders_take_their_sizes_from_the_task(algo: str, task: str) -> None:
    env = gym.make(task)
    d, a = env.observation_space.shape[0], env.action_space.shape[0]  # type: ignore[index]
    env.close()
    alg: Any = make_algorithm(algo, task)
    actor = alg.policy.actor
    first = next(m for m in actor.modules() if isinstance(m, torch.nn.Linear))
    last = [m for m in actor.modules() if isinstance(m, torch.nn.Linear)][-1]
    assert (first.in_features, last.out_features) == (d, a)


def test_preset_values_are_tianshous() -> None:
    ppo: Any = registry.preset("ppo", TASK)
    assert (ppo.lr, ppo.vf_coef, ppo.value_clip) == (3e-4, 0.25, True)
    assert (ppo.advantage_normalization, ppo.recompute_advantage) == (False, True)
    assert (ppo.step_per_epoch, ppo.step_per_collect, ppo.repeat_per_collect) == (30_000, 2048, 10)
    a2c: Any = registry.preset("a2c", TASK)
    assert (a2c.lr, a2c.ent_coef, a2c.step_per_collect, a2c.training_num) == (7e-4, 0.01, 80, 16)
    rf: Any = registry.preset("reinforce", TASK)
    assert (rf.action_bound_method, rf.step_per_collect, rf.training_num) == ("tanh", 2048, 10)
    npg: Any = registry.preset("npg", TASK)
    assert (npg.trust_region_size, npg.optim_critic_iters, npg.step_per_collect) == (0.1, 20, 1024)
    trpo: Any = registry.preset("trpo", TASK)
    assert (trpo.max_kl, trpo.backtrack_coeff, trpo.max_backtracks) == (0.01, 0.8, 10)
    td3: Any = registry.preset("td3", TASK)
    assert (td3.actor_lr, td3.hidden_sizes, td3.batch_size) == (3e-4, (256, 256), 256)
    redq: Any = registry.preset("redq", TASK)
    assert (redq.ensemble_size, redq.update_per_step, redq.actor_delay) == (10, 20.0, 20)
    sac: Any = registry.preset("sac", TASK)
    assert (sac.max_epochs, sac.auto_alpha, sac.warmup_steps) == (50, False, 10_000)
    a2c_alg: Any = make_algorithm("a2c", TASK)
    opt = a2c_alg.optim.optim
    assert type(opt).__name__ == "RMSprop"
    assert (opt.defaults["eps"], opt.defaults["alpha"]) == (1e-5, 0.99)


@pytest.mark.filterwarnings("ignore:action_scaling and action_bound_method:UserWarning")
def test_on_policy_networks_match_tianshous_mujoco_networks() -> None:
    """Same architecture as the scripts' Net/ContinuousActorProbabilistic/ContinuousCritic
    (weights copied layer by layer give the same outputs) and the same action mapping."""
    pytest.importorskip("tianshou")
    from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic

    obs_space, act_space = gym.spaces.Box(-np.inf, np.inf, (11,)), gym.spaces.Box(-2, 2, (3,))
    p: Any = registry.preset("reinforce", TASK)
    policy, v = mujoco_actor_critic(p, obs_space, act_space)
    actor: Any = policy.actor
    critic: Any = v
    ts_actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=11, hidden_sizes=[64, 64], activation=torch.nn.Tanh),
        action_shape=3,
        unbounded=True,
    )
    ts_critic = ContinuousCritic(
        preprocess_net=Net(state_shape=11, hidden_sizes=[64, 64], activation=torch.nn.Tanh)
    )

    def linears(m: torch.nn.Module) -> list[torch.nn.Linear]:
        return [x for x in m.modules() if isinstance(x, torch.nn.Linear)]

    with torch.no_grad():
        for src, dst in [(actor, ts_actor), (critic, ts_critic)]:
            pairs = list(zip(linears(src), linears(dst), strict=True))
            for s, t in pairs:
                t.weight.copy_(s.weight)
                t.bias.copy_(s.bias)
        ts_actor.sigma_param.copy_(actor.log_std.view(-1, 1))
    obs = torch.randn(7, 11) * 3
    (mu, sigma), _ = ts_actor(obs)
    loc, scale = actor(obs)
    torch.testing.assert_close(loc, mu, rtol=0, atol=1e-6)
    torch.testing.assert_close(scale, sigma, rtol=0, atol=1e-6)
    torch.testing.assert_close(critic(obs), ts_critic(obs), rtol=0, atol=1e-6)
    # Tianshou's initialisation: log std -0.5, orthogonal (gain sqrt 2), mean layer x 0.01
    assert actor.log_std.tolist() == [-0.5] * 3
    for layer in linears(actor)[:-1] + linears(critic):
        w = layer.weight.detach()
        small = min(w.shape)
        gram = w @ w.T if w.shape[0] == small else w.T @ w
        torch.testing.assert_close(gram, 2 * torch.eye(small), rtol=0, atol=1e-5)
        assert not layer.bias.detach().any()
    row_norms = torch.linalg.norm(actor.loc.weight.detach(), dim=1)
    torch.testing.assert_close(row_norms, torch.full((3,), 0.01 * math.sqrt(2)))

    def identity(x: Any) -> Any:
        return x

    raw = np.array([[-3.0, 0.3, 5.0], [0.0, -0.9, 1.0]])
    for method in ("tanh", "clip"):
        policy.action_bound_method = method
        ts_policy = ProbabilisticActorPolicy(
            actor=ts_actor,
            dist_fn=identity,
            action_space=act_space,
            action_bound_method=method,  # type: ignore[arg-type]
        )
        np.testing.assert_allclose(policy.map_action(raw), ts_policy.map_action(raw), atol=1e-6)


# ------------------------------------------------------------------ short launcher runs
@pytest.mark.parametrize("algo", ALGOS)
def test_mujoco_preset_trains_a_few_hundred_steps(
    algo: str, tmp_path: Path, spy: dict[str, list[Any]]
) -> None:
    result, _ = run_experiment(_cfg(algo, tmp_path))
    assert result.env_step >= 128 and result.gradient_step > 0
    losses = [v for stats in spy["updates"] for k, v in stats.items() if k.startswith("loss")]
    assert losses and all(math.isfinite(v) for v in losses)
    (alg,) = spy["algorithms"]
    assert all(torch.isfinite(t).all() for t in alg.state_dict().values() if torch.is_tensor(t))
    train = spy["collectors"][0]
    if algo in ON_POLICY:
        # normalized observations; LR decayed linearly to 0 over the run's 2 updates
        assert isinstance(train.env, NormObsDummyVectorEnv)
        assert alg.obs_rms is train.env.obs_rms
        assert len(alg.lr_schedulers) == 1
        assert alg.lr_schedulers[0].get_last_lr() == [0.0]
    else:
        # raw observations; the 10k/25k warm-up capped at the one 128-step epoch
        assert not isinstance(train.env, NormObsDummyVectorEnv) and not alg.lr_schedulers
        assert len(train.buffer) == 128 + result.env_step


def test_tdrl_train_runs_a_mujoco_preset_with_a_short_budget(tmp_path: Path) -> None:
    from tdrl.cli import main

    argv = ["train", "td3", TASK, "--epochs", "1", "--step-per-epoch", "50", "--test-num", "1"]
    argv += ["--logger", "none", "--logdir", str(tmp_path), "--no-progress", "--no-plot"]
    assert main(argv) == 0  # 50 random warm-up steps (25k capped), then 50 trained steps


# ------------------------------------------------------------- observation normalization
def _tianshou_envs(n: int, seed: int) -> Any:
    from tianshou.env import DummyVectorEnv, VectorEnvNormObs

    def make(i: int) -> Callable[[], gym.Env]:
        env = gym.make(TASK)
        env.reset(seed=seed + i)
        return lambda: env

    return VectorEnvNormObs(DummyVectorEnv([make(i) for i in range(n)]))


def test_obs_normalization_matches_tianshous_vector_env_norm_obs() -> None:
    """Same observations, statistics updated first (terminal observations included),
    partial resets folded in as their own batch; Tianshou's clip and epsilon."""
    pytest.importorskip("tianshou")
    n = 3
    fns = []
    for i in range(n):

        def make(i: int = i) -> gym.Env:
            env = gym.make(TASK)
            env.reset(seed=10 + i)  # both sides continue the same seeded env RNGs
            return env

        fns.append(make)
    ours = NormObsDummyVectorEnv(fns)
    theirs = _tianshou_envs(n, 10)
    np.testing.assert_allclose(ours.reset()[0], theirs.reset()[0], rtol=0, atol=1e-12)
    rng = np.random.default_rng(0)
    resets = 0
    for _ in range(150):
        act = rng.uniform(-1, 1, (n, 3)) * 3  # large actions: falls, hence resets
        o1, _, te1, tr1, _ = ours.step(act)
        o2, _, te2, tr2, _ = theirs.step(act)
        np.testing.assert_allclose(o1, o2, rtol=0, atol=1e-10)
        np.testing.assert_array_equal(te1 | tr1, te2 | tr2)
        done = np.flatnonzero(te1 | tr1)
        if len(done):
            resets += 1
            np.testing.assert_allclose(
                ours.reset(env_id=done)[0], theirs.reset(done)[0], rtol=0, atol=1e-10
            )
    assert resets > 0
    rms = theirs.get_obs_rms()
    np.testing.assert_allclose(ours.obs_rms.mean.numpy(), rms.mean, rtol=1e-12)
    np.testing.assert_allclose(ours.obs_rms.var.numpy(), rms.var, rtol=1e-10)
    assert int(ours.obs_rms.count) == rms.count
    assert (ours.obs_rms.clip, ours.obs_rms.eps) == (rms.clip_max, rms.eps) == (10.0, TIANSHOU_EPS)
    ours.close()
    theirs.close()


def test_test_envs_share_the_statistics_frozen() -> None:
    fns = [lambda: gym.make(TASK)] * 2
    train = NormObsDummyVectorEnv(fns)
    test = NormObsDummyVectorEnv(fns, obs_rms=train.obs_rms, update_obs_rms=False)
    assert test.get_obs_rms() is train.get_obs_rms()
    train.reset(seed=0)
    for _ in range(5):
        train.step(np.zeros((2, 3)))
    state = {k: v.clone() for k, v in train.obs_rms.state_dict().items()}
    assert int(state["count"]) == 12
    raw = DummyVectorEnv(fns)
    raw_obs = raw.reset(seed=7)[0]
    test.reset(seed=7)
    for _ in range(5):
        test.step(np.zeros((2, 3)))
    for k, v in train.obs_rms.state_dict().items():
        assert torch.equal(v, state[k]), k  # frozen at test
    expected = np.clip(
        (raw_obs - state["mean"].numpy()) / np.sqrt(state["var"].numpy() + TIANSHOU_EPS), -10, 10
    )
    np.testing.assert_allclose(test.reset(seed=7)[0], expected, rtol=1e-12)
    train.step(np.zeros((2, 3)))  # training moves the statistics the test envs use
    assert not np.allclose(test.reset(seed=7)[0], expected)
    with pytest.raises(TypeError, match="observation_space: expected an array space"):
        NormObsDummyVectorEnv([lambda: gym.make("CliffWalking-v1")])
    for envs in (train, test, raw):
        envs.close()


def test_statistics_count_only_training_observations(
    tmp_path: Path, spy: dict[str, list[Any]]
) -> None:
    result, _ = run_experiment(_cfg("ppo", tmp_path))
    (alg,) = spy["algorithms"]
    # the launcher's and the trainer's resets (2 envs each), every step, every episode reset;
    # none of the test episodes'
    expected = 2 + 2 + result.env_step + result.env_episode
    assert int(alg.obs_rms.count) == expected
    assert spy["collectors"][1].env.obs_rms is alg.obs_rms


def test_statistics_are_checkpointed_and_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run cut after epoch 1 and resumed matches the uninterrupted one, normalization
    statistics included. On Pendulum-v1: a MuJoCo env does not survive the collector's
    pickled env snapshot (gymnasium's EzPickle rebuilds it), so no resume is exact there."""
    monkeypatch.setattr(registry, "_TASK_REGISTRY", dict(registry._TASK_REGISTRY))
    base: Any = registry.preset("ppo", TASK)
    registry.register(
        "ppo",
        "classic",
        base.replace(task="Pendulum-v1", lr_decay=False),  # the decay spans the run
        builder="tdrl.presets.mujoco:build_ppo",
        trainer="onpolicy",
        exploration_noise=False,
        action_space="continuous",
        task="Pendulum-v1",
    )

    def cfg(log_dir: Path, epochs: int, resume: bool = False) -> ExperimentConfig:
        c = _cfg("ppo", log_dir, epochs=epochs, step_per_epoch=128, checkpoint=True)
        c.task, c.resume = "Pendulum-v1", resume
        return c

    full, full_dir = run_experiment(cfg(tmp_path / "full", 2))
    run_experiment(cfg(tmp_path / "cut", 1))  # "killed" after epoch 1
    resumed, cut_dir = run_experiment(cfg(tmp_path / "cut", 2, resume=True))
    assert (resumed.env_step, resumed.best_reward) == (full.env_step, full.best_reward)
    a, b = (
        torch.load(d / "checkpoint.pt", weights_only=False)["algorithm"]
        for d in (full_dir, cut_dir)
    )
    assert {"obs_rms.mean", "obs_rms.var", "obs_rms.count"} <= a.keys()
    assert int(a["obs_rms.count"]) > 256
    for k, v in a.items():
        if torch.is_tensor(v):
            assert torch.equal(v, b[k]), k


# ------------------------------------------------------------------ learning-rate decay
def test_linear_decay_matches_tianshous_scheduler() -> None:
    pytest.importorskip("tianshou")
    from tianshou.algorithm.optim import LRSchedulerFactoryLinear

    p: Any = registry.preset("ppo", TASK, max_epochs=3, step_per_epoch=5000, step_per_collect=2048)
    total = lr_decay_updates(p)
    assert total == math.ceil(5000 / 2048) * 3 == 9
    ours_opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=3e-4)
    theirs_opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=3e-4)
    ours = linear_lr_decay(total)(ours_opt)
    theirs = LRSchedulerFactoryLinear(3, 5000, 2048).create_scheduler(theirs_opt)
    for _ in range(total):
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
        for opt, sched in ((ours_opt, ours), (theirs_opt, theirs)):
            opt.step()
            sched.step()
    assert ours.get_last_lr() == [0.0]
    ours_opt.step()
    ours.step()
    assert ours.get_last_lr() == [0.0]  # clamped past the end (Tianshou would go negative)
    with pytest.raises(ValueError, match="total_updates: expected an int >= 1, got 0"):
        linear_lr_decay(0)


@pytest.mark.parametrize("algo", ON_POLICY)
def test_every_optimizer_decays_once_per_update(algo: str) -> None:
    p: Any = registry.preset(algo, TASK, max_epochs=2, step_per_epoch=1000, step_per_collect=300)
    alg: Any = p.build(gym.spaces.Box(-np.inf, np.inf, (11,)), gym.spaces.Box(-1, 1, (3,)))
    assert len(alg.lr_schedulers) == len(alg._grad_steps) == 1
    sched = alg.lr_schedulers[0]
    total = lr_decay_updates(p)
    assert total == 8
    for n in range(3):
        assert sched.get_last_lr() == pytest.approx([p.lr * (1 - n / total)])
        sched.optimizer.step()
        sched.step()
    state = alg.state_dict()["_lr_schedulers"][0]
    assert state["last_epoch"] == 3
    fresh: Any = p.build(gym.spaces.Box(-np.inf, np.inf, (11,)), gym.spaces.Box(-1, 1, (3,)))
    fresh.load_state_dict(alg.state_dict())
    assert fresh.lr_schedulers[0].get_last_lr() == pytest.approx([p.lr * (1 - 3 / total)])
    off: Any = p.replace(lr_decay=False).build(
        gym.spaces.Box(-np.inf, np.inf, (11,)), gym.spaces.Box(-1, 1, (3,))
    )
    assert off.lr_schedulers == []


def test_lr_decay_needs_step_collects() -> None:
    p: Any = registry.preset("a2c", TASK, step_per_collect=None, episode_per_collect=4)
    with pytest.raises(PresetError, match="'step_per_collect': expected an int with lr_decay"):
        p.build(gym.spaces.Box(-1, 1, (11,)), gym.spaces.Box(-1, 1, (3,)))
    assert (
        p.replace(lr_decay=False)
        .build(gym.spaces.Box(-1, 1, (11,)), gym.spaces.Box(-1, 1, (3,)))
        .lr_schedulers
        == []
    )


# ------------------------------------------------------------------------------ warm-up
def test_warmup_is_capped_at_half_the_training_budget() -> None:
    td3: Any = registry.preset("td3", TASK)
    assert warmup_steps(td3) == 25_000  # 50 epochs x 5000 steps: Tianshou's warm-up
    assert warmup_steps(td3.replace(max_epochs=6)) == 15_000  # half the run
    assert warmup_steps(td3.replace(max_epochs=2)) == warmup_steps(td3.replace(max_epochs=1))
    assert warmup_steps(td3.replace(max_epochs=1, step_per_epoch=2000)) == 2000  # one epoch
    assert warmup_steps(td3.replace(max_epochs=1), explicit=True) == 25_000
    assert warmup_steps(registry.preset("ppo", TASK)) == 0
    for algo in registry.algorithms():  # the tuned presets keep their warm-up
        for family in registry.families(algo):
            p: Any = registry._REGISTRY[(algo, family)].preset
            assert warmup_steps(p) == getattr(p, "warmup_steps", 0), (algo, family)


def test_an_explicit_warmup_is_not_capped(tmp_path: Path, spy: dict[str, list[Any]]) -> None:
    result, _ = run_experiment(_cfg("ddpg", tmp_path, overrides={"warmup_steps": 300}))
    assert len(spy["collectors"][0].buffer) == 300 + result.env_step


def test_overrides_reach_the_preset() -> None:
    cfg = ExperimentConfig(
        algo="td3",
        task=TASK,
        epochs=2,
        overrides={"warmup_steps": 500, "hidden_sizes": (32, 32)},
    )
    assert cfg.overrides == {"warmup_steps": 500, "hidden_sizes": (32, 32), "max_epochs": 2}
    p: Any = cfg.preset()
    assert (p.warmup_steps, p.hidden_sizes, p.max_epochs) == (500, (32, 32), 2)
    assert ExperimentConfig(algo="td3", task=TASK).overrides == {}


def test_module_exports() -> None:
    assert set(mujoco.__all__) <= set(dir(mujoco))
