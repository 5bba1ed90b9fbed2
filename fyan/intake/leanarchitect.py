"""LeanArchitect blueprints: the files its Lake facets generate, read as the TeX reader needs them.

LeanArchitect (hanwenzhu/LeanArchitect) keeps a blueprint's statements in Lean, as
``@[blueprint "label" (statement := /-- … -/)]`` attributes, and its Lake facets export them into
``<package>/.lake/build/blueprint/`` (``Architect/Output.lean``, ``Main.lean``, ``lakefile.lean``;
docs/lean-contract.md, "LeanArchitect"):

* ``lake build :blueprint`` writes ``library/<Lib>.tex``, an index that ``\\input``s one header
  per module, ``module/<A>/<B>.tex``; each header defines ``\\newleannode{label}{\\input{…/module/
  <A>/<B>.artifacts/label}}`` per node and ``\\newleanmodule{A.B}{…}`` (the module's nodes as
  ``\\inputleannode{label}`` and its ``blueprint_comment`` text, in source order); each artifact
  ``<B>.artifacts/<label>.tex`` is one theorem-like environment with ``\\uses``, ``\\label``,
  ``\\lean``, ``\\leanok`` and a ``% at <file>:<line>.<col>-<line>.<col>`` comment, and, for a
  node with a proof, a ``proof`` environment. Paths in them are absolute: Lake resolves the
  package folder with ``realPath`` before the facet adds ``.lake/build/blueprint``.
* ``lake build :blueprintJson`` writes ``module/<A>/<B>.json``: an array of
  ``{"type": "node", "data": {…}}`` and ``{"type": "moduleDoc", "data": "…"}`` (``NodeWithPos.toJson``),
  read here with a strict schema (``JsonNode``): an unknown or missing field is an error, not a guess.

A document uses them with ``\\input{../../.lake/build/blueprint/library/<Lib>}`` and
``\\inputleannode{label}`` / ``\\inputleanmodule{A.B}``; ``fyan.intake.tex`` expands both (the
reader's ``lean_nodes`` and ``lean_modules``) and, where a module's JSON is present, takes each
node's Lean names, ``\\uses``, ``\\leanok`` and Lean position from it (``apply_json``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fyan.errors import InputError
from fyan.intake.catalogue import IntakeWarning, LeanPosition, Reference, Statement

#: where the facets write, below the Lake package's folder
GENERATED_DIR = ".lake/build/blueprint"
#: the Lake command that writes the generated files (LeanArchitect's package facets)
FACETS = ("blueprint", "blueprintJson")
#: ``% at <file>:<line>.<col>-<line>.<col>`` (``NodeWithPos.toLatex``); the file may hold ``:``
_AT = re.compile(r"^%\s*at\s+(.+):(\d+)\.(\d+)-(\d+)\.(\d+)\s*$", re.MULTILINE)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JsonPos(_Strict):
    """``Lean.Position`` as JSON: 1-based line, 0-based column (codepoints)."""

    line: int
    column: int


class JsonRange(_Strict):
    pos: JsonPos
    endPos: JsonPos  # noqa: N815 (LeanArchitect's field name)


class JsonLocation(_Strict):
    module: str
    range: JsonRange


class JsonPart(_Strict):
    """``Architect.NodePart``: ``leanOk`` (sorry-free in Lean), ``text`` (LaTeX), ``uses`` (labels),
    ``latexEnv``."""

    leanOk: bool  # noqa: N815
    text: str
    uses: list[str]
    latexEnv: str  # noqa: N815


class JsonNode(_Strict):
    """``Architect.NodeWithPos.toJson``: every field it writes, no other."""

    name: str
    latexLabel: str  # noqa: N815
    statement: JsonPart
    proof: JsonPart | None
    notReady: bool  # noqa: N815
    discussion: int | None
    title: str | None
    hasLean: bool  # noqa: N815
    file: str | None
    location: JsonLocation | None


class JsonItem(_Strict):
    type: str = Field(pattern="^(node|moduleDoc)$")
    data: JsonNode | str


class ModuleJson(BaseModel):
    """One module's JSON as read: its nodes, and where each node's entry starts (line)."""

    file: str
    nodes: list[JsonNode]
    lines: list[int]


def read_module_json(path: Path, rel: str, data: bytes) -> ModuleJson:
    """Parse ``data`` (the file ``path``, shown as ``rel``) as a module's ``:blueprintJson`` output.
    Raises ``InputError`` naming the file and the first field that does not fit the schema."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise InputError(f"{rel}: not LeanArchitect's JSON output ({e})",
                         hint="run `lake build :blueprintJson` in the package again") from None
    if not isinstance(raw, list):
        raise InputError(f"{rel}: LeanArchitect's module JSON is an array of nodes and module docs; this is not one",
                         hint="run `lake build :blueprintJson` in the package again")
    nodes, lines = [], []
    text = data.decode("utf-8")
    cursor = 0
    for i, item in enumerate(raw):
        try:
            parsed = JsonItem.model_validate(item)
            if (parsed.type == "node") != isinstance(parsed.data, JsonNode):
                raise ValueError(f"a {parsed.type} item whose data is {'an object' if parsed.type != 'node' else 'text'}")
        except (ValidationError, ValueError) as e:
            first = e.errors()[0] if isinstance(e, ValidationError) else {"loc": ("data",), "msg": str(e)}
            where = ".".join(str(x) for x in first["loc"])
            raise InputError(f"{rel}: item {i}: {where}: {first['msg']} (LeanArchitect's NodeWithPos.toJson schema)",
                             hint="the JSON was written by another LeanArchitect version than the one Fyan reads; "
                             "remove it to read the generated TeX alone, or report the version") from None
        if isinstance(parsed.data, JsonNode):
            at = text.find(json.dumps(parsed.data.latexLabel), cursor)
            cursor = max(cursor, at)
            nodes.append(parsed.data)
            lines.append(text.count("\n", 0, at) + 1 if at >= 0 else 1)
    return ModuleJson(file=rel, nodes=nodes, lines=lines)


