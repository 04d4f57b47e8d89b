"""``torch.compile`` for an algorithm's update: ``algorithm.compile(mode=..., backend=...)``.

What is compiled (the hot path of every update, for every family):

* each stage's loss function (the ``loss_*`` terms from the sampled batch) — forward and,
  through AOTAutograd, its backward; tdrl's stages read the batch by key only, so the
  graphs have no breaks (checked per family in ``tests/algorithm/test_compile.py``);
* on a CUDA device (or with ``compile_optimizer=True``), each optimizer's gradient
  clipping + ``optimizer.step()`` as one graph. On the CPU the optimizer step stays eager
  by default: tdrl's Adam fast path is one ``torch._fused_adam_`` call over all of an
  optimizer's parameters, and inductor's generated C++ loop for the same step measured
  several times slower on this project's CPU (a compiled SAC update 0.66x of eager with
  it, 0.86x without, the same loaded run: ``python -m benchmarks compile``).

Zeroing the gradients and the backward pass (``backward_into(loss, params)``) stay eager
calls (they run the compiled backward). Sampling, n-step targets and GAE (numpy over the
buffer) are not traced. The update computes what eager computes: the same losses and
parameters to float tolerance (compiled kernels may reorder floating-point sums); with
inductor, random draws inside the losses (SAC's reparameterised actions) come from eager's
generator (``fallback_random``), so they are the same numbers too.

A first compile costs seconds (inductor: tens of seconds); :func:`warmup` runs one update
on a real batch and then restores every parameter, optimizer state, counter and random
generator, so the compile happens before training (not in the first epoch) and the run
stays the one eager would make.

Pseudocode of the compiled update (per stage ``s`` due at this step)::

    terms = compiled_losses_s(batch)            # forward graph (+ backward graph)
    for keys, opt in s.steps:
        grads := None; backward(sum(terms[keys]), inputs=opt.params)
        clip_and_step_opt()                     # a compiled graph on CUDA, else eager

Example:
    >>> import gymnasium as gym, torch
    >>> from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
    >>> alg = DQN(policy=DQNPolicy(model=torch.nn.Linear(4, 2),
    ...                            action_space=gym.spaces.Discrete(2)))
    >>> _ = alg.compile(backend="aot_eager")
    >>> is_compiled(alg), compile_options(alg)["backend"]
    (True, 'aot_eager')
    >>> uncompile(alg); is_compiled(alg)
    False
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tdrl.algorithm.optim import GradStep, backward_into, trainable
from tdrl.algorithm.policy import _train_mode, within_training_step

if TYPE_CHECKING:
    from tdrl.algorithm.algorithm_base import Algorithm

__all__ = [
    "MODES",
    "compile_algorithm",
    "compile_options",
    "is_compiled",
    "synthetic_buffer",
    "uncompile",
    "warmup",
]

MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""The ``mode`` values ``torch.compile`` accepts (``None`` is its default)."""

_STATE = "_compile_state"


def _check_args(mode: Any, backend: Any) -> None:
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {list(MODES)}, got {mode!r}")
    if not (isinstance(backend, str) and backend) and not callable(backend):
        raise ValueError(f"backend: expected a backend name or a callable, got {backend!r}")


