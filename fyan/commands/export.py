"""``fyan export``: write the project's units and DAG in another format."""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from fyan.adopt.patch import export_patch
from fyan.command_result import CommandResult
from fyan.errors import ExitCode
from fyan.project import Project
from fyan.specifier.blueprint import export_blueprint
from fyan.adopt.leanarchitect_export import export_leanarchitect
from fyan.state.store import Store
from fyan.terminal import quoted


DESCRIPTION = """Write the project's units and dependency DAG in another format: a leanblueprint source
(content.tex with \\uses, \\lean and \\leanok as the gate verified them), a patch to the adopted
Lake package with the proofs and the blueprint marks, or a patch that makes the project's Lake package
a LeanArchitect project (@[blueprint] on every complete unit's root declarations)."""


EXIT_CODES = {
    4: "bad input: configuration, project folder, no adopted package (patch), no Lake package (leanarchitect)",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("format", choices=["blueprint", "patch", "leanarchitect"],
                   help="blueprint: a leanblueprint source (content.tex, macros, web.tex); patch: the proofs and new "
                   "declarations as a patch to the adopted Lake package, with its blueprint's \\lean and \\leanok set to "
                   "what the gate verified; leanarchitect: a patch to the project's Lake package (lean/) adding "
                   "@[blueprint \"label\" (statement := /-- ... -/)] to every complete unit's root declarations, "
                   "LeanArchitect's requirement and a blueprint/src that inputs the generated nodes")
    p.add_argument("dir", help="project folder")
    p.add_argument("--out", help="output folder (default: <project>/blueprint/src); for patch the file "
                   "(default: <project>/export/adoption.patch); for leanarchitect the file "
                   "(default: <project>/export/leanarchitect.patch)")
    p.add_argument("--json", action="store_true", help="print a JSON result")


class Payload(BaseModel):
    """``fyan export --json``: what was written (``out``) and its counts."""

    model_config = ConfigDict(extra="allow")
    out: str


def run(args: argparse.Namespace) -> CommandResult:
    project = Project.open(args.dir)
    if args.format == "patch":
        return _export_patch(project, args)
    if args.format == "leanarchitect":
        return _export_leanarchitect(project, args)
    report = export_blueprint(project, Path(args.out) if args.out else None)
    out = Path(report.out)
    if out.parts[-2:] == ("blueprint", "src"):
        render_hint = f"Render it with leanblueprint: cd {quoted(out.parent.parent)} && leanblueprint web"
    else:  # leanblueprint reads blueprint/src/ below the folder it runs in
        render_hint = (f"Render it with leanblueprint, which reads blueprint/src/ below the folder it runs in: "
                       f"put {quoted(out)} at <folder>/blueprint/src, then cd <folder> && leanblueprint web")
    text = (
        f"Wrote a leanblueprint source for {report.units} unit(s) to {report.out}: {', '.join(report.written)}"
        + (f" (kept your {', '.join(report.kept)})" if report.kept else "")
        + f"\n  {report.uses} \\uses item(s), {report.leanok_statements} statement(s) and {report.leanok_proofs} "
        f"proof(s) marked \\leanok, {report.lean_declarations} \\lean declaration(s)"
        + f"\n{render_hint}"
    )
    return CommandResult(ExitCode.OK, report.model_dump(), text)


def _export_patch(project, args: argparse.Namespace) -> CommandResult:
    store = Store(project.paths.db)
    try:
        report = export_patch(project, store, Path(args.out) if args.out else None)
    finally:
        store.close()
    text = (f"Wrote {report.out}: {len(report.new_modules)} new module(s) for {report.package}"
            + (f" ({', '.join(report.new_modules)})" if report.new_modules else "")
            + f"; blueprint: {report.units_marked} statement/proof block(s) marked as the gate verified them, "
            f"{report.units_unmarked} \\leanok removed where it did not ({', '.join(report.blueprint_files) or 'no file'})"
            + f"\nReview, then apply in the package: cd {quoted(report.package)} && git apply {quoted(report.out)}")
    return CommandResult(ExitCode.OK, report.model_dump(), text)



def _export_leanarchitect(project, args: argparse.Namespace) -> CommandResult:
    report = export_leanarchitect(project, Path(args.out) if args.out else None)
    text = (f"Wrote {report.out}: @[blueprint] on the root declarations of {len(report.nodes)} complete unit(s)"
            + (f", {report.uses_added} dependency label(s) the inference would miss given as uses :=" if report.uses_added
               else "")
            + f"; {len(report.informal)} other unit(s) stay informal nodes of blueprint/src/content.tex"
            + (f"\n  complete by adoption, declared in the adopted package (informal here): {', '.join(report.adopted)}"
               if report.adopted else "")
            + "".join(f"\n  skipped: {s}" for s in report.skipped)
            + f"\nApply it in a copy of the package: cp -r {quoted(report.package)} <folder> && cd <folder> && "
            f"git apply {quoted(report.out)} && lake update LeanArchitect && lake build :blueprint")
    return CommandResult(ExitCode.OK, report.model_dump(), text)
