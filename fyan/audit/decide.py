"""The deterministic decision of an audit from its files (no model; docs/design.md says why).

``decide`` takes what the attempt left (``audit/source.json``, ``audit/source_check.json``,
``audit/record.json`` and, for a bridge, ``audit/bridge.lean`` + ``audit/bridge_record.json``)
and the unit's inputs, and recomputes everything: the source extraction's quotations, the
second call's verdict, the candidate tree and slots from ``Statement.lean``, the record's
validity, grade and routing, and — for a grade-1 statement under ``grade1_policy = "bridge"`` —
the audit of S0 (which must reach the threshold itself) and the bridge obligation
``<root>_faithful``. The judge uses the same functions to know when to ask for S0; the
gateway's check (``fyan.gates.stages.check_audit``) re-runs ``decide`` on the files, trusting
nothing the agent computed.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fyan.audit.grading import bridge_eligible, grade_record
from fyan.audit.lean_tree import LeanParseError
from fyan.audit.record import AuditResult, BridgeResult, EvidenceRecord, SourceCheck, SourceExtraction
from fyan.audit.slots import SlotTable, cut_slots
from fyan.audit.source import check_errors, extraction_errors
from fyan.audit.statement import LeanSide, lean_side
from fyan.audit.validator import AuditContext
from fyan.lean import declarations
from fyan.sandbox import safefile
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint

SOURCE = "audit/source.json"
SOURCE_CHECK = "audit/source_check.json"
RECORD = "audit/record.json"
BRIDGE_LEAN = "audit/bridge.lean"
BRIDGE_RECORD = "audit/bridge_record.json"
RESULT = "audit/result.json"
FILES = (SOURCE, SOURCE_CHECK, RECORD, BRIDGE_LEAN, BRIDGE_RECORD)


@dataclass
class AuditInputs:
    """Everything an audit looks at (read by the stage agent, the check and ``fyan audit``)."""

    unit: str
    kind: str
    problem: str  # the statement of problem.tex, provenance block removed
    statement: str  # Statement.lean
    namespace: str
    roots: list[str]
    upstream_signatures: list[str] = field(default_factory=list)  # frozen signatures of upstream units
    upstream_text: str = "(none)"  # upstream statements (problem.tex) for the source extraction
    threshold: int = 2
    policy: str = "repair"
    #: definition nodes redefining what the library has, unjustified (``fyan.audit.library``)
    redefinitions: list[str] = field(default_factory=list)

    def side(self) -> LeanSide:
        return lean_side(self.statement, self.namespace, self.roots, self.upstream_signatures)

    def key(self, side: LeanSide | None = None) -> str:
        """sha256 over what the judge is shown (the source statement and the comment-free roots)
        and the decision's parameters (threshold, policy): a verdict stands for these inputs."""
        text = (side or self.side()).text
        parts = [self.problem.strip(), text, f"threshold={self.threshold}", f"policy={self.policy}"]
        return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()

    def context(self, side: LeanSide) -> AuditContext:
        return AuditContext(root=side.root, threshold=self.threshold, checked_defs=side.checked_defs, policy=self.policy,
                            definitions=side.definitions)


def source_table(ex: SourceExtraction) -> SlotTable:
    return cut_slots(ex.statement, "source", "s")


def faithful_name(root: str) -> str:
    return f"{root.split('.')[-1]}_faithful"


def bridge_form_errors(lean: str, inputs: AuditInputs, side: LeanSide) -> list[str]:
    """Form errors of S0 (``<root>_faithful``): one theorem, that name, body ``by sorry``, lints,
    a readable header."""
    name = faithful_name(side.root)
    decls = declarations.scan(lean)
    errors = []
    if len(decls) != 1:
        return [f"give exactly one declaration, `theorem {name} ... := by sorry` (found {len(decls)})"]
    d = decls[0]
    if d.kind != "theorem" or d.name != name:
        errors.append(f"the declaration must be `theorem {name}`, found `{d.kind} {d.name}`")
    if not d.body_is_sorry:
        errors.append("its body must be `by sorry` (the Formalizer proves it from the root)")
    errors += [str(e) for e in lint_errors(lint(lean))]
    try:
        lean_side(lean, "", [d.name or name], inputs.upstream_signatures, prefix="b")
    except (LeanParseError, KeyError) as e:
        errors.append(f"the statement cannot be read: {e}")
    return errors


@dataclass
class Decision:
    result: AuditResult
    side: LeanSide | None = None
    source: SlotTable | None = None
    bridge_side: LeanSide | None = None


def _reject(inputs: AuditInputs, root: str, errors: list[str], key: str = "") -> Decision:
    return Decision(AuditResult(valid=False, errors=errors, threshold=inputs.threshold, routing="reject", root=root,
                                inputs={"key": key} if key else {}))


