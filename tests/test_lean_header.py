"""Lean headers read as Lean reads them: ``fyan.lean.header`` against every form of
Lean's header grammar, and differentially against the real core ``lean`` 4.35.0 (``--deps`` prints
the file each import resolves to: docs/lean-contract.md, "Lean headers")."""

from __future__ import annotations

import os
import random
import subprocess

import pytest

from fyan.lean.header import add_import, read_header, rename_imports


@pytest.mark.parametrize("text, modules, flags", [
    ("import A.B\nimport C\n", ["A.B", "C"], [(False, False, False)] * 2),
    ("module\n\npublic import A\nmeta import B\npublic meta import C\nimport all D\n", ["A", "B", "C", "D"],
     [(True, False, False), (False, True, False), (True, True, False), (False, False, True)]),
    ("module\nprelude\npublic meta import all X.Y\n", ["X.Y"], [(True, True, True)]),
    ("/-! no: a module doc comment ends the header -/\nimport A\n", [], []),
    ("/-- a doc comment ends the header -/\nimport A\n", [], []),
    ("-- a line comment\n/- a /- nested -/ block -/ prelude /- x -/ import A -- y\nimport B", ["A", "B"], None),
    ("import A import B\n", ["A", "B"], None),
    ("import A B\n", ["A"], None),                                   # one name per import
    ("private import A\n", [], []),                                  # no `private` in the header
    ("module\nmeta public import A\n", [], []),                      # `public` comes first
    ("def x := 1\nimport A\n", [], []),
    ("prelude\nmodule\nimport A\n", [], []),                         # `module` comes first
    ("import «D.E».F\nimport all.B\nimport importX\n", ["«D.E».F", "all.B", "importX"], None),
    ("import αβ.x₁ import h'.Foo!\n", ["αβ.x₁", "h'.Foo!"], None),
    ("prelude\r\nimport A\r\n", ["A"], None),
])
def test_every_header_form(text, modules, flags):
    h = read_header(text)
    assert h.error is None
    assert h.modules == modules
    if flags is not None:
        assert [(i.public, i.meta, i.all) for i in h.imports] == flags


def test_module_and_prelude_flags():
    assert (read_header("module prelude").module, read_header("module prelude").prelude) == (True, True)
    assert not read_header("import A").prelude and not read_header("import A").module
    assert read_header("import «D.E».F").imports[0].parts == ("D.E", "F")
    assert read_header("import «D.E».F").imports[0].path == "D.E/F.lean"


@pytest.mark.parametrize("text, error", [
    ("prelude\n\timport A", "tabs"), ("prelude\rimport A", "carriage"), ("/- open\nimport A", "unterminated"),
    ("import A.", "after '.'"), ("import", "module name"), ("import all", "module name"),
    ("import import", "module name"), ("import «A", "escape"),
])
def test_a_malformed_header_is_an_error_not_a_guess(text, error):
    assert error in (read_header(text).error or "")


def test_imports_are_renamed_and_added_in_the_header_only():
    text = "module\n-- import Old\npublic import Old /- import Old -/\nimport Keep\ndef x := \"import Old\"\n"
    out = rename_imports(text, {"Old": "New.Mod"})
    assert out == text.replace("public import Old", "public import New.Mod")
    added = add_import(out, "Extra")
    assert read_header(added).modules == ["New.Mod", "Keep", "Extra"] and added.endswith(text[text.index("def"):])
    assert read_header(add_import("/-! doc -/\ntheorem t : True := trivial\n", "A")).modules == ["A"]
    assert read_header(add_import("module\n\ndef x := 1\n", "A")).module


# ---------------------------------------------------------------- differential against real lean

NAMES = ["A", "B.C", "Mathlib.Data.Real.Basic", "«D.E».F", "αβ.γ", "x₁.y", "h'", "all.B", "importX", "Foo!.Bar?",
         "«import»", "_u.V_w", "ℕat.Ω"]
GAPS = [" ", "\n", "  \n\n", " -- line comment\n", "/- block -/", "\n/- a /- nested -/ b -/\n", "\r\n",
        "--\n", " /-\n-/ ", "/- - -/"]
