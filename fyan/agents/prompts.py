"""Prompt files (``prompts/<stage>.<role>.md``) with named placeholders filled by code."""

from __future__ import annotations

from string import Template

from fyan.errors import ProjectError
from fyan.resources import data_dir


def render(name: str, values: dict[str, str]) -> str:
    """Render ``prompts/<name>.md`` with ``values``.

    Raises ``ProjectError`` when the file is missing or a placeholder has no value.
    """
    path = data_dir("prompts") / f"{name}.md"
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
    return (data_dir("prompts") / f"{name}.md").is_file()
