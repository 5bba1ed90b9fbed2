"""Warm Lean language servers on the real core Lean 4.35.0 (``tests/lean_core.py``).

``fyan.lean.lsp.LeanServer`` speaks to the real ``lean --server`` (prelude files, the ``sorry``
support of ``tests/lean_prelude.py``): open, change, diagnostics equal to a cold ``lean --json``
compile's, goals at ``sorry`` and error positions; ``fyan.lakepackage.pool.ServerPool``: reuse, a
killed server restarted and the iteration retried once, a timeout, admission and eviction.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from fyan.sandbox.admission import Admission
from fyan.lean.diagnostics import parse_lean_json
from fyan.lean.lsp import LeanServer, ServerCrashed, ServerTimeout
from fyan.lakepackage.pool import ServerKey, ServerPool, ServerSpec, WarmUnavailable, header_of
from tests.lean_prelude import SORRY_SUPPORT, generated_module, unit_text

pytestmark = pytest.mark.lean_core


@pytest.fixture
def built(core_lean, tmp_path) -> tuple[Path, Path, Path]:
    """(lean, source root, output folder) with ``Core.Sorry`` and a 300-declaration ``Gen`` built."""
    src, out = tmp_path / "src", tmp_path / "lib"
    (src / "Core").mkdir(parents=True)
    (out / "Core").mkdir(parents=True)
    (src / "Core" / "Sorry.lean").write_text(SORRY_SUPPORT)
    (src / "Gen.lean").write_text(generated_module(300))
    for module, rel in (("Core/Sorry", "Core/Sorry.lean"), ("Gen", "Gen.lean")):
        proc = subprocess.run([str(core_lean), "-R", str(src), "-o", str(out / f"{module}.olean"), "--json",
                               str(src / rel)], env={**os.environ, "LEAN_PATH": str(out)}, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return Path(core_lean), src, out


def cold(lean: Path, src: Path, out: Path, text: str) -> list[tuple]:
    (src / "U.lean").write_text(text)
    proc = subprocess.run([str(lean), "-R", str(src), "--json", str(src / "U.lean")],
                          env={**os.environ, "LEAN_PATH": str(out)}, capture_output=True, text=True, timeout=120)
    return sorted((d.line, d.column, d.severity.value, d.text) for d in parse_lean_json(proc.stdout).diagnostics)


def server(lean: Path, out: Path, cwd: Path) -> LeanServer:
    s = LeanServer([str(lean), "--server", "-Dserver.reportDelayMs=0"], cwd=cwd, uri=(cwd / "Warm.lean").as_uri(),
                   env={**os.environ, "LEAN_PATH": str(out), "LAKE": str(cwd / "no-lake")})
    s.start(60)
    return s


def test_open_and_change_give_the_cold_compiles_diagnostics_and_the_goals(built, tmp_path):
    lean, src, out = built
    s = server(lean, out, tmp_path)
    try:
        first = s.check(unit_text(1), 120)
        assert first.version == 1
        warm = sorted((d.line, d.column, d.severity.value, d.text) for d in first.diagnostics)
        assert warm == cold(lean, src, out, unit_text(1))
        assert any(d.is_sorry for d in first.diagnostics) and len(first.errors) == 3
        goals = {(g.line, g.at, g.kind): g.goals for g in first.goals}
        assert goals[(6, "sorry", "term")] == ["p q : Prop\nh : p\n⊢ q"]  # at the `sorry` token
        assert goals[(7, "error", "term")] == ["p q : Prop\nh : p\n⊢ q"]  # the type mismatch
        assert ["p : Prop\nh : p\n⊢ p"] in [g.goals for g in first.goals if g.kind == "tactic"]  # unsolved `by`
        # didChange with the full new text: a fixed proof, same imports
        fixed = s.check(unit_text(2, sorry=False, error=False), 120)
        assert fixed.version == 2 and fixed.diagnostics == [] and fixed.goals == []
        assert cold(lean, src, out, unit_text(2, sorry=False, error=False)) == []
        again = s.check(unit_text(3), 120)
        assert sorted((d.line, d.column, d.severity.value, d.text) for d in again.diagnostics) == \
            cold(lean, src, out, unit_text(3))
        assert s.rss_mb() and s.rss_mb() > 10
    finally:
        s.close()
    assert not s.alive()


def test_a_missing_import_is_reported_not_a_crash(built, tmp_path):
    lean, src, out = built
    s = server(lean, out, tmp_path)
    try:
        result = s.check(unit_text(1, imports="Nowhere"), 120)
        assert result.fatal
        assert "unknown module prefix 'Nowhere'" in result.errors[0].text
    finally:
        s.close()


def test_a_killed_server_is_a_crash(built, tmp_path):
    lean, _, out = built
    s = server(lean, out, tmp_path)
    s.check(unit_text(1), 120)
    s.kill()
    deadline = time.monotonic() + 10
    while s.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(ServerCrashed):
        s.check(unit_text(2), 30)
    s.close()


def test_no_answer_in_time_is_a_timeout(built, tmp_path):
    lean, _, out = built
    s = server(lean, out, tmp_path)
    try:
        with pytest.raises(ServerTimeout):
            s.check(unit_text(1), 0.0005)
    finally:
        s.close()


def spec_for(out: Path, scratch: Path, timeout_s: float = 120) -> ServerSpec:
    """The pool's servers confined as the product runs them: bubblewrap where it works here, reading
    the compiled modules, the core lean's prefix and the library it links."""
    from fyan.sandbox.runner import bwrap_status
    from tests.lean_core import core_lean, library_dir

    mode = "require" if bwrap_status()[0] is not None else "off"
    return ServerSpec(scratch=scratch, extra_env={"LEAN_PATH": str(out)}, sandbox=mode, timeout_s=timeout_s,
                      readable=(out, core_lean().parent.parent, library_dir()))


