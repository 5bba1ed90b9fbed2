"""The confined refutation runner (``fyan.refute.runner``): real executions in bubblewrap, as root
and as an ordinary user, and Lean checks compiled by the real core Lean 4.35.0 with a prelude
stand-in (``tests/lean_prelude.py`` ``DECIDE_SUPPORT``). Nothing here is a double: each program
runs, and each worthless kind is produced by a program that does that thing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fyan.sandbox.runner import bwrap_status
from fyan.refute import (DomainVariable, LeanCheck, RefutationLimits, RefutationProgram, TargetAssertion,
                         run_refutation)
from fyan.refute.runner import lean_check_text
from tests.lean_prelude import DECIDE_SUPPORT

ROOT = Path(__file__).resolve().parents[1]

needs_bwrap = pytest.mark.skipif(bwrap_status()[0] is None, reason=f"no usable bubblewrap: {bwrap_status()[1]}")

EVEN = TargetAssertion(id="step-2", text="every n below 10 is even")


def program(source: str, lo: int = 0, hi: int = 9) -> RefutationProgram:
    return RefutationProgram(language="python", target=EVEN, predicate_source=textwrap.dedent(source),
                             domain=[DomainVariable(name="n", lo=lo, hi=hi)])


FAST = RefutationLimits(timeout_s=5, memory_mb=512)


@needs_bwrap
def test_a_false_assertion_is_refuted_with_the_first_witness_re_checked(tmp_path):
    out = run_refutation(program("def predicate(n):\n    return n % 2 == 0\n"), workdir=tmp_path, limits=FAST)
    assert (out.executed, out.refutes, out.worthless_reason) == (True, True, None)
    assert out.witness == {"n": 1} and out.cases_checked == 2
    assert out.program_sha256 == program("def predicate(n):\n    return n % 2 == 0\n").sha256()
    assert "bubblewrap" in (out.sandbox or "")
    # both confined runs left their files: the search over the domain and the re-check of the witness alone
    assert json.loads((tmp_path / "recheck" / "spec.json").read_text()) == {"variables": [["n", [1]]]}
    assert json.loads((tmp_path / "search" / "spec.json").read_text())["variables"][0][1] == list(range(10))
    assert json.loads((tmp_path / "outcome.json").read_text())["refutes"] is True


@needs_bwrap
def test_the_witness_follows_fyans_enumeration_order_over_several_variables(tmp_path):
    p = RefutationProgram(language="python", target=EVEN, predicate_source="def predicate(a, b):\n    return a * b < 6\n",
                          domain=[DomainVariable(name="a", lo=1, hi=3), DomainVariable(name="b", values=[1, 2, 3])])
    out = run_refutation(p, workdir=tmp_path, limits=FAST)
    assert out.refutes and out.witness == {"a": 2, "b": 3} and out.cases_checked == 6


@needs_bwrap
def test_an_assertion_that_holds_is_executed_and_not_refuted(tmp_path):
    out = run_refutation(program("def predicate(n):\n    return n < 100\n"), workdir=tmp_path, limits=FAST)
    assert (out.executed, out.refutes, out.worthless_reason, out.cases_checked) == (True, False, None, 10)


@needs_bwrap
@pytest.mark.parametrize("source, reason", [
    ("def predicate(n)\n    return True\n", "does not execute (it does not compile"),
    ("def predicate(n):\n    while True:\n        pass\n", "hangs: killed at the timeout"),
    ("def predicate(n):\n    open('/etc/fyan-refute-escape', 'w').write('x')\n    return True\n",
     "writes outside its folder: opened /etc/fyan-refute-escape"),
    ("import socket\ndef predicate(n):\n    socket.socket().connect(('127.0.0.1', 9))\n    return True\n",
     "tries the network"),
    ("def predicate(n):\n    raise ValueError('no idea')\n", "the predicate raised at input 0: ValueError: no idea"),
    ("def predicate(n):\n    return 'maybe'\n", "returned str, not a bool"),
    ("import subprocess\ndef predicate(n):\n    subprocess.run(['true'])\n    return True\n",
     "tries to start a process"),
    ("x = 1 / 0\n", "does not execute (loading it failed: ZeroDivisionError"),
])
def test_worthless_programs_never_reach_a_verdict(tmp_path, source, reason):
    out = run_refutation(program(source), workdir=tmp_path, limits=RefutationLimits(timeout_s=2, memory_mb=512))
    assert out.executed is False and out.refutes is False
    assert reason in (out.worthless_reason or ""), out.worthless_reason
    assert not Path("/etc/fyan-refute-escape").exists()


@needs_bwrap
def test_a_write_the_program_hides_from_the_hook_is_still_stopped_by_the_sandbox(tmp_path):
    """The audit hook names an attempt; the sandbox holds one the hook misses (a caught error)."""
    target = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    source = f"""
        import os
        def predicate(n):
            try:
                fd = os.open({str(target)!r}, os.O_WRONLY | os.O_CREAT)
            except BaseException:
                return True
            return True
    """
    out = run_refutation(program(source), workdir=tmp_path / "w", limits=FAST)
    assert not target.exists()
    assert out.worthless_reason and "writes outside its folder" in out.worthless_reason


@needs_bwrap
def test_a_program_that_claims_a_counterexample_it_does_not_have_is_worthless(tmp_path):
    """It prints a counterexample, then forges the harness's answer frame (``F 3``) on the pipe
    and ends; the re-check on that witness alone answers with the same forgery, which names an
    input the re-check does not have: not confirmed, worthless. A forged ``FYAN-REFUTE`` line
    without the nonce counts for nothing either."""
    source = """
        import os, sys
        print("counterexample found: n = 3")
        print("FYAN-REFUTE 00000000 " + '{"verdict": "false_at", "index": 3}')
        sys.stdout.flush()
        for fd in range(3, 12):
            try:
                os.write(fd, b"F 3\\n")
            except OSError:
                pass
        os._exit(0)
        def predicate(n):
            return True
    """
    out = run_refutation(program(source), workdir=tmp_path, limits=FAST)
    assert out.refutes is False and out.executed is False
    assert "claims a counterexample the re-check does not confirm" in (out.worthless_reason or "")
    assert out.witness == {"n": 3}
    assert "counterexample found" in out.stdout


@needs_bwrap
def test_printing_counterexample_while_the_predicate_holds_refutes_nothing(tmp_path):
    out = run_refutation(program("def predicate(n):\n    print('counterexample: n =', n)\n    return True\n"),
                         workdir=tmp_path, limits=FAST)
    assert (out.executed, out.refutes) == (True, False)
    assert "counterexample: n = 9" in out.stdout


def test_a_domain_beyond_the_limit_is_not_run(tmp_path):
    out = run_refutation(program("def predicate(n):\n    return True\n", 0, 10**6), workdir=tmp_path,
                         limits=RefutationLimits(max_cases=1000))
    assert out.worthless_reason == "the domain holds 1000001 inputs, more than the limit of 1000"
    assert not (tmp_path / "search").exists()


def test_without_bubblewrap_nothing_runs_and_the_outcome_says_why(tmp_path, monkeypatch):
    bare = tmp_path / "bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    marker = tmp_path / "ran"
    out = run_refutation(program(f"open({str(marker)!r}, 'w').close()\ndef predicate(n):\n    return n == 0\n"),
                         workdir=tmp_path / "w", limits=FAST)
    assert out.executed is False and out.refutes is False
    assert out.worthless_reason and out.worthless_reason.startswith("not run: no sandbox")
    assert "bwrap" in out.worthless_reason
    assert not marker.exists()


def test_programs_missing_their_fields_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="needs predicate_source"):
        RefutationProgram(language="python", target=EVEN, domain=[DomainVariable(name="n", lo=0, hi=1)])
    with pytest.raises(ValueError, match="needs a finite domain"):
        RefutationProgram(language="python", target=EVEN, predicate_source="def predicate(): return True")
    with pytest.raises(ValueError, match="needs lean_instance"):
        RefutationProgram(language="lean", target=EVEN)
    with pytest.raises(ValueError, match="lo <= hi"):
        DomainVariable(name="n", lo=3, hi=1)
    with pytest.raises(ValueError, match="not a Python identifier"):
        DomainVariable(name="n; import os", values=[1])


# -- as an ordinary user ------------------------------------------------

_AS_USER = """
import json, sys
from pathlib import Path
from fyan.refute import DomainVariable, RefutationLimits, RefutationProgram, TargetAssertion, run_refutation
results = {}
for name, source in json.loads(sys.argv[2]).items():
    p = RefutationProgram(language="python", target=TargetAssertion(id="s", text="t"), predicate_source=source,
                          domain=[DomainVariable(name="n", lo=0, hi=9)])
    out = run_refutation(p, workdir=Path(sys.argv[1]) / name, limits=RefutationLimits(timeout_s=3, memory_mb=512))
    results[name] = [out.executed, out.refutes, out.worthless_reason, out.witness]
