"""Mathlib-first projects: the table of Mathlib tag / toolchain pairs and of kernel soundness
bugs (``fyan.lean.mathlib``), ``fyan init``'s library choice, the trusted fetch step
(``fyan.lakepackage.fetch``, with the Lake double's ``lake update`` and ``lake exe cache get``:
docs/lean-contract.md, "Fetching dependencies") and the gate's rule on a toolchain with a known
kernel soundness bug."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from fyan.cli import main
from fyan.config import LeanSection
from fyan.lean import mathlib
from fyan.lakepackage.fetch import MATHLIB_OLEAN, FetchError, FetchProgress, ensure_fetched, git_requires, missing
from fyan.lean.toolchain import discover, pin_version
from tests.helpers import CHAIN_TEX


# -- the table -----------------------------------------------------------------------------

def test_every_pair_pins_the_toolchain_its_tag_names_and_the_default_is_the_configured_pin():
    for pair in mathlib.PAIRS:
        assert pin_version(pair.toolchain) == pair.mathlib.removeprefix("v"), pair
        assert pair.source and pair.checked in ("double", "listed")
    assert mathlib.DEFAULT in mathlib.PAIRS
    assert LeanSection().toolchain == mathlib.DEFAULT.toolchain  # the configured default is the table's
    assert mathlib.affected_by(pin_version(mathlib.DEFAULT.toolchain)) == []  # a release with every 2026 fix


@pytest.mark.parametrize("version, bugs", [
    ("4.31.0", ["lean4#14484", "lean4#14576", "lean4#14616"]),   # the old default pin: before every fix
    ("4.19.0-rc2", ["lean4#14484", "lean4#14576", "lean4#14616"]),
    ("4.32.0", ["lean4#14484", "lean4#14576", "lean4#14616"]),
    ("4.32.1", ["lean4#14576", "lean4#14616"]),                  # #14498 landed in 4.32.1
    ("4.32.2", ["lean4#14616"]),                                 # #14577 in 4.32.2; #14616 only from 4.33
    ("4.33.0-rc1", ["lean4#14484", "lean4#14576", "lean4#14616"]),
    ("4.33.0-rc2", []),
    ("4.33.0", []),
    ("4.34.1", []),
    ("4.35.0-rc3", []),
    ("nightly-2026-07-28", ["lean4#14484", "lean4#14576", "lean4#14616"]),
    ("nightly-2026-07-29", ["lean4#14484", "lean4#14616"]),      # fixed nightly known only for #14577
    ("4.34.1-custom", ["lean4#14484", "lean4#14576", "lean4#14616"]),  # a build Fyan cannot read: fail closed
    (None, ["lean4#14484", "lean4#14576", "lean4#14616"]),
])
def test_known_kernel_soundness_bugs_by_version(version, bugs):
    assert [b.issue for b in mathlib.affected_by(version)] == bugs


def test_a_tag_outside_the_table_is_pinned_by_mathlibs_convention_and_a_branch_or_commit_is_refused():
    assert mathlib.pair_for("v4.34.1") == mathlib.DEFAULT
    other = mathlib.pair_for("v4.36.0")
    assert (other.toolchain, other.checked) == ("leanprover/lean4:v4.36.0", "unlisted")
    for rev in ("master", "main", "0123abc", "4.34.1", "v4.34", "v4.34.1; rm -rf ~"):
        with pytest.raises(ValueError, match="not a Mathlib release tag"):
            mathlib.pair_for(rev)
    assert mathlib.check_pair("v4.34.1", "leanprover/lean4:v4.34.1") is None
    assert "names the toolchain leanprover/lean4:v4.34.1 but lean-toolchain pins" in mathlib.check_pair(
        "v4.34.1", "leanprover/lean4:v4.33.0")
    assert "not in Fyan's table" in mathlib.check_pair("v4.36.0", "leanprover/lean4:v4.36.0")


def test_configuration_refuses_a_mathlib_revision_that_is_no_tag(tmp_path):
    with pytest.raises(ValueError, match="not a Mathlib release tag"):
        LeanSection(mathlib="master")
    assert LeanSection(mathlib="v4.33.0").mathlib == "v4.33.0"


# -- fyan init -----------------------------------------------------------------------------

def _source(tmp_path: Path) -> Path:
    src = tmp_path / "doc.tex"
    src.write_text(CHAIN_TEX)
    return src


def test_init_requires_mathlib_at_a_pair_from_the_table_offline(tmp_path, no_lake, capsys):
    code = main(["init", str(tmp_path / "p"), "--source", str(_source(tmp_path))])
    out = capsys.readouterr().out
    assert code == 0, out
    lean = tmp_path / "p" / "lean"
    lakefile = tomllib.loads((lean / "lakefile.toml").read_text())
    assert lakefile["require"] == [{"name": "mathlib", "scope": "leanprover-community", "rev": "v4.34.1"}]
    assert (lean / "lean-toolchain").read_text().strip() == "leanprover/lean4:v4.34.1"
    config = tomllib.loads((tmp_path / "p" / "fyan.toml").read_text())["lean"]
    assert config == {"toolchain": "leanprover/lean4:v4.34.1", "mathlib": "v4.34.1", "extra_imports": ["Mathlib"]}
    assert "Library: Mathlib v4.34.1 with toolchain leanprover/lean4:v4.34.1 (nothing fetched yet" in out
    assert "fyan setup" in out and not (lean / ".lake").exists()  # nothing fetched, no network touched


def test_init_core_and_another_tag(tmp_path, no_lake, capsys):
    assert main(["init", str(tmp_path / "core"), "--source", str(_source(tmp_path)), "--core"]) == 0
    lean = tmp_path / "core" / "lean"
    assert "require" not in tomllib.loads((lean / "lakefile.toml").read_text())
    assert "core Lean only" in capsys.readouterr().out
    assert main(["init", str(tmp_path / "old"), "--source", str(_source(tmp_path)), "--mathlib", "v4.33.0"]) == 0
    assert (tmp_path / "old" / "lean" / "lean-toolchain").read_text().strip() == "leanprover/lean4:v4.33.0"
    assert 'rev = "v4.33.0"' in (tmp_path / "old" / "lean" / "lakefile.toml").read_text()


@pytest.mark.parametrize("extra", [["--mathlib", "master"], ["--mathlib", "v4.34.1", "--core"]])
def test_init_refuses_a_revision_without_a_toolchain_and_creates_nothing(tmp_path, no_lake, capsys, extra):
    assert main(["init", str(tmp_path / "p"), "--source", str(_source(tmp_path)), *extra]) == 2
    assert not (tmp_path / "p").exists()


# -- fetching (the Lake double) -----------------------------------------------------------

def _package(tmp_path: Path, rev: str = "v4.34.1") -> Path:
    pkg = tmp_path / "lean"
    pkg.mkdir(parents=True)
    (pkg / "lakefile.toml").write_text('name = "L"\n\n[[lean_lib]]\nname = "L"\n' + mathlib.require_block(rev))
    (pkg / "lean-toolchain").write_text(f"leanprover/lean4:{rev}\n")
    return pkg


def _fetch_calls(fake) -> list[list[str]]:
    """The fetch commands the double ran, each with Lake's ``--keep-toolchain`` (Fyan's pin is never
    rewritten), shown without it."""
    calls = [c["argv"] for c in fake.calls() if "update" in c["argv"] or c["argv"][-3:] == ["exe", "cache", "get"]]
    assert all(c[0] == "--keep-toolchain" for c in calls), calls
    return [c[1:] for c in calls]


def test_fetch_runs_update_then_cache_get_once_with_progress(tmp_path, fake_lake):
    pkg = _package(tmp_path)
    tc = discover(LeanSection(lake=str(fake_lake.path))).toolchain
    shown = FetchProgress(enabled=False, every_s=0)
    report = ensure_fetched(pkg, tc, tmp_path / "state", progress=shown)
    assert _fetch_calls(fake_lake) == [["update"], ["exe", "cache", "get"]]
    assert (pkg / MATHLIB_OLEAN).is_file() and missing(pkg, tmp_path / "state" / "fetched.json") == []
    assert [s.ok for s in report.steps] == [True, True]
    # what, how much, how long: the step, the cache program's counter, the seconds
    assert any(line.startswith("fetching: lake exe cache get") and "Downloaded: 8 file(s) [attempted 8/8 = 100%]"
               in line and line.endswith(" s)") for line in shown.lines), shown.lines
    assert any(line.startswith("fetched: lake update") for line in shown.lines)
    again = ensure_fetched(pkg, tc, tmp_path / "state", progress=FetchProgress(enabled=False))
    assert again.steps == [] and len(_fetch_calls(fake_lake)) == 2  # nothing fetched twice


def test_an_interrupted_cache_download_is_resumed_and_nothing_is_recorded_before(tmp_path, fake_lake):
    pkg = _package(tmp_path)
    tc = discover(LeanSection(lake=str(fake_lake.path))).toolchain
    fake_lake.scenario({"cache_get": {"kill_after": 3, "times": 1}})
    with pytest.raises(FetchError) as e:
        ensure_fetched(pkg, tc, tmp_path / "state", progress=FetchProgress(enabled=False))
    assert "Mathlib's compiled modules" in e.value.message and "fyan setup" in e.value.hint
    assert not (tmp_path / "state" / "fetched.json").exists() and not (pkg / MATHLIB_OLEAN).exists()
    report = ensure_fetched(pkg, tc, tmp_path / "state", progress=FetchProgress(enabled=False))
    assert [s.command for s in report.steps] == [["exe", "cache", "get"]]  # the manifest was already current
    log = Path(report.steps[0].log).read_text()
    assert "Attempting to download 5 file(s)" in log  # the 3 downloaded before the kill are kept
    assert (pkg / MATHLIB_OLEAN).is_file()


def test_offline_update_fails_clearly_and_leaves_no_manifest(tmp_path, fake_lake):
    pkg = _package(tmp_path)
    tc = discover(LeanSection(lake=str(fake_lake.path))).toolchain
    fake_lake.scenario({"update": {"exit": 1, "output": "error: mathlib: failed to clone: could not resolve host: "
                                                         "github.com"}})
    with pytest.raises(FetchError) as e:
        ensure_fetched(pkg, tc, tmp_path / "state", progress=FetchProgress(enabled=False), command="fyan setup P")
    assert "no lake-manifest.json yet" in e.value.message and "could not resolve host" in e.value.message
    assert "`fyan setup P`" in e.value.hint
    assert not (pkg / "lake-manifest.json").exists() and _fetch_calls(fake_lake) == [["update"]]


def test_a_stale_manifest_is_updated(tmp_path, fake_lake):
    pkg = _package(tmp_path, "v4.33.0")
    tc = discover(LeanSection(lake=str(fake_lake.path))).toolchain
    ensure_fetched(pkg, tc, tmp_path / "state", progress=FetchProgress(enabled=False))
    (pkg / "lakefile.toml").write_text((pkg / "lakefile.toml").read_text().replace("v4.33.0", "v4.34.1"))
    assert "pins mathlib at v4.33.0, lakefile.toml asks for v4.34.1" in missing(pkg, tmp_path / "state" / "fetched.json")[0]
    ensure_fetched(pkg, tc, tmp_path / "state", progress=FetchProgress(enabled=False))
    manifest = json.loads((pkg / "lake-manifest.json").read_text())
    assert {p["name"]: p["inputRev"] for p in manifest["packages"]}["mathlib"] == "v4.34.1"


def test_a_core_package_fetches_nothing(tmp_path, fake_lake):
    pkg = tmp_path / "lean"
    pkg.mkdir()
    (pkg / "lakefile.toml").write_text('name = "L"\n\n[[lean_lib]]\nname = "L"\n')
    assert git_requires(pkg) == {}
    tc = discover(LeanSection(lake=str(fake_lake.path))).toolchain
    assert ensure_fetched(pkg, tc, tmp_path / "state").steps == [] and _fetch_calls(fake_lake) == []


def test_setup_command_fetches_a_new_mathlib_project(tmp_path, fake_lake, capsys):
    assert main(["init", str(tmp_path / "p"), "--source", str(_source(tmp_path))]) == 0
    capsys.readouterr()
    code = main(["setup", str(tmp_path / "p"), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["fetched"] and [s["command"] for s in payload["steps"]] == [["update"],
                                                                                               ["exe", "cache", "get"]]
    assert main(["setup", str(tmp_path / "p")]) == 0
    assert "dependencies already fetched (mathlib v4.34.1)" in capsys.readouterr().out
    assert len(_fetch_calls(fake_lake)) == 2


# -- the gate on a toolchain with a known kernel soundness bug ------------------------------

def _on_lean(s, version: str) -> dict:
    """Make the double a toolchain of Lean ``version`` and pin the project's package to it (no
    selftest record exists for it: trusted without one, which every report states)."""
    (s.project.paths.lean / "lean-toolchain").write_text(f"leanprover/lean4:v{version}\n")
    s.project.config.lean.trust_without_selftest = True
    return {"lean_version": version}


def _tools(folder: Path, names: dict[str, str]) -> None:
    folder.mkdir(exist_ok=True)
    for name, body in names.items():
        (folder / name).write_text(f"#!/bin/sh\n{body}\n")
        (folder / name).chmod(0o755)


@pytest.mark.parametrize("version, bugs", [("4.31.0", ["lean4#14484", "lean4#14576", "lean4#14616"]),
                                           ("4.32.2", ["lean4#14616"])])
def test_the_gate_completes_nothing_on_a_kernel_with_a_known_soundness_bug_without_an_independent_kernel(
        fake_lake, tmp_path, monkeypatch, version, bugs):
    from tests import gate_harness as h

    monkeypatch.delenv("COMPARATOR_NANODA", raising=False)
    s = h.setup(tmp_path / "p", h.HONEST)
    report = s.gate(_on_lean(s, version), fake=fake_lake)
    check = report.check("comparator")
    assert not report.passed and check.status == "fail" and check.required
    assert check.reason.startswith(f"Lean {version} has known kernel soundness bugs: ")
    for bug in bugs:
        assert bug in check.reason
    assert check.evidence["kernel_bugs"] == bugs
    assert "fixed in Lean 4.33.0-rc2 (lean4#14616)" in check.reason
    assert report.environment_problem and "independent kernel" in report.environment_problem
    # every other check passed: only the kernel's trust is missing (an honest unit, not a cheat)
    assert all(c.passed for c in report.checks if c.required and c.name != "comparator"), report.checks


def test_on_such_a_kernel_comparator_with_nanoda_completes_the_unit_and_without_nanoda_does_not(
        fake_lake, tmp_path, monkeypatch):
    from tests import gate_harness as h

    bin_dir = tmp_path / "bin"
    _tools(bin_dir, {"comparator": "echo 'Your solution is okay!'", "landrun": "exit 0", "lean4export": "exit 0"})
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("COMPARATOR_NANODA", raising=False)
    s = h.setup(tmp_path / "p", h.HONEST)
    scenario = _on_lean(s, "4.32.1")
    without = s.gate(scenario, fake=fake_lake)
    assert not without.passed and "comparator accepts" in without.check("comparator").reason  # ran, but Lean's kernel only
    config = json.loads((s.project.paths.root / "gate-logs" / "comparator.json").read_text())
    assert config["enable_nanoda"] is False
    _tools(bin_dir, {"nanoda_bin": "exit 0"})
    with_nanoda = s.gate(scenario, fake=fake_lake)
    assert with_nanoda.passed and with_nanoda.check("comparator").evidence["nanoda"] == str(bin_dir / "nanoda_bin")
    assert json.loads((s.project.paths.root / "gate-logs" / "comparator.json").read_text())["enable_nanoda"] is True


def test_the_default_toolchain_completes_an_honest_unit_without_comparator(fake_lake, tmp_path):
    from tests import gate_harness as h

    s = h.setup(tmp_path / "p", h.HONEST)
    report = s.gate(None, fake=fake_lake)
    assert report.passed and report.check("comparator").status == "unavailable"


def test_doctor_and_selftest_name_the_bugs_and_their_fixes():
    status = mathlib.library_status(LeanSection(mathlib="v4.34.1", toolchain="leanprover/lean4:v4.33.0"),
                                    "4.32.1", True, nanoda=False)
    assert "names the toolchain leanprover/lean4:v4.34.1 but lean-toolchain pins leanprover/lean4:v4.33.0" in \
        status["library"]["detail"]
    assert status["kernel"]["ok"] is False and status["kernel"]["bugs"] == ["lean4#14576", "lean4#14616"]
    assert "fixed in Lean 4.32.2 and 4.33.0-rc2 (lean4#14577)" in status["kernel"]["detail"]
    assert "completes NO unit" in status["kernel"]["detail"]
    fine = mathlib.library_status(LeanSection(mathlib="v4.34.1"), "4.34.1", True, nanoda=False)
    assert fine["kernel"]["ok"] is True and fine["library"]["pair_problem"] is None
    from fyan.selftest.run import kernel_soundness_line

    assert "lean4#14484" in kernel_soundness_line("4.31.0") and "4.32.1" in kernel_soundness_line("4.31.0")
    assert kernel_soundness_line("4.34.1") == "kernel: Lean 4.34.1 has none of the known kernel soundness bugs"


# -- one copy of the packages ----------------------------------------------------------------

def test_workspaces_read_the_projects_one_set_of_packages_and_hold_no_copy(fake_lake, tmp_path):
    import subprocess

    from fyan.lakepackage.workspace import prepare_workspace
    from tests import gate_harness as h

    s = h.setup(tmp_path / "p", h.HONEST)
    pkg = s.project.paths.lean
    (pkg / "lakefile.toml").write_text((pkg / "lakefile.toml").read_text() + mathlib.require_block("v4.34.1"))
    tc = discover(LeanSection(lake=str(fake_lake.path))).toolchain
    ensure_fetched(pkg, tc, s.project.paths.state, progress=FetchProgress(enabled=False))
    unit = s.store.unit("thm-root")
    for _ in range(2):  # a second preparation (the next attempt) keeps it so
        ws = prepare_workspace(s.project, unit, {"Basic": s.basic.read_text()}, store=s.store)
    assert not [p for p in (s.project.paths.workspaces).rglob("packages") if p.parent.name == ".lake"]
    lakefile = tomllib.loads((ws.root / "lakefile.toml").read_text())
    assert (ws.root / lakefile["packagesDir"]).resolve() == (pkg / ".lake" / "packages").resolve()
    assert json.loads((ws.root / "lake-manifest.json").read_text())["packagesDir"] == lakefile["packagesDir"]
    # Lake (the double, following packagesDir) finds Mathlib where the project fetched it
    printed = subprocess.run([str(fake_lake.path), "env", "printenv", "LEAN_PATH"], cwd=ws.root, capture_output=True,
                             text=True).stdout
    assert str((pkg / ".lake" / "packages" / "mathlib" / ".lake" / "build" / "lib" / "lean").resolve()) in printed
    assert s.gate(None, fake=fake_lake).passed
    assert not [p for p in s.project.paths.root.rglob("packages") if p.parent.name == ".lake"
                and (pkg / ".lake") not in p.parents and p != pkg / ".lake" / "packages"]
    assert _fetch_calls(fake_lake) == [["update"], ["exe", "cache", "get"]]  # fetched once, never in a workspace


def _requires_mathlib(example: Path, rev: str) -> None:
    """The example's Lake package with Mathlib added by hand (its fyan.toml unchanged, so the
    prompts — and the example's recorded responses — stay those of the shipped example)."""
    from fyan.lakepackage.package import _template

    lean = example / "lean"
    lean.mkdir()
    (lean / "lakefile.toml").write_text(_template("lakefile.toml", lib="TasteNumberTheory") + mathlib.require_block(rev))
    (lean / "lean-toolchain").write_text(f"leanprover/lean4:{rev}\n")


