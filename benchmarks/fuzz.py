"""Fuzz `plint check` (every format) and `plint fix --diff` with mutated fixtures and generated launches.

    python benchmarks/fuzz.py --count 10000 --seed 1          # the full run (docs/safety.md, "Budgets and fuzzing")
    python benchmarks/fuzz.py --count 150 --seed 0            # the slice the test suite runs
    python benchmarks/fuzz.py --replay benchmarks/fuzz-out/case-00042   # one saved reproducer again

Inputs are derived deterministically from the seed: byte, line and token mutations of the files under
fixtures/launches/ and fixtures/rules/, splices of two fixtures, inserted shell constructs (`$(`, `${`,
heredoc markers, quotes, huge numbers, deep nesting, self-recursion, doubling assignments), generated
launch scripts, DeepSpeed JSON and hostfiles; and structure-aware mutations of those real files (issue
30): nesting and long words at up to plint's 4 MiB limit, unbalanced quotes, heredocs, numbers past
Python's 4,300-digit limit, JSON escapes (`\\ud800`), symlinks (dangling, loops, out of the root, named
on the command line too) and file names and text with markup (`@x <img ...> #1`, `::error::`, `##[...]`). Each input is written to a fresh folder and checked in a worker
subprocess (plint imported once) under a memory limit (RLIMIT_AS) and a time limit per plint run (six
per input: five check formats and fix --diff); a worker that overruns them all together is killed and
replaced. An input fails on a traceback (or an exception plint caught and reported as an internal
error), a run over the time limit, output over 1 MB, JSON
that does not parse, SARIF that does not validate against schemas/sarif-schema-2.1.0.json, or a
changed input file (check and fix --diff write nothing); and (issue 30) a run over 2 CPU seconds or
300 MB (the worker's peak, reset per input), exit 2 (the fuzzer calls plint correctly, so a 2 is content's
doing), the canary secret planted outside the checked root in any output, or a workflow command or
markdown markup from file text unescaped in the github or markdown output. Failing inputs are saved under --out
(git-ignored) with what failed. `--hook module:function` (or `file.py:function`) adds an invariant: it is called in the worker
after each input as hook(case_dir, entry, outputs) and returns a list of problems (strings).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "launches"
RULE_FIXTURES = ROOT / "fixtures" / "rules"  # each rule's good/ and bad/ launches
DEFAULT_OUT = ROOT / "benchmarks" / "fuzz-out"
FORMATS = ("text", "json", "sarif", "github", "markdown")
MAX_OUTPUT = 1 << 20  # bytes, per format
MAX_INPUT = 4 << 20  # plint's own file limit
ENTRY_NAMES = ("launch.sh", "job.slurm", "job.sbatch")
MAX_CPU_SECONDS = 2.0  # per plint run (issue 30): CPU time, user + system, so a loaded machine does not count
MAX_RSS_MB = 300  # the worker's peak resident memory over one input, reset before it (/proc/self/clear_refs)
CANARY = "plint-fuzz-canary-5e1f0c"  # the secret planted outside the checked root: no output may hold it
OUTSIDE = "outside"  # the folder beside each case's folder that holds it (`../outside/secret.txt`)
# markup a file's text or name may carry; each must come out inert (issue 30 items 4 and 5)
MENTION, ISSUE_REF, IMAGE = "@plintfuzzer", "#4242", "<img src=x onerror=1>"
WORKFLOW = ("::error::plintfuzz", "##[stop-commands]plintfuzz", "::add-mask::plintfuzz")
MARKUP = (MENTION, ISSUE_REF, IMAGE, *WORKFLOW, f"{MENTION} {IMAGE} {ISSUE_REF}")
MARKUP_NAMES = (
    f"{MENTION} {IMAGE} {ISSUE_REF}.sh",
    "::error::plintfuzz.sh",
    "##[stop-commands]plintfuzz.sh",
    "%0A::error::plintfuzz.sh",
    "x\n::error::plintfuzz.sh",
)

# ---- inputs ---------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    files: dict[str, bytes]
    entry: str  # the file checked, a key of files (or of links)
    how: str  # the mutations applied, for the report
    links: dict[str, str] = field(default_factory=dict)  # symlink -> its target as written
    also: tuple[str, ...] = ()  # more paths named on the command line


def load_fixtures() -> list[dict[str, bytes]]:
    """Each fixture folder's launch files (expected.yaml and golden.json are plint's answers, not input):
    the realistic launches, then each rule's good and bad examples."""
    out = []
    folders = sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    if RULE_FIXTURES.is_dir():
        folders += sorted(p for p in RULE_FIXTURES.glob("*/*") if p.is_dir())
    for folder in folders:
        files = {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in ("expected.yaml", "golden.json")
        }
        if any(n in files for n in ENTRY_NAMES):
            out.append(files)
    return out


