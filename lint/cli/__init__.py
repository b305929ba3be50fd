"""The command line: the click commands, `plint check` (its options and its click-free fast path), and the
commands that print docs."""
