"""Where `source FILE` looks for a relative FILE (plint.reading.shell.source_path): the folders a source-path
comment or `[tool.plint] source-path` names, then the sourcing script's folder, then the checked root (where
`bash scripts/train.sh` runs from); two guessed files that differ are read first-wins and said assumed; a file
not found names every place looked; every place still goes through the root. Each test fails before this
change but three that pin what is kept: a bare name beside the script (the reading plint had), two guessed
files alike, and a file the script writes before sourcing it (no guess)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plint.checking.check import check_paths
from plint.root import WIDEN_HINT

TRAINER = (
    "pretrain_gpt.py --num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 "
    "--max-position-embeddings 1024 --micro-batch-size 1 --global-batch-size 8"
)
UNKNOWN = "values it sets are unknown"


def _tree(tmp_path: Path, sourced: str, files: dict[str, str], comment: str = "") -> Path:
    """A git tree with scripts/train.sh sourcing `sourced` before a launch that reads $TP, and `files`."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "scripts").mkdir()
    (tmp_path / "outside").mkdir()
    launch = f"#!/bin/bash\n{comment}source {sourced}\ntorchrun --nproc_per_node 8 {TRAINER} --tensor-model-parallel-size $TP\n"
    (repo / "scripts" / "train.sh").write_text(launch)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return repo


def _script(tmp_path: Path, body: str, files: dict[str, str]) -> Path:
    """A git tree as _tree makes it, whose scripts/train.sh runs `body` (lines of shell) before the launch."""
    repo = _tree(tmp_path, "/dev/null", files)
    launch = f"torchrun --nproc_per_node 8 {TRAINER} --tensor-model-parallel-size $TP\n"
    (repo / "scripts" / "train.sh").write_text(f"#!/bin/bash\n{body}{launch}")
    return repo


def _check(repo: Path, monkeypatch):
    """The result of checking scripts/train.sh from the repository's root, as the README would run it."""
    monkeypatch.chdir(repo)
    (result,) = check_paths([Path("scripts/train.sh")])
    return result


def _tp(result):
    return result.layouts[0].fields["parallel.tp"]


def _about(result, name: str) -> list[tuple[str, str]]:
    return [
        (d.code, d.message) for d in result.diagnostics if name in d.message and d.code in ("PL001", "PL002", "PL004")
    ]


def test_a_path_with_a_folder_is_read_from_the_root_the_script_runs_from(tmp_path, monkeypatch):
    # before: looked for scripts/scripts/env.sh only, and said it missing
    result = _check(_tree(tmp_path, "scripts/env.sh", {"scripts/env.sh": "TP=2\n"}), monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "literal")
    assert _about(result, "env.sh") == []


def test_a_bare_name_found_only_beside_the_script_is_read_from_there(tmp_path, monkeypatch):
    # plint's reading before the root was added: kept, and no guess is said since nothing else fits
    result = _check(_tree(tmp_path, "env.sh", {"scripts/env.sh": "TP=2\n"}), monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "literal")
    assert _about(result, "env.sh") == []


@pytest.mark.parametrize("place", ["lib", "SCRIPTDIR/../lib"])
def test_a_configured_source_path_is_looked_in_first(tmp_path, monkeypatch, place):
    files = {"lib/env.sh": "TP=4\n", "scripts/env.sh": "TP=2\n", ".plint.toml": f'source-path = ["{place}"]\n'}
    result = _check(_tree(tmp_path, "env.sh", files), monkeypatch)
    # the user said where: lib's file wins over the one beside the script, with no guess to report
    assert (_tp(result).value, _tp(result).origin) == (4, "literal")
    assert _about(result, "env.sh") == []


