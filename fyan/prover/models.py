"""Typed inputs and results of the prover tools (``fyan.prover.tools``).

Positions are those of the text the tool was given (without the unit's header): 1-based lines,
0-based columns counted in code points, as ``lean --json`` prints them. Line 0 means the unit's
import header. Every result carries ``status``:

* ``ok`` — Lean answered (the answer may hold errors: they are the proof's);
* ``refused`` — the text was not sent to Lean (a lint error, a malformed name, too long): ``note`` says why;
* ``timeout`` / ``server_failed`` / ``unavailable`` — the environment failed (the language server
  did not answer in time, ended, or could not be had); never the proof's doing.

``truncated`` says an output bound cut the answer (``Limits``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Status = Literal["ok", "refused", "timeout", "server_failed", "unavailable"]


class Limits(BaseModel):
    """Bounds of one call: seconds Lean may take, the largest input text (characters), and the
    output: messages kept, characters per message or goal, trial scripts per ``lean_try``."""

    timeout_s: float = 60.0
    max_input_chars: int = 200_000
    max_messages: int = 40
    max_chars: int = 4_000
    max_scripts: int = 8


class Message(BaseModel):
    """One Lean message (``error``/``warning``/``info``) at a position of the given text."""

    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None
    severity: str
    text: str


class GoalState(BaseModel):
    """The goal at one position: ``kind`` ``tactic`` (``$/lean/plainGoal``: one string per open
    goal, empty when no goal is left) or ``term`` (``$/lean/plainTermGoal``: the expected type)."""

    line: int
    column: int
    kind: Literal["tactic", "term"]
    goals: list[str]
    at: str = ""


class ToolResult(BaseModel):
    status: Status = "ok"
    note: str = ""
    duration_s: float = 0.0
    truncated: bool = False


class CheckInput(BaseModel):
    text: str = Field(description="Lean declarations in the unit's context (the unit's imports are prepended)")


class CheckResult(ToolResult):
    #: no error and no ``sorry`` warning
    complete: bool = False
    errors: int = 0
    sorries: int = 0
    messages: list[Message] = Field(default_factory=list)
    goals: list[GoalState] = Field(default_factory=list)


class GoalsInput(BaseModel):
    text: str
    line: int = Field(ge=1, description="1-based line of the tactic or term")
    column: int | None = Field(default=None, ge=0, description="column of its start; default: the first non-blank")


class GoalsResult(ToolResult):
    #: the goal with the cursor at the tactic's (term's) start
    before: GoalState | None = None
    #: the goal with the cursor at the end of the line's text: after the tactic ran
    after: GoalState | None = None
    messages: list[Message] = Field(default_factory=list)


class TryInput(BaseModel):
    text: str
    line: int = Field(ge=1)
    column: int | None = Field(default=None, ge=0,
                               description="where the replaced part starts (a `sorry` token there is replaced "
                                           "alone; anything else: the rest of the line); default: the first "
                                           "`sorry` of the line, else its first non-blank")
    scripts: list[str] = Field(min_length=1, description="tactic scripts or terms, tried one at a time")
    stop_at_first: bool = True


class Trial(BaseModel):
    script: str
    status: Status = "ok"
    #: no error inside the enclosing declaration and the script itself has no sorry
    closes: bool = False
    errors: list[Message] = Field(default_factory=list)
    #: the goals left at the end of the script
    remaining: GoalState | None = None
    duration_s: float = 0.0
    note: str = ""


class TryResult(ToolResult):
    #: index (0-based) into ``trials`` of the first script that closes the goal
    first_closing: int | None = None
    trials: list[Trial] = Field(default_factory=list)


class LookupInput(BaseModel):
    name: str = Field(description="a fully qualified Lean name, e.g. Nat.add_comm")


class LookupResult(ToolResult):
    name: str
    exists: bool = False
    signature: str | None = None
    docstring: str | None = None
    module: str | None = None


class AxiomsInput(BaseModel):
    text: str = Field(description="the unit's declarations (may be empty to ask about a library name)")
    name: str


class AxiomsResult(ToolResult):
    name: str
    axioms: list[str] = Field(default_factory=list)
    #: ``sorryAx`` among them: the declaration depends on a ``sorry``
    uses_sorry: bool = False
    messages: list[Message] = Field(default_factory=list)
