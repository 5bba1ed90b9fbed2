"""Parsers of Lake and Lean output into typed diagnostics.

Formats accepted (ground truth: the captured samples in ``shared/lean-samples/``, see its
README):

* Lake progress lines, current (``✔ [12/40] Built Foo.Bar (2.1s)``, icons ✔ ℹ ⚠ ✖, verbs
  Built/Building, Replayed/Replaying, Fetched/Fetching, Ran/Running, Revisited/Revisiting,
  optional ``(Optional)``, ``[?/?]``) and older (``[285/1893] Building X``, ``Building X``);
* messages ``{level}: {file}:{line}:{col}[-{endline}:{endcol}]: {text}`` with paths that start
  with ``././././`` (v4.14–4.17), ``.\\.\\.\\`` (Windows) or are bare (v4.32), and the older
  ``{file}:{line}:{col}: {level}: {text}`` relayed by pre-2024 Lake and printed by ``lean``
  itself, whose level carries the message's kind on 4.35.0 (``error(lean.unknownIdentifier)``);
  continuation lines (goal dumps, ``Note:`` paragraphs) belong to the message above them;
* tails: ``Build completed successfully[ (N jobs)].``, ``Some [required ](targets|builds) logged
  failures:`` with ``- target`` lines, ``error: build failed``, ``error: Lean exited with code
  N``, ``error: external command ... exited with status N``;
* CI timestamp prefixes (``2026-05-28T15:14:46.1177616Z ``) are stripped;
* ``lean --json`` lines (fileName, pos, endPos, severity, data, kind; old toolchains omit kind).

Sorry warnings are recognised in both wordings (``declaration uses 'sorry'`` up to v4.27,
``declaration uses `sorry` `` from v4.28) and by ``kind == "hasSorry"``. They are evidence for
the sorry count only together with the trusted inspector; never the only evidence.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    TRACE = "trace"


_SEVERITY = {"error": Severity.ERROR, "warning": Severity.WARNING, "info": Severity.INFO,
             "information": Severity.INFO, "trace": Severity.TRACE}

_SORRY_TEXT = re.compile(r"declaration uses ['`]sorry['`]")


class Diagnostic(BaseModel):
    """One Lean message. Positions are 1-based lines and 0-based columns, as Lean prints them."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    severity: Severity
    text: str
    kind: str | None = Field(default=None, description="Lean's message kind (lean --json), e.g. hasSorry")

    @property
    def is_sorry(self) -> bool:
        return self.kind == "hasSorry" or bool(_SORRY_TEXT.search(self.text))


class Job(BaseModel):
    """A Lake progress line."""

    icon: str | None = None
    index: int | None = None
    total: int | None = None
    optional: bool = False
    verb: str
    target: str
    duration: str | None = None


class BuildLog(BaseModel):
    """Everything recognised in a ``lake build`` output."""

    jobs: list[Job] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    succeeded: bool | None = Field(default=None, description="From the tail; None when absent")
    job_count: int | None = None
    failed_targets: list[str] = Field(default_factory=list)
    lean_exit_codes: list[int] = Field(default_factory=list)
    unrecognized: list[str] = Field(default_factory=list, description="Lines outside any known format")

    def in_files(self, files: set[str]) -> list[Diagnostic]:
        """Diagnostics whose (normalised) file is one of ``files``."""
        return [d for d in self.diagnostics if d.file is not None and d.file in files]


def normalize_path(path: str) -> str:
    """``././././A/B.lean`` and ``.\\.\\.\\A\\B.lean`` → ``A/B.lean``."""
    p = path.replace("\\", "/")
    while "/./" in p:
        p = p.replace("/./", "/")
    while p.startswith("./"):
        p = p[2:]
    return p


_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")
_JOB_NEW = re.compile(
    r"^(?P<icon>[✔ℹ⚠✖])\s+\[(?P<n>\d+|\?)/(?P<m>\d+|\?)\]\s+(?P<opt>\(Optional\)\s+)?"
    r"(?P<verb>[A-Z][a-z]+)\s+(?P<target>\S+)(?:\s+\((?P<time>[\d.]+\s*(?:ms|s|min))\))?\s*$"
)
_JOB_OLD = re.compile(r"^\[(?P<n>\d+|\?)/(?P<m>\d+|\?)\]\s+(?P<verb>[A-Z][a-z]+)\s+(?P<target>\S+)(?:\s+.*)?$")
_JOB_OLDEST = re.compile(r"^(?P<verb>Building|Compiling|Linking)\s+(?P<target>\S+)\s*$")
_POS = r"(?P<line>\d+):(?P<col>\d+)(?:-(?P<eline>\d+):(?P<ecol>\d+))?"
#: a message's severity, and on Lean 4.35.0 its kind in parentheses (``error(lean.unknownIdentifier)``:
#: ``lean`` without ``--json`` prints it so; checked on the real core lean, tests/test_lean_core_tier.py)
_LEVEL = r"(?P<level>error|warning|info|trace)(?:\((?P<kind>[^()\s]+)\))?"
_MSG_NEW = re.compile(r"^" + _LEVEL + r":\s+(?P<file>\S.*?\.lean):" + _POS + r":\s?(?P<text>.*)$")
_MSG_OLD = re.compile(r"^(?P<file>\S.*?\.lean):" + _POS + r":\s*" + _LEVEL + r":\s?(?P<text>.*)$")
_MSG_BARE = re.compile(r"^(?P<level>error|warning|info|trace):\s?(?P<text>.*)$")
_SUCCESS = re.compile(r"^Build completed successfully(?: \((?P<n>\d+) jobs?\))?\.\s*$")
_FAILURES = re.compile(r"^Some (?:required )?(?:targets|builds) logged failures:\s*$")
_LEAN_EXIT = re.compile(r"Lean exited with code (\d+)")
_EXTERNAL_EXIT = re.compile(r"external command .* exited with (?:status|code) (\d+)")


