"""The dry run: build the layout's process groups the way the trainer would, and report what breaks.

`dry_run(layout)` returns the `"dry_run"` object of DESIGN.md ("Command line"):

    {"backend": "megatron-core X.Y.Z" | "analytic", "world_size": N,
     "groups": {"tp": [[ranks], ...], "pp": ..., "dp": ..., "cp": ..., "ep": ..., more kinds},
     "ok": bool, "problems": [{"kind", "source", "message"}, ...],
     "crossing": [...], "coverage": {...}, "notes": [...], ...}

A problem's kind is "rejected" (the trainer's own code, or plint's analytic layout standing in for it,
refused the layout), "crosses-nvlink" (a tensor-parallel group leaves the NVLink domain) or
"mismatch" (plint's analytic groups differ from the trainer's). "crossing" lists, for the groups whose
traffic belongs on NVLink (tp, cp, tp-cp, etp, ep, etp-ep), how many groups leave the domain.

With the optional extra (`pip install 'plint[dryrun]'`: torch, megatron-core, deepspeed) the groups
come from megatron-core's `parallel_state.initialize_model_parallel` on torch's fake process-group
backend, on the CPU: one process, re-initialised as rank r for each rank it visits, reading back the
groups rank r belongs to through megatron-core's public getters (no patching). Each visit costs time
proportional to the world size (megatron-core creates every group on every rank), so a large world is
checked on a spread sample of ranks (`max_ranks`); "coverage" says how many. The DeepSpeed JSON goes
through DeepSpeed's own `DeepSpeedConfig`, and the model shape through megatron-core's
`TransformerConfig` checks. Without the extra the analytic layout (plint.dryrun.ranks) serves alone, and
"notes" says so. torch, megatron-core and deepspeed are imported here only, inside functions.
"""

from __future__ import annotations

from plint.layout import LaunchExtras
from plint.dryrun.ranks import (
    DEFAULT_ORDER,
    KINDS,
    NVLINK_KINDS,
    TP_PP_DP_ORDER,
    LayoutError,
    RankLayout,
    crossing,
)

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

FULL_LISTS_UP_TO = 1024  # world sizes above this report the first SAMPLE_GROUPS groups of each kind
SAMPLE_GROUPS = 16
SAMPLE_RANKS = 64  # ranks listed per sampled group (a data-parallel group of a huge world is huge)
RANK_WORK = 1 << 15  # visited ranks * world size: about 2.5 s of megatron-core group building
MIN_RANKS = 16

# plint's group kind -> how to read rank r's group of that kind from megatron-core's parallel_state
# (getter name, keyword arguments).
_GETTERS = {
    "tp": ("get_tensor_model_parallel_group", {}),
    "pp": ("get_pipeline_model_parallel_group", {}),
    "dp": ("get_data_parallel_group", {}),
    "cp": ("get_context_parallel_group", {}),
    "dp-cp": ("get_data_parallel_group", {"with_context_parallel": True}),
    "tp-pp": ("get_model_parallel_group", {}),
    "tp-cp": ("get_tensor_and_context_parallel_group", {}),
    "tp-dp": ("get_tensor_and_data_parallel_group", {}),
    "tp-dp-cp": ("get_tensor_and_data_parallel_group", {"with_context_parallel": True}),
    "embedding": ("get_embedding_group", {"check_initialized": False}),
    "position-embedding": ("get_position_embedding_group", {"check_initialized": False}),
    "ep": ("get_expert_model_parallel_group", {}),
    "etp": ("get_expert_tensor_parallel_group", {}),
    "etp-ep": ("get_expert_tensor_and_model_parallel_group", {}),
    "etp-ep-pp": ("get_expert_tensor_model_pipeline_parallel_group", {}),
    "edp": ("get_expert_data_parallel_group", {}),
}
# Groups a rank may not belong to (megatron-core keeps None there).
_OPTIONAL = ("embedding", "position-embedding")


# ---- reading the layout ---------------------------------------------------------------------------

