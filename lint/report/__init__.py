"""Reporters: text and JSON."""
