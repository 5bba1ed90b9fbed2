"""The probe: evidence about declarations taken from the *compiled environment*.

After a unit's module is built, the gate renders ``lake-template/Probe.lean`` (importing that
module, never part of the candidate's files) and runs it with ``lake env lean --json --stdin``,
so the probe text and its nonce are never on disk where candidate code could read them. The
probe logs one information message ``<nonce> <json>`` per requested declaration (DESIGN.md
§3): kind, module, level parameters, the structure of its elaborated type (hashed here with
SHA-256), the constants the type uses, the local definitions the statement depends on, and
the transitive axioms from Lean's ``collectAxioms``.

Only evidence that cannot be forged counts (``parse_probe_output``): a ``lean --json``
message whose text starts with this run's nonce, at the line of the ``#fyan_probe`` command
for that declaration. Anything else carrying a probe nonce — another nonce, plain text on
stdout (a candidate's import-time code), a message at another position — is counted in
``ignored_lines`` and never read; text carrying *this* nonce outside Lean's messages makes the
whole output untrustworthy (``problem``). A declaration missing from the environment
(``#exit``, a renamed declaration, code in a comment) has ``found: false``.

API (shared with SA-Pass): ``render_probe`` → ``run_probe`` → ``ProbeResult`` of
``ProbeRecord``; ``parse_probe_output`` for recorded output.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from pathlib import Path
from string import Template
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from fyan.config import LeanSection
from fyan.lean.diagnostics import parse_lean_json
from fyan.lean.lake import lake_env
from fyan.lean.runner import ProcessResult
from fyan.lean.toolchain import Toolchain
from fyan.resources import data_dir

NONCE_PREFIX = "FYAN-PROBE-"
#: ``fileName`` Lean reports for a file read with ``--stdin``.
STDIN_FILE = "<stdin>"


def digest(text: str) -> str:
    """``sha256:<hex>`` of ``text`` (UTF-8): how elaborated terms are compared."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class ProbeConstant(BaseModel):
    """A constant the root's type uses: its module and Lean's ``Expr.hash`` of its value."""

    name: str
    module: str = ""
    value_hash: str = ""


class LocalConstant(BaseModel):
    """A local definition (module under the project's library) the statement depends on.
    ``digest`` is SHA-256 of what it means (its type, and its value for a definition)."""

    name: str
    module: str = ""
    kind: str = ""
    digest: str

    @model_validator(mode="before")
    @classmethod
    def _digest(cls, data: Any) -> Any:
        if isinstance(data, dict) and "digest" not in data and "meaning" in data:
            meaning = data["meaning"]
            text = "\n:=\n".join(meaning) if isinstance(meaning, list) else str(meaning)
            data = {**{k: v for k, v in data.items() if k != "meaning"}, "digest": digest(text)}
        return data


class ProbeRecord(BaseModel):
    """What Lean reports about one declaration.

    ``type_hash`` is ``sha256:`` of the probe's ``type_repr`` (the elaborated type's full
    structure); ``statement_hash`` adds the value for definitions (whose body is part of the
    statement) and the constructors' types for inductive types. Recorded outputs may give ``type_hash`` directly instead of ``type_repr``.
    """

    name: str
    found: bool
    kind: str | None = None
    module: str | None = None
    level_params: list[str] = Field(default_factory=list)
    type_hash: str | None = None
    statement_hash: str | None = None
    type_expr_hash: str | None = None
    value_hash: str | None = None
    type_constants: list[ProbeConstant] = Field(default_factory=list)
    local_constants: list[LocalConstant] = Field(default_factory=list)
    conclusion_true: bool | None = None
    axioms: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _hashes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        type_repr = data.pop("type_repr", None)
        value_repr = data.pop("value_repr", None)
        if type_repr is not None and data.get("type_hash") is None:
            data["type_hash"] = digest(str(type_repr))
        if isinstance(value_repr, list):  # an inductive type: its constructors' types
            value_repr = "\n".join(map(str, value_repr))
        if data.get("statement_hash") is None and data.get("type_hash") is not None:
            data["statement_hash"] = (digest(f"{type_repr}\n:=\n{value_repr}")
                                      if type_repr is not None and value_repr is not None else data["type_hash"])
        return data

    @property
    def local_digests(self) -> dict[str, str]:
        return {c.name: c.digest for c in self.local_constants}


class ProbeResult(BaseModel):
    """Records per declaration name, plus why the probe could not give evidence (``problem``)."""

    records: dict[str, ProbeRecord] = Field(default_factory=dict)
    problem: str | None = None
    ignored_lines: int = Field(default=0, description="Probe-like text not counted (other nonce, position or channel)")
    process: ProcessResult | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def new_nonce() -> str:
    """A fresh random nonce (128 bits) for one probe run."""
    return NONCE_PREFIX + secrets.token_hex(16)


_LEAN_NAME = re.compile(r"^(?:[^\s\"\\]+)$")
_PROBE_CMD = re.compile(r'^#fyan_probe "(?P<nonce>[^"]*)" "(?P<prefix>[^"]*)" (?P<name>\S+)\s*$')


