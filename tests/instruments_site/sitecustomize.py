"""Loaded at start by the Python processes of the Ray cluster tests (``PYTHONPATH`` names this
folder): binds the toolchain double's instrument folder into their confinements as the test
process does (``tests/instruments.py``)."""

import os

if os.environ.get("FYAN_TEST_INSTRUMENTS"):
    from tests.instruments import ENV, bind_instruments

    bind_instruments(os.environ[ENV])