def key_for(lean: Path, out: Path, text: str) -> ServerKey:
    return ServerKey(str(lean), "core", (str(out),), header_of(text))


def test_the_pool_reuses_a_warm_server_and_restarts_a_killed_one_once(built, tmp_path):
    lean, _, out = built
    adm = Admission(budget_mb=100_000, limit_mb=2000)
    pool = ServerPool(size=2, idle_s=600, adm=adm)
    key, spec = key_for(lean, out, unit_text(1)), spec_for(out, tmp_path / "warm")
    try:
        a = pool.check(key, unit_text(1), spec, unit="u")
        b = pool.check(key, unit_text(2), spec, unit="u")
        assert not a.reused and b.reused and a.restarts == b.restarts == 0
        assert all(w.sandboxed is (spec.sandbox == "require") for w in pool._servers)
        assert [e[0] for e in pool.events] == ["started", "checked", "reused"]
        assert adm.peaks[("u", "lean_server")] > 10  # the measured peak is recorded
        assert len(adm.running()) == 1 and adm.running()[0].kind == "lean_server"  # it holds its share
        pid = pool.snapshot()[0]["pid"]
        os.killpg(pid, 9)  # the server crashes between iterations
        time.sleep(0.3)
        c = pool.check(key, unit_text(3), spec, unit="u")
        assert c.restarts == 0 and not c.reused  # a dead idle server is not leased: a new one starts
        pid = pool.snapshot()[0]["pid"]
        # a crash during the iteration: restarted and retried once, never charged to the proof
        from fyan.lean import lsp

        original = lsp.LeanServer.check
        calls = {"n": 0}

        def crash_first(self, text, timeout_s, **kw):
            calls["n"] += 1
            if calls["n"] == 1:
                self.kill()
                time.sleep(0.3)
            return original(self, text, timeout_s, **kw)

        lsp.LeanServer.check = crash_first
        try:
            d = pool.check(key, unit_text(4), spec, unit="u")
        finally:
            lsp.LeanServer.check = original
        assert d.restarts == 1 and "restarted" in d.notes[0]
        assert pool.snapshot()[0]["pid"] != pid
        assert sorted(x.text for x in d.elaboration.diagnostics) == sorted(
            x.text for x in pool.check(key, unit_text(4), spec, unit="u").elaboration.diagnostics)
    finally:
        pool.shutdown()
    assert adm.running() == []  # every share given back


def test_a_timeout_restarts_once_then_the_pool_gives_up(built, tmp_path):
    lean, _, out = built
    pool = ServerPool(size=1, idle_s=600, adm=Admission(budget_mb=100_000, limit_mb=2000))
    key = key_for(lean, out, unit_text(1))
    try:
        with pytest.raises(WarmUnavailable) as e:
            pool.check(key, unit_text(1), spec_for(out, tmp_path / "w", timeout_s=0.0005), unit="u")
        assert str(e.value).count("restarted") == 2  # the first attempt and the one retry
        assert [x[0] for x in pool.events].count("restarted") == 2 and pool.snapshot() == []
    finally:
        pool.shutdown()


def test_idle_servers_are_evicted_and_a_new_key_evicts_the_least_recently_used(built, tmp_path):
    lean, _, out = built
    adm = Admission(budget_mb=100_000, limit_mb=2000)
    pool = ServerPool(size=1, idle_s=600, adm=adm)
    spec = spec_for(out, tmp_path / "w")
    one, other = unit_text(1), unit_text(1, imports="Core.Sorry")
    try:
        pool.check(key_for(lean, out, one), one, spec, unit="u")
        pool.check(key_for(lean, out, other), other, spec, unit="v")  # another header: the pool of 1 makes room
        assert [e[0] for e in pool.events] == ["started", "checked", "evicted-lru", "started", "checked"]
        assert len(pool.snapshot()) == 1 and len(adm.running()) == 1
        assert pool.evict_idle(now=time.monotonic() + 601) == 1  # idle past warm_idle_s
        assert pool.snapshot() == [] and adm.running() == []
    finally:
        pool.shutdown()


def test_header_of_reads_the_import_header():
    assert header_of("/- c -/\nprelude\n-- x\nimport  A.B\nimport C\n\ntheorem t : True := x\nimport D\n") == \
        "prelude\nimport A.B\nimport C"
    assert header_of("theorem t : True := x\n") == ""


def test_the_benchs_iterations_give_the_same_diagnostics_cold_and_warm(core_lean, tmp_path):
    """``scripts/bench_iterations.py`` at a small size: every iteration (proofs, ``sorry``, errors in
    turn) gives the same diagnostics from a cold compile and from the warm server."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import bench_iterations

    from fyan.sandbox.runner import bwrap_status

    # confined as the product runs them (bubblewrap where it works here)
    mode = "require" if bwrap_status()[0] is not None else "off"
    r = bench_iterations.run(decls=200, iterations=6, sandbox=mode, folder=tmp_path)
    assert r["cold_sandboxed"] is r["warm_sandboxed"] is (mode == "require"), r
    assert r["same_diagnostics"], r["differing_iterations"]
    cold = r["diagnostics"]["cold"]
    assert any(any(d[2] == "error" for d in it) for it in cold) and any(it == [] for it in cold)
    assert any(any("sorry" in d[3] for d in it) for it in cold)
    assert r["restarts"] == 0 and r["goals"] > 0 and len(r["warm"]["latency_s"]) == 6
