"""The shadow-set format: a reference statement, its shadows and their checkers.

On disk a shadow set is one file per problem, ``<DIR>/<problem>/shadowset.toml`` (authored by
people; TOML multi-line strings keep Lean readable) or ``shadowset.json`` (written by
``fyan shadow draft``). Both hold the same fields, validated by ``ShadowSet``:

* ``problem`` (the folder name), ``target`` (the reference theorem's name, as the checkers
  refer to it) and ``auxiliary`` (other reference declarations the checkers mention, for
  example a definition used in the statement);
* ``header`` (imports, ``open``, options) and ``reference`` (Lean declarations: the reference
  theorem, whose proof may be ``sorry`` — only its statement matters — and its auxiliaries);
* ``shadows``: each an ``id`` (a Lean identifier), a ``method`` (projection, specialisation,
  unfolding, iff_direction, consequence), a Lean proposition ``statement`` and a ``forward``
  tactic proof of the statement that uses the target by name;
* ``backward.proof``: a tactic proof of ``type_of% @target`` from the shadows, which are in
  scope as hypotheses named by their ids.

Checkers are rendered by code from these parts (``forward_checker``, ``backward_checker``), so a
forward checker always states exactly its shadow, and the backward checker always proves exactly
the target's elaborated type from exactly the shadows. Each is a Lean theorem
``fyan_shadow_check`` (``assemble`` gives it the file's random nonce), so the trusted inspector can
find it in the compiled module and read its axioms.
"""

from __future__ import annotations

import json
import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from fyan.sandbox import safefile
from fyan.errors import InputError
from fyan.lean import declarations

FILE_NAMES = ("shadowset.toml", "shadowset.json")

#: Tokens a checker or shadow statement must never contain: they would make any candidate pass.
_FORBIDDEN = re.compile(r"\b(?:sorry|admit|sorryAx|native_decide)\b")
_IDENT = re.compile(r"^[^\W\d][\w'!?₀-₉ₐ-ₜ]*$")
_NAME = re.compile(r"^[^\W\d][\w'!?₀-₉ₐ-ₜ]*(?:\.[^\W\d][\w'!?₀-₉ₐ-ₜ]*)*$")


class Method(StrEnum):
    """How a shadow is obtained from the reference statement."""

    PROJECTION = "projection"
    SPECIALISATION = "specialisation"
    UNFOLDING = "unfolding"
    IFF_DIRECTION = "iff_direction"
    CONSEQUENCE = "consequence"


class Shadow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Lean identifier; the backward proof refers to the shadow by it")
    method: Method
    statement: str = Field(min_length=1, description="A closed Lean proposition")
    forward: str = Field(min_length=1, description="Tactic proof of `statement` using the target by name")
    note: str = ""

    @field_validator("id")
    @classmethod
    def _ident(cls, v: str) -> str:
        if not _IDENT.match(v):
            raise ValueError(f"shadow id {v!r} is not a Lean identifier (letters, digits, _ and ')")
        return v


class Backward(BaseModel):
    model_config = ConfigDict(extra="forbid")

    proof: str = Field(min_length=1, description="Tactic proof of `type_of% @target` from the shadows")


