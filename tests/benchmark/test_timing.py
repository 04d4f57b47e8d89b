"""``benchmarks.timing.lane_paused``: the lane's pause lock, held once per process."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks import timing  # noqa: E402
from benchmarks.long import lane  # noqa: E402


def _lock_is_free(path: Path, monkeypatch: pytest.MonkeyPatch) -> bool:
    """What the lane itself sees (``lane._pause_held``) for the lock at ``path``."""
    monkeypatch.setattr(lane, "PAUSE_LOCK", path)
    return not lane._pause_held()


def test_nested_pauses_do_not_wait_on_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m benchmarks`` pauses the lane and runs modules that pause it again
    (``bench_mujoco``, ``bench_peers``): the inner block must not wait for the outer."""
    lock = tmp_path / "long" / "pause.lock"
    monkeypatch.setattr(timing, "LANE_PAUSE_LOCK", lock)
    monkeypatch.setattr(timing.time, "sleep", lambda s: None)
    seen: list[bool] = []

    def nested() -> None:
        with timing.lane_paused():
            with timing.lane_paused():
                seen.append(_lock_is_free(lock, monkeypatch))
            seen.append(_lock_is_free(lock, monkeypatch))  # the outer block still holds it
        seen.append(_lock_is_free(lock, monkeypatch))

    worker = threading.Thread(target=nested, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the inner lane_paused() waited for the outer one"
    assert seen == [False, False, True]


def test_the_lock_is_released_when_the_block_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = tmp_path / "pause.lock"
    monkeypatch.setattr(timing, "LANE_PAUSE_LOCK", lock)
    monkeypatch.setattr(timing.time, "sleep", lambda s: None)
    with pytest.raises(RuntimeError), timing.lane_paused(), timing.lane_paused():
        raise RuntimeError("boom")
    assert _lock_is_free(lock, monkeypatch)
    with timing.lane_paused():  # and it can be taken again
        assert not _lock_is_free(lock, monkeypatch)