def compile_algorithm(
    algorithm: Algorithm,
    mode: str | None = None,
    backend: str | Callable[..., Any] = "inductor",
    fullgraph: bool = False,
    dynamic: bool | None = None,
    compile_optimizer: bool | None = None,
) -> Algorithm:
    """Run ``algorithm``'s update (loss stages and optimizer steps) through ``torch.compile``.

    :param algorithm: any tdrl :class:`~tdrl.algorithm.algorithm_base.Algorithm`.
    :param mode: ``torch.compile``'s mode (``None``, ``"default"``, ``"reduce-overhead"``
        (CUDA graphs on a GPU), ``"max-autotune"``, ...).
    :param backend: ``"inductor"`` (default), ``"aot_eager"`` (tracing without code
        generation: the tests' choice), ``"eager"``, or a backend callable.
    :param fullgraph: fail on any graph break instead of falling back to Python.
    :param dynamic: ``torch.compile``'s ``dynamic`` (``None``: specialise, then generalise
        on a second batch shape).
    :param compile_optimizer: compile each optimizer's clipping + step too (``None``: when
        the parameters are on a CUDA device; see the module docstring).
    :return: ``algorithm`` (compiled in place; :func:`uncompile` reverts).
    """
    _check_args(mode, backend)
    if is_compiled(algorithm):
        uncompile(algorithm)
    options: dict[str, Any] = {
        "mode": mode,
        "backend": backend,
        "fullgraph": fullgraph,
        "dynamic": dynamic,
        "compile_optimizer": compile_optimizer,
    }
    if compile_optimizer is None:
        param = next(algorithm.parameters(), None)
        compile_optimizer = param is not None and param.device.type == "cuda"

    kwargs: dict[str, Any] = {"backend": backend, "fullgraph": fullgraph, "dynamic": dynamic}
    if backend == "inductor":
        # inductor draws random numbers with its own generator unless told to fall back to
        # eager's: with the fallback, SAC's reparameterised samples (and any dropout) are
        # the ones eager draws, so compiled and eager updates agree
        from torch._inductor import list_mode_options

        inductor = dict(list_mode_options(mode or "default", dynamic))
        inductor["fallback_random"] = True
        kwargs["options"] = inductor
        cudagraphs = bool(inductor.get("triton.cudagraphs"))
    else:
        kwargs["mode"] = mode
        cudagraphs = False

    def jit(fn: Callable[..., Any], graphs: bool = cudagraphs) -> Callable[..., Any]:
        return torch.compile(fn, **_without_cudagraphs(kwargs, graphs))  # type: ignore[no-any-return]

    eager_losses = []
    for stage in algorithm._stages:
        eager_losses.append(stage.losses)
        several = len(stage.steps) > 1
        compiled = jit(stage.losses, graphs=cudagraphs and not several)
        if several:
            compiled = _backward_twice(compiled)
        elif cudagraphs:
            compiled = _owned_outputs(compiled)
        stage.losses = _frozen_outside(stage, algorithm, compiled)
    if compile_optimizer:
        for gs in algorithm._grad_steps:
            gs.__dict__["step"] = _compiled_step(gs, jit)
    algorithm.__dict__[_STATE] = {"options": options, "eager_losses": eager_losses}
    return algorithm


def _without_cudagraphs(kwargs: dict[str, Any], graphs: bool) -> dict[str, Any]:
    """``torch.compile``'s ``kwargs``, with inductor's CUDA graphs off unless ``graphs``.

    A stage of several optimizer steps (SAC's actor and temperature losses) is compiled
    without CUDA graphs: CUDA graph trees take the stage's first backward as the end of
    its graph's run, and the replays that follow (the first optimizer step) overwrite the
    tensors the graph saved for the second backward (found on an H200,
    ``benchmarks/results/gpu-2026-11-28/``).

    >>> kw = {"backend": "inductor", "options": {"triton.cudagraphs": True}}
    >>> _without_cudagraphs(kw, False)["options"]["triton.cudagraphs"]
    False
    >>> _without_cudagraphs(kw, True) is kw
    True
    """
    if graphs or "options" not in kwargs:
        return kwargs
    return {**kwargs, "options": {**kwargs["options"], "triton.cudagraphs": False}}


def _backward_twice(compiled: Callable[..., Any]) -> Callable[..., Any]:
    """``compiled`` built without donated buffers, for a stage of several optimizer steps.

    Its terms (SAC's actor and temperature losses) come out of one compiled graph, and
    each step backpropagates its own term through it, all but the last keeping the graph
    (``retain_graph``). AOTAutograd's donated buffers free the graph's saved tensors in
    the first backward, which such a stage cannot allow. Such a stage runs without CUDA
    graphs (:func:`_without_cudagraphs`), so its outputs are its own.
    """
    import torch._functorch.config as functorch_config

    def losses(td: Any) -> Any:
        with functorch_config.patch(donated_buffer=False):
            return compiled(td)

    return losses


def _owned_outputs(compiled: Callable[..., Any]) -> Callable[..., Any]:
    """``compiled`` with its outputs copied out of the CUDA graphs' memory.

    A function compiled with CUDA graphs (``mode="reduce-overhead"`` or
    ``"max-autotune"``) returns tensors in memory that its next replay, or another
    graph's, overwrites. The update keeps loss terms past that point (the logged stats,
    read lazily; a delayed stage's last terms) and ``td_error`` written into the batch is
    read by ``postprocess`` after the next stage ran: each of them is cloned once here.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> out = torch.ones(())
    >>> def f(td):
    ...     td.set("td_error", out)
    ...     return {"loss": out}
    >>> td = TensorDict({"x": torch.zeros(2)}, [])
    >>> terms = _owned_outputs(f)(td)
    >>> terms["loss"] is out, td["td_error"] is out, bool(terms["loss"] == out)
    (False, False, True)
    """

    def losses(td: Any) -> Any:
        before = set(td.keys(True, True))
        terms = compiled(td)
        for key in set(td.keys(True, True)) - before:
            td.set(key, td.get(key).clone())
        return {k: v.clone() for k, v in terms.items()}

    return losses