def test_run_fetches_once_shows_progress_and_survives_an_interrupted_fetch(example, fake_lake, capsys):
    from fyan.state.store import Store

    _requires_mathlib(example, "v4.34.1")
    fake_lake.scenario({"cache_get": {"kill_after": 2, "times": 1}})
    code = main(["run", str(example)])
    out = capsys.readouterr()
    assert code == 3, out
    assert "Mathlib's compiled modules" in out.err + out.out and f"fyan setup {example}" in out.err + out.out
    assert Store(example / ".fyan" / "state.db").runs() == []  # nothing attempted without the dependencies
    assert not (example / ".fyan" / "fetched.json").exists()
    code = main(["run", str(example), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.out[-2000:]
    assert json.loads(out.out)["counts"] == {"complete": 11}
    assert "fetching: lake exe cache get" in out.err and "Downloaded: 6 file(s) [attempted 6/6 = 100%]" in out.err
    assert _fetch_calls(fake_lake) == [["update"], ["exe", "cache", "get"], ["exe", "cache", "get"]]
    assert main(["run", str(example), "--json"]) == 0
    assert len(_fetch_calls(fake_lake)) == 3  # fetched: a later run fetches nothing
    # one set of packages: the executor's mirror of the project package links it; no workspace has one
    packages = example / "lean" / ".lake" / "packages"
    others = [p for p in example.rglob("packages") if p.parent.name == ".lake" and p != packages]
    assert all(p.is_symlink() and p.resolve() == packages.resolve() for p in others), others
    assert not [p for p in others if "workspaces" in p.parts or "gate" in p.parts]
    assert (example / "workspaces").is_dir() or (example / ".fyan" / "executor").is_dir()


# -- fyan upgrade --------------------------------------------------------------------------------

def test_upgrade_moves_the_pair_rechecks_every_unit_and_reopens_what_no_longer_reproduces(example, fake_lake, capsys):
    from fyan.project import Project
    from fyan.state.models import UnitStatus
    from fyan.state.store import Store

    toml = example / "fyan.toml"
    toml.write_text(toml.read_text() + '\n[lean]\ntoolchain = "leanprover/lean4:v4.33.0"\ntrust_without_selftest = true\n')
    _requires_mathlib(example, "v4.33.0")
    fake_lake.scenario({"lean_version": "4.33.0"})
    assert main(["run", str(example), "--json"]) == 0
    capsys.readouterr()
    lean = example / "lean"
    store = Store(example / ".fyan" / "state.db")
    leaf = [u for u in store.units() if not [d for d in store.deps() if d.depends_on == u.id]][-1]
    root_decl = next(f.decl for f in store.freezes(leaf.id) if f.role == "root")
    store.close()

    # offline: the fetch fails, nothing of the project changes
    fake_lake.scenario({"lean_version": "4.34.1", "update": {"exit": 1, "output": "error: could not resolve host"}})
    before = {n: (lean / n).read_text() for n in ("lakefile.toml", "lean-toolchain")}, toml.read_text()
    assert main(["upgrade", str(example), "--mathlib", "v4.34.1"]) == 3
    assert "fyan upgrade" in capsys.readouterr().err
    assert ({n: (lean / n).read_text() for n in ("lakefile.toml", "lean-toolchain")}, toml.read_text()) == before

    # the new pair: one unit's statement elaborates differently there, every other unit reproduces
    fake_lake.scenario({"lean_version": "4.34.1", "inspect": {root_decl: {"type_repr": "elaborated differently"}}})
    code = main(["upgrade", str(example), "--mathlib", "v4.34.1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3, out
    assert (out["previous"], out["mathlib"], out["toolchain"]) == (
        {"mathlib": None, "toolchain": "leanprover/lean4:v4.33.0"}, "v4.34.1", "leanprover/lean4:v4.34.1")
    assert len(out["checked"]) == 11 and [u for u, ok in out["checked"].items() if not ok] == [leaf.id]
    assert list(out["reopened"]) == [leaf.id]
    assert out["reopened"][leaf.id].startswith("does not reproduce on Mathlib v4.34.1 / leanprover/lean4:v4.34.1")
    # the new pair is the project's, the previous one kept (a unit did not reproduce)
    assert 'rev = "v4.34.1"' in (lean / "lakefile.toml").read_text()
    assert (lean / "lean-toolchain").read_text().strip() == "leanprover/lean4:v4.34.1"
    config = Project.open(example).config.lean
    assert (config.mathlib, config.toolchain) == ("v4.34.1", "leanprover/lean4:v4.34.1")
    previous = example / out["previous_kept_in"]
    assert 'rev = "v4.33.0"' in (previous / "lakefile.toml").read_text()
    assert (previous / ".lake" / "packages" / "mathlib").is_dir()
    # the reopened unit goes back to the prover with the reason; its artifacts stay; it left the package
    store = Store(example / ".fyan" / "state.db")
    view = store.views(3)[leaf.id]
    assert view.status is not UnitStatus.COMPLETE and view.next_stage.value == "prove"
    assert (example / "units" / leaf.id / "Basic.lean").is_file()
    assert f"{leaf.module}.Basic" not in (lean / "TasteNumberTheory.lean").read_text()
    assert sum(v.status is UnitStatus.COMPLETE for v in store.views(3).values()) == 10
    store.close()
    fetch_cwds = [c["cwd"] for c in fake_lake.calls() if "update" in c["argv"]]
    assert all("/.fyan/upgrade/v4.34.1" in c for c in fetch_cwds[1:])  # fetched beside the project, never in lean/


# -- the models know where they are ---------------------------------------------------------------

RECORDED = json.loads((Path(__file__).parent / "fixtures" / "mathlib" / "declarations.json").read_text())


def test_the_prompts_library_section_names_what_is_in_scope():
    with_mathlib = mathlib.library_prompt(LeanSection(mathlib="v4.34.1", extra_imports=["Mathlib"]))
    assert with_mathlib.startswith("Mathlib v4.34.1 (with leanprover/lean4:v4.34.1); every unit file imports `Mathlib`")
    assert "a document's \"group\" is `Group`" in with_mathlib
    core = mathlib.library_prompt(LeanSection())
    assert core.startswith("Core Lean 4 only: the project's Lake package requires no Mathlib") and "Group" not in core
    assert "adopted Lake package `Blue`" in mathlib.library_prompt(LeanSection(), adopted="Blue")
    root = Path(__file__).parents[1] / "prompts"
    for name in ("plan.user.md", "prove.user.md", "prove_agent.user.md"):
        assert "## Library in scope\n\n$library\n" in (root / name).read_text()
    assert "core only" not in (root / "plan.system.md").read_text()


def _dag(*nodes: dict):
    from fyan.models.replies import LemmaDag

    return LemmaDag.model_validate({"roots": [nodes[0]["name"]], "nodes": list(nodes)})


@pytest.mark.parametrize("lean, blueprint, finding", [
    ("def IsGroupLike (G : Type) [Mul G] : Prop := ∀ a b c : G, a * b * c = a * (b * c)", "", True),  # its own notion
    ("abbrev IsGroupLike (G : Type) := Group G", "", False),                                          # the library's
    ("def IsGroupLike (G : Type) [Mul G] : Prop := ∀ a b c : G, a * b * c = a * (b * c)",
     "Redefines `Group`: the document's groups need no inverses.", False),                               # justified
    ("def IsGroupLike (G : Type) [Mul G] : Prop := True", "Redefines `Group`:", True),                   # no reason
    ("def IsGroupLike (G : Type) [Mul G] : Prop := GroupLikeThing G", "", True),                         # not the name
])
def test_a_definition_that_redefines_the_library_is_a_finding_to_justify(lean, blueprint, finding):
    from fyan.audit.library import redefinitions

    dag = _dag({"name": "IsGroupLike", "kind": "def", "statement": "a group", "library": "Group"})
    found = redefinitions(dag, lean, blueprint)
    assert bool(found) == finding, found
    if finding:
        assert "`IsGroupLike` redefines `Group`, which the library has" in found[0]


def test_a_redefinition_routes_an_otherwise_freezing_audit_back_to_the_planner():
    from fyan.audit import decide as d
    from tests.test_audit_pipeline import ALL_SAME, FAITHFUL, FULL, SOURCE, TEX

    problem = TEX.split("\n", 1)[1].rsplit("\\end", 1)[0].strip()
    files = {d.SOURCE: json.dumps(SOURCE).encode(), d.SOURCE_CHECK: json.dumps(FAITHFUL).encode(),
             d.RECORD: json.dumps({"root": "small_sq", **ALL_SAME}).encode()}
    base = dict(unit="thm-small", kind="theorem", problem=problem, statement=FULL, namespace="", roots=["small_sq"])
    assert d.decide(d.AuditInputs(**base), files).result.routing == "freeze"
    finding = "the definition `X` redefines `Group`, which the library has: ..."
    redo = d.decide(d.AuditInputs(**base, redefinitions=[finding]), files).result
    assert redo.valid and redo.routing == "repair" and redo.repairs[0] == finding


def test_library_names_are_checked_against_a_recorded_environment_before_any_prompt(fake_lake, tmp_path):
    from fyan.gates.citations import plan_citations
    from tests import gate_harness as h

    s = h.setup(tmp_path / "p", h.HONEST)
    fake_lake.scenario({"constants": [d["name"] for d in RECORDED["declarations"]]})
    unit = s.store.unit("thm-root")
    good = _dag({"name": "IsGroupLike", "kind": "def", "statement": "a group", "library": "Group"},
                {"name": "p_prime", "kind": "theorem", "statement": "p is prime", "cites": ["Nat.irreducible_iff_nat_prime"]})
    names, problem = plan_citations(s.project, s.store, unit, good, tmp_path / "logs")
    assert problem is None and names.method == "warm" and not names.dropped, names  # lean_lookup on the double
    assert names.found == {"Group": "Group", "Nat.irreducible_iff_nat_prime": "Nat.irreducible_iff_nat_prime"}
    # a library name the model made up, and a lemma's cite: each dropped with the reason, nothing accepted
    bad = _dag({"name": "IsGroupLike", "kind": "def", "statement": "a group", "library": "Grp.IsGroupish"},
               {"name": "q", "kind": "theorem", "statement": "q", "cites": ["Nat.prime_of_everything"]})
    names, problem = plan_citations(s.project, s.store, unit, bad, tmp_path / "logs")
    assert problem is None and not names.found
    assert set(names.dropped) == {"Grp.IsGroupish", "Nat.prime_of_everything"}
    assert "not found in the unit's environment (Unknown identifier `Grp.IsGroupish`)" == names.dropped["Grp.IsGroupish"]
    theorem = _dag({"name": "t", "kind": "theorem", "statement": "t", "library": "Group"})
    assert "gives `library` for theorem node(s) ['t']" in plan_citations(s.project, s.store, unit, theorem,
                                                                         tmp_path / "logs")[1]


def test_an_adopted_package_keeps_its_own_mathlib_and_the_project_reads_it_in_place(fake_lake, tmp_path):
    import subprocess

    from fyan.lakepackage.package import write_package_config
    from fyan.lakepackage.workspace import prepare_workspace
    from tests.helpers import ingested

    adopted = tmp_path / "blue"
    built = adopted / ".lake" / "packages" / "mathlib" / ".lake" / "build" / "lib" / "lean"
    built.mkdir(parents=True)
    (built / "Mathlib.olean").write_text('{"fake_olean": 1, "module": "Mathlib", "source": ""}')
    (adopted / "lakefile.toml").write_text('name = "Blue"\n\n[[lean_lib]]\nname = "Blue"\n' + mathlib.require_block("v4.34.1"))
    (adopted / "lean-toolchain").write_text("leanprover/lean4:v4.34.1\n")
    project, gateway = ingested(tmp_path / "p", extra_toml=f'[adopt]\npackage = "{adopted}"\npackage_name = "Blue"\n')
    try:
        lean = project.paths.lean
        write_package_config(project, lean)
        lakefile = tomllib.loads((lean / "lakefile.toml").read_text())
        assert [r["name"] for r in lakefile["require"]] == ["Blue"]  # no Mathlib of the project's own
        assert (lean / lakefile["packagesDir"]).resolve() == (adopted / ".lake" / "packages").resolve()
        assert git_requires(lean) == {}  # nothing for Fyan to fetch: the adopted package's Mathlib is there
        printed = subprocess.run([str(fake_lake.path), "env", "printenv", "LEAN_PATH"], cwd=lean, capture_output=True,
                                 text=True).stdout
        assert str(built.resolve()) in printed
        unit = gateway.store.units()[0]
        ws = prepare_workspace(project, unit, {"Basic": "-- empty\n"}, store=gateway.store)
        ws_lakefile = tomllib.loads((ws.root / "lakefile.toml").read_text())
        assert (ws.root / ws_lakefile["packagesDir"]).resolve() == (adopted / ".lake" / "packages").resolve(), unit
        assert not (lean / ".lake" / "packages").exists() and not (ws.root / ".lake" / "packages").exists()
    finally:
        gateway.close()
