"""Adopting a real-looking Lake package: Lake's own targets, a module that does not
build, drift through helpers no blueprint node names, isolated statements and components.

The package ``chain`` is written here: library ``Chain`` (default roots: ``Chain.lean`` and what it
imports; its files use ``module``, ``public import``, comments and doc comments in their headers)
and library ``Extra`` (``globs = "Extra.+"``) whose ``Extra.Broken`` does not build (it imports a
module that exists nowhere) and ``Extra.UsesBroken`` imports it; ``Scratch.lean`` and
``Chain/Old.lean`` are outside every target (and would not build either). The Lake double
(``tests/fakes/fake_lake.py``) builds it as Lake does (other targets keep building after a
failure; Lake's failure summary), the inspector double (``tests/fakes/fake_inspector.py``) reports
the package's reference graph as ``FyanInspector.lean`` does. Each test fails on main efd1c56:
there the whole adoption stopped at the first unbuilt file, the imports were read as
``^import`` lines, drift only saw direct statement-level uses, and nothing named isolated
statements.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fyan.adopt.package import read_package
from fyan.cli import main

LAKEFILE = """name = "chain"

[[lean_lib]]
name = "Chain"

[[lean_lib]]
name = "Extra"
globs = "Extra.+"
"""

FILES = {
    "Chain.lean": "/- the library's root -/\nimport Chain.A -- first\nimport Chain.B\n",
    "Chain/A.lean": "module\n\n/-! The base facts. -/\n\ntheorem Chain.b_fact : True := trivial\n\n"
                    "def Chain.base : Nat := 1\n",
    "Chain/B.lean": "module\n-- helpers first\n/- a /- nested -/ comment -/\npublic import Chain.A\n\n"
                    "/-- A helper no blueprint node names. -/\ntheorem Chain.helper2 : True := Chain.b_fact\n\n"
                    "theorem Chain.helper1 : True := Chain.helper2\n\n"
                    "theorem Chain.a_main : True := Chain.helper1\n\n"
                    "theorem Chain.p_fact : 1 = 1 := rfl\n\n"
                    "theorem Chain.q_fact : 1 = 1 := Chain.p_fact\n",
    "Chain/Old.lean": "import Nowhere.Gone\ntheorem Chain.old : True := trivial\n",
    "Extra/Good.lean": "import Chain.A\ntheorem Extra.good : True := trivial\n",
    "Extra/Broken.lean": "import Missing.Module\ntheorem Extra.broken : True := trivial\n",
    "Extra/UsesBroken.lean": "/-! doc -/\nimport Extra.Broken\n",  # the doc comment ends the header: no import
    "Extra/UsesBroken2.lean": "prelude\nimport Extra.Broken\ntheorem Extra.uses_broken : True := Extra.broken\n",
    "Scratch.lean": "import Nope\n#eval 1\n",
}

BLUEPRINT = r"""\chapter{Chain}

\begin{definition}\label{def:base}\lean{Chain.base}\leanok
The base.
\end{definition}

\begin{lemma}\label{lem:b}\lean{Chain.b_fact}\leanok
\uses{def:base}
A fact.
\end{lemma}
\begin{proof}\leanok
Trivial.
\end{proof}

\begin{theorem}\label{thm:a}\lean{Chain.a_main}\leanok
\uses{def:base}
The main fact.
\end{theorem}
\begin{proof}\leanok
Through two helpers.
\end{proof}

\begin{lemma}\label{lem:p}\lean{Chain.p_fact}\leanok
P.
\end{lemma}
\begin{proof}\leanok
Rfl.
\end{proof}

\begin{lemma}\label{lem:q}\lean{Chain.q_fact}\leanok
\uses{lem:p}
Q.
\end{lemma}
\begin{proof}\leanok
By P.
\end{proof}

\begin{lemma}\label{lem:lonely}\lean{Extra.good}\leanok
Alone.
\end{lemma}
\begin{proof}\leanok
Trivial.
\end{proof}

