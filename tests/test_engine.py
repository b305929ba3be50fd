"""The engine: rule selection (layers, specificity, per-file ignores), severities, the per-config
cache, fail-on, and a failing rule that does not end the run."""

from pathlib import Path

import pytest

from plint.checking.check import CheckOptions, check_paths
from plint.checking.config import Settings
from plint.checking.engine import Engine
from plint.rules.base import RULES, Example, Finding, Rule, RuleDocs, no_fix

BAD = "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --bf16\n"


def chosen(settings=None, path=None, **options):
    return set(Engine(CheckOptions(**options)).selected(settings or Settings(), path))


def test_default_is_every_rule():
    assert chosen() == set(Engine(CheckOptions()).rules)


@pytest.mark.parametrize(
    "settings, options, expected_in, expected_out",
    [
        (Settings(select=["PL3"]), {}, {"PL303", "PL305"}, {"PL101", "PL601"}),
        (Settings(select=["pl3", "cuda-device-max-connections"]), {}, {"PL303", "PL601"}, {"PL101"}),
        (Settings(select=["PL3"], ignore=["PL303"]), {}, {"PL305"}, {"PL303"}),
        # the more specific selector wins inside one layer; a tie goes to ignore
        (Settings(select=["sequence-parallel-off"], ignore=["PL3"]), {}, {"PL303"}, {"PL305"}),
        (Settings(select=["PL303"], ignore=["PL303"]), {}, set(), {"PL303"}),
        (Settings(extend_select=["PL303"], ignore=["PL3"]), {}, {"PL303", "PL101"}, {"PL305"}),
        # the command line is a later layer: --select starts over, --ignore and --extend-select adjust
        (Settings(select=["PL3"], ignore=["PL303"]), {"select": ["PL303", "PL1"]}, {"PL303", "PL101"}, {"PL305"}),
        (
            Settings(select=["PL3"]),
            {"extend_select": ["PL601"], "ignore": ["PL305"]},
            {"PL303", "PL601"},
            {"PL305", "PL101"},
        ),
        (Settings(), {"ignore": ["PL"]}, set(), {"PL001", "PL601"}),
        (Settings(severity={"PL3": "off", "PL303": "warning"}), {}, {"PL303", "PL101"}, {"PL305"}),
    ],
)
def test_selection_layers(settings, options, expected_in, expected_out):
    rules = chosen(settings, **options)
    assert expected_in <= rules and not (expected_out & rules)


def test_per_file_ignores_match_paths_under_the_config_folder_and_file_names(tmp_path):
    settings = Settings(
        path=tmp_path / ".plint.toml",
        per_file_ignores={"legacy/*.sh": ["PL303"], "**/gen_*.sh": ["PL6"], "old.slurm": ["PL1"]},
    )
    assert "PL303" not in chosen(settings, str(tmp_path / "legacy" / "a.sh"))
    assert "PL303" in chosen(settings, str(tmp_path / "jobs" / "a.sh"))
    assert "PL601" not in chosen(settings, str(tmp_path / "gen_x.sh"))
    assert "PL601" not in chosen(settings, str(tmp_path / "deep" / "er" / "gen_x.sh"))
    assert "PL101" not in chosen(settings, str(tmp_path / "any" / "old.slurm"))


def test_most_specific_severity_wins():
    engine = Engine(CheckOptions())
    settings = Settings(severity={"PL3": "info", "sequence-parallel-off": "error", "PL30": "warning"})
    rules = engine.rules
    assert engine.severity_override(rules["PL303"], settings) == "error"
    assert engine.severity_override(rules["PL305"], settings) == "warning"
    assert engine.severity_override(rules["PL101"], settings) is None


def test_one_config_file_is_read_once_and_sets_fail_on(tmp_path, monkeypatch):
    from plint.checking import config

    (tmp_path / ".git").mkdir()
    (tmp_path / ".plint.toml").write_text('fail-on = "info"\n')
    for name in ("a.sh", "b.sh"):
        (tmp_path / name).write_text(BAD)
    loads = []
    real = config.load
    monkeypatch.setattr(config, "load", lambda path: loads.append(path) or real(path))
    run = check_paths([tmp_path])
    assert len(run.results) == 2 and loads == [(tmp_path / ".plint.toml").resolve()]
    assert run.fail_on == "info"


