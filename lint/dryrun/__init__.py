"""Dry run: the ranks of each process group, built analytically or by megatron-core on fake process groups."""
