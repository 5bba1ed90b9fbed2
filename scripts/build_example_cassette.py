"""Rebuild the example project's replay cassette from its authored responses.

    python scripts/build_example_cassette.py [projects/taste-number-theory]

The example's responses are authored by people (``replay/authored/<unit>/<stage>.*``), but
replay is keyed by the hash of each request, and requests depend on the prompts and on
upstream artifacts. This script runs the whole pipeline on a scratch copy of the project with
a provider that serves the authored file for each (unit, stage), records every request/response
pair into ``replay/cassette.jsonl`` (labelled as authored), and checks that every unit reached
the end. It uses the toolchain test double (``tests/fakes/fake_lake.py``) so that downstream
units are reached without a Lean installation; nothing the double prints is recorded.
Prints the number of entries written.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fyan.agents.providers.base import ModelRequest, ModelResponse, Provider, Usage  # noqa: E402
from fyan.agents.providers.replay import RecordingProvider  # noqa: E402
from fyan.errors import FyanError  # noqa: E402

LABEL = "authored example response (written by the Fyan developers, not produced by a model)"


def prompt_names() -> dict[str, str]:
    """First line of each ``prompts/<name>.system.md`` -> name (how a request names its prompt)."""
    out = {}
    for path in sorted((ROOT / "prompts").glob("*.system.md")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first not in out, f"two system prompts start with the same line: {path}"
        out[first] = path.name[: -len(".system.md")]
    return out


class AuthoredProvider(Provider):
    """Serves ``authored/<unit>/<prompt>.<md|json>`` (the prompt is recognised by the first line
    of the request's system message: a stage may call several prompts, e.g. the audit's
    ``audit_source``, ``audit_source_check`` and ``audit``); token counts are word counts."""

    name = "replay"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.names = prompt_names()

    def complete(self, request: ModelRequest) -> ModelResponse:
        name = self.names.get(request.system.splitlines()[0] if request.system else "", request.stage)
        candidates = [self.folder / str(request.unit) / f"{name}.{ext}" for ext in ("json", "md")]
        path = next((p for p in candidates if p.is_file()), candidates[0])
        if not path.is_file():
            raise FyanError(f"no authored response {path}")
        text = path.read_text(encoding="utf-8")
        usage = Usage(tokens_in=sum(len(m.content.split()) for m in request.messages), tokens_out=len(text.split()))
        return ModelResponse(text=text, usage=usage, provider=self.name, model=request.model, key=request.key())


def main(project_dir: Path) -> int:
    from fyan.orchestrator.engine import Engine
    from fyan.project import Project
    from fyan.specifier.ingest import ingest
    from fyan.state.gateway import Gateway

    project_dir = project_dir.resolve()
    cassette = project_dir / "replay" / "cassette.jsonl"
    with tempfile.TemporaryDirectory(prefix="fyan-cassette-") as tmp:
        work = Path(tmp) / project_dir.name
        shutil.copytree(project_dir, work, ignore=shutil.ignore_patterns(".fyan", "units", "lean", "workspaces", "cassette.jsonl"))
        shim = Path(tmp) / "lake"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests/fakes/fake_lake.py"}" "$@"\n')
        shim.chmod(0o755)
        os.environ["FYAN_LEAN__LAKE"] = str(shim)
        os.environ["FYAN_LEAN__SANDBOX"] = "off"
        new_cassette = Path(tmp) / "cassette.jsonl"
        provider = RecordingProvider(AuthoredProvider(project_dir / "replay" / "authored"), new_cassette, label=LABEL)
        project = Project.open(work)
        gateway = Gateway(project)
        ingest(project, gateway)
        summary = Engine(project, gateway, providers=lambda stage: provider, parallelism=1).run()
        gateway.close()
        if summary.counts.get("complete", 0) != summary.units:
            for unit, reason in summary.blocked:
                print(f"not complete: {unit}: {reason}", file=sys.stderr)
            return 1
        shutil.copyfile(new_cassette, cassette)
        entries = sum(1 for line in cassette.read_text().splitlines() if line.strip())
    print(f"wrote {entries} authored responses to {cassette.relative_to(ROOT)} ({summary.units} units complete with the toolchain double)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "projects" / "taste-number-theory"))