\begin{lemma}\label{lem:broken}\lean{Extra.broken}
Not built.
\end{lemma}
\begin{proof}
\uses{lem:b}
Later.
\end{proof}
"""


@pytest.fixture
def chain(tmp_path) -> Path:
    pkg = tmp_path / "chain"
    for rel, text in {**FILES, "lakefile.toml": LAKEFILE, "lean-toolchain": "leanprover/lean4:v4.34.1\n"}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    src = tmp_path / "bp"
    src.mkdir()
    (src / "content.tex").write_text(BLUEPRINT)
    return pkg


def run(capsys, *argv):
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_modules_are_those_of_the_lake_targets(chain):
    pkg = read_package(chain)
    assert pkg.libs == ["Chain", "Extra"]
    assert set(pkg.modules) == {"Chain", "Chain.A", "Chain.B", "Extra.Good", "Extra.Broken", "Extra.UsesBroken",
                                "Extra.UsesBroken2"}
    assert pkg.outside == ["Chain/Old.lean", "Scratch.lean"]


@pytest.mark.parametrize("config, modules", [
    ('name = "p"\ndefaultTargets = ["L"]\n[[lean_lib]]\nname = "L"\n[[lean_lib]]\nname = "T"\n', {"L", "L.X"}),
    ('name = "p"\n[[lean_lib]]\nname = "L"\nroots = ["L.X"]\n', {"L.X"}),
    ('name = "p"\n[[lean_lib]]\nname = "L"\nglobs = ["L.*"]\n', {"L", "L.X", "L.Y", "L.Y.Z"}),
    ('name = "p"\n[[lean_lib]]\nname = "L"\nglobs = ["L.+"]\n', {"L.X", "L.Y", "L.Y.Z"}),
    ('name = "p"\nsrcDir = "src"\n[[lean_lib]]\nname = "L"\n', {"L", "L.X"}),
    ('name = "p"\n[[lean_lib]]\nname = "L"\nsrcDir = "src"\nglobs = "L.Y.*"\n', {"L.Y", "L.Y.Z"}),
])
def test_roots_globs_src_dirs_and_default_targets_as_lake_resolves_them(tmp_path, config, modules):
    for base in (tmp_path, tmp_path / "src"):
        for rel, text in {"L.lean": "module\npublic import L.X\n", "L/X.lean": "", "L/Y.lean": "",
                          "L/Y/Z.lean": "", "T.lean": "", "T/A.lean": ""}.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_text(text)
    (tmp_path / "lakefile.toml").write_text(config)
    (tmp_path / "lean-toolchain").write_text("leanprover/lean4:v4.34.1\n")
    pkg = read_package(tmp_path)
    assert set(pkg.modules) == modules
    assert all((tmp_path / pkg.sources[m]).is_file() for m in pkg.modules)
    assert len(pkg.outside) == 12 - len(modules)  # every other .lean file is listed


@pytest.mark.parametrize("lakefile, modules", [
    ('import Lake\nopen Lake DSL\npackage p\n@[default_target]\nlean_lib L where\n  globs := #[.submodules `L]\n'
     "lean_lib T\n", {"L.X", "L.Y", "L.Y.Z"}),
    ("import Lake\nopen Lake DSL\npackage p where\n  srcDir := \"src\"\nlean_lib L where\n  roots := #[`L.Y]\n"
     "  globs := #[`L.Y.*, Glob.one `L.X]\n", {"L.Y", "L.Y.Z", "L.X"}),
    ("import Lake\nopen Lake DSL\npackage p\n-- lean_lib Commented\nlean_lib «L» where\n  globs := #[`L.+]\n",
     {"L.X", "L.Y", "L.Y.Z"}),
])
def test_lakefile_lean_targets(tmp_path, lakefile, modules):
    for base in (tmp_path, tmp_path / "src"):
        for rel in ("L.lean", "L/X.lean", "L/Y.lean", "L/Y/Z.lean", "T.lean"):
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_text("")
    (tmp_path / "lakefile.lean").write_text(lakefile)
    (tmp_path / "lean-toolchain").write_text("leanprover/lean4:v4.34.1\n")
    assert set(read_package(tmp_path).modules) == modules


def test_a_stray_file_and_an_unbuilt_target_module_leave_the_rest_adopted(fake_lake, tmp_path, chain, capsys):
    code, out = run(capsys, "init", str(tmp_path / "p"), "--source", str(tmp_path / "bp" / "content.tex"),
                    "--lean-project", str(chain))
    assert code == 0, out
    adoption = out["adoption"]
    assert adoption["unbuilt"] == {"Extra.Broken": "does not build",
                                   "Extra.UsesBroken2": "imports Extra.Broken, which does not build"}
    assert adoption["outside"] == ["Chain/Old.lean", "Scratch.lean"]
    outcome = {d["unit"]: d["outcome"] for d in adoption["decisions"]}
    code, status = run(capsys, "status", str(tmp_path / "p"))
    by_label = {u["label"]: outcome[u["id"]] for u in status["units"]}
    assert by_label == {"def:base": "adopted", "lem:b": "adopted", "thm:a": "adopted", "lem:p": "adopted",
                        "lem:q": "adopted", "lem:lonely": "adopted", "lem:broken": "pipeline"}
    # the text says what was left out, by name
    assert main(["adopt", str(tmp_path / "p")]) == 0
    text = capsys.readouterr().out
    assert "Extra.Broken does not build" in text and "Scratch.lean" in text


def test_drift_follows_helpers_and_names_isolated_statements_and_components(fake_lake, tmp_path, chain, capsys):
    assert main(["init", str(tmp_path / "p"), "--source", str(tmp_path / "bp" / "content.tex"),
                 "--lean-project", str(chain), "--json"]) == 0
    capsys.readouterr()
    code, out = run(capsys, "drift", str(tmp_path / "p"))
    assert code == 3
    uses = [d for d in out["drift"] if d["kind"] == "uses-missing"]
    assert [(d["label"], d["detail"].split(":")[0]) for d in uses] == [
        ("thm:a", "Chain.a_main → Chain.helper1 → Chain.helper2 → Chain.b_fact")]
    assert "through Chain.helper1, Chain.helper2, which no blueprint node names" in uses[0]["detail"]
    # lem:q's \uses{lem:p} is there: no finding; lem:lonely has no \uses in or out
    assert out["isolated"] == ["lem:lonely"]
    assert out["components"] == [["def:base", "lem:b", "thm:a", "lem:broken"], ["lem:p", "lem:q"]]
    main(["drift", str(tmp_path / "p")])
    text = capsys.readouterr().out
    assert "Isolated" in text and "lem:lonely" in text and "Disconnected" in text
