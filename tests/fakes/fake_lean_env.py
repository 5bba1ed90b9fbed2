"""Recorded SA-Pass compiles for the ``lean`` double (no Lean toolchain can run in CI).

``tests/fakes/fake_lean.py`` hands every compile of an SA-Pass module (``FyanShadow_…``) here when
``FYAN_FAKE_LEAN_OUTCOMES`` names a file of recorded compile outcomes (the JSON-lines format of
``RecordedCompiler``; for the demo these are the authored expectations of
``projects/shadow-demo/authored/outcomes.toml``), so the real adapter
(``fyan.shadow.compiler.LeanCompiler``) is exercised at its process boundary: argv, working
folder, timeout, exit code, ``lean --json`` parsing, and the inspection of the compiled module.
The file's text is keyed exactly as the recorder keys it (the run's nonce, read from the
checker's name, is replaced by the placeholder and substituted back). For a file that compiles it
writes a stand-in ``.olean`` carrying the recorded inspection, which the inspector double
(``tests/fakes/fake_inspector.py``) returns as the real inspector would read it. An unknown file
prints a ``lean --json`` error and exits 1. ``FYAN_FAKE_LEAN_SLEEP`` (seconds) delays every compile
(timeout tests).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

_NONCE = re.compile(r"fyan_shadow_check_([0-9a-f]{32})")


#: Same as fyan.shadow.compiler.NONCE_PLACEHOLDER (a test checks it); not imported, so that each
#: fake compile starts fast (no pydantic import).
NONCE_PLACEHOLDER = "<FYAN-SHADOW-NONCE>"


def load_recordings(path: Path) -> dict[str, dict]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            out[entry["key"]] = entry
    return out


def text_key(text: str, nonce: str) -> str:
    return hashlib.sha256(text.replace(nonce, NONCE_PLACEHOLDER).encode("utf-8")).hexdigest()


def compile_file(path: Path, olean: Path | None = None) -> int:
    if os.environ.get("FYAN_FAKE_LEAN_SLEEP"):
        time.sleep(float(os.environ["FYAN_FAKE_LEAN_SLEEP"]))
    text = path.read_text(encoding="utf-8")
    m = _NONCE.search(text)
    nonce = m.group(1) if m else "no-nonce-in-file"
    outcomes = os.environ.get("FYAN_FAKE_LEAN_OUTCOMES")
    entry = load_recordings(Path(outcomes)).get(text_key(text, nonce)) if outcomes else None
    if entry is None:
        print(json.dumps({"caption": "", "data": "fake lean: no recorded outcome for this file", "endPos": None,
                          "fileName": str(path), "isSilent": False, "keepFullRange": False, "kind": "[anonymous]",
                          "pos": {"column": 0, "line": 1}, "severity": "error"}))
        return 1
    sys.stdout.write(entry["output"].replace(NONCE_PLACEHOLDER, nonce))
    code = entry["exit_code"] if entry["exit_code"] is not None else 1
    if code == 0 and olean is not None and entry.get("inspection") is not None:
        inspection = json.loads(json.dumps(entry["inspection"]).replace(NONCE_PLACEHOLDER, nonce))
        olean.write_text(json.dumps({"fake_olean": 1, "module": olean.stem, "inspection": inspection}))
    return code