def decide(inputs: AuditInputs, files: dict[str, bytes]) -> Decision:
    """The verdict on an attempt's audit files (module docstring). Never raises on bad files:
    they give a ``reject`` result naming the problem."""
    try:
        side = inputs.side()
    except (LeanParseError, KeyError) as e:
        return _reject(inputs, inputs.roots[0] if inputs.roots else "?", [f"the Lean statement cannot be read: {e}"])
    key = inputs.key(side)
    refused = getattr(files, "refused", None)
    if refused:
        return _reject(inputs, side.root, list(refused), key)

    def load(name: str, model):
        data = files.get(name)
        if data is None:
            raise ValueError(f"{name} is missing")
        try:
            return model.model_validate_json(data)
        except (ValidationError, ValueError) as e:
            raise ValueError(f"{name} does not validate: {str(e).splitlines()[0]}") from None

    try:
        extraction = load(SOURCE, SourceExtraction)
        check = load(SOURCE_CHECK, SourceCheck)
        record = load(RECORD, EvidenceRecord)
    except ValueError as e:
        return _reject(inputs, side.root, [str(e)], key)
    src = source_table(extraction)
    problems = extraction_errors(extraction, inputs.problem) + check_errors(check, src.tree)
    if problems:
        return _reject(inputs, side.root, ["source extraction: " + p for p in problems], key)
    if check.verdict != "faithful":
        return _reject(inputs, side.root, ["the independent check found the source extraction unfaithful: "
                                           + "; ".join(f"{o.node}: {o.problem}" for o in check.objections)], key)
    ctx = inputs.context(side)
    result = grade_record(record, src, side.slots, ctx)
    result.inputs = {"key": key}
    decision = Decision(result, side, src)
    if inputs.redefinitions and result.valid:  # a finding to justify before anything is frozen
        result.routing = "repair"
        result.repairs[:0] = inputs.redefinitions
        return decision
    if not bridge_eligible(result, ctx):
        return decision
    if any(d.kind != "theorem" for d in side.decls.values()):
        result.repairs.insert(0, "bridge obligations apply to theorems; a definition must match the source itself")
        return decision
    if BRIDGE_LEAN not in files or BRIDGE_RECORD not in files:
        result.repairs.insert(0, "grade1_policy is bridge but no source-facing statement S0 was given")
        return decision
    lean = files[BRIDGE_LEAN].decode("utf-8")
    errors = bridge_form_errors(lean, inputs, side)
    name = f"{inputs.namespace}.{faithful_name(side.root)}" if inputs.namespace else faithful_name(side.root)
    if errors:
        result.repairs.insert(0, "bridge S0 unusable: " + "; ".join(errors))
        return decision
    s0 = lean_side(lean, "", [faithful_name(side.root)], inputs.upstream_signatures, prefix="b")
    try:
        s0_record = load(BRIDGE_RECORD, EvidenceRecord)
    except ValueError as e:
        result.repairs.insert(0, f"bridge S0: {e}")
        return decision
    s0_ctx = AuditContext(root=s0.root, threshold=inputs.threshold, checked_defs=side.checked_defs, policy="repair",
                           definitions=side.definitions)
    s0_result = grade_record(s0_record, src, s0.slots, s0_ctx)
    result.bridge = BridgeResult(name=name, lean=lean.strip(), result=s0_result)
    decision.bridge_side = s0
    if s0_result.valid and s0_result.routing == "freeze":
        result.routing = "bridge"
    else:
        why = "invalid S0 record: " + "; ".join(s0_result.errors[:3]) if not s0_result.valid else \
            f"S0 graded {s0_result.grade} < {inputs.threshold}: " + " | ".join(s0_result.repairs)
        result.repairs.insert(0, f"the bridge statement {name} did not pass its own audit ({why})")
    return decision


def prior_verdict(attempt_dirs: list[Path], key: str) -> tuple[AuditResult, Path] | None:
    """The latest earlier *valid* verdict below the threshold on the same inputs ``key`` (from
    the ``audit/result.json`` each audit attempt keeps), with its attempt folder. Such a
    verdict stands: a valid unfavourable record is never resampled."""
    for folder in reversed(attempt_dirs):
        path = folder / RESULT
        if not safefile.is_regular(path):
            continue
        try:
            result = AuditResult.model_validate_json(safefile.read_text(path))
        except (ValueError, OSError):
            continue
        if result.valid and result.inputs.get("key") == key and result.routing == "repair":
            return result, folder
    return None


class AuditFiles(dict):
    """The audit files read from a folder (name → bytes), with ``refused``: one message per file
    that is there but was not read (a symbolic link, a FIFO, a device, a folder, or larger than
    the size cap of ``fyan.sandbox.safefile``). ``decide`` rejects an attempt with refused files."""

    def __init__(self, *args, refused: list[str] | None = None, **kw) -> None:
        super().__init__(*args, **kw)
        self.refused: list[str] = list(refused or [])


def read_files(folder: Path) -> AuditFiles:
    """The audit files present in ``folder`` (an attempt folder or ``units/<unit>``), read through
    ``fyan.sandbox.safefile``: a model-driven process may have left a link to a file outside the
    workspace, a FIFO or an enormous file under an audit file's name; such a file is not read
    and is named in ``refused`` (the audit then fails closed with that message)."""
    out = AuditFiles()
    for name in FILES:
        path = folder / name
        if not os.path.lexists(path):
            continue
        try:
            out[name] = safefile.read_bytes(path)
        except OSError as e:
            out.refused.append(f"{name} not read: {e}")
    return out


def earlier_verdicts(rows: dict[str, Any], run: Any, root: Path) -> dict[str, bytes]:
    """The files of the unit's earlier audit attempts (the judge reuses a valid earlier verdict
    on the same inputs): path relative to the project -> bytes. These are agent-written files,
    read without following a link. The audit stage's input builder (``SPEC.inputs`` in
    ``fyan.stages.audit``), declared beside the files it names."""
    from fyan.stages.audit import SPEC

    extra: dict[str, bytes] = {}
    for r in rows["stage_runs"]:
        if r["stage"] == SPEC.name and r["id"] != run.id:
            for name in (*FILES, RESULT):
                p = root / r["attempt_dir"] / name
                if safefile.is_regular(p):
                    extra[f"{r['attempt_dir']}/{name}"] = safefile.read_bytes(p)
    return extra
