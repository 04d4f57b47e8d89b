"""The README's example runs as written and trains PPO on CartPole to the threshold (slow)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _example() -> str:
    text = README.read_text()
    section = text[text.index("## A 20-line example") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def test_readme_example_is_at_most_20_lines() -> None:
    assert len(_example().strip().splitlines()) <= 20


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_readme_example_trains() -> None:
    scope: dict[str, object] = {}
    exec(compile(_example(), str(README), "exec"), scope)
    assert scope["result"].best_trained_reward >= 195  # type: ignore[attr-defined]


def test_generated_tables_match_the_committed_results() -> None:
    """Every table between generated markers in the README and docs is what
    ``scripts/render_tables.py`` renders from the committed results files."""
    import importlib.util

    path = README.parent / "scripts" / "render_tables.py"
    spec = importlib.util.spec_from_file_location("render_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "<!-- generated: algorithms " in README.read_text()
    assert module.main(["--check"]) == 0


def test_a_stale_table_is_caught(tmp_path: Path) -> None:
    import importlib.util

    path = README.parent / "scripts" / "render_tables.py"
    spec = importlib.util.spec_from_file_location("render_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stale = (
        "<!-- generated: algorithms (python scripts/render_tables.py) -->\n| made up |\n"
        "<!-- end generated: algorithms -->\n"
    )
    fresh = module.render(stale, {})
    assert fresh != stale and "| `dqn` (DQN) | CartPole-v1 | 195 |" in fresh
