"""Passes from graph to statements."""
