"""``tdrl train ... --compile``: the flag reaches the algorithm, compiles before the first
epoch, is recorded in config.yaml, and a bad mode is a one-line exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tdrl import cli


def test_bad_compile_mode_exits_2_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["train", "dqn", "CartPole-v1", "--compile", "fastest"])
    assert exc.value.code == 2
    assert "--compile" in capsys.readouterr().err


def test_compile_flag_compiles_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tdrl.algorithm.compile as comp
    from tdrl.algorithm.base import Algorithm

    calls: dict[str, Any] = {}
    real_compile = Algorithm.compile

    def spy_compile(self: Algorithm, mode: str | None = None, *a: Any, **k: Any) -> Algorithm:
        calls["mode"] = mode
        # aot_eager: the same graphs without inductor's code generation (fast in tests)
        return real_compile(self, mode, "aot_eager")

    real_warmup = comp.warmup

    def spy_warmup(alg: Any, data: Any, batch_size: Any) -> float:
        calls["warmup_rows"] = len(data)
        calls["compiled_before_warmup"] = comp.is_compiled(alg)
        return real_warmup(alg, data, batch_size)

    monkeypatch.setattr(Algorithm, "compile", spy_compile)
    monkeypatch.setattr(comp, "warmup", spy_warmup)
    argv = ["train", "dqn", "CartPole-v1", "--compile", "--epochs", "1", "--step-per-epoch"]
    argv += ["200", "--test-num", "1", "--logdir", str(tmp_path), "--no-progress", "--no-plot"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert calls["mode"] is None and calls["compiled_before_warmup"]
    assert calls["warmup_rows"] > 0
    assert "compiled the update in" in out and "dqn on CartPole-v1" in out.splitlines()[-1]
    (run,) = tmp_path.iterdir()
    assert yaml.safe_load((run / "config.yaml").read_text())["compile"] == "default"


@pytest.mark.parametrize(("times", "says"), [((2e-3, 1e-3), True), ((1e-3, 2e-3), False)])
def test_compile_on_the_cpu_says_when_eager_is_faster(
    times: tuple[float, float],
    says: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import tdrl.algorithm.compile as comp
    from tdrl.algorithm.base import Algorithm

    real_compile = Algorithm.compile
    monkeypatch.setattr(
        Algorithm, "compile", lambda self, mode=None, *a, **k: real_compile(self, mode, "eager")
    )
    monkeypatch.setattr(comp, "compare_with_eager", lambda alg, data, bs: times)
    argv = ["train", "dqn", "CartPole-v1", "--compile", "--epochs", "1", "--step-per-epoch"]
    argv += ["100", "--test-num", "1", "--logdir", str(tmp_path), "--no-progress", "--no-plot"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    line = "a compiled update takes 2.00 ms, an eager one 1.00 ms"
    assert (line in out and "eager is faster here" in out) == says
    assert out.count("--compile on the CPU") == (1 if says else 0)
