"""The prover tools on a warm Lean language server: ``lean_check``, ``lean_goals``, ``lean_try``,
``lean_lookup``, ``lean_axioms`` (typed inputs and results: ``fyan.prover.models``).

Each call builds one document — the unit's import header, a blank line, then the text the
agent gave — sends it to a warm ``lean --server`` of the unit's toolchain and search path
(``fyan.lean.lsp.LeanServer``, leased from ``fyan.lakepackage.pool``: confined like a build, never the
gate's workspace) and reads what an editor shows:

* diagnostics (``textDocument/publishDiagnostics`` after ``textDocument/waitForDiagnostics``);
* goals: ``$/lean/plainGoal`` (tactic goals; Lean's ``goalsAt?`` gives the state *before* the
  tactic when the cursor is at its first character and *after* it once the cursor is past its
  start) and ``$/lean/plainTermGoal`` (the expected type of a term);
* ``textDocument/hover`` on a name (signature, docstring, and ``*import M*`` for the module that
  declares it).

Rules every call keeps:

* **Lints first.** The agent's text (and each trial script) passes ``fyan.lean.lints`` before
  anything is sent: code the lints refuse (``#eval``, ``run_cmd``, macros, elaborators, ...)
  never runs, on a warm server neither. A refused call has ``status = "refused"``.
* **Names are names.** ``lean_lookup``/``lean_axioms`` take a Lean identifier only (``NAME_RE``);
  the probe line (``#check``, ``#print axioms``) is Fyan's text, and only the message at that
  line is read.
* **Bounded.** ``Limits``: seconds per call (a ``ServerTimeout`` is ``status = "timeout"``), the
  input size, messages kept and characters per message/goal (``truncated`` says a bound cut).
* **Recorded.** One JSON line per call in ``log`` (``tools.jsonl`` of the attempt folder): time,
  tool, input (strings clipped), status, seconds, note, whether truncated.
* **Environment failures are not the proof's.** ``WarmUnavailable``/``ServerCrashed``/
  ``ServerTimeout`` give ``unavailable``/``server_failed``/``timeout`` with the reason.

``lean_axioms`` is ``#print axioms`` on the warm server after the agent's (linted) text: useful
feedback, bounded by what the lints keep out (no syntax, macro or elaborator of the agent's is
live, so the message cannot be reshaped). It is not the axiom audit: the gate reads each
declaration's transitive axioms from the trusted inspector's report on the compiled modules.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import ContextManager

from pydantic import BaseModel

from fyan.lean.diagnostics import Diagnostic, Severity
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.lean.lsp import LeanServer, LspError, ServerCrashed, ServerTimeout, column_to_utf16, sorry_positions
from fyan.lakepackage.pool import WarmUnavailable
from fyan.prover.models import (AxiomsInput, AxiomsResult, CheckInput, CheckResult, GoalsInput, GoalsResult, GoalState,
                                Limits, LookupInput, LookupResult, Message, ToolResult, Trial, TryInput, TryResult)

#: a Lean identifier: dot-separated components, each an identifier or a «»-quoted name
NAME_RE = re.compile(r"^(?:«[^«»\n]+»|[^\W\d][\w'!?]*)(?:\.(?:«[^«»\n]+»|[^\W\d][\w'!?]*|\d+))*$")
_AXIOMS_RE = re.compile(r"depends on axioms: \[(.*)\]", re.S)
_IMPORT_RE = re.compile(r"^\*import ([^*\s]+)\*\s*$", re.M)


class _Refused(Exception):
    pass


def _clip(text: str, n: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= n else (text[:n] + f"\n… [{len(text) - n} more characters]", True)


def _first_nonblank(line: str) -> int:
    return len(line) - len(line.lstrip())


class ProverTools:
    """The tools for one unit (module docstring).

    ``header``: the unit's import header (``prelude``/``import`` lines); ``lease``: a callable
    giving a context manager that yields a started ``LeanServer`` for that header (the pool's
    ``lease``, or a fixed server); ``log``: the JSON-lines record (None: not recorded);
    ``module_of``: a name → its module from the declaration index, used when the hover does
    not say; ``preamble``/``postamble``: Fyan's text around the agent's in the unit's file
    (``open`` of the upstream units, ``namespace``/``end``), so names resolve as in the unit."""

    def __init__(self, header: str, lease: Callable[[], ContextManager[LeanServer]], *, log: Path | None = None,
                 limits: Limits | None = None, module_of: Callable[[str], str | None] | None = None,
                 preamble: str = "", postamble: str = "") -> None:
        self.header = header.strip("\n")
        self.lease = lease
        self.log = log
        self.limits = limits or Limits()
        self.module_of = module_of
        self.preamble = preamble.strip("\n") + "\n" if preamble.strip() else ""
        self.postamble = "\n" + postamble.strip("\n") if postamble.strip() else ""
        #: lines before the agent's text in every document (the header, one blank line, the preamble)
        self.offset = (len(self.header.split("\n")) + 1 if self.header else 0) + self.preamble.count("\n")

    # -- documents ---------------------------------------------------------------------------------
    def _body(self, text: str) -> str:
        """The agent's text without a copy of the unit's header it may have repeated; refused when
        too long, when it has another header, or when a lint refuses it."""
        if len(text) > self.limits.max_input_chars:
            raise _Refused(f"the text has {len(text)} characters (at most {self.limits.max_input_chars})")
        stripped = text.lstrip("\n")
        if self.header and stripped.startswith(self.header):
            text = stripped[len(self.header):].lstrip("\n")
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        if re.match(r"^(prelude|import|module)\b", first):
            raise _Refused(f"give the declarations without an import header: the unit's header is fixed ({self.header!r})")
        refused = lint_errors(lint(text))
        if refused:
            raise _Refused("not sent to Lean (code the lints refuse is never run): "
                           + "; ".join(f"line {f.line}: {f.rule}: {f.text}" for f in refused[:5]))
        return text

    def _document(self, body: str) -> str:
        text = self.preamble + body.rstrip("\n") + self.postamble
        return (self.header + "\n\n" + text if self.header else text).rstrip("\n") + "\n"

    def _line(self, doc_line: int) -> int:
        return max(0, doc_line - self.offset)

    def _messages(self, diagnostics: list[Diagnostic], result: ToolResult) -> list[Message]:
        out: list[Message] = []
        for d in diagnostics:
            if len(out) >= self.limits.max_messages:
                result.truncated = True
                break
            text, cut = _clip(d.text, self.limits.max_chars)
            result.truncated |= cut
            out.append(Message(line=self._line(d.line or 0), column=d.column or 0,
                               end_line=self._line(d.end_line) if d.end_line else None, end_column=d.end_column,
                               severity=d.severity.value if hasattr(d.severity, "value") else str(d.severity), text=text))
        return out

    def _goal(self, server: LeanServer, doc: str, doc_line: int, column: int, timeout_s: float, result: ToolResult,
              *, at: str = "", term_first: bool = False) -> GoalState | None:
        """The goal at (1-based document line, column): ``plainGoal`` (tactic), else ``plainTermGoal``."""
        lines = doc.split("\n")
        line_text = lines[doc_line - 1] if 0 < doc_line <= len(lines) else ""
        params = {"textDocument": {"uri": server.uri},
                  "position": {"line": doc_line - 1, "character": column_to_utf16(line_text, column)}}
        order = ("term", "tactic") if term_first else ("tactic", "term")
        for kind in order:
            if kind == "tactic":
                answer = server.request("$/lean/plainGoal", params, timeout_s)
                if answer is None or "goals" not in answer:
                    continue
                goals = list(answer["goals"])
            else:
                answer = server.request("$/lean/plainTermGoal", params, timeout_s)
                if not answer or not answer.get("goal"):
                    continue
                goals = [answer["goal"]]
            clipped = []
            for g in goals[: self.limits.max_messages]:
                text, cut = _clip(g, self.limits.max_chars)
                result.truncated |= cut
                clipped.append(text)
            result.truncated |= len(goals) > self.limits.max_messages
            return GoalState(line=self._line(doc_line), column=column, kind=kind, goals=clipped, at=at)
        return None

    # -- calls -------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _call(self, tool: str, args: BaseModel, result: ToolResult) -> Iterator[None]:
        """Time, bound and record one call; environment failures become the result's status."""
        start = time.monotonic()
        try:
            yield
        except _Refused as e:
            result.status, result.note = "refused", str(e)
        except WarmUnavailable as e:
            result.status, result.note = "unavailable", f"no warm language server: {e}"
        except ServerTimeout as e:
            result.status, result.note = "timeout", f"Lean did not answer in time (the environment, not the proof): {e}"
        except (ServerCrashed, LspError) as e:
            result.status, result.note = "server_failed", f"the language server failed (the environment, not the proof): {e}"
        result.duration_s = round(time.monotonic() - start, 4)
        self._record(tool, args, result)

    def _record(self, tool: str, args: BaseModel, result: ToolResult) -> None:
        if self.log is None:
            return
        shown = {k: (_clip(v, 2000)[0] if isinstance(v, str) else v) for k, v in args.model_dump().items()}
        line = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "tool": tool, "input": shown,
                "status": result.status, "duration_s": result.duration_s, "note": result.note[:2000],
                "truncated": result.truncated, "result_chars": len(result.model_dump_json())}
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")

    def lean_check(self, args: CheckInput) -> CheckResult:
        """Elaborate the text in the unit's context: every message, and the goal at each ``sorry``
        and error."""
        result = CheckResult()
        with self._call("lean_check", args, result):
            doc = self._document(self._body(args.text))
            with self.lease() as server:
                e = server.check(doc, self.limits.timeout_s, goals=True)
            result.messages = self._messages(e.diagnostics, result)
            result.errors = sum(d.severity == Severity.ERROR for d in e.diagnostics)
            result.sorries = sum(d.is_sorry for d in e.diagnostics)
            result.complete = not result.errors and not result.sorries and not e.fatal
            for g in e.goals[: self.limits.max_messages]:
                goals = []
                for x in g.goals:
                    text, cut = _clip(x, self.limits.max_chars)
                    result.truncated |= cut
                    goals.append(text)
                result.goals.append(GoalState(line=self._line(g.line), column=g.column, kind=g.kind, goals=goals, at=g.at))
            result.truncated |= len(e.goals) > self.limits.max_messages
        return result

    def lean_goals(self, args: GoalsInput) -> GoalsResult:
        """The goal before the tactic (or term) on ``line`` (cursor at its start) and after it
        (cursor at the end of the line's text)."""
        result = GoalsResult()
        with self._call("lean_goals", args, result):
            body = self._body(args.text)
            lines = body.split("\n")
            if args.line > len(lines):
                raise _Refused(f"line {args.line} is past the text's end ({len(lines)} lines)")
            line_text = lines[args.line - 1]
            start = args.column if args.column is not None else _first_nonblank(line_text)
            end = len(line_text.rstrip())
            doc = self._document(body)
            deadline = time.monotonic() + self.limits.timeout_s
            with self.lease() as server:
                e = server.check(doc, self.limits.timeout_s, goals=False)
                left = max(0.1, deadline - time.monotonic())
                result.before = self._goal(server, doc, args.line + self.offset, start, left, result, at="before")
                result.after = self._goal(server, doc, args.line + self.offset, max(start, end), left, result, at="after")
            result.messages = self._messages([d for d in e.diagnostics if d.severity == Severity.ERROR], result)
        return result

    def lean_try(self, args: TryInput) -> TryResult:
        """Each script in place of the tactic (or the ``sorry``) at ``line``/``column``, one
        document version per script: whether it closes the goal (no error in the enclosing
        declaration, no ``sorry`` of its own), its errors, and the goals it leaves."""
        result = TryResult()
        with self._call("lean_try", args, result):
            body = self._body(args.text)
            lines = body.split("\n")
            if args.line > len(lines):
                raise _Refused(f"line {args.line} is past the text's end ({len(lines)} lines)")
            if len(args.scripts) > self.limits.max_scripts:
                raise _Refused(f"{len(args.scripts)} scripts (at most {self.limits.max_scripts} per call)")
            line_text = lines[args.line - 1]
            sorries = [c for (_, c, _) in sorry_positions([line_text])]
            column = args.column if args.column is not None else (sorries[0] if sorries else _first_nonblank(line_text))
            token = re.match(r"(sorry|admit)(?![\w'])", line_text[column:])
            end = column + len(token.group(1)) if token else len(line_text.rstrip())
            # the enclosing declaration: from the last line at or above that starts a command
            # (text at column 0) to the next one
            first = next((i for i in range(args.line, 0, -1) if lines[i - 1][:1].strip()), 1)
            nxt = next((i for i in range(args.line + 1, len(lines) + 1) if lines[i - 1][:1].strip()
                        and not lines[i - 1].startswith("--")), len(lines) + 1)
            deadline = time.monotonic() + self.limits.timeout_s
            with self.lease() as server:
                for script in args.scripts:
                    trial = Trial(script=script)
                    result.trials.append(trial)
                    left = deadline - time.monotonic()
                    if left <= 0:
                        trial.status, trial.note = "timeout", "not tried: the call's time bound ran out"
                        continue
                    script_lines = script.strip("\n").split("\n")
                    replaced = line_text[:column] + ("\n" + " " * column).join(script_lines) + line_text[end:]
                    trial_body = "\n".join(lines[: args.line - 1] + [replaced] + lines[args.line:])
                    refused = lint_errors(lint(trial_body))
                    if refused:
                        trial.status = "refused"
                        trial.note = "; ".join(f"{f.rule}: {f.text}" for f in refused[:3])
                        continue
                    doc = self._document(trial_body)
                    t0 = time.monotonic()
                    e = server.check(doc, left, goals=False)
                    added = len(script_lines) - 1
                    inside = [d for d in e.diagnostics if d.severity == Severity.ERROR
                              and first <= self._line(d.line or 0) < nxt + added]
                    trial.errors = self._messages(inside, result)
                    last = args.line + added
                    end_col = (column if not added else column) + len(script_lines[-1])
                    left = max(0.1, deadline - time.monotonic())
                    trial.remaining = self._goal(server, doc, last + self.offset, end_col, left, result, at="after")
                    if trial.remaining is None or (inside and trial.remaining.kind == "tactic" and not trial.remaining.goals):
                        trial.remaining = self._goal(server, doc, args.line + self.offset, column, left, result,
                                                     at="expected", term_first=True) or trial.remaining
                    trial.closes = not inside and not sorry_positions(script_lines) and not e.fatal
                    trial.duration_s = round(time.monotonic() - t0, 4)
                    if trial.closes and result.first_closing is None:
                        result.first_closing = len(result.trials) - 1
                        if args.stop_at_first:
                            break
        return result

    def lean_lookup(self, args: LookupInput) -> LookupResult:
        """Whether ``name`` exists in the unit's environment (its imports), its signature
        (``#check``), docstring and module (``textDocument/hover`` on the name)."""
        result = LookupResult(name=args.name)
        with self._call("lean_lookup", args, result):
            name = args.name.strip()
            if not NAME_RE.match(name):
                raise _Refused(f"{name!r} is not a Lean name")
            probe = f"#check {name}"
            doc = self._document(probe)
            doc_line = self.offset + 1
            with self.lease() as server:
                e = server.check(doc, self.limits.timeout_s, goals=False)
                here = [d for d in e.diagnostics if d.line == doc_line]
                info = [d for d in here if d.severity == Severity.INFO]
                if info and not any(d.severity == Severity.ERROR for d in here):
                    result.exists = True
                    result.signature = _clip(info[0].text, self.limits.max_chars)[0]
                    hover = server.request("textDocument/hover", {"textDocument": {"uri": server.uri}, "position": {
                        "line": doc_line - 1, "character": column_to_utf16(probe, len("#check "))}},
                        max(0.1, self.limits.timeout_s))
                    value = ((hover or {}).get("contents") or {}).get("value", "") if isinstance(hover, dict) else ""
                    parts = [p.strip() for p in value.split("***")]
                    module = _IMPORT_RE.search(value)
                    result.module = module.group(1) if module else None
                    docs = [p for p in parts[1:] if p and not _IMPORT_RE.fullmatch(p)]
                    if docs:
                        result.docstring, cut = _clip(docs[0], self.limits.max_chars)
                        result.truncated |= cut
                else:
                    result.note = "; ".join(d.text.splitlines()[0] for d in here if d.severity == Severity.ERROR)[:500]
            if result.exists and result.module is None and self.module_of is not None:
                result.module = self.module_of(name)
        return result

    def lean_axioms(self, args: AxiomsInput) -> AxiomsResult:
        """The axioms ``name`` depends on (``#print axioms`` after the given text; module
        docstring: feedback, not the gate's axiom audit)."""
        result = AxiomsResult(name=args.name)
        with self._call("lean_axioms", args, result):
            name = args.name.strip()
            if not NAME_RE.match(name):
                raise _Refused(f"{name!r} is not a Lean name")
            body = self._body(args.text).rstrip("\n")
            body = (body + "\n\n" if body else "") + f"#print axioms {name}"
            doc = self._document(body)
            doc_line = self.offset + len(body.split("\n"))
            with self.lease() as server:
                e = server.check(doc, self.limits.timeout_s, goals=False)
            here = [d for d in e.diagnostics if d.line == doc_line]
            info = next((d for d in here if d.severity == Severity.INFO), None)
            if info is None or any(d.severity == Severity.ERROR for d in here):
                result.note = "; ".join(d.text.splitlines()[0] for d in here)[:500] or "Lean printed no axioms"
            else:
                found = _AXIOMS_RE.search(info.text)
                result.axioms = [a.strip() for a in found.group(1).split(",") if a.strip()] if found else []
                result.uses_sorry = "sorryAx" in result.axioms
            result.messages = self._messages([d for d in e.diagnostics if d.severity == Severity.ERROR], result)
        return result


def fixed_server(server: LeanServer) -> Callable[[], ContextManager[LeanServer]]:
    """A ``lease`` that always yields ``server`` (one agent, one server it owns)."""
    return lambda: contextlib.nullcontext(server)
