"""The environment policy by effect (``fyan.lean.extensions``) against the registry of the real Lean
4.35.0 of the core tier (tests/lean_core.py): ``lean --stats`` lists every persistent environment
extension the binary registers (``extension '<name>'``), and every one must have a row; the danger
patterns of ``fyan.lean.policy`` run against those real names. What this tier cannot list: the
extensions Lake, Batteries and Mathlib register when imported (``initialize``), which ``fyan
selftest`` lists on users' machines (``fyan.trust.learn.registered_extensions``)."""

from __future__ import annotations

import subprocess

import pytest

from fyan.lean import extensions, policy

pytestmark = pytest.mark.lean_core


@pytest.fixture(scope="module")
def registry(core_lean, tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("registry")
    (folder / "Empty.lean").write_text("prelude\n")
    proc = subprocess.run([str(core_lean), "--stats", str(folder / "Empty.lean")], capture_output=True, text=True,
                          timeout=120, cwd=folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = extensions.registered_extensions(proc.stdout)
    assert "number of imported entries:" in proc.stdout and len(names) > 150, proc.stdout[:500]
    return names


def test_every_persistent_extension_of_the_real_lean_has_a_row(registry):
    assert extensions.unclassified(registry) == [], "extensions of Lean 4.35.0 no row of the policy classifies"
    assert len(set(registry)) == len(registry)


def test_every_lean_row_names_an_extension_the_real_lean_registers(registry):
    """The Lean rows are the registry of the version they cite, no more (a misspelt row would
    classify nothing and leave the real extension unclassified)."""
    assert set(extensions.LEAN_ROWS) - set(registry) == set()
    assert set(extensions.LEAN_ROWS) < set(extensions.ROWS)


def test_the_registry_check_fails_on_an_unclassified_extension(registry):
    assert extensions.unclassified([*registry, "Lean.Meta.someNewExt", "_private.Lean.X.0.Lean.otherExt"]) == [
        "Lean.Meta.someNewExt", "_private.Lean.X.0.Lean.otherExt"]


def test_every_danger_pattern_matches_only_extensions_the_table_refuses_or_rules(registry):
    """Run against the real names: a name a danger pattern matches is refused by its row, or is
    governed by the ownership rule (unification hints); the patterns that never match a real name
    are the ones kept for other versions and libraries (named here)."""
    matched: dict[str, list[str]] = {}
    for name in registry:
        why = policy.danger(name)
        if why is None:
            continue
        matched.setdefault(why, []).append(name)
        effect = extensions.row(name).effect
        assert not effect.admitted or effect.key == "unification_hint", (name, why, effect.key)
    unmatched = {why for _, why in policy._DANGEROUS} - set(matched)
    assert unmatched == {"a builtin registration", "a new environment extension"}, unmatched


def test_the_refused_rows_cover_every_compiler_trusting_and_meaning_changing_kind(registry):
    refused = {n for n in registry if not extensions.row(n).effect.admitted}
    for must in ("Lean.Compiler.implementedByAttr", "Lean.externAttr", "Lean.exportAttr", "Lean.Compiler.CSimp.ext",
                 "Lean.regularInitAttr", "Lean.builtinInitAttr", "Lean.Parser.parserExtension", "Lean.Elab.macroAttribute",
                 "Lean.Elab.Term.termElabAttribute", "Lean.Elab.Command.commandElabAttribute",
                 "Lean.Meta.defaultInstanceExtension", "reducibilityExtra", "Lean.Meta.customEliminatorExt",
                 "Lean.Meta.Simp.simprocExtension", "Lean.PrettyPrinter.Delaborator.delabAttribute"):
        assert must in refused, must
    for name in refused:  # every refusal says what to do
        assert extensions.row(name).effect.remedy


def test_the_selftest_lists_the_toolchains_extensions_confined(core_lean, tmp_path):
    """``fyan.trust.learn.registered_extensions`` on the real core lean under the configured
    sandbox (bubblewrap where it works), then what ``fyan selftest`` prints of them."""
    from fyan.config import LeanSection
    from fyan.lean.compile import LeanSetup
    from fyan.sandbox.runner import bwrap_status
    from fyan.trust import learn
    from fyan.selftest import run

    setup = LeanSetup(lean=core_lean, sysroot=core_lean.parent.parent, version="4.35.0", githash="eb6cafb7290e")
    cfg = LeanSection(sandbox="require" if bwrap_status()[0] is not None else "off", build_timeout=120)
    names, problem = learn.registered_extensions(setup, tmp_path / "work", cfg, tmp_path / "logs", imports=[])
    assert problem is None and len(names) > 150 and "Lean.Meta.instanceExtension" in names
    done = learn.Learned(extensions=["Lean.docStringExt"], registry=[*names, "Mathlib.Tactic.fooExt"])
    assert done.unclassified_registered == ["Mathlib.Tactic.fooExt"]
    result = run.SelftestResult(pin="p", unclassified_extensions=done.unclassified_registered)
    text = "\n".join(run.extension_lines(result))
    assert "1 environment extension(s) no row of Fyan's policy classifies" in text
    assert "Mathlib.Tactic.fooExt (registered in the module declaring `Mathlib.Tactic.fooExt`)" in text
    missing, why = learn.registered_extensions(setup, tmp_path / "work2", cfg, tmp_path / "logs", imports=["Nowhere"])
    assert missing == [] and "listed no extension" in why


def test_the_recorded_registry_the_lean_double_prints_is_the_real_one(registry):
    """``tests/fixtures/lean-registry/lean-4.35.0.txt`` (what the Lean double's ``lean --stats``
    prints) is the real 4.35.0 registry, in its order."""
    from tests.fakes.fake_lean import RECORDED_REGISTRY

    lines = RECORDED_REGISTRY.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("SOURCE: `lean --stats`") and lines[1:] == registry


def test_the_library_rows_cite_mathlibs_source_and_their_effects_decide():
    """Rows read in mathlib4 (each cites its file and the registering ``initialize``; the name is
    the declaration's, ``decl_name%``): lemma sets and generator records are admitted, extensions
    holding meta-code (norm_num, positivity) refused with what to do; no danger pattern contradicts
    an admitted row."""
    library = {n: r for n, r in extensions.LIBRARY_ROWS.items() if r.source.startswith(extensions.MATHLIB_SOURCE)}
    assert set(extensions.ROWS) == set(extensions.LEAN_ROWS) | set(extensions.LIBRARY_ROWS)
    assert {"Mathlib.Tactic.GCongr.gcongrExt", "Mathlib.Meta.FunProp.functionTheoremsExt",
            "Mathlib.Tactic.ToAdditive.translations", "simpsAttr", "Simps.structureExt",
            "Mathlib.Meta.NormNum.normNumExt"} <= set(library)
    for name, row in library.items():
        assert row.source.startswith("leanprover-community/mathlib4, Mathlib/") and "`initialize " in row.source
        found = policy.extension_findings([(name, 1)])
        if row.effect.key in ("lemmas", "generator"):
            assert found == [] and policy.danger(name) is None, (name, found)
        else:
            assert row.effect.key == "meta" and "to do: prove with the existing tactics" in found[0], found
    assert policy.extension_findings([("Mathlib.Tactic.Unread.someExt", 1)])[0].startswith(
        "Mathlib.Tactic.Unread.someExt (1 entry): effect: unknown")


def test_the_aesop_and_batteries_rows_cite_their_source_and_their_effects_decide():
    """Rows read in leanprover-community/aesop and leanprover-community/batteries (each cites its file
    @ commit and the registering ``initialize``): an Aesop rule set and its simp set are lemma sets
    (admitted, as ``simpExtension``), its simproc set meta-code (refused, as ``simprocExtension``);
    Batteries' ``alias``, ``library_note``, ``@[nolint]`` and ``@[trans]`` are admitted, its linters
    and code actions refused. The name pattern ``builtin`` of ``danger`` matches Aesop's rule set
    named ``builtin``: the row, not the name, decides."""
    rows = extensions.LIBRARY_ROWS
    aesop = {n for n, r in rows.items() if r.source.startswith(extensions.AESOP_SOURCE + ", Aesop/")}
    batteries = {n for n, r in rows.items() if r.source.startswith(extensions.BATTERIES_SOURCE + ", Batteries/")}
    assert {"default", "builtin", "aesop_default", "aesop_builtin", "aesop_default_proc",
            "Aesop.statsExtension"} <= aesop
    assert {"Batteries.Tactic.Alias.aliasExt", "Batteries.Util.LibraryNote.libraryNoteExt",
            "Batteries.Tactic.Lint.nolintAttr", "Batteries.Tactic.transExt",
            "Batteries.Tactic.Lint.batteriesLinterExt"} <= batteries
    for name in aesop | batteries:
        assert "`initialize " in rows[name].source or "`private initialize " in rows[name].source, name
        assert " @ b5b9e2bb: " in rows[name].source or " @ 45f65c8b: " in rows[name].source, name
    # a module writing Aesop rule-set entries (`@[aesop safe]` on its own lemma) and Batteries bookkeeping passes
    admitted = [("default", 3), ("aesop_default", 1), ("builtin", 1), ("Batteries.Tactic.Alias.aliasExt", 2),
                ("Batteries.Util.LibraryNote.libraryNoteExt", 1), ("Batteries.Tactic.Lint.nolintAttr", 1),
                ("_private.Batteries.Util.ProofWanted.0.wantedArityExt", 1)]
    assert policy.extension_findings(admitted) == []
    assert policy.danger("builtin") == "a builtin registration"
    # the dangerous ones are still refused, naming the row that refuses them
    refused = policy.extension_findings([("aesop_default_proc", 1), ("Batteries.Tactic.Lint.batteriesLinterExt", 1),
                                         ("Batteries.CodeAction.tacticCodeActionExt", 1), ("Lean.regularInitAttr", 1),
                                         ("Aesop.someNewExt", 1)])
    assert [f.split(" ", 1)[0] for f in refused] == ["aesop_default_proc", "Batteries.Tactic.Lint.batteriesLinterExt",
                                                     "Batteries.CodeAction.tacticCodeActionExt", "Lean.regularInitAttr",
                                                     "Aesop.someNewExt"]
    assert "leanprover-community/aesop, Aesop/Frontend/Extension.lean" in refused[0]
    assert "effect: unknown" in refused[4]
    # a project's selftest no longer lists them as unclassified
    assert extensions.unclassified([*aesop, *batteries, "Aesop.someNewExt"]) == ["Aesop.someNewExt"]
