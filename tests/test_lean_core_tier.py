"""The real-Lean core tier itself (tests/lean_core.py): the binary is Lean 4.35.0 and does what
the other ``lean_core`` tests rely on — prelude files elaborate, ``.olean`` files are written and
imported through ``LEAN_PATH``, ``--json`` messages come out one per line."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.lean_core import COMMIT, VERSION

pytestmark = pytest.mark.lean_core


def run(lean, *args, cwd, env=None):
    return subprocess.run([str(lean), *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_the_binary_is_real_lean_4_35(core_lean):
    out = run(core_lean, "--version", cwd=core_lean.parent).stdout
    assert f"version {VERSION}" in out and COMMIT in out


def test_prelude_modules_compile_import_and_report_json(core_lean, tmp_path):
    src = tmp_path / "src"
    (src / "Up").mkdir(parents=True)
    (src / "Up" / "A.lean").write_text("prelude\ninductive N where\n  | z : N\n  | s : N → N\n"
                                       "axiom ax : N\ndef two : N := N.s (N.s N.z)\n")
    out = tmp_path / "out"
    (out / "Up").mkdir(parents=True)
    first = run(core_lean, "-R", str(src), "-o", str(out / "Up" / "A.olean"), "--json", str(src / "Up" / "A.lean"),
                cwd=src)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (out / "Up" / "A.olean").stat().st_size > 0
    (src / "B.lean").write_text("prelude\nimport Up.A\nnoncomputable def usesAx : N := ax\n#print axioms usesAx\n"
                                "def broken : N := nope\n")
    second = run(core_lean, "-R", str(src), "--json", str(src / "B.lean"), cwd=src, env={"LEAN_PATH": str(out)})
    messages = [json.loads(line) for line in second.stdout.splitlines() if line.strip()]
    assert second.returncode == 1
    assert any(m["severity"] == "information" and "depends on axioms: [Up.A.ax]" not in m["data"]
               and "depends on axioms: [ax]" in m["data"] for m in messages), messages
    unknown = [m for m in messages if m["severity"] == "error"]
    assert unknown and unknown[0]["kind"] == "lean.unknownIdentifier._namedError", unknown
    assert {"fileName", "pos", "endPos", "severity", "data", "caption", "kind", "isSilent"} <= set(unknown[0])


def test_plain_messages_parse_with_their_kind_and_a_normalised_path(core_lean, tmp_path):
    """Without ``--json`` the real 4.35.0 prints ``<file>:<line>:<col>: error(<kind>): <text>``, the
    file as it was given (``./././sub/Msg.lean`` stays so): ``fyan.lean.diagnostics.parse_lake_output``
    reads the kind and ``normalize_path`` drops the ``./`` prefixes."""
    from fyan.lean.diagnostics import parse_lake_output

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "Msg.lean").write_text("prelude\ninductive T : Prop where\n  | intro : T\n"
                                               "theorem bad : T := nope\ntheorem good (h : T) : T := h\n")
    out = run(core_lean, "./././sub/Msg.lean", cwd=tmp_path)
    assert out.returncode == 1 and out.stdout.startswith("./././sub/Msg.lean:4:19: error(lean.unknownIdentifier): ")
    log = parse_lake_output(out.stdout)
    first = log.diagnostics[0]
    assert (first.file, first.line, first.column, first.severity, first.kind) == (
        "sub/Msg.lean", 4, 19, "error", "lean.unknownIdentifier")
    assert first.text == "Unknown identifier `nope`"
    assert all(d.file == "sub/Msg.lean" for d in log.diagnostics) and not log.unrecognized
