"""Refutations as attempt artifacts: running a review's proposals, the log, the counts, the matches.

A stage attempt that runs counterexample searches keeps, per search, a folder
``refutations/<round>-<n>/`` in its attempt folder: ``program.json`` and ``outcome.json`` (written
by ``fyan.refute.runner``, outside the folders the program may write: ``search/``, ``recheck/``,
``lean/``), the harness's files and logs. ``refutations.json`` (``RefutationLog``) lists them with
the proof version each one was run against (the SHA-256 of the proof text). A frozen statement's
small-instance checks keep ``frozen-refutation/<n>/`` the same way.

``standing`` is the one rule the Reasoner's loop and the reason stage's check share: the executed
refutations that still stand against a proof are those run against this very proof text, and
those whose refuted assertion still appears in it (statement text normalized:
``normalize_statement``). Worthless outcomes never count. ``tally`` counts an attempt folder's
outcomes for ``fyan status`` (through the gateway's event of the finished run).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from fyan.refute.models import RefutationLimits, RefutationOutcome, RefutationProgram, TargetAssertion
from fyan.refute.runner import LeanCheck, run_refutation

#: the attempt's log of the searches it ran
LOG = "refutations.json"
#: the folder of the searches a review proposed, inside the attempt folder
FOLDER = "refutations"
#: the folder of a frozen statement's small-instance check, inside the attempt folder
FROZEN_FOLDER = "frozen-refutation"


def normalize_statement(text: str) -> str:
    """A statement's text for matching: Unicode NFKC, lower case, TeX math delimiters and
    backslashes dropped, every run of white space one space, trailing punctuation removed."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = re.sub(r"\\[\(\)\[\]]|\$", " ", t)
    t = re.sub(r"\s+", " ", t).strip()
    return t.rstrip(" .;:,")