def _diag(m: re.Match[str], level: str) -> Diagnostic:
    g = m.groupdict()
    return Diagnostic(
        file=normalize_path(g["file"]),
        line=int(g["line"]),
        column=int(g["col"]),
        end_line=int(g["eline"]) if g.get("eline") else None,
        end_column=int(g["ecol"]) if g.get("ecol") else None,
        severity=_SEVERITY[level],
        text=g["text"],
        kind=g.get("kind"),
    )


def parse_lake_output(text: str) -> BuildLog:
    """Parse the combined stdout/stderr of ``lake build`` (any Lake version in the samples)."""
    log = BuildLog()
    current: Diagnostic | None = None
    continuation: list[str] = []
    in_failures = False

    def close() -> None:
        nonlocal current, continuation
        if current is not None:
            extra = "\n".join(continuation).rstrip()
            if extra:
                current.text = (current.text + "\n" + extra).strip("\n")
            log.diagnostics.append(current)
        current, continuation = None, []

    for raw in text.splitlines():
        line = _TIMESTAMP.sub("", raw.rstrip("\r"))
        if in_failures:
            if line.startswith("- "):
                log.failed_targets.append(line[2:].strip())
                continue
            in_failures = False
        m = _JOB_NEW.match(line) or _JOB_OLD.match(line) or _JOB_OLDEST.match(line)
        if m:
            close()
            g = m.groupdict()
            log.jobs.append(
                Job(
                    icon=g.get("icon"),
                    index=int(g["n"]) if g.get("n") and g["n"].isdigit() else None,
                    total=int(g["m"]) if g.get("m") and g["m"].isdigit() else None,
                    optional=bool(g.get("opt")),
                    verb=g["verb"],
                    target=g["target"],
                    duration=g.get("time"),
                )
            )
            continue
        m = _MSG_NEW.match(line)
        if m:
            close()
            current = _diag(m, m.group("level"))
            continue
        m = _MSG_OLD.match(line)
        if m:
            close()
            current = _diag(m, m.group("level"))
            continue
        m = _SUCCESS.match(line)
        if m:
            close()
            log.succeeded = True
            log.job_count = int(m.group("n")) if m.group("n") else None
            continue
        if _FAILURES.match(line):
            close()
            log.succeeded = False
            in_failures = True
            continue
        m = _MSG_BARE.match(line)
        if m:
            close()
            body = m.group("text")
            code = _LEAN_EXIT.search(body) or _EXTERNAL_EXIT.search(body)
            if code:
                log.lean_exit_codes.append(int(code.group(1)))
            if body.strip() == "build failed":
                log.succeeded = False
            continue
        if current is not None:
            continuation.append(line)
        elif line.strip():
            log.unrecognized.append(line)
    close()
    return log


def _json_diag(obj: dict[str, Any]) -> Diagnostic:
    pos = obj.get("pos") or {}
    end = obj.get("endPos") or {}
    return Diagnostic(
        file=normalize_path(obj["fileName"]) if obj.get("fileName") else None,
        line=pos.get("line"),
        column=pos.get("column"),
        end_line=end.get("line"),
        end_column=end.get("column"),
        severity=_SEVERITY.get(str(obj.get("severity")), Severity.INFO),
        text=str(obj.get("data", "")),
        kind=obj.get("kind"),
    )


class JsonOutput(BaseModel):
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    unrecognized: list[str] = Field(default_factory=list)


def parse_lean_json(text: str) -> JsonOutput:
    """Parse ``lean --json`` output: one JSON message per line; other lines are reported as
    unrecognized (an empty output is valid: a clean file prints nothing)."""
    out = JsonOutput()
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            out.unrecognized.append(line)
            continue
        if isinstance(obj, dict) and "severity" in obj and "data" in obj:
            out.diagnostics.append(_json_diag(obj))
        else:
            out.unrecognized.append(line)
    return out
