"""What crosses the boundary between the head and the node that runs a task.

A task is one stage attempt (the agent's calls and that attempt's Lean builds) or one gate
build. Both backends, ``local`` and ``ray``, move exactly these bytes: ``encode_spec`` on the
head, ``decode_spec`` where the task runs, ``encode_result`` there and ``decode_result`` back on
the head. Encoding is MessagePack (file contents stay binary) with a version number; decoding
validates with pydantic, so a malformed or foreign payload is an error with a reason, never a
half-read task.

``TaskSpec`` — the inputs: the run (id, unit, stage, attempt folder), the head's session token
(the fencing token the result must carry back), the configuration snapshot, the unit's own rows
and files (``UnitData``), the project's Lake package files, a few extra files (guidance, a
shadow set, earlier audit attempts) and references to content the node fetches once and keeps:
the upstream units' interfaces (``UnitData`` by ``interface_key``), the prompts bundle and the
replay cassette.

``TaskResult`` — what comes back: the attempt folder's files, the exit status, an error with
its kind (``agent`` or ``environment``), the model calls made (accounting), lines a recording
provider appended to the cassette, evidence Fyan's own code produced on the node (the gate
report), the digest of the inputs as the node saw them, and timings (seconds).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import msgpack
from pydantic import BaseModel, Field, ValidationError

from fyan.state.models import ModelCall  # noqa: F401  (re-exported: what a worker hands back per model call)

#: Bumped whenever the payload's shape changes: a node with another Fyan refuses the task with
#: an environment reason instead of misreading it.
PAYLOAD_VERSION = 1

TaskKind = Literal["attempt", "gate"]


class PayloadError(Exception):
    """A payload that cannot be read: not MessagePack, another version, or invalid fields."""


class UnitData(BaseModel):
    """One unit as a task needs it: its state rows (table → rows, as ``Store.export_unit``
    gives them) and files (project-relative path → bytes). For an upstream unit this is its
    *interface* at ``version`` (the id of the gate run that completed it): its statement, its
    proof module, its frozen declarations, and ``deps``, the interfaces of its own direct
    dependencies (unit, version), which the node resolves recursively."""

    unit: str
    version: int = Field(description="id of the completing gate run; 0 for the unit under work; negative for a unit "
                         "complete by adoption (Store.adoption_version)")
    rows: dict[str, list[dict[str, Any]]]
    files: dict[str, bytes]
    deps: list[tuple[str, int]] = Field(default_factory=list)


def interface_key(project_id: str, unit: str, version: int) -> str:
    """Key of an upstream unit's interface in the head's blob store."""
    return f"unit:{project_id}:{unit}:{version}"


class TaskSpec(BaseModel):
    version: int = PAYLOAD_VERSION
    kind: TaskKind
    head: str = Field(description="the head's session token; the result must carry it back")
    project_id: str
    run: dict[str, Any] = Field(description="the StageRun, as plain data")
    config: dict[str, Any] = Field(description="fyan.config.config_snapshot of the head")
    unit: UnitData
    upstream: list[tuple[str, int]] = Field(description="direct dependencies' interfaces (unit, version)")
    package: dict[str, bytes] = Field(description="lean/lakefile.toml, lean/lean-toolchain, lean/lake-manifest.json")
    extra: dict[str, bytes] = Field(default_factory=dict, description="guidance, shadow set, earlier audit files")
    meta: dict[str, str] = Field(default_factory=dict)
    prompts: str = Field(description="blob key of the prompts bundle")
    cassette: str | None = Field(default=None, description="blob key of the replay cassette, when a stage replays")
    declarations: str | None = Field(default=None, description="blob key of the [prover] declarations list, "
                                     "when one is configured (the Formalizer's search_declarations)")
    inputs_digest: str


class TaskResult(BaseModel):
    version: int = PAYLOAD_VERSION
    head: str
    run_id: int
    unit: str
    stage: str
    node: str = Field(description="the node that ran the task (Ray node id, or 'local')")
    files: dict[str, bytes] = Field(default_factory=dict, description="attempt folder, relative paths")
    exit_status: int = 0
    error: str | None = None
    error_kind: Literal["agent", "environment"] | None = None
    error_type: str | None = Field(default=None, description="class name of the exception, for outage handling")
    calls: list[ModelCall] = Field(default_factory=list)
    cassette_append: bytes = b""
    evidence: dict[str, Any] = Field(default_factory=dict)
    inputs_digest: str = ""
    timings: dict[str, float] = Field(default_factory=dict)


def _pack(model: BaseModel) -> bytes:
    return msgpack.packb(model.model_dump(mode="python"), use_bin_type=True)


def _unpack(data: bytes, cls: type[BaseModel], what: str) -> Any:
    try:
        raw = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as e:  # msgpack raises several types for garbage
        raise PayloadError(f"{what} is not a Fyan payload ({type(e).__name__}: {e})") from None
    if not isinstance(raw, dict):
        raise PayloadError(f"{what} is not a Fyan payload (not a map)")
    if raw.get("version") != PAYLOAD_VERSION:
        raise PayloadError(f"{what} has payload version {raw.get('version')!r}, this Fyan reads {PAYLOAD_VERSION}: "
                           "install the same Fyan version on the head and every worker")
    try:
        return cls.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        raise PayloadError(f"{what} is invalid: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def encode_spec(spec: TaskSpec) -> bytes:
    return _pack(spec)


def decode_spec(data: bytes) -> TaskSpec:
    """Raises ``PayloadError``."""
    return _unpack(data, TaskSpec, "the task")


def encode_result(result: TaskResult) -> bytes:
    return _pack(result)


def decode_result(data: bytes) -> TaskResult:
    """Raises ``PayloadError``."""
    return _unpack(data, TaskResult, "the task's result")


def encode_unit(data: UnitData) -> bytes:
    return _pack(data)


def decode_unit(data: bytes) -> UnitData:
    """Raises ``PayloadError``."""
    raw = msgpack.unpackb(data, raw=False, strict_map_key=False) if isinstance(data, bytes) else None
    if not isinstance(raw, dict):
        raise PayloadError("an upstream unit's interface is not a Fyan payload")
    try:
        return UnitData.model_validate(raw)
    except ValidationError as e:
        raise PayloadError(f"an upstream unit's interface is invalid: {e.errors()[0]['msg']}") from None


def inputs_digest(rows: dict[str, list[dict[str, Any]]]) -> str:
    """SHA-256 over what decides a unit's check: its current artifacts (kind, sha256) and its
    active freezes (declaration, signature and type hashes). The head computes it when it hands
    the task out and again when the result comes back; the node computes it from its copy of the
    state, so a stale or mis-copied input is detected."""
    h = hashlib.sha256()
    for a in sorted((r["kind"], r["sha256"]) for r in rows.get("artifacts", [])):
        h.update(f"a\0{a[0]}\0{a[1]}\n".encode())
    for f in sorted((r["decl"], r["signature_hash"], r["type_hash"] or "") for r in rows.get("freezes", [])):
        h.update(f"f\0{f[0]}\0{f[1]}\0{f[2]}\n".encode())
    return h.hexdigest()