@pytest.mark.parametrize(
    ("comment", "sourced", "where"),
    [
        ("# plint: source-path=lib\n", "env.sh", "lib/env.sh"),
        ("# shellcheck source-path=SCRIPTDIR/../lib\n", "env.sh", "lib/env.sh"),
        ("# shellcheck disable=SC1091 source-path=lib\n", "env.sh", "lib/env.sh"),
        # shellcheck's source=FILE names the file of a path known only at run time (before: $TP unknown)
        ("# shellcheck source=conf/env.sh\n", '"$(locate_config)/env.sh"', "conf/env.sh"),
        ("# shellcheck disable=SC1091 source=conf/env.sh\n", '"$(locate_config)/env.sh"', "conf/env.sh"),
        ("# plint: source=conf/env.sh\n", '"$(locate_config)/env.sh"', "conf/env.sh"),
    ],
)
def test_a_directive_says_where_the_sourced_file_is_and_is_no_unused_directive(
    tmp_path, monkeypatch, comment, sourced, where
):
    result = _check(_tree(tmp_path, sourced, {where: "TP=4\n"}, comment), monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (4, "literal")
    assert _about(result, "env.sh") == []
    assert not [d for d in result.diagnostics if d.code == "PL004"]


def test_two_guessed_files_that_differ_are_read_first_and_said_assumed(tmp_path, monkeypatch):
    result = _check(_tree(tmp_path, "env.sh", {"scripts/env.sh": "TP=2\n", "env.sh": "TP=4\n"}), monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "assumed")
    (said,) = _about(result, "env.sh")
    assert said[0] == "PL002"
    assert said[1].startswith(
        "sourced file env.sh could be scripts/env.sh (beside the script) or env.sh (the checked root), which "
        "differ, depending on the folder the script is run from; plint read the first"
    )


def test_two_guessed_files_alike_need_no_word(tmp_path, monkeypatch):
    result = _check(_tree(tmp_path, "env.sh", {"scripts/env.sh": "TP=2\n", "env.sh": "TP=2\n"}), monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "literal")
    assert _about(result, "env.sh") == []


def test_a_sourced_file_found_nowhere_names_every_place_looked(tmp_path, monkeypatch):
    files = {".plint.toml": 'source-path = ["lib"]\n'}
    result = _check(_tree(tmp_path, "conf/env.sh", files), monkeypatch)
    assert _about(result, "conf/env.sh") == [
        (
            "PL002",
            "cannot read sourced file conf/env.sh: no such file in any place plint looked (lib/conf/env.sh "
            "([tool.plint] source-path), scripts/conf/env.sh (beside the script), conf/env.sh (the checked root)); "
            f"{UNKNOWN}",
        )
    ]


def test_a_configured_folder_outside_the_root_is_never_read(tmp_path, monkeypatch):
    repo = _tree(tmp_path, "env.sh", {".plint.toml": 'source-path = ["../outside"]\n', "scripts/env.sh": "TP=2\n"})
    (tmp_path / "outside" / "env.sh").write_text("TP=8\n")
    result = _check(repo, monkeypatch)
    assert not _tp(result).known  # neither the file outside nor, behind its refusal, a guess
    (said,) = _about(result, "env.sh")
    assert said == ("PL002", f"sourced file env.sh: outside the checked tree: not read; {UNKNOWN} ({WIDEN_HINT})")


def test_a_symlink_at_the_root_leading_outside_is_never_read(tmp_path, monkeypatch):
    repo = _tree(tmp_path, "scripts/env.sh", {})
    (tmp_path / "outside" / "env.sh").write_text("TP=8\n")
    (repo / "scripts" / "env.sh").symlink_to(tmp_path / "outside" / "env.sh")
    result = _check(repo, monkeypatch)
    assert not _tp(result).known
    assert _about(result, "env.sh") == [
        ("PL002", f"sourced file scripts/env.sh: outside the checked tree: not read; {UNKNOWN} ({WIDEN_HINT})")
    ]


def test_a_file_the_script_writes_then_sources_is_no_guess(tmp_path, monkeypatch):
    # bash writes and reads it in the folder the script runs in, whichever that is: a file of the same name at
    # the root is not the one read
    repo = _tree(tmp_path, "env.sh", {"env.sh": "TP=4\n"}, "echo 'TP=2' > env.sh\n")
    result = _check(repo, monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "literal")
    assert _about(result, "env.sh") == []


# ---- `# shellcheck source=FILE` / `# plint: source=FILE`: the file one `source` command reads ----------------


def test_a_source_directive_may_name_the_file_under_the_scripts_folder(tmp_path, monkeypatch):
    files = {"scripts/conf/env.sh": "TP=2\n", "conf/env.sh": "TP=4\n"}
    result = _check(_tree(tmp_path, '"$CONF"', files, "# shellcheck source=SCRIPTDIR/conf/env.sh\n"), monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "literal")


def test_a_source_directive_above_a_function_holds_inside_it(tmp_path, monkeypatch):
    repo = _script(
        tmp_path,
        'set -e\n# shellcheck source=conf/env.sh\nload() {\n  source "$CONF"\n}\nload\n',
        {"conf/env.sh": "TP=4\n"},
    )
    assert _tp(_check(repo, monkeypatch)).value == 4


def test_a_source_directive_holds_only_for_the_command_below_it(tmp_path, monkeypatch):
    # after another command, a directive is not the script's header: the second `source` is not redirected
    repo = _script(
        tmp_path,
        'set -e\n# shellcheck source=conf/env.sh\nsource "$A"\nsource "$B"\n',
        {"conf/env.sh": "TP=4\n", "conf/tp.sh": "TP=2\n"},
    )
    result = _check(repo, monkeypatch)
    assert _tp(result).value == 4  # read through the first
    assert [m for _, m in _about(result, "sourced file")] == [
        "cannot read sourced file ${B}: its path is not known statically ($B is not set in the script and has no default); "
        + UNKNOWN
    ]


def test_a_source_directive_after_the_shebang_holds_for_the_whole_script(tmp_path, monkeypatch):
    repo = _script(tmp_path, '# shellcheck source=conf/env.sh\nset -e\nsource "$A"\n', {"conf/env.sh": "TP=4\n"})
    assert _tp(_check(repo, monkeypatch)).value == 4


def test_source_dev_null_is_not_followed_nor_reported(tmp_path, monkeypatch):
    # before: "cannot read sourced file ${A}: its path is not known statically"
    result = _check(_tree(tmp_path, '"$A"', {}, "# shellcheck source=/dev/null\n"), monkeypatch)
    assert _about(result, "sourced file") == []


def test_a_named_file_found_nowhere_says_the_comment_named_it(tmp_path, monkeypatch):
    result = _check(_tree(tmp_path, '"$A"', {}, "# plint: source=conf/env.sh\n"), monkeypatch)
    assert _about(result, "conf/env.sh") == [
        (
            "PL002",
            "cannot read sourced file conf/env.sh (named by a source= comment): no such file in any place plint "
            "looked (scripts/conf/env.sh (beside the script), conf/env.sh (the checked root)); " + UNKNOWN,
        )
    ]


def test_a_source_path_line_in_a_heredoc_is_text_not_a_directive(tmp_path, monkeypatch):
    # before: the heredoc's line counted as a source-path comment, and lib/env.sh was read
    heredoc = "cat > notes.txt <<EOF\n# shellcheck source-path=lib\nEOF\n"
    result = _check(_tree(tmp_path, "env.sh", {"lib/env.sh": "TP=4\n"}, heredoc), monkeypatch)
    assert not _tp(result).known


def test_a_path_plint_knows_is_read_as_the_script_names_it_whatever_a_directive_says(tmp_path, monkeypatch):
    # the directive is for a path known only at run time; one plint resolves is the file bash reads
    files = {"scripts/env.sh": "TP=2\n", "conf/env.sh": "TP=4\n"}
    result = _check(
        _tree(tmp_path, '"$(dirname "$0")/env.sh"', files, "# shellcheck source=conf/env.sh\n"), monkeypatch
    )
    assert _tp(result).value == 2


@pytest.mark.parametrize("comment", ['# shellcheck source="${FILE}"\n', "# shellcheck source=/dev/null\n"])
def test_a_directive_naming_no_path_leaves_a_known_path_read(tmp_path, monkeypatch, comment):
    # Argonne's Megatron-DeepSpeed writes `# shellcheck source="${FILE}"` above `source "${FILE}"`: shellcheck
    # does not expand it, so it names no file, and the path plint knows is read
    repo = _script(tmp_path, f'FILE=conf/env.sh\n{comment}source "${{FILE}}"\n', {"conf/env.sh": "TP=4\n"})
    result = _check(repo, monkeypatch)
    assert _tp(result).value == 4 and _about(result, "env.sh") == []


# ---- `bash FILE` / `sbatch FILE`: the script a script runs is looked for where a sourced file is --------------


def _runner(tmp_path: Path, files: dict[str, str]) -> Path:
    """A git tree with scripts/run.sh running `bash scripts/train.sh 2` (a path from the repository root)."""
    repo = _tree(tmp_path, "/dev/null", files)
    (repo / "scripts" / "run.sh").write_text("#!/bin/bash\nbash scripts/train.sh 2\n")
    return repo


def _runner_tree(tmp_path: Path, files: dict[str, str], body: str) -> Path:
    """A git tree holding `files` whose scripts/run.sh is `body` (lines of shell)."""
    repo = _tree(tmp_path, "/dev/null", files)
    (repo / "scripts" / "run.sh").write_text("#!/bin/bash\n" + body)
    return repo


def _check_runner(repo: Path, monkeypatch):
    monkeypatch.chdir(repo)
    (result,) = check_paths([Path("scripts/run.sh")])
    return result


CHILD = f"#!/bin/bash\ntorchrun --nproc_per_node 8 {TRAINER} --tensor-model-parallel-size $1\n"


def test_a_script_run_by_its_path_from_the_root_is_found_there(tmp_path, monkeypatch):
    # before: only scripts/scripts/train.sh was looked for, and the run held no launch, silently
    result = _check_runner(_runner(tmp_path, {"scripts/train.sh": CHILD}), monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "literal")
    assert _about(result, "train.sh") == []


def test_a_script_two_guessed_places_hold_differently_is_read_first_and_said_assumed(tmp_path, monkeypatch):
    files = {"scripts/train.sh": CHILD, "scripts/scripts/train.sh": CHILD.replace("$1", "4")}
    result = _check_runner(_runner(tmp_path, files), monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (4, "assumed")
    (said,) = _about(result, "train.sh")
    assert said[0] == "PL002" and said[1].startswith(
        "script scripts/train.sh (bash FILE) could be scripts/scripts/train.sh (beside the script) or "
        "scripts/train.sh (the checked root), which differ"
    )


# ---- `~/...`: the user's checkout of the repository, read from the checked tree and said assumed ----------------


def test_a_script_run_through_the_home_folder_is_read_from_the_same_path_in_the_tree(tmp_path, monkeypatch):
    # before: the path starting with ~ was never looked for, and the job held no launch
    repo = _runner(tmp_path, {"scripts/train.sh": CHILD})
    (repo / "scripts" / "run.sh").write_text("#!/bin/bash\nbash ~/checkouts/repo/scripts/train.sh 2\n")
    result = _check_runner(repo, monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "assumed")
    (said,) = _about(result, "train.sh")
    assert said == (
        "PL002",
        "script ~/checkouts/repo/scripts/train.sh (bash FILE) starts with ~, the home folder of whoever runs the "
        "script; plint read scripts/train.sh, the same path inside the checked tree, as if the home folder held a "
        "checkout of it, so the values it sets are assumed",
    )


def test_a_file_sourced_through_the_home_folder_sets_assumed_values(tmp_path, monkeypatch):
    result = _check(_tree(tmp_path, "~/repo/conf/env.sh", {"conf/env.sh": "TP=4\n"}), monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (4, "assumed")


@pytest.mark.parametrize("sourced", ["~/env.sh", "~/conf/../../outside/env.sh", "~/x/conf//env.sh"])
def test_a_home_path_without_a_folder_or_leaving_upwards_is_not_matched(tmp_path, monkeypatch, sourced):
    files = {"env.sh": "TP=4\n", "conf/env.sh": "TP=4\n"}
    repo = _tree(tmp_path, sourced, files)
    (tmp_path / "outside" / "env.sh").write_text("TP=8\n")  # a tail with `..` would leave the tree for it
    result = _check(repo, monkeypatch)
    assert _tp(result).value is None
    (said,) = _about(result, sourced)
    assert "its path starts with ~, the home folder of whoever runs the script" in said[1]


# ---- an absolute path outside the tree (a container's mount, another user's checkout): its tail in the tree --------


def test_a_script_run_by_an_absolute_path_outside_the_tree_is_read_from_its_tail_in_the_tree(tmp_path, monkeypatch):
    # `srun docker run -v $CODE:/opt/repo IMAGE /opt/repo/scripts/train.sh`: before, the path was looked for as
    # written, held nothing on this machine, and the job had no launch and said nothing
    repo = _runner(tmp_path, {"scripts/train.sh": CHILD})
    (repo / "scripts" / "run.sh").write_text(
        "#!/bin/bash\nsrun docker run --gpus all --expose 2222 -v /mnt/code/repo/:/opt/repo img "
        "/opt/repo/scripts/train.sh 2\n"
    )
    result = _check_runner(repo, monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "assumed")
    (said,) = _about(result, "train.sh")
    assert said == (
        "PL002",
        "script /opt/repo/scripts/train.sh (bash FILE) is an absolute path outside the checked tree; plint read "
        "scripts/train.sh, the same path inside the checked tree, as if that folder held a checkout of it, so the "
        "values it sets are assumed",
    )


def test_an_absolute_path_to_a_vendored_project_is_read_from_its_tail_under_the_scripts_folders(tmp_path, monkeypatch):
    # `ssh $node "bash /storage5/Megatron-LM/scripts/train.sh 2"` from a script inside the tree's vendored
    # pretrain/Megatron-LM/: the tail is a file under a folder above the script, not under the checked root
    repo = _tree(tmp_path, "/dev/null", {})
    project = repo / "pretrain" / "Megatron-LM" / "scripts"
    project.mkdir(parents=True)
    (project / "train.sh").write_text(CHILD)
    (project / "run.sh").write_text("#!/bin/bash\nbash /storage5/Megatron-LM/scripts/train.sh 2\n")
    monkeypatch.chdir(repo)
    (result,) = check_paths([Path("pretrain/Megatron-LM/scripts/run.sh")])
    assert (_tp(result).value, _tp(result).origin) == (2, "assumed")
    (said,) = _about(result, "train.sh")
    assert "plint read pretrain/Megatron-LM/scripts/train.sh" in said[1]


def test_a_home_path_into_a_checkout_named_as_the_tree_is_read_from_its_root(tmp_path, monkeypatch):
    # mauryaavinash95/Megatron-DeepSpeed's PBS jobs: `bash ~/dl-io/Megatron-DeepSpeed/my-llama2-bloom.sh ...`, the
    # script at the root of a checkout cloned as Megatron-DeepSpeed; a folder of another name is no evidence
    for name, found in (("Megatron-DeepSpeed", True), ("other", False)):
        repo = tmp_path / name / name
        (repo / ".git").mkdir(parents=True)
        (repo / "launch.sh").write_text(CHILD)
        (repo / "job.sh").write_text("#!/bin/bash\nbash ~/dl-io/Megatron-DeepSpeed/launch.sh 2\n")
        monkeypatch.chdir(repo)
        (result,) = check_paths([Path("job.sh")])
        if found:
            assert (_tp(result).value, _tp(result).origin) == (2, "assumed")
        else:
            assert not result.layouts


def test_an_absolute_path_inside_the_tree_is_read_as_written(tmp_path, monkeypatch):
    repo = _tree(tmp_path, "/dev/null", {"conf/env.sh": "TP=4\n"})
    launch = (repo / "scripts" / "train.sh").read_text().replace("/dev/null", str(repo / "conf" / "env.sh"))
    (repo / "scripts" / "train.sh").write_text(launch)
    result = _check(repo, monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (4, "literal")


def test_an_absolute_path_whose_tail_the_tree_lacks_stays_unknown(tmp_path, monkeypatch):
    result = _check(_tree(tmp_path, "/opt/other/conf/env.sh", {"env.sh": "TP=4\n"}), monkeypatch)
    assert _tp(result).value is None


def test_a_home_path_of_five_thousand_parts_stays_cheap(tmp_path, monkeypatch):
    # a hostile path: matching every tail of 5,000 parts took 95 CPU s before tails were bounded (32 parts)
    import time

    start = time.process_time()
    result = _check(_tree(tmp_path, "~/" + "a/" * 5_000 + "env.sh", {"conf/env.sh": "TP=4\n"}), monkeypatch)
    assert _tp(result).value is None and time.process_time() - start < 5  # a budget, as tests/test_budgets.py


# ---- a DeepSpeed hostfile named from where the script is run, as its config is --------------------------------


def _deepspeed_job(tmp_path: Path, hostfile: str) -> Path:
    """A git tree with scripts/run.sh launching `deepspeed --hostfile configs/hostfile` (a path from the repository
    root, where its README runs it) and configs/ at the root only."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "scripts").mkdir()
    (repo / "configs").mkdir()
    (repo / "configs" / "hostfile").write_text(hostfile)
    (repo / "configs" / "ds.json").write_text(
        '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}}'
    )
    (repo / "scripts" / "run.sh").write_text(
        "#!/bin/bash\ndeepspeed --hostfile configs/hostfile train.py --deepspeed configs/ds.json\n"
    )
    return repo


def test_a_hostfile_named_from_the_root_is_read_there_and_its_counts_assumed(tmp_path, monkeypatch):
    # before: looked for beside the script only, as the config was not: nodes and GPUs unknown
    result = _check_runner(_deepspeed_job(tmp_path, "node-a slots=8\nnode-b slots=8\n"), monkeypatch)
    fields = result.layouts[0].fields
    nodes, world = fields["cluster.nnodes"], fields["cluster.world_size"]
    assert (nodes.value, world.value) == (2, 16) and nodes.origin == world.origin == "assumed"
    assert "configs/hostfile is not beside the script" in nodes.note


def test_a_guessed_hostfile_the_runner_refuses_is_unknown_not_an_error(tmp_path, monkeypatch):
    # a template's placeholder host twice: DeepSpeed refuses it, but the file is only guessed to be the one read
    result = _check_runner(_deepspeed_job(tmp_path, "node_ip slots=8\nnode_ip slots=8\n"), monkeypatch)
    assert result.layouts[0].fields["cluster.nnodes"].value is None
    assert not [d for d in result.diagnostics if d.severity == "error"]


def test_a_template_filled_from_an_absolute_path_outside_the_tree_is_read_from_its_tail(tmp_path, monkeypatch):
    # YoheiOhto/Inhouse-Megatron-DeepSpeed: `sed "s/CONFIG_ZERO_STAGE/$ZERO_STAGE/" /work/gg17/.../repo/examples/
    # ds_TEMPLATE.json > ds.json` on the cluster, the template in this tree under the same tail
    template = '{"train_batch_size": 64, "zero_optimization": {"stage": CONFIG_ZERO_STAGE}}\n'
    body = (
        "ZERO_STAGE=2\n"
        'sed "s/CONFIG_ZERO_STAGE/${ZERO_STAGE}/" /work/gg17/alice/repo/examples/ds_TEMPLATE.json > ds.json\n'
        f"deepspeed --num_gpus 8 {TRAINER} --deepspeed --deepspeed_config ds.json --tensor-model-parallel-size 1\n"
    )
    result = _check_runner(_runner_tree(tmp_path, {"examples/ds_TEMPLATE.json": template}, body), monkeypatch)
    zero = result.layouts[0].fields["parallel.zero_stage"]
    assert (zero.value, zero.origin) == (2, "literal")  # the stage is the script's, written into the template
    (said,) = _about(result, "ds_TEMPLATE.json")
    assert "plint read examples/ds_TEMPLATE.json, the same path inside the checked tree" in said[1]


def test_what_counts_the_lines_of_a_file_read_from_its_tail_is_assumed(tmp_path, monkeypatch):
    # FlagAI's Aquila2: NNodes=`wc -l $AQUILA2_HOME/finetune/7B/hostfile`, AQUILA2_HOME the author's checkout
    body = (
        "N=`wc -l /data/alice/repo/conf/hostfile | cut -d ' ' -f1`\n"
        f"torchrun --nnodes $N --nproc_per_node 8 {TRAINER} --tensor-model-parallel-size 1\n"
    )
    repo = _runner_tree(tmp_path, {"conf/hostfile": "h1 slots=8\nh2 slots=8\n"}, body)
    nodes = _check_runner(repo, monkeypatch).layouts[0].fields["cluster.nnodes"]
    assert (nodes.value, nodes.origin) == (2, "assumed")


def test_a_deepspeed_config_named_by_an_absolute_path_outside_the_tree_is_read_from_its_tail(tmp_path, monkeypatch):
    # linskybing/HPC-II-DeepSpeed-LLM: `export CONFIG=/work/u8644434/HPC-II-DeepSpeed-LLM/configs`, then
    # `--deepspeed_config $CONFIG/nvidia/zero_3.json`, the config in this tree under the same tail
    config = '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}, "fp16": {"enabled": true}}\n'
    body = (
        "export CONFIG=/work/u8644434/HPC-II-DeepSpeed-LLM/configs\n"
        "deepspeed --num_gpus 8 train.py --deepspeed_config $CONFIG/nvidia/zero_3.json\n"
    )
    result = _check_runner(_runner_tree(tmp_path, {"configs/nvidia/zero_3.json": config}, body), monkeypatch)
    zero = result.layouts[0].fields["parallel.zero_stage"]
    assert (zero.value, zero.origin) == (3, "assumed")
    assert "plint read configs/nvidia/zero_3.json, the same path inside the checked tree" in zero.note
    assert result.layouts[0].fields["precision"].value == "fp16"


@pytest.mark.parametrize(
    ("body", "tp"),
    [
        ("cd ../conf\nsource env.sh\n", 8),  # bash opens env.sh in the folder cd moved to
        ('cd "$(dirname "$0")"/../conf && source ./env.sh\n', 8),
        ("(cd ../conf)\nsource env.sh\n", 2),  # a subshell's cd moves nothing after it
        ("source env.sh\n", 2),  # no cd: beside the script first, as before
    ],
)
def test_a_relative_path_after_cd_is_looked_for_where_cd_moved(tmp_path, monkeypatch, body, tp):
    """`cd ../2_pretrain; bash 3_train_node1.sh` (hatakeyama-llm-team/llm's auto_train.sh): the script bash runs or
    sources is the one in the folder `cd` moved to, not one beside the script (fail before: not found, or the
    one beside the script)."""
    repo = _script(tmp_path, body, {"conf/env.sh": "TP=8\n", "scripts/env.sh": "TP=2\n"})
    assert _tp(_check(repo, monkeypatch)).value == tp


def test_a_child_script_after_cd_is_run_from_where_cd_moved(tmp_path, monkeypatch):
    repo = _tree(
        tmp_path,
        "/dev/null",
        {"stage2/train.sh": f"torchrun --nproc_per_node 8 {TRAINER} --tensor-model-parallel-size 4\n"},
    )
    (repo / "scripts" / "train.sh").write_text("#!/bin/bash\ncd ../stage2\nbash train.sh\n")
    assert _tp(_check(repo, monkeypatch)).value == 4


def test_after_cd_to_a_folder_plint_cannot_know_pwd_is_unknown(tmp_path, monkeypatch):
    repo = _script(tmp_path, 'cd "$WORK"\nTP=$(pwd | wc -c)\n', {})
    assert _tp(_check(repo, monkeypatch)).value is None


# ---- a path under a folder known only at run time (`$LLM_DK_DIR/repo/...`): its known tail in the tree -------------


def test_a_script_run_under_an_unknown_folder_is_read_from_its_known_tail_in_the_tree(tmp_path, monkeypatch):
    """intel/intel-extension-for-deepspeed's recipes: `bash $LLM_DK_DIR/intel-extension-for-deepspeed/examples/gpt.sh`
    with LLM_DK_DIR from the environment (fail before: a silent file)."""
    repo = _runner(tmp_path, {"scripts/train.sh": CHILD})
    (repo / "scripts" / "run.sh").write_text("#!/bin/bash\nbash $CODE_DIR/repo/scripts/train.sh 2\n")
    result = _check_runner(repo, monkeypatch)
    assert (_tp(result).value, _tp(result).origin) == (2, "assumed")
    (said,) = _about(result, "train.sh")
    assert said == (
        "PL002",
        "script ${CODE_DIR}/repo/scripts/train.sh (bash FILE) starts with ${CODE_DIR}, known only at run time; plint "
        "read scripts/train.sh, the same path inside the checked tree, as if ${CODE_DIR} held a checkout of it, so the "
        "values it sets are assumed",
    )


@pytest.mark.parametrize("sourced", ["$CONF/env.sh", "$CONF/x/$SUB/env.sh"])
def test_an_unknown_folder_with_no_known_folder_after_it_is_not_matched(tmp_path, monkeypatch, sourced):
    result = _check(_tree(tmp_path, sourced, {"env.sh": "TP=4\n", "x/env.sh": "TP=4\n"}), monkeypatch)
    assert _tp(result).value is None
