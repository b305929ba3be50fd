"""PL0xx: what plint could not read (PL001), could not know (PL002), or found no launch in (PL005)."""

from __future__ import annotations

import re

from plint.bounds import MAX_UNUSED_LAUNCHES
from plint.rules.base import (
    Example,
    Finding,
    LaunchContext,
    RuleContext,
    RuleDocs,
    planned_fix,
    register,
    safe_fix,
    unfixable,
    unsafe_fix,
)

_VAR = r"\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9]+)"  # compiled on use (re caches it): only for findings


@register(
    "PL001",
    "parse-error",
    "error",
    "A file cannot be read, or bash would refuse part of it.",
    RuleDocs(
        what="Reports a file plint cannot read at all (binary, not UTF-8, broken JSON) and a shell "
        "script that bash itself rejects: a syntax error confirmed with `bash -n`, or an "
        "arithmetic expansion bash refuses, such as `$((1_000_000))`, or a command name bash cannot find "
        "because an expansion made it look like an assignment (`$ENV_ARGS torchrun ...` with "
        'ENV_ARGS="WANDB_DISABLED=true"). plint still reads what it can of such a script.',
        why="A script with a syntax error stops where bash stops: the launch after it never runs, "
        "after the job has already waited in the queue. Bash rejects `1_000_000` in `$(( ))` "
        '("value too great for base") and abandons the whole top-level command it stands in: the variable is '
        "never assigned, and neither the rest of its line nor the rest of the loop, if or function call around "
        "it runs (bash 5.2, set -e or not); bash goes on with the next line.",
        bad=Example(
            {
                "launch.sh": "#!/bin/bash\nTRAIN_SAMPLES=$((300_000_000))\n"
                "torchrun --nproc_per_node 8 pretrain_gpt.py --train-samples $TRAIN_SAMPLES\n"
            }
        ),
        good=Example(
            {
                "launch.sh": "#!/bin/bash\nTRAIN_SAMPLES=$((300000000))\n"
                "torchrun --nproc_per_node 8 pretrain_gpt.py --train-samples $TRAIN_SAMPLES\n"
            }
        ),
        fix=safe_fix(
            "Mostly not fixable: the intended text is not known. Digit separators in bash arithmetic "
            "(`$(( 300_000_000_000 / SEQ ))`, or a variable holding such a number) are removed by `plint fix` "
            "(safe: bash reads no separators)."
        ),
        references=("bash(1), ARITHMETIC EVALUATION", "docs/reading.md, What plint reads, statically"),
    ),
    needs_layout=False,
)
def parse_error(ctx: RuleContext):
    reading = ctx.reading
    if ctx.layout is not None and reading.layouts and ctx.layout is not reading.layouts[0]:
        return  # file-level: report once
    if reading.unreadable is not None:
        yield Finding(reading.unreadable)
        return
    for problem in reading.problems:
        if problem.kind in ("syntax", "shell-error"):
            yield Finding(problem.message, problem.span)