HUGE = (
    "99999999999999999999",
    "50000000",
    "100000000",
    "-1",
    "0",
    "9223372036854775808",
    "1e309",
    "nan",
    "0x7fffffff",
    "1_000",
    "2**62",
    "$((2**62))",
    "$((1<<63))",
    "$((1/0))",
    "$((-9223372036854775807-1))",
)
SHELL_BITS = (
    "$(",
    "${",
    "$((",
    "`",
    '"',
    "'",
    "<<EOF\n",
    "<<'EOF'\n",
    "<<-X\n",
    "EOF\n",
    "\\\n",
    "${X:-",
    "${X//a/b}",
    "${#X}",
    "${X:0:99999999}",
    "${!X}",
    "$@",
    '"$@"',
    "${A[@]}",
    "$((X))",
    ";;",
    "esac",
    "fi",
    "done",
    "then",
    "do",
    "{",
    "}",
    "(",
    ")",
    "&&",
    "||",
    "|",
    ";",
    "&",
    "\x00",
    "\x1b[31m",
    "\xff",
    "\u202e",
    "#SBATCH --nodes=",
    "--num_gpus ",
    "slots=",
    "source ",
    ". ./",
    "eval ",
    "bash -c ",
    "ssh h eval ",
    "| cut -d ( -f 1-",
    "#PBS -l select=",
    "$(sort -u $PBS_NODEFILE | uniq | wc -l)",
    "| head -n ",
    "export ",
    "declare -a A=(",
    "case $X in",
    "for i in",
    "while true; do",
    'if [ -n "$X" ]; then',
)
LAUNCH_FLAGS = (
    "--nproc_per_node",
    "--nnodes",
    "--num_gpus",
    "--num_nodes",
    "--tensor-model-parallel-size",
    "--pipeline-model-parallel-size",
    "--context-parallel-size",
    "--num-layers",
    "--hidden-size",
    "--num-attention-heads",
    "--seq-length",
    "--max-position-embeddings",
    "--micro-batch-size",
    "--global-batch-size",
    "--ffn-hidden-size",
    "--num-experts",
    "--expert-model-parallel-size",
    "--deepspeed_config",
    "--hostfile",
    "--include",
    "--exclude",
    "--bf16",
    "--fp16",
    "--sequence-parallel",
    "--use-distributed-optimizer",
    "--unknown-flag",
    "--tensor-model-paralel-size",
    "--virtual-pipeline-model-parallel-size",
    "--num-query-groups",
    "--recompute-granularity",
)


def _recursion(rng: random.Random) -> str:
    k = rng.choice((4, 24, 30, 200))
    return rng.choice(
        (
            "X=ab\n" + 'X="$X$X"\n' * k,
            'f() { X="$X$X"; f; }\nX=ab\nf\n',
            'f() { f "$@" "$@"; }\nf a\n',
            'source "$0"\n',
            '. "${BASH_SOURCE[0]}"\n',
            'E=\'eval "$E"\'\neval "$E"\n',
            "A=(a)\n" + 'A=("${A[@]}" "${A[@]}")\n' * k,
            "X=1\n" + "X=$((X*X+X))\n" * k,
            "cat > gen.sh <<EOF\nsource gen.sh\nEOF\nsource gen.sh\n",
            'while true; do X="$X."; done\n',
            "for i in $(seq 1 100000000); do X=$i; done\n",
            "H=\"$(printf 'x%.0s' {1..99999999})\"\n",
        )
    )


def _nesting(rng: random.Random) -> str:
    k = rng.choice((50, 500, 3000, 10000))
    kind = rng.randrange(6)
    if kind == 0:
        return "X=" + "$(" * k + "echo 1" + ")" * k + "\n"
    if kind == 1:
        return "X=$" + "(" * k + "1" + ")" * k + "\n"
    if kind == 2:
        return "X=" + "${Y:-" * k + "1" + "}" * k + "\n"
    if kind == 3:
        return "if true; then\n" * k + "X=1\n" + "fi\n" * k
    if kind == 4:
        return "(" * k + "echo" + ")" * k + "\n"
    return 'X="' + '$(echo "' * k + "1" + '")' * k + '"\n'


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(3)
        pos = rng.randint(0, len(b))
        if op == 0 and b and pos < len(b):
            b[pos] = rng.randrange(256)
        elif op == 1:
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif b:
            del b[pos : pos + rng.randint(1, 16)]
    return bytes(b)


def _mutate_lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True) or [b""]
    op = rng.randrange(5)
    i = rng.randrange(len(lines))
    if op == 0:
        lines[i:i] = [lines[i]] * rng.choice((2, 10, 1000))
    elif op == 1:
        del lines[i]
    elif op == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:
        lines.insert(i, (_recursion(rng) if rng.random() < 0.5 else _nesting(rng)).encode())
    else:
        lines.insert(i, rng.choice(SHELL_BITS).encode() + b"\n")
    return b"".join(lines)


def _mutate_tokens(rng: random.Random, data: bytes) -> bytes:
    import re

    tokens = re.split(rb"(\s+)", data)
    for _ in range(rng.randint(1, 4)):
        if not tokens:
            break
        i = rng.randrange(len(tokens))
        r = rng.random()
        if r < 0.4 and tokens[i].strip().isdigit():
            tokens[i] = rng.choice(HUGE).encode()
        elif r < 0.6:
            tokens[i] = rng.choice(HUGE).encode()
        elif r < 0.85:
            tokens[i] = tokens[i] + rng.choice(SHELL_BITS).encode()
        else:
            tokens[i] = rng.choice(LAUNCH_FLAGS).encode()
    return b"".join(tokens)


def gen_json(rng: random.Random, depth: int = 0) -> object:
    """A DeepSpeed-like config, sometimes wrong on purpose."""
    if depth > 3 or rng.random() < 0.3:
        return rng.choice((1, 0, -1, 10**20, 1.5, "auto", True, None, "x" * rng.choice((1, 100)), [], {}))
    keys = (
        "train_batch_size",
        "train_micro_batch_size_per_gpu",
        "gradient_accumulation_steps",
        "zero_optimization",
        "stage",
        "bf16",
        "fp16",
        "enabled",
        "offload_optimizer",
        "device",
        "sequence_parallel_size",
        "optimizer",
        "type",
        "params",
        "lr",
        "unknown_key",
        "stage3_prefetch_bucket_size",
    )
    return {rng.choice(keys): gen_json(rng, depth + 1) for _ in range(rng.randint(0, 6))}


