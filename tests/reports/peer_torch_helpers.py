"""Shared by the peer runner's tests: reports/peer_torch.py loaded once as a module, the default case
names, the Llama names that xfbench's own lists hold, and fake torches (a GPU whose clock advances by
each launch's time; what build_train touches). A plain module, as reports_helpers."""

from reports_helpers import ROOT  # first: puts the repository root on sys.path
import importlib.util
import os
import types

SCRIPT = os.path.join(ROOT, "reports", "peer_torch.py")
spec = importlib.util.spec_from_file_location("peer_torch", SCRIPT)
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)


def names(families):
    return [s.gb_name for s in peer.default_specs(families)]


# LlamaBlock: HF LlamaDecoderLayer, bf16, torch-eager / torch-sdpa / torch-compile
LLAMA_DEFAULT_NAMES = [
    f"LlamaBlock/{backend}/bf16/{passes}/seq:4096/batch:{batch}{tag}/manual_time"
    for tag, batch in (("", 2), ("/model:llama-3.2-1b", 4))
    for backend in ("torch-eager", "torch-sdpa", "torch-compile")
    for passes in ("fwd", "fwdbwd")]

# TrainStep for Llama: HF LlamaForCausalLM, bf16 autocast, torch-sdpa / torch-compile
LLAMA_TRAIN_NAMES = [
    f"TrainStep/{backend}/{model}/bf16/seq:4096/batch:{batch}/accum:1/ckpt:{ckpt}/adamw:fused/manual_time"
    for model, cases in (("llama-3.2-1b", ((4, "off"), (4, "on"))),
                         ("llama-3.2-3b", ((1, "off"), (2, "on"))))
    for backend in ("torch-sdpa", "torch-compile")
    for batch, ckpt in cases]


# ---- the steady protocol on a fake torch: a GPU whose clock advances by each launch's time --------

class FakeGpu:
    """Launches advance a GPU clock by their duration at enqueue; each wait on an event advances
    the host clock by host_wait (dyadic steps, so every sum is exact)."""

    def __init__(self, launch_seconds, host_wait=2.0 ** -7):
        self.launch_seconds = launch_seconds
        self.host_wait = host_wait
        self.clock = 0.0               # GPU time at the end of the queue
        self.host = 0.0                # host clock (replaces time.perf_counter)
        self.calls = 0
        self.log = []                  # "record" / "wait", in host order

    def fn(self):
        self.calls += 1
        self.clock += self.launch_seconds


class FakeEvent:
    def __init__(self, gpu):
        self.gpu, self.t = gpu, None

    def record(self):
        self.t = self.gpu.clock
        self.gpu.log.append("record")

    def synchronize(self):
        self.gpu.log.append("wait")
        self.gpu.host += self.gpu.host_wait

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class FakeTorch:
    def __init__(self, gpu):
        self.cuda = types.SimpleNamespace(Event=lambda enable_timing=True: FakeEvent(gpu),
                                          synchronize=lambda: None)


# ---- the torch that build_train touches, for the Llama TrainStep ---------------------------------

class FakeTrainTorch:
    """What build_train touches of torch, logging what it is asked; tensors are strings."""

    float32, bfloat16, float16 = "float32", "bfloat16", "float16"

    def __init__(self):
        import contextlib
        log = self.log = []
        self.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(
            matmul=types.SimpleNamespace(allow_tf32=None)))
        self.device = lambda dev: (log.append(f"device {dev}"), contextlib.nullcontext())[1]

        def adamw(params, lr, fused, foreach):
            log.append(f"AdamW n={sum(p.numel() for p in params)} lr={lr} fused={fused} foreach={foreach}")
            return types.SimpleNamespace(step=lambda: log.append("opt.step"),
                                         zero_grad=lambda set_to_none: log.append("zero_grad"))
        self.optim = types.SimpleNamespace(AdamW=adamw)

        class Scaler:
            def __init__(self, device, enabled):
                log.append(f"GradScaler enabled={enabled}")

            def scale(self, loss):
                return loss

            def unscale_(self, opt):
                pass

            def step(self, opt):
                opt.step()

            def update(self):
                pass
        self.amp = types.SimpleNamespace(GradScaler=Scaler)
        self.nn = types.SimpleNamespace(utils=types.SimpleNamespace(
            clip_grad_norm_=lambda params, norm: log.append(f"clip {norm}")))
        self._dynamo = types.SimpleNamespace(reset=lambda: log.append("dynamo.reset"))
        self.cuda = types.SimpleNamespace(synchronize=lambda: None)

    def autocast(self, device, dtype, enabled):
        import contextlib
        self.log.append(f"autocast {device} {dtype} {enabled}")
        return contextlib.nullcontext()

    def randint(self, low, high, size, device):
        return f"ids{size}<{high}"

    def compile(self, mod, fullgraph=False, dynamic=None):
        self.log.append(f"compile fullgraph={fullgraph} dynamic={dynamic}")
        return mod
