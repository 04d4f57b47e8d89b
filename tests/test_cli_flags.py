"""``tdrl train`` flags: every preset field a flag, aliases, --config, one-line errors naming
the flag, help that loads no torch (issue 16's command-line contract)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tdrl import registry
from tdrl.cli import main, parse_train
from tdrl.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import contextlib, io, json, sys, time
from tdrl.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    err, std = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(std), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    out.append([code, err.getvalue(), std.getvalue(), time.perf_counter() - start])
print(json.dumps([out, [m for m in ("torch", "torchrl", "tensordict") if m in sys.modules]]))
"""


def _probe(argvs: list[list[str]], cwd: Path) -> tuple[list[list], list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argvs)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=True,
        timeout=120,
    )
    results, loaded = json.loads(out.stdout)
    return results, loaded


def test_help_loads_no_torch_and_lists_the_task_preset_values(tmp_path: Path) -> None:
    argvs = [
        ["--help"],
        ["train", "--help"],
        ["train", "dqn", "CartPole-v1", "--help"],
        ["train", "ppo", "Pendulum-v1", "--help"],
        ["eval", "--help"],
        ["plot", "--help"],
    ]
    results, loaded = _probe(argvs, tmp_path)
    assert loaded == []
    assert [r[0] for r in results] == [0] * len(argvs)
    assert all(r[3] < 5.0 for r in results), [r[3] for r in results]
    dqn_help, ppo_help = results[2][2], results[3][2]
    dqn: Any = registry.preset("dqn", "CartPole-v1")
    for flag in ("--lr", "--batch-size", "--buffer-size", "--gamma", "--hidden-sizes"):
        assert flag in dqn_help
    assert "preset: 128 128 128" in dqn_help and f"preset: {dqn.lr}" in dqn_help
    ppo: Any = registry.preset("ppo", "Pendulum-v1")  # a task-specific preset: its own values
    assert ppo != registry.preset("ppo", "CartPole-v1")
    assert f"preset: {ppo.step_per_collect}" in ppo_help and "Stop threshold: -250" in ppo_help
    for alias in ("--max-epochs", "--epoch-num-steps", "--num-training-envs", "--num-test-envs"):
        assert alias in dqn_help
    assert "--stop-reward" in dqn_help
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--seed", "-1"], "--seed"),
        (["--stop-reward", "nan"], "--stop-reward"),
        (["--training-num", "100000"], "--training-num"),
        (["--num-test-envs", "5000"], "--num-test-envs"),
        (["--lr", "0"], "--lr"),
        (["--batch-size", "x"], "--batch-size"),
        (["--hidden-sizes", "64", "0"], "--hidden-sizes"),
        (["--epochs", "0"], "--epochs"),
        (["--dueling", "maybe"], "--dueling"),
        (["--no-such-flag"], "--no-such-flag"),
        (["--set", "lr=-1"], "--set lr"),
        (["--set", "nope=1"], "nope"),
    ],
)
def test_bad_values_exit_2_in_one_line_naming_the_flag(
    argv: list[str], flag: str, tmp_path: Path
) -> None:
    results, loaded = _probe([["train", "dqn", "CartPole-v1", *argv]], tmp_path)
    code, err, out, _ = results[0]
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], lines
    assert "Traceback" not in err
    assert loaded == []  # rejected before torch is loaded
    assert list(tmp_path.iterdir()) == []  # nothing left behind


def test_unknown_algorithm_and_missing_algorithm_exit_2(tmp_path: Path) -> None:
    results, loaded = _probe([["train", "nope"], ["train"], ["bogus"]], tmp_path)
    assert [r[0] for r in results] == [2, 2, 2]
    assert all(len(r[1].strip().splitlines()) == 1 for r in results)
    assert "dqn" in results[0][1] and "'nope'" in results[0][1]
    assert loaded == []


