"""A pytest plugin standing in for a machine without bubblewrap: ``pytest -p tests.without_bwrap``.

``shutil.which("bwrap")`` answers ``None`` in the test process whatever ``PATH`` a test sets
(``fyan.sandbox.runner.bwrap_status`` looks ``bwrap`` up this way), as on a machine where
``apt-get install bubblewrap`` never ran; a ``bwrap`` double a test writes under the temporary
folder is still found. Child processes are not covered: give them a ``PATH``
without ``bwrap`` as well (``tests/test_sandbox.py::test_suite_without_bwrap_skips_with_the_reason``).
"""

from __future__ import annotations

import os
import shutil
import tempfile

_which = shutil.which


def _which_without_bwrap(cmd, mode=os.F_OK | os.X_OK, path=None):
    found = _which(cmd, mode, path)
    if found and os.path.basename(str(cmd)) == "bwrap" and not found.startswith(tempfile.gettempdir() + os.sep):
        return None
    return found


shutil.which = _which_without_bwrap
