"""What a re-plan carries forward: the helper lemmas the refused attempt left proved.

A helper lemma is a ``theorem``/``lemma`` of the attempt's ``Basic.lean`` that is not a node of
the plan (the Formalizer added it), whose text has no ``sorry``/``admit`` and no construct the
lints refuse, and that does not mention the lemma the verdict names (a helper proved from a
refuted lemma's ``sorry`` is worth nothing once the lemma is gone). They are published with the
re-plan (``units/<unit>/replan/helpers.lean``), shown to the Planner, and placed after the new
plan's declarations in the next prove attempt's starting ``Basic.lean`` (so in its workspace).
Being carried is not being trusted: the completion gate compiles whatever the next proof holds.
"""

from __future__ import annotations

import re

from fyan.lean import declarations
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint


def _source(text: str, d: declarations.Declaration) -> str:
    lines = text.splitlines()
    return "\n".join(lines[d.line_start - 1 : d.line_end]).strip()


def helper_lemmas(model_text: str, planned: set[str], excluded: str) -> list[tuple[str, str]]:
    """(name, source) of each helper lemma of ``model_text`` (the model-written part of a
    ``Basic.lean``) worth keeping (module docstring). ``planned``: the plan's node names (short
    names); ``excluded``: the lemma a verdict names."""
    mention = re.compile(r"(?<![\w.'])" + re.escape(excluded) + r"(?![\w'])")
    kept = []
    for d in declarations.scan(model_text):
        if d.kind not in ("theorem", "lemma") or d.name.split(".")[-1] in planned:
            continue
        source = _source(model_text, d)
        findings = lint(source)
        if lint_errors(findings) or any(f.rule == "sorry" for f in findings) or mention.search(d.body):
            continue
        kept.append((d.name, source))
    return kept


def helpers_file(kept: list[tuple[str, str]]) -> str:
    """The published ``replan/helpers.lean``: the kept helper lemmas, one after another."""
    return "\n\n".join(source for _, source in kept) + ("\n" if kept else "")


def with_helpers(model_text: str, helpers: str) -> str:
    """A starting model-written part: ``model_text`` followed by the carried helper lemmas that
    it does not declare already (by name)."""
    if not helpers.strip():
        return model_text
    have = {d.name for d in declarations.scan(model_text)}
    extra = [s for d in declarations.scan(helpers) if d.name not in have and (s := _source(helpers, d))]
    if not extra:
        return model_text
    return model_text.rstrip() + "\n\n-- helper lemmas proved before the re-plan (kept by Fyan)\n" + "\n\n".join(extra)
