"""The model-drafted adapter: a *fallback* when rule-based name adaptation leaves reference
names unresolved.

The model (prompt ``prompts/shadow_adapter.*.md``) sees the reference, the candidate file and the
unresolved names, and writes Lean declarations that define exactly those names in terms of the
candidate's declarations. Code checks the form: exactly the unresolved names are declared, as
``def``/``abbrev``/``theorem``; no ``sorry``, no construct the lints forbid; at least one candidate
declaration is mentioned (an adapter that ignores the candidate would just restate the
reference). The adapter text is inserted before every checker and recorded verbatim in the
report with ``method = "model-drafted adapter"``; summaries count such submissions apart.

Never used by the gate: deterministic checks never call a model.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from fyan.errors import ModelOutputError
from fyan.lean import declarations
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.shadow.adapt import Adaptation, NameMatch
from fyan.agents.shadow import ModelCaller
from fyan.shadow.evaluate import AdapterFn
from fyan.shadow.extract import Candidate
from fyan.shadow.shadowset import ShadowSet

STAGE = "shadow_adapter"


class AdapterReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lean: str
    notes: str = ""


def adapter_errors(lean: str, unresolved: list[str], candidate: Candidate) -> list[str]:
    """Form errors of an adapter (module docstring); empty when acceptable."""
    errs: list[str] = []
    decls = declarations.scan(lean)
    names = sorted(d.full_name for d in decls)
    if names != sorted(unresolved):
        errs.append(f"declare exactly {', '.join(sorted(unresolved))} (declared: {', '.join(names) or 'nothing'})")
    errs += [f"{d.full_name}: kind {d.kind} not allowed (def, abbrev or theorem)"
             for d in decls if d.kind not in ("def", "abbrev", "theorem")]
    clean = declarations.strip_comments(lean)
    if re.search(r"\b(?:sorry|admit|sorryAx)\b", clean):
        errs.append("no sorry, admit or sorryAx in an adapter")
    errs += [str(f) for f in lint_errors(lint(lean))]
    known = [candidate.name] + [d.full_name for d in candidate.helpers if d.full_name]
    if not any(re.search(r"(?<![\w.'])" + re.escape(n.rsplit(".", 1)[-1]) + r"(?![\w'])", clean) for n in known):
        errs.append("the adapter must be defined in terms of the candidate's declarations: "
                    + ", ".join(known[:8]))
    return errs


def model_adapter(caller: ModelCaller) -> AdapterFn:
    """An ``AdapterFn`` for ``evaluate_submission`` that asks ``caller``'s model for an adapter.

    When the model's replies never pass the form check the names stay unresolved, with the reason.
    """

    def run(shadow_set: ShadowSet, candidate: Candidate, adaptation: Adaptation) -> Adaptation:
        unresolved = [m.reference for m in adaptation.unresolved]
        values = {
            "problem": shadow_set.problem, "reference": shadow_set.reference.strip(),
            "candidate": candidate.kept.strip(), "candidate_name": candidate.name,
            "unresolved": ", ".join(unresolved),
        }
        try:
            reply = caller.ask_json(STAGE, values, AdapterReply, unit=shadow_set.problem,
                                    check=lambda r: adapter_errors(r.lean, unresolved, candidate))
        except ModelOutputError as e:
            aux = [m if m.candidate else m.model_copy(update={"problem": f"{m.problem}; model adapter rejected: {e.message}"})
                   for m in adaptation.auxiliary]
            return adaptation.model_copy(update={"auxiliary": aux})
        aux = [m if m.candidate else NameMatch(reference=m.reference, candidate=m.reference, rule="model-drafted adapter")
               for m in adaptation.auxiliary]
        return adaptation.model_copy(update={"method": "model-drafted adapter", "adapter": reply.lean.strip(),
                                             "adapter_model": caller.agent.model, "auxiliary": aux})

    return run
