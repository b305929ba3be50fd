"""plint rules, one module per family."""
