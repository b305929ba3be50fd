"""The fuzzer's structure-aware mutations of real launch files and its checks (issue 30 item 5): the kinds
of mutation it makes, that each check sees what it looks for, and a small seeded slice of those inputs.
The 10,000-input run is in the README ("Budgets and fuzzing")."""

import pytest

from fuzz_loader import check_in_worker, load_fuzz

fuzz = load_fuzz()
LAUNCH = b"torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 4\n"


def test_structured_inputs_cover_every_mutation_and_both_fixture_sets():
    made = list(fuzz.cases(seed=0, count=200, structured=1.0))
    hows = " ".join(c.how for c in made)
    for kind in ("nest(", "long(", "quotes(", "heredoc(", "number(", "escape(", "symlink(", "markup("):
        assert kind in hows
    assert any(c.links for c in made) and any(c.also for c in made)
    names = {n for folder in fuzz.load_fixtures() for n in folder}
    assert "ds.json" in names and "job.slurm" in names  # fixtures/rules/* and fixtures/launches/*


def test_structured_inputs_take_their_own_share():
    """Structure-aware inputs take their own share of a seed; the others are made as with none."""
    old = {c.name: c.files for c in fuzz.cases(seed=3, count=40, structured=0.0)}
    mixed = list(fuzz.cases(seed=3, count=40))
    assert any(c.how.startswith("structure:") for c in mixed)
    assert all(c.files == old[c.name] for c in mixed if not c.how.startswith("structure:"))


@pytest.mark.parametrize(
    "text",
    [
        "::error::plintfuzz",  # a command of the file's text at a line's start
        "  ::add-mask::plintfuzz",
        "::error file=::error::plintfuzz.sh,line=1::x",  # a property that was not escaped
        "plint: x ##[stop-commands]plintfuzz",  # the runner reads ##[ anywhere
        "a\r::warning::plintfuzz",
    ],
)
def test_the_workflow_check_sees_an_unescaped_command(text):
    assert fuzz.workflow_problems(text)


def test_the_workflow_check_lets_an_escaped_annotation_through():
    line = "::error file=%3A%3Aerror%3A%3Aplintfuzz.sh,line=1,col=2::PL501 unknown flag --::error::plintfuzz%0A"
    assert fuzz.workflow_problems(line + "\n::notice title=plint::3 files checked") == []


@pytest.mark.parametrize("text", ["see <img src=x onerror=1>", "by @plintfuzzer", "fixes #4242.", "(#4242)"])
def test_the_markup_check_sees_raw_markup(text):
    assert fuzz.markup_problems(text)


@pytest.mark.parametrize(
    "text",
    [
        "`@plintfuzzer <img src=x onerror=1> #4242`",
        "&lt;img src=x&gt;",
        "```\n@plintfuzzer #4242\n```",
        "a\\#4242 b",
        "x#4242",
    ],
)
def test_the_markup_check_lets_escaped_markup_through(text):
    assert fuzz.markup_problems(text) == []


def test_the_canary_check_finds_the_secret_in_an_output(tmp_path):
    """The harness itself: a secret that is inside the root (so plint may print it) is seen in the output."""
    (tmp_path / "launch.sh").write_text(f"torchrun --nproc_per_node 8 pretrain_gpt.py --{fuzz.CANARY} 1\n")
    answer = check_in_worker(tmp_path, "launch.sh")
    assert any(p.startswith("outside read") for p in answer["problems"])
    assert answer["seconds"] > 0 and answer["maxrss_mb"] > 0


def test_a_symlink_case_is_written_saved_and_replayed(tmp_path):
    case = fuzz.Case("case-1", {"launch.sh": LAUNCH}, "launch.sh", "test", {"gone.sh": "missing.sh"}, ("gone.sh",))
    folder = fuzz.save(tmp_path, case, ["a problem"])
    assert (folder / "gone.sh").is_symlink()
    again = fuzz.load_saved(folder)
    assert (again.files, again.entry, again.links, again.also) == (case.files, case.entry, case.links, case.also)


def test_a_structured_slice_of_the_fuzzer_finds_nothing(tmp_path):
    summary = fuzz.fuzz(seed=0, count=12, out=tmp_path / "reproducers", structured=1.0)
    assert summary.inputs == 12
    assert summary.failures == [], "\n\n".join(f"{name}: {problems[0][:3000]}" for name, problems in summary.failures)
