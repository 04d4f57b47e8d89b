"""docs/from-tianshou.md: its Tianshou 2.0 script runs on tdrl with only tdrl imports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "from-tianshou.md"


def _script() -> str:
    text = PAGE.read_text()
    section = text[text.index("## A Tianshou 2.0 script on tdrl") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "the section has no python block"
    return match.group(1)


def test_the_script_imports_only_tdrl_and_names_each_tianshou_module() -> None:
    imports = [line for line in _script().splitlines() if line.startswith("from ")]
    assert imports and all(line.startswith("from tdrl.") for line in imports)
    assert all("# tianshou." in line for line in imports)  # the line it replaces


def test_the_script_trains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tdrl.algorithm.optim import GradStep

    code = _script()
    small = code.replace("max_epochs=10", "max_epochs=1").replace(
        "epoch_num_steps=50000", "epoch_num_steps=2000"
    )
    assert small != code  # the budget really shrank
    monkeypatch.chdir(tmp_path)
    before = GradStep.taken
    namespace: dict[str, object] = {}
    exec(compile(small, str(PAGE), "exec"), namespace)
    result = namespace["result"]
    assert result.env_step == 2000 and result.gradient_step == 1  # type: ignore[attr-defined]
    assert GradStep.taken - before > 0
