"""Two ``tdrl bench`` processes on one ``--out``: each counts only the runs it trained. A run
another process finished after this sweep listed it is "already done", not "finished"."""

from __future__ import annotations

import json
from pathlib import Path

from tdrl.benchmark import pool
from tdrl.benchmark import runner as runner_mod
from tdrl.benchmark.plan import DONE_FILE, RunSpec


def test_a_run_finished_by_another_process_meanwhile_is_not_counted_as_finished(
    tmp_path: Path,
) -> None:
    spec = RunSpec("dqn", "CartPole-v1", 0, 200, str(tmp_path), logger="csv")
    d = runner_mod.prepare_run(spec)
    assert not spec.finished()  # what this sweep saw when it listed its runs ...
    (d / DONE_FILE).write_text(json.dumps({"env_step": 200, "wall_s": 1.0}))  # ... then
    result = pool.SweepResult()
    progress = pool._Progress([spec], show=False)
    pool._run_local([spec], 1, result, progress, keep_checkpoints=False, poll=0.05)
    progress.close()
    assert result.finished == [] and result.failed == [], result
    assert result.skipped == [spec]
    assert not (d / "train.csv").exists()  # nothing trained here
    assert runner_mod.main([str(d)]) == runner_mod.ALREADY_DONE_EXIT
