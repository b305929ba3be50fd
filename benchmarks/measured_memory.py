"""plint's memory estimate against what Megatron-LM's functional tests measured.

Megatron-LM's functional tests (``tests/functional_tests/test_cases/<family>/<case>/model_config.yaml``)
hold each test's trainer arguments, and ``golden_values_{dev,lts}_dgx_{a100,h100}.json`` beside them the
per-iteration ``mem-allocated-bytes`` and ``mem-max-allocated-bytes`` (``torch.cuda.memory_stats()``'s
``allocated_bytes.all.current`` and ``.peak``, written by ``training_log`` in
megatron/training/training.py after the optimizer step, never reset, on the one rank that holds the
TensorBoard writer: ``_set_tensorboard_writer`` in megatron/training/global_vars.py gives it to rank
world_size - 1, i.e. the last pipeline stage) and ``iteration-time``. The recipes under
``tests/test_utils/recipes/`` run the training tests on one node of 8 GPUs.

Each case becomes a launch plint reads (``torchrun`` + the entry point + every argument that shapes memory
or time; data paths, logging, checkpointing and the tokenizer files dropped, the tokenizer's real vocabulary
given as --vocab-size so Megatron's padding to --make-vocab-size-divisible-by x tp applies), is estimated
through the library (plint.reading.read.read_path and plint.cost.layout_estimate), and each (case, GPU,
environment) row prints the estimated allocator peak against the measured one, the steady allocation
(weights, gradients, optimizer states) against ``mem-allocated-bytes``, and the iteration time. The
summary gives the error's median and 90th percentile over all rows and per feature group.

A row whose estimate is missing or carries a "not modelled" note is counted as missed, never silently
dropped (a "time not modelled" note, which says the memory is modelled and the step time is not, does not
make a memory row missed; its step time is left out of the time column instead). Nothing of Megatron's files is committed: the manifest (benchmarks/memory/manifest.json) keeps
the facts only (case, commit, GPU, measured bytes, iteration time).

    python benchmarks/measured_memory.py --mirror DIR [--json] [--write-manifest] [--rows]

DIR is an extracted Megatron-LM tree (at least tests/functional_tests/test_cases and
tests/test_utils/recipes), e.g. from ``git --git-dir=SNAPSHOT archive HEAD tests | tar -x -C DIR``.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import signal
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "memory" / "manifest.json"
CASES = Path("tests/functional_tests/test_cases")
# golden-value files kept: the two environments (dev and lts containers) on the two DGX platforms
PLATFORMS = {"dgx_a100": "a100-80gb", "dgx_h100": "h100-sxm"}
ENVIRONMENTS = ("dev", "lts")
ENTRY_POINTS = {
    "gpt": "pretrain_gpt.py",
    "moe": "pretrain_gpt.py",
    "mixtral": "pretrain_gpt.py",
    "bert": "examples/bert/pretrain_bert.py",
    "t5": "examples/t5/pretrain_t5.py",
    "hybrid": "pretrain_hybrid.py",
    "mimo": "examples/mimo/train.py",
    "multimodal-llava": "pretrain_vlm.py",
}

# Arguments that move neither memory nor time (or name files): dropped from the launch.
DROPPED_PREFIXES = (
    "--save",
    "--load",
    "--data-path",
    "--data-cache-path",
    "--dataloader-",
    "--dataset-provider",
    "--vocab-file",
    "--merge-file",
    "--tokenizer-",
    "--tiktoken-",
    "--tensorboard-",
    "--log-",
    "--wandb-",
    "--ckpt-",
    "--dist-ckpt-",
    "--async-",
    "--eval-",
    "--exit-",
    "--timing-",
    "--logging-",
    "--split",
    "--num-workers",
    "--use-checkpoint-",
    "--no-load-",
    "--auto-detect-ckpt-format",
    "--use-persistent-ckpt-worker",
    "--finetune",
    "--no-mmap-bin-files",
    "--mock-data",
    "--output-path",
    "--distributed-timeout-minutes",
    "--no-use-tokenizer-model-from-checkpoint-args",
    "--seed",
    "--init-method-std",
    "--lr",
    "--min-lr",
    "--decoupled-",
    "--adam-",
    "--weight-decay",
    "--clip-grad",
    "--deterministic-mode",
    "--check-weight-hash",
    "--straggler-",
    "--verify-integrity",
    "--test-mode",
    "--rerun-mode",
    "--override-opt_param-scheduler",
    "--no-check-for-nan",
    "--manual-gc",
    "--train-",
    "--skip-train",
    "--save-interval",
    "--exit-interval",
    "--fim-",
    "--per-split-data-args-path",
)
# Arguments of runs that are not one training run of the model the shape flags describe
NOT_TRAINING = (
    "--perform-rl-step",
    "--inference-max-seq-length",
    "--prompts",
    "--prompt-file",
    "--num-tokens-to-generate",
    "--incoming-requests-per-sec",
    "--incoming-requests-per-step",
)


@dataclass
class Row:
    case: str  # family/case
    environment: str  # dev | lts
    platform: str  # dgx_a100 | dgx_h100
    gpu: str  # plint's catalog name
    nodes: int
    gpus_per_node: int
    measured_peak: float  # bytes: the largest mem-max-allocated-bytes logged
    measured_steady: float | None  # bytes: the median mem-allocated-bytes logged
    iteration_time_s: float | None  # median of the logged iteration times
    features: list[str] = field(default_factory=list)
    estimated_peak: float | None = None  # bytes
    estimated_steady: float | None = None
    estimated_stage: str | None = None  # the stage whose figure is compared (the last rank's)
    estimated_step_s: float | None = None
    missed: str | None = None  # why the row has no comparable estimate

    @property
    def peak_error(self) -> float | None:
        return None if self.estimated_peak is None else self.estimated_peak / self.measured_peak - 1

    @property
    def steady_error(self) -> float | None:
        if self.estimated_steady is None or not self.measured_steady:
            return None
        return self.estimated_steady / self.measured_steady - 1


# ---------------------------------------------------------------------------------------------------
# reading the functional tests


def _numbers(metric: dict | None) -> list[float]:
    """A golden-values metric's logged values, the NaNs (not measured at that step) left out."""
    values = (metric or {}).get("values") or {}
    out = []
    for v in values.values():
        try:
            x = float(v)
        except (TypeError, ValueError):
            continue
        if not math.isnan(x):
            out.append(x)
    return out


