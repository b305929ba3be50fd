"""Hostfiles and resource selection as DeepSpeed's runner does them (deepspeed/launcher/runner.py, 0.19.8),
with its own error messages; where DeepSpeed is installed the results are compared with its functions."""

import pytest

from plint.source import SourceFile
from plint.reading.sources.hostfile import read_hostfile, resolve_resources

TAIL = ", unable to proceed with launching"


def hf(text):
    return read_hostfile(SourceFile("hostfile", text))


def hosts(text):
    return [(n, s) for n, s, _ in hf(text).hosts]


def test_lines_comments_indentation_and_trailing_text():
    text = "# cluster\n\nw0 slots=8\n  w1 slots=4 max_slots=8\n\tw2 slots=0 # spare\n"
    assert hosts(text) == [("w0", 8), ("w1", 4), ("w2", 0)]
    assert not hf(text).problems


def test_spans_point_at_the_host_line():
    ((_, _, span),) = hf("# c\n  w0 slots=8\n").hosts
    assert (span.line, span.col, span.end_col) == (2, 3, 13)


@pytest.mark.parametrize(
    "text, message",
    [
        ("w0 slots = 8\n", "Hostfile contains a bad entry: w0 slots = 8" + TAIL),
        ("w0:8\n", "Hostfile contains a bad entry: w0:8" + TAIL),
        ("w0 gpus=8\n", "Hostfile contains a bad entry: w0 gpus=8" + TAIL),
        ("w0 slots=8\nw0 slots=4\n", "Hostfile contains multiple entries for w0" + TAIL),
        ("\n# nothing\n", "Hostfile is empty or not formatted correctly" + TAIL + "."),
    ],
)
def test_deepspeed_error_texts(text, message):
    problems = hf(text).problems
    assert [p.message for p in problems] == [message]
    assert problems[0].kind == "hostfile"


def test_the_first_bad_line_stops_reading_as_the_runner_raises():
    h = hf("w0 slots=8\nbad line\nw1 slots=x\n")
    assert len(h.problems) == 1 and "bad line" in h.problems[0].message
    res = resolve_resources(h, None, None, None, None)
    assert res.world_size.value is None and "bad entry" in res.world_size.note


TWO = "w0 slots=8\nw1 slots=8\n"


@pytest.mark.parametrize(
    "include, exclude, num_nodes, num_gpus, expected",
    [
        (None, None, None, None, [("w0", 8), ("w1", 8)]),
        ("w1:0,1", None, None, None, [("w1", 2)]),
        ("w0:0,1@w1", None, None, None, [("w0", 2), ("w1", 8)]),
        ("w1@w0:3", None, None, None, [("w0", 1), ("w1", 8)]),  # hostfile order, not include order
        ("w0:1@w0:1,2", None, None, None, [("w0", 2)]),  # repeated hosts merge, slots deduplicated
        (None, "w1", None, None, [("w0", 8)]),
        (None, "w0:0,1", None, None, [("w0", 6), ("w1", 8)]),
        (None, None, 1, None, [("w0", 8)]),
        (None, None, 5, None, [("w0", 8), ("w1", 8)]),  # more nodes than listed: all of them, silently
        (None, None, None, 16, [("w0", 16), ("w1", 16)]),  # --num_gpus ignores the slot count
        (None, None, 0, 0, [("w0", 8), ("w1", 8)]),
    ],
)
def test_selection(include, exclude, num_nodes, num_gpus, expected):
    res = resolve_resources(hf(TWO), include, exclude, num_nodes, num_gpus)
    assert res.hosts_and_slots == expected and not res.problems
    assert res.world_size.value == sum(s for _, s in expected)
    assert res.nnodes.value == len(expected)


