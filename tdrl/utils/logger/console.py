"""A logger that prints one compact line per write."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tdrl.utils.logger.base import SCOPE_STEP, BaseLogger

__all__ = ["ConsoleLogger"]


class ConsoleLogger(BaseLogger):
    """Print ``[scope] step_name=step key=value ...`` lines.

    :param print_fn: where lines go (default ``print``).
    :param keys: if given, only keys containing one of these substrings are printed.
    :param digits: significant digits of the values.
    :param kwargs: the intervals of :class:`~tdrl.utils.logger.base.BaseLogger`.

    >>> logger = ConsoleLogger(train_interval=1)
    >>> logger.log_test_data({"returns_stat": {"mean": 195.25, "std": 3.5}}, step=1000)
    [test] env_step=1000 returns_stat/mean=195.2 returns_stat/std=3.5
    """

    def __init__(
        self,
        print_fn: Callable[[str], object] = print,
        keys: Sequence[str] | None = None,
        digits: int = 4,
        **kwargs: int | None,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.print_fn = print_fn
        self.keys = tuple(keys) if keys is not None else None
        self.digits = digits

    def write(self, scope: str, step: int, data: dict[str, float]) -> None:
        """Print one line for this write."""
        parts = [f"[{scope}] {SCOPE_STEP.get(scope, 'step')}={step}"]
        for key, value in data.items():
            if self.keys is not None and not any(k in key for k in self.keys):
                continue
            short = key[len(scope) + 1 :] if key.startswith(scope + "/") else key
            parts.append(f"{short}={value:.{self.digits}g}")
        self.print_fn(" ".join(parts))
