"""Kept for the peer benchmark (shared/bench/ours_cycle.py), which imports seed by this path."""

from countersign.infrastructure.demo.seed import seed as seed