@pytest.mark.parametrize(
    "include, exclude, num_nodes, num_gpus, message",
    [
        ("w0", None, None, 4, "Cannot specify num_nodes/gpus with include/exclude"),
        (None, "w0", 0, None, "Cannot specify num_nodes/gpus with include/exclude"),  # any explicit value, even 0
        ("w0", "w1", None, None, "include_str and exclude_str are mutually exclusive."),
        ("w9", None, None, None, "Hostname 'w9' not found in hostfile"),
        (None, "w9:0", None, None, "Hostname 'w9' not found in hostfile"),
        ("w0:8", None, None, None, "No slot '8' specified on host 'w0'"),
        (
            "w0:a",
            None,
            None,
            None,
            "slot 'a' of 'w0:a' is no number (the runner's int() refuses it: invalid literal for int() with base 10: 'a')",
        ),
        ("localhost:", None, None, None, "slot '' of 'localhost:' is no number"),  # hkust-nlp/deita's empty $DEVICES
    ],
)
def test_refusals(include, exclude, num_nodes, num_gpus, message):
    res = resolve_resources(hf(TWO), include, exclude, num_nodes, num_gpus)
    assert [p.message[: len(message)] for p in res.problems] == [message]
    assert res.world_size.value is None and message in res.world_size.note


def test_uneven_slots_have_no_single_per_node_count():
    res = resolve_resources(hf("w0 slots=8\nw1 slots=4\n"), None, None, None, None)
    assert (res.world_size.value, res.nnodes.value, res.gpus_per_node.value) == (12, 2, None)
    assert "different slot counts" in res.gpus_per_node.note


def test_without_a_hostfile():
    res = resolve_resources(None, None, None, None, None)
    assert res.world_size.value is None and "every GPU of the launching node" in res.world_size.note
    assert res.nnodes.value == 1 and not res.multi_node
    res = resolve_resources(None, None, None, None, 4)
    assert (res.world_size.value, res.gpus_per_node.value) == (4, 4)
    res = resolve_resources(None, "localhost:0,1", None, None, None)
    assert res.world_size.value == 2  # slots picked from the local GPUs
    res = resolve_resources(None, None, None, 2, None)
    assert [p.message for p in res.problems] == ["Num nodes is >1 but no extra nodes available via hostfile"]


def test_cuda_visible_devices_becomes_an_include_only_without_other_selection():
    assert resolve_resources(None, None, None, None, None, visible_devices="0,1,2").world_size.value == 3
    assert resolve_resources(None, None, None, None, 2, visible_devices="0,1,2").world_size.value == 2
    res = resolve_resources(None, None, None, 1, None, visible_devices="0,1")
    assert [p.message for p in res.problems] == ["Cannot specify num_nodes/gpus with include/exclude"]


def test_slurm_backend_and_no_ssh_checks():
    res = resolve_resources(hf(TWO), "w0:1,2@w1", None, None, None, launcher="slurm")
    assert res.problems and res.problems[0].message.startswith("slurm backend cannot select specific device ids")
    res = resolve_resources(hf("w0 slots=8\nw1 slots=4\n"), None, None, None, None, launcher="slurm")
    assert res.problems[0].message.startswith("slurm backend needs the same slot count on every host")
    res = resolve_resources(hf(TWO), None, None, None, None, no_ssh=True, node_rank=2)
    assert res.problems[0].message == "Launching training without ssh, but --node_rank is not set correctly."
    assert resolve_resources(hf(TWO), None, None, None, None, no_ssh=True, node_rank=1).world_size.value == 16


# ---- the same answers as DeepSpeed's own functions, where it is installed --------------------------
CASES = [
    (TWO, "", "", -1, -1),
    (TWO, "w1:0,1", "", -1, -1),
    (TWO, "w0:0,1@w1", "", -1, -1),
    (TWO, "", "w1", -1, -1),
    (TWO, "", "w0:0,1", -1, -1),
    (TWO, "", "", 1, -1),
    (TWO, "", "", 5, -1),
    (TWO, "", "", -1, 16),
    ("a slots=4\nb slots=2\nc slots=8\n", "c@a:3", "", -1, -1),
    ("a slots=4\nb slots=2\n", "", "a:0,1,2,3", -1, -1),
    (TWO, "w9", "", -1, -1),
    (TWO, "w0:8", "", -1, -1),
]


