"""The cheat corpus as data: every known way to fool the completion gate, with the check meant to
catch it, and the honest controls that must pass.

The files live in the repository's ``tests/cheats/`` (``*.lean`` and ``manifest.toml``; the
manifest's header documents every field) and ship in the wheel as ``fyan/_data/cheats/``
(``pyproject.toml``): ``fyan selftest`` and ``tests/test_cheats.py`` (``pytest -m lean`` with a
real toolchain) read the same files through this module, so the two cannot drift apart.

``judge`` decides whether one gate report is what the manifest asks for: a cheat is rejected by
its intended check (status ``fail``, required, the manifest's reason fragment in the reason), and
every check named in ``also`` (and ``with_kernel_checker`` when a kernel checker ran) fails too
with its fragment; a control passes.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from fyan.models.gate_report import GateReport

_PACKAGE = Path(__file__).resolve().parents[1]


def cases_dir() -> Path:
    """The corpus folder: ``fyan/_data/cheats`` in a wheel, ``tests/cheats`` in a source
    checkout. Raises ``FileNotFoundError`` naming both places when neither holds a manifest."""
    for candidate in (_PACKAGE / "_data" / "cheats", _PACKAGE.parent / "tests" / "cheats"):
        if (candidate / "manifest.toml").is_file():
            return candidate
    raise FileNotFoundError(f"the cheat corpus (manifest.toml) is in neither {_PACKAGE / '_data' / 'cheats'} nor "
                            f"{_PACKAGE.parent / 'tests' / 'cheats'}; reinstall Fyan (pip install fyan)")


def load_manifest(folder: Path | None = None) -> dict:
    """``manifest.toml`` of the corpus, parsed (raises ``tomllib.TOMLDecodeError`` when broken)."""
    return tomllib.loads(((folder or cases_dir()) / "manifest.toml").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Case:
    """One entry of the corpus: ``kind`` ``cheat`` or ``control``; ``text`` the model-written part
    of the unit ``thm-root`` (``fyan.selftest.harness``); ``setup`` ``""``, ``"bridge"`` or
    ``"meta"``; for a cheat, ``caught_by`` (a check of ``fyan.gates.completion.CHECK_ORDER``) and
    ``reason`` (a fragment of its reason), ``also`` / ``with_kernel_checker`` (check → fragment); the raw
    entry may add ``or_caught_by`` (check → fragment): a check that may reject it instead on a
    toolchain that cannot build the trick at all."""

    id: str
    kind: str
    file: str
    text: str
    setup: str = ""
    caught_by: str | None = None
    reason: str = ""
    also: dict[str, str] = field(default_factory=dict)
    with_kernel_checker: dict[str, str] = field(default_factory=dict)
    entry: dict = field(default_factory=dict, compare=False, repr=False)


def cases(folder: Path | None = None) -> list[Case]:
    """The controls, then the cheats, in manifest order."""
    folder = folder or cases_dir()
    manifest = load_manifest(folder)
    out = []
    for kind in ("control", "cheat"):
        for e in manifest.get(kind, []):
            text = (folder / e["file"]).read_text(encoding="utf-8")
            out.append(Case(id=e["id"], kind=kind, file=e["file"], text=text,
                            setup=e.get("setup", ""), caught_by=e.get("caught_by"), reason=e.get("reason", ""),
                            also=dict(e.get("also", {})), with_kernel_checker=dict(e.get("with_kernel_checker", {})),
                            entry=e))
    return out


def corpus_digest(folder: Path | None = None) -> str:
    """SHA-256 (hex) over the manifest, every ``*.lean`` file of the corpus and the honest controls
    ``learn/*.lean`` (relative names and bytes):
    a selftest is valid for exactly this corpus."""
    folder = folder or cases_dir()
    h = hashlib.sha256()
    for path in sorted([folder / "manifest.toml", *folder.glob("*.lean"), *folder.glob("learn/*.lean")]):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class Verdict:
    """How the gate treated one case: ``ok`` (as the manifest asks), ``caught_by`` the failing
    required checks (the intended one first when it failed), ``problems`` what was not as asked."""

    ok: bool
    caught_by: list[str]
    problems: list[str]


def judge(case: Case, report: GateReport, *, kernel_checker: bool = False) -> Verdict:
    """Compare a gate report with what the manifest asks of ``case`` (module docstring)."""
    failing = [c.name for c in report.checks if c.required and not c.passed]
    if case.kind == "control":
        failed = [] if report.passed else [f"the honest control did not pass: {report.summary()}"]
        return Verdict(not failed, failing, failed)
    problems: list[str] = []
    if report.passed:
        problems.append("the cheat passed the gate")
    for name, fragment in case.entry.get("or_caught_by", {}).items():
        # a trick the toolchain cannot even build (Lean 4.35 has no kernel evaluation of
        # Lean.reduceBool): rejected by that check instead, which is as good
        alt = next((c for c in report.checks if c.name == name), None)
        if alt is not None and alt.status == "fail" and alt.required and fragment in alt.reason and not report.passed:
            return Verdict(True, [name] + [f for f in failing if f != name], [])
    expected = {case.caught_by: case.reason, **case.also, **(case.with_kernel_checker if kernel_checker else {})}
    for name, fragment in expected.items():
        try:
            check = report.check(name)
        except StopIteration:
            problems.append(f"{name}: not in the report")
            continue
        if check.status != "fail" or not check.required:
            problems.append(f"{name}: {check.status} ({check.reason[:160]})")
        elif fragment not in check.reason:
            problems.append(f"{name}: failed, but its reason lacks {fragment!r}: {check.reason[:160]}")
    if case.caught_by in failing:
        failing.remove(case.caught_by)
        failing.insert(0, case.caught_by)
    return Verdict(not problems, failing, problems)