def measured(golden: dict) -> tuple[float, float | None, float | None] | None:
    """(peak bytes, steady bytes, iteration seconds) from one golden-values file, None without a peak.
    The peak is never reset by the trainer, so its largest logged value is the run's peak."""
    peaks = _numbers(golden.get("mem-max-allocated-bytes"))
    if not peaks:
        return None
    steady = _numbers(golden.get("mem-allocated-bytes"))
    times = _numbers(golden.get("iteration-time"))
    return (
        max(peaks),
        statistics.median(steady) if steady else None,
        statistics.median(times[1:] or times) if times else None,
    )


def recipe_sizes(mirror: Path) -> dict[str, tuple[int, int]]:
    """test case -> (nodes, GPUs per node) from the recipes' products (test cases not named: 1 x 8)."""
    sizes: dict[str, tuple[int, int]] = {}
    for path in sorted((mirror / "tests/test_utils/recipes").glob("*/*.yaml")):
        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError:
            continue
        spec = doc.get("spec") or {}
        nodes, gpus = spec.get("nodes", 1), spec.get("gpus", 8)
        if path.parent.name != "h100":  # the a100 and h100 runs share these; gb200's are other machines
            continue
        for product in doc.get("products") or []:
            for case in product.get("test_case") or []:
                sizes.setdefault(str(case), (int(nodes or 1), int(gpus or 8)))
    return sizes


def model_args(config: dict) -> dict[str, object]:
    return dict(config.get("MODEL_ARGS") or {})


# Vocabulary sizes of the tokenizers the functional tests name (what tokenizer.vocab_size returns before
# Megatron pads it: megatron/core/tokenizers/utils/build_tokenizer.py vocab_size_with_padding)
# --tokenizer-type an entry point sets when the launch does not (parse_and_validate_args(args_defaults=...)):
# examples/bert/pretrain_bert.py main
DEFAULT_TOKENIZERS = {"bert": "BertWordPieceLowerCase"}


