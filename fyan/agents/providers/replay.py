"""Record/replay of model calls, keyed by ``ModelRequest.key()``.

A cassette is a JSON-lines file; each line holds the key, what the request was for (stage,
unit, model), a ``label`` saying where the response came from (a recorded model reply, or an
authored example response written by people), and the response (text and usage).

``ReplayProvider`` serves responses and fails loudly on a miss, naming the key, stage and unit.
``RecordingProvider`` forwards to a live provider and appends every response to the cassette.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from fyan.agents.providers.base import ModelRequest, ModelResponse, Provider, Usage
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


def load_cassette(path: Path) -> dict[str, CassetteEntry]:
    """Entries of the cassette at ``path`` by key (empty when the file does not exist).

    Raises ``InputError`` naming the line of a malformed entry.
    """
    entries: dict[str, CassetteEntry] = {}
    if not path.is_file():
        return entries
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = CassetteEntry.model_validate_json(line)
        except (ValidationError, ValueError) as e:
            raise InputError(f"{path}:{n}: not a valid cassette entry: {e}".splitlines()[0]) from None
        entries[entry.key] = entry
    return entries


class ReplayProvider(Provider):
    """Serves recorded responses (with the file changes of a recorded command agent)."""

    name = "replay"

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
        entry = self._load().get(key)
        if entry is None:
            where = f"stage {request.stage}" + (f", unit {request.unit}" if request.unit else "")
            where += f", prompt {request.prompt}" if request.prompt else ""
            raise ReplayMissError(
                f"replay cassette {self.cassette} has no response for request {key} ({where}, model {request.model})",
                hint="the prompt or its inputs changed since recording: re-record with "
                'provider = "record" (see README), or rebuild the example with scripts/build_example_cassette.py',
            )
        return ModelResponse(text=entry.text, usage=entry.usage, provider=self.name, model=entry.model,
                             latency_s=0.0, replay=True, key=key, files=entry.files)


class RecordingProvider(Provider):
    name = "record"

    @property
    def edits_files(self) -> bool:  # type: ignore[override]
        return self.inner.edits_files

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
                              files=response.files)
        with self._lock:
            self.cassette.parent.mkdir(parents=True, exist_ok=True)
            with open(self.cassette, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) + "\n")
        return response.model_copy(update={"key": request.key(), "latency_s": response.latency_s or time.monotonic() - start})
