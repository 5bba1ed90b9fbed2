"""Rebuild the example project's replay cassette from its authored responses.

    python scripts/build_example_cassette.py [projects/taste-number-theory | projects/replan-consecutive]

The example's responses are authored by people (``replay/authored/<unit>/<stage>.*``), but
replay is keyed by the hash of each request, and requests depend on the prompts and on
upstream artifacts. This script runs the whole pipeline on a scratch copy of the project with
a provider that serves the authored file for each (unit, stage), records every request/response
pair into ``replay/cassette.jsonl`` (labelled as authored), and checks that every unit reached
the end, Curator and Auditor included. The Formalizer runs its tool loop (``tools = true`` in the
example's ``fyan.toml``): a unit with ``authored/<unit>/prove.rounds.json`` gets its authored tool
calls, one round per turn, and the tools really run (``search_declarations`` on the example's
``replay/declarations.jsonl``); their results are recorded as they came, so the replay is keyed by
them. It uses the toolchain test double (``tests/fakes/fake_lake.py``) so that downstream
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

import json  # noqa: E402

from fyan.agents.providers.base import ModelRequest, ModelResponse, Provider, ToolCall, Usage  # noqa: E402
from fyan.agents.providers.replay import RecordingProvider  # noqa: E402
from fyan.errors import FyanError  # noqa: E402

LABEL = "authored example response (written by the Fyan developers, not produced by a model)"


class AuthoredProvider(Provider):
    """Serves ``authored/<unit>/<prompt>.<md|json>`` (``json`` for a structured reply; the
    Specifier's project-level calls from ``authored/_project/``); token counts are word counts.
    The n-th call (n ≥ 2) of a prompt for a unit is served ``<prompt>.<n>.<md|json>`` when that
    file exists (a unit that runs a stage again, e.g. the Planner after a re-plan), else the
    same file as the first.
    A request with tools whose ``<prompt>.rounds.json`` exists (a list of rounds, each ``text`` and
    ``calls``: tool name and arguments) is answered with round N's calls at turn N, then with the
    reply file."""

    name = "replay"
    can_use_tools = True

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.calls: dict[tuple[str, str], int] = {}

    def complete(self, request: ModelRequest) -> ModelResponse:
        unit_id, ext = request.unit or "_project", "json" if request.json_output else "md"
        unit = self.folder / unit_id
        turn = len(request.turns)
        if turn == 0:  # a new conversation: the n-th call of this prompt for this unit
            self.calls[(unit_id, request.prompt)] = self.calls.get((unit_id, request.prompt), 0) + 1
        n = self.calls.get((unit_id, request.prompt), 1)
        path = unit / f"{request.prompt}.{n}.{ext}"
        if n < 2 or not path.is_file():
            path = unit / f"{request.prompt}.{ext}"
        rounds_file = unit / f"{request.prompt}.rounds.json"
        rounds = json.loads(rounds_file.read_text(encoding="utf-8")) if request.tools and rounds_file.is_file() else []
        words = sum(len(m.content.split()) for m in request.messages) + sum(
            len(t.text.split()) + sum(len(a.content.split()) for a in t.answers) for t in request.turns)
        if turn < len(rounds) and request.tool_choice == "auto":
            r = rounds[turn]
            calls = [ToolCall(id=f"authored-{turn}-{i}", name=c["name"], arguments=c["arguments"])
                     for i, c in enumerate(r["calls"])]
            return ModelResponse(text=r["text"], usage=Usage(tokens_in=words, tokens_out=len(r["text"].split())),
                                 provider=self.name, model=request.model, key=request.key(), tool_calls=calls)
        if not path.is_file():
            raise FyanError(f"no authored response {path}")
        text = path.read_text(encoding="utf-8")
        usage = Usage(tokens_in=words, tokens_out=len(text.split()))
        return ModelResponse(text=text, usage=usage, provider=self.name, model=request.model, key=request.key())


def main(project_dir: Path) -> int:
    """Record the example twice — with the Formalizer's tool loop (as shipped) and without it
    (``tools = false``, for ``scripts/bench_tool_calls.py``'s comparison) — into one cassette
    (entries the two share once)."""
    project_dir = project_dir.resolve()
    cassette = project_dir / "replay" / "cassette.jsonl"
    with tempfile.TemporaryDirectory(prefix="fyan-cassette-") as tmp:
        (Path(tmp) / "toolchain").mkdir()
        # the toolchain double laid out as a real prefix (bin/lake, bin/lean, lib/lean): the tests' own
        from tests.conftest import FakeLake  # noqa: E402

        fake = FakeLake(Path(tmp) / "toolchain")
        os.environ["FYAN_LEAN__LAKE"] = str(fake.path)
        os.environ["FYAN_LEAN__SANDBOX"] = "off"
        os.environ["FYAN_LEAN__INSPECTOR_DIR"] = str(Path(tmp) / "inspector")  # the double's, never ~/.cache
        # the double is no Lean: nothing about a toolchain is proven here (`fyan selftest`)
        os.environ["FYAN_LEAN__TRUST_WITHOUT_SELFTEST"] = "true"
        lines: dict[str, str] = {}
        units = 0
        for tools in (True, False):
            recorded = Path(tmp) / f"cassette-{tools}.jsonl"
            units = record(project_dir, Path(tmp) / f"work-{tools}" / project_dir.name, recorded, tools)
            if units < 0:
                return 1
            for line in recorded.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    lines.setdefault(json.loads(line)["key"], line)
        cassette.write_text("".join(line + "\n" for line in lines.values()), encoding="utf-8")
    print(f"wrote {len(lines)} authored responses to {cassette.relative_to(ROOT)} ({units} units complete with the "
          "toolchain double, with and without the Formalizer's tools)")
    return 0


def record(project_dir: Path, work: Path, cassette: Path, tools: bool) -> int:
    """Run the example in ``work`` (a copy) with the authored provider recording into
    ``cassette``; ``tools``: the Formalizer's tool loop on or off. The number of units (all
    complete), or -1 after printing what did not complete."""
    from fyan.agents.specify import model_specifier
    from fyan.orchestrator.engine import Engine
    from fyan.project import Project
    from fyan.specifier.ingest import ingest
    from fyan.state.gateway import Gateway

    shutil.copytree(project_dir, work, ignore=shutil.ignore_patterns(".fyan", "units", "lean", "workspaces", "cassette.jsonl"))
    if not tools:
        toml = work / "fyan.toml"
        toml.write_text(toml.read_text(encoding="utf-8").replace("tools = true", "tools = false"), encoding="utf-8")
    provider = RecordingProvider(AuthoredProvider(project_dir / "replay" / "authored"), cassette, label=LABEL)
    project = Project.open(work)
    gateway = Gateway(project)
    ingest(project, gateway, specifier=model_specifier(project, gateway, lambda stage: provider))
    summary = Engine(project, gateway, providers=lambda stage: provider, parallelism=1).run()
    post = gateway.store.post_runs()
    gateway.close()
    if summary.counts.get("complete", 0) != summary.units:
        for unit, reason in summary.blocked:
            print(f"not complete (tools {'on' if tools else 'off'}): {unit}: {reason}", file=sys.stderr)
        return -1
    failed = [p for p in post if p.status.value != "succeeded"]
    if len(post) != 2 * summary.units or failed:
        for p in failed:
            print(f"post-completion {p.task} of {p.unit} failed: {p.reason}", file=sys.stderr)
        return -1
    return summary.units


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "projects" / "taste-number-theory"))
