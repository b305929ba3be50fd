"""Model architectures by name (schemas/model_catalog.json) and the shape a Hugging Face `config.json` gives.

The catalog is built by scripts/build_model_catalog.py from scripts/model_facts/*.yaml: each holds the keys of one
model's public config.json and where they were read. `shape_from_config` turns such keys (or a config.json found in
the checked tree) into the layout's model fields; what a config leaves out is the default of that model type's
configuration class in transformers (`transformers/models/<type>/configuration_<type>.py`), and what its modelling
code builds (gated MLP, RMSNorm, biases, position embedding) is read from `modeling_<type>.py`.

`lookup_model(name)` finds an entry for a hub name, a local path or a fine-tune that keeps its base's name
(`/models/Mistral-7B-v0.1`, `lmsys/vicuna-7b-v1.5`, `.../llava-v1.5-7b`): the longest name pattern of any entry
found in the name wins, so `vicuna-7b-v1.5` (Llama 2) beats `vicuna-7b` (Llama 1).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from plint.record import record

# Modelling code per model_type (transformers' modeling_<type>.py, and the remote code of ChatGLM, Baichuan,
# InternLM and Qwen-1): a gated MLP (two input projections: SwiGLU, or GeGLU for Gemma), RMSNorm, linear biases
_GATED = frozenset(
    {
        "llama",
        "mistral",
        "mixtral",
        "qwen",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "gemma",
        "gemma2",
        "gemma3_text",
        "internlm",
        "internlm2",
        "baichuan",
        "chatglm",
        "deepseek",
        "deepseek_v2",
        "deepseek_v3",
        "olmo",
        "olmo2",
        "phi3",
        "cohere",
        "minicpm",
        "yi",
        "stablelm",
    }
)
# T5LayerNorm scales without a mean or a bias; OLMo-1's norm has no weights; StableLM keeps nn.LayerNorm
_RMSNORM = (_GATED - {"olmo", "stablelm", "cohere"}) | {"t5"}
_LEARNED_POSITIONS = frozenset({"gpt2", "opt", "gpt_bigcode"})  # an nn.Embedding of max positions
_ALIBI = frozenset({"bloom", "mpt"})
_BIASED = frozenset(
    {"gpt2", "opt", "bloom", "gpt_neox", "phi", "gpt_bigcode", "starcoder2", "chatglm-6b-v1"}
)  # every linear
_QKV_BIAS = frozenset({"qwen", "qwen2", "qwen2_moe", "chatglm", "internlm"})  # biases on q, k, v only
# configuration-class defaults of tie_word_embeddings where a config leaves it out (PretrainedConfig: True)
_UNTIED_BY_DEFAULT = frozenset(
    {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "gpt_neox",
        "baichuan",
        "internlm",
        "internlm2",
        "chatglm",
        "deepseek",
        "deepseek_v2",
        "deepseek_v3",
        "phi3",
        "phi",
        "olmo2",
        "qwen",
    }
)
# residual dropout where a config leaves it out (GPT2Config resid_pdrop, OPTConfig dropout: 0.1); the rest 0
_DROPOUT_DEFAULT = {"gpt2": 0.1, "opt": 0.1, "t5": 0.1}
_ARCHITECTURE_TYPES = {
    "LlamaForCausalLM": "llama",
    "LlavaLlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "OPTForCausalLM": "opt",
    "GPT2LMHeadModel": "gpt2",
    "BloomForCausalLM": "bloom",
    "GPTNeoXForCausalLM": "gpt_neox",
    "T5ForConditionalGeneration": "t5",
    "T5WithLMHeadModel": "t5",
    "BaichuanForCausalLM": "baichuan",
    "QWenLMHeadModel": "qwen",
    "RWForCausalLM": "falcon",
    "FalconForCausalLM": "falcon",
    "MixFormerSequentialForCausalLM": "phi",
}


def _first(config: dict, *keys: str) -> Any:
    return next((config[k] for k in keys if config.get(k) is not None), None)


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) and x > 0 else None


def model_type(config: dict) -> str | None:
    kind = config.get("model_type")
    if kind == "chatglm" and "inner_hidden_size" in config:
        # ChatGLM-6B's first version (its remote modeling_chatglm.py): a GELU MLP of inner_hidden_size (GLU's
        # dense_h_to_4h and dense_4h_to_h), LayerNorm, biases on every linear, lm_head tied to the embedding
        # (PretrainedConfig's tie_word_embeddings default): not the gated, RMSNorm ChatGLM2/3 that share its type
        return "chatglm-6b-v1"
    if isinstance(kind, str):
        return kind
    archs = config.get("architectures") or []
    return next((_ARCHITECTURE_TYPES[a] for a in archs if a in _ARCHITECTURE_TYPES), None)


def _query_groups(config: dict, kind: str | None, heads: int) -> int:
    kv = _int(_first(config, "num_key_value_heads", "num_kv_heads"))
    if kind == "chatglm" and config.get("multi_query_attention"):
        kv = _int(config.get("multi_query_group_num"))
    if (
        kind in ("falcon", "gpt_bigcode")
        and not config.get("new_decoder_architecture")
        and config.get("multi_query", kind == "falcon")
    ):  # FalconConfig multi_query defaults to True
        kv = 1
    return kv or heads


def _experts(config: dict, shape: dict) -> None:
    experts = _int(_first(config, "num_local_experts", "num_experts", "n_routed_experts"))
    if not experts or experts < 2:
        return
    shape["num_experts"] = experts
    shape["moe_topk"] = _int(config.get("num_experts_per_tok")) or 2
    shape["moe_ffn_hidden_size"] = _int(config.get("moe_intermediate_size")) or shape["ffn_hidden_size"]
    shared = _int(config.get("shared_expert_intermediate_size"))
    if shared is None and _int(config.get("n_shared_experts")):  # DeepSeek: n shared experts of the expert width
        shared = config["n_shared_experts"] * shape["moe_ffn_hidden_size"]
    if shared:
        shape["moe_shared_expert_size"] = shared
    dense_first = _int(config.get("first_k_dense_replace"))
    if dense_first:
        shape["moe_first_dense_layers"] = dense_first


def shape_from_config(config: dict) -> dict | None:
    """The layout's model fields from a Hugging Face config.json's keys; None without layers, width or heads."""
    kind = model_type(config)
    hidden = _int(_first(config, "hidden_size", "n_embd", "d_model"))
    layers = _int(_first(config, "num_hidden_layers", "n_layer", "num_layers"))
    heads = _int(_first(config, "num_attention_heads", "n_head", "num_heads"))
    if hidden is None or layers is None or heads is None:
        return None
    encoder_decoder = kind == "t5"
    if encoder_decoder:  # T5: the encoder's layers and the decoder's (num_decoder_layers defaults to num_layers)
        layers += _int(config.get("num_decoder_layers")) or layers
    ffn = _int(
        _first(config, "intermediate_size", "ffn_dim", "n_inner", "d_ff", "ffn_hidden_size", "inner_hidden_size")
    )
    if kind == "qwen" and ffn:  # Qwen-1's QWenMLP: w1 and w2 are intermediate_size // 2 wide each (modeling_qwen.py)
        ffn //= 2
    shape: dict[str, Any] = {
        "num_layers": layers,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_query_groups": _query_groups(config, kind, heads),
        "ffn_hidden_size": ffn or 4 * hidden,  # GPT-2's n_inner None, BLOOM and Falcon: 4h
        "vocab_size": _int(_first(config, "padded_vocab_size", "vocab_size")),
        "swiglu": kind in _GATED or str(config.get("feed_forward_proj", "")).startswith("gated"),
        "normalization": "RMSNorm" if kind in _RMSNORM or config.get("rmsnorm") is True else "LayerNorm",
        "add_bias_linear": _biased(config, kind),
        "add_qkv_bias": kind in _QKV_BIAS or config.get("add_qkv_bias") is True or config.get("qkv_bias") is True,
        "untie_embeddings": not config.get("tie_word_embeddings", kind not in _UNTIED_BY_DEFAULT),
        "position_embedding": (
            "learned_absolute"
            if kind in _LEARNED_POSITIONS
            else "alibi"
            if kind in _ALIBI
            else "relative"
            if encoder_decoder
            else "rope"
        ),
        "hidden_dropout": float(
            _first(config, "resid_pdrop", "dropout", "residual_dropout", "hidden_dropout")
            or _DROPOUT_DEFAULT.get(kind or "", 0.0)
        ),
        "attention_dropout": float(
            _first(config, "attention_dropout", "attn_pdrop", "attn_dropout_prob")
            or _DROPOUT_DEFAULT.get(kind or "", 0.0)
        ),
    }
    head_dim = _int(_first(config, "head_dim", "kv_channels"))
    if head_dim and head_dim * heads != hidden:
        shape["kv_channels"] = head_dim
    positions = _int(_first(config, "max_position_embeddings", "n_positions", "seq_length"))
    if positions:
        shape["max_position_embeddings"] = positions
    if config.get("kv_lora_rank"):
        shape["multi_latent_attention"] = True
    if encoder_decoder:
        shape["encoder_decoder"] = True
    _experts(config, shape)
    return shape


def _biased(config: dict, kind: str | None) -> bool:
    for key in ("add_bias_linear", "use_bias", "bias", "mlp_bias"):
        if isinstance(config.get(key), bool):
            return config[key]
    return kind in _BIASED


@record(frozen=True)
class CatalogModel:
    name: str
    hub: str
    shape: dict
    source: str  # where the config.json's facts were read
    pattern: str  # the name pattern that matched
    read_as: str | None = None  # the name matched when it is not the given one (a size folder inside its family's)
    unmodelled: str | None = None  # what the model holds beside the shape (a vision-language model's encoders)


@lru_cache(maxsize=1)
def _catalog() -> list[dict]:
    from plint.schemas import read_json

    return read_json("model_catalog.json")["models"]


@lru_cache(maxsize=1)
def _patterns() -> list[tuple[re.Pattern, str, dict]]:
    out = []
    for entry in _catalog():
        for pattern in entry["names"]:
            # a name part: not inside a longer size ("7b" in "70b") nor a version ("3" in "3.1")
            out.append((re.compile(rf"(?<![a-z0-9.])(?:{pattern})(?![0-9]|\.[0-9])"), pattern, entry))
    return out


def normal_name(name: str) -> str:
    """Lower case, `_` and spaces as `-`, as the hub's names and local copies of them are written."""
    return re.sub(r"[_\s]+", "-", name.strip().lower())


