"""Admission of Lean processes by memory: many agents think while few builds run.

Every Lean process Fyan starts — ``lake build`` (the gate's and the Formalizer's feedback
builds), the trusted inspector, a kernel replay or comparator under ``lake env``, a shadow
compile — waits here until it fits in ``[lean] memory_budget_mb`` (MiB; default: a share,
``DEFAULT_SHARE``, of the machine's RAM) next to the processes already running. A process
costs the recorded peak resident memory (MiB) of that kind of process for that unit once one
has been seen (``record``; kept in the state store through the gateway), else
``[lean] memory_limit_mb``. A process that costs more than the whole budget runs alone. Agent
slots (``[scheduler] parallelism``) are separate: an attempt holds its slot while its build
waits for memory. Waiting is first come, first served (no overtaking: a large build is not
starved by small ones).

The largest book-scale run on record found uncapped concurrent ``lake build`` s turned
30-second builds into 10-minute timeouts (FIELD.md); this bounds their sum instead of their
number.

One ``Admission`` per process (``current``): the engine configures it with the project's
configuration, the recorded peaks and the gateway's recorder (``configure``); a process that
never configured it (a worker, ``fyan gate``) admits against the defaults and keeps what it
measures in memory. The unit a process belongs to comes from ``for_unit`` (a context variable
the executor sets around an attempt).
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: share of the machine's RAM that Lean processes may use together when
#: ``[lean] memory_budget_mb`` is not set
DEFAULT_SHARE = 0.75

_unit: contextvars.ContextVar[str | None] = contextvars.ContextVar("fyan_lean_unit", default=None)

Recorder = Callable[[str, str, int], None]


def machine_memory_mb() -> int:
    """Physical memory of this machine, MiB (``sysconf``); 8192 when it cannot be read."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20)
    except (ValueError, OSError, AttributeError):
        return 8192


def default_budget_mb() -> int:
    return max(1, int(machine_memory_mb() * DEFAULT_SHARE))


@contextmanager
def for_unit(unit: str | None) -> Iterator[None]:
    """Lean processes started inside this block (this thread/context) belong to ``unit``."""
    token = _unit.set(unit)
    try:
        yield
    finally:
        _unit.reset(token)


def current_unit() -> str | None:
    return _unit.get()


@dataclass(frozen=True)
class Ticket:
    """One admitted or waiting Lean process: its kind (``build``, ``inspector``,
    ``kernel_replay``, …), unit (None: not tied to one), cost (MiB) and since when (POSIX s)."""

    kind: str
    unit: str | None
    cost_mb: int
    since: float


