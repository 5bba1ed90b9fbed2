"""Text for the terminal: tables and lines whose content is data, never markup.

Text from documents, models and tools (``x ∈ [0, 1]``, ``set [lean] lake``, ``:smile:``) is
printed as it is: every console made here has rich's markup, emoji codes and highlighting
switched off, so brackets and colons are never interpreted. Lines are
never cut: a table folds long cells instead.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Sequence
from io import StringIO
from typing import IO

from rich.console import Console
from rich.table import Table


def quoted(path: object) -> str:
    """A path or word as it must be typed in a shell (quoted when it has spaces or specials):
    every command Fyan prints for the user to run uses it (``Next: fyan run 'my paper'``)."""
    return shlex.quote(str(path))


def console(file: IO[str] | None = None, width: int | None = None, *, force_terminal: bool | None = None) -> Console:
    """A rich console that prints text literally (no markup, emoji codes or highlighting)."""
    return Console(file=file, width=width, markup=False, emoji=False, highlight=False, force_terminal=force_terminal)


def terminal_width(minimum: int = 100, fallback: int = 140) -> int:
    """Columns of the terminal (``fallback`` when not a terminal), at least ``minimum``."""
    return max(minimum, shutil.get_terminal_size((fallback, 20)).columns)


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """A table whose cells fold instead of being cut."""
    t = Table(title=title)
    for c in columns:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(str(x) for x in r))
    return t


def render(*renderables, width: int | None = None) -> str:
    """``renderables`` (tables, strings) as plain text, literally, ``width`` columns wide
    (default: the terminal's, at least 100)."""
    buf = StringIO()
    c = console(buf, width or terminal_width(), force_terminal=False)
    for r in renderables:
        c.print(r)
    return buf.getvalue().rstrip()


def table_text(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None) -> str:
    """``table(...)`` rendered as plain text."""
    return render(table(title, columns, rows), width=width)
