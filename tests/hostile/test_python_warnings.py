"""Python files plint reads as text (a repository's megatron/training/arguments.py, an entry script that builds a
DeepSpeed config) are parsed without their compile warnings: an invalid escape in them warns with the file's own
line, which Python prints on stderr unescaped, and a CI log reads `##[` in it as a workflow command."""

import os
import subprocess
import sys
from pathlib import Path

PLINT = Path(sys.executable).with_name("plint")
LAUNCH = (
    "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
    "--num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
    "--global-batch-size 8 --bf16\n"
)


def test_a_parser_with_an_invalid_escape_prints_nothing_of_itself(tmp_path):
    (tmp_path / ".git").mkdir()  # the tree the parser in force is looked for in
    parser = tmp_path / "megatron" / "training" / "arguments.py"
    parser.parent.mkdir(parents=True)
    parser.write_text('def add(p):\n    p.add_argument("--x", help="##[error]forged \\d")\n')
    (tmp_path / "launch.sh").write_text(LAUNCH)
    env = {**os.environ, "PYTHONWARNINGS": "always"}  # as a CI image may set it: every warning shown
    done = subprocess.run(
        [str(PLINT), "check", "-q", "launch.sh"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode in (0, 1), done.stderr
    assert "forged" not in done.stderr and "Warning" not in done.stderr, done.stderr
