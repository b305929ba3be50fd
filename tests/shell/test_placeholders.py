"""Template slots (`<PATH TO DATASET>`) are one unfilled value each, never redirections."""

import pytest

from plint.reading.shell.placeholders import is_placeholder, is_slot, slot_problems, slot_spans


def words_of(result, name):
    cmd = next(c for c in result.commands if c.name == name)
    return cmd.words


@pytest.mark.parametrize(
    "text, slots",
    [
        (b"X=<Specify path>\n", [b"<Specify path>"]),
        (b"cmd --data-path <PATH TO DATASET> --x 1\n", [b"<PATH TO DATASET>"]),
        (b"cmd --vocab <Specify path to file>/gpt2-vocab.json\n", [b"<Specify path to file>"]),
        (b'C="a --dir <TENSORBOARD DIRECTORY> b"\n', [b"<TENSORBOARD DIRECTORY>"]),
        (b"cmd <in.txt >out.txt\n", []),  # real redirections: a blank before `>`
        (b"cat <<EOF\nx\nEOF\n", []),
        (b"diff <(a) <(b)\n", []),
        (b"[[ $a < $b ]] && [[ $c > $d ]]\n", []),
        (b"X=$(<file)\n", []),
        (b"(( i<n && n>0 ))\n", []),
        (b'sed -i "s/<TP>/$TP/g" ds.json\n', []),  # a template's marker, looked for by sed
        (b"cat tmpl | sed 's|<DATA>|/d|' > out\n", []),
        (b'T="--special-tokens <image> <img> </img>"\n', []),  # tokens, not slots
        (b'W="<some dir>"\nI=<path_to_image>\n', [b"<some dir>", b"<path_to_image>"]),
    ],
)
def test_slot_spans(text, slots):
    assert [text[s:e] for s, e in slot_spans(text)] == slots


def test_slot_in_a_command_does_not_swallow_the_next_flag(run):
    r = run("torchrun --nproc_per_node 8 pretrain_gpt.py --data-path <PATH TO DATASET> --micro-batch-size 2\n")
    words = words_of(r, "torchrun")
    assert [w.display() for w in words][-2:] == ["--micro-batch-size", "2"]
    slot = words[-3].pieces[0]
    assert is_slot(slot) and slot.span.col == 57 and "<PATH TO DATASET>" in slot.reason


def test_slot_in_an_eval_string_stays_one_value(run):
    r = run('CMD="torchrun x.py --tensorboard-dir <TENSORBOARD DIRECTORY> --tp 2"\neval $CMD\n')
    words = words_of(r, "torchrun")
    assert [w.text for w in words] == ["torchrun", "x.py", "--tensorboard-dir", None, "--tp", "2"]
    assert is_slot(words[3].pieces[0]) and words[3].pieces[0].span.line == 1


def test_assignment_slot_is_the_same_wherever_it_appears(run):
    a = run("CKPT=<Specify path>\ntorchrun x.py --save $CKPT --tp 2\n")
    b = run("GPUS=8\nCKPT=<Specify path>\ntorchrun x.py --save $CKPT --tp 2\n")
    for r in (a, b):
        assert [w.text for w in words_of(r, "torchrun")] == ["torchrun", "x.py", "--save", None, "--tp", "2"]
        assert "<Specify path>" in r.variables["CKPT"].value[0].reason


def test_slot_problems_one_per_slot(run):
    r = run("torchrun x.py --data <D> --load <D> --save <S>\n")
    problems = slot_problems(words_of(r, "torchrun"))
    assert len(problems) == 3 and all(p.kind == "unresolved" for p in problems)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("your_own_num_nodes", True),
        ("YOUR_NODES", True),
        ("<N>", True),
        ("CHANGE_ME", True),
        ("2", False),
        ("gpu", False),
        ("yourself", False),
    ],
)
def test_is_placeholder(text, expected):
    assert is_placeholder(text) is expected


def test_a_file_bash_refuses_only_for_its_slots_has_one_unfilled_value_per_slot(run):
    # `export X=<...>` fails bash -n (a redirection into a newline); the slot is a value to fill in (issue 12)
    r = run('export SLURM_PARTITION=<slurm partition>\nexport DATA=<path to data>\nNAME="<run name>"\n')
    assert [p.kind for p in r.problems] == ["unresolved"] * 3
    assert [p.span.line for p in r.problems] == [1, 2, 3]
    assert all(p.message.startswith("<") and "unfilled template slot" in p.message for p in r.problems)


def test_a_real_syntax_error_beside_a_slot_stays_a_syntax_error(run):
    r = run("X=<Specify path>\nif true; then\n  echo $X\n")
    assert "syntax" in [p.kind for p in r.problems]


def test_a_slot_used_by_a_launch_is_named_once(tmp_path):
    from plint.checking.check import check_paths

    config = tmp_path / "CONFIG.sh"
    config.write_text("#!/bin/bash\nexport DATA=<path to data>\n")
    launch = tmp_path / "launch.sh"
    launch.write_text(
        "#!/bin/bash\nsource CONFIG.sh\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --data-path $DATA --micro-batch-size 1\n"
    )
    results = check_paths([launch, config])
    slots = [
        (r.path, d.path, d.line)
        for r in results
        for d in r.diagnostics
        if d.code == "PL002" and "unfilled template slot" in d.message
    ]
    assert [s[1:] for s in slots] == [(str(config), 2)], slots
    assert not [d for r in results for d in r.diagnostics if d.code == "PL001"]
