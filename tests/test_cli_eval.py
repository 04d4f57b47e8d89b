"""What a run leaves behind and what reads it: config.yaml, policy.pt, ``tdrl.load_policy``,
``tdrl eval``, ``tdrl plot`` (issue 16)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

import tdrl
from tdrl.cli import main
from tdrl.errors import CheckpointError
from tdrl.utils.logger import read_csv_log

QUICK = ["--epochs", "1", "--step-per-epoch", "200", "--training-num", "2", "--test-num", "2"]
QUICK += ["--no-progress"]
MEAN = re.compile(r"^mean return (-?[\d.]+) ± ([\d.]+) over (\d+) episodes$")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    logdir = tmp_path_factory.mktemp("runs")
    assert main(["train", "dqn", "CartPole-v1", *QUICK, "--logdir", str(logdir)]) == 0
    return logdir / "dqn-CartPole-v1-seed0"


@pytest.mark.parametrize("logger", ["none", "tensorboard"])
def test_every_run_leaves_policy_config_csv_and_curve(logger: str, tmp_path: Path) -> None:
    argv = ["train", "dqn", "CartPole-v1", *QUICK, "--logger", logger, "--logdir", str(tmp_path)]
    assert main(argv) == 0
    run = tmp_path / "dqn-CartPole-v1-seed0"
    for name in ("policy.pt", "config.yaml", "test.csv", "train.csv", "curve.png"):
        assert (run / name).is_file(), name
    if logger == "tensorboard":  # tdrl plot reads the event files too
        assert list(run.glob("events.out.tfevents.*"))
        for p in run.glob("*.csv"):
            p.unlink()
        assert main(["plot", str(run), "--out", str(tmp_path / "tb.png")]) == 0
        assert (tmp_path / "tb.png").read_bytes()[:4] == b"\x89PNG"


def test_config_yaml_reproduces_the_run(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--config", str(run / "config.yaml"), "--no-progress"]) == 0
    again = run.parent / f"{run.name}-2"
    assert (again / "config.yaml").read_text() == (run / "config.yaml").read_text()
    a, b = read_csv_log(run / "test.csv"), read_csv_log(again / "test.csv")
    for key in a:
        if "speed" not in key:
            assert a[key] == b[key], key
    x, y = (torch.load(d / "policy.pt")["policy"] for d in (run, again))
    assert all(torch.equal(x[k], y[k]) for k in x)


def test_load_policy_returns_the_trained_policy_ready_to_act(run: Path, tmp_path: Path) -> None:
    policy = tdrl.load_policy(run)
    saved = torch.load(run / "policy.pt")["policy"]
    assert all(torch.equal(policy.state_dict()[k], v) for k, v in saved.items())
    assert not policy.training
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    assert policy.compute_action(obs) in (0, 1)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.yaml").write_text((run / "config.yaml").read_text())
    with pytest.raises(CheckpointError, match=r"policy .*broken/policy\.pt"):
        tdrl.load_policy(broken)
    (broken / "policy.pt").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=r"policy .*broken/policy\.pt: expected"):
        tdrl.load_policy(broken)
    torch.save({"not": "a policy"}, broken / "policy.pt")
    with pytest.raises(CheckpointError, match=r"policy\.pt: expected a 'tdrl-policy' file"):
        tdrl.load_policy(broken)
    (broken / "config.yaml").write_text("algo: [unclosed")
    with pytest.raises(CheckpointError, match=r"config .*broken/config\.yaml"):
        tdrl.load_policy(broken)


def test_load_policy_normalizes_raw_observations(tmp_path: Path) -> None:
    """A preset with obs_norm (PPO MuJoCo): the loaded policy normalizes raw observations
    with the run's final statistics, as the run's envs did."""
    pytest.importorskip("mujoco")
    argv = ["train", "ppo", "Hopper-v5", "--epochs", "1", "--step-per-epoch", "64"]
    argv += ["--step-per-collect", "64", "--training-num", "1", "--test-num", "1"]
    argv += ["--repeat-per-collect", "1", "--no-progress", "--no-plot", "--logdir", str(tmp_path)]
    assert main(argv) == 0
    run = tmp_path / "ppo-Hopper-v5-seed0"
    policy = tdrl.load_policy(run)
    stats = torch.load(run / "policy.pt")["obs_rms"]
    assert stats is not None and stats["count"] > 64
    assert torch.equal(policy.obs_rms.mean, stats["mean"])
    plain = tdrl.make_algorithm("ppo", "Hopper-v5").policy  # the same weights, no normalizer
    plain.load_state_dict(torch.load(run / "policy.pt")["policy"])
    plain.eval()
    raw = np.random.default_rng(0).normal(size=(3, 11)).astype(np.float32)
    normed = np.clip(
        (raw - stats["mean"].numpy()) / np.sqrt(stats["var"].numpy() + 1.1920929e-07), -10, 10
    )
    from tdrl.data import Batch

    policy.deterministic_eval = plain.deterministic_eval = True
    a = policy(Batch(obs=torch.as_tensor(raw)))["act"]
    b = plain(Batch(obs=torch.as_tensor(normed.astype(np.float32))))["act"]
    torch.testing.assert_close(a, b)


def test_eval_plays_deterministic_episodes(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(run), "--episodes", "3", "--seed", "5"]) == 0
    first = capsys.readouterr().out.strip().splitlines()[-1]
    m = MEAN.match(first)
    assert m is not None and m.group(3) == "3", first
    assert main(["eval", str(run), "--episodes", "3", "--seed", "5"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == first


def test_eval_video_writes_one_mp4_per_episode(run: Path, tmp_path: Path) -> None:
    pytest.importorskip("moviepy")
    out = tmp_path / "videos"
    assert main(["eval", str(run), "--episodes", "2", "--video", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.mp4")) == ["eval-episode-0.mp4", "eval-episode-1.mp4"]


def test_eval_user_errors_exit_2_in_one_line(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv, words in (
        ([str(run), "--render"], "--render"),
        ([str(tmp_path / "nope")], "nope"),
        ([str(empty)], "config.yaml"),
    ):
        assert main(["eval", *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
    with pytest.raises(SystemExit) as exc:
        main(["eval", str(run), "--episodes", "0"])
    assert exc.value.code == 2


def _fake_run(path: Path, offset: float, steps: tuple[int, ...]) -> None:
    from tdrl.utils.logger import CSVLogger

    log = CSVLogger(path, test_interval=1)
    for i, s in enumerate(steps):
        log.log_test_data({"returns_stat": {"mean": 10.0 * i + offset}}, s)


def test_plot_groups_by_algorithm_and_task_without_truncating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.figure

    _fake_run(tmp_path / "runs" / "dqn-CartPole-v1-seed0", 0.0, (0, 1000, 2000, 3000))
    _fake_run(tmp_path / "runs" / "dqn-CartPole-v1-seed1", 2.0, (0, 500, 1500))  # stopped early
    _fake_run(tmp_path / "runs" / "ppo-CartPole-v1-seed0", 1.0, (0, 2000))
    figures: list[matplotlib.figure.Figure] = []
    save = matplotlib.figure.Figure.savefig

    def spy(self: matplotlib.figure.Figure, *args: Any, **kwargs: Any) -> None:
        figures.append(self)
        save(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    assert main(["plot", str(tmp_path / "runs"), "--out", str(tmp_path / "c.png")]) == 0
    (ax,) = figures[0].axes
    assert ax.get_xlabel() == "env steps" and ax.get_ylabel().startswith("test return")
    legend: Any = ax.get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["dqn on CartPole-v1 (2 runs)", "ppo on CartPole-v1 (1 run)"]
    line = ax.get_lines()[0]
    assert np.asarray(line.get_xdata())[-1] == 3000  # the longer seed is not cut at 1500