def tex_position(body: str) -> tuple[str, int, int, int, int] | None:
    """The ``% at file:line.col-line.col`` comment of a generated artifact, if any."""
    m = _AT.search(body)
    if m is None:
        return None
    return m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5))


def lake_package_of(path: Path) -> Path | None:
    """The Lake package folder holding ``path`` (the nearest folder above it with a
    ``lakefile.lean`` or ``lakefile.toml``), or None."""
    for folder in [path, *path.parents] if path.is_dir() else path.parents:
        if (folder / "lakefile.lean").is_file() or (folder / "lakefile.toml").is_file():
            return folder
    return None


def generated_package(name: str, main: Path) -> Path | None:
    """The package whose generated files an include names (``…/.lake/build/blueprint/…``): the
    folder before ``.lake`` in the path, relative to the folder LaTeX runs in (``main``'s);
    None for a path that names no generated file."""
    parts = Path(name).parts
    for i in range(len(parts) - 2):
        if parts[i : i + 3] == (".lake", "build", "blueprint"):
            head = Path(*parts[:i]) if i else Path(".")
            return Path(os.path.normpath(head if head.is_absolute() else main.parent / head))
    return None


class GeneratedFilesMissing(InputError):
    """The document includes LeanArchitect's generated files and they are not there."""

    def __init__(self, message: str, package: Path | None) -> None:
        self.package = package
        where = f"in {package}" if package is not None else "in the Lake package the document belongs to"
        super().__init__(message, hint=(
            f"generate them: `lake build :blueprint :blueprintJson` {where} (LeanArchitect's facets; the JSON is "
            "optional and, when present, is read as the source of truth), or let Fyan run that step itself: "
            "`fyan init ... --lean-project <package>`"))


def apply_json(stmt: Statement, label: str, nodes: list[tuple[JsonNode, str, int]],
               warnings: list[IntakeWarning]) -> None:
    """Set ``stmt`` (read from a generated artifact) from the JSON nodes of its label ((node,
    JSON file, line) in module order): Lean names, ``\\leanok`` of the statement and the proof
    (all parts sorry-free, as ``NodePart.toLatex`` merges them), ``\\uses`` of each, and the
    Lean position of every name. A TeX artifact that says otherwise is stale: a warning."""
    first_file, first_line = nodes[0][1], nodes[0][2]
    names = list(dict.fromkeys(n.name for n, _, _ in nodes))
    leanok = all(n.statement.leanOk for n, _, _ in nodes)
    proofs = [n.proof for n, _, _ in nodes if n.proof is not None]
    proof_ok = bool(proofs) and all(p.leanOk for p in proofs)
    uses = list(dict.fromkeys(u for n, _, _ in nodes for u in n.statement.uses))
    proof_uses = list(dict.fromkeys(u for p in proofs for u in p.uses))
    tex_uses = sorted({r.label for r in stmt.references if r.macro == "uses" and not r.in_proof})
    tex_proof_uses = sorted({r.label for r in stmt.references if r.macro == "uses" and r.in_proof})
    differs = []
    if stmt.lean_names and stmt.lean_names != names:
        differs.append(f"\\lean {stmt.lean_names} vs {names}")
    if stmt.leanok != leanok:
        differs.append(f"statement \\leanok {stmt.leanok} vs {leanok}")
    if tex_uses != sorted(uses) or (stmt.proof is not None and tex_proof_uses != sorted(proof_uses)):
        differs.append("\\uses")
    if differs:
        warnings.append(IntakeWarning(
            code="leanarchitect-stale", where=f"{first_file}:{first_line}",
            message=f"node {label!r}: the generated TeX and JSON disagree ({'; '.join(differs)}); the JSON is read "
            "(run `lake build :blueprint` again to bring the TeX up to date)"))
    stmt.lean_names = names
    stmt.leanok = leanok
    if stmt.proof is not None:
        stmt.proof.leanok = proof_ok
    stmt.references = [r for r in stmt.references if r.macro != "uses"]
    stmt.references += [Reference(label=u, macro="uses", file=first_file, line=first_line) for u in uses]
    stmt.references += [Reference(label=u, macro="uses", file=first_file, line=first_line, in_proof=True)
                        for u in proof_uses]
    stmt.lean_positions = [
        LeanPosition(name=n.name, module=n.location.module if n.location else None, file=n.file,
                     line_start=n.location.range.pos.line if n.location else None,
                     line_end=n.location.range.endPos.line if n.location else None, origin=f"{f}:{line}")
        for n, f, line in nodes]