print("RESULT " + json.dumps(results))
"""


@needs_bwrap
@pytest.mark.parametrize("user", ["root", "user"])
def test_as_root_and_as_an_ordinary_user(user):
    from tests.test_confinement import python_as

    import tempfile

    argv, extra = python_as(user)
    base = Path(tempfile.mkdtemp(prefix="fyan-refute-", dir="/var/tmp"))  # pytest's own folders are root's alone
    os.chmod(base, 0o755)
    if argv[0].endswith("setpriv"):
        os.chown(base, 65534, 65534)
    sources = {
        "refutes": "def predicate(n):\n    return n < 5\n",
        "writes": "def predicate(n):\n    open('/var/tmp/fyan-refute-as-user', 'w')\n    return True\n",
        "network": "import socket\ndef predicate(n):\n    socket.getaddrinfo('example.com', 80)\n    return True\n",
        "hangs": "def predicate(n):\n    while True:\n        pass\n",
        "syntax": "def predicate(n)\n    return True\n",
        "raises": "def predicate(n):\n    raise KeyError(n)\n",
        "claims": "import os\nprint('counterexample n = 3')\nfor fd in range(3, 12):\n    try:\n"
                  "        os.write(fd, b'F 3\\n')\n    except OSError:\n        pass\nos._exit(0)\n",
    }
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/", **extra}
    if "PYTHONPATH" not in env:
        env["PYTHONPATH"] = str(ROOT)
    try:
        proc = subprocess.run([*argv, "-c", _AS_USER, str(base), json.dumps(sources)], env=env, capture_output=True,
                              text=True, timeout=120, cwd="/")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, proc.stdout + proc.stderr
    got = json.loads(line[0][len("RESULT "):])
    assert got["refutes"][:2] == [True, True] and got["refutes"][3] == {"n": 5}
    assert got["writes"][2].startswith("writes outside its folder")
    assert got["network"][2].startswith("tries the network")
    assert got["hangs"][2].startswith("hangs")
    assert got["syntax"][2].startswith("does not execute")
    assert got["raises"][2].startswith("the predicate raised at input 0: KeyError")
    assert got["claims"][2].startswith("claims a counterexample the re-check does not confirm")
    assert all(not r[1] for name, r in got.items() if name != "refutes")
    assert not Path("/var/tmp/fyan-refute-as-user").exists()


# -- Lean checks on the real core Lean ---------------------------------

TWO = "(N.succ (N.succ N.zero))"
THREE = "(N.succ (N.succ (N.succ N.zero)))"


def lean_program(instance: str, header: str = DECIDE_SUPPORT) -> RefutationProgram:
    return RefutationProgram(language="lean", target=TargetAssertion(id="frozen:sq", text="2 * 2 = 3"),
                             lean_instance=instance, lean_header=header, origin="fyan")


@pytest.fixture
def lean_check(core_lean) -> LeanCheck:
    return LeanCheck(lean=Path(core_lean), readable=(Path(core_lean).resolve().parents[1],
                                                    *(Path(p) for p in _wheel_folders())))


def _wheel_folders() -> list[str]:
    from tests.lean_core import library_dir

    return [str(library_dir())]


@needs_bwrap
@pytest.mark.lean_core
def test_a_false_instance_is_refuted_by_a_clean_compile(tmp_path, lean_check):
    out = run_refutation(lean_program(f"Eq (N.beq (N.mul {TWO} {TWO}) {THREE}) true"), workdir=tmp_path,
                         lean=lean_check, limits=RefutationLimits(timeout_s=60))
    assert (out.executed, out.refutes, out.worthless_reason) == (True, True, None), out.stdout
    text = (tmp_path / "lean" / "Refute.lean").read_text()
    assert "theorem fyan_refutation : Not (Eq (N.beq" in text
    assert ":= of_decide_eq_true (Eq.refl true)" in text and "#print axioms fyan_refutation" in text


@needs_bwrap
@pytest.mark.lean_core
def test_a_true_instance_is_not_refuted(tmp_path, lean_check):
    out = run_refutation(lean_program(f"Eq (N.beq (N.mul {TWO} {TWO}) (N.add {TWO} {TWO})) true"),
                         workdir=tmp_path, lean=lean_check, limits=RefutationLimits(timeout_s=60))
    assert out.refutes is False
    assert "did not evaluate to true" in (out.worthless_reason or ""), out.stdout


@needs_bwrap
@pytest.mark.lean_core
def test_a_check_resting_on_an_axiom_does_not_count(tmp_path, lean_check):
    out = run_refutation(lean_program("Sneaky"), workdir=tmp_path, lean=lean_check,
                         limits=RefutationLimits(timeout_s=60))
    assert out.refutes is False and out.worthless_reason == "the check rests on axioms ['Sneaky', 'Sneaky.false']", out.stdout


@needs_bwrap
@pytest.mark.lean_core
def test_a_check_that_does_not_compile_is_worthless(tmp_path, lean_check):
    out = run_refutation(lean_program("Eq (N.frobnicate N.zero) true"), workdir=tmp_path, lean=lean_check,
                         limits=RefutationLimits(timeout_s=60))
    assert out.refutes is False and (out.worthless_reason or "").startswith("the check does not compile")


@pytest.mark.parametrize("instance", [
    "True) := sorry\ntheorem x : (True",
    "Eq true true) := by native_decide\n#check (1",
    "Eq (Lean.ofReduceBool a b c) true",
    "(Eq true true",
    "Eq (by run_tac pure (); exact true) true",
])
def test_lean_instances_that_smuggle_commands_or_escapes_are_refused_unrun(tmp_path, instance):
    out = run_refutation(lean_program(instance), workdir=tmp_path, lean=LeanCheck(lean=Path("/nonexistent/lean")))
    assert out.executed is False and out.refutes is False
    assert "instance" in (out.worthless_reason or "")
    assert not (tmp_path / "lean").exists()


def test_the_check_text_uses_decide_outside_a_prelude():
    text = lean_check_text(lean_program("(2 : Nat) * 2 = 3", header="import Mathlib"))
    assert "theorem fyan_refutation : Not ((2 : Nat) * 2 = 3) := by decide" in text


def test_harness_is_fyans_own_file_copied_unchanged(tmp_path):
    """The harness that runs is the one in the package: a stale or altered copy cannot be used."""
    if bwrap_status()[0] is None:
        pytest.skip("no usable bubblewrap")
    run_refutation(program("def predicate(n):\n    return True\n"), workdir=tmp_path, limits=FAST)
    assert (tmp_path / "search" / "harness.py").read_bytes() == (ROOT / "fyan/refute/harness.py").read_bytes()
    assert shutil.which("bwrap") and sys.executable


_LEAN_AS_USER = """
import json, sys
from pathlib import Path
from fyan.refute import LeanCheck, RefutationLimits, RefutationProgram, TargetAssertion, run_refutation
from tests.lean_prelude import DECIDE_SUPPORT
prefix = Path(sys.argv[2])
check = LeanCheck(lean=prefix / "bin" / "lean", readable=(prefix,))
results = {}
for name, instance in json.loads(sys.argv[3]).items():
    p = RefutationProgram(language="lean", target=TargetAssertion(id="s", text="t"), lean_instance=instance,
                          lean_header=DECIDE_SUPPORT, origin="fyan")
    out = run_refutation(p, workdir=Path(sys.argv[1]) / name, lean=check, limits=RefutationLimits(timeout_s=120))
    results[name] = [out.executed, out.refutes, out.worthless_reason]
