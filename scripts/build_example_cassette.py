"""Rebuild the example project's replay cassette from its authored responses.

    python scripts/build_example_cassette.py [projects/taste-number-theory | projects/replan-consecutive]

The example's responses are authored by people (``replay/authored/<unit>/<stage>.*``), but
replay is keyed by the hash of each request, and requests depend on the prompts and on
upstream artifacts. This script runs the whole pipeline on a scratch copy of the project with
a provider that serves the authored file for each (unit, stage), records every request/response
pair into ``replay/cassette.jsonl`` (labelled as authored), and checks that every unit reached
the end, Curator and Auditor included. It uses the toolchain test double (``tests/fakes/fake_lake.py``) so that downstream
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


class AuthoredProvider(Provider):
    """Serves ``authored/<unit>/<prompt>.<md|json>`` (``json`` for a structured reply; the
    Specifier's project-level calls from ``authored/_project/``); token counts are word counts.
    The n-th call (n ≥ 2) of a prompt for a unit is served ``<prompt>.<n>.<md|json>`` when that
    file exists (a unit that runs a stage again, e.g. the Planner after a re-plan), else the
    same file as the first."""

    name = "replay"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.calls: dict[tuple[str, str], int] = {}

    def complete(self, request: ModelRequest) -> ModelResponse:
        unit, ext = request.unit or "_project", "json" if request.json_output else "md"
        n = self.calls[(unit, request.prompt)] = self.calls.get((unit, request.prompt), 0) + 1
        path = self.folder / unit / f"{request.prompt}.{n}.{ext}"
        if n < 2 or not path.is_file():
            path = self.folder / unit / f"{request.prompt}.{ext}"
        if not path.is_file():
            raise FyanError(f"no authored response {path}")
        text = path.read_text(encoding="utf-8")
        usage = Usage(tokens_in=sum(len(m.content.split()) for m in request.messages), tokens_out=len(text.split()))
        return ModelResponse(text=text, usage=usage, provider=self.name, model=request.model, key=request.key())


def main(project_dir: Path) -> int:
    from fyan.agents.specify import model_specifier
    from fyan.orchestrator.engine import Engine
    from fyan.project import Project
    from fyan.specifier.ingest import ingest
    from fyan.state.gateway import Gateway

    project_dir = project_dir.resolve()
    cassette = project_dir / "replay" / "cassette.jsonl"
    with tempfile.TemporaryDirectory(prefix="fyan-cassette-") as tmp:
        (Path(tmp) / "toolchain").mkdir()
        work = Path(tmp) / project_dir.name
        shutil.copytree(project_dir, work, ignore=shutil.ignore_patterns(".fyan", "units", "lean", "workspaces", "cassette.jsonl"))
        # the toolchain double laid out as a real prefix (bin/lake, bin/lean, lib/lean): the tests' own
        from tests.conftest import FakeLake  # noqa: E402

        fake = FakeLake(Path(tmp) / "toolchain")
        os.environ["FYAN_LEAN__LAKE"] = str(fake.path)
        os.environ["FYAN_LEAN__SANDBOX"] = "off"
        os.environ["FYAN_LEAN__INSPECTOR_DIR"] = str(Path(tmp) / "inspector")  # the double's, never ~/.cache
        # the double is no Lean: nothing about a toolchain is proven here (`fyan selftest`)
        os.environ["FYAN_LEAN__TRUST_WITHOUT_SELFTEST"] = "true"
        new_cassette = Path(tmp) / "cassette.jsonl"
        provider = RecordingProvider(AuthoredProvider(project_dir / "replay" / "authored"), new_cassette, label=LABEL)
        project = Project.open(work)
        gateway = Gateway(project)
        ingest(project, gateway, specifier=model_specifier(project, gateway, lambda stage: provider))
        summary = Engine(project, gateway, providers=lambda stage: provider, parallelism=1).run()
        post = gateway.store.post_runs()
        gateway.close()
        if summary.counts.get("complete", 0) != summary.units:
            for unit, reason in summary.blocked:
                print(f"not complete: {unit}: {reason}", file=sys.stderr)
            return 1
        failed = [p for p in post if p.status.value != "succeeded"]
        if len(post) != 2 * summary.units or failed:
            for p in failed:
                print(f"post-completion {p.task} of {p.unit} failed: {p.reason}", file=sys.stderr)
            return 1
        shutil.copyfile(new_cassette, cassette)
        entries = sum(1 for line in cassette.read_text().splitlines() if line.strip())
    print(f"wrote {entries} authored responses to {cassette.relative_to(ROOT)} ({summary.units} units complete with the toolchain double)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "projects" / "taste-number-theory"))