@pytest.mark.parametrize("text, include, exclude, num_nodes, num_gpus", CASES)
def test_agrees_with_deepspeed(text, include, exclude, num_nodes, num_gpus):
    runner = pytest.importorskip("deepspeed.launcher.runner")
    pool = runner._parse_hostfile(text.splitlines())
    try:
        active = runner.parse_inclusion_exclusion(pool, include, exclude)
        active = runner.apply_num_nodes_and_gpus(active, num_nodes, num_gpus)
        theirs = ([(h, len(s)) for h, s in active.items()], None)
    except ValueError as e:
        theirs = ([], str(e))
    res = resolve_resources(
        hf(text),
        include or None,
        exclude or None,
        None if num_nodes < 0 else num_nodes,
        None if num_gpus < 0 else num_gpus,
    )
    ours = (res.hosts_and_slots, res.problems[0].message if res.problems else None)
    assert ours == theirs


@pytest.mark.parametrize("text", ["w0 slots = 8\n", "w0 slots=8\nw0 slots=8\n", "# x\n", "w0 slots=8 # x\n"])
def test_hostfile_errors_agree_with_deepspeed(text):
    runner = pytest.importorskip("deepspeed.launcher.runner")
    try:
        runner._parse_hostfile(text.splitlines(keepends=True))
        theirs = None
    except ValueError as e:
        theirs = str(e)
    problems = hf(text).problems
    assert (problems[0].message if problems else None) == theirs


def test_a_written_line_known_only_at_run_time_is_uncounted_not_refused():
    # failed before: the rendered unknown text was a 'bad entry' the runner would raise (a false PL208)
    from plint.reading.shell.model import MARKER

    read = hf(f"w0 slots=8\n{MARKER}0{MARKER}\n")
    assert hosts(f"w0 slots=8\n{MARKER}0{MARKER}\n") == [("w0", 8)]
    assert not read.problems and read.uncounted is not None
    alone = hf(f"{MARKER}0{MARKER}\n")  # no line read: not 'empty', only unknown
    assert not alone.problems and not alone.hosts and alone.uncounted is not None


# ---- slots the script counts at run time: `$(ssh $node "nvidia-smi ... | wc -l")` ----------------------------
SLOTS_OVER_SSH = """#!/bin/bash
#SBATCH --nodes=2
for node in $(scontrol show hostnames $SLURM_JOB_NODELIST); do
  n=$(ssh ${node} "nvidia-smi --query-gpu=name --format=csv,noheader | wc -l")
  echo "${node} slots=${n}" >> hostfile
done
deepspeed --hostfile hostfile OPTIONS pretrain_gpt.py --deepspeed --num-layers 2 --hidden-size 64 \\
  --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1
"""


def _cluster(tmp_path, text: str) -> tuple[dict, dict]:
    from plint.checking.check import check_paths
    from plint.report.json_report import file_json

    script = tmp_path / "job.sh"
    script.write_text(text)
    (result,) = check_paths([script])
    layout = file_json(result)["layout"]
    return layout["cluster"], layout["provenance"]


def test_hosts_whose_slots_are_counted_at_run_time_are_counted_and_their_slots_unknown(tmp_path):
    # failed before: the run-time slot count made every line uncounted, so the 2 nodes were unknown too
    cluster, provenance = _cluster(tmp_path, SLOTS_OVER_SSH.replace("OPTIONS ", ""))
    assert (cluster["nnodes"], cluster["gpus_per_node"], cluster["world_size"]) == (2, None, None)
    assert provenance["cluster.nnodes"]["origin"] == "derived"
    note = provenance["cluster.gpus_per_node"]["note"]
    assert note.startswith("the slots of hostfile ") and note.endswith(
        "hostfile, written from text known only at run time (--num_gpus G would say)"
    )


