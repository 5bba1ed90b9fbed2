"""The gate tests' two-unit project: ``fyan.selftest.harness``, the same stage ``fyan selftest``
runs the cheat corpus on (one source of truth, so ``pytest`` and ``fyan selftest`` cannot drift).
"""

from fyan.selftest.harness import (  # noqa: F401
    ATTEMPTS, BRIDGE, BRIDGE_STATEMENT, DEF_BODY, HONEST, HONEST_BRIDGE, LIB, ROOT, ROOT_STATEMENT, TEX, Setup, load_json,
    Gateway, _accept, _audit, _checks, _drive, setup,
)
