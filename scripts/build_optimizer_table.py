"""Build schemas/deepspeed_optimizers.json: which class DeepSpeed builds for each `optimizer.type` of a
DeepSpeed config, and the keyword arguments each class's constructor accepts.

    python scripts/build_optimizer_table.py [--deepspeed-src DIR] [--torch-src DIR] [OUT]

DeepSpeedEngine._configure_basic_optimizer (deepspeed/runtime/engine.py) calls
`Class(model_parameters, **optimizer_params, **what_deepspeed_adds)`, so a key under `optimizer.params`
that the constructor does not take is a TypeError at start-up. The type -> class map below is read off
that method (0.19.8); the constructors' parameters are read from the packages' source with `ast`
(never imported: torch is not needed), so the table follows the installed releases. The DeepSpeed and
torch sources default to the installed packages (importlib.util.find_spec); the script stops when a
class of the map is not in the engine's source any more, so a DeepSpeed that changed the map is noticed.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "schemas" / "deepspeed_optimizers.json"


@dataclass(frozen=True)
class Built:
    """A class DeepSpeed builds: where it lives, and the keywords DeepSpeed passes itself."""

    module: str  # file under the package root
    name: str
    supplied: tuple[str, ...] = ()


FUSED_ADAM = Built("ops/adam/fused_adam.py", "FusedAdam", ("adam_w_mode",))
CPU_ADAM = Built("ops/adam/cpu_adam.py", "DeepSpeedCPUAdam", ("adamw_mode", "fp32_optimizer_states"))
TORCH = "torch"  # a class of torch.optim, by name

# optimizer.type (lower-cased when it is one of DEEPSPEED_OPTIMIZERS) -> how DeepSpeed builds it:
# "default" without optimizer offload, "offload" with zero_optimization.offload_optimizer.device cpu|nvme,
# "torch_adam" when params.torch_adam is true (Adam/AdamW only). Keys popped before the call are accepted.
TYPES = {
    "adam": {
        "popped": ["adam_w_mode", "torch_adam", "fp32_optimizer_states"],
        "builds": {"default": FUSED_ADAM, "offload": CPU_ADAM, "torch_adam": (TORCH, "Adam", ("foreach",))},
    },
    "adamw": {
        "popped": ["adam_w_mode", "torch_adam", "fp32_optimizer_states"],
        "builds": {"default": FUSED_ADAM, "offload": CPU_ADAM, "torch_adam": (TORCH, "AdamW", ("foreach",))},
    },
    "adagrad": {
        "popped": [],
        "builds": {
            "default": (TORCH, "Adagrad", ()),
            "offload": Built("ops/adagrad/cpu_adagrad.py", "DeepSpeedCPUAdagrad"),
        },
    },
    "lamb": {"popped": [], "builds": {"default": Built("ops/lamb/fused_lamb.py", "FusedLamb")}},
    "lion": {
        "popped": [],
        "builds": {
            "default": Built("ops/lion/fused_lion.py", "FusedLion"),
            "offload": Built("ops/lion/cpu_lion.py", "DeepSpeedCPULion"),
        },
    },
}
# built-in types whose constructor plint does not read: the mup package's MuAdam/MuAdamW/MuSGD (not a
# DeepSpeed dependency), Muon (DeepSpeed splits the params between Muon and an auxiliary Adam), and the
# communication-compressed optimizers engine.py imports from runtime/fp16/onebit/ (1-bit Adam and LAMB,
# 0/1 Adam: DEEPSPEED_OPTIMIZERS in runtime/config.py, which lower-cases "OneBitAdam")
UNCHECKED = {
    "muadam": "mup.MuAdam",
    "muadamw": "mup.MuAdamW",
    "musgd": "mup.MuSGD",
    "muon": "deepspeed MuonWithAuxAdam",
    "onebitadam": "deepspeed.runtime.fp16.onebit.adam.OnebitAdam",
    "onebitlamb": "deepspeed.runtime.fp16.onebit.lamb.OnebitLamb",
    "zerooneadam": "deepspeed.runtime.fp16.onebit.zoadam.ZeroOneAdam",
}
# DeepSpeed refuses this key under any type before building (engine.py, _configure_basic_optimizer)
REFUSED = {
    "max_grad_norm": "ValueError: 'max_grad_norm' is not supported as an optimizer parameter; "
    "use the top-level gradient_clipping"
}


def constructor(source: str, name: str) -> dict | None:
    """The keyword parameters of class `name`'s __init__ (after self and the parameters), and whether
    it takes **kwargs; None when the class or its __init__ is not in `source`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            if init is None:
                return None
            positional = [a.arg for a in init.args.posonlyargs + init.args.args][2:]  # self, params
            return {
                "params": positional + [a.arg for a in init.args.kwonlyargs],
                "var_keyword": init.args.kwarg is not None,
            }
    return None


