"""The warm-server pool under a memory budget, with a simulated Mathlib import.

The Lean double's ``--server`` mode (``tests/fakes/fake_lean.py``, following Lean 4.35's language
server as ``docs/lean-contract.md`` records it) stands in for ``lean --server``; its header
"import" sleeps ``server.import_s`` once per server, as a Mathlib import costs seconds once. The
memory a Mathlib server costs is its recorded peak (``[lean] memory_budget_mb`` admission): 5.2 GiB
here, as a Mathlib-importing worker measures. The real-Lean behaviour of the same pool is in
``tests/test_lean_server.py``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fyan.sandbox.admission import Admission
from fyan.lakepackage.pool import KIND, ServerKey, ServerPool, ServerSpec, header_of
from tests.conftest import DOUBLE_READABLE

MATHLIB_MB = 5200


def text(header: str, k: int) -> str:
    return f"{header}\n\nnamespace U\ntheorem t{k} (p : Prop) (h : p) : p := sorry\nend U\n"


def setup(fake_lake, tmp_path, budget_mb: int, size: int) -> tuple[ServerPool, Admission, ServerSpec]:
    fake_lake.scenario({"server": {"import_s": 0.6}})
    peaks = {(u, KIND): MATHLIB_MB for u in ("a", "b", "c", "d")}
    adm = Admission(budget_mb=budget_mb, limit_mb=8192, peaks=peaks)
    spec = ServerSpec(scratch=tmp_path / "servers", extra_env={"LEAN_PATH": str(tmp_path)}, sandbox="off",
                      timeout_s=60)
    return ServerPool(size=size, idle_s=600, adm=adm), adm, spec


def key(fake_lake, header: str) -> ServerKey:
    return ServerKey(str(fake_lake.lean), "fake", (), header_of(text(header, 0)))


def test_mathlib_sized_servers_are_admitted_by_their_recorded_peak_and_idle_ones_evicted_for_room(fake_lake,
                                                                                                   tmp_path):
    pool, adm, spec = setup(fake_lake, tmp_path, budget_mb=12_000, size=4)
    headers = ["import Mathlib", "import Mathlib.Topology", "import Mathlib.Analysis"]
    try:
        t0 = time.monotonic()
        first = pool.check(key(fake_lake, headers[0]), text(headers[0], 1), spec, unit="a")
        cold = time.monotonic() - t0
        t0 = time.monotonic()
        again = pool.check(key(fake_lake, headers[0]), text(headers[0], 2), spec, unit="a")
        warm = time.monotonic() - t0
        assert again.reused and warm < cold and cold >= 0.6  # the import was paid once
        assert [d.text for d in again.elaboration.diagnostics] == ["declaration uses `sorry`"]
        pool.check(key(fake_lake, headers[1]), text(headers[1], 1), spec, unit="b")
        assert adm.used_mb() == 2 * MATHLIB_MB  # two Mathlib servers fit in 12,000 MiB, each charged its peak
        # a third does not fit: the least recently used idle server is ended first
        pool.check(key(fake_lake, headers[2]), text(headers[2], 1), spec, unit="c")
        events = [e[0] for e in pool.events]
        assert events.count("evicted-for-room") == 1 and adm.used_mb() == 2 * MATHLIB_MB
        live = {s["key"] for s in pool.snapshot()}
        assert live == {key(fake_lake, headers[1]).digest(), key(fake_lake, headers[2]).digest()}
        assert adm.peak_admitted_mb <= adm.budget_mb
        assert first.elaboration.goals and first.elaboration.goals[0].at == "sorry"
    finally:
        pool.shutdown()
    assert adm.running() == []


def test_a_new_server_waits_for_a_build_that_holds_the_memory(fake_lake, tmp_path):
    pool, adm, spec = setup(fake_lake, tmp_path, budget_mb=12_000, size=2)
    started = threading.Event()
    release = threading.Event()

    def build() -> None:
        with adm.admit("build", "d"):  # a cold gate build of a Mathlib unit holds 8 GiB (no peak recorded)
            started.set()
            release.wait(10)

    worker = threading.Thread(target=build)
    worker.start()
    started.wait(10)
    done: dict = {}

    def warm() -> None:
        done["check"] = pool.check(key(fake_lake, "import Mathlib"), text("import Mathlib", 1), spec, unit="a")

    checker = threading.Thread(target=warm)
    checker.start()
    try:
        time.sleep(0.5)
        assert "check" not in done and [t.kind for t in adm.waiting()] == [KIND]  # 8192 + 5200 > 12,000
        release.set()
        checker.join(30)
        assert done["check"].elaboration.version == 1
        assert [t.kind for t in adm.running()] == [KIND]
    finally:
        release.set()
        worker.join(10)
        checker.join(10)
        pool.shutdown()


def test_warm_servers_0_turns_the_pool_off(fake_lake, tmp_path):
    import pytest

    from fyan.lakepackage.pool import WarmUnavailable

    pool, _, spec = setup(fake_lake, tmp_path, budget_mb=12_000, size=0)
    with pytest.raises(WarmUnavailable, match="warm_servers = 0"):
        pool.check(key(fake_lake, "import Mathlib"), text("import Mathlib", 1), spec, unit="a")
    assert pool.events == []


def test_an_idle_server_never_keeps_a_build_waiting_for_memory(fake_lake, tmp_path):
    pool, adm, spec = setup(fake_lake, tmp_path, budget_mb=12_000, size=2)
    try:
        pool.check(key(fake_lake, "import Mathlib"), text("import Mathlib", 1), spec, unit="a")
        assert adm.used_mb() == MATHLIB_MB and len(pool.snapshot()) == 1
        t0 = time.monotonic()
        with adm.admit("build", "d"):  # 8192 + 5200 > 12,000: the idle server gives its share back
            waited = time.monotonic() - t0
            assert pool.snapshot() == [] and [t.kind for t in adm.running()] == ["build"]
        assert waited < 5 and [e[0] for e in pool.events][-1] == "evicted-for-waiter"
    finally:
        pool.shutdown()


def test_a_warm_server_runs_in_the_sandbox_like_a_build(fake_lake, tmp_path):
    import pytest

    from fyan.sandbox.runner import bwrap_status

    if bwrap_status()[0] is None:
        pytest.skip(f"bubblewrap unusable here: {bwrap_status()[1]}")
    hidden = tmp_path / "project"
    (hidden / "secret").mkdir(parents=True)
    pool, _, spec = setup(fake_lake, tmp_path, budget_mb=12_000, size=1)
    spec.sandbox, spec.scratch, spec.hidden = "require", hidden / "workspaces" / ".lean-servers" / "k", (hidden,)
    # the double's Python sources and interpreter, wherever the checkout lives ([lean] sandbox_readable)
    spec.readable = (*spec.readable, *(Path(p) for p in DOUBLE_READABLE))
    try:
        check = pool.check(key(fake_lake, "import Mathlib"), text("import Mathlib", 1), spec, unit="a")
        assert check.sandboxed and check.elaboration.diagnostics[0].text == "declaration uses `sorry`"
    finally:
        pool.shutdown()
