"""Model architectures by name and from a config.json (plint.catalog.models)."""

import subprocess
import sys
from pathlib import Path

import pytest

from plint.catalog.models import lookup_model, shape_from_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "name, entry",
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("meta-llama/Meta-Llama-3-8B", "llama-3.1-8b"),  # Llama 3 keeps the 3.1 shape
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.1-70b"),
        ("/models/Mistral-7B-v0.1", "mistral-7b-v0.1"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3"),
        ("/data/ckpt/llava-v1.5-7b", "llama-2-7b"),  # a fine-tune that keeps its base's name
        ("vicuna-7b", "llama-7b"),
        ("lmsys/vicuna-7b-v1.5", "llama-2-7b"),  # the longer name wins over vicuna-7b
        ("facebook/opt-1.3b", "opt-1.3b"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("gpt2-xl", "gpt2-xl"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("./checkpoints/llama_2_7b_chat_sft", "llama-2-7b"),
        ("allenai/tulu-2-7b", "llama-2-7b"),  # Tulu 2: Llama 2 fine-tuned
        ("allenai/tulu-2-dpo-70b", "llama-2-70b"),
        ("LLM360/Amber", "amber-7b"),
        ("LLM360/AmberChat", "amber-7b"),
        ("THUDM/chatglm-6b", "chatglm-6b"),
        ("THUDM/chatglm2-6b", "chatglm3-6b"),  # ChatGLM2 and 3 share a shape, not the first version's
    ],
)
def test_names_find_their_architecture(name, entry):
    found = lookup_model(name)
    assert found is not None and found.name == entry


@pytest.mark.parametrize("name", ["my-org/secret-model", "llama-2-70", "opt-1.3", "gpt-4"])
def test_unknown_names_find_nothing(name):
    assert lookup_model(name) is None


@pytest.mark.parametrize(
    "path, entry, read_as",
    [
        ("../hf_llama2_models/7B", "llama-2-7b", "llama2-7b"),  # open-instruct's finetune_with_accelerate.sh
        ("/nfs/hf_llama_models/13B", "llama-13b", "llama-13b"),  # convert_llama_weights_to_hf.py's --output_dir
    ],
)
def test_a_size_folder_is_read_with_its_family_folder(path, entry, read_as):
    found = lookup_model(path)
    assert found is not None and (found.name, found.read_as) == (entry, read_as)


@pytest.mark.parametrize("path", ["./checkpoints/7B", "models/13b", "7B", "../hf_models/7B"])
def test_a_size_folder_without_a_family_finds_nothing(path):
    assert lookup_model(path) is None


def test_sizes_are_not_read_inside_longer_sizes():
    assert lookup_model("meta-llama/Llama-2-70b-hf").name == "llama-2-70b"  # not 7b
    assert lookup_model("Qwen/Qwen3-14B").name == "qwen3-14b"  # not 4b


def test_llama_style_config_json():
    shape = shape_from_config(
        {
            "model_type": "llama",
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "tie_word_embeddings": False,
        }
    )
    assert shape["num_query_groups"] == 8 and shape["swiglu"] and shape["normalization"] == "RMSNorm"
    assert shape["add_bias_linear"] is False and shape["position_embedding"] == "rope"
    assert shape["untie_embeddings"] is True and shape["hidden_dropout"] == 0.0


def test_gpt2_style_config_json_takes_the_class_defaults():
    # GPT2Config: n_inner None is 4h, embeddings tied, resid_pdrop 0.1; learned positions
    shape = shape_from_config(
        {"model_type": "gpt2", "n_embd": 1600, "n_head": 25, "n_layer": 48, "vocab_size": 50257, "n_positions": 1024}
    )
    assert (shape["ffn_hidden_size"], shape["untie_embeddings"], shape["swiglu"]) == (6400, False, False)
    assert shape["position_embedding"] == "learned_absolute" and shape["hidden_dropout"] == 0.1


def test_moe_config_json():
    shape = shape_from_config(
        {
            "model_type": "qwen3_moe",
            "hidden_size": 2048,
            "num_hidden_layers": 48,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "intermediate_size": 6144,
            "moe_intermediate_size": 768,
            "num_experts": 128,
            "num_experts_per_tok": 8,
            "vocab_size": 151936,
            "head_dim": 128,
        }
    )
    assert (shape["num_experts"], shape["moe_topk"], shape["moe_ffn_hidden_size"]) == (128, 8, 768)
    assert shape["kv_channels"] == 128  # 32 heads x 128 != 2048


def test_a_config_without_a_shape_gives_none():
    assert shape_from_config({"model_type": "llama", "vocab_size": 32000}) is None


def test_catalog_is_built_from_its_facts():
    """schemas/model_catalog.json is what scripts/build_model_catalog.py makes of scripts/model_facts/."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_model_catalog.py"), "--check"], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr


def test_catalog_parameters_match_the_published_counts():
    """The cost model's count of a catalog shape is the model's own parameter count."""
    from plint.cost import ModelInput, count_params

    def params(name: str) -> int:
        s = lookup_model(name).shape
        inp = ModelInput(
            num_layers=s["num_layers"],
            hidden_size=s["hidden_size"],
            num_attention_heads=s["num_attention_heads"],
            seq_length=2048,
            vocab_size=s["vocab_size"],
            ffn_hidden_size=s["ffn_hidden_size"],
            num_query_groups=s["num_query_groups"],
            swiglu=s["swiglu"],
            untie_embeddings=s["untie_embeddings"],
            normalization=s["normalization"],
            add_bias_linear=s["add_bias_linear"],
            make_vocab_size_divisible_by=1,
        )
        return count_params(inp).total

    assert params("mistralai/Mistral-7B-v0.1") == 7_241_732_096  # the safetensors' total
    assert params("meta-llama/Llama-3.1-8B") == 8_030_261_248
    assert params("LLM360/Amber") == 6_738_415_616  # LLaMA-7B's count: the README's 6.7B
    # ChatGLM-6B (first version): 28 x (LayerNorms, biased qkv and dense, GELU MLP 4096 -> 16384 -> 4096) and
    # the embedding once (lm_head tied): the module tree's count, the published 6.2B
    assert params("THUDM/chatglm-6b") == 6_173_286_400