def render_probe(imports: list[str], roots: list[str], nonce: str, local_prefix: str = "") -> str:
    """The probe's Lean source for ``roots`` (full names) after ``imports`` (module names).
    ``local_prefix``: the project's library (constants of modules under it are "local").
    Raises ``ValueError`` for a name that cannot be written into the probe."""
    for r in [*roots, *imports]:
        if not _LEAN_NAME.match(r):
            raise ValueError(f"not a Lean name: {r!r}")
    if local_prefix and not _LEAN_NAME.match(local_prefix):
        raise ValueError(f"not a Lean name: {local_prefix!r}")
    template = Template((data_dir("lake-template") / "Probe.lean").read_text(encoding="utf-8"))
    return template.substitute(
        imports="\n".join(f"import {m}" for m in imports),
        probes="\n".join(f'#fyan_probe "{nonce}" "{local_prefix}" {r}' for r in roots),
    )


def probe_lines(source: str) -> dict[str, int]:
    """Declaration name → 1-based line of its ``#fyan_probe`` command in ``source``."""
    lines: dict[str, int] = {}
    for n, line in enumerate(source.splitlines(), start=1):
        m = _PROBE_CMD.match(line)
        if m:
            lines.setdefault(m.group("name"), n)
    return lines


def parse_probe_output(text: str, nonce: str, roots: list[str], lines: dict[str, int] | None = None) -> ProbeResult:
    """Extract this nonce's records for ``roots`` from ``lean --json`` output.

    ``lines`` (from ``probe_lines``): when given, a record counts only at the line of its own
    ``#fyan_probe`` command. Fails closed (``problem`` set) when a root has no record, a record
    does not validate, a root has two different records, or this nonce appears outside Lean's
    JSON messages.
    """
    result = ProbeResult()
    parsed = parse_lean_json(text)
    for raw in parsed.unrecognized:
        if nonce in raw:
            result.problem = ("probe output carries this run's nonce outside Lean's messages "
                              "(printed by other code in the probe process): evidence rejected")
            return result
        if NONCE_PREFIX in raw:
            result.ignored_lines += 1
    for d in parsed.diagnostics:
        for line in d.text.splitlines():
            line = line.strip()
            if not line.startswith(nonce + " "):
                if NONCE_PREFIX in line:
                    result.ignored_lines += 1
                continue
            if d.severity != "info" or (d.file not in (None, STDIN_FILE)):
                result.ignored_lines += 1
                continue
            try:
                record = ProbeRecord(**json.loads(line[len(nonce) + 1 :]))
            except (json.JSONDecodeError, ValidationError, TypeError) as e:
                result.problem = f"probe printed a malformed record: {str(e).splitlines()[0]}"
                return result
            if record.name not in roots:
                result.ignored_lines += 1
                continue
            if lines is not None and lines.get(record.name) != d.line:
                result.ignored_lines += 1
                continue
            previous = result.records.get(record.name)
            if previous is not None and previous != record:
                result.problem = f"probe printed two different records for {record.name}"
                return result
            result.records[record.name] = record
    missing = [r for r in roots if r not in result.records]
    if missing:
        result.problem = f"probe printed no record for {', '.join(missing)}"
        if result.ignored_lines:
            result.problem += f" ({result.ignored_lines} probe-like line(s) with another nonce or position were ignored)"
    return result


def run_probe(
    toolchain: Toolchain, workspace: Path, imports: list[str], roots: list[str], config: LeanSection, log_path: Path,
    local_prefix: str = "",
) -> ProbeResult:
    """Run the probe for ``roots`` in ``workspace`` (whose modules must be built), with
    ``lake env lean --json --stdin`` under the build limits and sandbox. The command, output and
    exit status go to ``log_path`` (and ``<log_path>.json``). Never raises: a probe that cannot
    run, crashes, times out, prints nothing or prints no valid record has ``problem`` set."""
    nonce = new_nonce()
    source = render_probe(imports, roots, nonce, local_prefix)
    proc = lake_env(toolchain, workspace, ["lean", "--json", "--stdin"], config, log_path.parent,
                    log_path.name.removesuffix(".log"), stdin_text=source)
    if proc.exit_code is None:
        return ProbeResult(problem=f"probe did not finish: {proc.describe()}", process=proc)
    if not proc.output.strip():
        return ProbeResult(problem=f"probe printed nothing ({proc.describe()})", process=proc)
    result = parse_probe_output(proc.output, nonce, roots, probe_lines(source))
    result.process = proc
    if proc.exit_code != 0:
        errors = [d for d in parse_lean_json(proc.output).diagnostics if d.severity == "error"]
        detail = f"; first error: line {errors[0].line}: {errors[0].text.splitlines()[0]}" if errors else ""
        result.problem = f"probe failed ({proc.describe()}){detail}" + (f"; {result.problem}" if result.problem else "")
    return result
