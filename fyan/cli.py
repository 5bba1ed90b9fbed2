"""The ``fyan`` command line.

Every command is a module of ``fyan.commands`` whose ``run`` returns a ``CommandResult``
(``fyan.command_result``: exit code, JSON payload, human text); ``--json`` prints the payload
instead of the text, so machine use is never an afterthought. Only the module of the command
given is imported (``fyan --help`` imports none). Errors Fyan expects (``FyanError``) print
their message and hint and exit with the code of their class. Nothing else reaches the terminal
as a traceback: an unexpected error prints one line and the path of a crash report holding the
details (``fyan.logs.crash_report``; never local variables or document text on the terminal),
and with ``--json`` stdout stays one JSON object. A closed output (``fyan status … | head -1``)
ends quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fyan import __version__, logs
from fyan.command_result import CommandResult
from fyan.commands import BY_NAME, COMMANDS, add_command, load
from fyan.commands._shared import interrupt_text
from fyan.errors import ExitCode, FyanError, Interrupted

__all__ = ["CommandResult", "build_parser", "main"]

EPILOG = """exit codes:
  0  success (for `run`: every unit complete)
  1  internal error (a bug): one line, and the details in a crash report (its path is printed)
  2  bad command line (unknown option, value out of range, unknown unit id)
  3  incomplete: the run reached quiescence with blocked units (a replay miss included), the
     gate failed, `verify` found a completion that does not reproduce, `doctor` found
     something needed missing, or `status` found the first ingest interrupted (the next run
     reads the source again)
  4  bad input: source document, configuration (no model configured, a missing API key),
     project folder, or a replay cassette that is missing or malformed (checked before any attempt)
  5  refused: an illegal state transition, or another run holds the project lock
  130  interrupted by Ctrl-C (SIGINT), 143 stopped by SIGTERM (`fyan daemon stop`, kill), as
       shells report them, at any moment (starting up, ingesting, during attempts): one line
       "fyan: stopped by SIGINT" on stderr; what was done is kept, attempts in progress are
       recorded as interrupted, and `fyan resume <project>` continues

A Lean toolchain is needed to complete units (install elan, then `elan default stable`, then
`fyan selftest`: the gate trusts a toolchain only after its selftest passed). Without one, Fyan runs every stage it can and blocks units at the completion gate."""


def _chosen(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (its first word that is not an option), if it is one."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in BY_NAME else None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``fyan`` parser. With ``argv``, only the command it names gets its arguments (and its
    module is imported); without, every command does (for tools that read the whole parser)."""
    parser = argparse.ArgumentParser(
        prog="fyan",
        description="Formalize a mathematical document in Lean 4, theorem unit by theorem unit, "
        "behind a deterministic completion gate.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fyan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = _chosen(argv) if argv is not None else None
    for spec in COMMANDS:
        add_command(sub, spec, full=argv is None or spec.name == chosen)
    return parser


def _print(text: str, stream=None) -> None:
    print(text, file=stream or sys.stdout, flush=True)


def _quiet_closed_output() -> None:
    """The reader of our output went away (``| head -1``): say nothing more, and keep Python
    from complaining about it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _fail(args: argparse.Namespace, code: ExitCode, message: str, hint: str | None = None, **extra: Any) -> int:
    """Report an error: one JSON object on stdout with ``--json``, else lines on stderr."""
    if getattr(args, "json", False):
        _print(json.dumps({"error": message, "hint": hint, "exit_code": int(code), **extra}, ensure_ascii=False))
    else:
        _print(f"fyan: error: {message}", sys.stderr)
        if hint:
            _print(f"  hint: {hint}", sys.stderr)
    return int(code)



def main(argv: list[str] | None = None) -> int:
    """Run one command (module docstring); returns the exit code (``ExitCode``)."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    folder = Path(args.dir) if isinstance(getattr(args, "dir", None), str) else None
    previous = None
    if threading.current_thread() is threading.main_thread():  # SIGTERM ends a command as Ctrl-C does
        def terminated(signum, frame):
            raise Interrupted(signum)

        previous = signal.signal(signal.SIGTERM, terminated)
    try:
        try:
            result = load(args.command).run(args)
        except FyanError as e:
            return _fail(args, e.exit_code, e.message, e.hint)
        except (KeyboardInterrupt, Interrupted) as e:
            signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
            message, hint = interrupt_text(signum, args.command, getattr(args, "dir", None))
            code = ExitCode(128 + int(signum))
            if args.json:
                return _fail(args, code, message, hint, signal=signal.Signals(signum).name)
            _print(f"fyan: {message}\n  hint: {hint}", sys.stderr)  # a stop asked for, not an error
            return int(code)
        except OSError as e:
            if isinstance(e, BrokenPipeError):
                raise
            if e.filename is None:
                raise
            report = logs.crash_report(e, args.command, folder)
            return _fail(args, ExitCode.INPUT, f"{e.filename}: {e.strerror or e}",
                         f"details in {report}", log=str(report))
        except Exception as e:  # a bug: one line on the terminal, the details in a file
            report = logs.crash_report(e, args.command, folder)
            return _fail(args, ExitCode.INTERNAL, f"internal error ({type(e).__name__}); this is a bug in Fyan",
                         f"the details are in {report}; please include that file when you report it", log=str(report))
        if args.json:
            _print(json.dumps(result.payload, indent=2, ensure_ascii=False, default=str))
        else:
            if result.text:
                _print(result.text)
            stopped = result.payload.get("interrupted") if isinstance(result.payload, dict) else None
            if stopped:  # the same line as an interrupt while starting up (``_interrupt_text``)
                _print(f"fyan: {stopped['message']}\n  hint: {stopped['hint']}", sys.stderr)
        return int(result.code)
    except BrokenPipeError:
        _quiet_closed_output()
        return int(ExitCode.OK)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)



if __name__ == "__main__":
    raise SystemExit(main())
