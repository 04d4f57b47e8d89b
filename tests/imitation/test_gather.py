"""``tdrl gather``: argument errors, a small end-to-end gather, the shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tdrl.cli import gather as gather_mod
from tdrl.cli import main as cli_main
from tdrl.data.datasets import describe, load_dataset


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["dqn", "CartPole-v1", "--steps", "0"], "--steps: expected an int >= 1, got 0"),
        (["dqn", "CartPole-v1", "--steps", "x"], "--steps: expected an int >= 1, got 'x'"),
        (["dqn"], "the following arguments are required: task"),
        (["nope", "CartPole-v1"], "algorithm: expected one of"),
        (["dqn", "Pendulum-v1"], "dqn handles discrete action spaces, got Box actions"),
        (["dqn", "NoSuchTask-v0"], "TASK: "),
        (["dqn", "CartPole-v1", "--out", "no/such/dir/x.hdf5"], "existing directory"),
        (["dqn", "CartPole-v1", "--out", "."], "expected a file path"),
    ],
)
def test_argument_errors_exit_2_with_one_line_and_no_file(
    argv: list[str],
    match: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)

    def no_training(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("argument errors must stop before training")

    monkeypatch.setattr(gather_mod, "gather", no_training)
    assert cli_main(["gather", *argv]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_an_expert_that_learns_from_a_dataset_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tdrl import registry

    offline = [
        a
        for a in registry.algorithms()
        if registry.entry(a, registry.default_task(a)).needs_dataset
    ]
    if not offline:
        pytest.skip("no offline algorithm registered")
    algo = offline[0]
    assert gather_mod.main([algo, registry.default_task(algo)]) == 2
    assert "trains online" in capsys.readouterr().err


def test_missed_threshold_writes_nothing_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tdrl.experiment

    class Fake:
        preset = SimpleNamespace(threshold=195.0)

        def run(self, summary: bool = True) -> Any:
            return SimpleNamespace(best_reward=20.0, best_trained_reward=20.0, env_step=100)

    monkeypatch.setattr(tdrl.experiment, "build_experiment", lambda cfg: Fake())
    out = tmp_path / "d.hdf5"
    assert gather_mod.main(["dqn", "CartPole-v1", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "below its threshold 195.0: no dataset written" in err
    assert list(tmp_path.iterdir()) == []


def test_gather_small_cartpole_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli_main(["gather", "dqn", "CartPole-v1", "--steps", "600", "--no-progress"]) == 0
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith("gather: wrote 600 transitions (") and "dqn-CartPole-v1.hdf5" in last
    # the expert's logs live in a directory gather removes: no line may point there
    assert "logs in" not in out and "gather: the expert dqn reached a test return" in out
    assert [p.name for p in tmp_path.iterdir()] == ["dqn-CartPole-v1.hdf5"]
    buf = load_dataset("dqn-CartPole-v1.hdf5")
    info = describe(buf)
    assert len(buf) == 600 and info["episodes"] >= 1
    assert f"({info['episodes']} finished episodes, mean episode return" in last
    assert info["mean_return"] > 150  # a trained expert, epsilon-greedy
    rows = buf[buf.sample_indices(0)]
    assert set(np.unique(np.asarray(rows.act)).tolist()) <= {0, 1}
    # consecutive steps of an episode chain: obs_next of one is obs of the next
    idx = buf.sample_indices(0)
    nxt = buf.next(idx)
    inner = nxt != idx
    np.testing.assert_array_equal(
        np.asarray(buf[idx[inner]].obs_next), np.asarray(buf[nxt[inner]].obs)
    )
    assert oct(os.stat("dqn-CartPole-v1.hdf5").st_mode & 0o777) != oct(0o600)


@pytest.mark.slow
def test_gather_sac_pendulum_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pend.hdf5"
    argv = ["gather", "sac", "Pendulum-v1", "--out", str(out), "--steps", "2000", "--seed", "1"]
    assert cli_main([*argv, "--no-progress"]) == 0
    assert "gather: wrote 2000 transitions (10 finished episodes" in capsys.readouterr().out
    buf = load_dataset(str(out))
    info = describe(buf)
    assert info["episodes"] == 10 and info["mean_return"] > -400
    rows = buf[buf.sample_indices(0)]
    assert np.asarray(rows.truncated).sum() == 10 and not np.asarray(rows.terminated).any()
    act = np.asarray(rows.act)
    assert act.shape == (2000, 1) and np.abs(act).max() <= 2.0
    assert np.unique(act).size > 1000  # sampled actions: the expert explores as it trained


@pytest.mark.slow
def test_shared_fixtures(pendulum_dataset: str, cartpole_dataset: str) -> None:
    pend, cart = load_dataset(pendulum_dataset), load_dataset(cartpole_dataset)
    assert len(pend) == len(cart) == 20_000
    assert describe(pend)["mean_return"] > -300
    assert describe(cart)["mean_return"] > 150
    assert Path(pendulum_dataset).parent.name == "tdrl-datasets" or os.environ.get(
        "TDRL_DATASET_CACHE"
    )