_ALIASES = {
    "world_size": ("cluster.world_size", "world_size", "world"),
    "gpus_per_node": ("cluster.gpus_per_node", "gpus_per_node"),
    "nvlink_domain": ("cluster.nvlink_domain", "nvlink_domain"),
    "tp": ("parallel.tp", "tp"),
    "pp": ("parallel.pp", "pp"),
    "cp": ("parallel.cp", "cp"),
    "ep": ("parallel.ep", "ep"),
    "etp": ("parallel.etp", "etp"),
    "dp": ("parallel.dp", "dp"),
    "vpp": ("parallel.vpp", "vpp"),
    "sequence_parallel": ("parallel.sequence_parallel", "sequence_parallel"),
    "micro": ("batch.micro", "micro"),
    "global": ("batch.global", "global"),
    "trainer": ("trainer",),
    "precision": ("precision",),
    "num_layers": ("model.num_layers", "num_layers"),
    "hidden_size": ("model.hidden_size", "hidden_size"),
    "ffn_hidden_size": ("model.ffn_hidden_size", "ffn_hidden_size"),
    "num_attention_heads": ("model.num_attention_heads", "num_attention_heads"),
    "num_query_groups": ("model.num_query_groups", "num_query_groups"),
    "seq_length": ("model.seq_length", "seq_length"),
    "num_experts": ("model.num_experts", "num_experts"),
    "moe_topk": ("model.moe_topk", "moe_topk"),
    "order": ("order",),
    "ds_config": ("ds_config",),
}


def _lookup(layout_like, dotted: str):
    """A value from a Layout, a flat dict, a nested dict (the JSON layout) or a dotted-key dict."""
    if hasattr(layout_like, "value") and hasattr(layout_like, "fields"):
        if dotted in ("ds_config", "order"):
            return None
        return layout_like.value(dotted)
    if not isinstance(layout_like, dict):
        return None
    if dotted in layout_like:
        return layout_like[dotted]
    node = layout_like
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def read_sizes(layout_like) -> dict:
    """The facts the dry run needs, from a Layout or a plain dict; absent ones are None."""
    out = {}
    for name, keys in _ALIASES.items():
        out[name] = next((v for v in (_lookup(layout_like, k) for k in keys) if v is not None), None)
    extras = getattr(layout_like, "extras", None)
    if isinstance(extras, LaunchExtras):
        out["ds_config"] = _plain_ds_config(extras.ds_config)
        args = extras.trainer_args
        if (
            out["order"] is None
            and args is not None
            and hasattr(args, "get")
            and args.get("--use-tp-pp-dp-mapping") is not None
        ):
            out["order"] = TP_PP_DP_ORDER
    else:
        out["ds_config"] = _plain_ds_config(out["ds_config"])
    return out


def _plain_ds_config(cfg):
    """The DeepSpeed JSON as plain Python (plint's parsed config keeps positions)."""
    if cfg is None or isinstance(cfg, dict):
        return cfg
    root = getattr(getattr(cfg, "document", None), "root", None)
    to_python = getattr(root, "to_python", None)
    return to_python() if to_python is not None else None


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# ---- the dry run ----------------------------------------------------------------------------------


def dry_run(
    layout_like, *, backend: str = "auto", max_ranks: int | None = None, nvlink_domain: int | None = None
) -> dict:
    """Build the layout's process groups and check them (see the module docs).

    backend: "auto" (megatron-core when importable, else analytic), "analytic", or "megatron-core"
    (an error when it is not importable). max_ranks: how many ranks megatron-core builds the groups
    as (default: RANK_WORK // world_size ranks, at least 16, every rank of a small world).
    nvlink_domain: GPUs per NVLink domain, overriding the layout's.
    """
    facts = read_sizes(layout_like)
    notes: list[str] = []
    problems: list[dict] = []
    world = _int(facts["world_size"])
    sizes = {}
    for axis in ("tp", "pp", "cp", "ep"):
        v = facts[axis]
        if v is None:
            notes.append(f"{axis} unknown: Megatron's default 1 assumed")
        sizes[axis] = 1 if v is None else v
    sizes["etp"] = facts["etp"]  # None: etp follows tp
    order = facts["order"] or DEFAULT_ORDER
    domain = nvlink_domain or _int(facts["nvlink_domain"]) or _int(facts["gpus_per_node"])

    result: dict = {
        "backend": "analytic",
        "world_size": world,
        "order": order,
        "groups": {},
        "group_counts": {},
        "ok": False,
        "problems": problems,
        "crossing": [],
        "nvlink_domain": domain,
        "coverage": None,
        "notes": notes,
    }

    mc = _chosen_backend(backend, notes)
    if mc is not None:
        result["backend"] = f"megatron-core {mc['version']}"

    if world is None:
        problems.append(_problem("rejected", "plint", "world size unknown: the process groups cannot be built"))
        return result

    analytic: RankLayout | None = None
    try:
        analytic = RankLayout(world, sizes["tp"], sizes["pp"], sizes["cp"], sizes["ep"], sizes["etp"], order)
    except LayoutError as exc:
        analytic_error: str | None = str(exc)
    else:
        analytic_error = None

    groups = analytic.all_groups() if analytic is not None else None
    if mc is not None:
        built = _megatron_groups(mc, world, sizes, order, analytic, max_ranks)
        result["coverage"] = built["coverage"]
        if built["error"] is not None:
            problems.append(_problem("rejected", "megatron-core", built["error"]))
            if analytic_error is None:
                problems.append(
                    _problem(
                        "mismatch", "plint", "megatron-core rejects a layout that plint's analytic rank layout accepts"
                    )
                )
        elif analytic_error is not None:
            problems.append(
                _problem(
                    "mismatch",
                    "plint",
                    f"plint's analytic rank layout rejects what megatron-core accepts: {analytic_error}",
                )
            )
            groups = built["groups"] if built["complete"] else None
        else:
            problems.extend(built["mismatches"])
            if built["complete"] and not built["mismatches"] and groups is not None:  # analytic built them
                groups = {k: built["groups"].get(k, groups[k]) for k in groups}
    elif analytic_error is not None:
        problems.append(_problem("rejected", "plint", f"megatron-core would refuse it: {analytic_error}"))

    if groups is not None:
        _list_groups(result, groups, world, domain)

    if mc is not None:
        problems.extend(_deepspeed_problems(facts, world, sizes, notes))
        problems.extend(_transformer_config_problems(mc, facts, sizes, notes))
    result["ok"] = not problems
    return result


