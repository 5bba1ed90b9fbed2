"""Lean processes are admitted against ``[lean] memory_budget_mb``
(``fyan.sandbox.admission``), each charged its recorded peak or ``memory_limit_mb``."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from fyan.config import LeanSection
from fyan.sandbox import admission
from fyan.sandbox.admission import Admission
from fyan.sandbox.runner import run_process
from fyan.orchestrator.live import LiveState
from fyan.progress import heartbeat_text


def hold(adm: Admission, kind: str, unit: str | None, log: list, release: threading.Event, started: threading.Event):
    with adm.admit(kind, unit):
        log.append(("in", kind, unit))
        started.set()
        release.wait(10)
    log.append(("out", kind, unit))


def start(adm, kind, unit, log):
    release, started = threading.Event(), threading.Event()
    t = threading.Thread(target=hold, args=(adm, kind, unit, log, release, started), daemon=True)
    t.start()
    return t, release, started


def wait_until(pred, timeout=5.0):
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("budget, limit, at_once", [(16384, 8192, 2), (10000, 4000, 2), (4096, 1024, 4), (1000, 4000, 1)])
def test_builds_run_only_as_many_as_the_budget_holds(budget, limit, at_once):
    adm = Admission(budget, limit)
    log: list = []
    threads = [start(adm, "build", f"u{i}", log) for i in range(5)]
    wait_until(lambda: len(adm.running()) == at_once and len(adm.waiting()) == 5 - at_once)
    time.sleep(0.1)  # nobody else gets in while the budget is used up
    assert len(adm.running()) == at_once and adm.used_mb() == at_once * limit
    assert adm.snapshot()["waiting"] and all(w["cost_mb"] == limit for w in adm.snapshot()["waiting"])
    for t, release, _ in threads:
        release.set()
    for t, _, _ in threads:
        t.join(5)
    assert adm.peak_running == at_once and adm.peak_admitted_mb == at_once * limit
    assert not adm.running() and not adm.waiting()


def test_a_recorded_peak_replaces_the_limit_and_is_recorded_through_the_recorder():
    seen = []
    adm = Admission(8000, 8000, peaks={("u1", "build"): 1500}, recorder=lambda *a: seen.append(a))
    assert adm.cost("build", "u1") == 1500 and adm.cost("inspector", "u1") == 8000 and adm.cost("build", None) == 8000
    log: list = []
    t1 = start(adm, "build", "u1", log)
    t2 = start(adm, "build", "u1", log)
    wait_until(lambda: len(adm.running()) == 2)  # 2 x 1500 MiB fit in 8000
    t3 = start(adm, "build", "u2", log)  # 8000 MiB (no peak yet): waits
    time.sleep(0.1)
    assert [w.unit for w in adm.waiting()] == ["u2"]
    for _, release, _ in (t1, t2, t3):
        release.set()
    for t, _, _ in (t1, t2, t3):
        t.join(5)
    adm.record("build", "u2", 2047.2)
    adm.record("build", "u2", 900)  # smaller: the largest is kept
    adm.record("build", None, 100)  # no unit: nothing to key it by
    assert adm.cost("build", "u2") == 2048 and seen == [("u2", "build", 2048)]


def test_waiting_is_first_come_first_served():
    adm = Admission(10, 6)
    log: list = []
    first = start(adm, "build", "a", log)
    first[2].wait(5)
    big = start(adm, "kernel_replay", "b", log)
    wait_until(lambda: len(adm.waiting()) == 1)
    small = start(adm, "inspector", "c", log)  # would fit next to the first, but b came first
    wait_until(lambda: len(adm.waiting()) == 2)
    time.sleep(0.1)
    assert [t.unit for t in adm.running()] == ["a"]
    for _, release, _ in (first, big, small):
        release.set()
    for t, _, _ in (first, big, small):
        t.join(5)
    assert [e[2] for e in log if e[0] == "in"] == ["a", "b", "c"]


def test_the_unit_comes_from_the_context_and_the_budget_from_the_configuration():
    cfg = LeanSection(memory_budget_mb=3000, memory_limit_mb=1000)
    adm = admission.configure(cfg, peaks={("u9", "build"): 10})
    try:
        assert adm.budget_mb == 3000 and adm.limit_mb == 1000
        with admission.for_unit("u9"), adm.admit("build") as ticket:
            assert ticket.unit == "u9" and ticket.cost_mb == 10
        assert admission.current_unit() is None
        assert admission.configure(LeanSection()).budget_mb == int(admission.machine_memory_mb() * admission.DEFAULT_SHARE)
    finally:
        admission.configure(LeanSection())


def test_a_lean_process_is_measured_and_its_peak_recorded(tmp_path):
    """The peak resident memory comes from wait4 (the process and what it waited for). It
    includes the forked child's pages before exec (Fyan's own size), so the allocation here is
    well above that."""
    seen = []
    admission.configure(LeanSection(memory_budget_mb=100000), recorder=lambda *a: seen.append(a))
    try:
        grow = "b = bytearray(768 * 2**20); b[::4096] = b'x' * len(b[::4096]); print('ok')"
        with admission.for_unit("u1"):
            proc = run_process([sys.executable, "-c", grow], cwd=tmp_path, timeout_s=60, sandbox="off",
                               lean_kind="build")
        assert proc.ok and proc.peak_rss_mb is not None and proc.peak_rss_mb >= 768
        assert proc.admission_wait_s is not None
        assert seen and seen[0][:2] == ("u1", "build") and seen[0][2] >= 768
        small = run_process([sys.executable, "-c", "print(1)"], cwd=tmp_path, timeout_s=60, sandbox="off")
        assert small.peak_rss_mb is not None and small.peak_rss_mb < proc.peak_rss_mb - 256
        assert small.admission_wait_s is None and len(seen) == 1  # not a Lean process: not recorded
    finally:
        admission.configure(LeanSection())


def test_peaks_are_recorded_through_the_gateway(tmp_path):
    from tests.helpers import ingested

    project, gw = ingested(tmp_path / "p")
    uid = gw.store.units()[0].id
    gw.record_lean_peak(uid, "build", 3000)
    gw.record_lean_peak(uid, "build", 1200)
    gw.record_lean_peak(uid, "inspector", 700)
    assert gw.store.lean_peaks() == {(uid, "build"): 3000, (uid, "inspector"): 700}
    gw.close()


def test_status_shows_lean_processes_waiting_for_memory():
    adm = Admission(8192, 8192)
    log: list = []
    a = start(adm, "build", "u1", log)
    b = start(adm, "kernel_replay", "u2", log)
    wait_until(lambda: len(adm.waiting()) == 1)
    text = heartbeat_text(LiveState(lean=adm.snapshot()))
    assert "1 Lean process(es) wait for memory (kernel_replay u2; 8192 of 8192 MiB in use)" in text
    assert LiveState(lean=adm.snapshot()).as_dict(time.time())["lean_memory"]["waiting"][0]["unit"] == "u2"
    for _, release, _ in (a, b):
        release.set()
    for t, _, _ in (a, b):
        t.join(5)
    assert "wait for memory" not in heartbeat_text(LiveState(lean=adm.snapshot()))
