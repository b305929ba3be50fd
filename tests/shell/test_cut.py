"""`cut -d X -f LIST` in a pipeline plint reads (plint.reading.shell.cut), alone and as llm-jp's Sakura jobs use
it on Slurm's SLURM_TASKS_PER_NODE."""

from __future__ import annotations

import pytest

from plint.checking.check import check_paths
from plint.reading.shell.cut import run_cut
from plint.reading.shell.model import MappedText, Piece, Word
from plint.report.json_report import file_json


def cut(text: str, *args: str) -> str | None:
    out = run_cut([Word.of(a) for a in args], MappedText([Piece(text)]))
    return None if out is None else "".join(p.text or "" for p in out.pieces)


@pytest.mark.parametrize(
    "args, expected",
    [
        (("-d", "(", "-f", "1"), "8\n"),
        (("-d(", "-f1"), "8\n"),
        (("--delimiter=(", "--fields=2"), "x16)\n"),
        (("-d", "x", "-f", "1-"), "8(x16)\n"),
        (("-d", "x", "-f", "2-"), "16)\n"),
        (("-d", "x", "-f", "-1"), "8(\n"),
    ],
)
def test_fields_of_known_text(args, expected):
    assert cut("8(x16)\n", *args) == expected


def test_lines_without_the_delimiter_are_written_whole_unless_only_delimited():
    assert cut("a b\nplain\n", "-d", " ", "-f", "2") == "b\nplain\n"
    assert cut("a b\nplain\n", "-s", "-d", " ", "-f", "2") == "b\n"


@pytest.mark.parametrize("args", [("-c", "1-3"), ("-b", "1"), ("-d", "ab", "-f", "1"), ("-f", "0"), ("-d", "(")])
def test_what_is_not_cut_here(args):
    assert cut("8(x16)\n", *args) is None


def test_a_field_number_past_the_bound_is_left_to_run_time():
    """A 5,000-digit field (past Python's int() limit) or a range of a million fields is not expanded."""
    assert cut("8(x16)\n", "-d", "(", "-f", "9" * 5000) is None
    assert cut("8(x16)\n", "-d", "(", "-f", "1-1000000") is None


def test_unknown_text_is_left_to_run_time():
    unknown = MappedText([Piece(None, reason="$X has no default", name="X")])
    assert run_cut([Word.of("-d"), Word.of("("), Word.of("-f"), Word.of("1")], unknown) is None


def test_gpus_per_node_from_slurm_tasks_per_node(tmp_path):
    """llm-jp/scripts' Sakura jobs: NUM_GPUS_PER_NODE=$(echo $SLURM_TASKS_PER_NODE | cut -d '(' -f 1) with
    --nodes=16 --ntasks-per-node=8, whose SLURM_TASKS_PER_NODE is 8(x16); mpirun -np $((16 * 8))."""
    script = tmp_path / "job.sbatch"
    script.write_text(
        "#!/bin/bash\n#SBATCH --nodes=16\n#SBATCH --ntasks-per-node=8\n"
        "NUM_NODES=$SLURM_JOB_NUM_NODES\n"
        "NUM_GPUS_PER_NODE=$(echo $SLURM_TASKS_PER_NODE | cut -d '(' -f 1)\n"
        "NUM_GPUS=$((${NUM_NODES} * ${NUM_GPUS_PER_NODE}))\n"
        "mpirun -np $NUM_GPUS --npernode $NUM_GPUS_PER_NODE python pretrain_gpt.py --num-layers 2 "
        "--hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
        "--micro-batch-size 1 --global-batch-size 256 --train-iters 10\n"
    )
    (result,) = check_paths([script])
    cluster = file_json(result)["layout"]["cluster"]
    assert (cluster["nnodes"], cluster["gpus_per_node"], cluster["world_size"]) == (16, 8, 128)