def tokenizer_vocab(args: dict[str, object], default_kind: str = "") -> tuple[int | None, str]:
    kind = str(args.get("--tokenizer-type") or default_kind)
    model = str(args.get("--tokenizer-model") or "")
    given = args.get("--vocab-size")
    if kind == "NullTokenizer" and given:
        return int(given), "NullTokenizer: --vocab-size as given (null_tokenizer.py vocab_size)"
    if kind == "TikTokenizer":
        # build_tokenizer passes --vocab-size when given, else TikTokenizer's DEFAULT_TIKTOKEN_MAX_VOCAB = 2**17
        return (int(given) if given else 131072), "TikTokenizer (tiktoken_tokenizer.py DEFAULT_TIKTOKEN_MAX_VOCAB)"
    if kind in ("BertWordPieceCase", "BertWordPieceLowerCase"):
        # bert-base vocabularies (28,996 cased, 30,522 uncased); build_tokenizer adds 100 <extra_id_i> to
        # BertWordPieceCase
        return (28996 + 100 if kind == "BertWordPieceCase" else 30522), f"{kind} vocabulary file"
    if kind == "GPTSentencePieceTokenizer" and "256k" in model:
        return 256000, "Nemotron's 256k SentencePiece model"
    if kind == "Llama2Tokenizer":
        return 32000, "Llama-2's SentencePiece model"
    if kind == "HuggingFaceTokenizer":
        for key, size in (("qwen3", 151936), ("llava-1.5", 32064), ("gpt-oss", 201088)):
            if key in model.lower():
                return (int(given) if given else size), f"the Hugging Face tokenizer {model.rsplit('/', 1)[-1]}"
        return None, f"unknown Hugging Face tokenizer {model}"
    if kind in ("", "GPT2BPETokenizer") and (args.get("--vocab-file") or kind):
        return 50257, "GPT-2 BPE vocabulary file"
    return (int(given), "--vocab-size as given") if given else (None, f"unknown tokenizer {kind or '(none)'}")


def _dropped(option: str) -> bool:
    return option.startswith(DROPPED_PREFIXES)


def launch_text(
    family: str, args: dict[str, object], nodes: int, gpus: int, vocab: int | None, env: dict[str, object] | None = None
) -> str:
    """A torchrun launch of the case: the arguments that shape memory or time, the vocabulary given, after the
    environment variables the case's ENV_VARS set (PyTorch reads CUBLAS_WORKSPACE_CONFIG among them)."""
    exports = [
        f"export {k}={shlex.quote(str(v))}"
        for k, v in (env or {}).items()
        if str(k).isidentifier() and "$" not in str(v)
    ]
    lines: list[str] = []
    for option, value in args.items():
        if _dropped(option) or option == "--vocab-size" or value is False or value is None:
            continue
        if value is True:
            lines.append(option)
            continue
        text = [str(v) for v in (value if isinstance(value, list) else [value])]
        if len(text) == 1 and len(text[0]) > 2 and text[0].startswith("[") and text[0].endswith("]"):
            # a string in brackets is passed as its words (tests/functional_tests/shell_test_utils/_run_training.sh:
            # "value is wrapped in [ ]", the brackets stripped and the value left unquoted)
            text = text[0][1:-1].split()
        if any("$" in t for t in text):
            continue  # a path or a name the CI fills in
        lines.append(shlex.join([option, *text]))
    if vocab is not None:
        lines.append(f"--vocab-size {vocab}")
    entry = ENTRY_POINTS.get(family, "pretrain_gpt.py")
    head = "\n".join(["#!/bin/bash", *exports, f"torchrun --nnodes {nodes} --nproc-per-node {gpus} {entry}"])
    return " \\\n    ".join([head, *lines]) + "\n"


