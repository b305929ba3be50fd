"""benchmarks/kernels_vs_model.py: plint's kernel model against a measured kernel table, worked by hand."""

from __future__ import annotations

import json

from tests.test_corpus_script import _load

bench = _load("kernels_vs_model")


def test_a_gemm_plint_models_exactly_reads_zero_error_and_a_slower_one_its_shortfall(tmp_path, capsys):
    # 4096^3 on H100 SXM: efficiency 0.76 / (1 + 3 x 256/4096) = 0.64, time 2 x 4096^3 / (989e12 x 0.64)
    predicted = 2 * 4096**3 / (989e12 * 0.76 / (1 + 3 * 256 / 4096))
    assert abs(predicted - 217.13e-6) < 0.01e-6
    rows = [
        {"kind": "gemm", "m": 4096, "n": 4096, "k": 4096, "s": predicted},
        {"kind": "moe-gemm", "per_expert": 4096, "n": 4096, "k": 4096, "local": 2, "s_grouped": 4 * predicted},
    ]
    table = tmp_path / "kernels.jsonl"
    table.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert bench.main([str(table)]) == 0
    out = capsys.readouterr().out
    gemm = next(line for line in out.splitlines() if line.startswith("gemm "))
    grouped = next(line for line in out.splitlines() if line.startswith("moe-gemm, grouped"))
    assert "0.0%" in gemm
    # two local experts of the same GEMM measured at twice plint's time each: plint 50% short
    assert "-50.0%" in grouped


def test_a_missing_table_is_a_usage_error(tmp_path):
    assert bench.main([str(tmp_path / "none.jsonl")]) == 2
