"""tdrl's side: :func:`tdrl.experiment.build_experiment` with the row's preset.

The preset as registered, with the budget mapped onto epochs (``eval_every`` steps each,
one test after each), no stop threshold (so no test-in-train either), ``logger="none"``,
no checkpoints. The random warm-up is collected inside the clock, as the peers' are.
"""

from __future__ import annotations

import tempfile
from typing import Any

import numpy as np

from benchmarks.peers.core import EvalLog, Row


def run(row: Row, seed: int, log: EvalLog) -> int:
    """Train ``row`` with tdrl; return the env steps collected."""
    from tdrl.experiment import ExperimentConfig, build_experiment

    overrides: dict[str, Any] = {
        "threshold": None,
        "max_epochs": row.train_steps // row.eval_every,
        "step_per_epoch": row.eval_every,
        "test_num": row.eval_episodes,
    }
    if row.warmup or row.algo in ("dqn", "sac"):
        overrides["warmup_steps"] = 0  # collected below, on the clock
    with tempfile.TemporaryDirectory() as tmp:
        cfg = ExperimentConfig(
            row.algo,
            row.task,
            seed=seed,
            logger="none",
            show_progress=False,
            plot=False,
            log_dir=tmp,
            overrides=overrides,
        )
        exp = build_experiment(cfg)
        train, test = exp.train_collector, exp.test_collector
        assert train is not None
        inner = test.collect

        def collect(*args: Any, **kwargs: Any) -> Any:
            out: list[Any] = []

            def once() -> float:
                out.append(inner(*args, **kwargs))
                return float(np.mean(out[0].returns))

            # the trainer zeroes the collector's counters when it starts: warm-up added
            log.evaluate(row.warmup + train.collect_step, once)
            return out[0]

        test.collect = collect  # type: ignore[method-assign]
        try:
            log.start()
            if row.warmup:
                train.collect(n_step=row.warmup, random=True)
            exp.trainer.run()
            log.stop()
        finally:
            exp.close()
        return row.warmup + int(train.collect_step)
