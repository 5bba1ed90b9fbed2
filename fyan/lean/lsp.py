"""A client of Lean's own language server (``lean --server``) for prove iterations.

The protocol (JSON-RPC 2.0 with LSP's ``Content-Length`` framing) is spoken by
``python-lsp-jsonrpc``: ``JsonRpcStreamReader``/``JsonRpcStreamWriter`` frame the messages on the
server's stdin/stdout and an ``Endpoint`` matches responses to requests. What this module adds is
the Lean side (``docs/lean-contract.md``, section "The language server"):

* ``initialize`` / ``initialized``, then one document: ``textDocument/didOpen`` the first time,
  ``textDocument/didChange`` with the full new text (a higher ``version``) after that. The
  imports of the header are elaborated once per worker; a change below the header re-elaborates
  only the commands (that is the whole point: a warm iteration does not import again).
* Fully elaborated = ``$/lean/fileProgress`` reported no processing range for the version *and*
  ``textDocument/waitForDiagnostics`` for it answered (Lean answers once its reporter task sent
  every diagnostic of that version: the final ``publishDiagnostics`` may follow the last
  ``fileProgress``). A crashed worker fails the pending request (``workerCrashed``); a
  ``fileProgress`` range of kind 2 (``fatalError``) that is answered is a header that failed.
* The diagnostics are the last ``textDocument/publishDiagnostics`` of that version, converted to
  ``fyan.lean.diagnostics.Diagnostic`` as ``lean --json`` prints them (1-based lines, columns in
  code points), so a warm check and a cold compile can be compared message by message.
* At each ``sorry`` warning and each error the goal is asked: ``$/lean/plainGoal`` (tactic
  goals), else ``$/lean/plainTermGoal`` (the expected type of a term).

``LeanServer`` runs an argv it is given (``fyan.lakepackage.pool`` confines it as a build is confined)
as a ``fyan.sandbox.runner.ProcessGroup``. Errors: ``ServerCrashed`` (the process ended, a worker
crashed, the stream broke), ``ServerTimeout`` (no answer in time). Neither is the proof's doing.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path

from pylsp_jsonrpc.endpoint import Endpoint
from pylsp_jsonrpc.exceptions import JsonRpcException
from pylsp_jsonrpc.streams import JsonRpcStreamReader, JsonRpcStreamWriter

from fyan.sandbox import safefile
from fyan.lean.diagnostics import Diagnostic, Severity
from fyan.sandbox.runner import ProcessGroup

#: LSP ``DiagnosticSeverity`` → Lean's severity words
_SEVERITY = {1: Severity.ERROR, 2: Severity.WARNING, 3: Severity.INFO, 4: Severity.INFO}
#: ``LeanFileProgressKind.fatalError``
FATAL = 2


class LspError(Exception):
    """The language server failed (not the checked file)."""


class ServerCrashed(LspError):
    """The server or its file worker ended, or its stream broke."""


class ServerTimeout(LspError):
    """The server did not answer within the time given."""


@dataclass
class Goal:
    """The goal at one position (1-based ``line``, code-point ``column``): ``goals`` are the
    pretty-printed goals (``plainGoal``: one per open tactic goal; ``plainTermGoal``: the expected
    type), ``kind`` ``tactic`` or ``term``; ``at`` says why it was asked (``sorry``/``error``)."""

    line: int
    column: int
    kind: str
    goals: list[str]
    at: str

    def describe(self) -> str:
        return f"line {self.line}:{self.column} ({self.at}) goal:\n" + "\n".join(self.goals)


@dataclass
class Elaboration:
    """One fully elaborated version of the document: diagnostics (as ``lean --json`` prints them),
    goals at sorry/error positions, seconds from sending the text to the last diagnostic."""

    version: int
    diagnostics: list[Diagnostic]
    #: ``$/lean/fileProgress`` ended with a fatal error (the header failed: an import is missing)
    fatal: bool = False
    goals: list[Goal] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == Severity.ERROR]


def utf16_to_column(line_text: str, character: int) -> int:
    """The code-point column of LSP's UTF-16 ``character`` offset in ``line_text``."""
    units = 0
    for i, ch in enumerate(line_text):
        if units >= character:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text)


