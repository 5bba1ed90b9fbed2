"""One lock per process around the Python-bound bookkeeping of attempts.

``BOOKKEEPING`` is held, one thread at a time, while an attempt is opened through the gateway
(``Engine._begin_and_attempt``), while the head builds its inputs (``Executor.attempt``), while
the node puts the unit's own files and rows in place (``Mirror.put_task``, after the upstream
interfaces) and collects the attempt's files (``fyan.executor.worker``), and while the head takes
the result in up to the stage's check (``Executor.collect``).

Why: that work holds the GIL almost all the time but makes ~200 short system calls per
transition (SQLite statements, ``stat``, ``open``), and at each CPython may hand the GIL to
another thread. With four attempts doing it at once, ``scripts/bench_overhead.py`` spent more of
its time handing the GIL over (~1,200 futex calls per transition, most of the system time) than
working. Serialized, each thread runs its bookkeeping through. What runs in parallel stays
outside: agents, model calls, Lean builds, the stage checks, waiting for memory.

Rule (so it cannot deadlock): never wait for another thread while holding it — no file lock
(``Mirror.unit_lock``: the upstream interfaces are put in place before it is taken), no memory
admission, no queue, no model call. It is re-entrant, so a nested use by mistake does not block
the thread itself.
"""

from __future__ import annotations

import threading

BOOKKEEPING = threading.RLock()
