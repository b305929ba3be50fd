"""A setting of the check under way, visible to the readers it calls (a ContextVar set around one file's reading)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextvars import ContextVar

T = TypeVar("T")


@contextmanager
def scoped(var: ContextVar[T], value: T) -> Iterator[None]:
    """`var` is `value` inside the block and what it was before after it."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)