# a folder named after the size alone (`7B`), as transformers' convert_llama_weights_to_hf.py writes one per
# --model_size into --output_dir; the words of the folder around it that name no model
_BARE_SIZE = re.compile(r"[0-9]+(?:\.[0-9]+)?[bm]")
_FOLDER_WORDS = frozenset({"hf", "model", "models", "weights", "checkpoints", "ckpt", "ckpts", "pretrained"})


def sized_folder_name(text: str) -> str | None:
    """`../hf_llama2_models/7B` -> `llama2-7b`: a size folder read with the name of the folder holding it, or None."""
    parts = [part for part in normal_name(text).split("/") if part not in ("", ".", "..")]
    if len(parts) < 2 or not _BARE_SIZE.fullmatch(parts[-1]):
        return None
    family = [word for word in parts[-2].split("-") if word and word not in _FOLDER_WORDS]
    return "-".join([*family, parts[-1]]) if family else None


def lookup_model(name: str) -> CatalogModel | None:
    """The catalog entry a model name or path names (or, failing that, its size folder read with its family's
    folder), or None."""
    found = _best_match(normal_name(name))
    if found is not None:
        return found
    read_as = sized_folder_name(name)
    found = _best_match(read_as) if read_as else None
    return (
        CatalogModel(found.name, found.hub, found.shape, found.source, found.pattern, read_as, found.unmodelled)
        if found
        else None
    )


def _best_match(text: str) -> CatalogModel | None:
    """The entry whose longest name pattern is found in a normalised name."""
    best: tuple[int, str, dict] | None = None
    for regex, pattern, entry in _patterns():
        m = regex.search(text)
        if m and (best is None or len(m.group(0)) > best[0]):
            best = (len(m.group(0)), pattern, entry)
    if best is None:
        return None
    _, pattern, entry = best
    return CatalogModel(
        entry["name"], entry["hub"], entry["shape"], entry["source"], pattern, unmodelled=entry.get("unmodelled")
    )


def catalog_names() -> list[str]:
    return [entry["name"] for entry in _catalog()]
