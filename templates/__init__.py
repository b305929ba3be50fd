"""Jinja templates for generated launches."""
