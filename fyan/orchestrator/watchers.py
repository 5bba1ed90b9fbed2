"""File watchers (watchdog) on a project: guidance, source and hand-edited proofs.

Watched: ``guidance/`` (``<unit>.md`` files), ``source/`` (recursively) and ``units/``
(only ``units/<unit>/Basic.lean``). Editors save in bursts (temporary file, rename, chmod),
so changes are collected and handed over ``debounce_s`` seconds after the last one, as one
``Changes`` batch, to the callback — the daemon passes them into its run loop
(``Engine.call_soon``), where they are acted on through the gateway. Events are only hints:
what to do is always decided from file contents and hashes, so a missed or repeated event
changes nothing (the daemon also scans everything when it starts).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from fyan.project import Project

logging.getLogger("watchdog").setLevel(logging.CRITICAL)  # its shutdown chatter is not for users


@dataclass
class Changes:
    guidance: set[str] = field(default_factory=set)  # unit ids whose guidance file changed
    source: set[str] = field(default_factory=set)  # paths under source/, relative to it
    proofs: set[str] = field(default_factory=set)  # unit ids whose Basic.lean changed

    def __bool__(self) -> bool:
        return bool(self.guidance or self.source or self.proofs)


def classify(project: Project, path: str, changes: Changes) -> bool:
    """Add ``path`` (absolute) to ``changes`` if it is watched; returns whether it is."""
    p = Path(path)
    paths = project.paths
    try:
        rel = p.relative_to(paths.root)
    except ValueError:
        return False
    parts = rel.parts
    if not parts:
        return False
    if parts[0] == "guidance" and len(parts) == 2 and parts[1].endswith(".md") and not parts[1].startswith("."):
        changes.guidance.add(parts[1][: -len(".md")])
    elif parts[0] == "source" and len(parts) >= 2 and not any(x.startswith(".") for x in parts[1:]):
        changes.source.add("/".join(parts[1:]))
    elif parts[0] == "units" and len(parts) == 3 and parts[2] == "Basic.lean":
        changes.proofs.add(parts[1])
    else:
        return False
    return True


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: ProjectWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for path in (event.src_path, getattr(event, "dest_path", "") or ""):
            if path:
                self.watcher.note(str(path))


class ProjectWatcher:
    """Watches a project (module docstring); ``callback(changes)`` runs in a timer thread."""

    def __init__(self, project: Project, callback: Callable[[Changes], None], debounce_s: float = 0.3) -> None:
        self.project = project
        self.callback = callback
        self.debounce_s = debounce_s
        self._pending = Changes()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._observer = Observer()

    def note(self, path: str) -> None:
        with self._lock:
            if not classify(self.project, path, self._pending):
                return
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce_s, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            changes, self._pending, self._timer = self._pending, Changes(), None
        if changes:
            self.callback(changes)

    def start(self) -> None:
        paths = self.project.paths
        paths.guidance.mkdir(parents=True, exist_ok=True)
        handler = _Handler(self)
        self._observer.schedule(handler, str(paths.guidance), recursive=False)
        if paths.source.is_dir():
            self._observer.schedule(handler, str(paths.source), recursive=True)
        if paths.units.is_dir():
            self._observer.schedule(handler, str(paths.units), recursive=True)
        self._observer.daemon = True
        self._observer.start()

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self._observer.stop()
        self._observer.join(timeout=5)
