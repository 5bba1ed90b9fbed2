"""``fyan.lean.compile`` on the real core ``lean`` 4.35.0 (tests/lean_core.py): the plain-``lean``
build path every unit goes through, on real Lean output.

What this tier cannot show: anything that imports ``Init``, ``Lean`` or Mathlib (so no tactic,
no ``sorry`` — ``sorryAx`` lives in ``Init`` — and not the trusted inspector); those rows of
docs/lean-contract.md are proven by ``fyan selftest`` on a full toolchain.
"""

from __future__ import annotations

import json

import pytest

from fyan.config import LeanSection
from fyan.lean.compile import LeanSetup, compile_module, dependency_folders, module_path, package_options

pytestmark = pytest.mark.lean_core

UP = """prelude
inductive N where
  | z : N
  | s : N → N
namespace Lib.Up
def two : N := N.s (N.s N.z)
private def hidden : N := two
end Lib.Up
"""

DOWN = """prelude
import Lib.Up.Basic
namespace Lib.Down
def three : N := N.s Lib.Up.two
end Lib.Down
"""


@pytest.fixture
def setup(core_lean) -> LeanSetup:
    prefix = core_lean.parent.parent
    return LeanSetup(lean=core_lean, sysroot=prefix, version="4.35.0", githash="eb6cafb7290e")


def cfg(**kw) -> LeanSection:
    """Compiles confined as the product runs them: bubblewrap where it works here (else off, as on a
    machine without it; tests/test_sandbox.py covers that path)."""
    from fyan.sandbox.runner import bwrap_status

    return LeanSection(sandbox="require" if bwrap_status()[0] is not None else "off", build_timeout=120, **kw)


def write(root, module, text):
    path = module_path(root, module, ".lean")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def build(setup, tmp_path, module, text, search=(), name="b", **kw):
    src = tmp_path / f"src-{name}"
    write(src, module, text)
    out = tmp_path / f"out-{name}"
    return compile_module(setup, source_root=src, module=module, out_root=out, search_path=list(search),
                          config=kw.pop("config", cfg()), log_dir=tmp_path / "logs", name=name, **kw), out


def test_a_module_compiles_to_an_olean_named_by_its_path_below_the_root(setup, tmp_path):
    result, out = build(setup, tmp_path, "Lib.Up.Basic", UP)
    assert result.ok, result.reason
    olean = module_path(out, "Lib.Up.Basic", ".olean")
    assert result.olean == str(olean) and olean.is_file()
    assert module_path(out, "Lib.Up.Basic", ".ilean").is_file()
    # the private name carries the module name computed from -R (not the folder's own name)
    data = olean.read_bytes()
    assert b"Lib" in data and b"src-b" not in data
    assert result.process.argv[1:3] == ["-R", str(tmp_path / "src-b")]
    assert (tmp_path / "logs" / "b.log").is_file() and json.loads((tmp_path / "logs" / "b.log.json").read_text())


def test_an_upstream_olean_is_read_through_the_search_path(setup, tmp_path):
    up, out = build(setup, tmp_path, "Lib.Up.Basic", UP, name="up")
    assert up.ok
    down, _ = build(setup, tmp_path, "Lib.Down.Basic", DOWN, search=[out], name="down")
    assert down.ok, down.reason
    assert down.search_path[0] == str(out)


def test_a_missing_import_is_the_environment_not_the_file(setup, tmp_path):
    # no folder for the prefix at all, and the prefix's folder without the module: two messages
    down, out = build(setup, tmp_path, "Lib.Down.Basic", DOWN, search=[tmp_path / "empty"], name="down")
    assert not down.ok
    assert "unknown module prefix 'Lib'" in (down.environment_error or "")
    assert not module_path(out, "Lib.Down.Basic", ".olean").exists()
    (tmp_path / "half" / "Lib" / "Up").mkdir(parents=True)
    again, _ = build(setup, tmp_path, "Lib.Down.Basic", DOWN, search=[tmp_path / "half"], name="again")
    assert not again.ok and "of module Lib.Up.Basic does not exist" in (again.environment_error or "")


def test_an_olean_from_another_lean_build_is_refused_as_the_environment(setup, tmp_path):
    up, out = build(setup, tmp_path, "Lib.Up.Basic", UP, name="up")
    olean = module_path(out, "Lib.Up.Basic", ".olean")
    data = bytearray(olean.read_bytes())
    at = data.find(b"eb6cafb7290e")
    assert at > 0  # Lean writes its git hash into the header
    data[at:at + 12] = b"000000000000"
    olean.write_bytes(bytes(data))
    down, _ = build(setup, tmp_path, "Lib.Down.Basic", DOWN, search=[out], name="down")
    assert not down.ok and "incompatible header" in (down.environment_error or "")