def _frozen_outside(stage: Any, algorithm: Algorithm, compiled: Callable[..., Any]) -> Any:
    """Call ``compiled`` with the parameters no optimizer of ``stage`` trains frozen.

    The compiled backward is one graph for every input that requires a gradient; eager's
    ``backward(inputs=params)`` skips the others (SAC's critics under its actor loss).
    Freezing them while the stage runs gives the compiled graph the same pruning; the
    gradients that flow *through* them (to the actions) are unchanged.
    """
    trained = {id(p) for _, gs in stage.steps for p in gs.params}
    frozen = [p for p in algorithm.parameters() if p.requires_grad and id(p) not in trained]
    if not frozen:
        return compiled

    def losses(td: Any) -> Any:
        for p in frozen:
            p.requires_grad_(False)
        try:
            return compiled(td)
        finally:
            for p in frozen:
                p.requires_grad_(True)

    return losses


def _compiled_step(gs: GradStep, jit: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Any:
    """``GradStep.step`` with clipping + ``optimizer.step()`` as one compiled function."""
    params = gs.params
    optim = gs.optim
    max_norm = gs.max_grad_norm

    def clip_and_step() -> None:
        if max_norm is not None:
            grads = [p.grad for p in params if p.grad is not None]
            if grads:  # clip_grad_norm_(foreach=True)'s arithmetic
                total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)))
                coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
                torch._foreach_mul_(grads, coef)
        optim.step()

    compiled = jit(clip_and_step)
    groups = optim.param_groups

    def step(loss: torch.Tensor, retain_graph: bool = False) -> None:
        for group in groups:
            for p in group["params"]:
                p.grad = None
        inputs = trainable(params)
        if inputs:
            backward_into(loss, inputs, retain_graph)
        compiled()
        GradStep.taken += 1

    return step


def is_compiled(algorithm: Algorithm) -> bool:
    """Whether :func:`compile_algorithm` is in effect on ``algorithm``."""
    return _STATE in algorithm.__dict__


def compile_options(algorithm: Algorithm) -> dict[str, Any]:
    """The ``torch.compile`` options in effect (``{}`` when not compiled)."""
    state = algorithm.__dict__.get(_STATE)
    return dict(state["options"]) if state else {}


def uncompile(algorithm: Algorithm) -> None:
    """Restore the eager stages and optimizer steps (a no-op when not compiled)."""
    state = algorithm.__dict__.pop(_STATE, None)
    if state is None:
        return
    for stage, losses in zip(algorithm._stages, state["eager_losses"]):
        stage.losses = losses
    for gs in algorithm._grad_steps:
        gs.__dict__.pop("step", None)


# --------------------------------------------------------------------------- warm-up
def _tensors(algorithm: Algorithm) -> list[torch.Tensor]:
    seen: dict[int, torch.Tensor] = {}
    for t in [*algorithm.parameters(), *algorithm.buffers()]:
        seen.setdefault(id(t), t)
    return list(seen.values())


@contextlib.contextmanager
def _restored(algorithm: Algorithm, buffer: Any) -> Any:
    """Put back, in place, every tensor, optimizer state, counter and RNG state on exit."""
    tensors = _tensors(algorithm)
    saved = [t.detach().clone() for t in tensors]
    optim_state: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for gs in algorithm._grad_steps:
        for group in gs.optim.param_groups:
            for p in group["params"]:
                st = gs.optim.state.get(p)
                optim_state.append(
                    (
                        gs.optim.state[p],
                        None if not st else {k: _clone(v) for k, v in st.items()},
                    )
                )
    counters = (algorithm._stage_calls, getattr(algorithm, "_targets_due", True))
    lasts = [list(stage.last) for stage in algorithm._stages]
    rng = torch.get_rng_state()
    np_rng = np.random.get_state()
    buf_rng = getattr(buffer, "_rng", None)
    buf_rng_state = buf_rng.get_state() if isinstance(buf_rng, torch.Generator) else None
    try:
        yield
    finally:
        with torch.no_grad():
            for t, s in zip(tensors, saved):
                t.copy_(s)
            for state, before in optim_state:
                for key, value in list(state.items()):
                    if before is not None and key in before:
                        old = before[key]
                        if isinstance(value, torch.Tensor):
                            value.copy_(old)
                        else:
                            state[key] = old
                    elif isinstance(value, torch.Tensor):
                        value.zero_()  # a state the warm-up created: as freshly initialised
        for gs in algorithm._grad_steps:
            for group in gs.optim.param_groups:
                for p in group["params"]:
                    p.grad = None
        algorithm._stage_calls = counters[0]
        algorithm.__dict__["_targets_due"] = counters[1]
        for stage, last in zip(algorithm._stages, lasts):
            stage.last = last
        torch.set_rng_state(rng)
        np.random.set_state(np_rng)
        if buf_rng_state is not None:
            buf_rng.set_state(buf_rng_state)  # type: ignore[union-attr]


