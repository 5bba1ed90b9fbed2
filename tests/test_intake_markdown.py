"""Markdown intake: printed labels, headings, anchors, links, math kept verbatim, proofs."""

from __future__ import annotations

import pytest

from fyan.errors import DagError, InputError
from fyan.intake import read_source
from fyan.specifier.dag import extract_edges, validate
from fyan.specifier.units import build_units
from tests.conftest import write

KINDS = ["theorem", "lemma", "proposition", "corollary", "claim", "conjecture", "definition"]

DOC = r"""# Notes on parity

## Definitions

**Definition 1** (Even). An integer $n$ is *even* if $n = 2k$ for some integer $k$. {#def-even}

**Definition 2.** An integer $n$ is odd if $n = 2k+1$.

Some prose about definitions.

## Theorem 3 (Squares) {#thm-squares}

If $n$ is even (see [the definition](#def-even)), then $n^2$ is even.

$$ n^2 = 4k^2 \quad \text{where } a_1*b_1*c $$

*Proof.* Write $n = 2k$ by Definition 1; then $n^2 = 2(2k^2)$. ∎

**Lemma 4.** For all $a*b*c$:

- $a \le b$
- $b < c$

where $a, b, c$ are integers.

This paragraph is prose, not the lemma.

> **Corollary 5.** By Theorem 3 and Lemmas 4 and 9, $4 \mid n^2$. See [the definitions](#definitions).

```
**Theorem 6.** inside a code block: not a statement
```
"""


def test_statements_labels_math_and_references(tmp_path):
    cat = read_source(write(tmp_path / "notes.md", DOC))
    assert cat.format == "markdown"
    assert [(s.kind, s.label, s.number, s.title) for s in cat.statements] == [
        ("definition", "def-even", "1", "Even"),
        ("definition", "Definition 2", "2", None),
        ("theorem", "thm-squares", "3", "Squares"),
        ("lemma", "Lemma 4", "4", None),
        ("corollary", "Corollary 5", "5", None),
    ]
    d1, d2, thm, lemma, cor = cat.statements
    # verbatim source lines: math (with its * and _) exactly as written
    assert thm.body.endswith(r"$$ n^2 = 4k^2 \quad \text{where } a_1*b_1*c $$")
    assert (thm.provenance.line_start, thm.provenance.line_end) == (11, 15)
    assert lemma.body == "**Lemma 4.** For all $a*b*c$:\n\n- $a \\le b$\n- $b < c$\n\nwhere $a, b, c$ are integers."
    assert "prose" not in lemma.body
    assert d1.defined_terms == ["even"]
    assert thm.proof is not None and thm.proof.body.endswith("∎") and thm.proof.provenance.line_start == 17
    refs = {(r.label, r.macro, r.in_proof) for r in thm.references}
    assert refs == {("def-even", "link", False), ("Definition 1", "text", True)}
    assert {(r.label, r.macro) for r in cor.references} == {
        ("definitions", "link"), ("Theorem 3", "text"), ("Lemma 4", "text")}
    assert "notes.md:28: 'Lemma 9' matches no statement of the document; no edge" in [str(w) for w in cat.warnings]
    assert cat.labels["Theorem 3"].statement_index == 2 and cat.labels["definitions"].statement_index is None

    units = build_units(cat, KINDS)
    assert [u.id for u in units] == ["def-even", "definition-2", "thm-squares", "lemma-4", "corollary-5"]
    edges = extract_edges(cat, units, term_edges=False).edges
    dag = validate(cat, units, edges, KINDS)
    assert {(e.unit, e.depends_on, e.in_proof) for e in dag.edges} == {
        ("thm-squares", "def-even", False), ("corollary-5", "thm-squares", False), ("corollary-5", "lemma-4", False)}


def test_link_to_an_anchor_defined_nowhere_is_an_unknown_label(tmp_path):
    path = write(tmp_path / "m.md", "**Lemma 1.** By [the claim](#nowhere).\n")
    cat = read_source(path)
    units = build_units(cat, KINDS)
    with pytest.raises(DagError, match=r"m\.md:1: \]\(#nowhere\) in lemma-1: unknown label"):
        extract_edges(cat, units)


def test_anchor_used_twice_and_empty_and_binary_markdown(tmp_path):
    path = write(tmp_path / "m.md", "**Lemma 1.** A. {#a}\n\n**Lemma 2.** B. {#a}\n")
    with pytest.raises(InputError, match=r"m\.md:3: label 'a' is defined twice \(first at m\.md:1\)"):
        read_source(path)
    empty = write(tmp_path / "e.md", "")
    with pytest.raises(InputError, match="the file is empty"):
        read_source(empty)
    junk = tmp_path / "j.md"
    junk.write_bytes(b"\x00\x01binary")
    with pytest.raises(InputError, match=r"j\.md: binary file, not Markdown"):
        read_source(junk)


def test_item_references_and_printed_lists_give_no_false_warning(tmp_path):
    doc = write(tmp_path / "n.md", """**Lemma 2.3.** Small.

**Proposition 3.2.** It has parts 1) and 2).

**Theorem 4.1.** By Lemma 2.3 and 2) of Proposition 3.2, and Lemmas 2.3–2.3, this holds.

**Corollary 4.2.** By Theorem 4.1(b) and Theorems 4.1, and 4.1 again.
""")
    cat = read_source(doc)
    assert cat.warnings == []  # no "'Lemma 2' matches no statement"
    refs = {s.label: {r.label for r in s.references} for s in cat.statements}
    assert refs["Theorem 4.1"] == {"Lemma 2.3", "Proposition 3.2"}
    assert refs["Corollary 4.2"] == {"Theorem 4.1"}