def test_num_gpus_decides_the_slots_a_run_time_count_left_unknown(tmp_path):
    cluster, _ = _cluster(tmp_path, SLOTS_OVER_SSH.replace("OPTIONS", "--num_gpus 4"))
    assert (cluster["nnodes"], cluster["gpus_per_node"], cluster["world_size"]) == (2, 4, 8)


@pytest.mark.parametrize("count", ["nvidia-smi -L", "nvidia-smi -L | wc -l -c"])
def test_slots_that_may_be_several_words_leave_the_hosts_uncounted(tmp_path, count):
    cluster, _ = _cluster(
        tmp_path,
        SLOTS_OVER_SSH.replace("OPTIONS ", "").replace(
            "nvidia-smi --query-gpu=name --format=csv,noheader | wc -l", count
        ),
    )
    assert cluster["nnodes"] is None


def test_a_count_printed_by_wc_is_one_word(tmp_path):
    from plint.reading.shell.evaluator import EvalOptions, evaluate

    text = (
        'A=$(nvidia-smi -L | wc -l)\nB=$(wc -l)\nC=$(nvidia-smi -L | wc -l -c)\nD=$(ls | wc)\nE=$(ssh h "ls | wc -w")\n'
    )
    result = evaluate(SourceFile(str(tmp_path / "s.sh"), text), EvalOptions())
    one_word = {name: result.variables[name].value[0].one_word for name in "ABCDE"}
    assert one_word == {"A": True, "B": True, "C": False, "D": False, "E": True}


@pytest.mark.parametrize("named", ["$PWD/hostfile", "$(pwd)/hostfile", "hostfile"])
def test_a_hostfile_in_the_folder_the_script_runs_from_is_looked_for_above_it(tmp_path, named):
    """moreh-dev/Megatron-DeepSpeed's scripts/run-gpt-5b.sh: `HF=$PWD/hostfile` with the hostfile at the repository's
    root, where the script is run from (`bash scripts/run-gpt-5b.sh`): plint took $PWD to be the script's folder,
    found nothing there and looked no further (fail before for $PWD and $(pwd): the slots unknown)."""
    from plint.checking.check import check_paths
    from plint.report.json_report import file_json

    (tmp_path / ".git").mkdir()
    (tmp_path / "hostfile").write_text("node1 slots=8\nnode2 slots=8\n")
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "run.sh"
    script.write_text(
        f"#!/bin/bash\nHF={named}\ndeepspeed --hostfile $HF pretrain_gpt.py --deepspeed --num-layers 2 "
        "--hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1\n"
    )
    (result,) = check_paths([script])
    layout = file_json(result)["layout"]
    assert (layout["cluster"]["nnodes"], layout["cluster"]["gpus_per_node"]) == (2, 8)
    assert "assumed to be where the script is run from" in layout["provenance"]["cluster.gpus_per_node"]["note"]


def test_a_hostfile_under_a_folder_known_only_at_run_time_is_read_from_its_tail_in_the_tree(tmp_path):
    """intel/intel-extension-for-deepspeed's recipes: `--hostfile $LLM_DK_DIR/intel-extension-for-deepspeed/examples/
    hostfile_deepspeed`, the checkout under a folder from the environment (fail before: nodes and slots unknown)."""
    from plint.checking.check import check_paths
    from plint.report.json_report import file_json

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "examples").mkdir()
    (repo / "examples" / "hostfile").write_text("node1 slots=12\n")
    script = repo / "examples" / "run.sh"
    script.write_text(
        "#!/bin/bash\ndeepspeed --hostfile $CODE_DIR/repo/examples/hostfile pretrain_gpt.py --deepspeed --num-layers 2 "
        "--hidden-size 64 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1\n"
    )
    (result,) = check_paths([script])
    layout = file_json(result)["layout"]
    assert (layout["cluster"]["nnodes"], layout["cluster"]["gpus_per_node"]) == (1, 12)
    note = layout["provenance"]["cluster.gpus_per_node"]["note"]
    assert layout["provenance"]["cluster.gpus_per_node"]["origin"] == "assumed"
    assert "starts with ${CODE_DIR}, known only at run time" in note