STOPS = ["", "\ndef x := 1\n", "\n/-- doc -/\nimport Z\n", "\n/-! doc -/ import Z", "\nprivate import Z",
         "\nmeta public import Z", "\npublic def z := 1\nimport Z"]


def generated_header(rng: random.Random) -> str:
    gap = lambda: rng.choice(GAPS)  # noqa: E731
    module = rng.random() < 0.5
    out = [gap() if rng.random() < 0.5 else ""]
    if module:
        out += ["module", gap()]
    out += ["prelude", gap()]  # the core tier has no Init: every file is a prelude file
    for _ in range(rng.randint(0, 5)):
        mods = rng.choice([[], ["public"], ["meta"], ["public", "meta"]]) if module else []
        everything = module and "public" not in mods and rng.random() < 0.3
        out += [m + gap() for m in mods] + ["import", gap()] + (["all", gap()] if everything else [])
        out += [rng.choice(NAMES), gap()]
    out.append(rng.choice(STOPS))
    return "".join(out)


def real_imports(lean, folder, text: str) -> list[tuple[str, ...]]:
    """What real lean resolves the header of ``text`` to: each imported module's components,
    from the ``.olean`` path ``lean --deps`` prints (every candidate module exists as a stub)."""
    lib = folder / "lib"
    for name in NAMES + ["Z"]:
        parts = read_header(f"import {name}").imports[0].parts
        path = lib.joinpath(*parts).with_suffix(".olean") if len(parts) == 1 else \
            lib.joinpath(*parts[:-1], parts[-1] + ".olean")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    src = folder / "X.lean"
    src.write_bytes(text.encode())
    proc = subprocess.run([str(lean), "--deps", str(src)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LEAN_PATH": str(lib)}, cwd=folder)
    assert proc.returncode == 0 and "PANIC" not in proc.stderr, (text, proc.stdout, proc.stderr)
    out = []
    for line in proc.stdout.splitlines():
        rel = os.path.relpath(line, lib)
        parts = rel[: -len(".olean")].split(os.sep)
        out.append(tuple(parts))
    return out


@pytest.mark.lean_core
def test_the_reader_agrees_with_real_lean_on_generated_headers(core_lean, tmp_path):
    rng = random.Random(26)
    checked = 0
    for n in range(160):
        text = generated_header(rng)
        h = read_header(text)
        assert h.error is None, (text, h.error)
        assert [i.parts for i in h.imports] == real_imports(core_lean, tmp_path, text), text
        checked += len(h.imports)
    assert checked > 200  # the generated headers did import something


@pytest.mark.lean_core
@pytest.mark.parametrize("text", ["prelude\nimport A B\n", "prelude\n/-- d -/\nimport A\n", "prelude\nprivate import A\n",
                                  "module\nprelude\nmeta public import A\n", "prelude import all.B import «D.E».F"])
def test_where_a_header_ends_is_where_real_lean_ends_it(core_lean, tmp_path, text):
    assert [i.parts for i in read_header(text).imports] == real_imports(core_lean, tmp_path, text)


def test_the_import_cycle_guard_of_export_patch_reads_headers_as_lean_does(tmp_path):
    """``fyan export patch`` refuses to wire a proof in place when the import would make a cycle:
    the modules a package file imports are its header's, whatever the form."""
    from fyan.adopt.patch import _reaches

    files = {"A.lean": "module\n/- c -/\npublic import B\n", "B.lean": "module\nmeta import all «C»\n",
             "C.lean": "prelude\n-- x\nimport D.E --y\n", "D/E.lean": "", "F.lean": "/-! doc -/\nimport D.E\n",
             "G.lean": "def x := 1\nimport D.E\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert _reaches(["A"], "D.E", tmp_path, {})
    assert not _reaches(["F"], "D.E", tmp_path, {}) and not _reaches(["G"], "D.E", tmp_path, {})
    assert _reaches(["New"], "D.E", tmp_path, {"New": "module\n\npublic meta import A\n"})
