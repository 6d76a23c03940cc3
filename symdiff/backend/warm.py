"""Warm start: a cached kernel's first calls run as plain Python while Numba loads.

On a cache hit the kernel's machine code is on disk, but reaching it means importing
Numba (with SciPy, which it imports) and initialising its CPU target: 0.5-1 s, far
more than everything else between ``symdiff.grad(f)`` and the first value.  For a
straight-line kernel of floats, :class:`WarmStart` answers calls with the kernel's
exact plain-Python version (:mod:`symdiff.backend.exact`: the same values as the
machine code) and meanwhile has one background thread import Numba and load the
machine code; the first call after that switches to Numba's dispatcher for good.
A call the Python version cannot answer exactly (``1 / 0``: Numba returns ``inf``)
waits for Numba instead.  Array kernels and kernels with loops always wait: in
Python their loops would be slower than loading Numba.

The thread is a daemon that never outlives its work: it runs the queued loads and
ends.  It is waited for before a ``fork`` (every queued load) and when the
interpreter exits (the running load; the others are dropped), before ``atexit``
handlers so that Numba's own run: it never holds an import lock, Numba's compiler
lock or LLVM's lock at those moments.  A call that needs Numba before the thread
has loaded it waits for the thread, or loads it itself if the thread has not begun
(:class:`Job`).  ``SYMDIFF_WARM_START=0`` turns the warm start off (a cache hit
loads Numba before the first call).
"""

from __future__ import annotations

import _thread
import os
from collections.abc import Callable
from typing import Any

# `threading` is imported when the first thread starts: `import symdiff` does not
# need it (locks come from `_thread`).


_NUMBA_LOCK = _thread.allocate_lock()
_numba_imported = False


def import_numba() -> Any:
    """``numba``, imported by one thread at a time.

    The background thread imports Numba (and unpickles its cache index, which
    imports Numba's submodules) while the caller's thread may build a kernel that
    needs Numba too.  Two threads executing Numba's circular package imports at
    once can each hold a submodule's import lock the other waits for, and Python
    raises ``_DeadlockError`` in one of them.  Every first import of Numba's
    package that symdiff makes (the loader's, a kernel's, a loop module's, CUDA's)
    goes through here, so the second thread waits until the package has been
    imported; the submodules symdiff imports later are then imported already,
    or import no part of Numba that is not.
    """
    global _numba_imported
    if not _numba_imported:
        with _NUMBA_LOCK:
            if not _numba_imported:
                import numba

                _numba_imported = True
    import numba

    return numba


def enabled() -> bool:
    return os.environ.get("SYMDIFF_WARM_START", "1").lower() not in ("0", "false", "no")


class Job:
    """A function run once, by the background thread or by whoever needs its
    result first; a second caller waits for the first."""

    def __init__(self, fn: Callable[[], Any]):
        self._fn: Callable[[], Any] | None = fn
        self._lock = _thread.allocate_lock()
        self._value: Any = None
        self._error: BaseException | None = None
        self.done = False

    def run(self) -> None:
        with self._lock:
            if self.done:
                return
            assert self._fn is not None
            try:
                self._value = self._fn()
            except BaseException as exc:  # re-raised in the caller of result()
                self._error = exc
            finally:
                self._fn = None
                self.done = True

    def result(self) -> Any:
        self.run()
        if self._error is not None:
            raise self._error
        return self._value


