"""Orchestration: the run lock, critical-path-first scheduling and the run loop."""
