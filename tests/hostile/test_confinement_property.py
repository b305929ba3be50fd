"""Property: whatever paths a generated launch names (relative, absolute, `..`, through symlinks, built
from variables), plint opens nothing outside the root and prints nothing from there."""

from __future__ import annotations

import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile_helpers import SECRET, make_tree, opened_under, recording_opens, time_limit

# {o} is the outside folder, {r} the repository (absolute); `lo`, `ld` are symlinks inside the repository
# pointing out (a file, a folder); `in.sh`/`in.json` are the repository's own files
PATHS = [
    "../outside/f.sh",
    "../outside/f.json",
    "{o}/f.sh",
    "{o}/f.json",
    "{r}/../outside/f.json",
    "sub/../../outside/f.sh",
    "./lo",
    "ld/f.sh",
    "ld/f.json",
    "lo",
    "$OUT/f.sh",
    "${OUT}/f.json",
    "in.sh",
    "in.json",
    "./sub/../in.json",
    "{r}/in.sh",
    "/etc/passwd",
    "../outside",
    "ld",
    "../outside/hostfile",
]
USES = [
    "source {p}",
    ". {p}",
    "bash {p}",
    "sbatch {p}",
    "cat {p} > ds.json",
    "cp {p} ds.json",
    "cp {p} copied.sh",
    "sed 's/a/b/' {p} > ds.json",
    "sed -i 's/a/b/' {p}",
    "X=$(cat {p})",
    "cat {p} | tee out.json",
    "deepspeed --hostfile {p} pretrain_gpt.py --deepspeed --deepspeed_config {p}",
    "deepspeed --num_gpus 2 pretrain_gpt.py --deepspeed --deepspeed_config {p}",
    "accelerate launch --config_file {p} train.py",
    "torchrun --nproc_per_node 2 pretrain_gpt.py $(cat {p})",
    "source copied.sh",
    "deepspeed --num_gpus 2 pretrain_gpt.py --deepspeed --deepspeed_config ds.json",
    "OUT=../outside",
    "OUT={o}",
    "cd ..",
    "cd {o}",
]


def _tree(tmp_path):
    root = tmp_path / "t"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir()
    secret_sh = f'TP="{SECRET}"\nexport {SECRET}=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py --{SECRET} 1\n'
    secret_json = f'{{"train_micro_batch_size_per_gpu": "{SECRET}", "{SECRET}": 1}}\n'
    repo, outside = make_tree(
        root,
        {
            "outside/f.sh": secret_sh,
            "outside/f.json": secret_json,
            "outside/hostfile": f"{SECRET} slots=8\n",
            "repo/in.sh": "TP=2\n",
            "repo/in.json": '{"train_micro_batch_size_per_gpu": 1}\n',
        },
        {"repo/lo": "{outside}/f.sh", "repo/ld": "{outside}"},
    )
    (repo / "sub").mkdir()
    return repo, outside


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(USES), st.sampled_from(PATHS)), min_size=1, max_size=6))
def test_generated_launches_never_leave_the_root(tmp_path, monkeypatch, steps):
    from plint.checking.check import check_paths
    from plint.fixing.fix import attach_fixes
    from plint.report import github, json_report, markdown, sarif, text

    repo, outside = _tree(tmp_path)
    lines = [use.replace("{p}", path) for use, path in steps]
    script = "\n".join(lines + ["torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $TP"]) + "\n"
    script = script.replace("{o}", str(outside)).replace("{r}", str(repo))
    (repo / "launch.sh").write_text(script)
    monkeypatch.chdir(repo)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    with recording_opens() as opened, time_limit(60):
        run = check_paths(["launch.sh"])
        attach_fixes(run)
        outputs = [r.render(run.results) for r in (json_report, sarif, github, markdown)]
        outputs.append(text.render(run.results, color=False))
    assert not opened_under(opened, outside), (script, opened_under(opened, outside))
    assert "/etc/passwd" not in opened
    for out in outputs:
        assert SECRET not in out, (script, out)
