"""Agents: model providers behind one interface, prompts, and the model-driven stages.

Stage code writes files into its attempt folder and returns; the gateway decides."""
