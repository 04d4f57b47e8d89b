"""``tdrl report DIR [--peer DIR2 ...] [--last-k K]``: (re)write ``DIR/report.md`` and
``DIR/curves.png`` from a benchmark directory (see :mod:`tdrl.benchmark.report`).

Runs of a peer library (e.g. Tianshou's, from ``benchmarks/mujoco_tianshou.py``) are put
side by side with tdrl's: found under ``DIR/LIBRARY/ALGO/TASK/seedS`` or in ``--peer``
directories. A bad flag or a directory without runs exits with status 2 and one line.

``tdrl report --seed-table [FILE]`` prints the Markdown table of a seed sweep to a
threshold instead (``tdrl bench --to-threshold``; FILE defaults to ``sweeps/results.jsonl``).
"""

from __future__ import annotations

import sys

from tdrl.cli.args import ArgumentParser, positive_int

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run ``tdrl report``; 0 on success, 2 on bad flags or no runs.

    >>> main(["/nonexistent-dir"])
    2
    """
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--seed-table"]:
        return _seed_table(argv[1:])
    parser = ArgumentParser(
        prog="tdrl report",
        description="Write DIR/report.md and DIR/curves.png from a benchmark directory.",
    )
    parser.add_argument("dir", help="the benchmark directory (tdrl bench --out)")
    parser.add_argument("--peer", action="append", default=[], help="another library's runs")
    parser.add_argument(
        "--last-k", type=positive_int, default=5, help="last tests pooled in the IQM"
    )
    parser.add_argument("--title", default="Benchmark report")
    args = parser.parse_args(argv)
    from tdrl.benchmark.report import write_report

    try:
        report, png = write_report(args.dir, args.peer, last_k=args.last_k, title=args.title)
    except FileNotFoundError as exc:
        print(f"tdrl report: error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {report}\ncurves: {png}")
    return 0


def _seed_table(argv: list[str]) -> int:
    """``tdrl report --seed-table [FILE]``: print the seed sweep's Markdown table."""
    from tdrl.benchmark.seed_sweep import DEFAULT_OUT, load_records, seed_table

    parser = ArgumentParser(
        prog="tdrl report --seed-table", description="Print a seed sweep's table."
    )
    parser.add_argument("file", nargs="?", default=str(DEFAULT_OUT), help="its results.jsonl")
    args = parser.parse_args(argv)
    records = load_records(args.file)
    if not records:
        print(f"tdrl report: error: {args.file}: no seed-sweep records", file=sys.stderr)
        return 2
    print(seed_table(records))
    return 0
