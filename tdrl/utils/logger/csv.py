"""A logger that writes one CSV file per scope into a run directory."""

from __future__ import annotations

import csv
import os
from pathlib import Path

from tdrl.utils.logger.base import SCOPE_STEP, BaseLogger

__all__ = ["CSVLogger", "read_csv_log", "truncate_csv_logs"]


def read_csv_log(path: str | os.PathLike[str]) -> dict[str, list[float]]:
    """Read one scope file back as ``{column: values}`` (missing cells become NaN).

    The first column is the scope's step counter (e.g. ``env_step``).
    """
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        columns: dict[str, list[float]] = {name: [] for name in reader.fieldnames or []}
        for row in reader:
            for name in columns:
                cell = row.get(name)
                columns[name].append(float(cell) if cell not in (None, "") else float("nan"))
    return columns


def truncate_csv_logs(
    log_dir: str | os.PathLike[str], epoch: int, env_step: int, gradient_step: int
) -> dict[str, int]:
    """Drop the rows of every ``<scope>.csv`` in ``log_dir`` logged after a checkpoint taken
    at ``(epoch, env_step, gradient_step)``: rows whose step (the scope's counter, see
    :data:`~tdrl.utils.logger.base.SCOPE_STEP`) is beyond it. What a resumed run does first,
    so it appends no duplicate rows. Returns ``{file name: rows dropped}``.

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> logger = CSVLogger(run)
    >>> for step in (100, 200, 300):
    ...     logger.log_test_data({"r": float(step)}, step=step)
    >>> truncate_csv_logs(run, epoch=2, env_step=200, gradient_step=0)
    {'test.csv': 1}
    >>> read_csv_log(f"{run}/test.csv")["env_step"]
    [100.0, 200.0]
    """
    limits = {"env_step": env_step, "gradient_step": gradient_step, "epoch": epoch}
    dropped: dict[str, int] = {}
    for path in sorted(Path(log_dir).glob("*.csv")):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if not rows or not rows[0] or rows[0][0] not in limits:
            continue
        limit = limits[rows[0][0]]
        keep = [rows[0]] + [r for r in rows[1:] if r and r[0] != "" and float(r[0]) <= limit]
        if len(keep) == len(rows):
            continue
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", newline="") as f:
            csv.writer(f).writerows(keep)
        os.replace(tmp, path)
        dropped[path.name] = len(rows) - len(keep)
    return dropped


class CSVLogger(BaseLogger):
    """Write ``<log_dir>/<scope>.csv`` files: a step column, then flat ``scope/...`` keys.

    A key that appears later rewrites the file with the wider header (earlier rows get empty
    cells). ``save_data`` writes ``save.csv``; :meth:`restore_data` reads its last row, so a
    run restarted on the same directory resumes its counters and appends to its files.

    :param log_dir: the run directory (created if missing).
    :param kwargs: the intervals of :class:`~tdrl.utils.logger.base.BaseLogger`.

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> logger = CSVLogger(run)
    >>> logger.log_test_data({"returns_stat": {"mean": 10.0}}, step=500)
    >>> logger.save_data(epoch=1, env_step=500, gradient_step=40)
    >>> read_csv_log(f"{run}/test.csv")
    {'env_step': [500.0], 'test/returns_stat/mean': [10.0]}
    >>> CSVLogger(run).restore_data()
    (1, 500, 40)
    """

    def __init__(self, log_dir: str | os.PathLike[str], **kwargs: int | None) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._headers: dict[str, list[str]] = {}

    def path(self, scope: str) -> Path:
        """The CSV file of ``scope``."""
        return self.log_dir / f"{scope}.csv"

    def _header(self, scope: str) -> list[str]:
        header = self._headers.get(scope)
        if header is None:
            header = []
            path = self.path(scope)
            if path.is_file():
                with open(path, newline="") as f:
                    header = next(csv.reader(f), [])
            self._headers[scope] = header
        return header

    def write(self, scope: str, step: int, data: dict[str, float]) -> None:
        """Append one row to ``<scope>.csv`` (rewriting it if the header grows)."""
        step_name = SCOPE_STEP.get(scope, "step")
        row: dict[str, float | int] = {step_name: step, **data}
        header = self._header(scope)
        path = self.path(scope)
        new_keys = [k for k in row if k not in header]
        if new_keys or not path.is_file():
            old_rows: list[dict[str, str]] = []
            if path.is_file() and header:
                with open(path, newline="") as f:
                    old_rows = list(csv.DictReader(f))
            header = [*header, *new_keys]
            self._headers[scope] = header
            tmp = path.with_suffix(".tmp")
            with open(tmp, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=header)
                writer.writeheader()
                writer.writerows(old_rows)
                writer.writerow(row)
            os.replace(tmp, path)
        else:
            with open(path, "a", newline="") as f:
                csv.DictWriter(f, fieldnames=header).writerow(row)

    def restore_data(self) -> tuple[int, int, int]:
        """``(epoch, env_step, gradient_step)`` from the last row of ``save.csv``."""
        path = self.path("save")
        if not path.is_file():
            return 0, 0, 0
        columns = read_csv_log(path)
        if not columns.get("epoch"):
            return 0, 0, 0
        return self._restored(
            int(columns["epoch"][-1]),
            int(columns["save/env_step"][-1]),
            int(columns["save/gradient_step"][-1]),
        )
