"""One circuit breaker per model provider, shared by every unit ("outages are waited
out, not counted").

A provider is *unavailable* when it does not answer as a working model: the connection is
refused or reset, the request times out, or it answers 429, 5xx or "overloaded" — after the
call's own quick retries (``fyan.agents.providers.sdk``). Then its breaker **opens**:

* while open, every call to that provider fails at once with ``ProviderUnavailable`` (no
  request is sent), so a hundred units do not hammer a provider that is down;
* at ``next_try`` the next call goes out as the **probe** (one at a time; the others still fail
  at once). Any answer from a working model — a reply, but also a 400 or 401, which are the
  caller's problem, not an outage — **closes** the breaker; another outage re-opens it with the
  next wait.

Waits grow exponentially from ``[agents] outage_wait_initial`` to ``[agents]
outage_wait_max`` seconds (tenacity's ``wait_exponential``, fed the count of consecutive
outages). Times are POSIX seconds (``time.time``), so they can be shown ("since 14:02") and
recorded.

The engine (``fyan.orchestrator.engine``) records an attempt that met an outage as interrupted
by the provider — no attempt budget, no critic — holds back work for that provider until the
breaker is due, and reports every change (``Breakers.subscribe``) as a ``provider_unavailable``
or ``provider_available`` event through the gateway, which ``fyan status`` and the dashboard
read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

from tenacity import wait_exponential

from fyan.errors import ProviderUnavailable

DEFAULT_WAIT_INITIAL_S = 10.0
DEFAULT_WAIT_MAX_S = 300.0


@dataclass(frozen=True)
class Outage:
    """An open breaker: ``provider`` unavailable since ``since``, next call allowed at
    ``next_try`` (POSIX seconds), after ``failures`` consecutive outages; ``error`` is the
    last one (exception type and message, no request content)."""

    provider: str
    since: float
    next_try: float
    failures: int
    error: str

    def describe(self, now: float | None = None) -> str:
        """``anthropic unavailable since 14:02, next try in 40 s`` (local time)."""
        now = time.time() if now is None else now
        since = time.strftime("%H:%M" if now - self.since < 86_400 else "%Y-%m-%d %H:%M", time.localtime(self.since))
        wait = self.next_try - now
        nxt = f"next try in {wait:.0f} s" if wait >= 1 else "trying again now"
        return f"{self.provider} unavailable since {since}, {nxt}"

    def as_dict(self) -> dict:
        return {"provider": self.provider, "since": self.since, "next_try": self.next_try,
                "failures": self.failures, "error": self.error}


class CircuitBreaker:
    """The breaker of one provider (module docstring). Thread-safe."""

    def __init__(self, name: str, *, wait_initial: float = DEFAULT_WAIT_INITIAL_S,
                 wait_max: float = DEFAULT_WAIT_MAX_S, clock: Callable[[], float] = time.time,
                 on_change: Callable[[str, Outage | None], None] | None = None) -> None:
        self.name = name
        self._wait = wait_exponential(multiplier=wait_initial, max=wait_max)
        self._clock = clock
        self._on_change = on_change
        self._lock = threading.Lock()
        self._outage: Outage | None = None
        self._probing = False

    def wait_for(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive outages (1, 2, 4, ... x initial, capped)."""
        # tenacity's wait strategies read only ``attempt_number`` of the retry state
        return float(self._wait(SimpleNamespace(attempt_number=failures)))  # type: ignore[arg-type]

    # -- the caller's side -----------------------------------------------------------------
    def admit(self) -> bool:
        """Let a call go out, or raise ``ProviderUnavailable`` while the breaker is open and
        not due (or another call is the probe). Returns True when this call is the probe (the
        caller then must report its outcome: ``succeeded``, ``failed`` or ``release``)."""
        with self._lock:
            o = self._outage
            if o is None:
                return False
            if self._probing or self._clock() < o.next_try:
                raise ProviderUnavailable(self.name, o.error, since=o.since, retry_at=o.next_try)
            self._probing = True
            return True

    def succeeded(self) -> None:
        """The provider answered as a working model: close."""
        with self._lock:
            was = self._outage
            self._outage = None
            self._probing = False
        if was is not None and self._on_change is not None:
            self._on_change(self.name, None)

    def failed(self, error: str) -> ProviderUnavailable:
        """The provider was unavailable (``error``: what happened): open, or stay open with
        the next wait. Returns the exception the caller raises."""
        with self._lock:
            now = self._clock()
            o = self._outage
            failures = 1 if o is None else o.failures + 1
            outage = Outage(self.name, now if o is None else o.since, now + self.wait_for(failures), failures, error)
            self._outage = outage
            self._probing = False
        if self._on_change is not None:
            self._on_change(self.name, outage)
        return ProviderUnavailable(self.name, error, since=outage.since, retry_at=outage.next_try)

    def release(self) -> None:
        """A probe ended without saying anything about the provider (a bug, a local error)."""
        with self._lock:
            self._probing = False

    # -- the scheduler's side --------------------------------------------------------------
    def outage(self) -> Outage | None:
        return self._outage

    def wait_s(self) -> float:
        """Seconds until a call would go out (0: now; a probe in flight counts as not due)."""
        with self._lock:
            o = self._outage
            if o is None:
                return 0.0
            if self._probing:
                return max(1.0, o.next_try - self._clock())
            return max(0.0, o.next_try - self._clock())


class Breakers:
    """The breakers of one process, by provider name (``anthropic``, ``openai``,
    ``openai-compatible <base_url>``), with shared waits and listeners."""

    def __init__(self, wait_initial: float = DEFAULT_WAIT_INITIAL_S, wait_max: float = DEFAULT_WAIT_MAX_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.wait_initial = wait_initial
        self.wait_max = wait_max
        self.clock = clock
        self._breakers: dict[str, CircuitBreaker] = {}
        self._listeners: list[Callable[[str, Outage | None], None]] = []
        self._lock = threading.Lock()

    def get(self, name: str) -> CircuitBreaker:
        with self._lock:
            if name not in self._breakers:
                self._breakers[name] = CircuitBreaker(name, wait_initial=self.wait_initial, wait_max=self.wait_max,
                                                      clock=self.clock, on_change=self._changed)
            return self._breakers[name]

    def subscribe(self, listener: Callable[[str, Outage | None], None]) -> None:
        """``listener(provider, outage or None)`` on every open, re-open and close (called in
        the thread that made the call)."""
        self._listeners.append(listener)

    def outages(self) -> list[Outage]:
        with self._lock:
            breakers = list(self._breakers.values())
        return [o for b in breakers if (o := b.outage()) is not None]

    def _changed(self, name: str, outage: Outage | None) -> None:
        for listener in list(self._listeners):
            listener(name, outage)
