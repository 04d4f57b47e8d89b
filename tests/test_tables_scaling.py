"""docs/scaling.md's table renderers (``scripts/tables_scaling.py``) on small fixtures."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import tables_scaling as ts  # noqa: E402

from tests.test_tables_bench import _write  # noqa: E402

BASE = {
    "commit": "0123456789abcdef+dirty",
    "machine": {"cpu": "Test CPU", "cores": 2},
    "date": "2026-11-27T04:00:00Z",
    "load1": 1.5,
}


def _scaling(inv: str = "B", **kw: Any) -> dict[str, Any]:
    return {**BASE, "command": "python -m benchmarks.__main__ scaling", "invocation": inv,
            "module": "bench_scaling", **kw}  # fmt: skip


def _collect(inv: str = "B") -> list[dict[str, Any]]:
    c = {"kind": "collect", "steps": 400, "rounds": 3}
    return [
        _scaling(inv, name="in-process Collector (1 env)", steps_per_s=1000.0, **c),
        _scaling(inv, name="RayCollector M=1", workers=1, steps_per_s=800.0, round_s=0.01, **c),
        _scaling(inv, name="RayCollector M=2", workers=2, steps_per_s=1200.0, round_s=0.02, **c),
        _scaling(inv, name="RayCollector M=4", workers=4, steps_per_s=640.0, round_s=0.04, **c),
    ]


def _learner(inv: str = "B") -> dict[str, Any]:
    return _scaling(inv, name="SAC Hopper-v5 update (batch 256)", kind="learner",
                    update_s=0.02, sample_s=5e-5, batch_size=256, params=210184,
                    grad_bytes=840736, rounds=7, filled=10000)  # fmt: skip


def _memory(inv: str = "M") -> list[dict[str, Any]]:
    m = {**BASE, "command": "python -m benchmarks memory", "invocation": inv,
         "module": "bench_memory"}  # fmt: skip
    return [
        {**m, "name": "Hopper-v5 (float64 obs)", "kind": "buffer", "size": 1_000_000,
         "extrapolate": 1_000_000, "columns_bytes": 199_000_000, "rss_anon_bytes": 216_000_000,
         "raw_bytes_per_transition": 198},
        {**m, "name": "Atari (uint8, save_only_last_obs)", "kind": "buffer", "size": 100_000,
         "extrapolate": 1_000_000, "columns_bytes": 707_500_000, "rss_anon_bytes": 706_400_000,
         "raw_bytes_per_transition": 7074},
        {**m, "name": "memmap Atari buffer", "kind": "memmap", "size": 320_000,
         "file_bytes": 2_264_000_000, "filesystem": "ext4 at /",
         "samples": [{"frames": 32_000, "RssAnon": 5_242_880, "RssFile": 236_000_000},
                     {"frames": 320_000, "RssAnon": 5_242_880, "RssFile": 2_264_000_000}]},
    ]  # fmt: skip


def test_collect_table_computes_the_efficiency_from_the_newest_run(tmp_path: Path) -> None:
    old = [{**r, "steps_per_s": 9999.0} for r in _collect("A")]
    path = _write(tmp_path / "s.jsonl", old + _collect() + [_learner()] + _memory())
    text = ts.render_scaling_collect(path)
    assert "| in-process `Collector`, 1 env | 1,000 | — | — | — |" in text
    assert "| `RayCollector` M = 1 | 800 | 1.00× | 100% | 10.0 ms |" in text
    assert "| `RayCollector` M = 2 | 1,200 | 1.50× | 75% | 20.0 ms |" in text
    assert "| `RayCollector` M = 4 | 640 | 0.80× | 20% | 40.0 ms |" in text
    assert "9,999" not in text  # the newest invocation only
    assert "_`python -m benchmarks scaling`, 400 steps per worker per round, 3 rounds;" in text
    assert "commit 0123456789+dirty; Test CPU (2 cores); 1-min load 1.5–1.5 while timing._" in text


def test_learner_table_sets_the_update_beside_one_worker(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [*_collect(), _learner()])
    text = ts.render_scaling_learner(path)
    assert "| SAC Hopper-v5 update (batch 256) | `sample(256)` | updates/s" in text
    assert "| 20.0 ms | 50 µs | 50 | 800 | 16× | 210,184 | 0.84 MB |" in text
    assert "median of 7 rounds after a warm-up, one torch thread" in text
    with pytest.raises(SystemExit, match=r"expected learner records .*benchmarks scaling"):
        ts.render_scaling_learner(_write(tmp_path / "c.jsonl", _collect()))
    with pytest.raises(SystemExit, match="M = 1 record"):
        no_one = [r for r in _collect() if r.get("workers") != 1] + [_learner()]
        ts.render_scaling_learner(_write(tmp_path / "l.jsonl", no_one))


def test_memory_table_extrapolates_the_atari_buffer(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", _collect() + _memory())
    text = ts.render_scaling_memory(path)
    assert "| Hopper-v5 (obs, obs_next 11 × float64; act 3 × float32; rew; 2 flags) " in text
    assert "| 1,000,000 | 199.0 | 216.0 | 198 | 0.19 GiB |" in text
    assert "| 100,000 (→ 1M extrapolated) | 7,075 | 7,064 | 7,074 | 6.59 GiB at 1M |" in text
    assert "`python -m benchmarks memory`" in text and "while measuring._" in text
    assert "scaling`" not in text  # the memory module's records only
    with pytest.raises(SystemExit, match=r"expected buffer records .*benchmarks memory"):
        ts.render_scaling_memory(_write(tmp_path / "c.jsonl", _collect()))


def test_memmap_table_renders_each_sample(tmp_path: Path) -> None:
    text = ts.render_scaling_memmap(_write(tmp_path / "s.jsonl", _memory()))
    assert "| 32,000 | +5.0 | +225 |" in text and "| 320,000 | +5.0 | +2,159 |" in text
    assert "a 320,000-frame Atari buffer with `memmap_dir=`: 2.11 GiB of files on ext4" in text
    with pytest.raises(SystemExit, match="expected a results file"):
        ts.render_scaling_memmap(tmp_path / "missing.jsonl")


def test_render_tables_registers_every_scaling_renderer() -> None:
    import render_tables

    assert set(ts.RENDERERS) <= set(render_tables.RENDERERS)
    assert all(f"<!-- generated: {name} " in (ROOT / "docs" / "scaling.md").read_text()
               for name in ts.RENDERERS)  # fmt: skip
