"""Fault injection for crash tests and the resume benchmark.

``fault_point(name)`` kills the process on the spot (``os._exit``, no cleanup, like SIGKILL)
when the environment variable ``FYAN_FAULT_AT`` equals ``name``, or ``name@N`` to die at the
N-th time the point is reached. ``FYAN_TEST_HOLD_AT=name`` instead stops the process there: it
prints ``fyan: test hold at <name> (pid N)`` on stderr and sleeps (up to 10 minutes), for a test
to kill it at that moment with a real signal (``kill -9`` mid-ingest: tests/test_stop_paths.py).
The points are placed at the crash-critical moments
(``finish:after_copy``, ``finish:after_commit``, ``attempt:before_finish``, ...). With the
variable unset this is a dictionary lookup and nothing else.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

FAULT_EXIT_CODE = 86
_hits: dict[str, int] = {}
_lock = threading.Lock()


def fault_point(name: str) -> None:
    if os.environ.get("FYAN_TEST_HOLD_AT") == name:
        _hold(name)
    spec = os.environ.get("FYAN_FAULT_AT")
    if not spec:
        return
    point, _, nth = spec.partition("@")
    if point != name:
        return
    with _lock:
        _hits[name] = _hits.get(name, 0) + 1
        if _hits[name] >= int(nth or 1):
            os._exit(FAULT_EXIT_CODE)


def _hold(name: str) -> None:
    """``FYAN_TEST_HOLD_AT``: say so, wait for SIGINT or SIGTERM (SIGKILL ends it anyway), then
    let the handler that was in place take the signal, as if it had arrived just now. The
    signals are caught from before the line is printed, so one sent as soon as the line is read
    is never lost."""
    if threading.current_thread() is not threading.main_thread():
        print(f"fyan: test hold at {name} (pid {os.getpid()})", file=sys.stderr, flush=True)
        time.sleep(600)
        return
    got: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: got.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"fyan: test hold at {name} (pid {os.getpid()})", file=sys.stderr, flush=True)
        deadline = time.monotonic() + 600
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if got:
        handler = previous[signal.Signals(got[0])]
        if callable(handler):
            handler(got[0], None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(got[0])
