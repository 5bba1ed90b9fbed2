"""Semantic audit: the evidence record a model proposes, and the code that decides its grade."""
