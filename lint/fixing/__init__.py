"""Fixing: the fixer registry, the fixers, and `plint fix`, which applies their edits."""