def features(args: dict[str, object]) -> list[str]:
    """The feature groups a case exercises (a row counts in every group it is in)."""

    def on(option: str) -> bool:
        return args.get(option) not in (None, False)

    def size(option: str) -> int:
        try:
            return int(args.get(option) or 1)
        except (TypeError, ValueError):
            return 1

    found = []
    if size("--tensor-model-parallel-size") > 1:
        found.append("tp")
    if size("--pipeline-model-parallel-size") > 1:
        found.append("pp")
    if on("--num-layers-per-virtual-pipeline-stage") or on("--num-virtual-stages-per-pipeline-rank"):
        found.append("vpp")
    if size("--context-parallel-size") > 1:
        found.append("cp")
    if on("--num-experts"):
        found.append("ep/moe")
    if on("--use-distributed-optimizer"):
        found.append("distributed optimizer")
    if on("--recompute-granularity") or on("--recompute-activations"):
        found.append("recompute")
    if on("--fp8-format"):
        found.append("fp8")
    if on("--fp16"):
        found.append("fp16")
    if on("--use-megatron-fsdp") or on("--use-custom-fsdp"):
        found.append("fsdp")
    if args.get("--transformer-impl") == "local" or args.get("--attention-backend") in ("unfused", "local"):
        found.append("unfused attention")
    if on("--multi-latent-attention") or on("--mtp-num-layers"):
        found.append("mla/mtp")
    return found or ["plain"]


def _size(args: dict[str, object], option: str) -> int:
    try:
        return max(1, int(args.get(option) or 1))
    except (TypeError, ValueError):
        return 1


def size_free_memory(args: dict[str, object]) -> bool:
    """Whether a GPU's memory is the same at every node count: nothing sharded over data parallelism (no
    distributed optimizer, no FSDP) and no pipeline, whose micro-batches in flight depend on the count
    (global batch / (micro batch x dp))."""
    sharded = any(
        args.get(o) not in (None, False)
        for o in ("--use-distributed-optimizer", "--use-megatron-fsdp", "--use-custom-fsdp", "--num-experts")
    )
    return not sharded and _size(args, "--pipeline-model-parallel-size") == 1