def column_to_utf16(line_text: str, column: int) -> int:
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in line_text[:column])


def to_diagnostic(item: dict, lines: list[str], path: str) -> Diagnostic:
    """One LSP diagnostic of Lean's as the ``Diagnostic`` ``lean --json`` gives (``fullRange``
    when Lean sent it, else ``range``)."""
    rng = item.get("fullRange") or item["range"]
    start, end = rng["start"], rng["end"]

    def col(pos: dict) -> int:
        line = pos["line"]
        return utf16_to_column(lines[line] if line < len(lines) else "", pos["character"])

    code = item.get("code")
    return Diagnostic(file=path, line=start["line"] + 1, column=col(start), end_line=end["line"] + 1,
                      end_column=col(end), severity=_SEVERITY.get(item.get("severity", 1), Severity.ERROR),
                      text=item.get("message", ""), kind=str(code) if code is not None else None)


class _Handlers(dict):
    """What the server sends: notifications are recorded; requests (``client/registerCapability``,
    refreshes) get a null answer."""

    def __init__(self, client: LeanServer) -> None:
        super().__init__()
        self.client = client

    def __getitem__(self, method: str):
        return lambda params=None, **kw: self.client._notified(method, params if params is not None else kw)

    def __contains__(self, method: object) -> bool:
        return True