def proof_sha256(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


class RefutationEntry(BaseModel):
    """One search of an attempt: the review ``round`` (1-based; 0 for a frozen statement), the
    SHA-256 of the proof text it was run against, its folder (relative to the attempt folder),
    and the outcome."""

    round: int
    proof_sha256: str = ""
    folder: str
    outcome: RefutationOutcome
    #: the attempt folder it ran in (relative to the project folder), set when a check publishes it
    attempt: str = ""

    @property
    def counts(self) -> bool:
        """An executed, confirmed refutation (the only kind that counts)."""
        return self.outcome.executed and self.outcome.refutes and self.outcome.worthless_reason is None


class RefutationLog(BaseModel):
    """``refutations.json``: every search the attempt ran, in order."""

    entries: list[RefutationEntry] = Field(default_factory=list)

    def refuted(self) -> list[RefutationEntry]:
        return [e for e in self.entries if e.counts]


def read_log(path: Path) -> RefutationLog:
    """The log at ``path`` (an empty one when it is missing); raises ``ValueError`` when it does
    not validate."""
    if not path.is_file():
        return RefutationLog()
    try:
        return RefutationLog.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as e:
        raise ValueError(f"{path.name} does not validate: {e}") from e


def reread(attempt_dir: Path, log: RefutationLog) -> RefutationLog:
    """The log with each outcome read again from its own ``outcome.json`` (written by the runner,
    outside what the program could write) and each program's hash checked against its
    ``program.json``: an entry whose files are missing, do not validate or disagree is dropped."""
    kept = []
    for e in log.entries:
        folder = (attempt_dir / e.folder).resolve()
        if attempt_dir.resolve() not in folder.parents:
            continue
        try:
            outcome = RefutationOutcome.model_validate_json((folder / "outcome.json").read_text(encoding="utf-8"))
            program = RefutationProgram.model_validate_json((folder / "program.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if program.sha256() != outcome.program_sha256 or program.target != outcome.target:
            continue
        kept.append(e.model_copy(update={"outcome": outcome}))
    return RefutationLog(entries=kept)


def standing(log: RefutationLog, proof_text: str) -> list[RefutationEntry]:
    """The executed refutations that still stand against ``proof_text`` (module docstring), one
    per refuted assertion (by id and normalized text)."""
    sha = proof_sha256(proof_text)
    body = normalize_statement(proof_text)
    seen: set[tuple[str, str]] = set()
    out = []
    for e in log.refuted():
        text = normalize_statement(e.outcome.target.text)
        if e.proof_sha256 != sha and not (len(text) >= 12 and text in body):
            continue
        key = (e.outcome.target.id, text)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def describe(e: RefutationEntry) -> str:
    """One line naming a refutation: the assertion, the witness, where its evidence is."""
    o = e.outcome
    where = f"{e.attempt}/{e.folder}" if e.attempt else e.folder
    return f"{o.target.id} (\"{o.target.text[:160]}\") is false at {o.witness} — executed {o.language} search, " \
           f"evidence in {where}/"


def run_proposals(programs: list[RefutationProgram], attempt_dir: Path, round_: int, proof_text: str,
                  limits: RefutationLimits, *, hidden: tuple[Path, ...] = (), lean: LeanCheck | None = None,
                  log: RefutationLog | None = None) -> RefutationLog:
    """Run each of ``programs`` (a review's proposals) confined in
    ``<attempt>/refutations/<round>-<n>/`` and append them to ``log`` (read from the attempt's
    ``refutations.json`` when None), which is written back and returned."""
    log = log if log is not None else read_log(attempt_dir / LOG)
    sha = proof_sha256(proof_text)
    for n, program in enumerate(programs, start=1):
        folder = f"{FOLDER}/{round_}-{n}"
        outcome = run_refutation(program, workdir=attempt_dir / folder, limits=limits, lean=lean, hidden=hidden)
        log.entries.append(RefutationEntry(round=round_, proof_sha256=sha, folder=folder, outcome=outcome))
    write_log(attempt_dir, log)
    return log


def write_log(attempt_dir: Path, log: RefutationLog) -> None:
    (attempt_dir / LOG).write_text(log.model_dump_json(indent=2) + "\n", encoding="utf-8")


def tally(attempt_dir: Path) -> dict[str, int] | None:
    """Counts of the outcomes kept in an attempt folder (``refutations/*/outcome.json`` and
    ``frozen-refutation/*/outcome.json``): ``executed`` (ran to a verdict), ``refuting`` (executed
    and confirmed), ``worthless``; None when the attempt ran no search."""
    paths = sorted((attempt_dir / FOLDER).glob("*/outcome.json")) + sorted((attempt_dir / FROZEN_FOLDER).glob(
        "*/outcome.json"))
    if not paths:
        return None
    counts = {"executed": 0, "refuting": 0, "worthless": 0}
    for p in paths:
        try:
            o = RefutationOutcome.model_validate_json(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            counts["worthless"] += 1
            continue
        if o.worthless_reason is not None or not o.executed:
            counts["worthless"] += 1
        else:
            counts["executed"] += 1
            counts["refuting"] += int(o.refutes)
    return counts


class RefutedAssertion(BaseModel):
    """A plan assertion an executed search refuted (``refuted_assertions``)."""

    target: TargetAssertion
    witness: object = None
    evidence: str = ""


def refuted_assertions(unit_dir: Path) -> list[RefutedAssertion]:
    """The assertions executed searches refuted, from a unit's published ``refutations.json``
    (the reason stage publishes it), each once. A log that does not validate gives none (it
    cannot be evidence)."""
    try:
        log = read_log(unit_dir / LOG)
    except ValueError:
        return []
    out: dict[tuple[str, str], RefutedAssertion] = {}
    for e in log.refuted():
        key = (e.outcome.target.id, normalize_statement(e.outcome.target.text))
        out.setdefault(key, RefutedAssertion(target=e.outcome.target, witness=e.outcome.witness,
                                             evidence=f"{e.attempt}/{e.folder}" if e.attempt else e.folder))
    return list(out.values())
