"""Reading: the shell evaluator (shell/), the readers of launchers, Slurm, trainer flags and DeepSpeed JSON
(sources/), and normalise, which turns what they read into a Layout."""