def test_the_issue_example_flags_reach_the_preset() -> None:
    argv = "dqn CartPole-v1 --lr 3e-4 --batch-size 256 --buffer-size 100000 --gamma 0.99 "
    argv += "--hidden-sizes 256 256"
    cfg = parse_train(argv.split())
    assert cfg["overrides"] == {
        "lr": 3e-4,
        "batch_size": 256,
        "buffer_size": 100_000,
        "gamma": 0.99,
        "hidden_sizes": (256, 256),
    }
    p: Any = registry.preset("dqn", "CartPole-v1", **cfg["overrides"])
    assert (p.lr, p.batch_size, p.hidden_sizes) == (3e-4, 256, (256, 256))


@pytest.mark.parametrize("algo", sorted(registry.algorithms()))
def test_every_preset_field_is_a_flag(algo: str) -> None:
    p = registry.preset(algo)
    cfg = parse_train([algo])  # defaults: no overrides
    assert cfg["overrides"] == {}
    for name, (kind, _) in registry.field_kinds(type(p)).items():
        if name == "task":
            continue
        value = getattr(p, name)
        flag = "--" + name.replace("_", "-")
        if kind == "bool":
            args = [flag] if value else [f"--no-{flag[2:]}"]
        elif kind == "tuple":
            args = [flag, *map(str, value)]
        elif value is None:
            args = [flag, "none"]
        else:
            args = [flag, str(value)]
        assert parse_train([algo, *args])["overrides"] == {name: value}, args


def test_tianshou_aliases_and_old_names_agree() -> None:
    old = parse_train(
        [
            "ppo",
            "--epochs",
            "3",
            "--step-per-epoch",
            "100",
            "--training-num",
            "2",
            "--test-num",
            "3",
        ]
    )
    new = parse_train(
        [
            "ppo",
            "--max-epochs",
            "3",
            "--epoch-num-steps",
            "100",
            "--num-training-envs",
            "2",
            "--num-test-envs",
            "3",
        ]
    )
    assert (
        old["overrides"]
        == new["overrides"]
        == {
            "max_epochs": 3,
            "step_per_epoch": 100,
            "training_num": 2,
            "test_num": 3,
        }
    )
    assert parse_train(["ppo", "--stop-reward", "100"])["overrides"] == {"threshold": 100.0}


def test_bool_flags() -> None:
    for argv, value in (
        (["--dueling"], True),
        (["--no-dueling"], False),
        (["--dueling", "false"], False),
        (["--dueling", "yes"], True),
        (["--dueling=off"], False),
    ):
        assert parse_train(["dqn", *argv])["overrides"] == {"dueling": value}, argv


def test_config_file_loads_fields_and_options_and_flags_win(tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    path.write_text(
        "algo: dqn\ntask: CartPole-v1\nseed: 3\nlogger: none\nepochs: 2\nlr: 0.01\n"
        "preset:\n  batch_size: 32\n  hidden_sizes: [16, 16]\n"
    )
    cfg = parse_train(["--config", str(path), "--lr", "0.02", "--seed", "4"])
    assert (cfg["algo"], cfg["task"], cfg["seed"], cfg["logger"]) == (
        "dqn",
        "CartPole-v1",
        4,
        "none",
    )
    assert cfg["overrides"] == {
        "max_epochs": 2,
        "lr": 0.02,
        "batch_size": 32,
        "hidden_sizes": (16, 16),
    }
    bad = tmp_path / "bad.yaml"
    bad.write_text("algo: dqn\ntask: CartPole-v1\nlearning_rate: 0.1\n")
    with pytest.raises(UsageError, match=r"config .*bad\.yaml.*unknown key 'learning_rate'"):
        parse_train(["--config", str(bad)])
    worse = tmp_path / "worse.yaml"
    worse.write_text("algo: dqn\ntask: CartPole-v1\npreset:\n  lr: -1\n")
    with pytest.raises(UsageError, match=r"config .*worse\.yaml: expected a float > 0, got -1"):
        parse_train(["--config", str(worse)])
    assert main(["train", "--config", str(tmp_path / "missing.yaml")]) == 2
