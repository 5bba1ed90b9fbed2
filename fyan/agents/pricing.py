"""Cost of a model call from the single pricing table ``config/pricing.toml``.

Prices are USD per million tokens: ``input``, ``output``, ``cache_read`` (prompt tokens served
from the provider's cache; default: ``input``) and ``cache_write`` (prompt tokens written to the
cache; default: ``input``). ``Usage.tokens_in`` counts every prompt token, so the uncached part
is ``tokens_in - cache_read - cache_write``. Replayed calls, command agents and models missing
from the table cost 0 (``fyan status --cost`` shows the models that are not priced).
"""

from __future__ import annotations

import tomllib
from functools import lru_cache

from fyan.agents.providers.base import ModelResponse
from fyan.resources import data_dir


@lru_cache(maxsize=1)
def price_table() -> dict[str, dict[str, float]]:
    """Model name -> prices (USD per million tokens), from ``config/pricing.toml``."""
    data = tomllib.loads((data_dir("config") / "pricing.toml").read_text(encoding="utf-8"))
    return data.get("models", {})


def is_priced(model: str) -> bool:
    return model in price_table()


def cost_usd(response: ModelResponse) -> float:
    """USD spent on ``response`` (0 for replays and for models missing from the table)."""
    if response.replay:
        return 0.0
    price = price_table().get(response.model)
    if price is None:
        return 0.0
    u = response.usage
    base = price.get("input", 0.0)
    uncached = max(0, u.tokens_in - u.cache_read - u.cache_write)
    return round(
        (uncached * base + u.cache_read * price.get("cache_read", base) + u.cache_write * price.get("cache_write", base)
         + u.tokens_out * price.get("output", 0.0)) / 1e6,
        9,
    )
