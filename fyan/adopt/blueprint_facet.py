"""Producing a LeanArchitect blueprint's generated files: a trusted step in the user's package.

A document that ``\\input``s ``.lake/build/blueprint/…`` cannot be read before LeanArchitect's Lake
facets have written those files (``fyan.intake.leanarchitect``). With ``fyan init --lean-project
PKG`` Fyan runs them itself: ``lake --keep-toolchain build :blueprint :blueprintJson`` in ``PKG``
(``:f`` is the root package's facet ``f``; LeanArchitect's ``lakefile.lean`` declares both as
package facets). Like fetching dependencies (``fyan.lakepackage.fetch``) it runs **unsandboxed**, in the
package the user named, on the user's own code and never on anything a model wrote (no unit
exists yet), with a progress line; its output is kept in ``PKG/.lake/fyan-blueprint.log`` (Lake
writes below ``.lake/`` anyway). A failure says what Lake said and what to run by hand.
"""

from __future__ import annotations

from pathlib import Path

from fyan.config import FyanConfig
from fyan.errors import InputError
from fyan.lakepackage.fetch import KEEP, FetchProgress, _run_step
from fyan.lean.toolchain import discover

#: the command line after ``lake``
FACET_ARGS = (KEEP, "build", ":blueprint", ":blueprintJson")
#: the longest the facets may take, seconds (they elaborate every module of the package)
TIMEOUT_S = 6 * 3600.0


def generate_blueprint(package: Path, *, progress: FetchProgress | None = None) -> Path:
    """Run LeanArchitect's facets in ``package`` (module docstring); returns the log file.
    Raises ``InputError`` (exit 4) without a toolchain or when Lake fails."""
    lean = FyanConfig(project={"name": "init", "source": "-"}).lean  # [lean] from FYAN_LEAN__* (no project yet)
    found = discover(lean, cwd=package)
    by_hand = f"cd {package} && lake build :blueprint :blueprintJson"
    if found.toolchain is None:
        raise InputError(f"cannot generate the blueprint's files in {package}: {found.problem}",
                         hint=f"install the package's toolchain (elan), or run it yourself: {by_hand}")
    log = package / ".lake" / "fyan-blueprint.log"
    step = _run_step("LeanArchitect blueprint (lake build :blueprint :blueprintJson)",
                     [str(found.toolchain.lake), *FACET_ARGS], package, log, progress or FetchProgress(), TIMEOUT_S)
    if not step.ok:
        raise InputError(f"`lake build :blueprint :blueprintJson` failed in {package}: {step.last_line or 'no output'} "
                         f"(log: {log})",
                         hint="the package must require LeanArchitect and build; fix it, then run the same command "
                         f"again (or by hand: {by_hand})")
    return log
