"""plint: a linter for the launch files of large-model training runs."""

__version__ = "0.1.0"
