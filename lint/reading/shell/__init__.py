"""The static bash evaluator: tree-sitter nodes -> words with provenance."""
