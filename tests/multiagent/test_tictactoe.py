"""The tic-tac-toe recipe: its play loop (scripted stdin) and, slow, its win rate."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

# PettingZoo >= 1.27 prefers pettingzoo.make("aec", ...); the module API still works (>= 1.24)
pytestmark = pytest.mark.filterwarnings("ignore:The old environment creation API")


RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "tictactoe_dqn.py"


def _recipe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tictactoe_dqn", RECIPE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tictactoe_dqn"] = mod
    spec.loader.exec_module(mod)
    return mod


class _Scripted:
    """Stands in for the trained agent: plays squares in the given (display) order."""

    def __init__(self, squares: list[int]) -> None:
        self.squares = iter(squares)

    def compute_action(self, obs):  # type: ignore[no-untyped-def]
        s = next(self.squares) - 1
        return s % 3 * 3 + s // 3

    is_within_training_step = False


def _agents_playing(squares: list[int]):  # type: ignore[no-untyped-def]
    class _Agents:
        policy = _Scripted(squares)

    return _Agents()


def test_play_reads_moves_and_rejects_bad_ones() -> None:
    mod = _recipe()
    # X: 1, 2, 3 (top row); you: 5, then "x", "1" (taken) and 10 before 9
    stdin = io.StringIO("5\nx\n1\n10\n9\n")
    out = io.StringIO()
    x = mod.play(_agents_playing([1, 2, 3]), stdin=stdin, stdout=out)
    text = out.getvalue()
    assert x == 1.0 and "X wins." in text
    assert "Square 1 is taken." in text and "got 'x'" in text and "got '10'" in text
    assert " X | X | X " in text and " 4 | O | 6 " in text


def test_play_you_can_win_and_draw() -> None:
    mod = _recipe()
    out = io.StringIO()
    assert mod.play(_agents_playing([1, 2, 9]), io.StringIO("5\n3\n7\n"), out) == -1.0
    assert "You win!" in out.getvalue()
    out = io.StringIO()
    # X 5 1 6 8 7, O 9 4 2 3: a full board without a line
    draw = mod.play(_agents_playing([5, 1, 6, 8, 7]), io.StringIO("9\n4\n2\n3\n"), out)
    assert draw == 0.0 and "Draw." in out.getvalue()


def test_play_stops_cleanly_at_end_of_input() -> None:
    mod = _recipe()
    with pytest.raises(SystemExit, match="no more input"):
        mod.play(_agents_playing([5, 2]), io.StringIO("1\n"), io.StringIO())


def test_trained_agent_plays_from_saved_weights(tmp_path: Path) -> None:
    """``--play`` loads the weights the training run saved and answers with legal moves."""
    mod = _recipe()
    args = mod.get_args(["--path", str(tmp_path / "w.pt")])
    agents = mod.make_agents(args)
    torch.save(agents.state_dict(), args.path)
    again = mod.make_agents(args)
    again.load_state_dict(torch.load(args.path, weights_only=False))
    out = io.StringIO()
    moves = "\n".join(str(s) for s in range(1, 10)) * 2 + "\n"
    x = mod.play(again, io.StringIO(moves), out)
    assert x in (-1.0, 0.0, 1.0)


@pytest.mark.slow
def test_dqn_moving_first_beats_a_random_player_90_percent(tmp_path: Path) -> None:
    mod = _recipe()
    args = mod.get_args(["--seed", "0", "--path", str(tmp_path / "w.pt")])
    agents, result = mod.train(args)
    rates = mod.evaluate(agents, 200, seed=1000)
    assert rates["win"] >= 0.9, (rates, result.env_step)
    assert np.isclose(rates["win"] + rates["draw"] + rates["loss"], 1.0)
