"""Which library a project's Lake package requires, and which toolchains Fyan trusts to check it.

One table, three parts:

* ``PAIRS`` — the Mathlib release tags Fyan knows, each with the ``lean-toolchain`` that tag
  names. Mathlib tags a commit ``vX.Y.Z`` for each Lean release it moves to, and the
  ``lean-toolchain`` at that tag is ``leanprover/lean4:vX.Y.Z`` (the pairs below were read from
  packages that require the tag and pin its toolchain; each row names its source). A project
  pins a tag and its toolchain together, never one without the other (``pair_for``).
  ``checked`` says how far Fyan has been checked against the pair: ``"double"`` — the whole
  pipeline runs on it against Fyan's Lake test double (no real Mathlib runs in Fyan's tests);
  ``"listed"`` — the pair is known, Fyan has not been run on it.
* ``DEFAULT`` — the pair ``fyan init`` writes: a current Lean release for which a Mathlib tag
  exists.
* ``KERNEL_BUGS`` — Lean kernel soundness bugs of 2026 with the first release of each line that
  carries the fix (``affected_by``). On an affected toolchain the completion gate completes a
  unit only when an independent kernel re-checked it (comparator with ``enable_nanoda``, its
  documented way to add the nanoda kernel); sources: Lean's release notes of v4.32.1 and of
  v4.33.0 ("Kernel soundness fixes", leanprover/reference-manual
  ``Manual/Releases/v4_33_0.lean``) and comparator's README ("Checking with Additional Kernels").

Versions are compared as Lean names them (``4.32.1``, ``4.33.0-rc2``, ``nightly-2026-07-29``;
``fyan.lean.toolchain.pin_version``); a version Fyan cannot read is treated as affected (fail
closed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fyan.lean.toolchain import pin_version

#: the Lake ``[[require]]`` scope of Mathlib (Reservoir: ``leanprover-community/mathlib``)
MATHLIB_SCOPE = "leanprover-community"
#: the module every unit file of a Mathlib project imports (``[lean] extra_imports``)
MATHLIB_IMPORT = "Mathlib"
#: a Mathlib release tag: ``v4.34.1``, ``v4.35.0-rc3``
_TAG = re.compile(r"^v(?P<v>\d+\.\d+\.\d+(?:-rc\d+)?)$")


@dataclass(frozen=True)
class Pair:
    """A Mathlib tag and the toolchain its ``lean-toolchain`` names."""

    mathlib: str
    toolchain: str
    checked: str
    source: str


PAIRS: tuple[Pair, ...] = (
    Pair("v4.32.0", "leanprover/lean4:v4.32.0", "listed",
         "a package requiring LeanHammer and Mathlib at rev v4.32.0 with that toolchain (code corpus, 2026)"),
    Pair("v4.33.0", "leanprover/lean4:v4.33.0", "listed",
         "packages pinning LEAN_TOOLCHAIN leanprover/lean4:v4.33.0 with MATHLIB_REV v4.33.0 (code corpus, 2026)"),
    Pair("v4.34.1", "leanprover/lean4:v4.34.1", "double",
         "a project template writing lean-toolchain leanprover/lean4:v4.34.1 and Mathlib rev v4.34.1 (code corpus, "
         "2026)"),
    Pair("v4.35.0-rc3", "leanprover/lean4:v4.35.0-rc3", "listed",
         "DEFAULT_MATHLIB_REV v4.35.0-rc3 with DEFAULT_MATHLIB_TOOLCHAIN leanprover/lean4:v4.35.0-rc3 (code corpus, "
         "2026)"),
)

#: the pair ``fyan init`` writes
DEFAULT = next(p for p in PAIRS if p.mathlib == "v4.34.1")


@dataclass(frozen=True)
class KernelBug:
    """A kernel soundness bug: ``fixed_in`` holds the first fixed release of each release line
    (a version of a line after every listed one is fixed too); ``fixed_nightly`` the first
    fixed nightly, when known."""

    issue: str
    fix: str
    summary: str
    fixed_in: tuple[str, ...]
    fixed_nightly: str | None = None

    @property
    def fixed_text(self) -> str:
        return "fixed in Lean " + " and ".join(self.fixed_in) + f" ({self.fix})"


KERNEL_BUGS: tuple[KernelBug, ...] = (
    KernelBug("lean4#14484", "lean4#14498", "an opaque whose value holds a free variable is accepted",
              ("4.32.1", "4.33.0-rc2")),
    KernelBug("lean4#14576", "lean4#14577", "unchecked parameters of nested inductives give an axiom-free proof of "
              "False", ("4.32.2", "4.33.0-rc2"), "nightly-2026-07-29"),
    KernelBug("lean4#14616", "lean4#14616", "a declaration naming the kernel's `_nested` auxiliary types is checked "
              "against one type and stored with another", ("4.33.0-rc2",)),
)


def _release(version: str) -> tuple[int, int, int, int] | None:
    """(major, minor, patch, rc) with rc = a large number for a final release; None otherwise."""
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(?:-rc(\d+))?", version)
    if m is None:
        return None
    return int(m[1]), int(m[2]), int(m[3]), int(m[4]) if m[4] else 1 << 30


def affected_by(version: str | None) -> list[KernelBug]:
    """The ``KERNEL_BUGS`` a Lean ``version`` (``4.31.0``, ``4.33.0-rc2``, ``nightly-2026-08-01``)
    still has; every bug for a version Fyan cannot read (None, a custom build, a suffix it does
    not know)."""
    if version is None:
        return list(KERNEL_BUGS)
    if version.startswith("nightly-"):
        day = version.removeprefix("nightly-")
        return [b for b in KERNEL_BUGS if b.fixed_nightly is None or day < b.fixed_nightly.removeprefix("nightly-")]
    v = _release(version)
    if v is None:
        return list(KERNEL_BUGS)
    out = []
    for bug in KERNEL_BUGS:
        fixes = [f for f in (_release(x) for x in bug.fixed_in) if f is not None]
        same_line = [f for f in fixes if f[:2] == v[:2]]
        fixed = (any(v >= f for f in same_line) if same_line else v[:2] > max(f[:2] for f in fixes))
        if not fixed:
            out.append(bug)
    return out


def bug_text(bugs: list[KernelBug]) -> str:
    """One line naming each bug, what it allows and its fix."""
    return "; ".join(f"{b.issue} ({b.summary}; {b.fixed_text})" for b in bugs)


def pair_for(tag: str) -> Pair:
    """The pair of Mathlib tag ``tag``: the table's row, else the toolchain a Mathlib release tag
    names by Mathlib's convention (tag ``vX.Y.Z`` pins ``leanprover/lean4:vX.Y.Z``; ``checked``
    is then ``"unlisted"``). Raises ``ValueError`` for a revision that is no release tag (a
    branch or commit: its toolchain cannot be known without fetching it)."""
    tag = tag.strip()
    for p in PAIRS:
        if p.mathlib == tag:
            return p
    m = _TAG.match(tag)
    if m is None:
        raise ValueError(f"{tag!r} is not a Mathlib release tag (vX.Y.Z or vX.Y.Z-rcN): Fyan pins a tag together "
                         "with the toolchain it names, and a branch or commit names none until fetched")
    return Pair(tag, f"leanprover/lean4:v{m['v']}", "unlisted", "Mathlib's tag convention (not in Fyan's table)")


def check_pair(mathlib: str, toolchain: str) -> str | None:
    """Why the project's pair is outside the table (None when it is in it): a tag Fyan has not
    been checked against, or a toolchain that is not the one the tag names."""
    try:
        pair = pair_for(mathlib)
    except ValueError as e:
        return str(e)
    if pin_version(toolchain) != pin_version(pair.toolchain):
        return (f"Mathlib {mathlib} names the toolchain {pair.toolchain} but lean-toolchain pins {toolchain}: "
                f"Lake will rebuild or refuse Mathlib; pin both together with `fyan upgrade --mathlib {mathlib}`")
    if pair.checked == "unlisted":
        known = ", ".join(p.mathlib for p in PAIRS)
        return f"Mathlib {mathlib} is not in Fyan's table of checked pairs ({known}); it may work, it was not checked"
    return None


def require_block(tag: str) -> str:
    """Lake's TOML ``[[require]]`` of Mathlib at ``tag`` (Lake: ``scope`` names the Reservoir
    owner, ``rev`` the Git revision)."""
    return f'\n[[require]]\nname = "mathlib"\nscope = "{MATHLIB_SCOPE}"\nrev = "{tag}"\n'


@dataclass(frozen=True)
class LibraryChoice:
    """What ``fyan init`` writes into ``[lean]``: ``mathlib`` (a tag, or "" for core Lean only)
    and the ``toolchain`` pinned with it."""

    mathlib: str
    toolchain: str

    @property
    def in_scope(self) -> str:
        """The library a unit may use, in words (for the init report and the prompts)."""
        return f"Mathlib {self.mathlib}" if self.mathlib else "core Lean only (no Mathlib)"

    def values(self) -> dict[str, Any]:
        """The keys of the ``[lean]`` section (``extra_imports = ["Mathlib"]`` with Mathlib: every
        unit file imports it, since models never write imports)."""
        out: dict[str, Any] = {"toolchain": self.toolchain, "mathlib": self.mathlib}
        if self.mathlib:
            out["extra_imports"] = [MATHLIB_IMPORT]
        return out


def choose_library(mathlib: str | None = None, core: bool = False) -> LibraryChoice:
    """The library of a new project: Mathlib at ``mathlib`` (default ``DEFAULT``) with the
    toolchain its tag names, or core Lean only at the default toolchain when ``core``. Raises
    ``ValueError`` for both at once or a revision that is no release tag."""
    if core and mathlib:
        raise ValueError("--core and --mathlib exclude each other: --core makes a package with no dependency")
    if core:
        return LibraryChoice("", DEFAULT.toolchain)
    pair = pair_for(mathlib) if mathlib else DEFAULT
    return LibraryChoice(pair.mathlib, pair.toolchain)


def init_note(choice: LibraryChoice, project: str) -> str:
    """The line ``fyan init`` prints about the library: what is in scope and, for Mathlib, that
    nothing was fetched yet and which command fetches it (init itself works offline)."""
    if not choice.mathlib:
        return f"Library: core Lean only (--core), toolchain {choice.toolchain}; no dependency to fetch"
    return (f"Library: Mathlib {choice.mathlib} with toolchain {choice.toolchain} (nothing fetched yet: the first "
            f"`fyan run {project}` fetches it, or run `fyan setup {project}` now; a few GB, resumable)")


def library_status(lean_cfg, lean_version: str | None, has_toolchain: bool, nanoda: bool) -> dict:
    """What ``fyan doctor`` and ``fyan selftest`` say about the library and the kernel:
    ``library`` (the project's pair and whether it is in ``PAIRS``: ``pair_problem`` says why
    not) and ``kernel`` (the ``KERNEL_BUGS`` the toolchain found here still has; ``ok`` False
    when it has some and no independent kernel — comparator's nanoda — is installed, since the
    gate then completes no unit; None without a toolchain)."""
    tag, pin = lean_cfg.mathlib, lean_cfg.toolchain
    problem = check_pair(tag, pin) if tag else None
    library = {"mathlib": tag or None, "toolchain": pin, "pair_problem": problem,
               "detail": (f"Mathlib {tag} with {pin}: " + (problem or "a pair in Fyan's table") if tag
                          else f"core Lean only (no Mathlib), {pin}")}
    if not has_toolchain:
        kernel = {"ok": None, "bugs": [], "detail": "no toolchain found"}
    else:
        bugs = affected_by(lean_version)
        if not bugs:
            kernel = {"ok": True, "bugs": [], "detail": f"Lean {lean_version}: no known kernel soundness bug "
                      f"(Fyan's table: {', '.join(b.issue for b in KERNEL_BUGS)})"}
        else:
            how = ("units complete only after comparator re-checks them with the nanoda kernel (found)" if nanoda else
                   "the gate completes NO unit on it: install comparator with nanoda_bin (an independent kernel) or "
                   "upgrade the toolchain (`fyan upgrade --mathlib TAG`, e.g. " + DEFAULT.mathlib + ")")
            kernel = {"ok": nanoda, "bugs": [b.issue for b in bugs],
                      "detail": f"Lean {lean_version} has known kernel soundness bugs: {bug_text(bugs)}; {how}"}
    return {"library": library, "kernel": kernel}


def library_prompt(lean_cfg, adopted: str = "") -> str:
    """The "Library in scope" section of the Planner's and the Formalizer's prompts: which
    library a unit may use (Mathlib at its tag, the adopted package's, or core Lean only) and,
    with Mathlib, that the document's notions are Mathlib's definitions rather than new ones."""
    if adopted:
        return (f"The adopted Lake package `{adopted}` and everything it requires (its own Mathlib, when it has one); "
                "use its definitions and the library's rather than new ones.")
    if not lean_cfg.mathlib:
        return ("Core Lean 4 only: the project's Lake package requires no Mathlib. Define what the document needs; "
                "core tactics only (`omega`, `simp`, `decide`, `grind`, `exact`, `rw`, `induction`, ...).")
    imported = ", ".join(f"`{m}`" for m in lean_cfg.extra_imports) or "nothing (see [lean] extra_imports)"
    return (f"Mathlib {lean_cfg.mathlib} (with {lean_cfg.toolchain}); every unit file imports {imported}. Mathlib's "
            "definitions, lemmas and tactics (`simp`, `ring`, `linarith`, `nlinarith`, `norm_num`, `positivity`, "
            "`omega`, `aesop`, `exact?`-found lemmas, ...) are available. Use Mathlib's definitions rather than new "
            "ones: a document's \"group\" is `Group`, \"prime\" is `Nat.Prime`, \"continuous\" is `Continuous`, "
            "\"divides\" is `∣`. Define a notion anew only when Mathlib has none that is the document's, and say why.")
