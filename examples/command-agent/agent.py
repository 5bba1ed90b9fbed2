#!/usr/bin/env python3
"""A minimal command agent for Fyan (docs/command-agent.md): every stage, one small program.

It shows the whole contract and nothing else. Instead of asking a model it answers from a
folder of prepared answers, ``$FYAN_AGENT_ANSWERS/<unit>/<prompt>.md`` (a text reply) or
``.json`` (a structured reply) — the layout of the example project's
``replay/authored/`` — so that it runs end to end without a model. To wire your own model,
replace ``answer()``: send it ``prompt`` (and, for a structured reply, the JSON schema in
``FYAN_REPLY_SCHEMA``) and return its reply.

Configure it in ``fyan.toml``::

    [agents.default]
    provider = "command"
    command = ["python3", "/path/to/agent.py"]

What it reads: the prompt on stdin (the system prompt, then the conversation, separated by
``---`` lines); ``FYAN_STAGE``, ``FYAN_PROMPT``, ``FYAN_UNIT`` (empty for a project-level call),
``FYAN_WORKSPACE`` (the folder it runs in) and, when the stage wants a structured reply,
``FYAN_REPLY_SCHEMA``. What it leaves: the reply on stdout (exactly one JSON object when
``FYAN_REPLY_SCHEMA`` is set), and, for the Formalizer (prompt ``prove_agent``), the proofs
written into the Lean file the prompt names, inside the workspace. Exit status 0; anything
else fails the call with the end of stderr.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

MODEL_BEGIN = "-- fyan: begin model-written declarations"
MODEL_END = "-- fyan: end model-written declarations"


def answer(prompt: str, name: str, unit: str, structured: bool) -> str:
    """The reply to ``prompt``: here a prepared answer; put your model call here."""
    folder = Path(os.environ["FYAN_AGENT_ANSWERS"]) / (unit or "_project")
    path = folder / f"{name}.{'json' if structured else 'md'}"
    if not path.is_file():
        raise SystemExit(f"agent.py: no prepared answer {path}")
    return path.read_text(encoding="utf-8")


def prove(prompt: str, unit: str, workspace: Path) -> str:
    """The Formalizer: write the proofs into the file the prompt names (its first line says
    ``complete the proofs in `<file>```), between Fyan's markers; stdout is the plan."""
    found = re.search(r"complete the proofs in `([^`]+)`", prompt)
    if found is None:
        raise SystemExit("agent.py: the prompt names no file to complete")
    target = (workspace / found.group(1)).resolve()
    if workspace.resolve() not in target.parents:
        raise SystemExit(f"agent.py: {target} is outside the workspace")
    lean = json.loads(answer(prompt, "prove", unit, structured=True))["lean"]  # the prepared proofs
    text = target.read_text(encoding="utf-8")
    start, end = text.index(MODEL_BEGIN) + len(MODEL_BEGIN), text.rindex(MODEL_END)
    target.write_text(text[:start] + "\n" + lean.strip("\n") + "\n" + text[end:], encoding="utf-8")
    return f"wrote the proofs of {unit} into {found.group(1)}"


def main() -> int:
    prompt = sys.stdin.read()
    name, unit = os.environ["FYAN_PROMPT"], os.environ.get("FYAN_UNIT", "")
    workspace = Path(os.environ["FYAN_WORKSPACE"])
    if name == "prove_agent":
        print(prove(prompt, unit, workspace))
        return 0
    structured = "FYAN_REPLY_SCHEMA" in os.environ
    reply = answer(prompt, name, unit, structured)
    if structured:
        json.loads(reply)  # exactly one JSON object on stdout; Fyan validates it against the schema
    sys.stdout.write(reply)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
