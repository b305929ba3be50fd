"""count_params against the parameters of a real megatron-core GPTModel.

The model is built on PyTorch's meta device (no memory, no GPU) from megatron-core's own
Transformer-Engine-free layer specs, with a one-process gloo group so that parallel_state can be
initialised. Needs the `dryrun` extra (torch + megatron-core); skipped with the reason otherwise.

Megatron pads the vocabulary in the training script (vocab_utils), not in GPTModel, so each model
here is built with plint's padded_vocab(V, tp=1); the padding rule itself is pinned by hand in
test_params_flops.py. Tied embeddings share one tensor between the embedding and the output layer:
named_parameters() lists it once, as count_params counts it. The second half starts one gloo process
per rank (tp, pp, ep > 1) and compares what each rank holds with memory.stage_params.

To run it (megatron-core 0.16.1 builds GPTModel without Transformer Engine or Apex on a CPU torch):
    python -m venv --system-site-packages /tmp/mcvenv   # reuses the system torch (CPU build)
    /tmp/mcvenv/bin/pip install megatron-core
    /tmp/mcvenv/bin/python -m pytest tests/cost/test_megatron_parity.py
"""

from __future__ import annotations

import importlib.util
import os
import socket

import pytest
from plint.cost import ModelInput, count_params, padded_vocab

if importlib.util.find_spec("megatron") is None:  # decided before importing torch (seconds)
    pytest.skip(
        "megatron-core is not installed; install the dryrun extra (torch + megatron-core) to "
        "compare count_params with a real GPTModel",
        allow_module_level=True,
    )
torch = pytest.importorskip("torch", reason="the dryrun extra (torch) is not installed")
try:
    import megatron.core  # noqa: F401
    from megatron.core import parallel_state
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.transformer.transformer_config import TransformerConfig
except (ImportError, AttributeError, RuntimeError, OSError) as exc:  # absent, or broken on this torch
    pytest.skip(
        f"megatron-core is not importable ({type(exc).__name__}: {exc}); "
        "install the dryrun extra to compare with a real GPTModel",
        allow_module_level=True,
    )

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def one_rank_group():
    import torch.distributed as dist

    created = False
    if not dist.is_initialized():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=0, world_size=1)
        created = True
    parallel_state.initialize_model_parallel(1, 1)
    yield
    parallel_state.destroy_model_parallel()
    if created:
        dist.destroy_process_group()


def _megatron_count(inp: ModelInput, qk_layernorm: bool = False) -> int:
    import torch.nn.functional as F

    extra = {}
    if inp.num_experts:
        freq = inp.moe_layer_freq
        extra.update(
            num_moe_experts=inp.num_experts,
            moe_router_topk=inp.moe_topk,
            moe_ffn_hidden_size=inp.moe_ffn_hidden_size or inp.ffn_hidden_size,
            moe_shared_expert_intermediate_size=inp.moe_shared_expert_size or None,
            moe_layer_freq=list(freq) if isinstance(freq, tuple) else freq,
            moe_grouped_gemm=False,
        )
    config = TransformerConfig(
        num_layers=inp.num_layers,
        hidden_size=inp.hidden_size,
        num_attention_heads=inp.num_attention_heads,
        num_query_groups=inp.num_query_groups,
        kv_channels=inp.kv_channels,
        ffn_hidden_size=inp.ffn_hidden_size or 4 * inp.hidden_size,
        gated_linear_unit=inp.swiglu,
        activation_func=F.silu if inp.swiglu else F.gelu,
        normalization=inp.normalization,
        add_bias_linear=inp.add_bias_linear,
        add_qkv_bias=inp.add_qkv_bias,
        qk_layernorm=qk_layernorm,
        use_cpu_initialization=True,
        **extra,
    )
    position = inp.options.position_embedding or "learned_absolute"
    spec = get_gpt_decoder_block_spec(config, use_transformer_engine=False, normalization=inp.normalization)
    with torch.device("meta"):
        model = GPTModel(
            config=config,
            transformer_layer_spec=spec,
            vocab_size=padded_vocab(inp.vocab_size, 1, inp.make_vocab_size_divisible_by),
            max_sequence_length=inp.max_position_embeddings or inp.seq_length,
            share_embeddings_and_output_weights=not inp.untie_embeddings,
            position_embedding_type=position,
        )
    return sum(p.numel() for p in model.parameters())


