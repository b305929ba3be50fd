"""A small deterministic slice of benchmarks/fuzz.py: 150 mutated and generated inputs, each checked in
every format and with fix --diff in a worker process under the fuzzer's time and memory limits. The
10,000-input run is `python benchmarks/fuzz.py --count 10000 --seed 1` (docs/safety.md, "Budgets and fuzzing")."""

from pathlib import Path

from fuzz_loader import load_fuzz

fuzz = load_fuzz()


def test_the_same_seed_gives_the_same_inputs():
    first = [(c.name, c.entry, c.files) for c in fuzz.cases(seed=7, count=20)]
    again = [(c.name, c.entry, c.files) for c in fuzz.cases(seed=7, count=20)]
    other = [(c.name, c.entry, c.files) for c in fuzz.cases(seed=8, count=20)]
    assert first == again and first != other


def test_inputs_cover_every_kind_of_mutation():
    hows = " ".join(c.how for c in fuzz.cases(seed=0, count=150, structured=0.0))
    for kind in ("generated", "splice", "bytes:", "lines:", "tokens:", "json:"):
        assert kind in hows


def test_a_slice_of_the_fuzzer_finds_nothing(tmp_path):
    summary = fuzz.fuzz(
        seed=0, count=150, out=tmp_path / "reproducers", structured=0.0
    )  # tests/fuzz/test_fuzz_structure.py has the rest
    assert summary.inputs == 150
    assert summary.failures == [], "\n\n".join(f"{name}: {problems[0][:3000]}" for name, problems in summary.failures)
    assert summary.max_output < fuzz.MAX_OUTPUT


def test_a_failure_is_saved_with_what_failed(tmp_path):
    """The harness itself: an invariant hook that always objects makes every input a saved reproducer."""
    case = next(iter(fuzz.cases(seed=0, count=1)))
    hook = f"{Path(__file__).with_name('fuzz_hooks.py')}:always_objects"
    summary = fuzz.fuzz(out=tmp_path, hooks=(hook,), replay=[case])
    assert summary.other == 1 and summary.failures[0][0] == case.name
    saved = tmp_path / case.name
    assert (saved / case.entry).read_bytes() == case.files[case.entry]
    assert "objects to everything" in (saved / "FAILURE.txt").read_text()