def _chosen_backend(backend: str, notes: list[str]):
    """megatron-core's modules for "auto" and "megatron-core" when importable, else None (analytic)."""
    if backend in ("auto", "megatron-core"):
        mc = _megatron_core()
        if not isinstance(mc, str):
            return mc
        if backend == "megatron-core":
            raise RuntimeError(mc)
        notes.append(f"{mc}: plint's analytic rank layout only (pip install 'plint[dryrun]')")
        return None
    if backend != "analytic":
        raise ValueError(f"unknown dry-run backend {backend!r}")
    return None


def _list_groups(result: dict, groups: dict, world: int, domain: int | None) -> None:
    """The groups into the result (sampled in a large world), and the tensor-parallel groups that leave
    the NVLink domain as problems."""
    notes, problems = result["notes"], result["problems"]
    result["group_counts"] = {k: [len(v), len(v[0]) if v else 0] for k, v in groups.items()}
    if world > FULL_LISTS_UP_TO:
        result["groups"] = {k: [g[:SAMPLE_RANKS] for g in v[:SAMPLE_GROUPS]] for k, v in groups.items()}
        notes.append(
            f"world of {world}: the first {SAMPLE_GROUPS} groups of each kind are listed, each "
            f"with at most its first {SAMPLE_RANKS} ranks; group_counts has [groups, ranks per group]"
        )
    else:
        result["groups"] = groups
    if domain:
        result["crossing"] = crossing(groups, domain, NVLINK_KINDS)
        if world > FULL_LISTS_UP_TO:  # the report stays small: the example's first ranks
            for c in result["crossing"]:
                c["example"] = c["example"][:SAMPLE_RANKS]
        for c in result["crossing"]:
            if c["group"] == "tp":
                problems.append(
                    _problem(
                        "crosses-nvlink",
                        "plint",
                        f"{c['crossing']} of {c['of']} tensor-parallel groups of {c['size']} ranks leave the "
                        f"NVLink domain of {domain} GPUs, e.g. {c['example']}",
                    )
                )
    else:
        notes.append("NVLink domain unknown (no nvlink_domain or gpus_per_node): crossings not checked")


def _problem(kind: str, source: str, message: str) -> dict:
    return {"kind": kind, "source": source, "message": message}


# ---- megatron-core on torch's fake process groups -------------------------------------------------


def _quietly(fn, *args, **kwargs):
    """Run fn with Python-level stdout and warnings silenced (the trainers print while importing)."""
    import contextlib
    import io
    import warnings

    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _megatron_core():
    """megatron-core's parallel_state and friends, or a sentence saying why they cannot be had."""
    try:
        from importlib.metadata import version
        from importlib.util import find_spec

        missing = [m for m in ("megatron", "torch") if find_spec(m) is None]
        if missing:  # say so without paying for importing torch
            return f"megatron-core not importable (no module named {missing[0]!r})"

        def load():
            import torch.distributed as dist
            from megatron.core import parallel_state
            from torch.testing._internal.distributed.fake_pg import FakeStore

            return dist, parallel_state, FakeStore

        dist, ps, fake_store = _quietly(load)
        return {"version": version("megatron-core"), "dist": dist, "ps": ps, "FakeStore": fake_store}
    except Exception as exc:  # noqa: BLE001 -- ImportError, or a broken install
        return f"megatron-core not importable ({type(exc).__name__}: {exc})"


