"""Stagnation: a unit that keeps failing the same way gets a critic review.

Detected from the recorded history only (deterministic; docs/design.md),
over the last ``[stagnation] window`` failed attempts of the unit since its last review
(environment failures — a missing toolchain — never count: no advice can fix them):

* **same blocker** — the attempts failed with the same reason;
* **same positive sorry count** — the last ``window`` prove attempts each left a proof with the
  same number (> 0) of ``sorry``/``admit`` in the model-written part (a text count of each
  attempt's ``Basic.lean``; a trigger, not evidence — the gate decides completeness);
* **no edits** — the last ``window`` prove attempts left byte-identical proofs.

Then one model call (stage ``critic``, prompts ``prompts/critic.*``, the provider configured
for ``[agents.stages.critic]`` or the default) gets the statement, the plan, the frozen
declarations, the latest proof and the diagnostics. The advice is recorded through the
gateway as a ``guidance`` event with ``source = "critic"`` and reaches the unit's next attempt
as quoted context (``fyan.agents.guidance``). Critics never edit files; a failed review
(``critic_failed``) leaves the unit as it was. At most ``max_reviews`` reviews per unit.
Each review's request and reply are kept in ``.fyan/critic/<unit>/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from fyan.sandbox import safefile
from fyan.agents.pricing import cost_usd
from fyan.agents.prompts import render
from fyan.agents.providers.base import Message, ModelRequest, Provider
from fyan.config import StagnationSection
from fyan.errors import FyanError
from fyan.lakepackage.package import model_part
from fyan.orchestrator.ledger import Ledger
from fyan.project import Project
from fyan.state.gateway import Gateway, sha256_bytes
from fyan.state.models import FailureKind, RunStatus, Stage, StageRun

_SORRY = re.compile(r"\b(sorry|admit)\b")
NONE = "(none)"


def _proof_text(project: Project, run: StageRun) -> str | None:
    path = project.paths.root / run.attempt_dir / "Basic.lean"
    try:
        return safefile.read_text(path, errors="replace")
    except OSError:  # missing, or not a regular file under the cap: nothing to compare
        return None


def sorry_count(lean: str) -> int:
    from fyan.lean.declarations import strip_comments

    return len(_SORRY.findall(strip_comments(model_part(lean))))


def detect(project: Project, runs: list[StageRun], window: int, since_run: int = 0) -> str | None:
    """The stagnation trigger in ``runs`` (one unit's, id order), or None (module docstring).
    Runs before a restart marker (an accepted source change) belong to the old statement and
    never count."""
    since_run = max([since_run] + [r.id for r in runs if r.failure_kind is FailureKind.RESTART])
    recent = [r for r in runs if r.id > since_run and r.status in (RunStatus.SUCCEEDED, RunStatus.FAILED)]
    failed = [r for r in recent if r.status is RunStatus.FAILED and r.failure_kind not in (FailureKind.ENVIRONMENT, FailureKind.REFUTED)]
    if len(failed) >= window:
        last = failed[-window:]
        if len({r.reason for r in last}) == 1:
            return f"the same blocker {window} times in a row: {last[-1].reason}"
    proves = [r for r in recent if r.stage is Stage.PROVE]
    if len(proves) >= window and len(failed) >= 1:
        texts = [_proof_text(project, r) for r in proves[-window:]]
        if all(t is not None for t in texts):
            counts = {sorry_count(t) for t in texts}
            if len(set(texts)) == 1:
                return f"the last {window} proof attempts made no edit to the proof"
            if len(counts) == 1 and (n := counts.pop()) > 0:
                return f"the last {window} proof attempts each left {n} sorry"
    return None


class Critic:
    """Decides when a unit needs a review and runs it (module docstring)."""

    def __init__(self, project: Project, gateway: Gateway, providers: Callable[[str], Provider],
                 config: StagnationSection | None = None) -> None:
        self.project = project
        self.gateway = gateway
        self.providers = providers
        self.config = config or project.config.stagnation

    def _history(self, unit: str) -> tuple[int, int]:
        """(reviews so far, last run id covered by a review) from the event log."""
        reviews, covered = 0, 0
        for e in self.gateway.store.events(unit, limit=100_000):
            if e.kind == "critic_scheduled":
                reviews += 1
                covered = max(covered, int(e.data.get("after_run", 0)))
        return reviews, covered

    def review_for(self, ledger: Ledger, run: StageRun) -> Callable[[], str] | None:
        """Called by the run loop after a failed attempt: a review job, or None."""
        if not self.config.enabled or run.failure_kind in (FailureKind.ENVIRONMENT, FailureKind.REPLAN,
                                                           FailureKind.REFUTED):
            return None  # a re-plan is progress of its own kind (fyan.replan); a refuted frozen statement waits for a person
        reviews, covered = self._history(run.unit)
        if reviews >= self.config.max_reviews:
            return None
        trigger = detect(self.project, ledger.runs[run.unit], self.config.window, covered)
        if trigger is None:
            return None
        if ledger.views[run.unit].status.value == "blocked":
            return None  # out of budget: advice would reach no attempt (a person's guidance can)
        self.gateway.event("critic_scheduled", run.unit, {"trigger": trigger, "after_run": run.id})
        runs = list(ledger.runs[run.unit])
        return lambda: self.review(run.unit, trigger, runs, reviews + 1)

    def _values(self, unit: str, trigger: str, runs: list[StageRun]) -> dict[str, str]:
        from fyan.gates.stages import provenance_block

        record = self.gateway.store.unit(unit)
        assert record is not None
        udir = self.project.paths.unit(unit)

        def read(name: str) -> str:
            path = udir / name
            try:
                text = safefile.read_text(path, errors="replace")
            except OSError:
                text = ""
            return text.replace(provenance_block(text) or "", "").strip()

        proof = NONE
        for r in reversed(runs):
            if r.stage is Stage.PROVE and (text := _proof_text(self.project, r)) is not None:
                proof = model_part(text).strip() or NONE
                break
        failed = [r for r in runs if r.status is RunStatus.FAILED][-6:]
        diagnostics = "\n".join(f"- {r.stage.value} attempt {r.attempt}: {r.reason}" for r in failed) or NONE
        report = udir / "gate" / "report.json"
        if report.is_file():
            try:
                checks = json.loads(report.read_text(encoding="utf-8")).get("checks", [])
                bad = [c for c in checks if c.get("required", True) and c.get("status") != "pass"]
                if bad:
                    diagnostics += "\n\nLast gate report:\n" + "\n".join(f"- {c['name']}: {c['reason']}" for c in bad)
            except (ValueError, KeyError):
                pass
        from fyan.audit import citations  # a name the plan check dropped is in no prompt

        frozen = "\n".join(f"- `{f.decl}`: `{f.normalized_signature}`" for f in self.gateway.store.freezes(unit)) or NONE
        return {"unit": unit, "kind": record.kind, "trigger": trigger, "problem": read("problem.tex") or NONE,
                "blueprint": citations.scrub(read("blueprint.md") or NONE, citations.read(udir)), "frozen": frozen, "proof": proof,
                "diagnostics": diagnostics}

    def review(self, unit: str, trigger: str, runs: list[StageRun], number: int) -> str:
        """One critic call (worker thread); records the advice as guidance. Never raises."""
        try:
            values = self._values(unit, trigger, runs)
            agent = self.project.config.agents.for_stage("critic")
            request = ModelRequest(
                stage="critic", unit=unit, model=agent.model, max_tokens=agent.max_tokens,
                temperature=agent.temperature, json_output=False,
                messages=[Message(role="system", content=render("critic.system", values)),
                          Message(role="user", content=render("critic.user", values))],
            )
            folder = self.project.paths.state / "critic" / unit
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{number:02d}.request.json").write_text(
                json.dumps({"key": request.key(), **request.model_dump()}, indent=2, ensure_ascii=False), encoding="utf-8")
            response = self.providers("critic").complete(request)
            (folder / f"{number:02d}.response.md").write_text(response.text, encoding="utf-8")
            self.gateway.record_model_call(
                None, stage="critic", provider=response.provider, model=response.model, request_key=request.key(),
                tokens_in=response.usage.tokens_in, tokens_out=response.usage.tokens_out, cost=cost_usd(response),
                latency_s=response.latency_s, cache_hit=response.cache_hit, replay=response.replay, unit=unit,
            )
            text = response.text.strip()
            self.gateway.event("guidance", unit, {
                "source": "critic", "text": text, "trigger": trigger, "sha256": sha256_bytes(text.encode()),
            })
            return "critic advice recorded"
        except FyanError as e:
            self.gateway.event("critic_failed", unit, {"trigger": trigger, "error": e.message})
            return f"critic review failed: {e.message}"
        except Exception as e:  # a review must never take the run down
            self.gateway.event("critic_failed", unit, {"trigger": trigger, "error": f"{type(e).__name__}: {e}"})
            return f"critic review failed: {type(e).__name__}: {e}"
