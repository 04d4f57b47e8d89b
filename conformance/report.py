"""The README's conformance tables, rendered from committed files (``scripts/render_tables.py``).

* :func:`render_counts`: per file of Tianshou's ``test/base``, how many tests pass, are a
  deliberate difference, are missing (an ``xfail`` whose anchor is ``missing-...``) or skip,
  from ``expected.toml``; and the algorithm scripts' small-budget listing from
  ``expected_scripts.toml``. Those listings are what ``nox -s conformance`` enforces (strict
  both ways), so the counts cannot drift from what CI checks.
* :func:`render_default_budget`: each algorithm script at its own default arguments (seed
  as the script sets it), from ``results/default-budget.json`` (written by
  ``python conformance/run.py --scripts --default-budget --resume --conformance-dump
  conformance/results/default-budget.json``): whether it reached its own threshold, its
  gradient steps and wall time, and the commit each record was measured at.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from plugin import load_expected

HERE = Path(__file__).resolve().parent
DEFAULT_BUDGET = HERE / "results" / "default-budget.json"


def _kind(value: str) -> str:
    kind = value.split(" ", 1)[0]
    if kind == "xfail" and value.split(" ", 2)[1].startswith("missing"):
        return "missing"
    return {"timing": "pass", "trains": "trains"}.get(kind, kind)


def render_counts() -> str:
    """The conformance summary table (markdown)."""
    base: dict[str, Counter[str]] = {}
    for key, value in load_expected(HERE / "expected.toml").items():
        base.setdefault(key.split("::", 1)[0], Counter())[_kind(value)] += 1
    lines = [
        "| Tianshou 2.0.1 tests | pass | deliberate difference | missing | skip (EnvPool) |",
        "|---|---|---|---|---|",
    ]
    total: Counter[str] = Counter()
    for file, c in sorted(base.items()):
        total += c
        lines.append(
            f"| `test/base/{file}` | {c['pass']} | {c['xfail']} | {c['missing']} | {c['skip']} |"
        )
    lines.append(
        f"| **`test/base` total** | **{total['pass']}** | **{total['xfail']}** | "
        f"**{total['missing']}** | **{total['skip']}** |"
    )
    scripts = Counter(_kind(v) for v in load_expected(HERE / "expected_scripts.toml").values())
    runnable = scripts["trains"] + scripts["xfail"] + scripts["missing"]
    lines += [
        "",
        f"Algorithm scripts (`test/discrete`, `continuous`, `offline`, `modelbased`, "
        f"`pettingzoo`) at the small budget: **{scripts['trains']} of {runnable} runnable "
        f"scripts train** (tdrl's gradient-step counter rises), {scripts['skip']} skipped "
        "(Tianshou skips its two pistonball tests itself; `test_psrl` needs EnvPool, which "
        "the conformance session does not install: it trains in `nox -s envpool`).",
    ]
    return "\n".join(lines) + "\n"


def render_default_budget() -> str:
    """The table of the scripts at their default budget (markdown)."""
    records = json.loads(DEFAULT_BUDGET.read_text()) if DEFAULT_BUDGET.is_file() else {}
    rows = {k: v for k, v in records.items() if not k.endswith("_determinism")}
    listed = load_expected(HERE / "expected_scripts.toml")
    lines = [
        "| script | test | reached its threshold | gradient steps | seconds | commit |",
        "|---|---|---|---|---|---|",
    ]
    reached = 0
    for key in sorted(listed):
        file, test = key.split("::", 1)
        rec = rows.get(key)
        if rec is None:
            cells = ["not run yet", "", "", ""]
        elif rec["outcome"] == "skip":
            cells = ["skipped", "", "", ""]
        else:
            ok = rec["outcome"] == "reached"
            reached += ok
            verdict = "yes" if ok else f"no ({rec['outcome']})"
            cells = [verdict, f"{rec['gradient_steps']:,}", f"{rec['seconds']:.0f}",
                     f"`{rec['commit'][:7]}`"]  # fmt: skip
        lines.append(f"| `{file}` | `{test}` | " + " | ".join(cells) + " |")
    ran = sum(1 for k in listed if k in rows and rows[k]["outcome"] != "skip")
    loads = [r["load_1min"] for r in rows.values() if "load_1min" in r]
    load = f"load {min(loads):.1f}-{max(loads):.1f}" if loads else "load unknown"
    lines += ["", f"**{reached} of {ran}** reached their own threshold ({load})."]
    return "\n".join(lines) + "\n"
