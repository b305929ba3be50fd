"""The scheduler of a job a launch script submits itself (`sbatch job.sh`, `qsub job.sh`), read from the commands
the shell evaluator records: each knows how it was started (Command.via) and by which command (Command.parent)."""

from __future__ import annotations

# Grid Engine's qsub options OpenPBS's has not (gridengine 6.2 qsub(1); ABCI 2's `qsub -g GROUP -l rt_F=2`): a job
# submitted with one of them is Grid Engine's
_GRID_ENGINE_ONLY = frozenset({"-g", "-pe", "-cwd", "-wd", "-b", "-hold_jid", "-sync", "-now", "-terse"})


def submitted_with(command) -> tuple[str, str] | None:
    """The scheduler of a job the script submits (`sbatch job.sh`, `sbatch --wrap STR`, `qsub job.sh`) that runs the
    command, and how plint knows it; None when the command runs in no such job."""
    seen = 0
    while command is not None and seen < 64:  # a chain of parents is short; bounded all the same
        if command.via == "sbatch":
            return "slurm", "a job the script submits with sbatch"
        if command.via == "qsub":
            words = {w.text for w in command.parent.words} if command.parent is not None else set()
            if words & _GRID_ENGINE_ONLY:
                return "sge", "a job the script submits with Grid Engine's qsub"
            return "pbs", "a job the script submits with qsub"
        command, seen = command.parent, seen + 1
    return None