def _hint(note: str) -> str:
    # The last variable a note names is the root of the chain ("$LAYERS depends on case "$SIZE"...,
    # which is unknown: positional parameter $1 is not given"): that is the one to supply. A value that
    # depends on several conditions ("...; and on if ...") names each root: every one is needed.
    roots = list(dict.fromkeys(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*) is not set in the script", note)))
    if len(roots) > 1 and "; and on " in note:
        return "supply them with " + " ".join(f"--env {name}=<value>" for name in roots)
    names = list(dict.fromkeys(re.findall(_VAR, note)))[-1:]
    if "[tool.plint] model" in note:  # a model's shape: the note already says how to give it
        return ""
    if not names:
        return "write the value in the script"
    name = names[0]
    if "unfilled template slot" in note:
        if "nothing in the script replaces it" in note:
            return "write the value in the template, or add the slot to the script's sed/envsubst"
        return f"export {name} in the script, or supply it with --env {name}=<value>"
    if "is not set in the script" in note or "positional parameter" in note or "is not given" in note:
        return f"supply it with --env {name}=<value>"
    # the script assigns it from something only known at run time: an assumption replaces that
    return f"supply it with --assume {name}=<value> or [tool.plint.assume] {name} = ..."


@register(
    "PL002",
    "unresolved-value",
    "info",
    "A value that rules need cannot be known statically.",
    RuleDocs(
        what="Names a layout value plint could not know without running the job: a variable with no "
        "value in the script (`$SLURM_NNODES` without `#SBATCH --nodes`), a command substitution "
        "(`$(nvidia-smi -L | wc -l)`), a positional parameter, a branch on something unknown, a file "
        "outside the checked tree (plint does not read it: docs/safety.md, What plint reads and writes), a file "
        'past one of plint\'s budgets ("too complex: not evaluated", at the line and column where it ran '
        "out: docs/safety.md, Budgets and fuzzing). The message names the variable and how to supply it.",
        why="Rules that need the value (world size, data parallelism, batch arithmetic) stay silent "
        "rather than guess; supplying the value lets them run.",
        bad=Example(
            {
                "launch.sh": "#!/bin/bash\n"
                "torchrun --nnodes $NNODES --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1\n"
            }
        ),
        good=Example(
            {
                "launch.sh": "#!/bin/bash\nNNODES=${NNODES:-2}\n"
                "torchrun --nnodes $NNODES --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1\n"
            }
        ),
        fix=unsafe_fix(
            "Supply the value with `--env NAME=VALUE`, `[tool.plint.assume]`, or a default "
            "in the script (`${NNODES:-2}`). A bare template slot (`CKPT=<Specify path>`, which bash reads as "
            "redirections) is quoted under `--unsafe-fixes`, so bash parses the script; it still needs a value."
        ),
    ),
    needs_layout=False,
)
def unresolved_value(ctx: RuleContext):
    reading = ctx.reading
    if ctx.layout is None or ctx.layout is reading.layouts[0]:
        for problem in reading.problems:
            if problem.kind == "unresolved":
                yield Finding(problem.message, problem.span)
    layout = ctx.layout
    if layout is None or layout.extras.config_alone:
        return  # a DeepSpeed config alone: the launch that runs it decides the rest, nothing is missing
    unknown = {k: v for k, v in layout.fields.items() if v.origin == "unresolved" and v.value is None}
    dependents = [k for k, v in unknown.items() if (v.note or "").startswith("needs ")]
    # One finding per cause: fields unknown for the same reason at the same place are reported together.
    causes: dict[tuple, list[str]] = {}
    for key, value in unknown.items():
        if key in dependents:
            continue
        span = value.span or layout.site
        causes.setdefault((value.note, span), []).append(key)
    for (note, span), keys in causes.items():
        message = f"{', '.join(keys)} cannot be known statically: {note}"
        if dependents and len(causes) == 1:
            message += f" (nor can {', '.join(dependents)})"
        hint = _hint(note or "")
        yield Finding(f"{message}; {hint}" if hint else message, span, key=keys[0])


@register(
    "PL005",
    "no-launch-found",
    "info",
    "A file plainly starts training, but plint found no launch in it.",
    RuleDocs(
        what="Reports a shell file with a command that starts training (torchrun, deepspeed, accelerate launch, "
        "`python -m torch.distributed.run`, `ray job submit -- python ...`, or a `pretrain_*.py` / `finetune*.py` / "
        "`train*.py` entry "
        "point given trainer flags) from which plint read no launch, and says why: the command sits in a "
        "function the script never calls, behind a wrapper or a variable plint cannot see through, in a "
        "branch plint found dead, or after an `exit`; or a command running a script named for training "
        "(`bash examples/pretrain_gpt.sh`, `./run_finetune.sh`) that plint cannot read (not in the checked tree "
        "where bash would look). Commands only mentioned in comments or `echo` strings do not count.",
        why="Without a launch there is no layout, so every other rule stays silent and the file would pass "
        'as clean ("0 error(s)"): a verdict about nothing. Saying which command was skipped and why '
        "tells the reader what plint could not check, and usually how to let it (`--env NAME=VALUE` for "
        "a launcher held in a variable, calling the function, naming the branch's variable).",
        bad=Example(
            {
                "launch.sh": "#!/bin/bash\n"
                "run_training() {\n"
                "    torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
                "        --tensor-model-parallel-size 2 --num-layers 24 --hidden-size 2048 \\\n"
                "        --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --bf16\n"
                "}\n"
            }
        ),
        good=Example(
            {
                "launch.sh": "#!/bin/bash\n"
                "run_training() {\n"
                "    torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
                "        --tensor-model-parallel-size 2 --num-layers 24 --hidden-size 2048 \\\n"
                "        --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --bf16\n"
                "}\n"
                "run_training\n"
            }
        ),
        fix=unfixable(
            "the finding says what kept the launch from being read; supply the unknown variable with "
            "`--env NAME=VALUE`, check the function, branch or `exit` it names, or check the script it runs."
        ),
        references=("docs/reading.md, What plint reads, statically",),
    ),
    needs_layout=False,
)
def no_launch_found(ctx: RuleContext):
    reading = ctx.reading
    if ctx.layout is not None or reading.layouts or reading.kind != "shell":
        return
    for unused in reading.unused_launches[:_UNUSED_SHOWN]:
        yield Finding(
            f"no training launch found: `{unused.command}` (line {unused.span.line}) looks like a training "
            f"launch, but plint did not use it: {unused.why}",
            unused.span,
            key="launch",
        )
    more = len(reading.unused_launches) - _UNUSED_SHOWN
    if more > 0:
        last = reading.unused_launches[_UNUSED_SHOWN]
        shown = f"at least {more}" if len(reading.unused_launches) >= MAX_UNUSED_LAUNCHES else more  # plint.bounds
        yield Finding(
            f"no training launch found: {shown} more training command(s) not used, the next at line "
            f"{last.span.line}: {last.why}",
            last.span,
            key="launch",
        )


_UNUSED_SHOWN = 3  # findings for the first unused training commands; the rest are counted


@register(
    "PL004",
    "unused-directive",
    "info",
    "A `# plint: disable=...` directive that suppresses nothing.",
    RuleDocs(
        what="Reports suppression directives (inline or file-wide) that cover no finding, so stale ones are "
        "noticed and removed once the launch is fixed; and a `# noqa` comment (flake8's and ruff's "
        "directive, which plint does not read) that names a plint code or sits on a finding, with the "
        "`# plint: disable=` directive to write instead.",
        why="A stale directive keeps hiding the next real finding on the same statement.",
        bad=Example(
            {
                "launch.sh": "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
                "# plint: disable=PL201 -- TP across nodes is intended here\n"
                "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
                "--sequence-parallel --use-distributed-optimizer\n"
            }
        ),
        good=Example(
            {
                "launch.sh": "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
                "# plint: disable=distributed-optimizer-off -- memory is not the constraint\n"
                "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
                "--sequence-parallel\n"
            }
        ),
        fix=planned_fix("`plint fix` deletes the directive."),
    ),
    needs_layout=False,
)
def unused_directive(ctx: RuleContext):
    """Reported by the engine once every rule has run (it needs all findings)."""
    return iter(())


@register(
    "PL003",
    "assumed-version",
    "info",
    "Flags were checked against an assumed trainer release.",
    RuleDocs(
        what="When the configuration names no Megatron-LM release and a flag is unknown to the newest release "
        "plint knows, says which release the verdict assumed and how to name yours.",
        why="Flags come and go between releases (Megatron-LM 0.8 had 327 option strings, 0.19 has 808): a flag "
        "unknown to 0.19 may be right for the release the cluster runs.",
        bad=Example({"launch.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --local_rank 0 --bf16\n"}),
        good=Example({"launch.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --bf16\n"}),
        fix=unfixable('add `megatron = "0.16"` (your release) to [tool.plint].'),
    ),
)
def assumed_version(ctx: LaunchContext):
    from plint.rules.keys_and_flags import REMOVED, unknown_flags

    release = ctx.layout.extras.release if ctx.layout is not None else None
    in_force = ctx.layout.extras.catalog if ctx.layout is not None else None
    if in_force is not None and in_force.note:
        yield Finding(
            f"{in_force.note}: flags were checked against {in_force.label}",
            getattr(ctx.layout.get("entrypoint"), "span", None),
            key="release",
        )
        return
    if not release or not release[1]:
        return
    args = ctx.layout.extras.trainer_args
    removed = [u for u in args.uses if u.option in REMOVED and u.spec is None] if args is not None else []
    flagged = [u for u, _ in unknown_flags(ctx)] + removed
    if flagged:
        from plint.catalog.flags import release_label

        which = (
            "the fork plint assumes for a Megatron-DeepSpeed launch"
            if ctx.layout.value("trainer") == "megatron-deepspeed"
            else "the newest release plint knows"
        )
        yield Finding(
            f"flags were checked against {release_label(release[0])}, {which}, "
            'because the configuration names none; set megatron = "<release>" in [tool.plint] '
            "to check against yours",
            flagged[0].flag_word.value_span,
            key="release",
        )