def _rope(**kw):
    from plint.cost.model_input import Options

    return ModelInput(options=Options(position_embedding="rope"), **kw)


GPT_LIKE = ModelInput(
    num_layers=3, hidden_size=64, num_attention_heads=4, seq_length=128, vocab_size=1000, max_position_embeddings=256
)
LLAMA_LIKE = _rope(
    num_layers=2,
    hidden_size=96,
    num_attention_heads=6,
    num_query_groups=2,
    seq_length=64,
    vocab_size=700,
    ffn_hidden_size=256,
    swiglu=True,
    untie_embeddings=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    max_position_embeddings=64,
)
QWEN_LIKE = _rope(
    num_layers=2,
    hidden_size=64,
    num_attention_heads=8,
    num_query_groups=4,
    kv_channels=16,
    seq_length=64,
    vocab_size=300,
    ffn_hidden_size=160,
    swiglu=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    add_qkv_bias=True,
    max_position_embeddings=64,
)
MOE_LIKE = _rope(
    num_layers=4,
    hidden_size=64,
    num_attention_heads=4,
    num_query_groups=2,
    seq_length=64,
    vocab_size=500,
    ffn_hidden_size=192,
    swiglu=True,
    untie_embeddings=True,
    normalization="RMSNorm",
    add_bias_linear=False,
    num_experts=8,
    moe_topk=2,
    moe_ffn_hidden_size=48,
    moe_shared_expert_size=96,
    moe_layer_freq=2,
    max_position_embeddings=64,
)
MOE_BIAS_LAYERNORM = ModelInput(
    num_layers=2,
    hidden_size=32,
    num_attention_heads=4,
    seq_length=32,
    vocab_size=200,
    ffn_hidden_size=64,
    num_experts=4,
    moe_topk=2,
    moe_layer_freq=(0, 1),
    max_position_embeddings=32,
)

SHAPES = {
    "gpt_layernorm_bias_learned_tied": GPT_LIKE,
    "llama_gqa_swiglu_rmsnorm_untied": LLAMA_LIKE,
    "qwen_qkv_bias_kv_channels": QWEN_LIKE,
    "moe_shared_expert_layer_freq": MOE_LIKE,
    "moe_with_biases_layernorm_pattern": MOE_BIAS_LAYERNORM,
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_count_params_equals_megatron_core_gptmodel(one_rank_group, name):
    inp = SHAPES[name]
    assert count_params(inp).total == _megatron_count(inp)


@pytest.mark.parametrize("name", ["gpt_layernorm_bias_learned_tied", "llama_gqa_swiglu_rmsnorm_untied"])
def test_qk_layernorm_adds_two_head_sized_norms_per_layer(one_rank_group, name):
    inp = SHAPES[name]
    assert count_params(inp, qk_layernorm=True).total == _megatron_count(inp, qk_layernorm=True)


# ---- what one GPU holds: a real tp/pp/ep layout, one gloo process per rank ----

_RANK_SCRIPT = r"""
import json, os, sys, warnings
warnings.filterwarnings("ignore")
import torch, torch.distributed as dist
import torch.nn.functional as F
spec_in = json.loads(sys.argv[1])
dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
from megatron.core import parallel_state as ps
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec
from megatron.core.models.gpt.gpt_model import GPTModel
from megatron.core.transformer.transformer_config import TransformerConfig
sizes = spec_in["sizes"]
ps.initialize_model_parallel(sizes["tp"], sizes["pp"], expert_model_parallel_size=sizes["ep"])
shape = dict(spec_in["config"])
if shape.pop("swiglu"):
    shape.update(gated_linear_unit=True, activation_func=F.silu)
config = TransformerConfig(tensor_model_parallel_size=sizes["tp"], pipeline_model_parallel_size=sizes["pp"],
                           expert_model_parallel_size=sizes["ep"], use_cpu_initialization=True,
                           perform_initialization=False, pipeline_dtype=torch.float32, **shape)
layers = get_gpt_decoder_block_spec(config, use_transformer_engine=False, normalization=shape["normalization"])
with torch.device("meta"):
    model = GPTModel(config=config, transformer_layer_spec=layers, vocab_size=spec_in["vocab"],
                     max_sequence_length=spec_in["max_seq"], pre_process=ps.is_pipeline_first_stage(),
                     post_process=ps.is_pipeline_last_stage(), share_embeddings_and_output_weights=spec_in["tied"],
                     position_embedding_type=spec_in["position"])
print(json.dumps({"pp_rank": ps.get_pipeline_model_parallel_rank(),
                  "params": sum(p.numel() for p in model.parameters())}))
ps.destroy_model_parallel()
dist.destroy_process_group()
"""


def _per_rank_counts(inp: ModelInput, tmp_path) -> dict[int, set[int]]:
    """{pipeline rank: the parameter counts its ranks hold}, from tp*pp*ep gloo processes."""
    import json
    import subprocess
    import sys

    config = {
        "num_layers": inp.num_layers,
        "hidden_size": inp.hidden_size,
        "num_attention_heads": inp.num_attention_heads,
        "num_query_groups": inp.num_query_groups,
        "ffn_hidden_size": inp.ffn_hidden_size or 4 * inp.hidden_size,
        "swiglu": inp.swiglu,
        "normalization": inp.normalization,
        "add_bias_linear": inp.add_bias_linear,
    }
    if inp.num_experts:
        config.update(
            num_moe_experts=inp.num_experts,
            moe_router_topk=inp.moe_topk,
            moe_ffn_hidden_size=inp.moe_ffn_hidden_size,
            moe_shared_expert_intermediate_size=inp.moe_shared_expert_size or None,
            moe_grouped_gemm=False,
        )
    spec = {
        "sizes": {"tp": inp.tp, "pp": inp.pp, "ep": inp.ep},
        "config": config,
        "vocab": padded_vocab(inp.vocab_size, inp.tp, inp.make_vocab_size_divisible_by),
        "max_seq": inp.max_position_embeddings or inp.seq_length,
        "tied": not inp.untie_embeddings,
        "position": inp.options.position_embedding or "learned_absolute",
    }
    script = tmp_path / "rank.py"
    script.write_text(_RANK_SCRIPT)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    world = inp.world_size
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)),
        )
        for r in range(world)
    ]
    counts: dict[int, set[int]] = {}
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        row = json.loads(out.strip().splitlines()[-1])
        counts.setdefault(row["pp_rank"], set()).add(row["params"])
    return counts


