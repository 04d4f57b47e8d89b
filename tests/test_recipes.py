"""Smoke tests of ``recipes/``: every recipe runs a few hundred steps in a subprocess and ends
with ``tdrl train``'s summary line.

The Atari recipes (a CNN, long episodes) run in the slow suite, the others in the default
suite (about 5 s of CPU each).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "recipes"
SUMMARY = re.compile(
    r"^(\w+) on (\S+): best test return -?[\d.]+ ± [\d.]+ \(epoch \d+; the saved policy is "
    r"epoch \d+'s\), \d+ "
    r"(env|gradient) steps, [\d.]+ s; logs in \S+"
)

OFF = ("--epochs", "1", "--step-per-epoch", "200", "--training-num", "2", "--test-num", "1")
ON = (*OFF, "--step-per-collect", "100")
MUJOCO_OFF = (
    *(*OFF[:4], "--test-num", "1", "--buffer-size", "1000"),
    *("--step-per-collect", "8", "--update-per-step", "0.25"),
)
MUJOCO_ON = (*ON, "--batch-size", "64")
OFFLINE = ("--epochs", "1", "--step-per-epoch", "50", "--test-num", "1", "--dataset", "DATA")
ATARI = (  # Pong: a short test episode (the untrained agent loses 21-0)
    *("--epochs", "1", "--step-per-epoch", "100", "--training-num", "1", "--test-num", "1"),
    *("--buffer-size", "500", "--batch-size", "8"),
)

# recipe -> (algorithm in the summary line, task, flags)
CASES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "classic_dqn": ("dqn", "CartPole-v1", OFF),
    "classic_c51": ("c51", "CartPole-v1", OFF),
    "classic_rainbow": ("rainbow", "CartPole-v1", OFF),
    "classic_ppo": ("ppo", "CartPole-v1", ON),
    "classic_a2c": ("a2c", "CartPole-v1", ON),
    "classic_sac": ("sac", "Pendulum-v1", OFF),
    "classic_td3": ("td3", "Pendulum-v1", OFF),
    **{f"mujoco_{a}": (a, "Hopper-v5", MUJOCO_OFF) for a in ("sac", "td3", "ddpg", "redq")},
    **{f"mujoco_{a}": (a, "Hopper-v5", MUJOCO_ON) for a in ("ppo", "a2c", "npg", "trpo")},
    **{f"offline_{a}": (a, "Pendulum-v1", OFFLINE) for a in ("bc", "bcq", "cql", "td3_bc", "iql")},
    "imitation_gail": ("gail", "Pendulum-v1", (*ON, "--dataset", "DATA")),
    "recurrent_drqn": ("drqn", "CartPole-v1", OFF),
    "torchrl_sac": (
        "sac",
        "Pendulum-v1",
        ("--epochs", "1", "--step-per-epoch", "200", "--test-num", "1"),
    ),
}
SLOW_CASES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    **{
        f"atari_{a}": (a, "PongNoFrameskip-v4", ATARI)
        for a in ("dqn", "c51", "qrdqn", "iqn", "fqf", "rainbow")
    },
    "atari_ppo": ("ppo", "PongNoFrameskip-v4", (*ATARI, "--step-per-collect", "50")),
}


def run_recipe(name: str, flags: tuple[str, ...], cwd: Path) -> str:
    """Run ``recipes/NAME.py FLAGS`` in ``cwd``; return its stdout (fail on a non-zero exit)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "offline"}
    env.setdefault("OMP_NUM_THREADS", "1")
    out = subprocess.run(
        [sys.executable, str(RECIPES / f"{name}.py"), *flags, "--no-progress"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def check_summary(stdout: str, algo: str, task: str) -> None:
    lines = stdout.strip().splitlines()
    match = SUMMARY.match(lines[-1])
    assert match is not None, lines[-3:]
    assert match.group(1, 2) == (algo, task)
    assert any(line.startswith("final evaluation: ") for line in lines), lines[-3:]


@pytest.fixture(scope="module")
def pendulum_data(tmp_path_factory: pytest.TempPathFactory) -> str:
    """600 random Pendulum-v1 transitions in HDF5: enough for a few gradient steps."""
    import gymnasium as gym

    from tdrl.data import Collector, ReplayBuffer
    from tdrl.env import DummyVectorEnv

    buffer = ReplayBuffer(600)
    collector = Collector(None, DummyVectorEnv([lambda: gym.make("Pendulum-v1")]), buffer)
    collector.reset(seed=0)
    collector.collect(n_step=600, random=True)
    path = tmp_path_factory.mktemp("data") / "random-pendulum.hdf5"
    buffer.save_hdf5(path)
    return str(path)


@pytest.mark.slow  # end to end, seconds: CI's slow session
@pytest.mark.parametrize("name", sorted(CASES))
def test_recipe_smoke(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    algo, task, flags = CASES[name]
    if "DATA" in flags:
        data = request.getfixturevalue("pendulum_data")
        flags = tuple(data if f == "DATA" else f for f in flags)
    stdout = run_recipe(name, (*flags, "--logdir", str(tmp_path / "runs")), tmp_path)
    check_summary(stdout, algo, task)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_CASES))
def test_recipe_smoke_slow(name: str, tmp_path: Path) -> None:
    algo, task, flags = SLOW_CASES[name]
    stdout = run_recipe(name, (*flags, "--logdir", str(tmp_path / "runs")), tmp_path)
    check_summary(stdout, algo, task)


# the recipes' shared modules: imported by the recipes, not run themselves
SHARED = {"common", "common_atari"}


def test_every_recipe_is_smoke_tested() -> None:
    recipes = {p.stem for p in RECIPES.glob("*.py")}
    own = {"tictactoe_dqn"}  # tested in tests/algorithm/multiagent
    assert recipes - own - SHARED == set(CASES) | set(SLOW_CASES)


# ------------------------------------------------------------ the recipes' imports of tdrl
# modules that are becoming compatibility aliases of their new homes (tdrl.experiment,
# tdrl.presets, tdrl.algorithm): a recipe imports the new home
OLD_MODULES = (
    "tdrl.launch",
    "tdrl.registry",
    "tdrl.checkpoint",
    "tdrl.algorithm.base",
    "tdrl.algorithm.presets",
)


def private_imports(source: str) -> list[str]:
    """The imports in ``source`` that a recipe must not make: a module in (or below)
    :data:`OLD_MODULES`, or a module path segment or imported name that begins with ``_``
    (``__future__`` aside), each as ``line: module[.name]``."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            paths = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = "." * node.level + (node.module or "")
            paths = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for path in paths:
            old = any(path == m or path.startswith(m + ".") for m in OLD_MODULES)
            if old or any(part.startswith("_") for part in path.split(".") if part):
                bad.append(f"{node.lineno}: {path}")
    return bad


@pytest.mark.parametrize("path", sorted(RECIPES.glob("*.py")), ids=lambda p: p.name)
def test_recipe_imports_only_public_tdrl(path: Path) -> None:
    assert private_imports(path.read_text()) == []


@pytest.mark.parametrize(
    "source",
    [
        "import tdrl.launch",
        "from tdrl.launch import run_experiment",
        "from tdrl import registry",
        "from tdrl.registry import preset",
        "import tdrl.checkpoint as ckpt",
        "from tdrl.algorithm.base import AdamOptimizerFactory",
        "from tdrl.algorithm.presets import something",
        "from tdrl.presets.atari import _net_args",
        "from tdrl.utils._private import helper",
        "import tdrl._internal",
        "def main():\n    from tdrl.registry import preset",
    ],
)
def test_private_imports_catches_a_bad_import(source: str) -> None:
    assert len(private_imports(source)) >= 1, source


def test_private_imports_passes_public_ones() -> None:
    source = (
        "from __future__ import annotations\n"
        "from tdrl.algorithm import AdamOptimizerFactory\n"
        "from tdrl.presets.mujoco import mujoco_actor_critic\n"
        "from tdrl.launcher import thing\n"  # a prefix of a name is not the module
        "import common\n"
    )
    assert private_imports(source) == []


@pytest.mark.parametrize("page", ["recipes/README.md", "docs/recipes.md"])
def test_recipes_pages_list_every_recipe(page: str) -> None:
    text = (ROOT / page).read_text()
    for p in RECIPES.glob("*.py"):
        assert f"`{p.name}`" in text or f"[{p.name}]" in text, (page, p.name)


def test_docs_page_has_the_readme_tables() -> None:
    """docs/recipes.md repeats recipes/README.md's tables (links written as paths)."""
    readme = (RECIPES / "README.md").read_text()
    page = (ROOT / "docs" / "recipes.md").read_text()
    rows = [
        re.sub(r"\[(\w+\.py)\]\(\w+\.py\)", r"`\1`", line)
        for line in readme.splitlines()
        if line.startswith("| [")
    ]
    assert len(rows) >= 30
    for row in rows:
        assert row.split(" (see ")[0] in page, row


@pytest.mark.parametrize(
    ("name", "algo", "task", "flags"),
    [
        ("classic_dqn", "dqn", "CartPole-v1", {"step_per_epoch": 300, "training_num": 2}),
        ("mujoco_ppo", "ppo", "Hopper-v5", {"step_per_epoch": 400, "step_per_collect": 200}),
    ],
)
@pytest.mark.slow  # end to end, seconds: CI's slow session
def test_recipe_reproduces_tdrl_train(
    name: str, algo: str, task: str, flags: dict[str, int], tmp_path: Path
) -> None:
    """Same preset, seed and budget: the recipe's test returns are ``tdrl train``'s, bit for
    bit (the recipe builds what the registry's builder builds, in the same order)."""
    import csv

    from tdrl.experiment import ExperimentConfig, run_experiment

    common = {"max_epochs": 2, "test_num": 2, **flags}
    argv = [f"--{k.replace('_', '-')}={v}" for k, v in common.items()]
    stdout = run_recipe(name, (*argv, "--logdir", str(tmp_path / "r")), tmp_path)
    recipe_dir = Path(stdout.strip().splitlines()[-1].rsplit("logs in ", 1)[1])
    cfg = ExperimentConfig(
        algo, task, logger="none", log_dir=str(tmp_path / "t"), show_progress=False, plot=False
    )
    cfg.overrides = common
    _, run_dir = run_experiment(cfg)

    def returns(d: Path) -> list[str]:
        with open(d / "test.csv") as f:
            return [row["test/returns_stat/mean"] for row in csv.DictReader(f)]

    assert returns(recipe_dir) == returns(run_dir)
    assert len(returns(run_dir)) == 3  # before training and after each epoch


# ------------------------------------------------------------------ the recipes' helpers
def test_parse_recipe_args_defaults_are_the_preset() -> None:
    from tdrl import presets
    from tdrl.cli import parse_recipe_args

    args, p = parse_recipe_args("sac", "Pendulum-v1", ["--task", "Hopper-v5", "--tau", "0.01"])
    assert (args.task, args.seed, args.logger, args.no_progress) == ("Hopper-v5", 0, "csv", False)
    assert p == presets.preset("sac", "Hopper-v5", tau=0.01)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--lr", "0"], "argument --lr: expected a float > 0, got 0.0 (dqn preset field 'lr')"),
        (["--lr", "abc"], "argument --lr: expected a float > 0, got 'abc'"),
        (["--seed", "-1"], "argument --seed: expected an int in [0, 4294967295], got -1"),
        (["--logger", "tb"], "argument --logger: invalid choice: 'tb'"),
        (["--task", "Hopper-v5"], "argument --task: "),  # DQN has no MuJoCo preset
    ],
)
def test_parse_recipe_args_bad_input_is_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tdrl.cli import parse_recipe_args

    with pytest.raises(SystemExit) as exc:
        parse_recipe_args("dqn", "CartPole-v1", argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_parse_recipe_args_dataset_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    from tdrl.cli import parse_recipe_args

    args, _ = parse_recipe_args("bc", "Pendulum-v1", ["--dataset", "d.hdf5"], dataset=True)
    assert args.dataset == "d.hdf5"
    with pytest.raises(SystemExit):
        parse_recipe_args("bc", "Pendulum-v1", [], dataset=True)
    assert "--dataset" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["csv", "console", "tensorboard", "none"])
def test_make_logger_always_writes_the_csv_files(kind: str, tmp_path: Path) -> None:
    from tdrl.utils.logger import make_logger

    logger = make_logger(kind, tmp_path / "run")
    logger.log_test_data({"returns_stat/mean": 1.0}, step=5)
    logger.finalize()
    assert (tmp_path / "run" / "test.csv").is_file()
    assert (logger.train_interval, logger.test_interval, logger.update_interval) == (1, 1, 100)
