"""Error types and exit codes shared by every command.

Every error a user can cause carries a message that names the offending file (and line when
there is one) and a hint that says what to do next. The CLI maps each class to a documented
exit code (see ``ExitCode``); anything else is a bug and exits with ``ExitCode.INTERNAL``.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes of the ``fyan`` command (documented in ``fyan --help``)."""

    OK = 0
    INTERNAL = 1  # a bug: an exception Fyan did not expect
    USAGE = 2  # bad command line (argparse uses 2 as well)
    INCOMPLETE = 3  # ran to quiescence but some units are blocked / a gate failed
    INPUT = 4  # bad input: source document, config, project folder, replay file
    STATE = 5  # refused by the state gateway, or the project is locked by another run
    INTERRUPTED = 130  # stopped by SIGINT (Ctrl-C): 128 + 2, as shells report it
    TERMINATED = 143  # stopped by SIGTERM: 128 + 15, as shells report it


class Interrupted(BaseException):
    """SIGTERM (or SIGINT) reached a command outside a run's own handling: raised by the
    ``fyan`` command's handler so that every interrupt ends the same way (``fyan.cli.main``:
    exit 128 + ``signum``, one message). A ``BaseException`` like ``KeyboardInterrupt``:
    nothing catches it by accident."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class FyanError(Exception):
    """Base class of all errors reported to the user.

    ``message`` says what is wrong (with ``file:line`` when known); ``hint`` says what to do.
    """

    exit_code: ExitCode = ExitCode.INPUT
    #: When raised inside a stage attempt: can another attempt help? (False blocks the unit.)
    retryable: bool = True

    def __init__(self, message: str, *, hint: str | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(FyanError):
    """The command line names something that does not exist (an unknown unit id) or a value
    out of range: exit code 2, like argparse's own errors."""

    exit_code = ExitCode.USAGE


class InputError(FyanError):
    """A source document cannot be read or is malformed (missing file, not TeX, unbalanced
    environments, duplicate label, unknown reference, include loop)."""


class DagError(InputError):
    """The dependency DAG is invalid (cycle, unknown edge target, statement in no unit)."""


class ConfigError(FyanError):
    """``fyan.toml`` or an environment override is invalid."""


class ProjectError(FyanError):
    """The folder is not a Fyan project, or it is in a state the command cannot use."""


class ReplayMissError(FyanError):
    """The replay provider has no recorded response for a request (``key``: the request's
    hash), or the cassette file does not exist. Not retryable: the same request misses again."""

    retryable = False

    def __init__(self, message: str, *, hint: str | None = None, key: str = "") -> None:
        super().__init__(message, hint=hint)
        self.key = key


class ModelOutputError(FyanError):
    """A model reply could not be validated after the allowed number of form repairs."""


class ProviderError(FyanError):
    """A model provider failed (authentication, a refused request, a command agent's failure)."""


class ProviderUnavailable(ProviderError):
    """A provider did not answer as a working model: connection refused or reset, a timeout,
    429 (rate limit), 5xx or "overloaded" — after the call's own quick retries, or at once
    while its circuit breaker is open (``fyan.agents.providers.breaker``).

    Not a failure of the attempt: the engine records the attempt as *interrupted by the
    provider* (no attempt budget used, no critic called) and waits until ``retry_at`` (POSIX
    seconds) before dispatching work to that provider again ("outages are waited
    out, not counted"). ``provider`` names the breaker (e.g. ``anthropic``); ``since`` is when
    the outage began (POSIX seconds)."""

    exit_code = ExitCode.INCOMPLETE

    def __init__(self, provider: str, error: str, *, since: float, retry_at: float) -> None:
        super().__init__(f"{provider} unavailable: {error}",
                         hint="Fyan waits for it and tries again by itself; nothing is counted against a unit")
        self.provider = provider
        self.error = error
        self.since = since
        self.retry_at = retry_at


class TransitionError(FyanError):
    """The gateway refused a state transition (illegal order, dependency not complete)."""

    exit_code = ExitCode.STATE


class LockedError(FyanError):
    """Another Fyan process holds the project's lock."""

    exit_code = ExitCode.STATE