print("RESULT " + json.dumps(results))
"""


@needs_bwrap
@pytest.mark.lean_core
def test_a_lean_check_as_an_ordinary_user(core_lean):
    """The real core Lean run by uid 65534: its prefix is linked (hard links, no copy) into a
    folder that user can read; skipped where that cannot be done."""
    import tempfile

    from tests.test_confinement import python_as

    argv, extra = python_as("user")
    if not argv[0].endswith("setpriv"):
        pytest.skip("not running as root: the test's own user is the ordinary user")
    source = Path(core_lean).resolve().parents[1]
    base = Path(tempfile.mkdtemp(prefix="fyan-refute-lean-", dir="/var/tmp"))
    try:
        prefix = base / "lean"
        for sub in ("bin", "lib"):
            (prefix / sub).mkdir(parents=True)
            for f in (source / sub).iterdir():
                try:
                    os.link(f, prefix / sub / f.name)
                except OSError as e:
                    pytest.skip(f"cannot link the core Lean into a folder uid 65534 reads: {e}")
        runs = base / "runs"
        runs.mkdir()
        for path in [base, *base.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() or path.name == "lean" else 0o644, follow_symlinks=False)
        os.chown(runs, 65534, 65534)
        instances = {"refutes": f"Eq (N.beq (N.mul {TWO} {TWO}) {THREE}) true", "axiom": "Sneaky"}
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/", **extra}
        proc = subprocess.run([*argv, "-c", _LEAN_AS_USER, str(runs), str(prefix), json.dumps(instances)], env=env,
                              capture_output=True, text=True, timeout=600, cwd="/")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, proc.stdout + proc.stderr
    got = json.loads(line[0][len("RESULT "):])
    assert got["refutes"] == [True, True, None]
    assert got["axiom"] == [False, False, "the check rests on axioms ['Sneaky', 'Sneaky.false']"]