def _layout(**kw):
    from plint.cost.model_input import Options

    position = kw.pop("position", None)
    return ModelInput(seq_length=128, options=Options(position_embedding=position), nnodes=1, **kw)


# tp=2 with tied embeddings and biases (row-parallel biases and LayerNorms whole on each rank, the
# vocabulary padded to 128*2); tp=2 x pp=2 untied (tied ones with pp > 1 need CUDA to sync the two
# copies at build time); ep=2 (routed experts split, router and shared expert whole). MoE with tp > 1
# needs sequence parallel, which megatron-core's torch norms refuse, so etp is not exercised here.
LAYOUTS = {
    "tp2_tied_biases_learned": _layout(
        num_layers=4,
        hidden_size=64,
        num_attention_heads=4,
        vocab_size=1000,
        max_position_embeddings=128,
        tp=2,
        gpus_per_node=2,
    ),
    "tp2_pp2_untied_gqa_swiglu": _layout(
        num_layers=4,
        hidden_size=64,
        num_attention_heads=4,
        num_query_groups=2,
        ffn_hidden_size=160,
        swiglu=True,
        normalization="RMSNorm",
        add_bias_linear=False,
        vocab_size=500,
        untie_embeddings=True,
        position="rope",
        tp=2,
        pp=2,
        gpus_per_node=4,
    ),
    "ep2_moe_shared_expert": _layout(
        num_layers=2,
        hidden_size=64,
        num_attention_heads=4,
        ffn_hidden_size=160,
        swiglu=True,
        normalization="RMSNorm",
        add_bias_linear=False,
        vocab_size=256,
        untie_embeddings=True,
        position="rope",
        num_experts=4,
        moe_topk=2,
        moe_ffn_hidden_size=48,
        moe_shared_expert_size=96,
        ep=2,
        gpus_per_node=2,
    ),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_stage_params_equal_what_each_megatron_rank_holds(name, tmp_path):
    from plint.cost.memory import stage_params

    inp = LAYOUTS[name]
    counts = _per_rank_counts(inp, tmp_path)
    c = count_params(inp)
    for pp_rank, held in counts.items():
        dense, experts, _ = stage_params(inp, c, last=pp_rank == inp.pp - 1 and inp.pp > 1)
        assert held == {dense + experts}, (pp_rank, held, dense, experts)