class LeanServer:
    """One ``lean --server`` process and one open document (module docstring).

    ``argv``: the command (already wrapped by the sandbox); ``cwd``, ``env``: where and with what
    it runs (``LAKE`` should name no file, so the worker reads ``LEAN_PATH`` instead of running
    ``lake setup-file``); ``memory_mb``: address-space limit, MiB; ``uri``: the document's URI;
    ``stderr``: where the server's standard error goes (a file path; None: discarded)."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str], uri: str,
                 memory_mb: int | None = None, stderr: Path | None = None) -> None:
        self.argv, self.cwd, self.env, self.uri = argv, cwd, env, uri
        self.memory_mb = memory_mb
        self.stderr_path = stderr
        self.group: ProcessGroup | None = None
        self.version = 0
        self.text = ""
        self._lock = threading.Condition()
        self._progress_done: dict[int, bool] = {}
        self._diagnostics: dict[int, list[dict]] = {}
        self._fatal: set[int] = set()
        self._ended = False
        self._endpoint: Endpoint | None = None
        self._writer: JsonRpcStreamWriter | None = None
        self.started_at: float | None = None

    # -- process ---------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.group.proc.pid if self.group is not None and self.group.proc is not None else None

    def alive(self) -> bool:
        return self.group is not None and self.group.proc is not None and self.group.proc.poll() is None \
            and not self._ended

    def start(self, timeout_s: float) -> dict:
        """Start the process and ``initialize`` it; returns the server's capabilities. Raises
        ``ServerCrashed`` (it could not start or ended) or ``ServerTimeout``."""
        # the log lives in the server's scratch folder, which the candidate's code writes: never
        # opened by name (a link or a FIFO left there), see fyan.sandbox.safefile.open_append
        try:
            err = safefile.open_append(self.stderr_path) if self.stderr_path is not None else subprocess.DEVNULL
        except OSError as e:
            raise ServerCrashed(f"could not open the server log {self.stderr_path}: {e}") from None
        self.group = ProcessGroup(self.argv, cwd=self.cwd, env=self.env, memory_mb=self.memory_mb,
                                  stdin=subprocess.PIPE, stderr=err)
        try:
            proc = self.group.start()
        except OSError as e:
            raise ServerCrashed(f"could not start {self.argv[0]}: {e.strerror or e}") from None
        finally:
            if err is not subprocess.DEVNULL:
                os.close(err)
        self.started_at = time.monotonic()
        self._writer = JsonRpcStreamWriter(proc.stdin)
        self._endpoint = Endpoint(_Handlers(self), self._writer.write, max_workers=2)
        reader = JsonRpcStreamReader(proc.stdout)
        threading.Thread(target=self._listen, args=(reader,), daemon=True, name="lean-server-reader").start()
        answer = self._request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {},
                                              "initializationOptions": {}}, timeout_s)
        self._endpoint.notify("initialized", {})
        return (answer or {}).get("capabilities", {})

    def _listen(self, reader: JsonRpcStreamReader) -> None:
        try:
            reader.listen(self._endpoint.consume)
        except Exception:  # a broken stream is a crash, reported to whoever waits
            pass
        with self._lock:
            self._ended = True
            self._lock.notify_all()
        if self._endpoint is not None:  # answer every pending request: the server is gone
            # (python-lsp-jsonrpc 1.1 keeps our requests' futures there; without it, requests time out)
            for future in list(getattr(self._endpoint, "_server_request_futures", {}).values()):
                if not future.done():
                    try:
                        future.set_exception(ServerCrashed("the language server ended"))
                    except Exception:  # answered meanwhile
                        pass

    def _notified(self, method: str, params: dict) -> None:
        if not isinstance(params, dict):
            return None
        doc = params.get("textDocument") or {}
        with self._lock:
            if method == "$/lean/fileProgress" and doc.get("uri") == self.uri:
                version = doc.get("version")
                processing = params.get("processing") or []
                if any(p.get("kind") == FATAL for p in processing):
                    self._fatal.add(version)
                self._progress_done[version] = not processing
            elif method == "textDocument/publishDiagnostics" and params.get("uri") == self.uri:
                self._diagnostics[params.get("version")] = params.get("diagnostics") or []
            self._lock.notify_all()
        return None

    def request(self, method: str, params, timeout_s: float):
        """Send one request to the server (``$/lean/plainGoal``, ``textDocument/hover``, ...) and
        return its answer. Raises ``ServerCrashed``/``ServerTimeout``, or ``LspError`` for an
        error answer."""
        return self._request(method, params, timeout_s)

    def _request(self, method: str, params, timeout_s: float):
        if not self.alive():
            raise ServerCrashed("the language server is not running")
        future = self._endpoint.request(method, params)
        try:
            return future.result(timeout=timeout_s)
        except FutureTimeout:
            raise ServerTimeout(f"{method}: no answer in {timeout_s:g} s") from None
        except ServerCrashed:
            raise
        except JsonRpcException as e:
            if not self.alive():
                raise ServerCrashed(f"{method}: the language server ended ({e.message})") from None
            if "crashed" in str(e.message) or "exited" in str(e.message):
                raise ServerCrashed(f"{method}: {e.message}") from None
            raise LspError(f"{method}: {e.message}") from None

    # -- the document ------------------------------------------------------------------------------
    def check(self, text: str, timeout_s: float, *, goals: bool = True) -> Elaboration:
        """Send ``text`` (didOpen the first time, else didChange with the full text), wait until it
        is fully elaborated (module docstring) and return its diagnostics and goals. Raises
        ``ServerCrashed``/``ServerTimeout``."""
        if not self.alive():
            raise ServerCrashed("the language server is not running")
        deadline = time.monotonic() + timeout_s
        start = time.monotonic()
        self.version += 1
        version, self.text = self.version, text
        if version == 1:
            self._endpoint.notify("textDocument/didOpen", {"textDocument": {
                "uri": self.uri, "languageId": "lean4", "version": version, "text": text}})
        else:
            self._endpoint.notify("textDocument/didChange", {"textDocument": {"uri": self.uri, "version": version},
                                                             "contentChanges": [{"text": text}]})
        self._request("textDocument/waitForDiagnostics", {"uri": self.uri, "version": version},
                      max(0.1, deadline - time.monotonic()))
        if time.monotonic() > deadline:  # answered, but only after the time given (the request waits 0.1 s at least)
            raise ServerTimeout(f"version {version} not fully elaborated in {timeout_s:g} s")
        with self._lock:
            while not self._progress_done.get(version) and version not in self._fatal:
                if self._ended:
                    raise ServerCrashed("the language server ended while elaborating")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ServerTimeout(f"version {version} not fully elaborated in {timeout_s:g} s")
                self._lock.wait(min(left, 0.5))
            # a fatal progress after ``waitForDiagnostics`` answered is a header that failed (an
            # import missing): its diagnostics say so; a crashed worker fails the request instead
            raw = list(self._diagnostics.get(version, []))
            for old in [v for v in self._diagnostics if v is not None and v < version]:
                self._diagnostics.pop(old, None)
                self._progress_done.pop(old, None)
        lines = text.split("\n")
        diagnostics = [to_diagnostic(item, lines, self.uri) for item in raw]
        diagnostics.sort(key=lambda d: (d.line or 0, d.column or 0))
        result = Elaboration(version=version, diagnostics=diagnostics, fatal=version in self._fatal)
        if goals:
            result.goals = self.goals_at(diagnostics, lines, max(0.1, deadline - time.monotonic()))
        result.duration_s = round(time.monotonic() - start, 4)
        return result

    def goals_at(self, diagnostics: list[Diagnostic], lines: list[str], timeout_s: float) -> list[Goal]:
        """The goal at each ``sorry`` (when Lean warned of one) and each error (``plainGoal``, else
        ``plainTermGoal``), at most one per position."""
        seen: set[tuple[int, int]] = set()
        out: list[Goal] = []
        places = [(d.line, d.column or 0, "error") for d in diagnostics
                  if d.severity == Severity.ERROR and d.line is not None]
        if any(d.is_sorry for d in diagnostics):
            places += sorry_positions(lines)
        for line, column, at in sorted(places):
            if (line, column) in seen:
                continue
            seen.add((line, column))
            line_text = lines[line - 1] if line - 1 < len(lines) else ""
            pos = {"line": line - 1, "character": column_to_utf16(line_text, column)}
            params = {"textDocument": {"uri": self.uri}, "position": pos}
            tactic = self._request("$/lean/plainGoal", params, timeout_s)
            if tactic and tactic.get("goals"):
                out.append(Goal(line, column, "tactic", list(tactic["goals"]), at))
                continue
            term = self._request("$/lean/plainTermGoal", params, timeout_s)
            if term and term.get("goal"):
                out.append(Goal(line, column, "term", [term["goal"]], at))
        return out

    # -- memory and shutdown ----------------------------------------------------------------------
    def rss_mb(self) -> float | None:
        """Peak resident memory (``VmHWM``) summed over the server and every process below it
        (the watchdog and its file workers), MiB; None when it cannot be read."""
        pid = self.pid
        if pid is None:
            return None
        return tree_peak_rss_mb(pid)

    def close(self, timeout_s: float = 5.0) -> None:
        """``shutdown`` and ``exit`` when it still answers, then end the process group (never
        raises)."""
        try:
            if self.alive():
                self._request("shutdown", None, timeout_s)
                self._endpoint.notify("exit", None)
                self.group.proc.wait(timeout=timeout_s)
        except Exception:
            pass
        finally:
            if self.group is not None:
                self.group.end()
                try:
                    self.group.proc.wait(timeout=timeout_s)
                except Exception:
                    pass
            if self._endpoint is not None:
                self._endpoint.shutdown()

    def kill(self) -> None:
        """End the whole process group now (what a crash looks like)."""
        if self.group is not None:
            self.group.end()


def sorry_positions(lines: list[str]) -> list[tuple[int, int, str]]:
    """(1-based line, column, ``"sorry"``) of each ``sorry``/``admit`` token outside comments."""
    out: list[tuple[int, int, str]] = []
    block = 0
    for n, line in enumerate(lines, start=1):
        i, code = 0, []
        while i < len(line):
            if block:
                if line.startswith("-/", i):
                    block -= 1
                    i += 2
                    continue
                if line.startswith("/-", i):
                    block += 1
                    i += 2
                    continue
                code.append(" ")
                i += 1
                continue
            if line.startswith("--", i):
                break
            if line.startswith("/-", i):
                block += 1
                i += 2
                code.append("  ")
                continue
            code.append(line[i])
            i += 1
        text = "".join(code)
        out += [(n, m.start(), "sorry") for m in re.finditer(r"(?<![\w.'])(?:sorry|admit)(?![\w'])", text)]
    return out


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(c) for c in fh.read().split()]
    except OSError:
        pass
    return out


def tree_peak_rss_mb(pid: int) -> float | None:
    """Sum of ``VmHWM`` (peak resident set) of ``pid`` and its descendants, MiB (Linux ``/proc``);
    None when ``pid`` cannot be read."""
    total, todo, seen, read_any = 0, [pid], set(), False
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
                        read_any = True
                        break
        except OSError:
            continue
        todo += _children(p)
    return round(total / 1024, 1) if read_any else None
