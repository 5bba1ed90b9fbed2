"""Record/replay of model calls, keyed by ``ModelRequest.key()``.

A cassette is a JSON-lines file; each line holds the key, what the request was for (stage,
unit, model), a ``label`` saying where the response came from (a recorded model reply, or an
authored example response written by people), and the response (text and usage).

``ReplayProvider`` serves responses and fails loudly on a miss. The message names the cassette
and the stage and prompt — the same words for every unit that misses at that stage, so
``fyan status`` groups them under one cause (the unit is the row it is reported on; the request
key is in the exception's ``key``, the attempt's ``calls/*.request.json`` and the log). A
cassette file that does not exist is said to be missing, not to lack a response.
``RecordingProvider`` forwards to a live provider and appends every response to the cassette.

**Tool conversations.** Each turn of a tool loop is one request (its key covers the tools, the
rounds so far and Fyan's tool results: ``ModelRequest.key``), so each is one entry, which also
keeps the model's ``tool_calls``, the conversation it belongs to (``thread``: the key of its
first turn), its round number (``turn``) and the tool results it was sent (``answers``: Fyan's
answers to the previous turn's calls). Replaying runs the tools again: when a turn misses and
the cassette has the same conversation at the same round, the replay names the tool whose
result differs from the recorded one (``ToolResultMismatch``, a ``ReplayMissError``) instead of
a bare miss — a replayed tool conversation is deterministic or it stops, never silently
something else.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from fyan.agents.providers.base import ModelRequest, ModelResponse, Provider, ToolAnswer, ToolCall, Usage
from fyan.errors import InputError, ReplayMissError


class CassetteEntry(BaseModel):
    key: str
    stage: str
    unit: str | None = None
    model: str
    label: str
    prompt: str = ""
    text: str
    usage: Usage = Usage()
    files: dict[str, str | None] = {}
    tool_calls: list[ToolCall] = []
    thread: str | None = None
    turn: int = 0
    answers: list[ToolAnswer] = []


def load_cassette(path: Path) -> dict[str, CassetteEntry]:
    """Entries of the cassette at ``path`` by key (empty when the file does not exist).

    Raises ``InputError`` naming the line of a malformed entry.
    """
    entries: dict[str, CassetteEntry] = {}
    if not path.is_file():
        return entries
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read the replay cassette: {e}",
                         hint="re-record it (provider = \"record\"), or restore it from version control") from None
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = CassetteEntry.model_validate_json(line)
        except ValidationError as e:
            raise InputError(f"{path}:{n}: not a valid cassette entry: {_entry_errors(e)}",
                             hint="each line is one JSON object with key, stage, model, label and text; "
                             "fix or delete the line, or re-record the cassette") from None
        entries[entry.key] = entry
    return entries


def _entry_errors(e: ValidationError) -> str:
    """What is wrong with one cassette line, in words (field and problem), at most three."""
    parts = []
    for err in e.errors()[:3]:
        where = ".".join(str(x) for x in err["loc"])
        if err["type"] == "json_invalid":
            parts.append(f"not JSON ({err.get('ctx', {}).get('error', err['msg'])})")
        elif err["type"] == "missing":
            parts.append(f"field {where!r} is missing")
        elif where:
            parts.append(f"field {where!r}: {err['msg']}")
        else:
            parts.append(err["msg"])
    more = len(e.errors()) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


class ReplayProvider(Provider):
    """Serves recorded responses (with the file changes of a recorded command agent)."""

    name = "replay"
    can_use_tools = True

    def __init__(self, cassette: Path) -> None:
        self.cassette = cassette
        self._entries: dict[str, CassetteEntry] | None = None
        self._lock = threading.Lock()

    def _load(self) -> dict[str, CassetteEntry]:
        with self._lock:
            if self._entries is None:
                self._entries = load_cassette(self.cassette)
            return self._entries

    def complete(self, request: ModelRequest) -> ModelResponse:
        key = request.key()
        if not self.cassette.is_file():
            raise ReplayMissError(
                f"the replay cassette {self.cassette} does not exist",
                hint='configure a model (provider = "anthropic", "openai", ... in fyan.toml), or record one with '
                'provider = "record"', key=key,
            )
        entry = self._load().get(key)
        if entry is None and request.tools and request.turns:
            self._tool_mismatch(request, key)
        if entry is None:
            what = f"the {request.stage} stage" + (f" (prompt {request.prompt})" if request.prompt else "")
            raise ReplayMissError(
                f"the replay cassette {self.cassette} has no response for {what}, model {request.model}",
                hint="the prompt or its inputs changed since recording (the request key is in the attempt's "
                'calls/*.request.json): re-record with provider = "record" in fyan.toml [agents.default], or '
                "configure a live model there", key=key,
            )
        return ModelResponse(text=entry.text, usage=entry.usage, provider=self.name, model=entry.model,
                             latency_s=0.0, replay=True, key=key, files=entry.files, tool_calls=entry.tool_calls)

    def _tool_mismatch(self, request: ModelRequest, key: str) -> None:
        """Raise ``ToolResultMismatch`` when the cassette holds this tool conversation at this
        round but was sent other tool results (module docstring); return otherwise."""
        thread, turn = request.thread(), len(request.turns)
        recorded = [e for e in self._load().values() if e.thread == thread and e.turn == turn]
        last = request.turns[-1]
        for e in recorded:
            for i, (was, now) in enumerate(zip(e.answers, last.answers)):
                if was.content != now.content or was.is_error != now.is_error:
                    call = last.calls[i] if i < len(last.calls) else None
                    raise ToolResultMismatch(
                        f"replaying {request.stage} ({request.prompt or 'reply'}) of {request.unit or 'the project'}: "
                        f"the result of tool {call.name if call else '?'} in round {turn} differs from the recorded "
                        f"one where they part (recorded: {_excerpt(was.content, now.content)}; now: "
                        f"{_excerpt(now.content, was.content)})",
                        hint="the tool answered otherwise on this machine (another toolchain, declaration index or "
                        "library): a replay is only valid where the tools answer as they did when it was recorded; "
                        're-record with provider = "record", or configure a live model', key=key)


class ToolResultMismatch(ReplayMissError):
    """A replayed tool conversation was sent a tool result other than the recorded one."""


def _excerpt(text: str, other: str, n: int = 120) -> str:
    """``text`` around its first difference from ``other``: 30 characters before it, ``n`` from it."""
    at = next((i for i, (a, b) in enumerate(zip(text, other)) if a != b), min(len(text), len(other)))
    start = max(0, at - 30)
    return repr(("…" if start else "") + text[start:at + n] + ("…" if at + n < len(text) else ""))


class RecordingProvider(Provider):
    name = "record"

    @property
    def supports_tools(self) -> bool:  # type: ignore[override]
        return self.inner.supports_tools

    @property
    def can_use_tools(self) -> bool:  # type: ignore[override]
        return self.inner.can_use_tools

    @property
    def edits_files(self) -> bool:  # type: ignore[override]
        return self.inner.edits_files

    @property
    def breaker(self):
        return self.inner.breaker

    def __init__(self, inner: Provider, cassette: Path, label: str = "recorded model response") -> None:
        self.inner = inner
        self.cassette = cassette
        self.label = label
        self._lock = threading.Lock()

    def complete(self, request: ModelRequest) -> ModelResponse:
        start = time.monotonic()
        response = self.inner.complete(request)
        entry = CassetteEntry(key=request.key(), stage=request.stage, unit=request.unit, prompt=request.prompt,
                              model=request.model, label=self.label, text=response.text, usage=response.usage,
                              files=response.files, tool_calls=response.tool_calls)
        if request.tools:
            entry.thread, entry.turn = request.thread(), len(request.turns)
            entry.answers = request.turns[-1].answers if request.turns else []
        with self._lock:
            self.cassette.parent.mkdir(parents=True, exist_ok=True)
            with open(self.cassette, "a", encoding="utf-8") as fh:
                data = entry.model_dump(mode="json")
                if not request.tools:  # a plain call's entry is what it always was
                    for k in ("tool_calls", "thread", "turn", "answers"):
                        data.pop(k)
                fh.write(json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n")
        return response.model_copy(update={"key": request.key(), "latency_s": response.latency_s or time.monotonic() - start})
