"""The probe: evidence about root declarations taken from the *compiled environment*.

After the unit's module is built, the gate renders ``lake-template/Probe.lean`` (importing that
module, never part of the candidate's files) and runs it with ``lake env lean --json --stdin``,
so the probe text (and its nonce) is never on disk where candidate code could read it. The
probe prints one ``<nonce> <json>`` line per root (DESIGN.md §3). Only lines that start with
this run's nonce count: a candidate can print anything while it compiles, including forged
``'x' depends on axioms: [...]`` text. A root missing from the environment (``#exit``, a
renamed declaration, code in a comment) has ``found: false``.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from string import Template

from pydantic import BaseModel, Field, ValidationError

from fyan.config import LeanSection
from fyan.lean.diagnostics import parse_lean_json
from fyan.lean.runner import ProcessResult, run_process
from fyan.lean.toolchain import Toolchain
from fyan.resources import data_dir

NONCE_PREFIX = "FYAN-PROBE-"


class ProbeConstant(BaseModel):
    name: str
    module: str = ""
    value_hash: str = ""


class ProbeRecord(BaseModel):
    """What Lean reports about one root declaration."""

    name: str
    found: bool
    kind: str | None = None
    module: str | None = None
    level_params: list[str] = Field(default_factory=list)
    type_hash: str | None = None
    value_hash: str | None = None
    type_constants: list[ProbeConstant] = Field(default_factory=list)
    axioms: list[str] = Field(default_factory=list)


class ProbeResult(BaseModel):
    """Records per root name, plus why the probe could not give evidence (``problem``)."""

    records: dict[str, ProbeRecord] = Field(default_factory=dict)
    problem: str | None = None
    ignored_lines: int = Field(default=0, description="Probe-like lines without this run's nonce")
    process: ProcessResult | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def new_nonce() -> str:
    """A fresh random nonce (128 bits) for one probe run."""
    return NONCE_PREFIX + secrets.token_hex(16)


_LEAN_NAME = re.compile(r"^(?:[^\s\"\\]+)$")


def render_probe(imports: list[str], roots: list[str], nonce: str) -> str:
    """The probe's Lean source for ``roots`` (full names) after ``imports`` (module names)."""
    for r in roots:
        if not _LEAN_NAME.match(r):
            raise ValueError(f"not a Lean declaration name: {r!r}")
    template = Template((data_dir("lake-template") / "Probe.lean").read_text(encoding="utf-8"))
    return template.substitute(
        imports="\n".join(f"import {m}" for m in imports),
        probes="\n".join(f'#fyan_probe "{nonce}" {r}' for r in roots),
    )


def parse_probe_output(text: str, nonce: str, roots: list[str]) -> ProbeResult:
    """Extract this nonce's records for ``roots`` from ``lean --json`` (or plain) output.

    Fails closed (``problem`` set) when a root has no record, a record does not validate, or a
    root has two different records.
    """
    result = ProbeResult()
    messages = [d.text for d in parse_lean_json(text).diagnostics]
    lines = messages if messages else text.splitlines()
    for message in lines:
        for line in message.splitlines():
            line = line.strip()
            if not line.startswith(nonce + " "):
                if NONCE_PREFIX in line:
                    result.ignored_lines += 1
                continue
            try:
                record = ProbeRecord(**json.loads(line[len(nonce) + 1 :]))
            except (json.JSONDecodeError, ValidationError, TypeError) as e:
                result.problem = f"probe printed a malformed record: {e}"
                return result
            if record.name not in roots:
                continue
            previous = result.records.get(record.name)
            if previous is not None and previous != record:
                result.problem = f"probe printed two different records for {record.name}"
                return result
            result.records[record.name] = record
    missing = [r for r in roots if r not in result.records]
    if missing:
        result.problem = f"probe printed no record for {', '.join(missing)}"
    return result


def run_probe(
    toolchain: Toolchain, workspace: Path, imports: list[str], roots: list[str], config: LeanSection, log_path: Path
) -> ProbeResult:
    """Run the probe for ``roots`` in ``workspace`` (whose modules must be built)."""
    nonce = new_nonce()
    source = render_probe(imports, roots, nonce)
    proc = run_process(
        [str(toolchain.lake), "env", "lean", "--json", "--stdin"],
        cwd=workspace, timeout_s=config.build_timeout, memory_mb=config.memory_limit_mb,
        sandbox=config.sandbox, writable=[workspace], stdin_text=source, log_path=log_path,
    )
    if proc.exit_code is None:
        return ProbeResult(problem=f"probe did not run: {proc.note}", process=proc)
    result = parse_probe_output(proc.output, nonce, roots)
    result.process = proc
    if result.problem is None and proc.exit_code != 0:
        result.problem = f"probe exited with {proc.exit_code}"
    if result.problem and not proc.output.strip():
        result.problem = f"probe printed nothing (exit {proc.exit_code})"
    return result
