"""tdrl.utils.plot: curves from CSV runs, mean ± std over seeds, PNG output, the CLI entry."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from tdrl.cli.plot import main as plot_main
from tdrl.utils.logger import CSVLogger
from tdrl.utils.plot import load_curve, mean_std, plot_runs

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _fake_run(path, offset: float, steps=(0, 1000, 2000, 3000)) -> None:
    log = CSVLogger(path, test_interval=1)
    for i, s in enumerate(steps):
        log.log_test_data({"returns_stat": {"mean": 10.0 * i + offset, "std": 1.0}}, s)
        log.save_data(i + 1, s, 10 * i)


def test_plot_runs_writes_png(tmp_path) -> None:
    _fake_run(tmp_path / "seed0", 0.0)
    _fake_run(tmp_path / "seed1", 2.0, steps=(0, 500, 1500, 3000))
    steps, values = load_curve(tmp_path / "seed0", "test/returns_stat/mean")
    assert steps.tolist() == [0, 1000, 2000, 3000] and values.tolist() == [0, 10, 20, 30]
    out = plot_runs([tmp_path / "seed0", tmp_path / "seed1"], out=tmp_path / "o" / "c.png")
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000


def test_mean_std_over_seeds() -> None:
    a = (np.array([0.0, 2.0, 4.0]), np.array([0.0, 2.0, 4.0]))
    b = (np.array([1.0, 3.0, 5.0]), np.array([3.0, 3.0, 3.0]))
    steps, mean, std = mean_std([a, b])  # common range [1, 4]
    assert steps.tolist() == [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_allclose(mean, [2.0, 2.5, 3.0, 3.5])
    np.testing.assert_allclose(std, [1.0, 0.5, 0.0, 0.5])


def test_plot_main_groups_and_errors(tmp_path, capsys) -> None:
    for name in ("tdrl", "tianshou"):
        for seed in range(2):
            _fake_run(tmp_path / name / f"seed{seed}", float(seed))
    out = tmp_path / "compare.png"
    argv = [str(tmp_path / "tdrl"), str(tmp_path / "tianshou"), "--out", str(out)]
    assert plot_main(argv) == 0
    assert out.read_bytes().startswith(PNG_MAGIC)
    assert plot_main([str(tmp_path / "tdrl"), "--key", "train/nope", "--out", str(out)]) == 2
    assert "train.csv" in capsys.readouterr().err
    assert plot_main([str(tmp_path / "tdrl" / "seed0"), "--key", "test/nope"]) == 2
    assert "key 'test/nope' not logged" in capsys.readouterr().err
    with pytest.raises(ValueError, match="run_dirs: expected at least one"):
        plot_runs([], out=out)


def _run(root, name: str, task: str, lr: float, points: int) -> None:
    import yaml

    d = root / name
    logger = CSVLogger(d)
    for i in range(points):
        logger.log_test_data({"returns_stat": {"mean": float(i)}}, i * 100)
    algo = name.split("-")[0]
    (d / "config.yaml").write_text(
        yaml.safe_dump({"algo": algo, "task": task, "seed": 0, "lr": lr, "logdir": str(root)})
    )


def test_runs_are_grouped_by_configuration_and_drawn_one_panel_per_task(tmp_path) -> None:
    import matplotlib.pyplot as plt

    from tdrl.utils.plot import group_runs

    _run(tmp_path, "dqn-CartPole-v1-seed0", "CartPole-v1", 1e-3, 40)
    _run(tmp_path, "dqn-CartPole-v1-seed1", "CartPole-v1", 1e-3, 40)
    _run(tmp_path, "dqn-CartPole-v1-seed0-2", "CartPole-v1", 3e-4, 40)
    _run(tmp_path, "ppo-Pendulum-v1-seed0", "Pendulum-v1", 1e-3, 3)
    groups = group_runs([tmp_path])
    assert sorted((label, len(runs)) for label, runs in groups.items()) == [
        ("dqn on CartPole-v1 [lr=0.0003]", 1),
        ("dqn on CartPole-v1 [lr=0.001]", 2),  # seeds differ, nothing else: one band
        ("ppo on Pendulum-v1", 1),
    ]
    figures: list = []
    real_savefig = plt.Figure.savefig

    def keep(fig, *args, **kwargs):  # type: ignore[no-untyped-def]
        figures.append(fig)
        return real_savefig(fig, *args, **kwargs)

    plt.Figure.savefig = keep  # type: ignore[method-assign]
    try:
        plot_runs([tmp_path], out=tmp_path / "c.png")
    finally:
        plt.Figure.savefig = real_savefig  # type: ignore[method-assign]
    axes = [ax for ax in figures[0].axes if ax.get_title()]
    assert sorted(ax.get_title() for ax in axes) == ["CartPole-v1", "Pendulum-v1"]
    markers = {line.get_label(): line.get_marker() for ax in axes for line in ax.get_lines()}
    assert markers["ppo on Pendulum-v1 (1 run)"] == "o"  # 3 points: marked
    assert markers["dqn on CartPole-v1 [lr=0.001] (2 runs)"] in ("None", None, "")
