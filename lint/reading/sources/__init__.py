"""What the words of a launch mean: launchers, Slurm, trainer flags, DeepSpeed JSON."""