def ranks_to_visit(world: int, max_ranks: int | None = None) -> list[int]:
    """Every rank for a small world; else a spread that includes the first and the last rank."""
    k = max_ranks if max_ranks is not None else max(MIN_RANKS, RANK_WORK // world)
    if k >= world:
        return list(range(world))
    k = max(k, 2)
    return sorted({round(i * (world - 1) / (k - 1)) for i in range(k)})


def _megatron_groups(mc, world, sizes, order, analytic, max_ranks) -> dict:
    dist, ps, fake_store = mc["dist"], mc["ps"], mc["FakeStore"]
    out: dict[str, Any] = {"groups": {}, "complete": False, "error": None, "mismatches": [], "coverage": None}
    if dist.is_initialized():
        out["error"] = "torch.distributed is already initialised in this process: the dry run needs it free"
        return out
    visit = ranks_to_visit(world, max_ranks)
    seen: dict[str, dict[tuple, None]] = {k: {} for k in KINDS}
    per_rank: dict[int, dict[str, list[int] | None]] = {}
    for r in visit:
        try:
            per_rank[r] = _quietly(_groups_as_rank, dist, ps, fake_store, r, world, sizes, order)
        except Exception as exc:  # noqa: BLE001 -- the trainer's start-up checks raise anything
            out["error"] = f"initialize_model_parallel: {type(exc).__name__}: {exc}".rstrip(": ")
            break
        finally:
            _teardown(dist, ps)
        for k, g in per_rank[r].items():
            if g is not None:
                seen[k][tuple(g)] = None
    out["coverage"] = {"ranks": len(per_rank), "of": world}
    if out["error"] is not None:
        return out
    out["complete"] = len(per_rank) == world
    out["groups"] = {k: [list(g) for g in sorted(v, key=lambda g: g[0])] for k, v in seen.items() if v}
    if analytic is not None:
        for k in KINDS:
            bad = []
            for r, mine in per_rank.items():
                if k not in mine:
                    continue  # this megatron-core has no such group
                expected = analytic.groups_of(r, (k,))[k]
                if (mine[k] or None) != expected:
                    bad.append((r, mine[k], expected))
            if bad:
                r, got, want = bad[0]
                out["mismatches"].append(
                    _problem(
                        "mismatch",
                        "plint",
                        f"{k} groups differ on {len(bad)} of {len(per_rank)} ranks checked: "
                        f"rank {r} is in {got} for megatron-core, {want} for plint",
                    )
                )
    return out


def _groups_as_rank(dist, ps, fake_store, rank, world, sizes, order) -> dict:
    """Initialise the fake world as `rank`, and read back the groups that rank belongs to."""
    dist.init_process_group("fake", rank=rank, world_size=world, store=fake_store())
    kwargs = {
        "tensor_model_parallel_size": sizes["tp"],
        "pipeline_model_parallel_size": sizes["pp"],
        "context_parallel_size": sizes["cp"],
        "expert_model_parallel_size": sizes["ep"],
        "expert_tensor_parallel_size": sizes["etp"],
        "order": order,
        "create_gloo_process_groups": False,
    }
    try:
        ps.initialize_model_parallel(**kwargs)
    except TypeError:  # an older megatron-core without some keyword
        kwargs.pop("create_gloo_process_groups")
        ps.initialize_model_parallel(**kwargs)
    found: dict[str, list[int] | None] = {}
    for kind, (getter, kw) in _GETTERS.items():
        fn = getattr(ps, getter, None)
        if fn is None:
            continue
        try:
            group = fn(**kw)
        except (AssertionError, TypeError, RuntimeError):
            if kind in _OPTIONAL:
                found[kind] = None
            continue
        if isinstance(group, list):  # a rank in several pipelines (never with default embeddings)
            group = group[0]
        found[kind] = None if group is None else list(dist.get_process_group_ranks(group))
    return found


def _teardown(dist, ps) -> None:
    try:
        ps.destroy_model_parallel()
    except Exception:  # noqa: BLE001, S110 -- a half-built state: destroy what can be destroyed
        pass
    if dist.is_initialized():
        dist.destroy_process_group()


# ---- DeepSpeed's config class ---------------------------------------------------------------------


class _Mpu:
    """What DeepSpeedConfig asks Megatron-DeepSpeed's mpu for: the data-parallel world size."""

    def __init__(self, dp: int):
        self.dp = dp

    def get_data_parallel_world_size(self) -> int:
        return self.dp


def _deepspeed_problems(facts, world, sizes, notes) -> list[dict]:
    cfg = facts["ds_config"]
    if not isinstance(cfg, dict):
        return []
    placeholder = _placeholder(cfg)
    if placeholder is not None:  # PL505's business: an integration or the shell fills it in later
        notes.append(f"the DeepSpeed JSON holds {placeholder!r}, filled in only at run time: DeepSpeedConfig not run")
        return []
    try:

        def load():
            import deepspeed.comm as ds_comm
            from deepspeed.runtime.config import DeepSpeedConfig

            return ds_comm, DeepSpeedConfig

        ds_comm, config_class = _quietly(load)
    except Exception as exc:  # noqa: BLE001 -- a missing or broken install
        notes.append(
            f"deepspeed not importable ({type(exc).__name__}: {exc}): the DeepSpeed JSON was not "
            "run through DeepSpeedConfig"
        )
        return []
    import logging

    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    mpu = None
    if facts["trainer"] == "megatron-deepspeed":
        dp = _int(facts["dp"]) or world // (sizes["tp"] * sizes["pp"] * sizes["cp"] or 1)
        mpu = _Mpu(dp)
    if dist.is_initialized():
        notes.append("torch.distributed already initialised: DeepSpeedConfig not run")
        return []
    try:
        dist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
        _quietly(ds_comm.init_distributed, dist_backend="fake", auto_mpi_discovery=False, verbose=False)
        _quietly(config_class, cfg, mpu=mpu)
    except Exception as exc:  # noqa: BLE001 -- whatever the trainer's code raises is its verdict
        text = " ".join(str(exc).split())
        return [_problem("rejected", "deepspeed", f"DeepSpeedConfig: {type(exc).__name__}: {text}")]
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return []


def _placeholder(node):
    """The first "auto" or unexpanded "$VAR" in the JSON, or None."""
    if isinstance(node, dict):
        node = list(node.values())
    if isinstance(node, list):
        return next((p for p in map(_placeholder, node) if p is not None), None)
    if isinstance(node, str) and (node == "auto" or "$" in node):
        return node
    return None


# ---- megatron-core's TransformerConfig ------------------------------------------------------------


def _transformer_config_problems(mc, facts, sizes, notes) -> list[dict]:
    if facts["trainer"] not in (None, "megatron", "unknown"):
        return []
    shape = {k: _int(facts[k]) for k in ("num_layers", "hidden_size", "num_attention_heads")}
    if None in shape.values():
        notes.append("model shape unknown: megatron-core's TransformerConfig checks not run")
        return []
    try:
        import dataclasses

        def load():
            from megatron.core.transformer.transformer_config import TransformerConfig

            return TransformerConfig

        config_class = _quietly(load)
        known = {f.name for f in dataclasses.fields(config_class)}
    except Exception as exc:  # noqa: BLE001 -- a missing or broken install
        notes.append(f"megatron-core TransformerConfig not importable ({type(exc).__name__}): not run")
        return []
    kwargs = dict(shape)
    for ours, theirs in (
        ("ffn_hidden_size", "ffn_hidden_size"),
        ("num_query_groups", "num_query_groups"),
        ("num_experts", "num_moe_experts"),
        ("moe_topk", "moe_router_topk"),
    ):
        if _int(facts[ours]) is not None:
            kwargs[theirs] = facts[ours]
    kwargs.update(
        tensor_model_parallel_size=sizes["tp"],
        pipeline_model_parallel_size=sizes["pp"],
        context_parallel_size=sizes["cp"],
        expert_model_parallel_size=sizes["ep"],
        expert_tensor_parallel_size=sizes["etp"],
    )
    if _int(facts["vpp"]) is not None and facts["vpp"] > 1:
        kwargs["virtual_pipeline_model_parallel_size"] = facts["vpp"]
    if isinstance(facts["sequence_parallel"], bool):
        kwargs["sequence_parallel"] = facts["sequence_parallel"]
    if facts["precision"] in ("bf16", "fp16"):
        kwargs[facts["precision"]] = True
    try:  # Megatron-LM passes params_dtype, and pipeline_dtype = params_dtype (required with pp > 1)
        import torch

        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(facts["precision"], torch.float32)
        kwargs["params_dtype"] = dtype
        kwargs["pipeline_dtype"] = dtype
    except Exception:  # noqa: BLE001, S110 -- without torch dtypes TransformerConfig reports what it misses
        pass
    kwargs = {k: v for k, v in kwargs.items() if k in known}
    try:
        _quietly(config_class, **kwargs)
    except Exception as exc:  # noqa: BLE001 -- whatever the trainer's code raises is its verdict
        text = " ".join(str(exc).split())
        return [_problem("rejected", "megatron-core", f"TransformerConfig: {type(exc).__name__}: {text}")]
    return []