class Admission:
    """The memory budget of this process's Lean processes (module docstring).

    ``budget_mb``: the budget (MiB); ``limit_mb``: the cost of a process no peak was recorded
    for (``[lean] memory_limit_mb``); ``peaks``: (unit, kind) → recorded peak RSS, MiB;
    ``recorder``: called with (unit, kind, peak MiB) after each process that had a unit (the
    gateway's ``record_lean_peak``)."""

    def __init__(self, budget_mb: int | None = None, limit_mb: int = 8192, *,
                 peaks: dict[tuple[str, str], int] | None = None, recorder: Recorder | None = None) -> None:
        self.budget_mb = budget_mb if budget_mb is not None else default_budget_mb()
        self.limit_mb = limit_mb
        self.peaks = dict(peaks or {})
        self.recorder = recorder
        self._cond = threading.Condition()
        self._running: list[Ticket] = []
        self._queue: list[Ticket] = []
        self.peak_admitted_mb = 0
        self.peak_running = 0
        #: set by ``configure`` (the defaults are in force until then)
        self.configured = False
        #: called (outside the lock) with the ticket that has to wait, before it waits: holders of
        #: memory that can give it back at once (idle warm servers, ``fyan.lakepackage.pool``)
        self._reclaimers: list[Callable[[Ticket], None]] = []

    def add_reclaimer(self, reclaim: Callable[[Ticket], None]) -> None:
        """Ask ``reclaim`` to free memory (end idle holders) whenever a process would wait."""
        with self._cond:
            if reclaim not in self._reclaimers:
                self._reclaimers.append(reclaim)

    def cost(self, kind: str, unit: str | None) -> int:
        """What a process of ``kind`` for ``unit`` is charged, MiB."""
        if unit is not None and (unit, kind) in self.peaks:
            return self.peaks[(unit, kind)]
        return self.limit_mb

    def used_mb(self) -> int:
        with self._cond:
            return sum(t.cost_mb for t in self._running)

    def running(self) -> list[Ticket]:
        with self._cond:
            return list(self._running)

    def waiting(self) -> list[Ticket]:
        """Lean processes waiting for memory now, oldest first."""
        with self._cond:
            return list(self._queue)

    def snapshot(self) -> dict:
        """JSON-ready: ``budget_mb``, ``used_mb`` and the ``running`` and ``waiting`` processes
        (``kind``, ``unit``, ``cost_mb``, ``since``) — what status shows."""
        with self._cond:
            def rows(ts: list[Ticket]) -> list[dict]:
                return [{"kind": t.kind, "unit": t.unit, "cost_mb": t.cost_mb, "since": t.since} for t in ts]

            return {"budget_mb": self.budget_mb, "used_mb": sum(t.cost_mb for t in self._running),
                    "running": rows(self._running), "waiting": rows(self._queue)}

    def _fits(self, ticket: Ticket) -> bool:
        used = sum(t.cost_mb for t in self._running)
        return not self._running or used + ticket.cost_mb <= self.budget_mb

    @contextmanager
    def admit(self, kind: str, unit: str | None = None) -> Iterator[Ticket]:
        """Wait until a ``kind`` process of ``unit`` (default: ``for_unit``'s) fits, hold its
        share while the block runs. Never raises by itself."""
        unit = unit if unit is not None else current_unit()
        ticket = Ticket(kind, unit, self.cost(kind, unit), time.time())
        reclaimed = False
        with self._cond:
            self._queue.append(ticket)
            while self._queue[0] is not ticket or not self._fits(ticket):
                if not reclaimed and self._queue[0] is ticket and self._reclaimers:
                    reclaimed = True
                    reclaimers = list(self._reclaimers)
                    self._cond.release()  # ending a holder gives its share back through this lock
                    try:
                        for reclaim in reclaimers:
                            try:
                                reclaim(ticket)
                            except Exception:  # a failing reclaimer must not fail the admission
                                pass
                    finally:
                        self._cond.acquire()
                    continue
                self._cond.wait()
            self._queue.pop(0)
            self._running.append(ticket)
            self.peak_running = max(self.peak_running, len(self._running))
            self.peak_admitted_mb = max(self.peak_admitted_mb, sum(t.cost_mb for t in self._running))
            self._cond.notify_all()  # the next in line may fit too
        try:
            yield ticket
        finally:
            with self._cond:
                self._running.remove(ticket)
                self._cond.notify_all()

    def record(self, kind: str, unit: str | None, peak_rss_mb: float | None) -> None:
        """Remember the peak resident memory (MiB) a ``kind`` process of ``unit`` reached; the
        next one is charged the largest seen (never less than 1 MiB)."""
        if unit is None or peak_rss_mb is None:
            return
        peak = max(1, int(peak_rss_mb + 0.999))
        with self._cond:
            if peak <= self.peaks.get((unit, kind), 0):
                return
            self.peaks[(unit, kind)] = peak
        if self.recorder is not None:
            try:
                self.recorder(unit, kind, peak)
            except Exception:  # a closed store must not fail the build that was measured
                pass


_current = Admission()


def current() -> Admission:
    """This process's admission (module docstring)."""
    return _current


def configure(config, *, peaks: dict[tuple[str, str], int] | None = None,
              recorder: Recorder | None = None) -> Admission:
    """Make this process's admission follow ``config`` (a ``LeanSection``: ``memory_budget_mb``,
    ``memory_limit_mb``), charging ``peaks`` and recording new ones with ``recorder``; returns
    it. Processes already admitted keep their share; waiting ones are checked again."""
    adm = _current
    budget = getattr(config, "memory_budget_mb", None)
    with adm._cond:
        adm.budget_mb = budget if budget is not None else default_budget_mb()
        adm.limit_mb = config.memory_limit_mb
        adm.peaks = dict(peaks or {})
        adm.recorder = recorder
        adm.peak_admitted_mb = adm.peak_running = 0
        adm.configured = True
        adm._cond.notify_all()
    return adm


def configure_once(config) -> Admission:
    """``configure`` with ``config`` unless this process's admission was configured already
    (by the engine, with its recorder): what a worker process does with its task's
    configuration."""
    if not _current.configured:
        configure(config)
    return _current


def peak_admitted_mb() -> int:
    """The most memory (MiB) admitted at once in this process's current admission."""
    return _current.peak_admitted_mb
