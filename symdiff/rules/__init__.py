"""Derivative rules: one table for forward and reverse mode."""

from symdiff.rules.table import PARTIALS, partials

__all__ = ["PARTIALS", "partials"]