class _Loader:
    """The background thread: runs queued jobs in order, then ends."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._queue: list[Job] = []
        self._thread: Any = None  # a threading.Thread while one runs
        self._closed = False
        self._hooked = False

    def submit(self, job: Job) -> None:
        import threading

        if not self._hooked:
            self._hook()
        with self._lock:
            if self._closed:
                return  # exiting: the job runs when (if) its result is needed
            self._queue.append(job)
            if self._thread is None:
                thread = threading.Thread(
                    target=self._drain, name="symdiff-warm-start", daemon=True
                )
                thread.start()  # it takes the lock before it reads the queue
                self._thread = thread  # started, so wait() can join it

    def _hook(self) -> None:
        """Wait for the thread before a fork and at exit.

        Fork handlers run last registered first.  ``logging`` (which Numba
        imports) registers handlers that take its lock before a fork: imported
        here, before the thread starts and before ours are registered, ours run
        first (the thread may need that lock to finish), and no handler is
        registered while a fork waits for the thread.
        """
        import logging  # noqa: F401
        import threading

        self._hooked = True
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(before=self.wait, after_in_child=self._forget)
        # threading's exit hooks run before atexit's, where Numba registers its
        # own while the thread imports it; the function is private, hence the
        # fallback.
        register = getattr(threading, "_register_atexit", None)
        if register is None:
            import atexit

            register = atexit.register
        try:
            register(self.close)
        except RuntimeError:  # already exiting
            self._closed = True

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._queue or self._closed:
                    self._queue.clear()
                    self._thread = None
                    return
                job = self._queue.pop(0)
            job.run()

    def wait(self) -> None:
        """Until the thread has ended (queued jobs run first)."""
        thread = self._thread
        if thread is not None and thread.ident != _thread.get_ident():
            thread.join()

    def close(self) -> None:
        """At exit: no new job starts; the running one is waited for."""
        with self._lock:
            self._closed = True
        self.wait()

    def _forget(self) -> None:
        # In a forked child: the parent waited for the thread, nothing is held.
        self._lock = _thread.allocate_lock()
        self._queue = []
        self._thread = None


LOADER = _Loader()


def _floats(args: tuple[Any, ...]) -> tuple[float, ...] | None:
    """The arguments as Python floats, or None if one is not a float (NumPy's
    float64 is one, converted exactly)."""
    if all(type(a) is float for a in args):
        return args
    if all(isinstance(a, float) for a in args):
        return tuple(float(a) for a in args)
    return None


class WarmStart:
    """The entry point of a cached straight-line kernel of floats until Numba has
    loaded its machine code: ``python`` answers, ``load`` (on the background
    thread) returns the Numba dispatcher, which answers every call from then on.

    Parameters
    ----------
    python : callable
        The kernel's exact plain-Python version, outputs of Numba's types
        (:func:`~symdiff.backend.exact.exact_python`); it raises for a call it
        cannot answer exactly.
    load : callable
        Imports Numba and returns the kernel's dispatcher, machine code loaded.
    """

    def __init__(
        self, python: Callable[..., Any], load: Callable[[], Callable[..., Any]]
    ):
        self._python = python
        self._job = Job(load)
        self._submitted = False
        self._dispatcher: Callable[..., Any] | None = None
        self._callbacks: list[Callable[[Callable[..., Any]], None]] = []
        self._lock = _thread.allocate_lock()

    def __call__(self, *args: Any) -> Any:
        dispatcher = self._dispatcher
        if dispatcher is None and not self._job.done:
            floats = _floats(args)
            if floats is not None:
                try:
                    out = self._python(*floats)
                except Exception:  # an IEEE special value: Numba answers
                    pass
                else:
                    self.start()
                    return out
        return self.dispatcher()(*args)

    def start(self) -> None:
        """Queue the load on the background thread (once)."""
        if not self._submitted:
            self._submitted = True
            LOADER.submit(self._job)

    def dispatcher(self) -> Callable[..., Any]:
        """Numba's dispatcher, loaded here if the thread has not yet (or waited
        for); the callbacks of :meth:`when_loaded` run once, in this thread."""
        dispatcher = self._job.result()
        with self._lock:
            if self._dispatcher is None:
                self._dispatcher = dispatcher
                callbacks, self._callbacks = self._callbacks, []
            else:
                callbacks = []
        for callback in callbacks:
            callback(dispatcher)
        return dispatcher  # type: ignore[no-any-return]

    @property
    def loaded(self) -> bool:
        return self._dispatcher is not None

    def when_loaded(self, callback: Callable[[Callable[..., Any]], None]) -> None:
        """Call ``callback(dispatcher)`` when a call first finds Numba ready (to
        replace this object by the dispatcher), or now if one already has."""
        with self._lock:
            dispatcher = self._dispatcher
            if dispatcher is None:
                self._callbacks.append(callback)
        if dispatcher is not None:
            callback(dispatcher)


__all__ = ["LOADER", "Job", "WarmStart", "enabled", "import_numba"]
