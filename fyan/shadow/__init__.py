"""SA-Pass: shadow-theorem evaluation of Lean statements, and the optional shadow gate.

A candidate statement T̂ is aligned with the intended T when T̂ implies every shadow Sᵢ
(forward checks) and the conjunction of the shadows implies T̂ (backward check), for a shadow
set that is *complete*: T ⇒ each Sᵢ and ⋀Sᵢ ⇒ T, both verified in Lean.

Modules (one responsibility each):

* ``shadowset`` — the shadow-set file format (pydantic), loading and checker rendering;
* ``extract`` — the candidate declaration of a submission (its last theorem block);
* ``adapt`` — name adaptation (rules; a model-drafted adapter only as a recorded fallback);
* ``assemble`` — the Lean files compiled for each check (one copy per checker);
* ``compiler`` — the compile step behind one interface: plain ``lean --json`` with the dependency
  search path of a Lake package (``fyan.lean.compile``), record/replay of compile outcomes;
* ``score`` — compile, forward fraction, backward, SA-Pass, SA-Pass_soft and their summary;
* ``evaluate`` — one submission against one shadow set, and the parallel batch;
* ``complete`` — the completeness check of a shadow set (fails closed without Lean);
* ``gate`` — the extra completion-gate check for units that come with a shadow set.

The model-driven parts (the model caller, the drafted adapter, drafted shadow sets) are in
``fyan.agents.shadow``, ``fyan.agents.shadow_adapter`` and ``fyan.agents.shadow_draft``, so the
checks here never import a provider; the subcommands are in ``fyan.commands._shadow``.
"""
