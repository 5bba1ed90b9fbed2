"""State: pydantic models, the SQLite store (read side), the gateway (the only writer) and
the pure lifecycle rules that compute a unit's status from its stage history."""
