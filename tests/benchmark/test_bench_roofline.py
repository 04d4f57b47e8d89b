"""benchmarks/bench_roofline.py: the recorded matmuls are the update's, FLOPs are counted
right, and every row reports its columns."""

from __future__ import annotations

import torch

from benchmarks.bench_roofline import _flops, _MatmulShapes, measure


def test_flops_of_mm_addmm_and_bmm() -> None:
    with _MatmulShapes() as rec:
        torch.mm(torch.ones(2, 3), torch.ones(3, 4))
        torch.addmm(torch.ones(4), torch.ones(2, 3), torch.ones(3, 4))
        torch.bmm(torch.ones(5, 2, 3), torch.ones(5, 3, 4))
    assert [_flops(f, s) for f, s in rec.calls] == [48, 48, 240]


def test_a_linear_layers_forward_and_backward_are_recorded() -> None:
    layer = torch.nn.Linear(3, 4)
    x = torch.ones(8, 3, requires_grad=True)
    with _MatmulShapes() as rec:
        layer(x).sum().backward()
    # forward addmm, then the input and the weight gradients
    assert sum(_flops(f, s) for f, s in rec.calls) == 3 * 2 * 8 * 3 * 4


def test_a_row_reports_every_column() -> None:
    torch.manual_seed(0)
    m = measure("dqn", rounds=1)
    assert set(m) == {
        "update_ms", "gflop", "achieved", "bare", "x_floor", "matmuls",
        "ops_ms", "x_ops", "aten_ops",
    }  # fmt: skip
    # DQN CartPole: a 4-128-128-2 net at batch 64 (forward, backward, target forward)
    assert m["matmuls"] >= 9 and m["gflop"] > 0
    # every op of an update: the matmuls and more (activations, loss, optimizer, targets)
    assert m["aten_ops"] > m["matmuls"] and m["ops_ms"] > 0 and m["x_ops"] > 0


def test_the_aten_replay_runs_the_recorded_ops_again() -> None:
    from benchmarks.bench_roofline import _AllOps, _replay_ops

    w = torch.ones(3, requires_grad=True)
    with _AllOps() as rec:
        (w * 2).sum().backward()
    names = [str(f) for f, _, _ in rec.calls]
    assert any("mul" in n for n in names) and any("sum" in n for n in names)
    before = w.detach().clone()
    with _AllOps() as rec, torch.no_grad():
        w.add_(1.0)
    assert _replay_ops(rec.calls) >= 0
    assert torch.equal(w.detach(), before + 2.0)  # recorded once, replayed once
