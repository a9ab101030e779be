"""The BertLayer, GPT2Block, T5Encoder and T5Decoder families: one HF transformers layer (BERT's
parts too) from its config, fp16, in training mode (dropout on, as the seeds), forward or forward
and backward."""

from ..catalog import DROPOUT, FFN, H, HEADS, LAYER_BACKENDS
from .common import first_output, hf_config, make


def build_layer(torch, spec, dev):
    k = spec.kw
    s, b, impl = k["seq"], k["batch"], LAYER_BACKENDS[k["backend"]]
    h = k.get("hidden", H)
    dt = torch.float16
    fam = spec.family
    extra = {}
    if fam == "BertLayer":
        from transformers import BertConfig
        from transformers.models.bert import modeling_bert as mb
        cfg = hf_config(BertConfig, impl, hidden_size=H, num_attention_heads=HEADS, intermediate_size=FFN,
                        hidden_dropout_prob=DROPOUT, attention_probs_dropout_prob=DROPOUT,
                        max_position_embeddings=max(512, s))
        part = k["part"]
        if part is None:
            mod = make(mb.BertLayer, cfg, layer_idx=0)
            fwd = lambda m, x: first_output(m(x))
        elif part == "dense":
            mod = torch.nn.Linear(H, FFN)
            fwd = lambda m, x: m(x)
        elif part == "dense_gelu":
            mod = mb.BertIntermediate(cfg)  # Linear 1024->4096 + GELU
            fwd = lambda m, x: m(x)
        elif part == "ffn":
            mod = torch.nn.ModuleDict({"i": mb.BertIntermediate(cfg), "o": mb.BertOutput(cfg)})
            fwd = lambda m, x: m["o"](m["i"](x), x)
        else:
            mod = make(mb.BertAttention, cfg, layer_idx=0)
            fwd = lambda m, x: first_output(m(x))
    elif fam == "GPT2Block":
        from transformers import GPT2Config
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block
        # gpt2-medium by default: hidden 1024, 16 heads; n_inner 4h, GELU (tanh form, "gelu_new")
        cfg = hf_config(GPT2Config, impl, n_embd=h, n_head=k["heads"], n_inner=4 * h,
                        n_positions=max(1024, s), activation_function="gelu_new", resid_pdrop=DROPOUT,
                        attn_pdrop=DROPOUT, embd_pdrop=DROPOUT)
        mod = make(GPT2Block, cfg, layer_idx=0)
        fwd = lambda m, x: first_output(m(x))
    else:
        from transformers import T5Config
        from transformers.models.t5.modeling_t5 import T5Block
        dec = fam == "T5Decoder"
        cfg = hf_config(T5Config, impl, d_model=H, d_ff=FFN, num_heads=HEADS, d_kv=H // HEADS,
                        dropout_rate=DROPOUT, is_decoder=dec, use_cache=False)
        mod = make(T5Block, cfg, has_relative_attention_bias=True, layer_idx=0)
        if dec:
            extra["enc"] = torch.randn(b, s, H, device=dev, dtype=dt)
            fwd = lambda m, x: first_output(m(x, encoder_hidden_states=extra["enc"], use_cache=False))
        else:
            fwd = lambda m, x: first_output(m(x))
    mod = mod.to(dev, dt).train()  # training mode: dropout on, as in the seeds
    x = torch.randn(b, s, h, device=dev, dtype=dt, requires_grad=k["passes"] == "fwdbwd")
    if k["passes"] == "fwd":
        def run():
            with torch.no_grad():  # forward only: no autograd graph to build
                fwd(mod, x)
        return run
    dy = torch.randn(b, s, h, device=dev, dtype=dt)

    def run():
        fwd(mod, x).backward(dy)
    return run
