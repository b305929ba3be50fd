"""Fuzz `plint check` (every format) and `plint fix --diff` with mutated fixtures and generated launches.

    python benchmarks/fuzz.py --count 10000 --seed 1          # the full run (docs/safety.md, "Budgets and fuzzing")
    python benchmarks/fuzz.py --count 150 --seed 0            # the slice the test suite runs
    python benchmarks/fuzz.py --replay benchmarks/fuzz-out/case-00042   # one saved reproducer again

Inputs are derived deterministically from the seed: byte, line and token mutations of the files under
fixtures/launches/, splices of two fixtures, inserted shell constructs (`$(`, `${`, heredoc markers,
quotes, huge numbers, deep nesting, self-recursion, doubling assignments), generated launch scripts,
DeepSpeed JSON and hostfiles. Each input is written to a fresh folder and checked in a worker
subprocess (plint imported once) under a memory limit (RLIMIT_AS) and a time limit per plint run (six
per input: five check formats and fix --diff); a worker that overruns them all together is killed and
replaced. An input fails on a traceback (or an exception plint caught and reported as an internal
error), a run over the time limit, output over 1 MB, JSON
that does not parse, SARIF that does not validate against schemas/sarif-schema-2.1.0.json, or a
changed input file (check and fix --diff write nothing). Failing inputs are saved under --out
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
DEFAULT_OUT = ROOT / "benchmarks" / "fuzz-out"
FORMATS = ("text", "json", "sarif", "github", "markdown")
MAX_OUTPUT = 1 << 20  # bytes, per format
MAX_INPUT = 4 << 20  # plint's own file limit
ENTRY_NAMES = ("launch.sh", "job.slurm")

# ---- inputs ---------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    files: dict[str, bytes]
    entry: str  # the file checked, a key of files
    how: str  # the mutations applied, for the report


def load_fixtures() -> list[dict[str, bytes]]:
    """Each fixture folder's launch files (expected.yaml and golden.json are plint's answers, not input)."""
    out = []
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
                 if p.is_file() and p.name not in ("expected.yaml", "golden.json")}
        if any(n in files for n in ENTRY_NAMES):
            out.append(files)
    return out


HUGE = ("99999999999999999999", "50000000", "100000000", "-1", "0", "9223372036854775808", "1e309", "nan",
        "0x7fffffff", "1_000", "2**62", "$((2**62))", "$((1<<63))", "$((1/0))", "$((-9223372036854775807-1))")
SHELL_BITS = ("$(", "${", "$((", "`", "\"", "'", "<<EOF\n", "<<'EOF'\n", "<<-X\n", "EOF\n", "\\\n", "${X:-",
              "${X//a/b}", "${#X}", "${X:0:99999999}", "${!X}", "$@", "\"$@\"", "${A[@]}", "$((X))", ";;", "esac",
              "fi", "done", "then", "do", "{", "}", "(", ")", "&&", "||", "|", ";", "&", "\x00", "\x1b[31m",
              "\xff", "\u202e", "#SBATCH --nodes=", "--num_gpus ", "slots=", "source ", ". ./", "eval ", "bash -c ",
              "export ", "declare -a A=(", "case $X in", "for i in", "while true; do", "if [ -n \"$X\" ]; then")
LAUNCH_FLAGS = ("--nproc_per_node", "--nnodes", "--num_gpus", "--num_nodes", "--tensor-model-parallel-size",
                "--pipeline-model-parallel-size", "--context-parallel-size", "--num-layers", "--hidden-size",
                "--num-attention-heads", "--seq-length", "--max-position-embeddings", "--micro-batch-size",
                "--global-batch-size", "--ffn-hidden-size", "--num-experts", "--expert-model-parallel-size",
                "--deepspeed_config", "--hostfile", "--include", "--exclude", "--bf16", "--fp16",
                "--sequence-parallel", "--use-distributed-optimizer", "--unknown-flag", "--tensor-model-paralel-size",
                "--virtual-pipeline-model-parallel-size", "--num-query-groups", "--recompute-granularity")


def _recursion(rng: random.Random) -> str:
    k = rng.choice((4, 24, 30, 200))
    return rng.choice((
        "X=ab\n" + 'X="$X$X"\n' * k,
        "f() { X=\"$X$X\"; f; }\nX=ab\nf\n",
        "f() { f \"$@\" \"$@\"; }\nf a\n",
        "source \"$0\"\n",
        ". \"${BASH_SOURCE[0]}\"\n",
        "E='eval \"$E\"'\neval \"$E\"\n",
        "A=(a)\n" + "A=(\"${A[@]}\" \"${A[@]}\")\n" * k,
        "X=1\n" + "X=$((X*X+X))\n" * k,
        "cat > gen.sh <<EOF\nsource gen.sh\nEOF\nsource gen.sh\n",
        "while true; do X=\"$X.\"; done\n",
        "for i in $(seq 1 100000000); do X=$i; done\n",
        "H=\"$(printf 'x%.0s' {1..99999999})\"\n",
    ))


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
    return "X=\"" + "$(echo \"" * k + "1" + "\")" * k + "\"\n"


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
            del b[pos:pos + rng.randint(1, 16)]
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
        return rng.choice((1, 0, -1, 10 ** 20, 1.5, "auto", True, None, "x" * rng.choice((1, 100)), [], {}))
    keys = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
            "zero_optimization", "stage", "bf16", "fp16", "enabled", "offload_optimizer", "device",
            "sequence_parallel_size", "optimizer", "type", "params", "lr", "unknown_key", "stage3_prefetch_bucket_size")
    return {rng.choice(keys): gen_json(rng, depth + 1) for _ in range(rng.randint(0, 6))}


def _json_text(rng: random.Random) -> bytes:
    r = rng.random()
    if r < 0.1:
        return rng.choice((b"", b"NaN", b"[1,2]", b"\xef\xbb\xbf{}", b"{" * 100000, b"[" * 100000 + b"]" * 100000,
                           b'{"train_batch_size": 1e999}', b'{"a": 1, "a": 2}'))
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
    launcher = rng.choice(("torchrun", "python -m torch.distributed.run", "deepspeed", "srun python",
                           "deepspeed --hostfile hostfile", "accelerate launch"))
    args = []
    for _ in range(rng.randint(0, 12) if rng.random() < 0.9 else 300):
        flag = rng.choice(LAUNCH_FLAGS)
        if flag == "--unknown-flag":
            flag += str(rng.randrange(10 ** 6))
        args.append(f"{flag} {rng.choice(HUGE + ('1', '2', '8', '$A', '$X', 'ds.json', 'hostfile'))}")
    lines.append(f"{launcher} pretrain_gpt.py " + " ".join(args))
    extra["ds.json"] = _json_text(rng)
    extra["hostfile"] = "\n".join(f"w{i} slots={rng.choice(HUGE + ('8',))}"
                                  for i in range(rng.choice((1, 2, 1000)))).encode()
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
        base[entry] = a[:rng.randint(0, len(a))] + b[rng.randint(0, len(b)):]
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


def cases(seed: int, count: int, start: int = 0):
    fixtures = load_fixtures()
    for i in range(start, count):
        yield make_case(random.Random(f"{seed}:{i}"), i, fixtures)


# ---- the worker: plint in-process, one input at a time ---------------------------------------------


def _sarif_validator():
    import jsonschema

    schema = json.loads((ROOT / "schemas" / "sarif-schema-2.1.0.json").read_text())
    return jsonschema.Draft4Validator(schema)


INTERNAL = ("plint: internal error", "plint could not evaluate the rest of the script")


def _capture(call) -> tuple[str, str | None]:
    """stdout of call() and the traceback it raised, if any (SystemExit is an exit, not a crash); an
    exception plint caught and reported as an internal error (a rule skipped, an evaluator bug turned
    into PL002) counts as a traceback too."""
    out, err = io.StringIO(), io.StringIO()
    tb = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            call()
        except SystemExit:
            pass
        except BaseException:  # noqa: BLE001 - any escape is the finding
            tb = traceback.format_exc()
    if tb is None and ("Traceback (most recent call last)" in err.getvalue() or INTERNAL[0] in err.getvalue()):
        tb = err.getvalue()
    if tb is None and INTERNAL[1] in out.getvalue():
        line = next(x for x in out.getvalue().splitlines() if INTERNAL[1] in x)
        tb = f"swallowed exception: {line.strip()[:2000]}"
    return out.getvalue(), tb


def check_case(case_dir: Path, entry: str, hooks=(), validator=None) -> dict:
    """Run every format and fix --diff on one input; what went wrong, output sizes, and the longest
    of the six runs (each is one `plint` command a user would type)."""
    from plint.cli.check_command import run
    from plint.fixing.fix import run_fix

    path = case_dir / entry
    before = {p: p.read_bytes() for p in case_dir.rglob("*") if p.is_file()}
    problems: list[str] = []
    outputs: dict[str, str] = {}
    sizes: dict[str, int] = {}
    seconds: dict[str, float] = {}
    cwd = os.getcwd()
    os.chdir(case_dir)  # the checked tree is the case folder
    try:
        for fmt in FORMATS + ("fix",):
            start = time.perf_counter()
            if fmt == "fix":
                text, tb = _capture(lambda: run_fix([path], diff=True, isolated=True))
            else:
                text, tb = _capture(lambda: run([path], fmt=fmt, isolated=True))
            seconds[fmt] = time.perf_counter() - start
            outputs[fmt] = text
            if tb:
                problems.append(f"traceback ({fmt if fmt != 'fix' else 'fix --diff'}):\n{tb}")
    finally:
        os.chdir(cwd)
    for fmt, text in outputs.items():
        sizes[fmt] = len(text.encode("utf-8", "surrogateescape"))
        if sizes[fmt] > MAX_OUTPUT:
            problems.append(f"output over 1 MB ({fmt}: {sizes[fmt]} bytes)")
    for fmt in ("json", "sarif"):
        if not outputs.get(fmt):
            continue
        try:
            doc = json.loads(outputs[fmt])
        except ValueError as exc:
            problems.append(f"invalid JSON ({fmt}): {exc}")
            continue
        if fmt == "sarif" and validator is not None:
            errors = [e.message for e in validator.iter_errors(doc)][:3]
            if errors:
                problems.append("invalid SARIF: " + "; ".join(errors))
    after = {p: p.read_bytes() for p in case_dir.rglob("*") if p.is_file()}
    if after != before:
        problems.append("an input file was written or removed: "
                        + ", ".join(sorted(str(p.relative_to(case_dir)) for p in set(before) ^ set(after)
                                           | {p for p in before if after.get(p) != before[p]})))
    for hook in hooks:
        problems.extend(hook(case_dir, path, outputs))
    return {"problems": problems, "seconds": max(seconds.values()), "sizes": sizes,
            "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


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
    loaded = [_load_hook(h) for h in hooks]
    validator = _sarif_validator()
    for line in sys.stdin:
        job = json.loads(line)
        try:
            answer = check_case(Path(job["dir"]), job["entry"], loaded, validator)
        except BaseException:  # noqa: BLE001 - the harness itself failed on this input (MemoryError...)
            answer = {"problems": ["harness error:\n" + traceback.format_exc()], "seconds": 0, "sizes": {},
                      "maxrss_mb": 0}
        sys.__stdout__.write(json.dumps(answer) + "\n")
        sys.__stdout__.flush()


class Worker:
    def __init__(self, memory_mb: int, hooks: list[str]):
        self.args = [sys.executable, str(Path(__file__).resolve()), "--worker", "--memory-mb", str(memory_mb)]
        for h in hooks:
            self.args += ["--hook", h]
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     stderr=subprocess.DEVNULL, cwd=ROOT)

    def run(self, case_dir: Path, entry: str, timeout: float) -> dict | None:
        """The worker's answer, or None on a hang (the worker is then killed)."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"dir": str(case_dir), "entry": entry}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.stop()
            return None if not ready else {"problems": ["worker died (killed by the memory limit?)"],
                                           "seconds": 0, "sizes": {}, "maxrss_mb": 0}
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
        return [f"inputs {self.inputs}", f"tracebacks {self.tracebacks}", f"runs over the time limit {self.hangs}",
                f"invalid JSON {self.invalid_json}", f"invalid SARIF {self.invalid_sarif}",
                f"outputs over 1 MB {self.oversized}", f"other failures {self.other}",
                f"max time {self.max_seconds:.2f} s ({self.slowest})", f"max worker RSS {self.max_rss_mb:.0f} MB",
                f"max output {self.max_output} bytes"]