def test_severity_override_and_off_reach_the_diagnostics(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "launch.sh").write_text(BAD)
    (tmp_path / ".plint.toml").write_text('severity = {sequence-parallel-off = "error", PL6 = "off"}\n')
    (result,) = check_paths([tmp_path / "launch.sh"])
    found = {d.code: d.severity for d in result.diagnostics}
    assert found["PL303"] == "error" and not any(code.startswith("PL6") for code in found)


@pytest.fixture
def broken_rule():
    def check(ctx):
        raise RuntimeError("boom")
        yield Finding("never")  # pragma: no cover

    docs = RuleDocs("", "", Example({"launch.sh": ""}), Example({"launch.sh": ""}), no_fix())
    RULES["PL999"] = Rule("PL999", "test-broken-rule", "error", "", docs, check, needs_layout=False)
    yield
    del RULES["PL999"]


def test_a_failing_rule_is_reported_and_skipped(tmp_path, monkeypatch, capsys, broken_rule):
    monkeypatch.delenv("PLINT_STRICT")
    (tmp_path / "launch.sh").write_text(BAD)
    (result,) = check_paths([tmp_path / "launch.sh"], isolated=True)
    assert "PL303" in {d.code for d in result.diagnostics}
    assert "internal error in rule PL999" in capsys.readouterr().err


def test_the_same_finding_from_two_layouts_is_reported_once(tmp_path):
    text = (
        'ARGS=(--tensor-model-parallel-size 2 --bf16)\nif [ "$X" = 1 ]; then\n'
        '  torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}"\nelse\n'
        '  torchrun --nproc_per_node 4 pretrain_gpt.py "${ARGS[@]}"\nfi\n'
    )
    (tmp_path / "launch.sh").write_text(text)
    (result,) = check_paths([tmp_path / "launch.sh"], isolated=True)
    assert len(result.layouts) == 2  # both launches read the shared array: one PL303 at its tp value
    assert [(d.line, d.col) for d in result.diagnostics if d.code == "PL303"] == [(1, 36)]
    assert [d.line for d in result.diagnostics if d.code == "PL601"] == [3, 5]


def test_selection_needs_known_command_line_selectors():
    with pytest.raises(ValueError, match="--ignore: unknown rule selector 'PL7'"):
        _ = Engine(CheckOptions(ignore=["PL7"])).rules


def test_settings_for_honours_isolated_and_config_file(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".plint.toml").write_text('ignore = ["PL303"]\n')
    other = tmp_path / "other.toml"
    other.write_text('ignore = ["PL601"]\n')
    launch = tmp_path / "launch.sh"
    assert Engine(CheckOptions()).settings_for(launch).ignore == ["PL303"]
    assert Engine(CheckOptions(isolated=True)).settings_for(launch).path is None
    assert Engine(CheckOptions(config_file=other)).settings_for(launch).path == Path(other)


def test_rank_env_missing_is_quiet_for_srun_with_a_pyxis_container(tmp_path):
    """PL209: srun starting python per task needs RANK/WORLD_SIZE from somewhere; with a pyxis container,
    enroot's 50-slurm-pytorch hook exports them, as NVIDIA's srun-per-task recipes rely on."""
    from plint.rules.topology import SRUN_PYTHON

    bare = SRUN_PYTHON.format(prefix="", wrap="", end="")
    pyxis = SRUN_PYTHON.format(prefix="", wrap="--container-image nvcr.io/nvidia/pytorch:24.05-py3 ", end="")
    found = {}
    for name, text in (("bare.sh", bare), ("pyxis.sh", pyxis)):
        (tmp_path / name).write_text(text)
        (result,) = check_paths([tmp_path / name])
        found[name] = [d.code for d in result.diagnostics if d.code == "PL209"]
    assert found == {"bare.sh": ["PL209"], "pyxis.sh": []}
