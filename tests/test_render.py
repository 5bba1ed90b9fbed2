"""The escaping renderer for document text entering Lean source:
hostile paths, labels, titles and unit ids never become Lean code."""

from __future__ import annotations

import pytest

from fyan.errors import ProjectError
from fyan.lean.declarations import lex
from fyan.lean.lints import errors, lint
from fyan.lakepackage.package import render_unit_file
from fyan.lean.render import comment_text, dotted_name, name_component, string_literal
from fyan.project import ProjectPaths, check_unit_id
from fyan.project import Project
from fyan.specifier.ingest import ingest
from fyan.state.gateway import Gateway

HOSTILE = [
    "x-/ axiom magic : False /-z.tex",
    "a -/ -/ -/ #eval IO.println 1 /- b",
    "/- nested /- open -/",
    "-//-/-",
    "line\nbreak -/ theorem t : False := sorry",
    "carriage\rreturn\u2028sep -/ x",
    "«guillemets» and `backticks` -/",
    "tab\tand\x00nul -/",
    "–/ looks like a dash (en dash), then -/ the real one",
]


def unescape_lean_string(lit: str) -> str:
    """The value of a Lean string literal, per the reference manual's escapes."""
    assert lit.startswith('"') and lit.endswith('"')
    body, out, i = lit[1:-1], [], 0
    while i < len(body):
        c = body[i]
        assert c != '"' and c != "\n", "an unescaped quote or line break in the literal"
        if c == "\\":
            n = body[i + 1]
            if n in '\\"':
                out.append(n)
                i += 2
            elif n in "ntr":
                out.append({"n": "\n", "t": "\t", "r": "\r"}[n])
                i += 2
            elif n == "x":
                out.append(chr(int(body[i + 2 : i + 4], 16)))
                i += 4
            elif n == "u":
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
            else:
                raise AssertionError(f"unknown escape \\{n}")
        else:
            out.append(c)
            i += 1
    return "".join(out)


@pytest.mark.parametrize("text", HOSTILE)
def test_comment_text_cannot_close_or_open_a_comment(text):
    body = comment_text(text)
    assert "-/" not in body and "/-" not in body and "\n" not in body and "\r" not in body
    source = f"/-! Source: {body}. -/\ntheorem ok : True := trivial\n"
    code = lex(source).code
    assert lex(source).problems == []
    assert code.strip() == "theorem ok : True := trivial"  # everything else stayed a comment
    assert "axiom" not in code and "#eval" not in code and "sorry" not in code


@pytest.mark.parametrize("text", HOSTILE + ['"quoted" and {braces}', "back\\slash\\\""])
def test_string_literal_round_trips(text):
    lit = string_literal(text)
    assert unescape_lean_string(lit) == text
    lexed = lex(f"def s := {lit}\n#check s\n")
    assert lexed.problems == [] and "#check s" in lexed.code


def test_name_components_are_plain_or_quoted_or_refused():
    assert name_component("Basic") == "Basic" and name_component("ThmRoot2") == "ThmRoot2"
    assert name_component("theorem") == "«theorem»" and name_component("a b") == "«a b»"
    assert dotted_name("Lib.Unit.Basic") == "Lib.Unit.Basic"
    for bad in ("", "a»b", "«a", "line\nbreak", "nul\x00"):
        with pytest.raises(ValueError):
            name_component(bad)


def test_unit_ids_are_never_paths():
    """Finding 9: a unit id that keeps `/` (a \\label{/etc/x}) would name a path outside the project."""
    paths = ProjectPaths(__import__("pathlib").Path("/srv/project"))
    assert paths.unit("thm-a-b").as_posix() == "/srv/project/units/thm-a-b"
    for bad in ("/etc/x", "../x", "a/b", "..", "", "A", "a_b", "-a", "a-", "a\nb"):
        with pytest.raises(ProjectError):
            paths.unit(bad)
        with pytest.raises(ProjectError):
            paths.workspace(bad)
    assert check_unit_id("theorem-7") == "theorem-7"
    from pydantic import ValidationError

    from fyan.state.models import UnitRecord

    with pytest.raises(ValidationError):
        UnitRecord(id="/etc/x", order=0, kind="theorem", module="X", layer=0, statements=[0], provenance="p")


def test_a_hostile_source_path_stays_inside_the_header_comment(tmp_path):
    """Finding 5: a source file named `x-/ axiom magic : False /-z.tex` (with a label and a title
    as hostile) closed the doc comment of the header Fyan writes, leaving an `axiom` outside the
    model's part of every affected unit file."""
    root = tmp_path / "p"
    hostile = root / "source" / "x-" / " axiom magic : False "
    hostile.mkdir(parents=True)
    (hostile / "-z.tex").write_text(
        "\\begin{theorem}[Title -/ #eval IO.println 1 /-]\\label{thm:a-/b}\nEvery integer is an integer.\n\\end{theorem}\n")
    (root / "source" / "doc.tex").write_text("\\input{x-/ axiom magic : False /-z}\n")
    (root / "fyan.toml").write_text('[project]\nname = "t"\nsource = "source/doc.tex"\n')
    project = Project.open(root)
    gateway = Gateway(project)
    ingest(project, gateway)
    (unit,) = gateway.store.units()
    assert "x-/ axiom magic : False /-z.tex" in unit.provenance  # the document's path, as it is
    text = render_unit_file(project, gateway.store, unit, "theorem t : True := trivial", "Basic")
    gateway.close()
    lexed = lex(text)
    assert lexed.problems == []
    assert "axiom" not in lexed.code and "#eval" not in lexed.code
    assert errors(lint(text)) == []  # the whole rendered file, not only the model's part
    # without the renderer (what Fyan wrote before): the axiom escapes the comment
    naive = text.replace(comment_text(unit.provenance), unit.provenance)
    assert "axiom magic : False" in lex(naive).code
