"""Fault injection for crash tests and the resume benchmark.

``fault_point(name)`` kills the process on the spot (``os._exit``, no cleanup, like SIGKILL)
when the environment variable ``FYAN_FAULT_AT`` equals ``name``. The points are placed at the
gateway's crash-critical moments (``finish:after_copy``, ``finish:after_commit``, ...). With the
variable unset this is a dictionary lookup and nothing else.
"""

from __future__ import annotations

import os

FAULT_EXIT_CODE = 86


def fault_point(name: str) -> None:
    if os.environ.get("FYAN_FAULT_AT") == name:
        os._exit(FAULT_EXIT_CODE)
