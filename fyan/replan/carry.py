"""What a re-plan carries forward: the helper lemmas the refused attempt left proved.

A helper lemma is a ``theorem``/``lemma`` of the attempt's ``Basic.lean`` that is not a node of
the plan (the Formalizer added it), whose text has no ``sorry``/``admit``, that does not mention the lemma the verdict names by any
spelling of its name (``T.DefA.x``, ``_root_.x``, ``«x»``) nor a helper dropped for either reason
(a helper proved from a refuted lemma's ``sorry`` is worth nothing once the lemma is gone), from a
text with no construct the lints refuse (a helper may rest on an ``axiom`` or a ``macro`` of the
attempt without naming a refused word). They are published with the
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


def _mentions(names: set[str]) -> re.Pattern[str]:
    """Any spelling of one of ``names`` as an identifier: bare, qualified by any namespace
    (``T.DefA.x``, ``_root_.x``), in guillemets (``«x»``)."""
    alternatives = "|".join(rf"«?{re.escape(n)}»?" for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])")


def helper_lemmas(model_text: str, planned: set[str], excluded: str) -> list[tuple[str, str]]:
    """(name, source) of each helper lemma of ``model_text`` (the model-written part of a
    ``Basic.lean``) worth keeping (module docstring). ``planned``: the plan's node names (short
    names); ``excluded``: the lemma a verdict names.

    None is kept when the text holds anything the lints refuse (an ``axiom``, a ``macro``, ...):
    a helper may rest on it without naming a refused word. A helper that mentions the excluded
    lemma, or a helper dropped before it, by any spelling of its name, is dropped too."""
    if lint_errors(lint(model_text)):
        return []
    candidates = []
    for d in declarations.scan(model_text):
        if d.kind not in ("theorem", "lemma") or d.name.split(".")[-1] in planned:
            continue
        candidates.append((d, _source(model_text, d)))
    dropped = {excluded}
    for d, source in candidates:
        if any(f.rule == "sorry" for f in lint(source)):
            dropped.add(d.name.split(".")[-1])
    while True:  # resting on a dropped helper is resting on what it rested on
        mention = _mentions(dropped)
        more = {d.name.split(".")[-1] for d, source in candidates
                if d.name.split(".")[-1] not in dropped and mention.search(source)}
        if not more:
            break
        dropped |= more
    return [(d.name, source) for d, source in candidates if d.name.split(".")[-1] not in dropped]


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