def test_a_truncated_olean_crashes_lean_and_is_the_environment(setup, tmp_path):
    up, out = build(setup, tmp_path, "Lib.Up.Basic", UP, name="up")
    olean = module_path(out, "Lib.Up.Basic", ".olean")
    olean.write_bytes(olean.read_bytes()[:100])
    down, _ = build(setup, tmp_path, "Lib.Down.Basic", DOWN, search=[out], name="down")
    assert not down.ok
    # Lean 4.35.0 segfaults here; inside bubblewrap the crash reads as exit 128 + SIGSEGV
    assert down.process.exit_code == (128 + 11 if down.process.sandboxed else -11), down.process
    assert down.environment_error and "crash" in down.environment_error


def test_an_olean_changed_in_its_body_is_read_without_complaint(setup, tmp_path):
    """Lean does not check an imported .olean's content (only its header): Fyan must hash every
    recorded .olean it places (fyan.lakepackage.trusted) — this is the behaviour that makes it necessary."""
    up, out = build(setup, tmp_path, "Lib.Up.Basic", UP, name="up")
    olean = module_path(out, "Lib.Up.Basic", ".olean")
    data = bytearray(olean.read_bytes())
    data[200] ^= 0xFF
    olean.write_bytes(bytes(data))
    down, _ = build(setup, tmp_path, "Lib.Down.Basic", DOWN, search=[out], name="down")
    assert down.environment_error is None and down.process.exit_code is not None and down.process.exit_code >= 0


def test_an_elaboration_error_writes_no_olean_even_when_a_declaration_is_left_behind(setup, tmp_path):
    text = ("prelude\ninductive T : Prop where | intro\ntheorem t : T := nope\n#print axioms t\n")
    result, out = build(setup, tmp_path, "Lib.Bad.Basic", text)
    assert not result.ok and result.environment_error is None
    assert "Unknown identifier `nope`" in result.reason
    # the failed theorem is still in the environment, and `#print axioms` vouches for it
    assert any("'t' does not depend on any axioms" in d.text for d in result.diagnostics)
    assert not module_path(out, "Lib.Bad.Basic", ".olean").exists()


def test_a_kernel_rejection_fails_the_compile(setup, tmp_path):
    text = "prelude\ninductive T : Prop where | intro\ninductive Bad where | mk : (Bad → T) → Bad\n"
    result, _ = build(setup, tmp_path, "Lib.Bad.Basic", text)
    assert not result.ok and result.environment_error is None
    assert "(kernel)" in result.reason and "non positive occurrence" in result.reason


def test_package_options_reach_lean_as_D_flags(setup, tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "lakefile.toml").write_text('name = "P"\n[leanOptions]\nautoImplicit = false\n'
                                      '[[lean_lib]]\nname = "P"\nleanOptions = { relaxedAutoImplicit = false }\n')
    options = package_options(pkg)
    assert options == (("autoImplicit", "false"), ("relaxedAutoImplicit", "false"))
    text = "prelude\ntheorem f (x : α) : α := x\n"
    plain, _ = build(setup, tmp_path, "Lib.Auto.Basic", text, name="plain")
    strict, _ = build(LeanSetup(**{**setup.__dict__, "options": options}), tmp_path, "Lib.Auto.Basic", text,
                      name="strict")
    assert "-D" in strict.process.argv and "autoImplicit=false" in strict.process.argv
    assert not strict.ok and any("`autoImplicit` option is set to `Bool.false`" in d.text for d in strict.errors)
    assert not any("autoImplicit" in d.text for d in plain.diagnostics)  # without it the binder is auto-bound


def test_an_unknown_option_is_the_environment(setup, tmp_path):
    bad = LeanSetup(**{**setup.__dict__, "options": (("noSuchOption", "1"),)})
    result, _ = build(bad, tmp_path, "Lib.Up.Basic", UP)
    assert not result.ok and "invalid -D parameter" in (result.environment_error or "")


def test_a_source_that_is_not_a_regular_file_is_not_compiled(setup, tmp_path):
    src = tmp_path / "src"
    (src / "Lib" / "X").mkdir(parents=True)
    (src / "Lib" / "X" / "Basic.lean").symlink_to("/etc/hostname")
    result = compile_module(setup, source_root=src, module="Lib.X.Basic", out_root=tmp_path / "out", search_path=[],
                            config=cfg(), log_dir=tmp_path, name="x")
    assert not result.ok and result.process.exit_code is None and "regular file" in result.reason


