"""The preset registry: plain data, task families, thresholds, field checks, make_algorithm."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
import torch

import tdrl
from tdrl.errors import PresetError
from tdrl.presets import registry
from tdrl.presets.dqn import DQNPreset
from tdrl.presets.sac import SACPreset

ROOT = Path(__file__).resolve().parent.parent

# The three presets as they were before the registry (tdrl/algorithm/presets.py constants).
OLD_DQN_CARTPOLE = {
    "task": "CartPole-v1",
    "threshold": 195.0,
    "hidden_sizes": (128, 128, 128),
    "dueling": False,
    "lr": 1e-3,
    "gamma": 0.9,
    "n_step": 3,
    "target_update_freq": 320,
    "eps_train": 0.1,
    "eps_test": 0.05,
    "buffer_size": 20_000,
    "training_num": 10,
    "test_num": 100,
    "warmup_steps": 640,
    "max_epochs": 10,
    "step_per_epoch": 10_000,
    "step_per_collect": 10,
    "update_per_step": 0.1,
    "batch_size": 64,
}
OLD_PPO_CARTPOLE = {
    "task": "CartPole-v1",
    "threshold": 195.0,
    "hidden_sizes": (64, 64),
    "lr": 3e-4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "eps_clip": 0.2,
    "vf_coef": 0.5,
    "ent_coef": 0.0,
    "max_grad_norm": 0.5,
    "advantage_normalization": False,
    "value_clip": False,
    "return_scaling": False,
    "deterministic_eval": True,
    "buffer_size": 20_000,
    "training_num": 20,
    "test_num": 100,
    "max_epochs": 10,
    "step_per_epoch": 50_000,
    "step_per_collect": 2000,
    "repeat_per_collect": 10,
    "batch_size": 64,
}
OLD_SAC_PENDULUM = {
    "task": "Pendulum-v1",
    "threshold": -250.0,
    "hidden_sizes": (128, 128),
    "actor_lr": 1e-3,
    "critic_lr": 1e-3,
    "gamma": 0.99,
    "tau": 0.005,
    "auto_alpha": True,
    "alpha": 0.2,
    "alpha_lr": 3e-4,
    "n_step": 1,
    "buffer_size": 20_000,
    "training_num": 10,
    "test_num": 10,
    "warmup_steps": 1000,
    "max_epochs": 20,
    "step_per_epoch": 1000,
    "step_per_collect": 10,
    "update_per_step": 1.0,
    "batch_size": 128,
}


def test_registry_and_tdrl_import_neither_torch_nor_gymnasium() -> None:
    code = (
        "import sys, json, tdrl, tdrl.registry, tdrl.presets as r\n"
        "p = r.preset('dqn', 'CartPole-v1', lr=0.01)\n"
        "fam = [r.task_family(t) for t in ('CartPole-v1', 'Hopper-v5', 'ALE/Pong-v5')]\n"
        "e = r.entry('ppo', 'CartPole-v1')\n"
        "print(json.dumps([fam, p.lr, e.builder, [m for m in ('torch', 'gymnasium', 'tensordict',"
        " 'torchrl', 'numpy', 'tdrl.algorithm', 'tdrl.launch') if m in sys.modules]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    fam, lr, builder, loaded = json.loads(out.stdout)
    assert fam == ["classic", "mujoco", "atari"]
    assert lr == 0.01 and builder == "tdrl.presets.ppo:build"
    assert loaded == []


@pytest.mark.parametrize(
    ("task", "family"),
    [
        ("CartPole-v1", "classic"),
        ("Pendulum-v1", "classic"),
        ("Acrobot-v1", "classic"),
        ("MountainCar-v0", "classic"),
        ("MountainCarContinuous-v0", "classic"),
        ("LunarLander-v3", "classic"),
        ("Hopper-v5", "mujoco"),
        ("HalfCheetah-v4", "mujoco"),
        ("Walker2d-v5", "mujoco"),
        ("Ant-v5", "mujoco"),
        ("Humanoid-v5", "mujoco"),
        ("Swimmer-v5", "mujoco"),
        ("Reacher-v5", "mujoco"),
        ("InvertedPendulum-v5", "mujoco"),
        ("InvertedDoublePendulum-v5", "mujoco"),
        ("ALE/Pong-v5", "atari"),
        ("ALE/Breakout-v5", "atari"),
        ("PongNoFrameskip-v4", "atari"),
        ("BreakoutNoFrameskip-v4", "atari"),
    ],
)
def test_task_family(task: str, family: str) -> None:
    assert registry.task_family(task) == family


def test_stop_thresholds_registry_wins_then_gymnasium_then_none() -> None:
    assert gym.spec("CartPole-v1").reward_threshold == 475.0
    assert registry.stop_threshold("CartPole-v1") == 195.0
    assert registry.stop_threshold("Pendulum-v1") == -250.0
    assert registry.stop_threshold("Acrobot-v1") == gym.spec("Acrobot-v1").reward_threshold
    assert registry.stop_threshold("InvertedPendulum-v5") == 950.0
    assert gym.spec("Walker2d-v5").reward_threshold is None
    assert registry.stop_threshold("Walker2d-v5") is None
    assert registry.preset("sac", "Walker2d-v5").threshold is None  # never stop early
    assert registry.preset("dqn", "Acrobot-v1").threshold == -100.0


def test_todays_presets_move_in_unchanged() -> None:
    from tdrl.algorithm.presets import DQN_CARTPOLE, PPO_CARTPOLE, SAC_PENDULUM
    from tdrl.launch import PRESETS

    for old, algo, task, const in [
        (OLD_DQN_CARTPOLE, "dqn", "CartPole-v1", DQN_CARTPOLE),
        (OLD_PPO_CARTPOLE, "ppo", "CartPole-v1", PPO_CARTPOLE),
        (OLD_SAC_PENDULUM, "sac", "Pendulum-v1", SAC_PENDULUM),
    ]:
        p = registry.preset(algo, task)
        assert dataclasses.asdict(p) == old
        assert p == const == PRESETS[algo]
        assert registry.entry(algo, task).family == "classic"
        assert registry.default_task(algo) == task
    assert DQN_CARTPOLE.trainer_kwargs() == {
        "max_epochs": 10,
        "step_per_epoch": 10_000,
        "step_per_collect": 10,
        "update_per_step": 0.1,
        "batch_size": 64,
        "episode_per_test": 100,
    }
    assert PPO_CARTPOLE.trainer_kwargs() == {
        "max_epochs": 10,
        "step_per_epoch": 50_000,
        "step_per_collect": 2000,
        "repeat_per_collect": 10,
        "batch_size": 64,
        "episode_per_test": 100,
    }


def test_entries_name_builder_trainer_and_exploration_noise() -> None:
    dqn, ppo, sac = (registry.entry(a, t) for a, t in [("dqn", "CartPole-v1"),
                                                         ("ppo", "CartPole-v1"),
                                                         ("sac", "Pendulum-v1")])  # fmt: skip
    assert (dqn.builder, dqn.trainer, dqn.exploration_noise) == (
        "tdrl.presets.dqn:build",
        "offpolicy",
        True,
    )
    assert (ppo.builder, ppo.trainer, ppo.exploration_noise) == (
        "tdrl.presets.ppo:build",
        "onpolicy",
        False,
    )
    assert (sac.builder, sac.trainer, sac.exploration_noise) == (
        "tdrl.presets.sac:build",
        "offpolicy",
        False,
    )
    assert registry.families("sac")[:2] == ["classic", "mujoco"]
    assert {"dqn", "ppo", "sac"} <= set(registry.algorithms())


def _message(exc: pytest.ExceptionInfo[BaseException]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize(
    ("make", "field", "expected", "actual"),
    [
        (lambda: DQNPreset(lr=-1e-3), "'lr'", "> 0", "-0.001"),
        (lambda: DQNPreset(batch_size=0), "'batch_size'", "> 0", "0"),
        (lambda: DQNPreset(lrate=0.1), "'lrate'", "batch_size", "0.1"),
        (lambda: DQNPreset().replace(lr=-1.0), "'lr'", "> 0", "-1.0"),
        (lambda: SACPreset().replace(batch_size=0), "'batch_size'", "int > 0", "0"),
        (lambda: DQNPreset().replace(lrate=0.1), "'lrate'", "lr", "0.1"),
        (lambda: dataclasses.replace(DQNPreset(), lr=-2.0), "'lr'", "> 0", "-2.0"),
        (lambda: dataclasses.replace(DQNPreset(), bogus=1), "'bogus'", "one of", "1"),
        (lambda: registry.preset("ppo", "CartPole-v1", lr=-3e-4), "'lr'", "> 0", "-0.0003"),
        (lambda: registry.preset("ppo", "CartPole-v1", batch_size=0), "'batch_size'", ">", "0"),
        (lambda: registry.preset("ppo", "CartPole-v1", bogus=1), "'bogus'", "one of", "1"),
        (lambda: DQNPreset(batch_size=64.0), "'batch_size'", "an int", "64.0"),
        (lambda: DQNPreset(gamma=1.5), "'gamma'", "[0, 1]", "1.5"),
        (lambda: DQNPreset(dueling="yes"), "'dueling'", "a bool", "'yes'"),
        (lambda: DQNPreset(hidden_sizes=(64, 0)), "'hidden_sizes'", "tuple", "(64, 0)"),
        (lambda: SACPreset(tau=0.0), "'tau'", "(0, 1]", "0.0"),
        (lambda: SACPreset(actor_lr=float("nan")), "'actor_lr'", "a float", "nan"),
    ],
)
def test_fields_are_checked_on_creation_and_override(
    make: object, field: str, expected: str, actual: str
) -> None:
    with pytest.raises(ValueError) as exc:
        make()  # type: ignore[operator]
    assert isinstance(exc.value, PresetError)
    msg = _message(exc)
    assert field in msg.split(":")[0]
    want, got = msg.split(": expected ")[1].split(", got ")
    assert expected in want and actual in got


def test_valid_overrides_keep_everything_else() -> None:
    p = registry.preset("dqn", "CartPole-v1", lr=0.01, hidden_sizes=[32, 32])
    assert p.lr == 0.01 and p.hidden_sizes == (32, 32)
    assert dataclasses.asdict(p) == {**OLD_DQN_CARTPOLE, "lr": 0.01, "hidden_sizes": (32, 32)}
    assert registry.preset("dqn", "CartPole-v1", threshold=None).threshold is None


def test_missing_family_preset_is_one_clear_line() -> None:
    with pytest.raises(PresetError) as exc:
        registry.preset("dqn", "Hopper-v5")
    msg = _message(exc)
    assert "dqn" in msg and "Hopper-v5" in msg and "mujoco" in msg and "classic" in msg
    with pytest.raises(PresetError) as exc:
        registry.entry("sac", "ALE/Pong-v5")
    msg = _message(exc)
    assert "ALE/Pong-v5" in msg and "atari" in msg and "classic, mujoco" in msg
    with pytest.raises(PresetError, match=r"algorithm: expected one of .*dqn.*, got 'nope'"):
        registry.preset("nope", "CartPole-v1")


def test_register_a_family_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    e = registry.register(
        "dqn",
        "atari",
        DQNPreset(task="ALE/Pong-v5", lr=1e-4, buffer_size=100_000),
        builder="tdrl.presets.dqn:build",
        trainer="offpolicy",
        exploration_noise=True,
        action_space="discrete",
    )
    assert registry.entry("dqn", "PongNoFrameskip-v4") is e
    assert registry.preset("dqn", "ALE/Breakout-v5").lr == 1e-4
    assert registry.families("dqn") == ["classic", "atari"]
    with pytest.raises(PresetError, match="family"):
        registry.register(
            "dqn",
            "robotics",
            DQNPreset(),
            builder="m:f",
            trainer="offpolicy",
            exploration_noise=True,
            action_space="discrete",
        )
    with pytest.raises(PresetError, match="trainer"):
        registry.register(
            "dqn",
            "classic",
            DQNPreset(),
            builder="m:f",
            trainer="online",  # type: ignore[arg-type]
            exploration_noise=True,
            action_space="discrete",
        )


def test_make_algorithm_builds_the_preset_for_the_task() -> None:
    from tdrl.algorithm import DQN, PPO, SAC

    assert isinstance(tdrl.make_algorithm("dqn", "CartPole-v1"), DQN)
    assert isinstance(tdrl.make_algorithm("ppo", "Acrobot-v1"), PPO)
    assert isinstance(tdrl.make_algorithm("ppo", "Pendulum-v1"), PPO)  # Gaussian actor
    sac = tdrl.make_algorithm("sac", "Pendulum-v1")
    assert isinstance(sac, SAC)
    torch.manual_seed(0)
    a = tdrl.make_algorithm("dqn", "CartPole-v1")
    torch.manual_seed(0)
    b = registry.preset("dqn", "CartPole-v1").build(
        gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)
    )
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    assert all(torch.equal(sa[k], sb[k]) for k in sa if isinstance(sa[k], torch.Tensor))
    q = a.policy.model(torch.zeros(1, 4))
    assert q.shape == (1, 2)


@pytest.mark.parametrize(
    ("algo", "task", "message"),
    [
        (
            "dqn",
            "Pendulum-v1",
            "dqn needs a Discrete action space; Pendulum-v1 has Box(-2.0, 2.0, (1,), float32)",
        ),
        ("sac", "CartPole-v1", "sac needs a Box action space; CartPole-v1 has Discrete(2)"),
        ("sac", "Acrobot-v1", "sac needs a Box action space; Acrobot-v1 has Discrete(3)"),
    ],
)
def test_make_algorithm_rejects_an_action_space_in_one_line(
    algo: str, task: str, message: str
) -> None:
    with pytest.raises(PresetError) as exc:
        tdrl.make_algorithm(algo, task)
    assert _message(exc) == message


def test_launch_builds_through_make_algorithm(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tdrl.experiment.build as launch  # where a run makes its algorithm
    from tdrl.experiment import ExperimentConfig, run_experiment

    built = []
    real = launch.make_algorithm

    def spy(*args: object, **kwargs: object) -> object:
        alg = real(*args, **kwargs)  # type: ignore[arg-type]
        built.append((args[:2], alg))
        return alg

    monkeypatch.setattr(launch, "make_algorithm", spy)
    cfg = ExperimentConfig(
        "ppo",
        "CartPole-v1",
        epochs=1,
        step_per_epoch=200,
        training_num=2,
        test_num=2,
        logger="none",
        log_dir=str(tmp_path),
        show_progress=False,
        plot=False,
    )
    result, _ = run_experiment(cfg)
    assert [b[0] for b in built] == [("ppo", "CartPole-v1")]
    assert result.gradient_step > 0


def test_tdrl_exports_lazily() -> None:
    from tdrl.algorithm.presets import make_algorithm
    from tdrl.presets.make import make_algorithm as new_home

    assert tdrl.make_algorithm is make_algorithm is new_home
    assert tdrl.preset is registry.preset
    assert sorted(tdrl.__all__) == sorted(tdrl._EXPORTS)
    for name in tdrl.__all__:
        assert getattr(tdrl, name) is not None
    with pytest.raises(AttributeError):
        _ = tdrl.nothing_here  # type: ignore[attr-defined]


def test_old_import_paths_are_aliases_of_the_new_homes() -> None:
    import tdrl.algorithm.presets as old_builders
    import tdrl.presets
    import tdrl.registry as old_registry
    from tdrl.presets import dqn, make, ppo, sac

    assert old_registry.PresetError is tdrl.presets.PresetError is PresetError
    assert old_registry.DQNPreset is DQNPreset and old_registry.SACPreset is SACPreset
    assert old_registry.PPOPreset is ppo.PPOPreset
    for name in old_registry.__all__:
        if hasattr(registry, name):
            assert getattr(old_registry, name) is getattr(registry, name), name
    assert old_registry._import is registry._import
    assert old_registry._REGISTRY is registry._REGISTRY
    assert (old_builders.build_dqn, old_builders.build_ppo, old_builders.build_sac) == (
        dqn.build,
        ppo.build,
        sac.build,
    )
    assert old_builders.check_action_space is make.check_action_space
    assert old_builders.make_algorithm is tdrl.presets.make_algorithm is make.make_algorithm
    assert old_builders.DQN_CARTPOLE is old_builders.DQN_CARTPOLE  # one object per name
    assert isinstance(old_builders.PPO_CARTPOLE, ppo.PPOPreset)
    assert set(old_builders.__all__) <= set(dir(old_builders)) | set(old_builders._NAMES) | set(
        old_builders._TUNED
    )
    with pytest.raises(AttributeError):
        _ = old_builders.nothing_here  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = tdrl.presets.nothing_here  # type: ignore[attr-defined]


def test_discovery_skips_the_infrastructure_modules() -> None:
    import pkgutil

    import tdrl.presets

    names = {m.name for m in pkgutil.iter_modules(tdrl.presets.__path__)}
    assert names >= registry.INFRASTRUCTURE
    assert {"dqn", "ppo", "sac", "mujoco", "atari"} <= names - registry.INFRASTRUCTURE


# Each preset's own range rules (these were the modules' doctest examples): the exact
# one-line message of a ``replace`` with a bad value.
PRESET_RULES = [
    ("a2c", "CartPole-v1", "vf_coef", -1.0, "a2c preset field 'vf_coef': expected a float >= 0, got -1.0"),  # noqa: E501
    ("dqn", "PongNoFrameskip-v4", "eps_decay_steps", 0, "dqn preset field 'eps_decay_steps': expected an int >= 1, got 0"),  # noqa: E501
    ("bc", "Pendulum-v1", "output", "scores", "bc preset field 'output': expected a str in ('logits', 'probs'), got 'scores'"),  # noqa: E501
    ("bcq", "Pendulum-v1", "lmbda", 1.5, "bcq preset field 'lmbda': expected a float in [0, 1], got 1.5"),  # noqa: E501
    ("bdqn", "Pendulum-v1", "action_bins", 1, "bdqn preset field 'action_bins': expected an int >= 2, got 1"),  # noqa: E501
    ("c51", "CartPole-v1", "v_max", -20.0, "c51 preset field 'v_max': expected a float > v_min = -10.0, got -20.0"),  # noqa: E501
    ("cql", "Pendulum-v1", "temperature", 0.0, "cql preset field 'temperature': expected a float > 0, got 0.0"),  # noqa: E501
    ("ddpg", "Pendulum-v1", "exploration_noise", "uniform", "ddpg preset field 'exploration_noise': expected a str 'gaussian' or 'ou', got 'uniform'"),  # noqa: E501
    ("discrete_bcq", "CartPole-v1", "unlikely_action_threshold", 1.0, "discrete_bcq preset field 'unlikely_action_threshold': expected a float in [0, 1), got 1.0"),  # noqa: E501
    ("discrete_cql", "CartPole-v1", "num_quantiles", 1, "discrete_cql preset field 'num_quantiles': expected an int >= 2, got 1"),  # noqa: E501
    ("discrete_crr", "CartPole-v1", "policy_improvement_mode", "max", "discrete_crr preset field 'policy_improvement_mode': expected a str in ('exp', 'binary', 'all'), got 'max'"),  # noqa: E501
    ("discrete_sac", "CartPole-v1", "n_step", 0, "discrete_sac preset field 'n_step': expected an int > 0, got 0"),  # noqa: E501
    ("dqn", "CartPole-v1", "n_step", 0, "dqn preset field 'n_step': expected an int > 0, got 0"),
    ("drqn", "CartPole-v1", "stack_num", 0, "drqn preset field 'stack_num': expected an int >= 1, got 0"),  # noqa: E501
    ("fqf", "CartPole-v1", "num_fractions", 1, "fqf preset field 'num_fractions': expected an int >= 2, got 1"),  # noqa: E501
    ("gail", "Pendulum-v1", "disc_update_num", 0, "gail preset field 'disc_update_num': expected an int > 0, got 0"),  # noqa: E501
    ("icm", "ppo", "forward_loss_weight", 1.5, "icm preset field 'forward_loss_weight': expected a float in [0, 1], got 1.5"),  # noqa: E501
    ("iql", "Pendulum-v1", "expectile", 1.0, "iql preset field 'expectile': expected a float in (0, 1), got 1.0"),  # noqa: E501
    ("iqn", "CartPole-v1", "online_sample_size", 1, "iqn preset field 'online_sample_size': expected an int >= 2, got 1"),  # noqa: E501
    ("npg", "Pendulum-v1", "optim_critic_iters", 0, "npg preset field 'optim_critic_iters': expected an int > 0, got 0"),  # noqa: E501
    ("ppo", "Pendulum-v1", "dual_clip", 0.5, "ppo preset field 'dual_clip': expected a float or None > 1, got 0.5"),  # noqa: E501
    ("psrl", "tdrl/NChain-v0", "rew_std_prior", 0.0, "psrl preset field 'rew_std_prior': expected a float > 0, got 0.0"),  # noqa: E501
    ("qrdqn", "CartPole-v1", "num_quantiles", 1, "qrdqn preset field 'num_quantiles': expected an int >= 2, got 1"),  # noqa: E501
    ("rainbow", "CartPole-v1", "v_max", -20.0, "rainbow preset field 'v_max': expected a float > v_min = -10.0, got -20.0"),  # noqa: E501
    ("redq", "Pendulum-v1", "subset_size", 5, "redq preset field 'subset_size': expected an int in [1, ensemble_size=4], got 5"),  # noqa: E501
    ("reinforce", "CartPole-v1", "step_per_collect", 100, "reinforce preset fields 'step_per_collect' and 'episode_per_collect': expected exactly one of them set, got 100 and 8"),  # noqa: E501
    ("td3", "Pendulum-v1", "update_actor_freq", 0, "td3 preset field 'update_actor_freq': expected an int >= 1, got 0"),  # noqa: E501
    ("td3_bc", "Pendulum-v1", "alpha", 0.0, "td3_bc preset field 'alpha': expected a float > 0, got 0.0"),  # noqa: E501
    ("trpo", "Pendulum-v1", "backtrack_coeff", 1.5, "trpo preset field 'backtrack_coeff': expected a float in (0, 1), got 1.5"),  # noqa: E501
]  # fmt: skip


@pytest.mark.parametrize(("algo", "task", "field", "bad", "message"), PRESET_RULES)
def test_each_presets_own_rules_name_field_expectation_and_value(
    algo: str, task: str, field: str, bad: object, message: str
) -> None:
    if algo == "icm":  # the ICM presets sit beside the algorithms' (key: the base algorithm)
        from tdrl.presets.icm import ICM_PRESETS

        p = ICM_PRESETS[task]
    else:
        p = registry.preset(algo, task)
    with pytest.raises(PresetError) as exc:
        p.replace(**{field: bad})
    assert _message(exc) == message
