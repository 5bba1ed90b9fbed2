"""Refute before proving: counterexample searches run confined, judged by Fyan's own programs.

``fyan.refute.models`` holds what a search is (``RefutationProgram``) and what running it gave
(``RefutationOutcome``); ``fyan.refute.runner.run_refutation`` runs one in a bubblewrap sandbox
(docs/refutation.md).
"""

from fyan.refute.models import (RUNNER_VERSION, DomainVariable, RefutationLimits, RefutationOutcome,
                                RefutationProgram, TargetAssertion)
from fyan.refute.runner import LeanCheck, run_refutation

__all__ = ["RUNNER_VERSION", "DomainVariable", "LeanCheck", "RefutationLimits", "RefutationOutcome",
           "RefutationProgram", "TargetAssertion", "run_refutation"]