class ShadowSet(BaseModel):
    """One problem's shadow set (see the module docstring for every field)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal[1] = 1
    problem: str = Field(min_length=1)
    target: str
    auxiliary: list[str] = Field(default_factory=list)
    header: str = ""
    reference: str = Field(min_length=1)
    shadows: list[Shadow] = Field(min_length=1)
    backward: Backward
    informal: str = ""
    source: str = Field(default="", description="Provenance of the reference (dataset, row, commit)")
    drafted_by: str | None = Field(default=None, description="Model that drafted the checkers; None when authored")

    @field_validator("target", "auxiliary")
    @classmethod
    def _names(cls, v):
        for name in [v] if isinstance(v, str) else v:
            if not _NAME.match(name):
                raise ValueError(f"{name!r} is not a Lean declaration name")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> ShadowSet:
        ids = [s.id for s in self.shadows]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate shadow ids: {', '.join(dup)}")
        decls = declarations.scan(self.reference)
        target = declarations.find(decls, self.target)
        if target is None or target.kind != "theorem":
            raise ValueError(f"reference declares no theorem {self.target!r}")
        for aux in self.auxiliary:
            if declarations.find(decls, aux) is None:
                raise ValueError(f"auxiliary {aux!r} is not declared in the reference")
        for s in self.shadows:
            if _FORBIDDEN.search(declarations.strip_comments(s.statement + "\n" + s.forward)):
                raise ValueError(f"shadow {s.id}: sorry, admit, sorryAx or native_decide in a checker")
            if not _mentions(declarations.strip_comments(s.forward), self.target):
                raise ValueError(f"shadow {s.id}: the forward proof never mentions the target {self.target}")
        if _FORBIDDEN.search(declarations.strip_comments(self.backward.proof)):
            raise ValueError("backward: sorry, admit, sorryAx or native_decide in the checker")
        return self

    def reference_declaration(self) -> declarations.Declaration:
        found = declarations.find(declarations.scan(self.reference), self.target)
        assert found is not None  # validated
        return found

    def shadow(self, shadow_id: str) -> Shadow:
        return next(s for s in self.shadows if s.id == shadow_id)


def _mentions(text: str, name: str) -> bool:
    return re.search(r"(?<![\w.'!?₀-₉ₐ-ₜ])" + re.escape(name) + r"(?![\w'!?₀-₉ₐ-ₜ])", text) is not None


def _indent(text: str, spaces: int = 2) -> str:
    lines = text.strip("\n").splitlines()
    # dedent to the common indentation first, then indent uniformly
    common = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join((" " * spaces + line[common:]) if line.strip() else "" for line in lines)


def forward_checker(shadow_set: ShadowSet, shadow: Shadow) -> str:
    """The forward checker of ``shadow`` (T ⇒ Sᵢ) as a Lean theorem, target named as in the
    reference (``adapt.rename`` maps names to a candidate's)."""
    return (
        f"-- fyan shadow check: forward `{shadow.id}` ({shadow.method.value})\n"
        f"theorem fyan_shadow_check :\n{_indent(shadow.statement, 4)} := by\n{_indent(shadow.forward)}\n"
    )


def backward_checker(shadow_set: ShadowSet) -> str:
    """The backward checker (⋀Sᵢ ⇒ T) as a Lean theorem: the shadows are hypotheses named by
    their ids and the goal is the target's elaborated type, ``type_of% @target``."""
    binders = "\n".join(f"    ({s.id} :\n{_indent(s.statement, 6)})" for s in shadow_set.shadows)
    return (
        "-- fyan shadow check: backward (the shadows imply the target)\n"
        f"theorem fyan_shadow_check\n{binders} :\n    type_of% @{shadow_set.target} := by\n{_indent(shadow_set.backward.proof)}\n"
    )


def checkers(shadow_set: ShadowSet) -> dict[str, str]:
    """Every checker by check name: ``forward:<id>`` in order, then ``backward``."""
    out = {f"forward:{s.id}": forward_checker(shadow_set, s) for s in shadow_set.shadows}
    out["backward"] = backward_checker(shadow_set)
    return out


def _format_errors(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(file)"
        msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
        lines.append(f"  {loc}: {msg}")
    return "\n".join(lines)


def load_shadow_set(path: Path) -> ShadowSet:
    """Read and validate one ``shadowset.toml`` / ``shadowset.json``.

    Raises ``InputError`` naming the file (and line for TOML/JSON syntax errors) when it cannot be
    read, does not parse, does not validate, or its ``problem`` differs from its folder's name.
    """
    try:
        raw = safefile.read_text(path)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read the shadow set: {e}") from None
    try:
        data = tomllib.loads(raw) if path.suffix == ".toml" else json.loads(raw)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: not valid TOML: {e}", hint="multi-line Lean goes in '''...''' strings") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
    try:
        shadow_set = ShadowSet.model_validate(data)
    except ValidationError as e:
        raise InputError(f"{path}: invalid shadow set\n{_format_errors(e)}",
                         hint="see the shadow-set format in docs/shadow.md") from None
    if shadow_set.problem != path.parent.name:
        raise InputError(f"{path}: problem {shadow_set.problem!r} differs from its folder name {path.parent.name!r}",
                         hint="name the folder after the problem id")
    return shadow_set


def find_file(folder: Path) -> Path | None:
    """The shadow-set file in ``folder`` (None when there is none).

    Raises ``InputError`` when both a TOML and a JSON file are present (which one counts would be
    a guess).
    """
    found = [folder / n for n in FILE_NAMES if (folder / n).is_file()]
    if len(found) > 1:
        raise InputError(f"{folder}: both shadowset.toml and shadowset.json", hint="keep one of them")
    return found[0] if found else None


def load_shadow_sets(directory: Path) -> dict[str, ShadowSet]:
    """Every shadow set under ``directory`` (``<problem>/shadowset.toml|json``), by problem id.

    Raises ``InputError`` when the folder is missing or holds none, or any set is invalid.
    """
    if not directory.is_dir():
        raise InputError(f"{directory}: no such folder of shadow sets",
                         hint="give --shadows a folder with one <problem>/shadowset.toml per problem")
    sets: dict[str, ShadowSet] = {}
    for sub in sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith(".")):
        path = find_file(sub)
        if path is not None:
            sets[sub.name] = load_shadow_set(path)
    if not sets:
        raise InputError(f"{directory}: no <problem>/shadowset.toml or shadowset.json found")
    return sets


def dump_json(shadow_set: ShadowSet) -> str:
    return json.dumps(shadow_set.model_dump(mode="json", exclude_defaults=False), indent=2, ensure_ascii=False) + "\n"
