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
    assert scope["result"].best_reward >= 195  # type: ignore[attr-defined]
