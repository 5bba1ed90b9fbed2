"""Model providers behind one interface (``base.Provider``): Anthropic, OpenAI and any
OpenAI-compatible endpoint (official SDKs), and record/replay of calls."""
