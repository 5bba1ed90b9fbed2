"""Pydantic models of everything the state store holds.

Timestamps are POSIX seconds (float, UTC). Paths are relative to the project folder.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from fyan.stages import stage_specs


class _StageBase(StrEnum):
    """Behaviour of ``Stage``; its members come from the stage registry (``fyan.stages``)."""

    @property
    def next(self) -> Stage | None:
        order = list(type(self))
        i = order.index(self)
        return order[i + 1] if i + 1 < len(order) else None  # type: ignore[return-value]


if TYPE_CHECKING:  # what a type checker sees: the built-in stages (fyan/stages/*.py)
    class Stage(_StageBase):
        REASON = "reason"
        PLAN = "plan"
        AUDIT = "audit"
        PROVE = "prove"
        GATE = "gate"
else:
    #: The per-unit stages, in the order the gateway allows them: one member per ``StageSpec``
    #: of the registry (``Stage.PROVE.value == "prove"``), ordered by ``StageSpec.order``.
    Stage = _StageBase("Stage", [(s.name.upper(), s.name) for s in stage_specs()], module=__name__, qualname="Stage")


class RunStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # the process died while the attempt ran: not a failure


class FailureKind(StrEnum):
    """Why an attempt failed; decides whether another attempt can help."""

    CHECK = "check"  # the stage's deterministic checks refused the artifacts: retry
    AGENT = "agent"  # the provider/agent failed (invalid reply, replay miss): retry
    ENVIRONMENT = "environment"  # e.g. no Lean toolchain: retrying cannot help, block
    #: a frozen statement was refuted on a small instance by an executed check: the document's
    #: statement or its formalization is wrong; blocks until a human gives guidance, then the
    #: unit goes back to the audit (``rewind_to``), never on to the prover
    REFUTED = "refuted"
    #: not a failure: the marker (an interrupted run) recorded when a source change was accepted
    #: (``Gateway.accept_source``): the unit starts over from its first stage
    RESTART = "restart"
    #: not a failure of the proof: the Formalizer's checked verdict (``fyan.replan``: a planned
    #: lemma refuted, or a step too hard) sends the unit back to the Planner for its planned
    #: lemmas only; never charged to the prove stage's budget, bounded by ``[scheduler] max_replans``
    REPLAN = "replan"


class UnitStatus(StrEnum):
    WAITING = "waiting"  # some dependency is not complete yet
    READY = "ready"  # may run its next stage
    RUNNING = "running"
    COMPLETE = "complete"  # the completion gate passed
    BLOCKED = "blocked"  # out of attempts, an environment failure, or a blocked dependency


class UnitRecord(BaseModel):
    id: str = Field(pattern=r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$",
                    description="lowercase letters, digits and '-' (a folder name; never a path)")
    order: int
    kind: str
    label: str | None = None
    title: str | None = None
    module: str
    layer: int
    statements: list[int]
    provenance: str = Field(description="file:first-last line of the first statement")


class DependencyRecord(BaseModel):
    unit: str
    depends_on: str
    origin: str
    in_proof: bool
    evidence: str


class StageRun(BaseModel):
    id: int
    unit: str
    stage: Stage
    attempt: int = Field(description="1 for the first attempt of this stage of this unit")
    status: RunStatus
    started_at: float
    finished_at: float | None = None
    exit_status: int | None = None
    reason: str | None = None
    failure_kind: FailureKind | None = None
    rewind_to: Stage | None = Field(default=None, description="Stage to go back to after a failure")
    attempt_dir: str

    @property
    def duration(self) -> float | None:
        return None if self.finished_at is None else self.finished_at - self.started_at


class ArtifactRecord(BaseModel):
    id: int
    unit: str
    run_id: int | None = Field(description="None for artifacts written at intake (problem.tex)")
    kind: str = Field(description="Path inside units/<unit>/, e.g. proof.md or audit/record.json")
    path: str
    sha256: str
    frozen: bool = False
    created_at: float


class FreezeRecord(BaseModel):
    """A frozen declaration (statement or bridge) with what it was certified against."""

    id: int
    unit: str
    run_id: int
    decl: str
    role: str = Field(description="root | bridge_source | bridge")
    normalized_signature: str
    signature_hash: str
    type_hash: str | None = None
    bound_inputs: dict[str, str] = Field(
        description="input path -> sha256 at freeze time; with a toolchain also `lean:<name>` -> digest of a "
        "local definition the statement uses and `lean:@toolchain` -> the toolchain (fyan.lakepackage.signatures)"
    )
    created_at: float
    active: bool = True


class EventRecord(BaseModel):
    id: int
    ts: float
    kind: str
    unit: str | None = None
    run_id: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class ModelCall(BaseModel):
    """One model call made by an attempt (``Gateway.record_model_call``'s arguments; what a
    worker hands back in ``fyan.executor.payload.TaskResult``). ``tokens_*`` in tokens,
    ``cost`` in US dollars, ``latency_s`` in seconds, ``ts`` POSIX seconds."""

    stage: str
    unit: str | None = None
    provider: str
    model: str
    request_key: str
    tokens_in: int
    tokens_out: int
    cost: float
    latency_s: float
    cache_hit: bool
    replay: bool
    ts: float


class ModelCallRecord(ModelCall):
    """A model call as the store keeps it: with its row id and the stage run it belongs to."""

    id: int
    run_id: int | None


class AdoptionRecord(BaseModel):
    """The adoption decision of one unit (``fyan.adopt.decide``): ``outcome`` adopted (complete
    by adoption), candidate (the existing statement is the candidate statement) or pipeline;
    ``evidence``: the trusted inspector's report (path, SHA-256 of the executable) and, per
    ``\\lean`` name, what it found."""

    unit: str
    outcome: str = Field(description="adopted | candidate | pipeline")
    package: str = Field(description="the adopted Lake package's folder (absolute)")
    reason: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    created_at: float


class PostRun(BaseModel):
    """A post-completion task (``curate``: the Curator; ``review``: the Auditor) for a complete
    unit. Kept apart from ``StageRun`` on purpose: the lifecycle rules never read these rows,
    so no post-completion outcome can make a unit complete or incomplete (only the completion
    gate does)."""

    id: int
    unit: str
    task: str = Field(description="curate | review")
    gate_run_id: int = Field(description="The successful gate run this task follows")
    status: RunStatus
    started_at: float
    finished_at: float | None = None
    reason: str | None = None
    attempt_dir: str


class UnitView(BaseModel):
    """A unit with its computed status (never stored: derived from the runs, see lifecycle)."""

    unit: UnitRecord
    status: UnitStatus
    next_stage: Stage | None
    reason: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    attempts: dict[str, int] = Field(default_factory=dict, description="stage -> attempts so far")
    adopted: bool = Field(default=False, description="complete by adoption of an existing declaration (fyan.adopt), "
                          "not closed by Fyan's gate")
    replans: int = Field(default=0, description="re-plans the Formalizer's checked verdicts caused (fyan.replan), "
                         "since the unit last started over")