def _count(summary: Summary, problems: list[str]) -> None:
    for p in problems:
        if p.startswith("traceback") or p.startswith("harness error"):
            summary.tracebacks += 1
        elif p.startswith("hang"):
            summary.hangs += 1
        elif p.startswith("invalid JSON"):
            summary.invalid_json += 1
        elif p.startswith("invalid SARIF"):
            summary.invalid_sarif += 1
        elif p.startswith("output over"):
            summary.oversized += 1
        else:
            summary.other += 1


def save(out: Path, case: Case, problems: list[str]) -> Path:
    folder = out / case.name
    shutil.rmtree(folder, ignore_errors=True)
    for name, data in case.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    (folder / "FAILURE.txt").write_text(f"entry: {case.entry}\nmutations: {case.how}\n\n" + "\n\n".join(problems))
    return folder


def fuzz(seed: int = 0, count: int = 150, start: int = 0, timeout: float = 10.0, memory_mb: int = 1024,
         out: Path | None = DEFAULT_OUT, hooks: tuple[str, ...] = (), progress=None,
         replay: list[Case] | None = None) -> Summary:
    summary = Summary()
    worker = Worker(memory_mb, list(hooks))
    try:
        with tempfile.TemporaryDirectory(prefix="plint-fuzz-") as tmp:
            for case in (replay if replay is not None else cases(seed, count, start)):
                case_dir = Path(tmp) / case.name
                for name, data in case.files.items():
                    (case_dir / name).parent.mkdir(parents=True, exist_ok=True)
                    (case_dir / name).write_bytes(data)
                answer = worker.run(case_dir, case.entry, timeout * (len(FORMATS) + 1))
                if answer is None:
                    answer = {"problems": [f"hang: no answer within {timeout * (len(FORMATS) + 1):g} s"],
                              "seconds": timeout,
                              "sizes": {}, "maxrss_mb": 0}
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
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
             if p.is_file() and p.name != "FAILURE.txt"}
    entry = next(n for n in ENTRY_NAMES if n in files)
    return Case(folder.name, files, entry, "replay")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="inputs are a function of the seed and their index")
    parser.add_argument("--count", type=int, default=150, help="run inputs up to this index, START..COUNT-1 (10000 for the full run)")
    parser.add_argument("--start", type=int, default=0, help="first input index: resume a run, or split one (--start 5000 --count 10000 is its second half)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per plint run before it is a hang")
    parser.add_argument("--memory-mb", type=int, default=1024, help="the worker's address-space limit")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where failing inputs are saved")
    parser.add_argument("--hook", action="append", default=[],
                        help="module:function or file.py:function, an invariant run per input")
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
    summary = fuzz(args.seed, args.count, args.start, args.timeout, args.memory_mb, args.out, tuple(args.hook),
                   progress, replay)
    print("\n".join(summary.lines()))
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
