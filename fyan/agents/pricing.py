"""Cost of a model call from the single pricing table ``config/pricing.toml`` (USD per million
tokens: ``input``, ``output``, ``cache_read``). Replayed calls cost nothing."""

from __future__ import annotations

import tomllib
from functools import lru_cache

from fyan.agents.providers.base import ModelResponse
from fyan.resources import data_dir


@lru_cache(maxsize=1)
def price_table() -> dict[str, dict[str, float]]:
    data = tomllib.loads((data_dir("config") / "pricing.toml").read_text(encoding="utf-8"))
    return data.get("models", {})


def cost_usd(response: ModelResponse) -> float:
    """USD spent on ``response`` (0 for replays and for models missing from the table)."""
    if response.replay:
        return 0.0
    price = price_table().get(response.model)
    if price is None:
        return 0.0
    u = response.usage
    uncached = max(0, u.tokens_in - u.cache_read)
    return round(
        (uncached * price.get("input", 0.0) + u.cache_read * price.get("cache_read", price.get("input", 0.0))
         + u.tokens_out * price.get("output", 0.0)) / 1e6,
        6,
    )
