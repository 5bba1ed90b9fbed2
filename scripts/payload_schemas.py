"""Write the JSON Schemas of every command's ``--json`` payload into ``fyan/schemas/`` (shipped
with the package; ``fyan.api.payload_schema`` reads them). Run after changing a ``Payload``
model; tests/test_commands.py fails while a shipped schema differs from its model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fyan.api import SCHEMA_DIR, generated_schema  # noqa: E402
from fyan.commands import COMMANDS  # noqa: E402


def main() -> int:
    SCHEMA_DIR.mkdir(exist_ok=True)
    for name in [c.name for c in COMMANDS] + ["error"]:
        path = SCHEMA_DIR / f"{name}.json"
        path.write_text(json.dumps(generated_schema(name), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
