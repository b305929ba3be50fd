"""JSON schemas and data catalogs shipped with plint."""
