"""The prover tools on the real core Lean 4.35.0's language server (``tests/lean_core.py``):
``lean_check``, ``lean_goals``, ``lean_try``, ``lean_lookup``, ``lean_axioms`` against a warm
``lean --server`` with a compiled prelude library, each call bounded and recorded. At core level
no tactic is defined (they are declared in ``Init``), so goals are term goals and the goals of
an unsolved ``by`` block; trials are terms in place of a ``sorry``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from fyan.lean.lsp import LeanServer
from fyan.prover.models import AxiomsInput, CheckInput, GoalsInput, Limits, LookupInput, TryInput
from fyan.prover.tools import ProverTools, fixed_server
from tests.lean_prelude import SORRY_SUPPORT

pytestmark = pytest.mark.lean_core

LIB = """prelude
import Core.Sorry
axiom Lib.T : Type
/-- Every proof of a proposition is a proof of it. -/
theorem Lib.keep (p : Prop) (h : p) : p := h
theorem Lib.gap (p : Prop) : p := sorry
"""

HEADER = "prelude\nimport Lib"


def build_library(lean: Path, root: Path) -> Path:
    """Compile ``Core.Sorry`` and ``Lib`` with the real lean; returns the output folder."""
    src, out = root / "src", root / "lib"
    (src / "Core").mkdir(parents=True)
    (out / "Core").mkdir(parents=True)
    (src / "Core" / "Sorry.lean").write_text(SORRY_SUPPORT)
    (src / "Lib.lean").write_text(LIB)
    for module, rel in (("Core/Sorry", "Core/Sorry.lean"), ("Lib", "Lib.lean")):
        proc = subprocess.run([str(lean), "-R", str(src), "-o", str(out / f"{module}.olean"), "--json", str(src / rel)],
                              env={**os.environ, "LEAN_PATH": str(out)}, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def warm(core_lean, tmp_path_factory):
    root = tmp_path_factory.mktemp("prover")
    out = build_library(Path(core_lean), root)
    server = LeanServer([str(core_lean), "--server", "-Dserver.reportDelayMs=0"], cwd=root,
                        uri=(root / "Warm.lean").as_uri(),
                        env={**os.environ, "LEAN_PATH": str(out), "LAKE": str(root / "no-lake")})
    server.start(60)
    yield server, root
    server.close()


def tools(warm, **kw) -> ProverTools:
    server, root = warm
    return ProverTools(HEADER, fixed_server(server), log=root / "attempt" / "tools.jsonl", **kw)


def test_lean_check_gives_messages_and_goals_at_sorry_and_errors_in_the_units_context(warm):
    t = tools(warm)
    text = ("theorem open1 (p q : Prop) (h : p) : q := sorry\n"
            "theorem bad1 (p q : Prop) (h : p) : q := h\n"
            "theorem good (p : Prop) (h : p) : p := Lib.keep p h\n")
    r = t.lean_check(CheckInput(text=text))
    assert r.status == "ok" and not r.complete and r.errors == 1 and r.sorries == 1
    assert [(m.line, m.severity) for m in r.messages] == [(1, "warning"), (2, "error")]  # lines of the given text
    goals = {(g.line, g.at): g.goals for g in r.goals}
    assert goals[(1, "sorry")] == ["p q : Prop\nh : p\n⊢ q"] and goals[(2, "error")] == ["p q : Prop\nh : p\n⊢ q"]
    # the header repeated by the agent is the same document; a complete text is complete
    done = t.lean_check(CheckInput(text=HEADER + "\n\ntheorem good (p : Prop) (h : p) : p := Lib.keep p h\n"))
    assert done.status == "ok" and done.complete and done.messages == []


def test_lean_goals_before_and_after_a_by_block_and_a_term(warm):
    t = tools(warm)
    text = "theorem x (p q : Prop) (hp : p) (hq : q) : p := by\n  skip\n"
    r = t.lean_goals(GoalsInput(text=text, line=1, column=text.index("by")))
    assert r.status == "ok"
    assert r.before is not None and r.before.kind == "tactic" and r.before.goals == ["p q : Prop\nhp : p\nhq : q\n⊢ p"]
    assert any(m.text.startswith("unsolved goals") for m in r.messages)
    term = "theorem y (p q : Prop) (hp : p) (hq : q) : p :=\n  hq\n"
    r = t.lean_goals(GoalsInput(text=term, line=2))
    assert r.before is not None and r.before.kind == "term" and r.before.goals == ["p q : Prop\nhp : p\nhq : q\n⊢ p"]


def test_lean_try_reports_the_first_closing_script_and_the_goals_the_others_leave(warm):
    t = tools(warm)
    text = ("theorem other (p : Prop) : p := sorry\n"
            "theorem t (p q : Prop) (hp : p) (hq : q) : p := sorry\n")
    r = t.lean_try(TryInput(text=text, line=2, scripts=["hq", "Lib.gap q", "hp", "Lib.keep p hp"]))
    assert r.status == "ok" and r.first_closing == 2 and len(r.trials) == 3  # stops at the first that closes
    wrong, gap, right = r.trials
    assert not wrong.closes and wrong.errors and "type mismatch" in wrong.errors[0].text.lower() or \
        "mismatch" in wrong.errors[0].text
    assert wrong.remaining is not None and wrong.remaining.goals == ["p q : Prop\nhp : p\nhq : q\n⊢ p"]
    assert not gap.closes  # a wrong lemma application is an error in the declaration
    assert right.closes and right.errors == []  # the other theorem's sorry does not count against it
    everything = t.lean_try(TryInput(text=text, line=2, scripts=["hq", "hp", "sorry"], stop_at_first=False))
    assert [x.closes for x in everything.trials] == [False, True, False]  # a sorry never closes a goal


def test_lean_lookup_gives_signature_docstring_module_and_existence(warm):
    t = tools(warm)
    r = t.lean_lookup(LookupInput(name="Lib.keep"))
    assert r.status == "ok" and r.exists and r.signature == "Lib.keep (p : Prop) (h : p) : p"
    assert r.docstring == "Every proof of a proposition is a proof of it." and r.module == "Lib"
    missing = t.lean_lookup(LookupInput(name="Lib.nope"))
    assert missing.status == "ok" and not missing.exists and "Lib.nope" in missing.note
    for bad in ("Lib.keep\n#eval 1", "x y", "#print", ""):
        assert t.lean_lookup(LookupInput(name=bad)).status == "refused"


def test_lean_axioms_lists_the_axioms_and_a_sorry(warm):
    t = tools(warm)
    r = t.lean_axioms(AxiomsInput(text="theorem mine (p : Prop) (h : p) : p := h\n", name="mine"))
    assert r.status == "ok" and r.axioms == [] and not r.uses_sorry
    gap = t.lean_axioms(AxiomsInput(text="", name="Lib.gap"))
    assert gap.status == "ok" and gap.uses_sorry and "sorryAx" in gap.axioms
    lib = t.lean_axioms(AxiomsInput(text="noncomputable def u : Lib.T := sorry\n", name="u"))
    assert "sorryAx" in lib.axioms and "Lib.T" in lib.axioms
    unknown = t.lean_axioms(AxiomsInput(text="", name="Lib.nope"))
    assert unknown.status == "ok" and unknown.axioms == [] and "Lib.nope" in unknown.note


def test_refused_text_never_reaches_lean_and_every_call_is_recorded(warm):
    server, root = warm
    t = tools(warm, limits=Limits(max_input_chars=500, max_chars=30))
    before = server.version
    for text in ("#eval 1\n", "run_cmd pure ()\n", "macro \"x\" : term => `(1)\n", "import Lib\n", "-- x\n" * 200):
        r = t.lean_check(CheckInput(text=text))
        assert r.status == "refused", text
    trial = t.lean_try(TryInput(text="theorem t (p : Prop) (hp : p) : p := sorry\n", line=1, scripts=["by run_tac pure ()"]))
    assert trial.trials[0].status == "refused"
    assert server.version == before  # nothing was sent
    clipped = t.lean_check(CheckInput(text="theorem bad1 (p q : Prop) (h : p) : q := h\n"))
    assert clipped.truncated and len(clipped.messages[0].text) < 80
    log = [json.loads(x) for x in (root / "attempt" / "tools.jsonl").read_text().splitlines()]
    assert {x["tool"] for x in log} >= {"lean_check", "lean_try"}
    assert all({"time", "input", "status", "duration_s"} <= set(x) for x in log)
    assert any(x["status"] == "refused" for x in log) and any(x["truncated"] for x in log)


def test_a_dead_server_is_the_environments_failure(core_lean, tmp_path):
    out = build_library(Path(core_lean), tmp_path)
    server = LeanServer([str(core_lean), "--server"], cwd=tmp_path, uri=(tmp_path / "W.lean").as_uri(),
                        env={**os.environ, "LEAN_PATH": str(out), "LAKE": str(tmp_path / "no")})
    server.start(60)
    server.kill()
    r = ProverTools(HEADER, fixed_server(server)).lean_check(CheckInput(text="theorem a : Lib.T := sorry\n"))
    assert r.status == "server_failed" and "not the proof" in r.note
    server.close()


def test_the_tools_lease_a_warm_server_of_the_pool(core_lean, tmp_path):
    from fyan.sandbox.admission import Admission
    from fyan.lakepackage.pool import ServerKey, ServerPool, ServerSpec

    out = build_library(Path(core_lean), tmp_path)
    pool = ServerPool(size=1, idle_s=600, adm=Admission(budget_mb=8000, limit_mb=4000, peaks={}))
    key = ServerKey(str(core_lean), "core", (str(out),), HEADER)
    from fyan.sandbox.runner import bwrap_status
    from tests.lean_core import library_dir

    # confined as the product runs the pool's servers (bubblewrap where it works here)
    spec = ServerSpec(scratch=tmp_path / "servers", extra_env={"LEAN_PATH": str(out)}, timeout_s=60,
                      sandbox="require" if bwrap_status()[0] is not None else "off",
                      readable=(out, Path(core_lean).parent.parent, library_dir()))
    t = ProverTools(HEADER, lambda: pool.lease(key, spec, unit="u"))
    try:
        first = t.lean_check(CheckInput(text="theorem a (p : Prop) (h : p) : p := sorry\n"))
        again = t.lean_lookup(LookupInput(name="Lib.keep"))
        assert first.status == "ok" and first.sorries == 1 and again.exists
        assert [e[0] for e in pool.events] == ["started", "leased", "reused"]  # one server, warm for the second call
        assert len(pool.snapshot()) == 1 and not pool.snapshot()[0]["busy"]
    finally:
        pool.shutdown()


def test_the_units_preamble_and_namespace_are_the_context_and_lines_stay_the_agents(warm):
    server, root = warm
    t = ProverTools(HEADER, fixed_server(server), preamble="namespace Lib\n", postamble="end Lib\n")
    r = t.lean_check(CheckInput(text="theorem mine (p q : Prop) (h : p) : q := keep p h\n"))
    assert [(m.line, m.severity) for m in r.messages] == [(1, "error")]  # line 1 of the agent's text
    assert t.lean_lookup(LookupInput(name="keep")).exists  # resolved inside the unit's namespace
    assert not tools(warm).lean_lookup(LookupInput(name="keep")).exists