def smallest_nodes(args: dict[str, object], gpus: int) -> int:
    """Nodes of `gpus` GPUs the smallest launch of the case's model-parallel layout takes."""
    model_parallel = _size(args, "--tensor-model-parallel-size") * _size(args, "--context-parallel-size")
    return max(1, -(-model_parallel // gpus))


def rows_of(mirror: Path) -> list[tuple[Row, str]]:
    """Every (row, launch text) of the training tests with a measured peak."""
    sizes = recipe_sizes(mirror)
    out: list[tuple[Row, str]] = []
    for config_path in sorted((mirror / CASES).glob("*/*/model_config.yaml")):
        folder = config_path.parent
        family, case = folder.parent.name, folder.name
        try:
            config = yaml.safe_load(config_path.read_text()) or {}
        except yaml.YAMLError:
            continue
        args = model_args(config)
        if not args or any(option in args for option in NOT_TRAINING):
            continue
        # release tests ran on several nodes: a release case no recipe names has no known size (their recipes were
        # tests/functional_tests/local_recipes, a submodule of NVIDIA's own, added in Megatron-LM 3230340fcc and
        # removed in c14d9874d2; the release model_config.yaml files name no node count). Where the memory does not
        # depend on the node count, the smallest launch of the layout stands in for it (size_free_memory).
        unknown_size = case not in sizes and "release" in str(config.get("TEST_TYPE", ""))
        nodes, gpus = sizes.get(case, (1, 8))
        if unknown_size and size_free_memory(args):
            nodes, unknown_size = smallest_nodes(args, gpus), False
        vocab, _ = tokenizer_vocab(args, DEFAULT_TOKENIZERS.get(family, ""))
        text = launch_text(family, args, nodes, gpus, vocab, config.get("ENV_VARS") or {})
        for environment in ENVIRONMENTS:
            for platform, gpu in PLATFORMS.items():
                path = folder / f"golden_values_{environment}_{platform}.json"
                try:
                    golden = json.loads(path.read_text()) if path.is_file() else None
                except (json.JSONDecodeError, UnicodeDecodeError):
                    golden = None
                numbers = measured(golden) if isinstance(golden, dict) else None
                if numbers is None:
                    continue
                peak, steady, seconds = numbers
                row = Row(
                    f"{family}/{case}",
                    environment,
                    platform,
                    gpu,
                    nodes,
                    gpus,
                    peak,
                    steady,
                    seconds,
                    features(args),
                    missed="release test: its node count is in no recipe" if unknown_size else None,
                )
                out.append((row, text))
    return out


# ---------------------------------------------------------------------------------------------------
# estimating

GIB = float(1 << 30)


def estimate_row(row: Row, text: str, scratch: Path) -> None:
    """Fill the row's estimate from plint's reading of the launch (or say why there is none)."""
    from plint.cost.layout_estimate import layout_estimate
    from plint.reading.read import read_path

    if row.missed:
        return
    script = scratch / "launch.sh"
    script.write_text(text)
    reading = read_path(script, gpu=row.gpu)
    if not reading.layouts:
        row.missed = "plint read no launch"
        return
    est = layout_estimate(reading.layouts[0])
    if est is None:
        row.missed = (
            "no estimate (" + "; ".join(p.message for p in reading.problems[:2]) + ")"
            if reading.problems
            else "no estimate"
        )
        return
    # a note that only the step time is not modelled leaves the memory estimate whole (issue 24's column)
    unmodelled = [n for n in est.notes if "not modelled" in n and not n.startswith("time not modelled")]
    mem = est.memory_gib
    # the last rank logs: the last stage's figures where stages differ
    figures = (mem.get("stages") or {}).get("last") or mem
    if "allocator_peak" in figures:
        row.estimated_peak = figures["allocator_peak"] * GIB
        row.estimated_steady = figures["allocator_steady"] * GIB
        row.estimated_stage = "last" if "stages" in mem else mem.get("allocator_peak_stage")
    else:  # plint before allocator_peak: its four parts
        row.estimated_peak = sum(mem[k] for k in ("weights", "grads", "optimizer", "activations")) * GIB
        row.estimated_steady = sum(mem[k] for k in ("weights", "grads", "optimizer")) * GIB
    row.estimated_step_s = None if any(n.startswith("time not modelled") for n in est.notes) else est.step_time_s
    if unmodelled:
        row.missed = unmodelled[0]


# ---------------------------------------------------------------------------------------------------
# summarising


def percentile(values: list[float], q: float) -> float:
    """The q-quantile by linear interpolation (statistics.quantiles' 'inclusive' method)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass
class Summary:
    group: str
    rows: int
    covered: int
    median_abs: float | None
    p90_abs: float | None
    median_signed: float | None
    steady_median_abs: float | None
    time_median_abs: float | None  # the step time against iteration-time, for issue 24's use


def summarise(group: str, rows: list[Row]) -> Summary:
    covered = [r for r in rows if r.missed is None and r.peak_error is not None]
    errors = [abs(r.peak_error) for r in covered]
    signed = [r.peak_error for r in covered]
    steady = [abs(r.steady_error) for r in covered if r.steady_error is not None]
    times = [
        abs(r.estimated_step_s / r.iteration_time_s - 1) for r in covered if r.estimated_step_s and r.iteration_time_s
    ]
    return Summary(
        group,
        len(rows),
        len(covered),
        statistics.median(errors) if errors else None,
        percentile(errors, 0.9) if errors else None,
        statistics.median(signed) if signed else None,
        statistics.median(steady) if steady else None,
        statistics.median(times) if times else None,
    )


def groups(rows: list[Row]) -> list[Summary]:
    names = sorted({f for r in rows for f in r.features})
    return [summarise("all", rows)] + [summarise(n, [r for r in rows if n in r.features]) for n in names]


def _pct(x: float | None) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}%"


def print_table(rows: list[Row], show_rows: bool, out=sys.stdout) -> None:
    if show_rows:
        print(
            f"{'case':72} {'env':3} {'gpu':9} {'measured':>9} {'plint':>9} {'error':>7} {'steady':>7} "
            f"{'iter s':>7} {'plint s':>7}  note",
            file=out,
        )
        for r in rows:
            est = f"{r.estimated_peak / GIB:8.2f}G" if r.estimated_peak is not None else "       - "
            print(
                f"{r.case[:72]:72} {r.environment:3} {r.gpu:9} {r.measured_peak / GIB:8.2f}G {est} "
                f"{_pct(r.peak_error):>7} {_pct(r.steady_error):>7} "
                f"{(r.iteration_time_s or float('nan')):7.3f} {(r.estimated_step_s or float('nan')):7.3f}  "
                f"{r.missed or ''}"[:400],
                file=out,
            )
        print(file=out)
    print(
        "| group | rows | covered | peak error, median | p90 | median signed | steady error, median "
        "| step time error, median |",
        file=out,
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|", file=out)
    for s in groups(rows):
        print(
            f"| {s.group} | {s.rows} | {s.covered} | {_pct(s.median_abs)} | {_pct(s.p90_abs)} | "
            f"{_pct(s.median_signed)} | {_pct(s.steady_median_abs)} | {_pct(s.time_median_abs)} |",
            file=out,
        )


def band_table(rows: list[Row]) -> str:
    """plint.cost.error_band's two tables, from these rows (paste them there after a model change)."""
    summaries = [s for s in groups(rows) if s.median_abs is not None]
    medians = ",\n".join(f'    "{s.group}": {s.median_abs:.3f}' for s in summaries)
    counts = ", ".join(f'"{s.group}": {s.covered}' for s in summaries)
    return f"MEASURED_PEAK_ERROR = {{\n{medians},\n}}\nROWS_PER_GROUP = {{{counts}}}"


def manifest(rows: list[Row], commit: str | None) -> dict:
    """The facts kept in the repository: which rows, and what Megatron measured on them."""
    keep = (
        "case",
        "environment",
        "platform",
        "gpu",
        "nodes",
        "gpus_per_node",
        "measured_peak",
        "measured_steady",
        "iteration_time_s",
    )
    return {
        "source": "NVIDIA/Megatron-LM tests/functional_tests/test_cases (golden values)",
        "commit": commit,
        "rows": [{k: asdict(r)[k] for k in keep} for r in rows],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="an extracted Megatron-LM tree")
    parser.add_argument("--commit", help="the Megatron-LM commit the tree is (written to the manifest)")
    parser.add_argument("--rows", action="store_true", help="print every row, not only the summary")
    parser.add_argument("--json", action="store_true", help="rows and summary as JSON")
    parser.add_argument("--write-manifest", action="store_true", help=f"write {MANIFEST.relative_to(HERE.parent)}")
    parser.add_argument("--band-table", action="store_true", help="print plint.cost.error_band's tables")
    parser.add_argument("--case", help="only cases whose name contains this")
    ns = parser.parse_args(argv)
    if not (ns.mirror / CASES).is_dir():
        print(f"{ns.mirror}: no {CASES} (extract Megatron-LM's tests there first)", file=sys.stderr)
        return 2
    pairs = [(r, t) for r, t in rows_of(ns.mirror) if not ns.case or ns.case in r.case]
    with tempfile.TemporaryDirectory() as scratch:
        for row, text in pairs:
            estimate_row(row, text, Path(scratch))
    rows = [r for r, _ in pairs]
    if ns.write_manifest:
        commit = ns.commit or ((ns.mirror / "COMMIT").read_text().strip() if (ns.mirror / "COMMIT").is_file() else None)
        MANIFEST.parent.mkdir(exist_ok=True)
        MANIFEST.write_text(json.dumps(manifest(rows, commit), indent=1) + "\n")
    if ns.band_table:
        print(band_table(rows))
    elif ns.json:
        print(
            json.dumps(
                {
                    "rows": [dict(asdict(r), peak_error=r.peak_error, steady_error=r.steady_error) for r in rows],
                    "groups": [asdict(s) for s in groups(rows)],
                },
                indent=1,
            )
        )
    else:
        print_table(rows, ns.rows)
    return 0


if __name__ == "__main__":
    # a table piped into `head` ends quietly, as a Unix tool does, not with a BrokenPipeError
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
