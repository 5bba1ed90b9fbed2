"""``fyan shadow``: shadow-theorem evaluation (SA-Pass). The subcommands are in
``fyan.commands._shadow`` (not a command of its own); this module registers them."""

from __future__ import annotations

import argparse

from pydantic import BaseModel, ConfigDict

from fyan.command_result import CommandResult
from fyan.commands import exit_codes_text
from fyan.commands._shadow import add_subcommands, cmd_shadow


DESCRIPTION = """SA-Pass: evaluate Lean statements against shadow theorems (eval), check that shadow sets are
complete (check), and ask a model to draft shadow sets (draft)."""


EXIT_CODES = {
    3: "incomplete: no toolchain for eval, an incomplete set, a rejected draft",
    4: "bad input: a folder, a shadow set, a replay file",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_subcommands(p, exit_codes_text(EXIT_CODES))


def run(args: argparse.Namespace) -> CommandResult:
    return cmd_shadow(args)


class Payload(BaseModel):
    """``fyan shadow ... --json``: the subcommand's summary (eval: scores per problem; check: each
    set's completeness; draft: whether the draft was kept)."""

    model_config = ConfigDict(extra="allow")