def _clone(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def warmup(algorithm: Algorithm, buffer: Any, batch_size: int | None) -> float:
    """Compile now: one update on a batch of ``buffer``, then restore everything.

    Runs every stage (a delayed one too) on a sampled (off-policy) or whole-buffer
    (on-policy, every minibatch size) batch; afterwards parameters, optimizer states,
    counters and the torch / numpy / buffer random generators are as before, so training
    continues exactly as without the warm-up. Returns the seconds it took.
    """
    import time

    start = time.perf_counter()
    every = max([stage.every for stage in algorithm._stages] or [1])
    with (
        _restored(algorithm, buffer),
        within_training_step(algorithm.policy),
        _train_mode(algorithm, algorithm.policy),
    ):
        if algorithm.on_policy:
            indices = buffer.sample_indices(0)
            batch = algorithm.preprocess(algorithm._on_device(buffer[indices]), buffer, indices)
            algorithm._update_with_batch(batch, batch_size, 1)
        else:
            assert batch_size is not None
            batch, indices = buffer.sample(batch_size)
            batch = algorithm.preprocess(algorithm._on_device(batch), buffer, indices)
            for j in range(every):
                algorithm._stage_calls = j
                algorithm._run_stages(batch)
    return time.perf_counter() - start


def compare_with_eager(
    algorithm: Algorithm, buffer: Any, batch_size: int | None, repeats: int = 15
) -> tuple[float, float]:
    """Seconds per update of the compiled and of the eager update, measured now.

    After :func:`warmup`: the same batch goes through the compiled stages and through the
    eager ones ``repeats`` times each (alternating, the median kept), and everything is
    restored afterwards as in :func:`warmup`. ``tdrl train --compile`` uses it to say when
    compiling is slower than eager on this machine.
    """
    import statistics
    import time

    state = algorithm.__dict__.get(_STATE)
    if state is None:
        raise ValueError("algorithm: expected a compiled algorithm (compile_algorithm first)")
    compiled_losses = [stage.losses for stage in algorithm._stages]
    compiled_steps = [gs.__dict__.get("step") for gs in algorithm._grad_steps]

    def use(compiled: bool) -> None:
        for stage, fast, slow in zip(algorithm._stages, compiled_losses, state["eager_losses"]):
            stage.losses = fast if compiled else slow
        for gs, step in zip(algorithm._grad_steps, compiled_steps):
            if compiled and step is not None:
                gs.__dict__["step"] = step
            else:
                gs.__dict__.pop("step", None)

    times: dict[bool, list[float]] = {True: [], False: []}
    with (
        _restored(algorithm, buffer),
        within_training_step(algorithm.policy),
        _train_mode(algorithm, algorithm.policy),
    ):
        if algorithm.on_policy:
            indices = buffer.sample_indices(0)
            batch = algorithm.preprocess(algorithm._on_device(buffer[indices]), buffer, indices)
        else:
            assert batch_size is not None
            batch, indices = buffer.sample(batch_size)
            batch = algorithm.preprocess(algorithm._on_device(batch), buffer, indices)
        try:
            for _ in range(repeats):
                for compiled in (True, False):
                    use(compiled)
                    start = time.perf_counter()
                    if algorithm.on_policy:
                        algorithm._update_with_batch(batch, batch_size, 1)
                    else:
                        algorithm._run_stages(batch)
                    times[compiled].append(time.perf_counter() - start)
        finally:
            use(True)
    return statistics.median(times[True]), statistics.median(times[False])


def synthetic_buffer(
    observation_space: Any,
    action_space: Any,
    n_envs: int,
    steps: int,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> Any:
    """A vector buffer of random transitions drawn from the spaces (for :func:`warmup`;
    its columns on ``device``).

    Lets a run compile before its first collect (an on-policy buffer is empty then)
    without stepping the real environments: the arrays have the dtypes and shapes real
    transitions have (observations in the space's dtype, rewards float64), so the graphs
    compiled on them are the ones the first real update uses.

    >>> import gymnasium as gym
    >>> buf = synthetic_buffer(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Discrete(2), 2, 5)
    >>> len(buf), buf[0].obs.dtype, buf[0].act.dtype
    (10, torch.float32, torch.int64)
    """
    from tdrl.data.buffer import VectorReplayBuffer

    observation_space.seed(seed)
    action_space.seed(seed + 1)
    rng = np.random.default_rng(seed)
    buf = VectorReplayBuffer(n_envs * steps, n_envs, seed=seed, device=device)

    def draw(space: Any) -> np.ndarray:
        return np.stack([np.asarray(space.sample()) for _ in range(n_envs)])

    for t in range(steps):
        buf.add(
            {
                "obs": draw(observation_space),
                "act": draw(action_space),
                "rew": rng.normal(size=n_envs),
                "terminated": rng.random(n_envs) < 0.02,
                "truncated": np.full(n_envs, t == steps - 1),
                "obs_next": draw(observation_space),
            }
        )
    return buf
