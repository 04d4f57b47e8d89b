"""The Algorithm base: a TorchRL loss module that owns its optimizers.

An :class:`Algorithm` is a TorchRL :class:`~torchrl.objectives.LossModule`:
``algorithm(batch)`` returns a TensorDict of ``loss_*`` entries, and
``algorithm.update(buffer, batch_size, repeat)`` runs sample -> :meth:`~Algorithm.preprocess`
-> optimizer step(s) -> :meth:`~Algorithm.postprocess` and returns a dict of floats.
Optimizers (with gradient clipping and learning-rate schedulers) are created from
:class:`~tdrl.algorithm.optim.OptimizerFactory` objects and are part of ``state_dict()``.
The key layout (Tianshou's or TorchRL's) and TorchRL's value estimators come from
:class:`~tdrl.algorithm.loss_keys.LossKeys`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any, ClassVar

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn
from torchrl.objectives import LossModule

from tdrl.algorithm.checks import require_at_least
from tdrl.algorithm.compile import _STATE as _COMPILE_STATE
from tdrl.algorithm.compile import compile_algorithm
from tdrl.algorithm.loss_keys import LossKeys
from tdrl.algorithm.optim import GradStep, OptimizerFactory, Stage
from tdrl.algorithm.policy import Policy, _train_mode, within_training_step
from tdrl.algorithm.returns import compute_episodic_return, compute_nstep_return
from tdrl.algorithm.target import FastHardUpdate, FastSoftUpdate, make_target_module
from tdrl.algorithm.update_stats import UpdateStats
from tdrl.data.batch import Batch

__all__ = ["Algorithm", "read_obs_next", "to_device"]


def _accept_aliases(init: Callable[..., None], renames: dict[str, str]) -> Callable[..., None]:
    """``init`` taking ``alias=value`` keyword arguments as ``name=value`` too."""

    @functools.wraps(init)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> None:
        for alias, name in renames.items():
            if alias in kwargs:
                if name in kwargs:
                    raise TypeError(
                        f"{type(self).__name__}: got both {name}= and its Tianshou 2.0 name "
                        f"{alias}=; pass one"
                    )
                kwargs[name] = kwargs.pop(alias)
        init(self, *args, **kwargs)

    return wrapped


def to_device(x: Any, device: torch.device) -> Any:
    """``x`` (a tensor, a :class:`~tdrl.data.batch.Batch` or a TensorDict) on ``device``.

    Leaves already there are used as is (a replay buffer on the device gives such a
    batch; its ``device`` attribute is ``None``, so the leaves are what is looked at). A
    CPU batch bound for a CUDA device goes through pinned memory with
    ``non_blocking=True``: the copy is queued behind the running kernels instead of making
    the host wait.

    >>> b = Batch(obs=torch.zeros(2, 3), rew=torch.zeros(2))
    >>> b.device is None, to_device(b, torch.device("cpu")) is b
    (True, True)
    >>> to_device(b, torch.device("meta"))["obs"].device
    device(type='meta')
    """
    leaves = (
        [x]
        if isinstance(x, torch.Tensor)
        else [t for t in x.values(True, True) if isinstance(t, torch.Tensor)]
    )
    if all(t.device == device for t in leaves):
        return x
    if device.type == "cuda" and all(t.device.type == "cpu" for t in leaves):
        return x.pin_memory().to(device, non_blocking=True)
    return x.to(device)


def read_obs_next(buffer: Any, indices: np.ndarray) -> Any:
    """``buffer[indices]["obs_next"]``, reading that one column where the buffer's rows are
    plain columns (a tdrl buffer whose gather is one ``take`` per column: no frame stacks,
    no ``obs_next`` read through ``next()``): a tenth of the time of gathering every column.

    >>> from tdrl.data.buffer import ReplayBuffer
    >>> buf = ReplayBuffer(4)
    >>> for i in range(3):
    ...     _ = buf.add(Batch(obs=np.full(2, i), act=0, rew=1.0, terminated=False,
    ...                       truncated=False, obs_next=np.full(2, i + 1)))
    >>> read_obs_next(buf, np.array([2, 0]))[:, 0].tolist()
    [3, 1]
    """
    plain = getattr(buffer, "_fast_plan_for_gather", None)
    if plain is not None and plain() is not None:
        try:
            return buffer.get(indices, "obs_next")
        except KeyError:  # no such column (e.g. an empty group): the general path says
            pass
    return buffer[indices]["obs_next"]


class Algorithm(LossKeys, LossModule):
    """Base class of all algorithms: a TorchRL ``LossModule`` that owns its optimizers.

    The loss math lives in the *stages* (:class:`Stage`) that a subclass registers with
    :meth:`_add_stage`; each stage's ``losses(td)`` returns ``loss_*`` terms.
    :meth:`forward` returns every stage's terms at the current parameters (TorchRL style:
    their sum is the objective and each term reaches only the parameters it trains), and
    :meth:`update` runs sample -> :meth:`preprocess` -> each stage with its optimizer
    step(s) -> target update -> :meth:`postprocess`. ``on_policy`` selects how
    :meth:`update` draws data from the buffer.

    Keys default to Tianshou's (``obs``, ``act``, ``rew``, ``terminated``, ``obs_next``);
    :meth:`set_keys` points the loss and its policy at TorchRL's layout
    (``observation``, ``action`` and reward/done/terminated under ``"next"``).

    :param policy: the acting policy.
    """

    on_policy: bool = False
    policy: Policy

    PARAMETER_ALIASES: ClassVar[dict[str, str]] = {"n_step_return_horizon": "n_step"}
    """Tianshou 2.0's constructor argument names that tdrl spells differently: every
    subclass's ``__init__`` accepts the 2.0 name for its own parameter."""

    compute_episodic_return = staticmethod(compute_episodic_return)
    """:func:`tdrl.algorithm.returns.compute_episodic_return` (Tianshou's static method)."""
    compute_nstep_return = staticmethod(compute_nstep_return)
    """:func:`tdrl.algorithm.returns.compute_nstep_return` (Tianshou's static method)."""

    def __class_getitem__(cls, item: Any) -> Any:
        """``SAC[SACTrainingStats]``: Tianshou 2.0 annotates an algorithm with the type of its
        training stats; tdrl's stats are one mapping type, so the subscript is the class.

        >>> from tdrl.algorithm import DQN
        >>> DQN[dict] is DQN
        True
        """
        return cls

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        params = inspect.signature(init).parameters
        renames = {
            alias: name
            for alias, name in cls.PARAMETER_ALIASES.items()
            if name in params and alias not in params
        }
        if renames:
            cls.__init__ = _accept_aliases(init, renames)  # type: ignore[method-assign]

    def __init__(self, policy: Policy) -> None:
        super().__init__()
        self.policy = policy
        self.lr_schedulers: list[Any] = []
        self._grad_steps: list[GradStep] = []
        self._updaters: list[Any] = []
        self._updaters_first: list[Any] = []  # stepped before the stages (DQN's hard sync)
        self._stages: list[Stage] = []
        self._targets: dict[str, nn.Module] = {}
        self._in_update = False  # inside update(): optimizers isolate their own params
        self._stage_calls = 0  # passes of the stages so far (schedules delayed stages)
        self._targets_due = True
        self.n_updates = 0

    # -- loss composition ---------------------------------------------------------------
    def _add_stage(
        self,
        losses: Callable[[TensorDictBase], dict[str, torch.Tensor]],
        *steps: tuple[str | tuple[str, ...], GradStep],
        every: int = 1,
        phase: int = 0,
        gates_targets: bool = False,
    ) -> Stage:
        """Register a loss stage and the optimizer step(s) it drives (see :class:`Stage`);
        ``every``/``phase``/``gates_targets`` delay it (and the target updates)."""
        require_at_least(1, every=every)
        if not 0 <= phase < every:
            raise ValueError(f"phase: expected an int in [0, {every}), got {phase}")
        norm = [((k,) if isinstance(k, str) else tuple(k), gs) for k, gs in steps]
        stage = Stage(losses, norm, every, phase, gates_targets)
        self._stages.append(stage)
        return stage

    def _target_q(self, buffer: Any, indices: np.ndarray) -> torch.Tensor:
        """:meth:`next_value` of ``buffer[indices].obs_next`` (for n-step returns)."""
        with torch.no_grad():
            return self.next_value(self._obs_next(buffer, indices))

    def prepare(self, td: TensorDictBase) -> TensorDictBase:
        """Add what the loss needs but a plain TorchRL sample lacks (targets, ...).

        tdrl's own path fills these in :meth:`preprocess` from the buffer (n-step returns,
        GAE); a TorchRL batch gets one-step targets here. Default: nothing.
        """
        return td

    def forward(self, td: TensorDictBase) -> TensorDict:
        """All ``loss_*`` terms (and statistics) at the current parameters.

        The sum of the ``loss_*`` entries is the objective; each term reaches only the
        parameters it trains, so ``torch.optim.Adam(loss.parameters())`` trains it.

        A batch of trajectories ``[N, T]`` (a TorchRL collector over a ``SerialEnv`` or
        ``ParallelEnv``) is flattened to ``[N * T]`` transitions, in every family; its
        ``td_error`` and priority entries come back in the batch's own shape. An
        on-policy algorithm's :meth:`prepare` sees the trajectories first (returns and
        advantages run along time, written into the batch), off-policy ones the
        transitions.
        """
        flat = td.reshape(-1) if td.batch_dims > 1 and not self.on_policy else td
        prepared = self.prepare(flat)
        if prepared.batch_dims > 1:
            prepared = prepared.reshape(-1)
        out: dict[str, torch.Tensor] = {}
        for stage in self._stages:
            out.update(stage.losses(prepared))
        self._write_priority(prepared)
        if flat is not td:
            for key in dict.fromkeys(("td_error", self.tensor_keys.priority)):
                value = prepared.get(key, None)
                if value is not None:
                    td.set(key, value.reshape(*td.batch_size, *value.shape[1:]))
        return TensorDict(out, [])

    def _write_priority(self, td: TensorDictBase) -> None:
        """Copy ``td_error`` to the priority key (for TorchRL's prioritized buffers)."""
        key = self.tensor_keys.priority
        if key != "td_error" and "td_error" in td:
            td.set(key, td.get("td_error").abs())

    def _run_stages(self, td: TensorDictBase) -> list[tuple[str, torch.Tensor]]:
        """One gradient step per optimizer over the stages due at this call; returns the
        detached terms (a delayed stage's last ones when it is not due)."""
        j = self._stage_calls
        self._stage_calls += 1
        self._targets_due = True
        logged: list[tuple[str, torch.Tensor]] = []
        for stage in self._stages:
            if stage.every > 1 and j % stage.every != stage.phase:
                logged.extend(stage.last)
                self._targets_due = self._targets_due and not stage.gates_targets
                continue
            terms = stage.losses(td)
            # a compiled stage's terms come out of one graph: every backward through it
            # but the last keeps it (eager terms have graphs of their own)
            shared = len(stage.steps) - 1 if _COMPILE_STATE in self.__dict__ else 0
            for i, (keys, gs) in enumerate(stage.steps):
                total = terms[keys[0]]
                for k in keys[1:]:
                    total = total + terms[k]
                gs.step(total, retain_graph=i < shared)
            stage.last = [(k, v.detach()) for k, v in terms.items()]
            logged.extend(stage.last)
        return logged

    def compile(  # type: ignore[override]
        self,
        mode: str | None = None,
        backend: str | Callable[..., Any] = "inductor",
        *,
        fullgraph: bool = False,
        dynamic: bool | None = None,
        compile_optimizer: bool | None = None,
    ) -> Algorithm:
        """Run the update (loss stages + optimizer steps) through ``torch.compile``.

        See :mod:`tdrl.algorithm.compile` (and its ``warmup`` to compile before training,
        ``uncompile`` to revert). Returns ``self``.
        """
        return compile_algorithm(
            self,
            mode,
            backend,
            fullgraph=fullgraph,
            dynamic=dynamic,
            compile_optimizer=compile_optimizer,
        )

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> MutableMapping[str, float]:
        """One pass of the stages on ``batch`` between the target updates."""
        for upd in self._updaters_first:
            upd.step()
        logged = self._run_stages(batch)
        if self._targets_due:
            for upd in self._updaters:
                if upd not in self._updaters_first:
                    upd.step()
        return UpdateStats(logged)

    # -- optimizers ---------------------------------------------------------------------
    def _create_optimizer(
        self,
        params: nn.Module | Iterable[torch.Tensor],
        optim: OptimizerFactory | float,
        max_grad_norm: float | None = None,
    ) -> GradStep:
        """Create a :class:`GradStep` (registered for ``state_dict``) for ``params``."""
        plist = list(params.parameters() if isinstance(params, nn.Module) else params)
        opt, sched = OptimizerFactory.coerce(optim).create(plist)
        if sched is not None:
            self.lr_schedulers.append(sched)
        gs = GradStep(opt, plist, max_grad_norm)
        self._grad_steps.append(gs)
        return gs

    # -- target networks ----------------------------------------------------------------
    def sync_target(self) -> None:
        """Hard-copy every online network's weights into its target network.

        >>> from gymnasium.spaces import Discrete
        >>> from tdrl.algorithm.modelfree.dqn import DQN, DQNPolicy
        >>> p = DQNPolicy(model=torch.nn.Linear(2, 2), action_space=Discrete(2))
        >>> alg = DQN(policy=p, target_update_freq=10)
        >>> with torch.no_grad():
        ...     _ = p.model.weight.add_(1.0)
        >>> alg.sync_target()
        >>> bool((alg.model_old.weight == p.model.weight).all())
        True
        """
        with torch.no_grad():
            for name in self._targets:
                src = getattr(self, f"{name}_params")
                self._modules[f"target_{name}_params"].update_(src.detach())  # type: ignore[union-attr]

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``.to()``/``.double()``/...: then re-point target modules and updaters at the
        moved target tensors (casting replaces them)."""
        out = super()._apply(fn, *args, **kwargs)
        self.__dict__.pop("_first_param", None)
        for name, module in self.__dict__.get("_targets", {}).items():
            self._modules[f"target_{name}_params"].to_module(module)  # type: ignore[union-attr]
        for upd in self.__dict__.get("_updaters", []):
            refresh = getattr(upd, "refresh", None)
            if refresh is not None:
                refresh()
        return out

    def _add_target(self, module: nn.Module, name: str) -> nn.Module:
        """Register ``module`` under ``name`` with target parameters; return the target net.

        Uses TorchRL's ``convert_to_functional(create_target_params=True)``: the target
        parameters live in ``self.target_<name>_params`` (checkpointed buffers) and the
        returned module computes with them (it shares their storage). Keep the returned
        module out of the submodules (``self.__dict__[...] = target``) so it stays in eval
        mode and its tensors are not saved twice. Move the networks to their device
        before building the algorithm: ``.to()`` afterwards breaks the sharing.
        """
        with warnings.catch_warnings():  # TorchRL wants each name annotated on the class
            warnings.filterwarnings("ignore", message=".*wasn't part of the annotations")
            self.convert_to_functional(module, name, create_target_params=True)
        # not getattr: LossModule.__getattr__ warns (TARGET_NET_WARNING) on any read of
        # target_<name>_params before a target updater is registered
        target = make_target_module(module, self._modules[f"target_{name}_params"])
        self._targets[name] = target
        return target

    def _soft_updater(self, tau: float) -> FastSoftUpdate:
        upd = FastSoftUpdate(self, tau=tau)
        self._updaters.append(upd)
        return upd

    def _hard_updater(self, every: int, first: bool = True) -> FastHardUpdate:
        """A hard updater copying every ``every`` gradient steps, stepped before the
        stages (``first``) or after them."""
        upd = FastHardUpdate(self, value_network_update_interval=every - 1)
        self._updaters.append(upd)
        if first:
            self._updaters_first.append(upd)
        return upd

    # -- data flow ----------------------------------------------------------------------
    def _nstep_returns(
        self, batch: Batch, buffer: Any, indices: np.ndarray, gamma: float, n_step: int
    ) -> Batch:
        """:func:`compute_nstep_return` with ``self._target_q``; see :meth:`_obs_next`."""
        self.__dict__["_cur"] = (batch, np.asarray(indices))
        try:
            return compute_nstep_return(
                batch, buffer, indices, self._target_q, gamma=gamma, n_step=n_step
            )
        finally:
            self.__dict__["_cur"] = None

    def _obs_next(self, buffer: Any, indices: np.ndarray) -> Any:
        """``buffer[indices]["obs_next"]``, reusing the batch being preprocessed when the
        indices are its own (always with 1-step returns): saves a second buffer gather."""
        cur = self.__dict__.get("_cur")
        if cur is not None and np.array_equal(cur[1], indices):
            return cur[0]["obs_next"]
        return self._on_device(read_obs_next(buffer, indices))

    def preprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> Batch:
        """Add algorithm-specific keys (returns, advantages...) to a sampled batch."""
        return batch

    def postprocess(self, batch: Batch, buffer: Any, indices: np.ndarray) -> None:
        """Write ``|td_error|`` back as priorities when the buffer has ``update_weight``."""
        if hasattr(buffer, "update_weight") and "td_error" in batch:
            buffer.update_weight(indices, batch["td_error"].detach().abs())

    def update(
        self, buffer: Any, batch_size: int | None, repeat: int = 1
    ) -> MutableMapping[str, float]:
        """Run one update: sample, preprocess, gradient step(s), postprocess.

        Off-policy: ``repeat`` times (sample ``batch_size``, preprocess, one gradient step,
        postprocess); the last step's stats are returned. On-policy: the whole buffer in
        ``sample_indices(0)`` order, preprocess, then ``repeat`` epochs of minibatches of
        ``batch_size`` (``None``: full batch). LR schedulers step once per call.

        ``buffer=None`` does nothing (``{}``, as in Tianshou); an empty buffer, a
        ``batch_size`` that is not positive (off-policy) or negative (on-policy: ``None``
        and ``0`` mean the whole buffer as one batch) or ``repeat < 1`` raise a
        ``ValueError``. A ``batch_size`` beyond ``len(buffer)`` draws that many samples
        with replacement (off-policy) or makes one minibatch of the whole buffer
        (on-policy), as in Tianshou.

        The stats come back as :class:`~tdrl.algorithm.update_stats.UpdateStats`: a
        ``dict``-like mapping of floats whose values are read from the device only when
        first looked at, so an update never makes the host wait for the device.
        """
        if buffer is None:
            return {}
        _check_update_args(self.on_policy, buffer, batch_size, repeat)
        stats: MutableMapping[str, float] = UpdateStats()
        self._in_update = True
        with (
            within_training_step(self.policy),
            _train_mode(self, self.policy),
            _reset_flag(self, "_in_update"),
        ):
            if self.on_policy:
                indices = buffer.sample_indices(0)
                batch = self.preprocess(self._on_device(buffer[indices]), buffer, indices)
                stats = self._update_with_batch(batch, batch_size, repeat)
                self.postprocess(batch, buffer, indices)
            else:
                assert batch_size is not None  # _check_update_args
                for _ in range(repeat):
                    batch, indices = buffer.sample(batch_size)
                    batch = self._on_device(batch)
                    batch = self.preprocess(batch, buffer, indices)
                    stats = self._update_with_batch(batch, batch_size, 1)
                    self.postprocess(batch, buffer, indices)
        for sched in self.lr_schedulers:
            sched.step()
        self.n_updates += 1
        return stats

    def run_training(self, params: Any) -> Any:
        """Train with the trainer ``params`` describe (Tianshou 2.0's ``run_training``).

        ``params`` is an ``OnPolicyTrainerParams``, ``OffPolicyTrainerParams`` or
        ``OfflineTrainerParams`` (:mod:`tdrl.trainer.params`); returns the trainer's
        :class:`~tdrl.trainer.TrainResult`.
        """
        create = getattr(params, "create_trainer", None)
        if create is None:
            raise TypeError(
                "params: expected OnPolicyTrainerParams, OffPolicyTrainerParams or "
                f"OfflineTrainerParams (tdrl.trainer), got {type(params).__name__}"
            )
        return create(self).run()

    def _on_device(self, batch: Any) -> Any:
        """Move a sampled batch (or one tensor of it) to the device of the algorithm's
        parameters (:func:`to_device`); on a CPU algorithm it is used as is."""
        param = self.__dict__.get("_first_param")
        if param is None:
            # cached: ``LossModule.parameters()`` walks every submodule (and this runs a
            # few times per update); ``_apply`` (``.to()``, casts) drops the cache
            param = next(self.parameters(), None)
            if param is None:
                return batch
            self.__dict__["_first_param"] = param
        if param.device.type == "cpu":
            return batch
        return to_device(batch, param.device)

    # -- checkpointing ------------------------------------------------------------------
    def state_dict(
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> Any:  # type: ignore[override]
        """Module state plus optimizer, scheduler and target-updater states."""
        d = super().state_dict(*args, destination=destination, prefix=prefix, keep_vars=keep_vars)
        d[prefix + "_optimizers"] = [g.optim.state_dict() for g in self._grad_steps]
        d[prefix + "_lr_schedulers"] = [s.state_dict() for s in self.lr_schedulers]
        d[prefix + "_updaters"] = [u.state_dict() for u in self._updaters]
        d[prefix + "_counters"] = self._counters()
        return d

    def load_state_dict(  # type: ignore[override]
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        """Inverse of :meth:`state_dict`."""
        sd = dict(state_dict)
        for g, s in zip(self._grad_steps, sd.pop("_optimizers", []), strict=True):
            g.optim.load_state_dict(s)
        for sc, s in zip(self.lr_schedulers, sd.pop("_lr_schedulers", []), strict=True):
            sc.load_state_dict(s)
        for u, s in zip(self._updaters, sd.pop("_updaters", []), strict=True):
            u.load_state_dict(s)
        self._load_counters(sd.pop("_counters", {}))
        return super().load_state_dict(sd, strict=strict, assign=assign)

    def _counters(self) -> dict[str, Any]:
        return {
            "n_updates": self.n_updates,
            "stage_calls": self._stage_calls,
            "stage_last": [[(k, v.clone()) for k, v in st.last] for st in self._stages],
        }

    def _load_counters(self, c: Mapping[str, Any]) -> None:
        self.n_updates = int(c.get("n_updates", 0))
        self._stage_calls = int(c.get("stage_calls", 0))
        for st, last in zip(self._stages, c.get("stage_last", [])):
            st.last = [(k, v) for k, v in last]


def _check_update_args(on_policy: bool, buffer: Any, batch_size: Any, repeat: Any) -> None:
    """Raise a ``ValueError`` naming the argument of :meth:`Algorithm.update` that is bad."""
    if len(buffer) == 0:
        raise ValueError(
            "buffer: expected a buffer holding transitions, got an empty one (len 0); "
            "collect data before updating"
        )
    is_int = isinstance(batch_size, (int, np.integer)) and not isinstance(batch_size, bool)
    if on_policy:
        if batch_size is not None and (not is_int or batch_size < 0):
            raise ValueError(
                "batch_size: expected a minibatch size > 0, or None or 0 for the whole buffer "
                f"as one batch (on-policy update), got {batch_size!r}"
            )
    elif not is_int or batch_size <= 0:
        raise ValueError(
            f"batch_size: expected an int > 0 for an off-policy update, got {batch_size!r}"
        )
    if not isinstance(repeat, (int, np.integer)) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat: expected an int >= 1, got {repeat!r}")


@contextlib.contextmanager
def _reset_flag(obj: Any, name: str) -> Iterator[None]:
    """Set ``obj.name = False`` when the block ends."""
    try:
        yield
    finally:
        setattr(obj, name, False)
