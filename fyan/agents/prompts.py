"""Prompt files (``prompts/<stage>.<role>.md``) with named placeholders filled by code.

A task that runs on another node renders the head's prompts, which travel with it
(``fyan.executor``): ``use_prompts(folder)`` points the rendering of the current thread there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from string import Template

from fyan.errors import ProjectError
from fyan.resources import data_dir

_FOLDER: ContextVar[Path | None] = ContextVar("fyan_prompts_folder", default=None)


def _folder() -> Path:
    return _FOLDER.get() or data_dir("prompts")


@contextmanager
def use_prompts(folder: Path) -> Iterator[None]:
    """Render prompts from ``folder`` instead of the installed ``prompts/`` in this context."""
    token = _FOLDER.set(folder)
    try:
        yield
    finally:
        _FOLDER.reset(token)


def render(name: str, values: dict[str, str]) -> str:
    """Render ``prompts/<name>.md`` with ``values``.

    Raises ``ProjectError`` when the file is missing or a placeholder has no value.
    """
    path = _folder() / f"{name}.md"
    try:
        template = Template(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProjectError(f"prompt file {path} not found", hint="reinstall Fyan") from None
    try:
        return template.substitute(values)
    except KeyError as e:
        raise ProjectError(f"prompt {path}: no value for placeholder {e.args[0]}") from None
    except ValueError as e:
        raise ProjectError(f"prompt {path}: {e} (write a literal dollar sign as $$)") from None


def exists(name: str) -> bool:
    return (_folder() / f"{name}.md").is_file()
