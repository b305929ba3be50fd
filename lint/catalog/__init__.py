"""Data catalogs: trainer flags, hardware, model presets."""
