"""``tdrl`` command line: parsing without torch, one-line errors, no TorchRL warning, recipes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tdrl.cli import main

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"^(\w+) on (\S+): best test return -?[\d.]+ ± [\d.]+ ")
TARGET_NET_WARNING = "No target network updater has been associated"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RL_WARNINGS"}
    env.update(extra)
    return env


def test_help_and_argument_errors_do_not_import_torch() -> None:
    code = """
import contextlib, io, json, sys
from tdrl.cli import main
codes = []
for argv in (["train", "--help"], ["--help"], ["train", "nope"], ["train", "dqn", "--epochs", "x"],
             ["train"], ["bogus"]):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as e:
            codes.append(e.code)
print(json.dumps([codes, [m for m in ("torch", "torchrl", "tensordict") if m in sys.modules]]))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    codes, loaded = json.loads(out.stdout)
    assert codes == [0, 0, 2, 2, 2, 2]
    assert loaded == []


def test_wrong_action_space_exits_2_with_one_line(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tdrl.cli", "train", "dqn", "Pendulum-v1", "--logdir", "logs"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(PYTHONPATH=str(ROOT)),
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "dqn needs a Discrete action space; Pendulum-v1 has Box(-2.0, 2.0, (1,), float32)"
    ]
    assert out.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no run directory


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["train", "dqn", "Hopper-v5"], ["dqn", "Hopper-v5", "mujoco", "classic"]),
        (["train", "sac", "CartPole-v1"], ["sac needs a Box action space", "Discrete(2)"]),
        (["train", "dqn", "--epochs", "0"], ["'max_epochs'", "> 0", "got 0"]),
        (["train", "ppo", "--training-num", "-1"], ["'training_num'", "got -1"]),
        (["train", "ppo", "NoSuchEnv-v0"], ["NoSuchEnv"]),
    ],
)
def test_preset_errors_exit_2_in_one_line(
    argv: list[str], words: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--logdir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and all(w in err[0] for w in words), err
    assert not (tmp_path / "runs").exists()


def test_train_emits_no_target_network_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TorchRL warns when a loss reads its target parameters before an updater exists."""
    import torchrl._utils

    monkeypatch.delenv("RL_WARNINGS", raising=False)
    monkeypatch.setattr(torchrl._utils, "RL_WARNINGS", True)  # as if RL_WARNINGS were unset
    argv = ["--epochs", "1", "--step-per-epoch", "200", "--no-progress", "--no-plot"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for algo in ("dqn", "sac"):
            assert main(["train", algo, *argv, "--logdir", str(tmp_path)]) == 0
    assert [str(w.message) for w in caught if TARGET_NET_WARNING in str(w.message)] == []
    lines = capsys.readouterr().out.strip().splitlines()
    assert SUMMARY.match(lines[-1]).groups() == ("sac", "Pendulum-v1")  # type: ignore[union-attr]


@pytest.mark.slow  # end to end, seconds: CI's slow session
def test_tdrl_train_subprocess_ends_with_the_summary_and_no_warning(tmp_path: Path) -> None:
    argv = ["train", "dqn", "CartPole-v1", "--epochs", "1", "--step-per-epoch", "200"]
    out = subprocess.run(
        [sys.executable, "-m", "tdrl.cli", *argv, "--no-progress", "--logdir", "runs"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(PYTHONPATH=str(ROOT), WANDB_MODE="offline"),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert TARGET_NET_WARNING not in out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert SUMMARY.match(last).groups() == ("dqn", "CartPole-v1"), last  # type: ignore[union-attr]
    assert (tmp_path / "runs" / "dqn-CartPole-v1-seed0" / "curve.png").exists()


@pytest.mark.slow  # end to end, seconds: CI's slow session
@pytest.mark.parametrize("algo", ["dqn", "ppo", "sac"])
def test_recipes_run(algo: str, tmp_path: Path) -> None:
    steps = "2000" if algo == "ppo" else "100"
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "recipes" / f"classic_{algo}.py"),
            *("--epochs", "1", "--step-per-epoch", steps, "--training-num", "2"),
            *("--test-num", "2", "--no-progress", "--logdir", str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(PYTHONPATH=str(ROOT), RL_WARNINGS="0"),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert SUMMARY.match(out.stdout.strip().splitlines()[-1]).group(1) == algo  # type: ignore[union-attr]