def test_dependency_folders_drop_the_packages_own_outputs(tmp_path):
    pkg = tmp_path / "pkg"
    own = pkg / ".lake" / "build" / "lib" / "lean"
    dep = pkg / ".lake" / "packages" / "mathlib" / ".lake" / "build" / "lib" / "lean"
    sysroot = tmp_path / "tc"
    for p in (own, dep, sysroot / "lib" / "lean"):
        p.mkdir(parents=True)
    printed = ":".join([str(dep), str(own), str(sysroot / "lib" / "lean"), str(tmp_path / "gone"), str(dep)])
    assert dependency_folders(printed, pkg, sysroot) == [dep.resolve()]


# -- the gate workspace's two-phase build (fyan.lakepackage.trusted) on real Lean --------------------

def _gate_workspace(setup, core_lean, tmp_path, sources: dict[str, str], upstream: list[str]):
    from fyan.lean.toolchain import Toolchain
    from fyan.lakepackage.trusted import GateWorkspace

    tc = Toolchain(lake=core_lean, lean=core_lean, version="Lake version (core tier) (Lean version 4.35.0)")
    ws = GateWorkspace(tmp_path / "ws", "Lib", tmp_path / "project", setup, tc, upstream_modules=upstream)
    for d in (ws.src, ws.libdir, ws.root / "build", ws.tmp):
        d.mkdir(parents=True)
    for module, text in sources.items():
        write(ws.src, module, text)
    return ws


def test_the_gate_builds_upstream_then_the_candidate_through_one_search_folder(setup, core_lean, tmp_path):
    from fyan.lakepackage import trusted

    ws = _gate_workspace(setup, core_lean, tmp_path, {"Lib.Up.Basic": UP, "Lib.Down.Basic": DOWN}, ["Lib.Up.Basic"])
    first, second = trusted.build(ws, cfg(), tmp_path / "logs", trusted=["Lib.Up.Basic"], candidate=["Lib.Down.Basic"])
    assert first.ok and second.ok, (first.reason, second and second.reason)
    # phase 1's output reached lib/ (the one folder searched), read-only and hashed; the
    # candidate's too, after its output folder held nothing else
    for module in ("Lib.Up.Basic", "Lib.Down.Basic"):
        published = module_path(ws.libdir, module, ".olean")
        assert published.is_file() and not published.stat().st_mode & 0o222
    assert second.search_path[0] == str(ws.libdir)
    assert ws.recheck() == []
    outputs = trusted.module_outputs(ws, "Lib.Down.Basic")
    meta = json.loads(outputs["Basic.olean.json"])
    assert meta["lean_githash"] == "eb6cafb7290e" and set(meta["upstream_oleans"]) == {"Lib.Up.Basic"}
    # an output changed after it was published is caught when the decision is made
    up = module_path(ws.libdir, "Lib.Up.Basic", ".olean")
    up.chmod(0o644)
    data = bytearray(up.read_bytes())
    data[200] ^= 0xFF
    up.write_bytes(bytes(data))
    assert ws.recheck() == ["lib/Lib/Up/Basic.olean changed after it was checked"]


def test_a_recorded_upstream_olean_is_reused_without_its_source(setup, core_lean, tmp_path):
    from fyan.lakepackage import trusted

    first, out = build(setup, tmp_path, "Lib.Up.Basic", UP, name="first")
    assert first.ok
    ws = _gate_workspace(setup, core_lean, tmp_path, {"Lib.Down.Basic": DOWN}, [])
    recorded = module_path(ws.libdir, "Lib.Up.Basic", ".olean")
    recorded.parent.mkdir(parents=True)
    recorded.write_bytes(module_path(out, "Lib.Up.Basic", ".olean").read_bytes())
    _, second = trusted.build(ws, cfg(), tmp_path / "logs", trusted=[], candidate=["Lib.Down.Basic"])
    assert second.ok, second.reason
    assert not module_path(ws.src, "Lib.Up.Basic", ".lean").exists()


def test_a_failed_candidate_publishes_nothing(setup, core_lean, tmp_path):
    from fyan.lakepackage import trusted

    bad = "prelude\nimport Lib.Up.Basic\nnamespace Lib.Down\ntheorem broken : N := nope\nend Lib.Down\n"
    ws = _gate_workspace(setup, core_lean, tmp_path, {"Lib.Up.Basic": UP, "Lib.Down.Basic": bad}, ["Lib.Up.Basic"])
    first, second = trusted.build(ws, cfg(), tmp_path / "logs", trusted=["Lib.Up.Basic"], candidate=["Lib.Down.Basic"])
    assert first.ok and not second.ok and second.environment_error is None
    assert not module_path(ws.libdir, "Lib.Down.Basic", ".olean").exists()


