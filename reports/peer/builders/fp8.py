"""FP8 training through torchao (issue 34): the peer of xfbench's fp8 cases, torchao's float8
training (`torchao.float8.convert_to_float8_training`) of a model's nn.Linear layers with the
recipe of the case's name (catalog.FP8_RECIPE: xfbench's `current`, torchao's `tensorwise`: dynamic
per-tensor scales from each cast's own amax; E4M3 for inputs and weights, E5M2 for the output
gradients; the forward product with fast accumulation, the gradients' without, as xfbench's), run
under torch.compile (builders/common.compiled), as torchao asks for speed. torchao is imported
when a case runs, not before: without it each fp8 case is one error entry saying how to install
it (NotInstalled), and --list needs neither torch nor torchao.

convert_to_float8_training also patches inductor's Triton min/max codegen for the rest of the
process (torchao/float8/_inductor_patch.py, a Triton fp8-store workaround, numerically the same):
catalog.default_specs puts the fp8 cases after the others."""

from ..catalog import FP8_RECIPE
from ..siblings import nccl

TORCHAO_VERSION = "0.18.0"  # the version the peer was written against
INSTALL = f"pip install torchao=={TORCHAO_VERSION}"
TORCHAO_RECIPES = {"current": "tensorwise"}  # xfbench's recipe -> torchao's Float8LinearRecipeName
FP8_MIN_CC = (8, 9)  # FP8 tensor cores: Ada and Hopper on


class NotInstalled(Exception):
    """torchao missing or not importable: the case's error entry is this message as it is (no
    exception type before it, writer.error_message)."""


class Unsupported(nccl.Unsupported):
    """A case this GPU or shape cannot run in FP8: `unsupported: why` as xfbench writes it (n/a in
    the tables, not counted as a failure)."""


def import_torchao():
    """(torchao, Float8LinearConfig, convert_to_float8_training), or NotInstalled."""
    try:
        import torchao
    except ModuleNotFoundError as e:
        if e.name == "torchao":
            raise NotInstalled(f"torchao not installed: {INSTALL}") from e
        raise NotInstalled(f"torchao not importable ({_first(e)}): {INSTALL}") from e
    except Exception as e:  # a torchao built for another torch, ...
        raise NotInstalled(f"torchao not importable ({_first(e)}): {INSTALL}") from e
    try:
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    except Exception as e:  # a torchao without float8 training
        version = getattr(torchao, "__version__", "?")
        raise NotInstalled(f"torchao {version} has no float8 training ({_first(e)}): {INSTALL}") from e
    return torchao, Float8LinearConfig, convert_to_float8_training


def _first(e):
    lines = str(e).splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def check_gpu(torch, dev):
    """Unsupported where the GPU has no FP8 tensor cores (xfbench skips those cases likewise)."""
    cc = tuple(torch.cuda.get_device_capability(dev))
    if cc < FP8_MIN_CC:
        raise Unsupported(f"no FP8 tensor cores on this GPU (compute capability {cc[0]}.{cc[1]}; "
                          f"FP8 needs {FP8_MIN_CC[0]}.{FP8_MIN_CC[1]} or later)")


def check_tokens(tokens):
    """torch._scaled_mm's inner dimensions are multiples of 16: the weight gradient's is the tokens
    (batch x seq)."""
    if tokens % 16:
        raise Unsupported(f"{tokens} tokens (batch x seq) is not a multiple of 16, which FP8 "
                          "products (torch._scaled_mm) need")


def to_float8(torch, module, expected, skip=()):
    """`module` with every nn.Linear but those named in `skip` (fully qualified names, e.g.
    lm_head) swapped for torchao's Float8Linear, recipe FP8_RECIPE; checked: `expected` linears
    swapped, each width a multiple of 16 (torch._scaled_mm's; the named Llama sizes' are), no other
    nn.Linear left. Returns (module, label)."""
    torchao, Float8LinearConfig, convert = import_torchao()
    linears = {name: m for name, m in module.named_modules()
               if isinstance(m, torch.nn.Linear) and name not in skip}
    if len(linears) != expected:
        raise RuntimeError(f"{len(linears)} linear layers to run in FP8, expected {expected}: "
                           f"{', '.join(linears) or 'none'}")
    odd = [f"{name} {m.in_features}x{m.out_features}" for name, m in linears.items()
           if m.in_features % 16 or m.out_features % 16]
    if odd:
        raise Unsupported(f"FP8 linear layers need widths that are multiples of 16: {', '.join(odd)}")
    recipe = TORCHAO_RECIPES[FP8_RECIPE]
    config = Float8LinearConfig.from_recipe_name(recipe)
    module = convert(module, module_filter_fn=lambda mod, fqn: fqn not in skip, config=config)
    swapped = {name for name, m in module.named_modules() if type(m).__name__ == "Float8Linear"}
    if swapped != set(linears):
        missed = sorted(set(linears) - swapped) + sorted(swapped - set(linears))
        raise RuntimeError(f"torchao {torchao.__version__}: convert_to_float8_training swapped "
                           f"{len(swapped)} linear layers, not the {len(linears)} asked "
                           f"(differ: {', '.join(missed)})")
    return module, f"torchao {torchao.__version__} float8 {recipe}"


def context():
    """The context key of a run with fp8 cases: torchao's version where it imports."""
    try:
        import torchao
        return {"torchao_version": str(torchao.__version__)}
    except Exception:
        return {}
