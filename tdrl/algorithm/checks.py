"""Argument checks shared by the algorithms' constructors."""

from __future__ import annotations

from typing import Any

__all__ = ["require_at_least", "require_instance", "require_unit"]


def require_unit(**values: float) -> None:
    """Raise ``ValueError`` naming the first argument outside ``[0, 1]``.

    >>> require_unit(gamma=0.99, tau=1.5)
    Traceback (most recent call last):
    ...
    ValueError: tau: expected a value in [0, 1], got 1.5
    """
    for name, value in values.items():
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}: expected a value in [0, 1], got {value}")


def require_at_least(minimum: int, **values: int) -> None:
    """Raise ``ValueError`` naming the first argument below ``minimum``.

    >>> require_at_least(1, n_step=0)
    Traceback (most recent call last):
    ...
    ValueError: n_step: expected an int >= 1, got 0
    """
    for name, value in values.items():
        if value < minimum:
            raise ValueError(f"{name}: expected an int >= {minimum}, got {value}")


def require_instance(name: str, value: Any, cls: type, error: type[Exception] = TypeError) -> None:
    """Raise ``error`` naming ``name`` unless ``value`` is a ``cls``.

    >>> require_instance("policy", 1.0, int)
    Traceback (most recent call last):
    ...
    TypeError: policy: expected an int, got float
    """
    if not isinstance(value, cls):
        # "an" before a vowel sound: a vowel, or an acronym read "eff-" (FQFPolicy)
        article = "an" if cls.__name__[0] in "AEIOUaeiouF" else "a"
        raise error(f"{name}: expected {article} {cls.__name__}, got {type(value).__name__}")
