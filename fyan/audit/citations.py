"""``lemma_names.json``: the existing declarations a plan names, as the plan check looked them up
(``fyan.gates.citations`` does the looking up), and what later stages may use of them.

The record says which names were found, with the full names and signatures Lean printed, which
were dropped and why, and which source answered (``method``: ``warm``, ``lean``, ``index`` or
``upstream``; ``fyan.gates.citations`` says what each means). Everything downstream reads it
through here: the audit's redefinition check and every prompt see only found names
(``checked_dag``, ``prompt_lines``), and a quoted blueprint has each dropped name replaced
(``scrub``). A missing or unreadable record trusts no cited name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from fyan.models.replies import LemmaDag
from fyan.sandbox import safefile

#: the file the plan check derives
FILE = "lemma_names.json"


class CitationCheck(BaseModel):
    """``lemma_names.json``: the looked-up names of a plan (module docstring)."""

    method: Literal["warm", "lean", "index", "upstream"] = Field(description="the source that answered")
    found: dict[str, str] = Field(default_factory=dict, description="name as given -> full name in the environment")
    signatures: dict[str, str] = Field(default_factory=dict, description="full name -> signature, as Lean prints it")
    missing: list[str] = Field(default_factory=list)
    dropped: dict[str, str] = Field(default_factory=dict, description="name as given -> why it was dropped")
    problem: str | None = Field(default=None, description="why a source could not be consulted (then another answered)")

    def describe(self) -> str:
        where = {"warm": "in the unit's environment (Lean, warm language server)",
                 "lean": "in the compiled environment (Lean, trusted inspector)",
                 "index": "among the upstream units' declarations and the declaration index (no Lean toolchain)",
                 "upstream": "among the upstream units' declarations (no Lean toolchain)"}[self.method]
        return where + (f"; {self.problem}" if self.problem else "")

    def summary(self) -> str:
        """One clause for the plan check's reason."""
        parts = []
        if self.found:
            parts.append(f"{len(self.found)} cited name(s) found {self.describe()}")
        if self.dropped:
            parts.append(f"dropped {len(self.dropped)} name(s) that do not exist (never shown to a later prompt): "
                         + "; ".join(f"{n} ({why})" for n, why in self.dropped.items()))
        return "; ".join(parts)


def cited(dag: LemmaDag) -> list[str]:
    """Every name the DAG's nodes cite or map to the library, once, in order."""
    return list(dict.fromkeys([c for n in dag.nodes for c in n.cites] + [n.library for n in dag.nodes if n.library]))


def read(folder: Path) -> CitationCheck | None:
    """The ``lemma_names.json`` in ``folder`` (a unit's published files), or None when absent or
    unreadable (then no cited name is trusted)."""
    path = folder / FILE
    if not path.is_file():
        return None
    try:
        return CitationCheck.model_validate_json(safefile.read_text(path, limit=4 * 1024 * 1024))
    except (OSError, ValueError):
        return None


def checked_dag(dag: LemmaDag, check: CitationCheck | None) -> LemmaDag:
    """``dag`` with only the ``cites`` and ``library`` names the lookup found (none without one)."""
    found = check.found if check is not None else {}
    nodes = [n.model_copy(update={"cites": [c for c in n.cites if c in found],
                                  "library": n.library if n.library in found else None}) for n in dag.nodes]
    return dag.model_copy(update={"nodes": nodes})


def scrub(text: str, check: CitationCheck | None) -> str:
    """``text`` (a model-written blueprint) with every dropped name, as a whole identifier,
    replaced by a note that it does not exist: a later prompt quotes the plan without it."""
    if check is None or not check.dropped:
        return text
    for name in sorted(check.dropped, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.'`]){re.escape(name)}(?![\w'])|`{re.escape(name)}`",
                      "(a name that does not exist, removed by Fyan)", text)
    return text


def prompt_lines(dag: LemmaDag, check: CitationCheck | None) -> list[str]:
    """The found cited lemmas, one line each with the signature Lean printed (when known)."""
    if check is None:
        return []
    lines = []
    for n in dict.fromkeys(c for node in checked_dag(dag, check).nodes for c in node.cites):
        full = check.found[n]
        sig = check.signatures.get(full)
        lines.append(f"- `{full}`" + (f": `{sig}`" if sig else ""))
    return lines


def dumps(check: CitationCheck) -> bytes:
    return (json.dumps(check.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