def package_dir(name: str, given: str | None) -> Path:
    if given:
        return Path(given)
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{name} is not installed: pass --{name}-src DIR (the package folder)")
    return Path(spec.origin).parent


def _version(ds: Path, torch: Path) -> tuple[str, str]:
    ds_version = next(
        (p.read_text().strip() for p in (ds / "version.txt", ds.parent / "version.txt") if p.is_file()), "unknown"
    )
    text = (torch / "version.py").read_text() if (torch / "version.py").is_file() else ""
    match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", text)
    return ds_version, match.group(1) if match else "unknown"


def torch_classes(optim: Path) -> dict[str, dict]:
    """Every optimizer torch.optim exports (its __all__) with its constructor's keywords."""
    exported = ast.literal_eval(re.search(r"__all__\s*=\s*(\[[^\]]*\])", (optim / "__init__.py").read_text()).group(1))
    out = {}
    for path in sorted(optim.glob("*.py")):
        source = path.read_text()
        for name in exported:
            if name not in out and name != "Optimizer" and f"class {name}(" in source:
                found = constructor(source, name)
                if found is not None:
                    out[name] = found
    return dict(sorted(out.items()))


def build(ds: Path, torch: Path) -> dict:
    engine = (ds / "runtime" / "engine.py").read_text()
    method = engine[engine.index("def _configure_basic_optimizer") :]
    method = method[: method.index("\n    def ", 10)]
    helper = engine[engine.index("def get_optimizer_configuration") :]
    torch_optim = torch_classes(torch / "optim")
    classes: dict[str, dict] = {}
    types = {}
    for kind, spec in TYPES.items():
        builds = {}
        for case, what in spec["builds"].items():
            if isinstance(what, Built):
                if what.name not in method and what.name not in helper:
                    raise SystemExit(f"{what.name} is no longer built in {ds}/runtime/engine.py: update TYPES")
                found = constructor((ds / what.module).read_text(), what.name)
                if found is None:
                    raise SystemExit(f"no {what.name}.__init__ in {what.module}")
                key = f"deepspeed.{what.module[:-3].replace('/', '.')}.{what.name}"
                classes[key] = {**found, "supplied": list(what.supplied)}
            else:
                _, name, supplied = what
                key = f"torch.optim.{name}"
                classes[key] = {**torch_optim[name], "supplied": list(supplied)}
            builds[case] = key
        types[kind] = {"popped": spec["popped"], "builds": builds}
        if "torch_adam" in builds:  # get_optimizer_configuration pops foreach and passes it back
            types[kind]["popped_with_torch_adam"] = ["foreach"]
    ds_version, torch_version = _version(ds, torch)
    return {
        "title": "The classes DeepSpeed builds for optimizer.type, and their constructors' keywords",
        "x-deepspeed-version": ds_version,
        "x-torch-version": torch_version,
        "refused": REFUSED,
        "types": types,
        "unchecked": UNCHECKED,
        "classes": dict(sorted(classes.items())),
        # any other type: getattr(torch.optim, type)(params, **params), the name as written
        "torch_optim": {name: {**sig, "supplied": []} for name, sig in torch_optim.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default=str(DEFAULT_OUT))
    parser.add_argument("--deepspeed-src", help="the deepspeed package folder (default: the installed one)")
    parser.add_argument("--torch-src", help="the torch package folder (default: the installed one)")
    args = parser.parse_args()
    table = build(package_dir("deepspeed", args.deepspeed_src), package_dir("torch", args.torch_src))
    Path(args.out).write_text(json.dumps(table, indent=1) + "\n")
    print(args.out)


if __name__ == "__main__":
    main()
