"""Progress you can see: what ``fyan run``, ``fyan resume`` and the daemon print while working.

* On a terminal: a live table (units by layer, the jobs in flight with how long each has run,
  providers that are unavailable), refreshed several times a second, with one line printed
  above it for each finished attempt and each note.
* Otherwise (a pipe, a log file): one line per event — including each attempt's start — and a
  **heartbeat** at least every ``heartbeat_s`` seconds (30 by default; ``FYAN_HEARTBEAT_S``
  overrides it) while anything runs or waits for a provider: the jobs in flight with their
  elapsed time, the unit counts, the run's elapsed time and any outage. Lines are never cut,
  and every line is flushed at once.

Text from documents, models and tools is printed literally (``fyan.terminal``: no markup).
A closed output (``fyan run … | head -1``) switches the display off quietly; the run goes on.
``StartupProgress`` is the phase display of ``fyan init`` on a large document (on stderr; when
not on a terminal, only phases that last more than two seconds are shown).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from fyan.orchestrator.live import LiveState, lean_waiting_text
from fyan.terminal import console

DEFAULT_HEARTBEAT_S = 30.0


def heartbeat_interval() -> float:
    """Seconds between heartbeats: ``FYAN_HEARTBEAT_S`` or 30."""
    try:
        value = float(os.environ.get("FYAN_HEARTBEAT_S", DEFAULT_HEARTBEAT_S))
    except ValueError:
        return DEFAULT_HEARTBEAT_S
    return value if value > 0 else DEFAULT_HEARTBEAT_S


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def heartbeat_text(live: LiveState, now: float | None = None) -> str:
    """One line: jobs in flight with elapsed time, unit counts, elapsed run time, outages."""
    now = time.time() if now is None else now
    parts = []
    if live.running:
        jobs = ", ".join(f"{u} ({s} {_clock(now - t)})" for u, s, t in sorted(live.running, key=lambda r: r[2]))
        parts.append(f"running {len(live.running)}: {jobs}")
    elif live.waiting:
        parts.append("nothing running")
    if live.counts:
        total = sum(live.counts.values())
        parts.append(f"{live.counts.get('complete', 0)}/{total} complete"
                     + "".join(f", {n} {k}" for k, n in sorted(live.counts.items()) if k != "complete"))
    if live.waiting:
        parts.append(f"{live.waiting} unit(s) wait for their provider")
    if live.lean_waiting:
        parts.append(lean_waiting_text(live.lean))
    for o in live.outages:
        parts.append(o.describe(now))
    if live.started:
        parts.append(f"elapsed {_clock(now - live.started)}")
    return "; ".join(parts)


class RunProgress:
    """The progress display of one run (module docstring). ``live`` returns the run's current
    ``LiveState`` (set once the daemon exists); call ``close`` at the end."""

    def __init__(self, enabled: bool, stream: IO[str] | None = None, heartbeat_s: float | None = None,
                 tty: bool | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.heartbeat_s = heartbeat_interval() if heartbeat_s is None else heartbeat_s
        self.live: Callable[[], LiveState] | None = None
        self._lock = threading.Lock()
        self._display = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_line = time.monotonic()
        if not enabled:
            return
        if self.tty:
            from rich.live import Live

            self._display = Live(console=console(self.stream), get_renderable=self._table, refresh_per_second=4,
                                 transient=True, redirect_stdout=False, redirect_stderr=False)
            self._display.start()
        else:
            self._thread = threading.Thread(target=self._beat, daemon=True, name="fyan-heartbeat")
            self._thread.start()

    # -- events ----------------------------------------------------------------------------
    def __call__(self, event: Any, views: Any) -> None:
        if not self.enabled:
            return
        if self._display is not None:
            if event.status != "started":
                self._print(self.line(event))
            return
        self._print(self.line(event))

    @staticmethod
    def line(event: Any) -> str:
        """One event as a line (``HH:MM:SS  stage  unit  status — reason``), never cut."""
        now = time.strftime("%H:%M:%S")
        if event.status == "note" or event.unit == "-":
            return f"{now}  {event.reason}"
        stage = getattr(event.stage, "value", event.stage)
        reason = f" — {event.reason}" if event.reason and event.status not in ("succeeded", "started") else ""
        return f"{now}  {stage:<6} {event.unit:<40} {event.status}{reason}"

    def note(self, text: str) -> None:
        """A line of its own (a message of the command)."""
        if self.enabled:
            self._print(f"{time.strftime('%H:%M:%S')}  {text}")

    def _print(self, text: str) -> None:
        with self._lock:
            if not self.enabled:
                return
            try:
                if self._display is not None:
                    self._display.console.print(text, soft_wrap=True)
                else:
                    self.stream.write(text + "\n")
                    self.stream.flush()
                self._last_line = time.monotonic()
            except (BrokenPipeError, ValueError, OSError):  # the reader went away: stop quietly
                self.enabled = False

    # -- heartbeat (not a terminal) -----------------------------------------------------------
    def _beat(self) -> None:
        while not self._stop.wait(min(1.0, self.heartbeat_s)):
            if time.monotonic() - self._last_line < self.heartbeat_s:
                continue
            state = self._state()
            if state is None or not (state.running or state.waiting or state.outages):
                self._last_line = time.monotonic()  # idle (a daemon waiting for changes): nothing to say
                continue
            self._print(f"{time.strftime('%H:%M:%S')}  {heartbeat_text(state)}")

    def _state(self) -> LiveState | None:
        try:
            return self.live() if self.live is not None else None
        except Exception:  # a snapshot taken while the loop changes: skip this beat
            return None

    # -- the live table (a terminal) ---------------------------------------------------------
    def _table(self):
        from rich.table import Table
        from rich.text import Text

        state = self._state()
        if state is None:
            return Text("starting ...")
        now = time.time()
        total = sum(state.counts.values())
        title = (f"fyan run: {state.counts.get('complete', 0)}/{total} units complete"
                 + (f", elapsed {_clock(now - state.started)}" if state.started else ""))
        t = Table(title=title, expand=False, min_width=min(80, len(title) + 4))
        t.add_column("status")
        t.add_column("units", justify="right")
        for k, n in sorted(state.counts.items()):
            t.add_row(k, str(n))
        for u, s, started in sorted(state.running, key=lambda r: r[2]):
            t.add_row(Text(f"running {s}"), Text(f"{u} ({_clock(now - started)})"))
        for o in state.outages:
            t.add_row(Text("provider"), Text(o.describe(now)))
        if state.stopping:
            t.add_row("stopping", Text(state.stopping))
        return t

    def close(self) -> None:
        self._stop.set()
        if self._display is not None:
            try:
                self._display.stop()
            except (BrokenPipeError, OSError):
                pass
        if self._thread is not None:
            self._thread.join(timeout=2)


class StartupProgress:
    """Phases of a long start (``fyan init`` reading a large document), on stderr. On a
    terminal: the phase at once, with a ticking elapsed time. Otherwise a phase is announced only
    when it is still running after ``delay_s`` seconds (2, or less with ``FYAN_HEARTBEAT_S``), then
    "still working" every heartbeat — a quick start prints nothing extra. Disabled: silent."""

    def __init__(self, enabled: bool, stream: IO[str] | None = None, delay_s: float | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.delay_s = min(2.0, heartbeat_interval()) if delay_s is None else delay_s
        self._phase: str | None = None
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def phase(self, text: str) -> None:
        """A new phase starts (the previous one ends)."""
        self._end_phase()
        if not self.enabled:
            return
        self._phase, self._t0 = text, time.monotonic()
        if self.tty:
            self._write(f"{text} ...")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True, name="fyan-startup-progress")
        self._thread.start()

    def _tick(self) -> None:
        if self.tty:
            while not self._stop.wait(0.5):
                self._write(f"\r{self._phase} ... {time.monotonic() - self._t0:.0f} s")
            return
        if self._stop.wait(self.delay_s):
            return
        self._write(f"{self._phase} ...\n")
        while not self._stop.wait(heartbeat_interval()):
            self._write(f"{self._phase}: still working ({time.monotonic() - self._t0:.0f} s)\n")

    def _end_phase(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=2)
            self._thread = None
            if self.tty and self._phase:
                self._write(f"\r{self._phase} ... done ({time.monotonic() - self._t0:.1f} s)\n")
        self._phase = None

    def done(self) -> None:
        self._end_phase()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.enabled = False