def _json_text(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.1:
        return rng.choice(
            (
                b"",
                b"NaN",
                b"[1,2]",
                b"\xef\xbb\xbf{}",
                b"{" * 100000,
                b"[" * 100000 + b"]" * 100000,
                b'{"train_batch_size": 1e999}',
                b'{"a": 1, "a": 2}',
            )
        )
    return json.dumps(gen_json(rng), allow_nan=True).encode()


def gen_script(rng: random.Random) -> tuple[bytes, dict[str, bytes]]:
    """A launch script from parts: assignments, a launcher, flags with odd values, side files."""
    extra: dict[str, bytes] = {}
    lines = ["#!/bin/bash"]
    if rng.random() < 0.3:
        lines.append(f"#SBATCH --nodes={rng.choice(HUGE + ('2', '4'))} --gpus-per-node={rng.choice(('8', '4', '0'))}")
    for _ in range(rng.randint(0, 6)):
        value = rng.choice(HUGE + ("8", "$A", "${B:-2}", "$(nproc)", '"$X $Y"'))
        lines.append(f"{rng.choice('ABXY')}={value}")
    if rng.random() < 0.3:
        lines.append(_recursion(rng) if rng.random() < 0.5 else _nesting(rng))
    launcher = rng.choice(
        (
            "torchrun",
            "python -m torch.distributed.run",
            "deepspeed",
            "srun python",
            "deepspeed --hostfile hostfile",
            "accelerate launch",
        )
    )
    args = []
    for _ in range(rng.randint(0, 12) if rng.random() < 0.9 else 300):
        flag = rng.choice(LAUNCH_FLAGS)
        if flag == "--unknown-flag":
            flag += str(rng.randrange(10**6))
        args.append(f"{flag} {rng.choice(HUGE + ('1', '2', '8', '$A', '$X', 'ds.json', 'hostfile'))}")
    lines.append(f"{launcher} pretrain_gpt.py " + " ".join(args))
    extra["ds.json"] = _json_text(rng)
    extra["hostfile"] = "\n".join(
        f"w{i} slots={rng.choice(HUGE + ('8',))}" for i in range(rng.choice((1, 2, 1000)))
    ).encode()
    return ("\n".join(lines) + "\n").encode(), extra


def make_case(rng: random.Random, index: int, fixtures: list[dict[str, bytes]]) -> Case:
    r = rng.random()
    if r < 0.2 or not fixtures:
        script, extra = gen_script(rng)
        files = {"launch.sh": script, **extra}
        return Case(f"case-{index:05d}", files, "launch.sh", "generated")
    with_json = [f for f in fixtures if any(k.endswith(".json") for k in f)]
    json_turn = index % 10 == 7 and with_json  # every tenth input replaces a fixture's DeepSpeed JSON, whatever
    base = dict(rng.choice(with_json if json_turn else fixtures))  # the fixture set holds
    entry = next(n for n in ENTRY_NAMES if n in base)
    hows = []
    if r < 0.3:  # splice two fixtures
        other = rng.choice(fixtures)
        other_entry = next(n for n in ENTRY_NAMES if n in other)
        a, b = base[entry], other[other_entry]
        base[entry] = a[: rng.randint(0, len(a))] + b[rng.randint(0, len(b)) :]
        for k, v in other.items():
            base.setdefault(k, v)
        hows.append("splice")
    target = entry
    side = [k for k in base if k != entry]
    if json_turn:
        target = rng.choice([k for k in side if k.endswith(".json")])
        base[target] = _json_text(rng)
        hows.append(f"json:{target}")
    elif side and rng.random() < 0.3:
        target = rng.choice(side)
        if target.endswith(".json") and rng.random() < 0.4:
            base[target] = _json_text(rng)
            hows.append(f"json:{target}")
    for _ in range(rng.randint(1, 3)):
        op = rng.choice((_mutate_bytes, _mutate_lines, _mutate_tokens))
        base[target] = op(rng, base[target])[:MAX_INPUT]
        hows.append(f"{op.__name__[8:]}:{target}")
    return Case(f"case-{index:05d}", base, entry, "+".join(hows))


# ---- structure-aware mutations of real files (issue 30) -------------------------------------------
# each takes the case and a random source, changes the case, and returns what it did

NESTS = (
    ("${a[", "1", "]}"),
    ("$(", "echo 1", ")"),
    ('"$(', "echo 1", ')"'),
    ("${Y:-", "1", "}"),
    ("$((", "1", "))"),
    ("{ ", "true;", " }"),
    ("${", "", ""),
    ("{", "", ""),
    ("(", "echo", ")"),
    ("if true; then\n", "X=1\n", "fi\n"),
    ("f() { ", "", ""),
    ("[[ ", "", ""),
)
LONG_UNITS = ("'a'", "$x", '"x"', "a", "$x ", "\\ ", "${x}", "$(echo 1)", "x=1 ")
ESCAPES = ("\\ud800", "\\udfff", "\\ud800\\u0041", "\\u0000", "\\x41", "\\uZZZZ", "\\")


def _lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def _insert_line(rng: random.Random, data: bytes, line: bytes) -> bytes:
    lines = _lines_of(data)
    lines.insert(rng.randint(0, len(lines)), line if line.endswith(b"\n") else line + b"\n")
    return b"".join(lines)


def _sized(rng: random.Random, unit: int) -> int:
    """A repeat count: mostly small, sometimes the issue's sizes or up to plint's 4 MiB limit (each of those
    costs the six runs seconds of parsing)."""
    count = rng.choices((10, 100, 1000, 20_000, 50_000, 100_000, 500_000, MAX_INPUT), (30, 30, 20, 8, 4, 4, 2, 2))[0]
    return min(count, (MAX_INPUT - 4096) // unit)


def _nest(rng: random.Random, case: Case) -> str:
    opener, inner, closer = rng.choice(NESTS)
    n = _sized(rng, len(opener) + len(closer) + 1)
    unbalanced = rng.random() < 0.2
    text = "X=" + opener * n + inner + ("" if unbalanced else closer * n)
    case.files[case.entry] = _insert_line(rng, case.files[case.entry], text.encode())[:MAX_INPUT]
    return f"nest({opener.strip()!r}x{n}{',open' if unbalanced else ''})"


def _long_word(rng: random.Random, case: Case) -> str:
    unit = rng.choice(LONG_UNITS)
    n = _sized(rng, len(unit))
    head = rng.choice(("X=", "echo ", "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers "))
    case.files[case.entry] = _insert_line(rng, case.files[case.entry], (head + unit * n).encode())[:MAX_INPUT]
    return f"long({unit!r}x{n})"


def _quotes(rng: random.Random, case: Case) -> str:
    data = bytearray(case.files[case.entry])
    mark = rng.choice((b'"', b"'", b"`", b"$'", b'$"', b"\\", b"$'\\ud800'", b"$'\\x00'"))
    for _ in range(rng.randint(1, 3)):
        data[rng.randint(0, len(data)) : 0] = mark
    case.files[case.entry] = bytes(data)
    return f"quotes({mark.decode()!r})"


def _heredoc(rng: random.Random, case: Case) -> str:
    lines = _lines_of(case.files[case.entry])
    i = rng.randrange(len(lines))
    j = rng.randint(i, len(lines))
    marker = rng.choice(("EOF", "'EOF'", "-EOF", '"X"'))
    end = marker.strip("'\"-")
    kind = rng.randrange(3)
    if kind == 0:  # some lines become a file the script writes
        lines[i:j] = [f"cat > gen.json <<{marker}\n".encode(), *lines[i:j], f"{end}\n".encode()]
    elif kind == 1:  # never closed: the rest of the file is its body
        lines.insert(i, f"cat <<{marker}\n".encode())
    else:  # a body of many expansions
        body = b'{"train_batch_size": $GBS, "x": "$X"}\n' * _sized(rng, 40)
        lines.insert(i, f"cat > ds.json <<{marker}\n".encode() + body + f"{end}\n".encode())
    case.files[case.entry] = b"".join(lines)[:MAX_INPUT]
    return f"heredoc({kind},{marker})"


def _number(rng: random.Random, case: Case) -> str:
    import re

    digits = "9" * rng.choice((4301, 5000, 100_000))
    target = rng.choice(sorted(case.files))
    data, count = re.subn(rb"\b[0-9]+\b", digits.encode(), case.files[target], count=rng.randint(1, 3))
    if not count or rng.random() < 0.3:  # where Python's int() refuses: Slurm, hostfile and launcher counts
        target = rng.choice(("sbatch", "hostfile", "launcher"))
        if target == "sbatch":
            data = b"#!/bin/bash\n#SBATCH --nodes=" + digits.encode() + b"\n" + case.files[case.entry]
            target = case.entry
        elif target == "hostfile":
            case.files["hostfile"] = f"w1 slots={digits}\n".encode()
            data = _insert_line(rng, case.files[case.entry], b"deepspeed --hostfile hostfile pretrain_gpt.py")
            target = case.entry
        else:
            data = _insert_line(
                rng, case.files[case.entry], f"torchrun --nproc_per_node {digits} pretrain_gpt.py".encode()
            )
            target = case.entry
    case.files[target] = data[:MAX_INPUT]
    return f"number({len(digits)} digits in {target})"


def _escape(rng: random.Random, case: Case) -> str:
    esc = rng.choice(ESCAPES)
    configs = [k for k in case.files if k.endswith(".json")]
    if not configs:
        case.files["ds.json"] = b'{"train_batch_size": 8}'
        case.files[case.entry] = _insert_line(
            rng, case.files[case.entry], b"deepspeed --num_gpus 8 train.py --deepspeed --deepspeed_config ds.json"
        )
        configs = ["ds.json"]
    target = rng.choice(configs)
    where = rng.choice(("key", "value"))
    member = f'"tr{esc}ain_batch_size": 1, ' if where == "key" else f'"optimizer": {{"type": "{esc}"}}, '
    data = case.files[target]
    brace = data.find(b"{")
    case.files[target] = data[: brace + 1] + member.encode() + data[brace + 1 :] if brace >= 0 else member.encode()
    if rng.random() < 0.5:
        case.also += (target,)
    return f"escape({esc} in a {where} of {target})"


def _symlink(rng: random.Random, case: Case) -> str:
    kind = rng.choice(("dangling", "loop", "outside-file", "outside-json", "outside-folder", "outside-entry"))
    if kind == "dangling":
        case.links["gone.sh"] = "does-not-exist.sh"
        named = "gone.sh"
    elif kind == "loop":
        case.links.update({"loop.sh": "loop2.sh", "loop2.sh": "loop.sh"})
        named = "loop.sh"
    elif kind == "outside-file":
        case.links["env.sh"] = f"../{OUTSIDE}/secret.sh"
        case.files[case.entry] = b"source ./env.sh\n" + case.files[case.entry]
        named = "env.sh"
    elif kind == "outside-json":
        case.links["ds.json"] = f"../{OUTSIDE}/secret.json"
        case.files.pop("ds.json", None)
        case.files[case.entry] = _insert_line(
            rng, case.files[case.entry], b"deepspeed --num_gpus 8 train.py --deepspeed --deepspeed_config ds.json"
        )
        named = "ds.json"
    elif kind == "outside-folder":
        case.links["sub"] = f"../{OUTSIDE}"
        case.files[case.entry] = b"source sub/secret.sh\n" + case.files[case.entry]
        named = "sub/secret.sh"
    else:
        case.links["linked.sh"] = f"../{OUTSIDE}/secret.sh"
        named = "linked.sh"
    if rng.random() < 0.7:
        case.also += (named,)
    return f"symlink({kind})"


def _markup(rng: random.Random, case: Case) -> str:
    text = rng.choice(MARKUP)
    kind = rng.randrange(5)
    if kind == 0:  # the checked file's own name
        name = rng.choice(MARKUP_NAMES)
        case.files[name] = case.files.pop(case.entry)
        case.entry = name
        return f"markup(name {name!r})"
    if kind == 1:  # a second file, named on the command line
        name = rng.choice(MARKUP_NAMES)
        case.files[name] = b"torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-paralel-size 2\n"
        case.also += (name,)
        return f"markup(second file {name!r})"
    line = (
        f"# {text}",
        f"X='{text}'",
        f"torchrun --nproc_per_node 8 pretrain_gpt.py --{text} 1 --num-layers '{text}'",
        f"source './{text}.sh'",
        f"deepspeed --deepspeed_config '{text}.json' train.py",
    )[kind]
    case.files[case.entry] = _insert_line(rng, case.files[case.entry], line.encode())
    configs = [k for k in case.files if k.endswith(".json")]
    if configs and rng.random() < 0.5:  # and a DeepSpeed key of its config
        target = rng.choice(configs)
        data = case.files[target]
        brace = data.find(b"{")
        if brace >= 0:
            case.files[target] = data[: brace + 1] + json.dumps(text).encode() + b": 1, " + data[brace + 1 :]
    return f"markup({text!r} as {('', '', 'a flag', 'a sourced file', 'a config')[kind] or 'text'})"


STRUCTURED = (_nest, _long_word, _quotes, _heredoc, _number, _escape, _symlink, _markup)


def make_structured_case(rng: random.Random, index: int, fixtures: list[dict[str, bytes]]) -> Case:
    """A real launch (the fixtures) with one to three structure-aware mutations."""
    files = dict(rng.choice(fixtures))
    case = Case(f"case-{index:05d}", files, next(n for n in ENTRY_NAMES if n in files), "")
    case.how = "structure:" + "+".join(rng.choice(STRUCTURED)(rng, case) for _ in range(rng.randint(1, 3)))
    return case


STRUCTURED_SHARE = 0.4  # of all inputs; the others are made the older ways (an input's own random stream)


def cases(seed: int, count: int, start: int = 0, structured: float = STRUCTURED_SHARE):
    """Inputs start..count-1 of a seed; `structured` is the share of structure-aware mutations (0: the
    fuzzer's inputs before issue 30, 1: only those)."""
    fixtures = load_fixtures()
    for i in range(start, count):
        rng = random.Random(f"{seed}:{i}:structure")
        if rng.random() < structured:
            yield make_structured_case(rng, i, fixtures)
        else:
            yield make_case(random.Random(f"{seed}:{i}"), i, fixtures)


# ---- the worker: plint in-process, one input at a time ---------------------------------------------


def _sarif_validator():
    import jsonschema

    schema = json.loads((ROOT / "schemas" / "sarif-schema-2.1.0.json").read_text())
    return jsonschema.Draft4Validator(schema)


INTERNAL = ("plint: internal error", "plint could not evaluate the rest of the script")


def _capture(call) -> tuple[str, str, str | None, int | None]:
    """stdout, stderr, the traceback and the exit status of call(): its return value, a SystemExit's code,
    or 2 for the usage error plint raises (exit 2 is for how plint is called; the fuzzer always calls it
    right, so a 2 is the content's doing). An exception plint caught and reported as an internal error (a
    rule skipped, an evaluator bug turned into PL002) counts as a traceback too."""
    out, err = io.StringIO(), io.StringIO()
    tb, code = None, None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = call()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except ValueError as exc:  # UsageError, or any ValueError: the console entry makes both a usage error
            code = 2
            err.write(f"plint: usage error ({type(exc).__name__}): {exc}\n")
        except BaseException:  # noqa: BLE001 - any escape is the finding
            tb = traceback.format_exc()
    if tb is None and ("Traceback (most recent call last)" in err.getvalue() or INTERNAL[0] in err.getvalue()):
        tb = err.getvalue()
    if tb is None and INTERNAL[1] in out.getvalue():
        line = next(x for x in out.getvalue().splitlines() if INTERNAL[1] in x)
        tb = f"swallowed exception: {line.strip()[:2000]}"
    return out.getvalue(), err.getvalue(), tb, code


def _cpu_seconds() -> float:
    """CPU time of this process and the children it waited for (bash -n), user + system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _reset_peak_rss() -> bool:
    """Start a new high-water mark of resident memory (Linux: 5 > /proc/self/clear_refs); False where not."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_mb(reset: bool) -> float:
    if reset:
        with open("/proc/self/status") as f:
            kb = next((line.split()[1] for line in f if line.startswith("VmHWM:")), None)
        if kb is not None:
            return int(kb) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# the workflow commands plint's reports write: an annotation with its properties (`file=...,line=3`), each
# value escaped (`:` and `,` as %3A and %2C), so no text of a file can end the properties early
_COMMAND = re.compile(r"::(error|warning|notice) [A-Za-z]+=[^:,]+(?:,[A-Za-z]+=[^:,]+)*::")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)  # markdown code: GitHub links and mentions nothing in it
_MARKUP_CHECKS = (
    (re.compile(r"<img", re.I), "a raw <img"),
    (re.compile(r"(?<![\w\\/`])" + re.escape(MENTION)), f"a raw {MENTION} (a mention)"),
    (re.compile(r"(?<![\w\\/&`])" + re.escape(ISSUE_REF) + r"(?!\d)"), f"a raw {ISSUE_REF} (a link)"),
)


def workflow_problems(text: str) -> list[str]:
    """Workflow commands plint did not write: the runner reads `::cmd::` at a line's start (after blanks)
    and `##[cmd]` anywhere in a line, splitting lines at \\r and \\n."""
    found = []
    for line in re.split(r"\r\n|\r|\n", text):
        if "##[" in line:
            found.append(f"`##[` in {line[:300]!r}")
        head = line.lstrip()
        if head.startswith("::"):
            if _COMMAND.match(head) is None:
                found.append(f"a workflow command plint did not write: {line[:300]!r}")
    return found


def markup_problems(text: str) -> list[str]:
    """Markdown that links, mentions or embeds what a file's text or name wrote (outside code spans)."""
    bare = _CODE.sub("", text)
    found = []
    for pattern, what in _MARKUP_CHECKS:
        m = pattern.search(bare)
        if m is not None:
            found.append(f"{what}: {bare[max(0, m.start() - 120) : m.end() + 120]!r}")
    return found


def check_case(case_dir: Path, entry: str, hooks=(), validator=None, also: tuple[str, ...] = ()) -> dict:
    """Run every format and fix --diff on one input, the case folder as the checked root; what went wrong,
    output sizes, the most CPU time one of the six runs took (each is one `plint` command a user would
    type) and the peak memory over them."""
    from plint.cli.check_command import run
    from plint.cli.fix_command import run_fix

    paths = [case_dir / entry, *(case_dir / a for a in also)]
    before = _snapshot(case_dir)
    problems: list[str] = []
    outputs: dict[str, str] = {}
    errors: dict[str, str] = {}
    sizes: dict[str, int] = {}
    seconds: dict[str, float] = {}
    reset = _reset_peak_rss()
    cwd = os.getcwd()
    os.chdir(case_dir)  # the checked tree is the case folder
    try:
        for fmt in FORMATS + ("fix",):
            start = _cpu_seconds()
            if fmt == "fix":
                text, err, tb, code = _capture(lambda: run_fix(paths, diff=True, isolated=True, root=str(case_dir)))
            else:
                text, err, tb, code = _capture(lambda: run(paths, fmt=fmt, isolated=True, root=str(case_dir)))
            seconds[fmt] = _cpu_seconds() - start
            outputs[fmt], errors[fmt] = text, err
            name = fmt if fmt != "fix" else "fix --diff"
            if tb:
                problems.append(f"traceback ({name}):\n{tb}")
            elif code == 2:
                problems.append(f"exit 2 from content ({name}): {err.strip()[-1000:]}")
            if seconds[fmt] > MAX_CPU_SECONDS:
                problems.append(f"slow: {name} took {seconds[fmt]:.2f} CPU s (the bound is {MAX_CPU_SECONDS:g})")
    finally:
        os.chdir(cwd)
    rss = _peak_rss_mb(reset)
    if rss > MAX_RSS_MB:
        problems.append(f"memory: the six runs peaked at {rss:.0f} MB (the bound is {MAX_RSS_MB})")
    for fmt, text in outputs.items():
        sizes[fmt] = len(text.encode("utf-8", "backslashreplace"))  # as plint's console entry writes it
        if sizes[fmt] > MAX_OUTPUT:
            problems.append(f"output over 1 MB ({fmt}: {sizes[fmt]} bytes)")
        if CANARY in text or CANARY in errors[fmt]:
            problems.append(f"outside read ({fmt}): the secret planted outside the root is in the output")
    for fmt in ("github", "markdown"):
        problems.extend(f"unescaped ({fmt}): {p}" for p in workflow_problems(outputs[fmt] + "\n" + errors[fmt]))
    problems.extend(f"unescaped (markdown): {p}" for p in markup_problems(outputs["markdown"]))
    for fmt in ("json", "sarif"):
        if not outputs.get(fmt):
            continue
        try:
            doc = json.loads(outputs[fmt])
        except ValueError as exc:
            problems.append(f"invalid JSON ({fmt}): {exc}")
            continue
        if fmt == "sarif" and validator is not None:
            errors_found = [e.message for e in validator.iter_errors(doc)][:3]
            if errors_found:
                problems.append("invalid SARIF: " + "; ".join(errors_found))
    after = _snapshot(case_dir)
    if after != before:
        problems.append(
            "an input file was written or removed: "
            + ", ".join(
                sorted(
                    str(p.relative_to(case_dir))
                    for p in set(before) ^ set(after) | {p for p in before if after.get(p) != before[p]}
                )
            )
        )
    for hook in hooks:
        problems.extend(hook(case_dir, paths[0], outputs))
    return {"problems": problems, "seconds": max(seconds.values()), "sizes": sizes, "maxrss_mb": rss}


def _snapshot(folder: Path) -> dict[Path, bytes]:
    """The case's own files (symlinks are the case's too, but what they point at is not)."""
    return {p: p.read_bytes() for p in folder.rglob("*") if not p.is_symlink() and p.is_file()}


def _load_hook(spec: str):
    """`module:function`, or `path/to/file.py:function`."""
    import importlib.util
    from importlib import import_module

    module, _, name = spec.rpartition(":")
    if module.endswith(".py"):
        loader_spec = importlib.util.spec_from_file_location(Path(module).stem, module)
        loaded = importlib.util.module_from_spec(loader_spec)
        loader_spec.loader.exec_module(loaded)
        return getattr(loaded, name)
    return getattr(import_module(module), name)


def worker_main(memory_mb: int, hooks: list[str]) -> None:
    """Read case folders (JSON lines) on stdin, answer one JSON line each."""
    if memory_mb:
        limit = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.path.insert(0, str(ROOT))
    from plint.entry import tune_collector

    tune_collector()  # the collector as the `plint` console entry sets it: each run is a command a user types
    loaded = [_load_hook(h) for h in hooks]
    validator = _sarif_validator()
    for line in sys.stdin:
        job = json.loads(line)
        try:
            answer = check_case(Path(job["dir"]), job["entry"], loaded, validator, tuple(job.get("also", ())))
        except BaseException:  # noqa: BLE001 - the harness itself failed on this input (MemoryError...)
            answer = {
                "problems": ["harness error:\n" + traceback.format_exc()],
                "seconds": 0,
                "sizes": {},
                "maxrss_mb": 0,
            }
        sys.__stdout__.write(json.dumps(answer) + "\n")
        sys.__stdout__.flush()


class Worker:
    def __init__(self, memory_mb: int, hooks: list[str]):
        self.args = [sys.executable, str(Path(__file__).resolve()), "--worker", "--memory-mb", str(memory_mb)]
        for h in hooks:
            self.args += ["--hook", h]
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        # plint's own time and memory: fix's dry run without megatron-core's torch start-up (plint.fixing.fix)
        env = {**os.environ, "PLINT_DRY_RUN_BACKEND": "analytic"}
        self.proc = subprocess.Popen(
            self.args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )

    def run(self, case_dir: Path, entry: str, timeout: float, also: tuple[str, ...] = ()) -> dict | None:
        """The worker's answer, or None on a hang (the worker is then killed)."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"dir": str(case_dir), "entry": entry, "also": list(also)}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.stop()
            return (
                None
                if not ready
                else {
                    "problems": ["worker died (killed by the memory limit?)"],
                    "seconds": 0,
                    "sizes": {},
                    "maxrss_mb": 0,
                }
            )
        return json.loads(line)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


# ---- the driver -----------------------------------------------------------------------------------


@dataclass
class Summary:
    inputs: int = 0
    tracebacks: int = 0
    hangs: int = 0
    slow: int = 0  # runs over MAX_CPU_SECONDS
    memory: int = 0  # inputs over MAX_RSS_MB
    exit2: int = 0  # exit 2 from content
    outside: int = 0  # the canary from outside the root in an output
    unescaped: int = 0  # workflow commands or markdown markup from file text
    invalid_json: int = 0
    invalid_sarif: int = 0
    oversized: int = 0
    other: int = 0
    max_seconds: float = 0.0
    slowest: str = ""
    max_rss_mb: float = 0.0
    max_output: int = 0
    failures: list[tuple[str, list[str]]] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"inputs {self.inputs}",
            f"tracebacks {self.tracebacks}",
            f"runs over {MAX_CPU_SECONDS:g} CPU s {self.slow}",
            f"inputs over {MAX_RSS_MB} MB {self.memory}",
            f"exit 2 from content {self.exit2}",
            f"outside reads {self.outside}",
            f"unescaped outputs {self.unescaped}",
            f"hangs {self.hangs}",
            f"invalid JSON {self.invalid_json}",
            f"invalid SARIF {self.invalid_sarif}",
            f"outputs over 1 MB {self.oversized}",
            f"other failures {self.other}",
            f"max CPU time of one run {self.max_seconds:.2f} s ({self.slowest})",
            f"max RSS {self.max_rss_mb:.0f} MB",
            f"max output {self.max_output} bytes",
        ]


_KINDS = (
    ("traceback", "tracebacks"),
    ("harness error", "tracebacks"),
    ("hang", "hangs"),
    ("slow", "slow"),
    ("memory", "memory"),
    ("exit 2", "exit2"),
    ("outside read", "outside"),
    ("unescaped", "unescaped"),
    ("invalid JSON", "invalid_json"),
    ("invalid SARIF", "invalid_sarif"),
    ("output over", "oversized"),
)


def _count(summary: Summary, problems: list[str]) -> None:
    for p in problems:
        kind = next((name for prefix, name in _KINDS if p.startswith(prefix)), "other")
        setattr(summary, kind, getattr(summary, kind) + 1)


def plant_outside(tmp: Path) -> None:
    """The secret beside the case folders, outside each checked root: a script, a DeepSpeed config and a
    folder a symlink may reach; its canary must never show in an output."""
    outside = tmp / OUTSIDE
    outside.mkdir(exist_ok=True)
    (outside / "secret.sh").write_text(
        f"# {CANARY}\nexport SECRET={CANARY}\ntorchrun --nproc_per_node 8 pretrain_gpt.py --{CANARY} 1\n"
    )
    (outside / "secret.json").write_text(json.dumps({"train_batch_size": 8, CANARY: CANARY}))
    (outside / "secret.txt").write_text(CANARY + "\n")


def write_case(case: Case, folder: Path) -> None:
    """The case's files and symlinks (a symlink wins over a file of its name a later mutation added)."""
    for name, data in case.files.items():
        if name in case.links:
            continue
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    for name, target in case.links.items():
        folder.mkdir(parents=True, exist_ok=True)
        os.symlink(target, folder / name)


def save(out: Path, case: Case, problems: list[str]) -> Path:
    folder = out / case.name
    shutil.rmtree(folder, ignore_errors=True)
    write_case(case, folder)
    (folder / "FAILURE.txt").write_text(
        f"entry: {case.entry!r}\nalso: {list(case.also)!r}\nmutations: {case.how}\n\n" + "\n\n".join(problems)
    )
    return folder


def fuzz(
    seed: int = 0,
    count: int = 150,
    start: int = 0,
    timeout: float = 10.0,
    memory_mb: int = 1024,
    out: Path | None = DEFAULT_OUT,
    hooks: tuple[str, ...] = (),
    progress=None,
    replay: list[Case] | None = None,
    structured: float = STRUCTURED_SHARE,
) -> Summary:
    summary = Summary()
    worker = Worker(memory_mb, list(hooks))
    try:
        with tempfile.TemporaryDirectory(prefix="plint-fuzz-") as tmp:
            plant_outside(Path(tmp))
            for case in replay if replay is not None else cases(seed, count, start, structured):
                case_dir = Path(tmp) / case.name
                write_case(case, case_dir)
                answer = worker.run(case_dir, case.entry, timeout * (len(FORMATS) + 1), case.also)
                if answer is None:
                    answer = {
                        "problems": [f"hang: no answer within {timeout * (len(FORMATS) + 1):g} s"],
                        "seconds": timeout,
                        "sizes": {},
                        "maxrss_mb": 0,
                    }
                elif answer["seconds"] > timeout:
                    answer["problems"].append(f"hang: one run took {answer['seconds']:.1f} s")
                shutil.rmtree(case_dir, ignore_errors=True)
                summary.inputs += 1
                if answer["seconds"] > summary.max_seconds:
                    summary.max_seconds, summary.slowest = answer["seconds"], case.name
                summary.max_rss_mb = max(summary.max_rss_mb, answer["maxrss_mb"])
                summary.max_output = max([summary.max_output, *answer["sizes"].values()])
                if answer["problems"]:
                    _count(summary, answer["problems"])
                    summary.failures.append((case.name, answer["problems"]))
                    if out is not None:
                        save(out, case, answer["problems"])
                if progress is not None:
                    progress(case, answer, summary)
    finally:
        worker.stop()
    return summary


def load_saved(folder: Path) -> Case:
    import ast

    kept = [p for p in sorted(folder.rglob("*")) if p.name != "FAILURE.txt"]
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in kept if not p.is_symlink() and p.is_file()}
    links = {p.relative_to(folder).as_posix(): os.readlink(p) for p in kept if p.is_symlink()}
    head = (
        dict(
            line.split(": ", 1)
            for line in (folder / "FAILURE.txt").read_text().split("\n\n")[0].splitlines()
            if ": " in line
        )
        if (folder / "FAILURE.txt").exists()
        else {}
    )
    entry = (
        ast.literal_eval(head["entry"])
        if head.get("entry", "").startswith(("'", '"'))
        else next(n for n in ENTRY_NAMES if n in files)
    )
    also = tuple(ast.literal_eval(head["also"])) if "also" in head else ()
    return Case(folder.name, files, entry, "replay", links, also)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="inputs are a function of the seed and their index")
    parser.add_argument(
        "--count", type=int, default=150, help="run inputs up to this index, START..COUNT-1 (10000 for the full run)"
    )
    parser.add_argument(
        "--start",
        type=int,
        default=0,
        help="first input index: resume a run, or split one (--start 5000 --count 10000 is its second half)",
    )
    parser.add_argument(
        "--structured",
        type=float,
        default=STRUCTURED_SHARE,
        help="share of structure-aware mutations of real files (0 to 1)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per plint run before it is a hang")
    parser.add_argument("--memory-mb", type=int, default=1024, help="the worker's address-space limit")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where failing inputs are saved")
    parser.add_argument(
        "--hook", action="append", default=[], help="module:function or file.py:function, an invariant run per input"
    )
    parser.add_argument("--replay", type=Path, nargs="*", help="saved case folders to run again")
    parser.add_argument("--progress", type=int, default=0, help="print a summary line every N inputs")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_main(args.memory_mb, args.hook)
        return 0

    def progress(case: Case, answer: dict, summary: Summary) -> None:
        if answer["problems"]:
            print(f"FAIL {case.name} ({case.how}): {answer['problems'][0].splitlines()[0]}", flush=True)
        if args.progress and summary.inputs % args.progress == 0:
            print(f"[{time.strftime('%H:%M:%S')}] " + ", ".join(summary.lines()), flush=True)

    replay = [load_saved(p) for p in args.replay] if args.replay else None
    summary = fuzz(
        args.seed,
        args.count,
        args.start,
        args.timeout,
        args.memory_mb,
        args.out,
        tuple(args.hook),
        progress,
        replay,
        args.structured,
    )
    print("\n".join(summary.lines()))
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