def test_the_gate_build_runs_confined_around_real_lean(setup, core_lean, tmp_path):
    """With bubblewrap (sandbox = require): the same two-phase build passes, each compile able to
    write only its own output folder (the rest of the workspace is bound read-only)."""
    from fyan.lakepackage import trusted
    from fyan.sandbox.runner import bwrap_status

    if bwrap_status()[0] is None:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status()[1]}")
    ws = _gate_workspace(setup, core_lean, tmp_path, {"Lib.Up.Basic": UP, "Lib.Down.Basic": DOWN}, ["Lib.Up.Basic"])
    confined = LeanSection(sandbox="require", build_timeout=120)
    first, second = trusted.build(ws, confined, tmp_path / "logs", trusted=["Lib.Up.Basic"],
                                  candidate=["Lib.Down.Basic"])
    assert first.process.sandboxed and second.process.sandboxed
    assert first.ok and second.ok, (first.reason, second and second.reason)


def _require_bwrap():
    from fyan.sandbox.runner import bwrap_status

    if bwrap_status()[0] is None:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status()[1]}")


def test_the_default_confinement_can_enter_the_source_root_and_read_the_search_path(setup, tmp_path):
    """sandbox = require with the default confinement (what the selftest's learning step and the
    benchmarks use): the source root and the upstream folder lie under /tmp, which the sandbox
    hides; the compile must still enter the one and read the other (it failed with `bwrap: Can't
    chdir to …/src`)."""
    _require_bwrap()
    confined = cfg().model_copy(update={"sandbox": "require"})
    up, up_out = build(setup, tmp_path, "Lib.Up.Basic", UP, name="up", config=confined)
    assert up.process.sandboxed and up.ok, up.reason
    down, _ = build(setup, tmp_path, "Lib.Down.Basic", DOWN, search=[up_out], name="down", config=confined)
    assert down.process.sandboxed and down.ok, down.reason


def test_a_given_confinement_gets_the_source_root_and_search_path_but_keeps_its_own_rules(setup, tmp_path):
    from fyan.lean.compile import compile_confinement
    from fyan.sandbox.runner import Confinement

    src, up, out = tmp_path / "ws" / "src", tmp_path / "up", tmp_path / "ws" / "out"
    for p in (src, up, out):
        p.mkdir(parents=True)
    given = Confinement(writable=(tmp_path / "ws",), read_only=(out,))
    made = compile_confinement(setup, source_root=src, out_root=out, search_path=[up], confinement=given)
    # the source root lies in a writable folder: it keeps that rule (binding it read-only would
    # make the output folder under it read-only too); the search path is added read-only
    assert made.writable == given.writable
    assert up.resolve() in made.read_only and src.resolve() not in made.read_only
    default = compile_confinement(setup, source_root=src, out_root=out, search_path=[up], readable=["~"])
    assert default.writable == (out,)
    assert {src.resolve(), up.resolve(), setup.sysroot} <= set(default.read_only)
    from pathlib import Path

    assert Path("~").expanduser() in default.read_only


def test_the_selftest_learning_step_compiles_its_controls_confined(setup, tmp_path, monkeypatch):
    """fyan.trust.learn.learn_extensions under bubblewrap on the real core lean: every control
    compiles confined in the scratch package (under /tmp) and is copied to the search folder; the
    inspector (which needs Init) is stood in for by a stop."""
    _require_bwrap()
    from fyan.lean import compile as leanc
    from fyan.lean import inspector
    from fyan.trust import learn

    controls = [learn.Control("up", "Up.lean", UP.replace("Lib.Up", "Ctl.Up")),
                learn.Control("down", "Down.lean", "prelude\nimport FyanControls.Up\nnamespace Ctl\n"
                              "def three : N := N.s Ctl.Up.two\nend Ctl\n")]
    monkeypatch.setattr(learn, "controls", lambda folder=None: controls)
    monkeypatch.setattr(leanc, "resolve", lambda *a, **k: setup)
    seen = {}

    def stop(build, toolchain, workspace, **kw):
        seen["modules"] = kw["modules"]
        seen["lib"] = sorted(p.name for p in (workspace / "lib" / "FyanControls").iterdir())
        return inspector.Inspection(problem="stopped after the compiles")

    monkeypatch.setattr(inspector, "run_inspector", stop)
    confined = LeanSection(sandbox="require", build_timeout=120)
    learned = learn.learn_extensions(None, "leanprover/lean4:v4.35.0", confined, None, tmp_path / "learn",
                                     tmp_path / "logs")
    assert learned.problem is not None and "stopped after the compiles" in learned.problem, learned.problem
    assert seen["modules"] == ["FyanControls.Up", "FyanControls.Down"]
    assert {"Up.olean", "Down.olean"} <= set(seen["lib"])
