"""Async ops as futures: a started op calls back cb(ok, value) from the
store's dispatch thread (strata._strata: Store.dispatch()); here that
callback settles a concurrent.futures.Future, or an asyncio future through
loop.call_soon_threadsafe()."""
from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Callable, TypeVar

T = TypeVar("T")

Starter = Callable[[Callable[[bool, Any], None]], None]

__all__ = ["StrataFuture", "submit", "run_async"]


class StrataFuture(concurrent.futures.Future):  # type: ignore[type-arg]
    """A concurrent.futures.Future over one Clovis op: ``result()``,
    ``exception()``, ``add_done_callback()``, ``concurrent.futures.wait()``
    and ``asyncio.wrap_future()`` work as for any Future.  A launched op
    cannot be taken back (clovis.h), so ``cancel()`` returns False."""


def _identity(value: Any) -> Any:
    return value


def submit(start: Starter, convert: Callable[[Any], T] = _identity
           ) -> "StrataFuture":
    """Start an op with start(cb) and return its future; convert maps the
    op's raw value to the result (its exceptions become the future's)."""
    fut = StrataFuture()
    fut.set_running_or_notify_cancel()

    def done(ok: bool, value: Any) -> None:
        if not ok:
            fut.set_exception(value)
            return
        try:
            result = convert(value)
        except BaseException as e:  # the future carries it
            fut.set_exception(e)
            return
        fut.set_result(result)

    start(done)
    return fut


def _settle(fut: "asyncio.Future[Any]", ok: bool, value: Any,
            convert: Callable[[Any], Any]) -> None:
    if fut.cancelled():
        return
    if not ok:
        fut.set_exception(value)
        return
    try:
        fut.set_result(convert(value))
    except BaseException as e:
        fut.set_exception(e)


async def run_async(start: Starter, convert: Callable[[Any], T] = _identity
                    ) -> T:
    """Start an op with start(cb) and await it in the running loop: the
    dispatch thread hands the outcome over with call_soon_threadsafe().
    Cancelling the awaiting task does not stop the op (it runs to its end;
    its buffers are held until then)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def done(ok: bool, value: Any) -> None:
        loop.call_soon_threadsafe(_settle, fut, ok, value, convert)

    start(done)
    return await fut
