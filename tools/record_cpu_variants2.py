#!/usr/bin/env python3
"""Record Strata's second variants CPU corpus: more reference-style variants, a tuning set.

The layer inference is tuned on tests/data/corpus-cpu, corpus-cpu-modern, corpus-cpu-families,
corpus-cpu-heldout and corpus-cpu-variants, and checked on corpus-cpu-fresh. This script
records tests/data/corpus-cpu-variants2, more models of common families, each written the way
its reference implementation (Hugging Face transformers' modeling files, timm, PyTorch
Geometric's conv layers, RecBole, the paper's code) writes it: the same module classes, nesting
and attribute names, the same functional-vs-module choices (ACT2FN activations are module
instances, F.dropout or nn.Dropout as the reference has it) and the residual sums where the
reference puts them. Decoders (Llama, Qwen2, Gemma 2, StableLM, MPT), BERT, T5 v1.1 with its
gated-GELU feed-forward, wav2vec 2.0, CLIP, vision transformers and hybrids (SegFormer, DINOv2
with registers), CNNs (transformers' ResNet; timm's ResNet-D, EfficientNet-B0, ConvNeXt,
NFNet, CSPDarknet53 and DLA; PSPNet), graphs (PyG's GAT, GIN and PNA), recommendation
(RecBole's BERT4Rec) and music source separation (Demucs). Every model's split is "tune": the
inference's rules may be tuned on it. No model name is shared with any other corpus.

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants2.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants2.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants2.
"""

import copy
import inspect
import math
import os
import sys
import warnings
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, ce_seg, ce_tokens, randint, randn  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# PyG's scatter for min/max uses Tensor.scatter_reduce_, which torch 1.13 calls beta
warnings.filterwarnings("ignore", message="scatter_reduce")

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


def causal_mask(n):
    """Additive causal mask (0 on and below the diagonal, the dtype's minimum above), the
    way Hugging Face's _make_causal_mask builds it."""
    m = torch.full((n, n), torch.finfo(torch.float32).min)
    return torch.triu(m, 1)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def init_weights(module, std=0.02):
    """transformers' _init_weights (what post_init applies): normal(0, std) Linear and
    Embedding weights, zero biases. Used where a tied head would start with huge logits."""
    if isinstance(module, (nn.Linear, nn.Conv1d)):
        module.weight.data.normal_(mean=0.0, std=std)
        if module.bias is not None:
            module.bias.data.zero_()
    elif isinstance(module, nn.Embedding):
        module.weight.data.normal_(mean=0.0, std=std)


class PytorchGELUTanh(nn.Module):
    """transformers' ACT2FN["gelu_pytorch_tanh"]."""

    def forward(self, input):
        return F.gelu(input, approximate="tanh")


class GELUActivation(nn.Module):
    """transformers' ACT2FN["gelu"]: a module holding the functional."""

    def __init__(self):
        super().__init__()
        self.act = F.gelu

    def forward(self, input):
        return self.act(input)


class NewGELUActivation(nn.Module):
    """transformers' ACT2FN["gelu_new"] (the tanh approximation written out)."""

    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class QuickGELUActivation(nn.Module):
    """transformers' ACT2FN["quick_gelu"]."""

    def forward(self, input):
        return input * torch.sigmoid(1.702 * input)


# ---------------------------------------------------------------------------------------
# Llama (transformers' LlamaForCausalLM): RMSNorm written out, a LlamaRotaryEmbedding module
# in each attention (cos/sin from position_ids), q/k/v/o_proj without biases, repeat_kv,
# functional softmax and dropout; the SwiGLU MLP with an ACT2FN SiLU module.


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


class LlamaAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, num_key_value_heads, bias=False, rope=LlamaRotaryEmbedding):
        super().__init__()
        self.hidden_size, self.num_heads = hidden_size, num_heads
        self.head_dim = hidden_size // num_heads
        self.num_key_value_heads = num_key_value_heads
        self.num_key_value_groups = num_heads // num_key_value_heads
        self.attention_dropout = 0.0
        self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)
        self.rotary_emb = rope(self.head_dim)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, position_ids)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, num_kv, intermediate_size):
        super().__init__()
        self.self_attn = LlamaAttention(hidden_size, num_heads, num_kv)
        self.mlp = LlamaMLP(hidden_size, intermediate_size)
        self.input_layernorm = LlamaRMSNorm(hidden_size)
        self.post_attention_layernorm = LlamaRMSNorm(hidden_size)

    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, attention_mask, position_ids)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class LlamaModel(nn.Module):
    def __init__(self, vocab, hidden_size, heads, kv, inter, layers, layer=LlamaDecoderLayer, norm=LlamaRMSNorm):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden_size)
        self.layers = nn.ModuleList([layer(hidden_size, heads, kv, inter) for _ in range(layers)])
        self.norm = norm(hidden_size)

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        n = input_ids.shape[1]
        position_ids = torch.arange(n).unsqueeze(0)
        mask = causal_mask(n)[None, None]
        hidden_states = inputs_embeds
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, mask, position_ids)
        return self.norm(hidden_states)


class LlamaForCausalLM(nn.Module):
    def __init__(self, vocab=512, hidden_size=64, heads=4, kv=4, inter=128, layers=3):
        super().__init__()
        self.model = LlamaModel(vocab, hidden_size, heads, kv, inter, layers)
        self.lm_head = nn.Linear(hidden_size, vocab, bias=False)

    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids))


# ---------------------------------------------------------------------------------------
# Qwen2 (transformers' Qwen2ForCausalLM): Llama's layout with biases on q/k/v_proj (none on
# o_proj) and grouped-query attention (4 query heads, 2 key/value heads); tied embeddings.


class Qwen2RMSNorm(LlamaRMSNorm):
    pass


class Qwen2RotaryEmbedding(LlamaRotaryEmbedding):
    pass


class Qwen2Attention(LlamaAttention):
    def __init__(self, hidden_size, num_heads, num_key_value_heads):
        super().__init__(hidden_size, num_heads, num_key_value_heads, bias=True, rope=Qwen2RotaryEmbedding)


class Qwen2MLP(LlamaMLP):
    pass


class Qwen2DecoderLayer(LlamaDecoderLayer):
    def __init__(self, hidden_size, num_heads, num_kv, intermediate_size):
        nn.Module.__init__(self)
        self.self_attn = Qwen2Attention(hidden_size, num_heads, num_kv)
        self.mlp = Qwen2MLP(hidden_size, intermediate_size)
        self.input_layernorm = Qwen2RMSNorm(hidden_size)
        self.post_attention_layernorm = Qwen2RMSNorm(hidden_size)


class Qwen2Model(LlamaModel):
    pass


class Qwen2ForCausalLM(nn.Module):
    def __init__(self, vocab=512, hidden_size=64, heads=4, kv=2, inter=160, layers=3):
        super().__init__()
        self.model = Qwen2Model(vocab, hidden_size, heads, kv, inter, layers, Qwen2DecoderLayer, Qwen2RMSNorm)
        self.lm_head = nn.Linear(hidden_size, vocab, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight
        self.apply(init_weights)

    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids))


# ---------------------------------------------------------------------------------------
# Gemma 2 (transformers' Gemma2ForCausalLM): the sandwich layout (input_layernorm before and
# post_attention_layernorm after attention, pre_ and post_feedforward_layernorm around the
# MLP, each before its residual sum), RMSNorm with (1 + weight), embeddings scaled by
# sqrt(hidden), a GELU-tanh gated MLP, attention logits soft-capped, a sliding window on every
# other layer, the final logits soft-capped; tied head.


class Gemma2RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class Gemma2RotaryEmbedding(LlamaRotaryEmbedding):
    pass


class Gemma2MLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = PytorchGELUTanh()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Gemma2Attention(nn.Module):
    def __init__(self, hidden_size, num_heads, num_kv, head_dim, layer_idx, sliding_window=8, softcap=50.0):
        super().__init__()
        self.num_heads, self.num_key_value_heads, self.head_dim = num_heads, num_kv, head_dim
        self.num_key_value_groups = num_heads // num_kv
        self.scaling = head_dim**-0.5  # query_pre_attn_scalar = head_dim
        self.attention_dropout = 0.0
        self.attn_logit_softcapping = softcap
        self.sliding_window = sliding_window if not bool(layer_idx % 2) else None
        self.q_proj = nn.Linear(hidden_size, num_heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_kv * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_kv * head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * head_dim, hidden_size, bias=False)
        self.rotary_emb = Gemma2RotaryEmbedding(head_dim)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim)
        key_states = key_states.transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim)
        value_states = value_states.transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, position_ids)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights / self.attn_logit_softcapping
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * self.attn_logit_softcapping
        if self.sliding_window is not None:
            min_dtype = torch.finfo(hidden_states.dtype).min
            sliding_window_mask = torch.tril(
                torch.ones_like(attention_mask, dtype=torch.bool), diagonal=-self.sliding_window
            )
            attention_mask = torch.where(sliding_window_mask, min_dtype, attention_mask)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().view(bsz, q_len, -1)
        return self.o_proj(attn_output)


class Gemma2DecoderLayer(nn.Module):
    def __init__(self, hidden_size, heads, kv, head_dim, inter, layer_idx):
        super().__init__()
        self.self_attn = Gemma2Attention(hidden_size, heads, kv, head_dim, layer_idx)
        self.mlp = Gemma2MLP(hidden_size, inter)
        self.input_layernorm = Gemma2RMSNorm(hidden_size)
        self.post_attention_layernorm = Gemma2RMSNorm(hidden_size)
        self.pre_feedforward_layernorm = Gemma2RMSNorm(hidden_size)
        self.post_feedforward_layernorm = Gemma2RMSNorm(hidden_size)

    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, attention_mask, position_ids)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_feedforward_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        return residual + hidden_states


class Gemma2Model(nn.Module):
    def __init__(self, vocab, hidden_size, heads, kv, head_dim, inter, layers):
        super().__init__()
        self.hidden_size = hidden_size
        self.embed_tokens = nn.Embedding(vocab, hidden_size, padding_idx=0)
        self.layers = nn.ModuleList(
            [Gemma2DecoderLayer(hidden_size, heads, kv, head_dim, inter, i) for i in range(layers)]
        )
        self.norm = Gemma2RMSNorm(hidden_size)

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        n = input_ids.shape[1]
        position_ids = torch.arange(n).unsqueeze(0)
        causal = causal_mask(n)[None, None]
        hidden_states = inputs_embeds
        normalizer = torch.tensor(self.hidden_size**0.5, dtype=hidden_states.dtype)
        hidden_states = hidden_states * normalizer
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, causal, position_ids)
        return self.norm(hidden_states)


class Gemma2ForCausalLM(nn.Module):
    def __init__(self, vocab=512, hidden_size=64, heads=4, kv=2, head_dim=16, inter=128, layers=2):
        super().__init__()
        self.final_logit_softcapping = 30.0
        self.model = Gemma2Model(vocab, hidden_size, heads, kv, head_dim, inter, layers)
        self.lm_head = nn.Linear(hidden_size, vocab, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight
        self.apply(init_weights)

    def forward(self, input_ids):
        logits = self.lm_head(self.model(input_ids))
        logits = logits / self.final_logit_softcapping
        logits = torch.tanh(logits)
        return logits * self.final_logit_softcapping


# ---------------------------------------------------------------------------------------
# StableLM (transformers' StableLmForCausalLM, stablelm-3b-4e1t layout): nn.LayerNorm norms,
# partial rotary (a quarter of each head rotated, the rest passed through and concatenated),
# an nn.Dropout module on the attention probabilities, parallel residual off (attention, then
# post_attention_layernorm and the SwiGLU MLP, an nn.Dropout before the second sum).


class StableLmRotaryEmbedding(LlamaRotaryEmbedding):
    pass


class StableLmMLP(LlamaMLP):
    pass


class StableLmAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, num_kv, partial_rotary_factor=0.25):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_kv
        self.head_dim = hidden_size // num_heads
        self.num_key_value_groups = num_heads // num_kv
        self.rotary_ndims = int(self.head_dim * partial_rotary_factor)
        self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.attention_dropout = nn.Dropout(0.0)
        self.rotary_emb = StableLmRotaryEmbedding(self.rotary_ndims)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, position_ids)
        query_rot, query_pass = query_states[..., : self.rotary_ndims], query_states[..., self.rotary_ndims :]
        key_rot, key_pass = key_states[..., : self.rotary_ndims], key_states[..., self.rotary_ndims :]
        query_rot, key_rot = apply_rotary_pos_emb(query_rot, key_rot, cos, sin)
        query_states = torch.cat((query_rot, query_pass), dim=-1)
        key_states = torch.cat((key_rot, key_pass), dim=-1)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dtype=torch.float32, dim=-1).to(value_states.dtype)
        attn_weights = self.attention_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)


class StableLmDecoderLayer(nn.Module):
    def __init__(self, hidden_size, heads, kv, inter):
        super().__init__()
        self.use_parallel_residual = False
        self.self_attn = StableLmAttention(hidden_size, heads, kv)
        self.mlp = StableLmMLP(hidden_size, inter)
        self.input_layernorm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.post_attention_layernorm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        self_attn_output = self.self_attn(hidden_states, attention_mask, position_ids)
        residual = residual + self_attn_output
        mlp_output = self.mlp(self.post_attention_layernorm(residual))
        mlp_output = self.dropout(mlp_output)
        return residual + mlp_output


class StableLmModel(LlamaModel):
    pass


class StableLmForCausalLM(nn.Module):
    def __init__(self, vocab=512, hidden_size=64, heads=4, kv=4, inter=160, layers=3):
        super().__init__()
        self.model = StableLmModel(
            vocab, hidden_size, heads, kv, inter, layers, StableLmDecoderLayer, lambda d: nn.LayerNorm(d, eps=1e-5)
        )
        self.lm_head = nn.Linear(hidden_size, vocab, bias=False)

    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids))


# ---------------------------------------------------------------------------------------
# MPT (transformers' MptForCausalLM): ALiBi built per forward by build_mpt_alibi_tensor,
# LayerNorms with their bias removed, a fused bias-free Wqkv chunked in three, out_proj, an
# MptMLP (up_proj, GELU module, down_proj) that adds the residual itself; tied head.


def build_mpt_alibi_tensor(num_heads, sequence_length, alibi_bias_max=8):
    alibi = torch.arange(1 - sequence_length, 1, dtype=torch.int32).view(1, 1, 1, sequence_length)
    num_heads_power_of_2 = 2 ** math.ceil(math.log2(num_heads))
    base = torch.arange(1, num_heads_power_of_2 + 1, dtype=torch.int64).float()
    base = base * (alibi_bias_max / num_heads_power_of_2)
    slopes = 1.0 / torch.pow(2, base)
    slopes = slopes.view(1, num_heads_power_of_2, 1, 1)
    if num_heads_power_of_2 != num_heads:
        slopes = torch.concat([slopes[:, 1::2, ...], slopes[:, ::2, ...]], dim=1)[:, :num_heads, ...]
    alibi = alibi * slopes
    return alibi.squeeze(0)


class MptAttention(nn.Module):
    def __init__(self, hidden_size, n_heads):
        super().__init__()
        self.hidden_size, self.n_heads = hidden_size, n_heads
        self.head_dim = hidden_size // n_heads
        self.softmax_scale = 1 / math.sqrt(self.head_dim)
        self.attn_dropout_p = 0.0
        self.Wqkv = nn.Linear(hidden_size, 3 * hidden_size, bias=False)
        self.out_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states, position_bias, attention_mask):
        batch_size, seq_length = hidden_states.shape[:2]
        mixed_qkv = self.Wqkv(hidden_states)
        query_states, key_states, value_states = mixed_qkv.chunk(3, dim=2)
        query_states = query_states.reshape(batch_size, seq_length, self.n_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.reshape(batch_size, seq_length, self.n_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.reshape(batch_size, seq_length, self.n_heads, self.head_dim).transpose(1, 2)
        attention_scores = torch.matmul(query_states, key_states.transpose(-1, -2)) * self.softmax_scale
        query_length = seq_length
        key_length = key_states.shape[-2]
        position_bias_query_index = max(0, position_bias.size(1) - query_length)
        position_bias_key_index = max(0, position_bias.size(2) - key_length)
        position_bias = position_bias[:, position_bias_query_index:, position_bias_key_index:]
        attention_scores = attention_scores + position_bias
        attention_scores = attention_scores.masked_fill(attention_mask, torch.finfo(query_states.dtype).min)
        attn_weights = F.softmax(attention_scores.float(), dim=-1).to(value_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attn_dropout_p, training=self.training)
        context_states = torch.matmul(attn_weights, value_states)
        context_states = context_states.permute(0, 2, 1, 3).contiguous().view(batch_size, seq_length, -1)
        return self.out_proj(context_states)


class MptMLP(nn.Module):
    def __init__(self, hidden_size, expansion_ratio=4):
        super().__init__()
        self.up_proj = nn.Linear(hidden_size, expansion_ratio * hidden_size, bias=False)
        self.act = nn.GELU(approximate="none")
        self.down_proj = nn.Linear(expansion_ratio * hidden_size, hidden_size, bias=False)
        self.hidden_dropout = 0.0

    def forward(self, hidden_states, residual):
        hidden_states = self.act(self.up_proj(hidden_states))
        intermediate_output = self.down_proj(hidden_states)
        output = F.dropout(intermediate_output, p=self.hidden_dropout, training=self.training)
        return output + residual


class MptBlock(nn.Module):
    def __init__(self, hidden_size, n_heads):
        super().__init__()
        self.norm_1 = nn.LayerNorm(hidden_size, eps=1e-5)
        self.norm_1.bias = None
        self.attn = MptAttention(hidden_size, n_heads)
        self.norm_2 = nn.LayerNorm(hidden_size, eps=1e-5)
        self.norm_2.bias = None
        self.ffn = MptMLP(hidden_size)
        self.dropout_rate = 0.0
        self.resid_attn_dropout = nn.Dropout(p=self.dropout_rate)

    def forward(self, hidden_states, position_bias, attention_mask):
        layernorm_output = self.norm_1(hidden_states)
        residual = hidden_states
        attn_outputs = self.attn(layernorm_output, position_bias=position_bias, attention_mask=attention_mask)
        hidden_states = self.resid_attn_dropout(attn_outputs) + residual
        layernorm_output = self.norm_2(hidden_states)
        residual = hidden_states
        return self.ffn(layernorm_output, residual)


class MptModel(nn.Module):
    def __init__(self, vocab, hidden_size, n_heads, n_layers, max_seq_len=64):
        super().__init__()
        self.num_heads, self.max_seq_len = n_heads, max_seq_len
        self.wte = nn.Embedding(vocab, hidden_size)
        self.blocks = nn.ModuleList([MptBlock(hidden_size, n_heads) for _ in range(n_layers)])
        self.norm_f = nn.LayerNorm(hidden_size, eps=1e-5)
        self.norm_f.bias = None

    def forward(self, input_ids, attention_mask):
        hidden_states = self.wte(input_ids)
        n = input_ids.shape[1]
        alibi = build_mpt_alibi_tensor(self.num_heads, self.max_seq_len)
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)[None, None]
        padding = ~attention_mask.bool()[:, None, None, :]
        mask = causal | padding
        for block in self.blocks:
            hidden_states = block(hidden_states, position_bias=alibi, attention_mask=mask)
        return self.norm_f(hidden_states)


class MptForCausalLM(nn.Module):
    def __init__(self, vocab=512, hidden_size=64, n_heads=4, n_layers=3):
        super().__init__()
        self.transformer = MptModel(vocab, hidden_size, n_heads, n_layers)
        self.lm_head = nn.Linear(hidden_size, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight
        self.apply(init_weights)

    def forward(self, input_ids, attention_mask):
        return self.lm_head(self.transformer(input_ids, attention_mask))


# ---------------------------------------------------------------------------------------
# BERT (transformers' BertForSequenceClassification): BertEmbeddings (word, position and
# token-type embeddings, LayerNorm, Dropout), BertLayer = BertAttention(BertSelfAttention,
# BertSelfOutput) + BertIntermediate (dense, GELUActivation) + BertOutput (dense, dropout,
# LayerNorm of the sum), BertPooler (dense, Tanh on the first token), dropout, classifier.


class BertEmbeddings(nn.Module):
    def __init__(self, vocab, hidden, max_pos=64, type_vocab=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)), persistent=False)
        self.register_buffer(
            "token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long), persistent=False
        )

    def forward(self, input_ids, token_type_ids=None):
        seq_length = input_ids.shape[1]
        position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            token_type_ids = self.token_type_ids[:, :seq_length].expand(input_ids.shape[0], seq_length)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        return self.dropout(embeddings)


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = hidden // heads
        self.all_head_size = hidden
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(0.1)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        attention_probs = F.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class BertSelfOutput(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.self = BertSelfAttention(hidden, heads)
        self.output = BertSelfOutput(hidden)

    def forward(self, hidden_states, attention_mask):
        self_outputs = self.self(hidden_states, attention_mask)
        return self.output(self_outputs, hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.dense = nn.Linear(hidden, inter)
        self.intermediate_act_fn = GELUActivation()

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        return self.intermediate_act_fn(hidden_states)


class BertOutput(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.dense = nn.Linear(inter, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, inter):
        super().__init__()
        self.attention = BertAttention(hidden, heads)
        self.intermediate = BertIntermediate(hidden, inter)
        self.output = BertOutput(hidden, inter)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        intermediate_output = self.intermediate(attention_output)
        return self.output(intermediate_output, attention_output)


class BertEncoder(nn.Module):
    def __init__(self, hidden, heads, inter, layers):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(hidden, heads, inter) for _ in range(layers)])

    def forward(self, hidden_states, attention_mask):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask)
        return hidden_states


class BertPooler(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        pooled_output = self.dense(first_token_tensor)
        return self.activation(pooled_output)


class BertModel(nn.Module):
    def __init__(self, vocab, hidden, heads, inter, layers):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, hidden)
        self.encoder = BertEncoder(hidden, heads, inter, layers)
        self.pooler = BertPooler(hidden)

    def forward(self, input_ids, attention_mask, token_type_ids):
        extended_attention_mask = attention_mask[:, None, None, :].to(torch.float32)
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(torch.float32).min
        embedding_output = self.embeddings(input_ids, token_type_ids)
        sequence_output = self.encoder(embedding_output, extended_attention_mask)
        return self.pooler(sequence_output)


class BertForSequenceClassification(nn.Module):
    def __init__(self, vocab=600, hidden=64, heads=4, inter=128, layers=3, num_labels=3):
        super().__init__()
        self.bert = BertModel(vocab, hidden, heads, inter, layers)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(hidden, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids):
        pooled_output = self.bert(input_ids, attention_mask, token_type_ids)
        pooled_output = self.dropout(pooled_output)
        return self.classifier(pooled_output)


# ---------------------------------------------------------------------------------------
# T5 v1.1 (transformers' T5ForConditionalGeneration, feed_forward_proj "gated-gelu", untied
# head): T5LayerNorm (RMS, no bias), T5Attention with unscaled scores and a
# relative_attention_bias Embedding in the first block only (its position_bias passed on to
# the later blocks), T5Block = ModuleList of T5LayerSelfAttention, T5LayerCrossAttention and
# T5LayerFF, the FF being T5DenseGatedActDense (wi_0 / NewGELU, wi_1, dropout, wo); one
# `shared` Embedding called as both stacks' embed_tokens.


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class T5DenseGatedActDense(nn.Module):
    def __init__(self, d_model, d_ff, dropout_rate=0.1):
        super().__init__()
        self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
        self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(dropout_rate)
        self.act = NewGELUActivation()

    def forward(self, hidden_states):
        hidden_gelu = self.act(self.wi_0(hidden_states))
        hidden_linear = self.wi_1(hidden_states)
        hidden_states = hidden_gelu * hidden_linear
        hidden_states = self.dropout(hidden_states)
        return self.wo(hidden_states)


class T5LayerFF(nn.Module):
    def __init__(self, d_model, d_ff, dropout_rate=0.1):
        super().__init__()
        self.DenseReluDense = T5DenseGatedActDense(d_model, d_ff, dropout_rate)
        self.layer_norm = T5LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, hidden_states):
        forwarded_states = self.layer_norm(hidden_states)
        forwarded_states = self.DenseReluDense(forwarded_states)
        return hidden_states + self.dropout(forwarded_states)


class T5Attention(nn.Module):
    def __init__(self, d_model, d_kv, n_heads, is_decoder, has_relative_attention_bias, num_buckets=32,
                 max_distance=128):
        super().__init__()
        self.is_decoder = is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = num_buckets
        self.relative_attention_max_distance = max_distance
        self.n_heads, self.key_value_proj_dim = n_heads, d_kv
        self.inner_dim = n_heads * d_kv
        self.dropout = 0.1
        self.q = nn.Linear(d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, d_model, bias=False)
        if self.has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
        )
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length):
        context_position = torch.arange(query_length, dtype=torch.long)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position,
            bidirectional=(not self.is_decoder),
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance,
        )
        values = self.relative_attention_bias(relative_position_bucket)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, mask=None, key_value_states=None, position_bias=None):
        batch_size, seq_length = hidden_states.shape[:2]
        key_length = seq_length if key_value_states is None else key_value_states.shape[1]

        def shape(states):
            return states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        def unshape(states):
            return states.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)

        query_states = shape(self.q(hidden_states))
        source = hidden_states if key_value_states is None else key_value_states
        key_states = shape(self.k(source))
        value_states = shape(self.v(source))
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, seq_length, key_length), dtype=scores.dtype)
            else:
                position_bias = self.compute_bias(seq_length, key_length)
            if mask is not None:
                position_bias = position_bias + mask
        scores += position_bias
        attn_weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = F.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = unshape(torch.matmul(attn_weights, value_states))
        attn_output = self.o(attn_output)
        return attn_output, position_bias


class T5LayerSelfAttention(nn.Module):
    def __init__(self, d_model, d_kv, n_heads, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.SelfAttention = T5Attention(d_model, d_kv, n_heads, is_decoder, has_relative_attention_bias)
        self.layer_norm = T5LayerNorm(d_model)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, attention_mask=None, position_bias=None):
        normed_hidden_states = self.layer_norm(hidden_states)
        attention_output = self.SelfAttention(normed_hidden_states, mask=attention_mask, position_bias=position_bias)
        hidden_states = hidden_states + self.dropout(attention_output[0])
        return hidden_states, attention_output[1]


class T5LayerCrossAttention(nn.Module):
    def __init__(self, d_model, d_kv, n_heads):
        super().__init__()
        self.EncDecAttention = T5Attention(d_model, d_kv, n_heads, True, False)
        self.layer_norm = T5LayerNorm(d_model)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, key_value_states, attention_mask=None, position_bias=None):
        normed_hidden_states = self.layer_norm(hidden_states)
        attention_output = self.EncDecAttention(
            normed_hidden_states, mask=attention_mask, key_value_states=key_value_states, position_bias=position_bias
        )
        layer_output = hidden_states + self.dropout(attention_output[0])
        return layer_output, attention_output[1]


class T5Block(nn.Module):
    def __init__(self, d_model, d_kv, n_heads, d_ff, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.is_decoder = is_decoder
        self.layer = nn.ModuleList()
        self.layer.append(T5LayerSelfAttention(d_model, d_kv, n_heads, is_decoder, has_relative_attention_bias))
        if self.is_decoder:
            self.layer.append(T5LayerCrossAttention(d_model, d_kv, n_heads))
        self.layer.append(T5LayerFF(d_model, d_ff))

    def forward(self, hidden_states, attention_mask, position_bias, encoder_hidden_states=None,
                encoder_attention_mask=None, encoder_decoder_position_bias=None):
        hidden_states, position_bias = self.layer[0](hidden_states, attention_mask, position_bias)
        if self.is_decoder:
            hidden_states, encoder_decoder_position_bias = self.layer[1](
                hidden_states, encoder_hidden_states, encoder_attention_mask, encoder_decoder_position_bias
            )
        hidden_states = self.layer[-1](hidden_states)
        return hidden_states, position_bias, encoder_decoder_position_bias


class T5Stack(nn.Module):
    def __init__(self, embed_tokens, d_model, d_kv, n_heads, d_ff, num_layers, is_decoder):
        super().__init__()
        self.embed_tokens = embed_tokens
        self.is_decoder = is_decoder
        self.block = nn.ModuleList(
            [T5Block(d_model, d_kv, n_heads, d_ff, is_decoder, bool(i == 0)) for i in range(num_layers)]
        )
        self.final_layer_norm = T5LayerNorm(d_model)
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids, attention_mask, encoder_hidden_states=None, encoder_attention_mask=None):
        inputs_embeds = self.embed_tokens(input_ids)
        batch_size, seq_length = input_ids.shape
        min_value = torch.finfo(torch.float32).min
        if self.is_decoder:
            extended_attention_mask = causal_mask(seq_length)[None, None]
            encoder_extended_attention_mask = (1.0 - encoder_attention_mask[:, None, None, :].float()) * min_value
        else:
            extended_attention_mask = (1.0 - attention_mask[:, None, None, :].float()) * min_value
            encoder_extended_attention_mask = None
        position_bias = None
        encoder_decoder_position_bias = None
        hidden_states = self.dropout(inputs_embeds)
        for layer_module in self.block:
            hidden_states, position_bias, encoder_decoder_position_bias = layer_module(
                hidden_states,
                extended_attention_mask,
                position_bias,
                encoder_hidden_states,
                encoder_extended_attention_mask,
                encoder_decoder_position_bias,
            )
        hidden_states = self.final_layer_norm(hidden_states)
        return self.dropout(hidden_states)


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, vocab=512, d_model=64, d_kv=16, n_heads=4, d_ff=128, layers=2):
        super().__init__()
        self.shared = nn.Embedding(vocab, d_model)
        self.encoder = T5Stack(self.shared, d_model, d_kv, n_heads, d_ff, layers, False)
        self.decoder = T5Stack(self.shared, d_model, d_kv, n_heads, d_ff, layers, True)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.apply(init_weights)

    def _shift_right(self, input_ids, decoder_start_token_id=0, pad_token_id=0):
        shifted_input_ids = input_ids.new_zeros(input_ids.shape)
        shifted_input_ids[..., 1:] = input_ids[..., :-1].clone()
        shifted_input_ids[..., 0] = decoder_start_token_id
        return shifted_input_ids.masked_fill(shifted_input_ids == -100, pad_token_id)

    def forward(self, input_ids, attention_mask, labels):
        hidden_states = self.encoder(input_ids, attention_mask)
        decoder_input_ids = self._shift_right(labels)
        sequence_output = self.decoder(
            decoder_input_ids, None, encoder_hidden_states=hidden_states, encoder_attention_mask=attention_mask
        )
        return self.lm_head(sequence_output)


# ---------------------------------------------------------------------------------------
# wav2vec 2.0 (transformers' Wav2Vec2ForCTC, base layout: feat_extract_norm "group",
# do_stable_layer_norm off): Wav2Vec2FeatureEncoder of Wav2Vec2GroupNormConvLayer (conv,
# GroupNorm, GELU) then Wav2Vec2NoLayerNormConvLayers, Wav2Vec2FeatureProjection (LayerNorm,
# projection, dropout), Wav2Vec2PositionalConvEmbedding (a weight-normed grouped conv, a
# SamePad layer, GELU), post-norm Wav2Vec2EncoderLayers (BART-style attention, dropout,
# residual, layer_norm, feed-forward residual, final_layer_norm), LayerDrop's draw, lm_head.


class Wav2Vec2NoLayerNormConvLayer(nn.Module):
    def __init__(self, in_conv_dim, out_conv_dim, kernel, stride):
        super().__init__()
        self.conv = nn.Conv1d(in_conv_dim, out_conv_dim, kernel_size=kernel, stride=stride, bias=False)
        self.activation = GELUActivation()

    def forward(self, hidden_states):
        hidden_states = self.conv(hidden_states)
        return self.activation(hidden_states)


class Wav2Vec2GroupNormConvLayer(nn.Module):
    def __init__(self, in_conv_dim, out_conv_dim, kernel, stride):
        super().__init__()
        self.conv = nn.Conv1d(in_conv_dim, out_conv_dim, kernel_size=kernel, stride=stride, bias=False)
        self.activation = GELUActivation()
        self.layer_norm = nn.GroupNorm(num_groups=out_conv_dim, num_channels=out_conv_dim, affine=True)

    def forward(self, hidden_states):
        hidden_states = self.conv(hidden_states)
        hidden_states = self.layer_norm(hidden_states)
        return self.activation(hidden_states)


class Wav2Vec2FeatureEncoder(nn.Module):
    def __init__(self, conv_dim, conv_kernel, conv_stride):
        super().__init__()
        layers = [Wav2Vec2GroupNormConvLayer(1, conv_dim[0], conv_kernel[0], conv_stride[0])]
        for i in range(1, len(conv_dim)):
            layers.append(Wav2Vec2NoLayerNormConvLayer(conv_dim[i - 1], conv_dim[i], conv_kernel[i], conv_stride[i]))
        self.conv_layers = nn.ModuleList(layers)
        self._requires_grad = True

    def forward(self, input_values):
        hidden_states = input_values[:, None]
        if self._requires_grad and self.training:
            hidden_states.requires_grad = True
        for conv_layer in self.conv_layers:
            hidden_states = conv_layer(hidden_states)
        return hidden_states


class Wav2Vec2FeatureProjection(nn.Module):
    def __init__(self, conv_dim, hidden_size):
        super().__init__()
        self.layer_norm = nn.LayerNorm(conv_dim, eps=1e-5)
        self.projection = nn.Linear(conv_dim, hidden_size)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states):
        norm_hidden_states = self.layer_norm(hidden_states)
        hidden_states = self.projection(norm_hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states, norm_hidden_states


class Wav2Vec2SamePadLayer(nn.Module):
    def __init__(self, num_conv_pos_embeddings):
        super().__init__()
        self.num_pad_remove = 1 if num_conv_pos_embeddings % 2 == 0 else 0

    def forward(self, hidden_states):
        if self.num_pad_remove > 0:
            hidden_states = hidden_states[:, :, : -self.num_pad_remove]
        return hidden_states


class Wav2Vec2PositionalConvEmbedding(nn.Module):
    def __init__(self, hidden_size, num_conv_pos_embeddings=16, groups=16):
        super().__init__()
        self.conv = nn.Conv1d(
            hidden_size,
            hidden_size,
            kernel_size=num_conv_pos_embeddings,
            padding=num_conv_pos_embeddings // 2,
            groups=groups,
        )
        # transformers uses nn.utils.parametrizations.weight_norm where torch has it (2.1+);
        # on torch 1.13 it falls back to nn.utils.weight_norm, as here
        self.conv = nn.utils.weight_norm(self.conv, name="weight", dim=2)
        self.padding = Wav2Vec2SamePadLayer(num_conv_pos_embeddings)
        self.activation = GELUActivation()

    def forward(self, hidden_states):
        hidden_states = hidden_states.transpose(1, 2)
        hidden_states = self.conv(hidden_states)
        hidden_states = self.padding(hidden_states)
        hidden_states = self.activation(hidden_states)
        return hidden_states.transpose(1, 2)


class Wav2Vec2Attention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.1):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**-0.5
        self.dropout = dropout
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_probs = F.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output), attn_weights, None


class Wav2Vec2FeedForward(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.intermediate_dropout = nn.Dropout(0.1)
        self.intermediate_dense = nn.Linear(hidden_size, intermediate_size)
        self.intermediate_act_fn = GELUActivation()
        self.output_dense = nn.Linear(intermediate_size, hidden_size)
        self.output_dropout = nn.Dropout(0.1)

    def forward(self, hidden_states):
        hidden_states = self.intermediate_dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)
        hidden_states = self.intermediate_dropout(hidden_states)
        hidden_states = self.output_dense(hidden_states)
        return self.output_dropout(hidden_states)


class Wav2Vec2EncoderLayer(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size):
        super().__init__()
        self.attention = Wav2Vec2Attention(hidden_size, heads)
        self.dropout = nn.Dropout(0.1)
        self.layer_norm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.feed_forward = Wav2Vec2FeedForward(hidden_size, intermediate_size)
        self.final_layer_norm = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, hidden_states):
        attn_residual = hidden_states
        hidden_states, attn_weights, _ = self.attention(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = attn_residual + hidden_states
        hidden_states = self.layer_norm(hidden_states)
        hidden_states = hidden_states + self.feed_forward(hidden_states)
        return self.final_layer_norm(hidden_states)


class Wav2Vec2Encoder(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size, layers, layerdrop=0.0):
        super().__init__()
        self.pos_conv_embed = Wav2Vec2PositionalConvEmbedding(hidden_size)
        self.layer_norm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList(
            [Wav2Vec2EncoderLayer(hidden_size, heads, intermediate_size) for _ in range(layers)]
        )
        self.layerdrop = layerdrop

    def forward(self, hidden_states):
        position_embeddings = self.pos_conv_embed(hidden_states)
        hidden_states = hidden_states + position_embeddings
        hidden_states = self.layer_norm(hidden_states)
        hidden_states = self.dropout(hidden_states)
        for layer in self.layers:
            dropout_probability = torch.rand([])
            skip_the_layer = True if self.training and (dropout_probability < self.layerdrop) else False
            if not skip_the_layer:
                hidden_states = layer(hidden_states)
        return hidden_states


class Wav2Vec2Model(nn.Module):
    def __init__(self, conv_dim, conv_kernel, conv_stride, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.feature_extractor = Wav2Vec2FeatureEncoder(conv_dim, conv_kernel, conv_stride)
        self.feature_projection = Wav2Vec2FeatureProjection(conv_dim[-1], hidden_size)
        # mask_time_prob is 0 here: SpecAugment's numpy mask drawing is left out, the
        # parameter stays (unused, as in transformers with masking off)
        self.masked_spec_embed = nn.Parameter(torch.Tensor(hidden_size).uniform_())
        self.encoder = Wav2Vec2Encoder(hidden_size, heads, intermediate_size, layers)

    def forward(self, input_values):
        extract_features = self.feature_extractor(input_values)
        extract_features = extract_features.transpose(1, 2)
        hidden_states, extract_features = self.feature_projection(extract_features)
        return self.encoder(hidden_states)


class Wav2Vec2ForCTC(nn.Module):
    def __init__(self, conv_dim=(32, 32, 32, 32, 32), conv_kernel=(10, 3, 3, 3, 2), conv_stride=(5, 2, 2, 2, 2),
                 hidden_size=64, heads=4, intermediate_size=128, layers=2, vocab=32):
        super().__init__()
        self.wav2vec2 = Wav2Vec2Model(conv_dim, conv_kernel, conv_stride, hidden_size, heads, intermediate_size, layers)
        self.dropout = nn.Dropout(0.1)
        self.lm_head = nn.Linear(hidden_size, vocab)

    def forward(self, input_values):
        hidden_states = self.wav2vec2(input_values)
        hidden_states = self.dropout(hidden_states)
        return self.lm_head(hidden_states)


def ctc_logits(logits, labels):
    """Wav2Vec2ForCTC's loss: float32 log_softmax, time-major, CTC with blank 0."""
    log_probs = F.log_softmax(logits, dim=-1, dtype=torch.float32).transpose(0, 1)
    b, t = logits.shape[:2]
    return F.ctc_loss(
        log_probs,
        labels,
        torch.full((b,), t, dtype=torch.long),
        torch.full((b,), labels.shape[1], dtype=torch.long),
        blank=0,
        reduction="mean",
        zero_infinity=False,
    )


# ---------------------------------------------------------------------------------------
# SegFormer (transformers' SegformerForSemanticSegmentation, MiT-b0 layout shrunk):
# SegformerOverlapPatchEmbeddings (strided conv with padding, flatten, LayerNorm),
# SegformerEfficientSelfAttention (query/key/value, the keys' sequence reduced by an `sr`
# conv and a LayerNorm), SegformerSelfOutput, SegformerMixFFN (dense1, a SegformerDWConv
# depthwise 3x3, GELU, one dropout module called twice, dense2), SegformerDropPath; the
# all-MLP SegformerDecodeHead (a SegformerMLP per stage, bilinear upsampling, concatenation
# in reverse, linear_fuse 1x1 conv, BatchNorm, ReLU, dropout, classifier), logits upsampled.


class SegformerDropPath(nn.Module):
    def __init__(self, drop_prob):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, hidden_states):
        if self.drop_prob == 0.0 or not self.training:
            return hidden_states
        keep_prob = 1 - self.drop_prob
        shape = (hidden_states.shape[0],) + (1,) * (hidden_states.ndim - 1)
        random_tensor = keep_prob + torch.rand(shape, dtype=hidden_states.dtype)
        random_tensor.floor_()
        return hidden_states.div(keep_prob) * random_tensor


class SegformerOverlapPatchEmbeddings(nn.Module):
    def __init__(self, patch_size, stride, num_channels, hidden_size):
        super().__init__()
        self.proj = nn.Conv2d(num_channels, hidden_size, kernel_size=patch_size, stride=stride, padding=patch_size // 2)
        self.layer_norm = nn.LayerNorm(hidden_size)

    def forward(self, pixel_values):
        embeddings = self.proj(pixel_values)
        _, _, height, width = embeddings.shape
        embeddings = embeddings.flatten(2).transpose(1, 2)
        embeddings = self.layer_norm(embeddings)
        return embeddings, height, width


class SegformerEfficientSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, sequence_reduction_ratio):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = hidden_size
        self.query = nn.Linear(hidden_size, self.all_head_size)
        self.key = nn.Linear(hidden_size, self.all_head_size)
        self.value = nn.Linear(hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(0.0)
        self.sr_ratio = sequence_reduction_ratio
        if sequence_reduction_ratio > 1:
            self.sr = nn.Conv2d(
                hidden_size, hidden_size, kernel_size=sequence_reduction_ratio, stride=sequence_reduction_ratio
            )
            self.layer_norm = nn.LayerNorm(hidden_size)

    def transpose_for_scores(self, hidden_states):
        new_shape = hidden_states.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return hidden_states.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, height, width):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        if self.sr_ratio > 1:
            batch_size, seq_len, num_channels = hidden_states.shape
            hidden_states = hidden_states.permute(0, 2, 1).reshape(batch_size, num_channels, height, width)
            hidden_states = self.sr(hidden_states)
            hidden_states = hidden_states.reshape(batch_size, num_channels, -1).permute(0, 2, 1)
            hidden_states = self.layer_norm(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_probs = F.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class SegformerSelfOutput(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        return self.dropout(hidden_states)


class SegformerAttention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, sequence_reduction_ratio):
        super().__init__()
        self.self = SegformerEfficientSelfAttention(hidden_size, num_attention_heads, sequence_reduction_ratio)
        self.output = SegformerSelfOutput(hidden_size)

    def forward(self, hidden_states, height, width):
        self_outputs = self.self(hidden_states, height, width)
        return self.output(self_outputs, hidden_states)


class SegformerDWConv(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 3, 1, 1, bias=True, groups=dim)

    def forward(self, hidden_states, height, width):
        batch_size, seq_len, num_channels = hidden_states.shape
        hidden_states = hidden_states.transpose(1, 2).view(batch_size, num_channels, height, width)
        hidden_states = self.dwconv(hidden_states)
        return hidden_states.flatten(2).transpose(1, 2)


class SegformerMixFFN(nn.Module):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.dense1 = nn.Linear(in_features, hidden_features)
        self.dwconv = SegformerDWConv(hidden_features)
        self.intermediate_act_fn = GELUActivation()
        self.dense2 = nn.Linear(hidden_features, in_features)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states, height, width):
        hidden_states = self.dense1(hidden_states)
        hidden_states = self.dwconv(hidden_states, height, width)
        hidden_states = self.intermediate_act_fn(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.dense2(hidden_states)
        return self.dropout(hidden_states)


class SegformerLayer(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, drop_path, sequence_reduction_ratio, mlp_ratio):
        super().__init__()
        self.layer_norm_1 = nn.LayerNorm(hidden_size)
        self.attention = SegformerAttention(hidden_size, num_attention_heads, sequence_reduction_ratio)
        self.drop_path = SegformerDropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.layer_norm_2 = nn.LayerNorm(hidden_size)
        self.mlp = SegformerMixFFN(hidden_size, int(hidden_size * mlp_ratio))

    def forward(self, hidden_states, height, width):
        attention_output = self.attention(self.layer_norm_1(hidden_states), height, width)
        attention_output = self.drop_path(attention_output)
        hidden_states = attention_output + hidden_states
        mlp_output = self.mlp(self.layer_norm_2(hidden_states), height, width)
        mlp_output = self.drop_path(mlp_output)
        return mlp_output + hidden_states


class SegformerEncoder(nn.Module):
    def __init__(self, hidden_sizes, depths, heads, sr_ratios, patch_sizes, strides, mlp_ratio=4, drop_path_rate=0.1):
        super().__init__()
        drop_path_decays = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        embeddings = []
        for i in range(len(depths)):
            embeddings.append(
                SegformerOverlapPatchEmbeddings(
                    patch_sizes[i], strides[i], 3 if i == 0 else hidden_sizes[i - 1], hidden_sizes[i]
                )
            )
        self.patch_embeddings = nn.ModuleList(embeddings)
        blocks, cur = [], 0
        for i in range(len(depths)):
            if i != 0:
                cur += depths[i - 1]
            layers = [
                SegformerLayer(hidden_sizes[i], heads[i], drop_path_decays[cur + j], sr_ratios[i], mlp_ratio)
                for j in range(depths[i])
            ]
            blocks.append(nn.ModuleList(layers))
        self.block = nn.ModuleList(blocks)
        self.layer_norm = nn.ModuleList([nn.LayerNorm(hidden_sizes[i]) for i in range(len(depths))])

    def forward(self, pixel_values):
        all_hidden_states = ()
        batch_size = pixel_values.shape[0]
        hidden_states = pixel_values
        for idx, x in enumerate(zip(self.patch_embeddings, self.block, self.layer_norm)):
            embedding_layer, block_layer, norm_layer = x
            hidden_states, height, width = embedding_layer(hidden_states)
            for blk in block_layer:
                hidden_states = blk(hidden_states, height, width)
            hidden_states = norm_layer(hidden_states)
            hidden_states = hidden_states.reshape(batch_size, height, width, -1).permute(0, 3, 1, 2).contiguous()
            all_hidden_states = all_hidden_states + (hidden_states,)
        return all_hidden_states


class SegformerModel(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.encoder = SegformerEncoder(**kw)

    def forward(self, pixel_values):
        return self.encoder(pixel_values)


class SegformerMLP(nn.Module):
    def __init__(self, input_dim, decoder_hidden_size):
        super().__init__()
        self.proj = nn.Linear(input_dim, decoder_hidden_size)

    def forward(self, hidden_states):
        hidden_states = hidden_states.flatten(2).transpose(1, 2)
        return self.proj(hidden_states)


class SegformerDecodeHead(nn.Module):
    def __init__(self, hidden_sizes, decoder_hidden_size, num_labels):
        super().__init__()
        self.linear_c = nn.ModuleList([SegformerMLP(h, decoder_hidden_size) for h in hidden_sizes])
        self.linear_fuse = nn.Conv2d(
            decoder_hidden_size * len(hidden_sizes), decoder_hidden_size, kernel_size=1, bias=False
        )
        self.batch_norm = nn.BatchNorm2d(decoder_hidden_size)
        self.activation = nn.ReLU()
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Conv2d(decoder_hidden_size, num_labels, kernel_size=1)

    def forward(self, encoder_hidden_states):
        batch_size = encoder_hidden_states[-1].shape[0]
        all_hidden_states = ()
        for encoder_hidden_state, mlp in zip(encoder_hidden_states, self.linear_c):
            height, width = encoder_hidden_state.shape[2], encoder_hidden_state.shape[3]
            encoder_hidden_state = mlp(encoder_hidden_state)
            encoder_hidden_state = encoder_hidden_state.permute(0, 2, 1)
            encoder_hidden_state = encoder_hidden_state.reshape(batch_size, -1, height, width)
            encoder_hidden_state = F.interpolate(
                encoder_hidden_state, size=encoder_hidden_states[0].size()[2:], mode="bilinear", align_corners=False
            )
            all_hidden_states += (encoder_hidden_state,)
        hidden_states = self.linear_fuse(torch.cat(all_hidden_states[::-1], dim=1))
        hidden_states = self.batch_norm(hidden_states)
        hidden_states = self.activation(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return self.classifier(hidden_states)


class SegformerForSemanticSegmentation(nn.Module):
    def __init__(self, hidden_sizes=(16, 32, 48, 64), depths=(2, 2, 2, 2), heads=(1, 2, 3, 4), num_labels=4):
        super().__init__()
        self.segformer = SegformerModel(
            hidden_sizes=hidden_sizes,
            depths=depths,
            heads=heads,
            sr_ratios=(8, 4, 2, 1),
            patch_sizes=(7, 3, 3, 3),
            strides=(4, 2, 2, 2),
        )
        self.decode_head = SegformerDecodeHead(hidden_sizes, 64, num_labels)

    def forward(self, pixel_values):
        encoder_hidden_states = self.segformer(pixel_values)
        logits = self.decode_head(encoder_hidden_states)
        # transformers upsamples the logits to the labels' size inside forward
        return F.interpolate(logits, size=pixel_values.shape[-2:], mode="bilinear", align_corners=False)


# ---------------------------------------------------------------------------------------
# CLIP (transformers' CLIPModel): CLIPTextTransformer (CLIPTextEmbeddings, CLIPEncoder of
# CLIPEncoderLayers, final_layer_norm, pooled at the EOS token's argmax) and
# CLIPVisionTransformer (CLIPVisionEmbeddings with a class_embedding parameter and a bias-free
# patch conv, `pre_layrnorm` sic, the encoder, post_layernorm on the class token); each layer
# is layer_norm1, self_attn (k/v/q/out_proj, q scaled, bmm), layer_norm2, mlp (fc1,
# quick_gelu module, fc2); visual_projection and text_projection, the embeddings normalised,
# logits scaled by logit_scale.exp(); the symmetric contrastive loss.


class CLIPVisionEmbeddings(nn.Module):
    def __init__(self, hidden_size, image_size, patch_size, num_channels=3):
        super().__init__()
        self.class_embedding = nn.Parameter(torch.randn(hidden_size))
        self.patch_embedding = nn.Conv2d(
            num_channels, hidden_size, kernel_size=patch_size, stride=patch_size, bias=False
        )
        self.num_patches = (image_size // patch_size) ** 2
        self.num_positions = self.num_patches + 1
        self.position_embedding = nn.Embedding(self.num_positions, hidden_size)
        self.register_buffer("position_ids", torch.arange(self.num_positions).expand((1, -1)), persistent=False)

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]
        patch_embeds = self.patch_embedding(pixel_values)
        patch_embeds = patch_embeds.flatten(2).transpose(1, 2)
        class_embeds = self.class_embedding.expand(batch_size, 1, -1)
        embeddings = torch.cat([class_embeds, patch_embeds], dim=1)
        return embeddings + self.position_embedding(self.position_ids)


class CLIPTextEmbeddings(nn.Module):
    def __init__(self, vocab, hidden_size, max_position_embeddings=32):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, hidden_size)
        self.position_embedding = nn.Embedding(max_position_embeddings, hidden_size)
        self.register_buffer(
            "position_ids", torch.arange(max_position_embeddings).expand((1, -1)), persistent=False
        )

    def forward(self, input_ids):
        seq_length = input_ids.shape[-1]
        position_ids = self.position_ids[:, :seq_length]
        inputs_embeds = self.token_embedding(input_ids)
        position_embeddings = self.position_embedding(position_ids)
        return inputs_embeds + position_embeddings


class CLIPAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scale = self.head_dim**-0.5
        self.dropout = 0.0
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, attention_mask=None, causal_attention_mask=None):
        bsz, tgt_len, embed_dim = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scale
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.view(*proj_shape)
        value_states = value_states.view(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        if causal_attention_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + causal_attention_mask
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        if attention_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_probs = F.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, embed_dim)
        return self.out_proj(attn_output)


class CLIPMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.activation_fn = QuickGELUActivation()
        self.fc1 = nn.Linear(hidden_size, intermediate_size)
        self.fc2 = nn.Linear(intermediate_size, hidden_size)

    def forward(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        return self.fc2(hidden_states)


class CLIPEncoderLayer(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size):
        super().__init__()
        self.embed_dim = hidden_size
        self.self_attn = CLIPAttention(hidden_size, heads)
        self.layer_norm1 = nn.LayerNorm(hidden_size, eps=1e-5)
        self.mlp = CLIPMLP(hidden_size, intermediate_size)
        self.layer_norm2 = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, hidden_states, attention_mask, causal_attention_mask):
        residual = hidden_states
        hidden_states = self.layer_norm1(hidden_states)
        hidden_states = self.self_attn(hidden_states, attention_mask, causal_attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.layer_norm2(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class CLIPEncoder(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.layers = nn.ModuleList([CLIPEncoderLayer(hidden_size, heads, intermediate_size) for _ in range(layers)])

    def forward(self, inputs_embeds, attention_mask=None, causal_attention_mask=None):
        hidden_states = inputs_embeds
        for encoder_layer in self.layers:
            hidden_states = encoder_layer(hidden_states, attention_mask, causal_attention_mask)
        return hidden_states


class CLIPTextTransformer(nn.Module):
    def __init__(self, vocab, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.embeddings = CLIPTextEmbeddings(vocab, hidden_size)
        self.encoder = CLIPEncoder(hidden_size, heads, intermediate_size, layers)
        self.final_layer_norm = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, input_ids, attention_mask):
        hidden_states = self.embeddings(input_ids)
        bsz, seq_len = input_ids.shape
        causal_attention_mask = causal_mask(seq_len)[None, None].expand(bsz, 1, seq_len, seq_len)
        attention_mask = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        last_hidden_state = self.encoder(hidden_states, attention_mask, causal_attention_mask)
        last_hidden_state = self.final_layer_norm(last_hidden_state)
        return last_hidden_state[
            torch.arange(last_hidden_state.shape[0]),
            input_ids.to(dtype=torch.int).argmax(dim=-1),
        ]


class CLIPVisionTransformer(nn.Module):
    def __init__(self, hidden_size, image_size, patch_size, heads, intermediate_size, layers):
        super().__init__()
        self.embeddings = CLIPVisionEmbeddings(hidden_size, image_size, patch_size)
        self.pre_layrnorm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.encoder = CLIPEncoder(hidden_size, heads, intermediate_size, layers)
        self.post_layernorm = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, pixel_values):
        hidden_states = self.embeddings(pixel_values)
        hidden_states = self.pre_layrnorm(hidden_states)
        last_hidden_state = self.encoder(inputs_embeds=hidden_states)
        pooled_output = last_hidden_state[:, 0, :]
        return self.post_layernorm(pooled_output)


class CLIPModel(nn.Module):
    def __init__(self, vocab=400, text_hidden=48, vision_hidden=48, projection_dim=32, layers=2):
        super().__init__()
        self.text_model = CLIPTextTransformer(vocab, text_hidden, 4, 4 * text_hidden, layers)
        self.vision_model = CLIPVisionTransformer(vision_hidden, 32, 8, 4, 4 * vision_hidden, layers)
        self.visual_projection = nn.Linear(vision_hidden, projection_dim, bias=False)
        self.text_projection = nn.Linear(text_hidden, projection_dim, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(2.6592))

    def forward(self, input_ids, pixel_values, attention_mask):
        vision_pooled = self.vision_model(pixel_values)
        text_pooled = self.text_model(input_ids, attention_mask)
        image_embeds = self.visual_projection(vision_pooled)
        text_embeds = self.text_projection(text_pooled)
        image_embeds = image_embeds / image_embeds.norm(p=2, dim=-1, keepdim=True)
        text_embeds = text_embeds / text_embeds.norm(p=2, dim=-1, keepdim=True)
        logit_scale = self.logit_scale.exp()
        logits_per_text = torch.matmul(text_embeds, image_embeds.t()) * logit_scale
        return logits_per_text.t()


def clip_loss(logits_per_image, target):
    """transformers' clip_loss: cross-entropy against arange both ways, averaged."""
    caption_loss = F.cross_entropy(logits_per_image.t(), target)
    image_loss = F.cross_entropy(logits_per_image, target)
    return (caption_loss + image_loss) / 2.0


# ---------------------------------------------------------------------------------------
# DINOv2 with registers as timm writes it (VisionTransformer, vit_*_reg4_dinov2 layout, one
# register token): PatchEmbed (proj conv, flatten, Identity norm), cls and reg tokens
# concatenated after the position embedding is added (no_embed_class), pos_drop, patch_drop,
# norm_pre Identity; timm Blocks with fused qkv Attention (q_norm/k_norm Identity, explicit
# softmax since torch 1.13 has no F.scaled_dot_product_attention), LayerScale ls1/ls2,
# DropPath drop_path1/2, and SwiGLUPacked (GluMlp: one fc1, chunk, SiLU gate, fc2) MLPs;
# final norm, class-token pooling, fc_norm Identity, head_drop, head.


def drop_path(x, drop_prob=0.0, training=False, scale_by_keep=True):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.0, scale_by_keep=True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)


class TimmPatchEmbed(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = nn.Identity()

    def forward(self, x):
        x = self.proj(x)
        x = x.flatten(2).transpose(1, 2)
        return self.norm(x)


class TimmAttention(nn.Module):
    def __init__(self, dim, num_heads, qkv_bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim**-0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        return self.proj_drop(x)


class LayerScale(nn.Module):
    def __init__(self, dim, init_values=1e-5, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x.mul_(self.gamma) if self.inplace else x * self.gamma


class GluMlp(nn.Module):
    """timm's GluMlp; SwiGLUPacked is GluMlp with SiLU and gate_last=False."""

    def __init__(self, in_features, hidden_features, act_layer=nn.SiLU, gate_last=False):
        super().__init__()
        self.chunk_dim = -1
        self.gate_last = gate_last
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(0.0)
        self.norm = nn.Identity()
        self.fc2 = nn.Linear(hidden_features // 2, in_features)
        self.drop2 = nn.Dropout(0.0)

    def forward(self, x):
        x = self.fc1(x)
        x1, x2 = x.chunk(2, dim=self.chunk_dim)
        x = x1 * self.act(x2) if self.gate_last else self.act(x1) * x2
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        return self.drop2(x)


class TimmBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio, init_values, drop_path_rate, mlp_layer=GluMlp):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = TimmAttention(dim, num_heads)
        self.ls1 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path1 = DropPath(drop_path_rate) if drop_path_rate > 0.0 else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = mlp_layer(dim, int(dim * mlp_ratio))
        self.ls2 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path2 = DropPath(drop_path_rate) if drop_path_rate > 0.0 else nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        return x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))


class VisionTransformerReg(nn.Module):
    def __init__(self, img_size=32, patch_size=4, embed_dim=48, depth=3, num_heads=3, reg_tokens=1,
                 mlp_ratio=2.66667 * 2, init_values=1e-5, drop_path_rate=0.1, num_classes=10):
        super().__init__()
        self.num_prefix_tokens = 1 + reg_tokens
        self.no_embed_class = True
        self.global_pool = "token"
        self.patch_embed = TimmPatchEmbed(img_size, patch_size, 3, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.reg_token = nn.Parameter(torch.zeros(1, reg_tokens, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches, embed_dim) * 0.02)
        self.pos_drop = nn.Dropout(p=0.0)
        self.patch_drop = nn.Identity()
        self.norm_pre = nn.Identity()
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.Sequential(
            *[TimmBlock(embed_dim, num_heads, mlp_ratio, init_values, dpr[i]) for i in range(depth)]
        )
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.fc_norm = nn.Identity()
        self.head_drop = nn.Dropout(0.0)
        self.head = nn.Linear(embed_dim, num_classes)

    def _pos_embed(self, x):
        to_cat = [self.cls_token.expand(x.shape[0], -1, -1), self.reg_token.expand(x.shape[0], -1, -1)]
        if self.no_embed_class:
            x = x + self.pos_embed
            x = torch.cat(to_cat + [x], dim=1)
        else:
            x = torch.cat(to_cat + [x], dim=1)
            x = x + self.pos_embed
        return self.pos_drop(x)

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = self._pos_embed(x)
        x = self.patch_drop(x)
        x = self.norm_pre(x)
        x = self.blocks(x)
        return self.norm(x)

    def forward_head(self, x):
        x = x[:, self.num_prefix_tokens :].mean(dim=1) if self.global_pool == "avg" else x[:, 0]
        x = self.fc_norm(x)
        x = self.head_drop(x)
        return self.head(x)

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


# ---------------------------------------------------------------------------------------
# ResNet as transformers writes it (ResNetForImageClassification, resnet-50 layout shrunk):
# ResNetEmbeddings (a 7x7 ResNetConvLayer embedder, max-pool `pooler`), ResNetEncoder of
# ResNetStages whose `layers` Sequential is iterated, not called; ResNetBottleNeckLayer (a
# `shortcut` that is a ResNetShortCut or nn.Identity, `layer` Sequential of three
# ResNetConvLayers (convolution, normalization, activation; the last one's activation an
# Identity), the in-place sum, `activation`); adaptive-pool pooler, Flatten + Linear classifier.


class ResNetConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, activation="relu"):
        super().__init__()
        self.convolution = nn.Conv2d(
            in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=kernel_size // 2, bias=False
        )
        self.normalization = nn.BatchNorm2d(out_channels)
        self.activation = nn.ReLU() if activation is not None else nn.Identity()

    def forward(self, input):
        hidden_state = self.convolution(input)
        hidden_state = self.normalization(hidden_state)
        return self.activation(hidden_state)


class ResNetEmbeddings(nn.Module):
    def __init__(self, num_channels, embedding_size):
        super().__init__()
        self.embedder = ResNetConvLayer(num_channels, embedding_size, kernel_size=7, stride=2)
        self.pooler = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.num_channels = num_channels

    def forward(self, pixel_values):
        if pixel_values.shape[1] != self.num_channels:
            raise ValueError("channel dimension mismatch")
        embedding = self.embedder(pixel_values)
        return self.pooler(embedding)


class ResNetShortCut(nn.Module):
    def __init__(self, in_channels, out_channels, stride=2):
        super().__init__()
        self.convolution = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False)
        self.normalization = nn.BatchNorm2d(out_channels)

    def forward(self, input):
        hidden_state = self.convolution(input)
        return self.normalization(hidden_state)


class ResNetBottleNeckLayer(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1, reduction=4, downsample_in_bottleneck=False):
        super().__init__()
        should_apply_shortcut = in_channels != out_channels or stride != 1
        reduces_channels = out_channels // reduction
        self.shortcut = (
            ResNetShortCut(in_channels, out_channels, stride=stride) if should_apply_shortcut else nn.Identity()
        )
        self.layer = nn.Sequential(
            ResNetConvLayer(
                in_channels, reduces_channels, kernel_size=1, stride=stride if downsample_in_bottleneck else 1
            ),
            ResNetConvLayer(reduces_channels, reduces_channels, stride=stride if not downsample_in_bottleneck else 1),
            ResNetConvLayer(reduces_channels, out_channels, kernel_size=1, activation=None),
        )
        self.activation = nn.ReLU()

    def forward(self, hidden_state):
        residual = hidden_state
        hidden_state = self.layer(hidden_state)
        residual = self.shortcut(residual)
        hidden_state += residual
        return self.activation(hidden_state)


class ResNetStage(nn.Module):
    def __init__(self, in_channels, out_channels, stride=2, depth=2):
        super().__init__()
        first_layer = ResNetBottleNeckLayer(in_channels, out_channels, stride=stride)
        self.layers = nn.Sequential(
            first_layer, *[ResNetBottleNeckLayer(out_channels, out_channels) for _ in range(depth - 1)]
        )

    def forward(self, input):
        hidden_state = input
        for layer in self.layers:
            hidden_state = layer(hidden_state)
        return hidden_state


class ResNetEncoder(nn.Module):
    def __init__(self, embedding_size, hidden_sizes, depths, downsample_in_first_stage=False):
        super().__init__()
        self.stages = nn.ModuleList([])
        self.stages.append(
            ResNetStage(
                embedding_size, hidden_sizes[0], stride=2 if downsample_in_first_stage else 1, depth=depths[0]
            )
        )
        for (in_channels, out_channels), depth in zip(zip(hidden_sizes, hidden_sizes[1:]), depths[1:]):
            self.stages.append(ResNetStage(in_channels, out_channels, depth=depth))

    def forward(self, hidden_state):
        for stage_module in self.stages:
            hidden_state = stage_module(hidden_state)
        return hidden_state


class ResNetModel(nn.Module):
    def __init__(self, embedding_size, hidden_sizes, depths):
        super().__init__()
        self.embedder = ResNetEmbeddings(3, embedding_size)
        self.encoder = ResNetEncoder(embedding_size, hidden_sizes, depths)
        self.pooler = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, pixel_values):
        embedding_output = self.embedder(pixel_values)
        last_hidden_state = self.encoder(embedding_output)
        return self.pooler(last_hidden_state)


class ResNetForImageClassification(nn.Module):
    def __init__(self, embedding_size=16, hidden_sizes=(32, 64, 128, 192), depths=(1, 2, 2, 1), num_labels=10):
        super().__init__()
        self.resnet = ResNetModel(embedding_size, hidden_sizes, depths)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(hidden_sizes[-1], num_labels))

    def forward(self, pixel_values):
        pooled_output = self.resnet(pixel_values)
        return self.classifier(pooled_output)


# ---------------------------------------------------------------------------------------
# timm layers shared by the timm-style CNNs below: SelectAdaptivePool2d (pool, flatten),
# ClassifierHead (global_pool, drop, fc, flatten), BatchNormAct2d (an nn.BatchNorm2d whose
# forward calls F.batch_norm itself, then its `drop` and `act` submodules) and ConvNormAct
# (conv, then a BatchNormAct2d `bn`, then `aa`).


class SelectAdaptivePool2d(nn.Module):
    def __init__(self, output_size=1, flatten=False):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(output_size)
        self.flatten = nn.Flatten(1) if flatten else nn.Identity()

    def forward(self, x):
        x = self.pool(x)
        return self.flatten(x)


class ClassifierHead(nn.Module):
    def __init__(self, in_features, num_classes, drop_rate=0.0):
        super().__init__()
        self.drop_rate = drop_rate
        self.global_pool = SelectAdaptivePool2d(flatten=True)
        self.drop = nn.Dropout(drop_rate)
        self.fc = nn.Linear(in_features, num_classes)
        self.flatten = nn.Identity()

    def forward(self, x):
        x = self.global_pool(x)
        x = self.drop(x)
        x = self.fc(x)
        return self.flatten(x)


class BatchNormAct2d(nn.BatchNorm2d):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, apply_act=True, act_layer=nn.ReLU):
        super().__init__(num_features, eps=eps, momentum=momentum)
        self.drop = nn.Identity()
        self.act = act_layer(inplace=True) if apply_act else nn.Identity()

    def forward(self, x):
        if self.momentum is None:
            exponential_average_factor = 0.0
        else:
            exponential_average_factor = self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is not None:
                self.num_batches_tracked.add_(1)
                if self.momentum is None:
                    exponential_average_factor = 1.0 / float(self.num_batches_tracked)
                else:
                    exponential_average_factor = self.momentum
        if self.training:
            bn_training = True
        else:
            bn_training = (self.running_mean is None) and (self.running_var is None)
        x = F.batch_norm(
            x,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight,
            self.bias,
            bn_training,
            exponential_average_factor,
            self.eps,
        )
        x = self.drop(x)
        return self.act(x)


class ConvNormAct(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, dilation=1, groups=1, apply_act=True,
                 act_layer=nn.ReLU):
        super().__init__()
        padding = ((stride - 1) + dilation * (kernel_size - 1)) // 2
        self.conv = nn.Conv2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation, groups=groups,
            bias=False,
        )
        self.bn = BatchNormAct2d(out_channels, apply_act=apply_act, act_layer=act_layer)
        self.aa = nn.Identity()

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return self.aa(x)


# ---------------------------------------------------------------------------------------
# ResNet-D as timm writes it (resnet50d shrunk): the deep stem (`conv1` a Sequential of three
# 3x3 convs with BN and in-place ReLU between, then `bn1`, `act1`, `maxpool`), timm
# Bottlenecks (conv1/bn1/act1, conv2/bn2/drop_block/act2/aa, conv3/bn3, the `downsample`
# applied to the shortcut, the in-place sum, act3) whose downsample is downsample_avg's
# Sequential (AvgPool2d with ceil_mode, 1x1 conv, BN); SelectAdaptivePool2d and fc.


class TimmBottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, drop_path=None):
        super().__init__()
        width = planes
        outplanes = planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, width, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(width, width, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.drop_block = nn.Identity()
        self.act2 = nn.ReLU(inplace=True)
        self.aa = nn.Identity()
        self.conv3 = nn.Conv2d(width, outplanes, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(outplanes)
        self.se = None
        self.act3 = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride
        self.drop_path = drop_path

    def forward(self, x):
        shortcut = x
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.conv2(x)
        x = self.bn2(x)
        x = self.drop_block(x)
        x = self.act2(x)
        x = self.aa(x)
        x = self.conv3(x)
        x = self.bn3(x)
        if self.se is not None:
            x = self.se(x)
        if self.drop_path is not None:
            x = self.drop_path(x)
        if self.downsample is not None:
            shortcut = self.downsample(shortcut)
        x += shortcut
        return self.act3(x)


def downsample_avg(in_channels, out_channels, stride=1):
    if stride == 1:
        pool = nn.Identity()
    else:
        pool = nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False)
    return nn.Sequential(
        *[pool, nn.Conv2d(in_channels, out_channels, 1, stride=1, padding=0, bias=False), nn.BatchNorm2d(out_channels)]
    )


class TimmResNet(nn.Module):
    def __init__(self, layers=(1, 2, 2, 1), planes=(8, 16, 32, 48), stem_width=16, num_classes=10):
        super().__init__()
        inplanes = stem_width * 2
        self.conv1 = nn.Sequential(
            *[
                nn.Conv2d(3, stem_width, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(stem_width),
                nn.ReLU(inplace=True),
                nn.Conv2d(stem_width, stem_width, 3, stride=1, padding=1, bias=False),
                nn.BatchNorm2d(stem_width),
                nn.ReLU(inplace=True),
                nn.Conv2d(stem_width, inplanes, 3, stride=1, padding=1, bias=False),
            ]
        )
        self.bn1 = nn.BatchNorm2d(inplanes)
        self.act1 = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        net_block_idx, total = 0, sum(layers)
        for stage_idx, (n, p) in enumerate(zip(layers, planes)):
            stride = 1 if stage_idx == 0 else 2
            blocks = []
            for block_idx in range(n):
                downsample = None
                if block_idx == 0 and (stride != 1 or inplanes != p * TimmBottleneck.expansion):
                    downsample = downsample_avg(inplanes, p * TimmBottleneck.expansion, stride)
                dpr = 0.05 * net_block_idx / (total - 1)
                blocks.append(
                    TimmBottleneck(
                        inplanes,
                        p,
                        stride if block_idx == 0 else 1,
                        downsample,
                        drop_path=DropPath(dpr) if dpr > 0.0 else None,
                    )
                )
                inplanes = p * TimmBottleneck.expansion
                net_block_idx += 1
            self.add_module(f"layer{stage_idx + 1}", nn.Sequential(*blocks))
        self.num_features = inplanes
        self.drop_rate = 0.0
        self.global_pool = SelectAdaptivePool2d(flatten=True)
        self.fc = nn.Linear(self.num_features, num_classes)

    def forward_features(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        return self.layer4(x)

    def forward_head(self, x):
        x = self.global_pool(x)
        if self.drop_rate:
            x = F.dropout(x, p=float(self.drop_rate), training=self.training)
        return self.fc(x)

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


# ---------------------------------------------------------------------------------------
# EfficientNet-B0 as timm writes it (efficientnet_b0's block arguments, narrowed and
# shortened): conv_stem, bn1 a BatchNormAct2d with SiLU, `blocks` a Sequential of stages:
# DepthwiseSeparableConv first (conv_dw, bn1, aa, se, conv_pw, bn2 without act, drop_path
# skip), then InvertedResidual blocks (conv_pw, bn1, conv_dw, bn2, aa, se, conv_pwl, bn3,
# drop_path + shortcut where the shape allows), each with a timm SqueezeExcite (mean,
# conv_reduce, act1 SiLU, conv_expand, gate Sigmoid); conv_head, bn2, global_pool, classifier.


class SqueezeExcite(nn.Module):
    def __init__(self, in_chs, rd_channels, act_layer=nn.SiLU, gate_layer=nn.Sigmoid):
        super().__init__()
        self.conv_reduce = nn.Conv2d(in_chs, rd_channels, 1, bias=True)
        self.act1 = act_layer(inplace=True)
        self.conv_expand = nn.Conv2d(rd_channels, in_chs, 1, bias=True)
        self.gate = gate_layer()

    def forward(self, x):
        x_se = x.mean((2, 3), keepdim=True)
        x_se = self.conv_reduce(x_se)
        x_se = self.act1(x_se)
        x_se = self.conv_expand(x_se)
        return x * self.gate(x_se)


class DepthwiseSeparableConv(nn.Module):
    def __init__(self, in_chs, out_chs, dw_kernel_size=3, stride=1, se_ratio=0.25, drop_path_rate=0.0):
        super().__init__()
        self.has_skip = stride == 1 and in_chs == out_chs
        self.conv_dw = nn.Conv2d(
            in_chs, in_chs, dw_kernel_size, stride, padding=dw_kernel_size // 2, groups=in_chs, bias=False
        )
        self.bn1 = BatchNormAct2d(in_chs, act_layer=nn.SiLU)
        self.aa = nn.Identity()
        self.se = SqueezeExcite(in_chs, max(1, int(in_chs * se_ratio)))
        self.conv_pw = nn.Conv2d(in_chs, out_chs, 1, bias=False)
        self.bn2 = BatchNormAct2d(out_chs, apply_act=False)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x)
        x = self.bn1(x)
        x = self.aa(x)
        x = self.se(x)
        x = self.conv_pw(x)
        x = self.bn2(x)
        if self.has_skip:
            x = self.drop_path(x) + shortcut
        return x


class InvertedResidual(nn.Module):
    def __init__(self, in_chs, out_chs, dw_kernel_size=3, stride=1, exp_ratio=6.0, se_ratio=0.25, drop_path_rate=0.0):
        super().__init__()
        mid_chs = int(in_chs * exp_ratio)
        self.has_skip = in_chs == out_chs and stride == 1
        self.conv_pw = nn.Conv2d(in_chs, mid_chs, 1, bias=False)
        self.bn1 = BatchNormAct2d(mid_chs, act_layer=nn.SiLU)
        self.conv_dw = nn.Conv2d(
            mid_chs, mid_chs, dw_kernel_size, stride, padding=dw_kernel_size // 2, groups=mid_chs, bias=False
        )
        self.bn2 = BatchNormAct2d(mid_chs, act_layer=nn.SiLU)
        self.aa = nn.Identity()
        # se_from_exp: the reduction is se_ratio of the block's input channels
        self.se = SqueezeExcite(mid_chs, max(1, int(in_chs * se_ratio)))
        self.conv_pwl = nn.Conv2d(mid_chs, out_chs, 1, bias=False)
        self.bn3 = BatchNormAct2d(out_chs, apply_act=False)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.conv_pw(x)
        x = self.bn1(x)
        x = self.conv_dw(x)
        x = self.bn2(x)
        x = self.aa(x)
        x = self.se(x)
        x = self.conv_pwl(x)
        x = self.bn3(x)
        if self.has_skip:
            x = self.drop_path(x) + shortcut
        return x


class TimmEfficientNet(nn.Module):
    # (block type, repeats, kernel, stride, expansion, out channels): efficientnet_b0's
    # 'ds_r1_k3_s1_e1_c16_se0.25', 'ir_r2_k3_s2_e6_c24_se0.25', ... narrowed and shortened
    ARCH = (
        ("ds", 1, 3, 1, 1, 8),
        ("ir", 2, 3, 2, 6, 16),
        ("ir", 2, 5, 2, 6, 24),
        ("ir", 2, 3, 2, 6, 32),
        ("ir", 1, 5, 1, 6, 40),
        ("ir", 2, 5, 2, 6, 48),
        ("ir", 1, 3, 1, 6, 64),
    )

    def __init__(self, stem_size=16, num_features=128, num_classes=10, drop_rate=0.2, drop_path_rate=0.2):
        super().__init__()
        self.drop_rate = drop_rate
        self.conv_stem = nn.Conv2d(3, stem_size, 3, stride=2, padding=1, bias=False)
        self.bn1 = BatchNormAct2d(stem_size, act_layer=nn.SiLU)
        total = sum(a[1] for a in self.ARCH)
        stages, in_chs, idx = [], stem_size, 0
        for kind, repeats, k, s, e, c in self.ARCH:
            blocks = []
            for r in range(repeats):
                dpr = drop_path_rate * idx / total
                stride = s if r == 0 else 1
                if kind == "ds":
                    blocks.append(DepthwiseSeparableConv(in_chs, c, k, stride, drop_path_rate=dpr))
                else:
                    blocks.append(InvertedResidual(in_chs, c, k, stride, e, drop_path_rate=dpr))
                in_chs = c
                idx += 1
            stages.append(nn.Sequential(*blocks))
        self.blocks = nn.Sequential(*stages)
        self.conv_head = nn.Conv2d(in_chs, num_features, 1, bias=False)
        self.bn2 = BatchNormAct2d(num_features, act_layer=nn.SiLU)
        self.global_pool = SelectAdaptivePool2d(flatten=True)
        self.classifier = nn.Linear(num_features, num_classes)

    def forward_features(self, x):
        x = self.conv_stem(x)
        x = self.bn1(x)
        x = self.blocks(x)
        x = self.conv_head(x)
        return self.bn2(x)

    def forward_head(self, x):
        x = self.global_pool(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return self.classifier(x)

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


# ---------------------------------------------------------------------------------------
# ConvNeXt as timm writes it (convnext_atto-like widths): stem Sequential (patchify conv,
# LayerNorm2d), ConvNeXtStages (`downsample` Identity or LayerNorm2d + strided conv,
# `blocks` Sequential), ConvNeXtBlocks (conv_dw 7x7 depthwise, permute, timm LayerNorm
# `norm`, Mlp (fc1, act GELU, drop1, norm Identity, fc2, drop2), permute back, x.mul(gamma)
# with gamma a bare Parameter, drop_path + shortcut (an Identity module)); norm_pre Identity,
# NormMlpClassifierHead (global_pool, norm LayerNorm2d, flatten, pre_logits, drop, fc).


class TimmLayerNorm(nn.LayerNorm):
    """timm's LayerNorm: channels-last, F.layer_norm."""

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class LayerNorm2d(nn.LayerNorm):
    """timm's LayerNorm2d: permute to channels-last, F.layer_norm, permute back."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.norm = nn.Identity()
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        return self.drop2(x)


class ConvNeXtBlock(nn.Module):
    def __init__(self, in_chs, kernel_size=7, mlp_ratio=4, ls_init_value=1e-6, drop_path=0.0):
        super().__init__()
        out_chs = in_chs
        self.use_conv_mlp = False
        self.conv_dw = nn.Conv2d(in_chs, out_chs, kernel_size, padding=kernel_size // 2, groups=in_chs, bias=True)
        self.norm = TimmLayerNorm(out_chs, eps=1e-6)
        self.mlp = Mlp(out_chs, int(mlp_ratio * out_chs))
        self.gamma = nn.Parameter(ls_init_value * torch.ones(out_chs)) if ls_init_value is not None else None
        self.shortcut = nn.Identity()
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x)
        if self.use_conv_mlp:
            x = self.norm(x)
            x = self.mlp(x)
        else:
            x = x.permute(0, 2, 3, 1)
            x = self.norm(x)
            x = self.mlp(x)
            x = x.permute(0, 3, 1, 2)
        if self.gamma is not None:
            x = x.mul(self.gamma.reshape(1, -1, 1, 1))
        return self.drop_path(x) + self.shortcut(shortcut)


class ConvNeXtStage(nn.Module):
    def __init__(self, in_chs, out_chs, stride, depth, drop_path_rates):
        super().__init__()
        if in_chs != out_chs or stride > 1:
            self.downsample = nn.Sequential(
                LayerNorm2d(in_chs, eps=1e-6), nn.Conv2d(in_chs, out_chs, kernel_size=stride, stride=stride)
            )
        else:
            self.downsample = nn.Identity()
        self.blocks = nn.Sequential(*[ConvNeXtBlock(out_chs, drop_path=drop_path_rates[i]) for i in range(depth)])

    def forward(self, x):
        x = self.downsample(x)
        return self.blocks(x)


class NormMlpClassifierHead(nn.Module):
    def __init__(self, in_features, num_classes, drop_rate=0.0):
        super().__init__()
        self.global_pool = SelectAdaptivePool2d()
        self.norm = LayerNorm2d(in_features, eps=1e-6)
        self.flatten = nn.Flatten(1)
        self.pre_logits = nn.Identity()
        self.drop = nn.Dropout(drop_rate)
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, x):
        x = self.global_pool(x)
        x = self.norm(x)
        x = self.flatten(x)
        x = self.pre_logits(x)
        x = self.drop(x)
        return self.fc(x)


class TimmConvNeXt(nn.Module):
    def __init__(self, dims=(16, 32, 64, 128), depths=(1, 1, 2, 1), num_classes=10, drop_path_rate=0.1):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], kernel_size=4, stride=4), LayerNorm2d(dims[0], eps=1e-6))
        dp_rates = [x.tolist() for x in torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))]
        stages, prev_chs = [], dims[0]
        for i in range(4):
            stride = 2 if i > 0 else 1
            stages.append(ConvNeXtStage(prev_chs, dims[i], stride, depths[i], dp_rates[i]))
            prev_chs = dims[i]
        self.stages = nn.Sequential(*stages)
        self.norm_pre = nn.Identity()
        self.head = NormMlpClassifierHead(prev_chs, num_classes)

    def forward(self, x):
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm_pre(x)
        return self.head(x)


# ---------------------------------------------------------------------------------------
# NFNet as timm writes it (NormFreeNet, nfnet_f0's layout shrunk, with timm's gamma_in_act
# option, which puts the nonlinearity's gamma in the activation as the official code does):
# ScaledStdConv2d everywhere (the weight standardised by F.batch_norm over each filter,
# times gain * scale, then F.conv2d), no norm layers; a deep_quad stem of four such convs
# with GammaAct GELUs (F.gelu times 1.7015) between; NormFreeBlocks (out = act1(x) * beta,
# the shortcut a DownsampleAvg of `out` on a block that changes shape, conv1, act2, grouped
# conv2, act2b, conv2b, act3, conv3, an SE `attn_last` times attn_gain, drop_path,
# x * alpha + shortcut), beta from the expected variance; final_conv, final_act, ClassifierHead.


class ScaledStdConv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=None, dilation=1, groups=1, bias=True,
                 gamma=1.0, eps=1e-5, gain_init=1.0):
        if padding is None:
            padding = ((stride - 1) + dilation * (kernel_size - 1)) // 2
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=bias)
        self.gain = nn.Parameter(torch.full((self.out_channels, 1, 1, 1), gain_init))
        self.scale = gamma * self.weight[0].numel() ** -0.5
        self.eps = eps

    def forward(self, x):
        weight = F.batch_norm(
            self.weight.reshape(1, self.out_channels, -1),
            None,
            None,
            weight=(self.gain * self.scale).view(-1),
            training=True,
            momentum=0.0,
            eps=self.eps,
        ).reshape_as(self.weight)
        return F.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


def gelu(x, inplace=False):
    """timm's activations.gelu (the inplace flag is ignored)."""
    return F.gelu(x)


class GammaAct(nn.Module):
    def __init__(self, act_type="gelu", gamma=1.7015043497085571, inplace=False):
        super().__init__()
        self.act_fn = gelu
        self.gamma = gamma
        self.inplace = inplace

    def forward(self, x):
        return self.act_fn(x, inplace=self.inplace).mul_(self.gamma)


class SEModule(nn.Module):
    """timm's layers.squeeze_excite.SEModule."""

    def __init__(self, channels, rd_ratio=0.5):
        super().__init__()
        rd_channels = int(channels * rd_ratio)
        self.fc1 = nn.Conv2d(channels, rd_channels, kernel_size=1, bias=True)
        self.bn = nn.Identity()
        self.act = nn.ReLU(inplace=True)
        self.fc2 = nn.Conv2d(rd_channels, channels, kernel_size=1, bias=True)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        x_se = x.mean((2, 3), keepdim=True)
        x_se = self.fc1(x_se)
        x_se = self.act(self.bn(x_se))
        x_se = self.fc2(x_se)
        return x * self.gate(x_se)


class DownsampleAvg(nn.Module):
    def __init__(self, in_chs, out_chs, stride=1, conv_layer=ScaledStdConv2d):
        super().__init__()
        if stride > 1:
            self.pool = nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False)
        else:
            self.pool = nn.Identity()
        self.conv = conv_layer(in_chs, out_chs, 1, stride=1)

    def forward(self, x):
        return self.conv(self.pool(x))


class NormFreeBlock(nn.Module):
    def __init__(self, in_chs, out_chs, stride=1, alpha=0.2, beta=1.0, bottle_ratio=0.5, group_size=8,
                 attn_gain=2.0, drop_path_rate=0.0):
        super().__init__()
        mid_chs = int(out_chs * bottle_ratio)
        groups = mid_chs // group_size
        mid_chs = group_size * groups
        self.alpha, self.beta, self.attn_gain = alpha, beta, attn_gain
        if in_chs != out_chs or stride != 1:
            self.downsample = DownsampleAvg(in_chs, out_chs, stride=stride)
        else:
            self.downsample = None
        self.act1 = GammaAct()
        self.conv1 = ScaledStdConv2d(in_chs, mid_chs, 1)
        self.act2 = GammaAct(inplace=True)
        self.conv2 = ScaledStdConv2d(mid_chs, mid_chs, 3, stride=stride, groups=groups)
        self.act2b = GammaAct(inplace=True)
        self.conv2b = ScaledStdConv2d(mid_chs, mid_chs, 3, stride=1, groups=groups)
        self.attn = None
        self.act3 = GammaAct()
        self.conv3 = ScaledStdConv2d(mid_chs, out_chs, 1, gain_init=0.0)
        self.attn_last = SEModule(out_chs)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate > 0 else nn.Identity()
        self.skipinit_gain = None

    def forward(self, x):
        out = self.act1(x) * self.beta
        shortcut = x
        if self.downsample is not None:
            shortcut = self.downsample(out)
        x = self.conv1(out)
        x = self.conv2(self.act2(x))
        if self.conv2b is not None:
            x = self.conv2b(self.act2b(x))
        if self.attn is not None:
            x = self.attn_gain * self.attn(x)
        x = self.conv3(self.act3(x))
        if self.attn_last is not None:
            x = self.attn_gain * self.attn_last(x)
        x = self.drop_path(x)
        if self.skipinit_gain is not None:
            x.mul_(self.skipinit_gain)
        return x * self.alpha + shortcut


class NormFreeNet(nn.Module):
    def __init__(self, stem_chs=32, channels=(32, 64, 96), depths=(1, 2, 1), feat_mult=2.0, alpha=0.2,
                 num_classes=10, drop_rate=0.2, drop_path_rate=0.1):
        super().__init__()
        stem = OrderedDict()
        chs = (stem_chs // 8, stem_chs // 4, stem_chs // 2, stem_chs)  # deep_quad
        strides = (2, 1, 1, 2)
        stem_stride = 4
        in_chs = 3
        for i, (c, s) in enumerate(zip(chs, strides)):
            stem[f"conv{i + 1}"] = ScaledStdConv2d(in_chs, c, kernel_size=3, stride=s)
            if i != len(chs) - 1:
                stem[f"act{i + 2}"] = GammaAct(inplace=True)
            in_chs = c
        self.stem = nn.Sequential(stem)
        drop_path_rates = [x.tolist() for x in torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))]
        prev_chs = stem_chs
        expected_var = 1.0
        stages = []
        for stage_idx, stage_depth in enumerate(depths):
            stride = 1 if stage_idx == 0 and stem_stride > 2 else 2
            blocks = []
            for block_idx in range(stage_depth):
                blocks += [
                    NormFreeBlock(
                        prev_chs,
                        channels[stage_idx],
                        stride=stride if block_idx == 0 else 1,
                        alpha=alpha,
                        beta=1.0 / expected_var**0.5,
                        drop_path_rate=drop_path_rates[stage_idx][block_idx],
                    )
                ]
                if block_idx == 0:
                    expected_var = 1.0  # expected var is reset after first block of each stage
                expected_var += alpha**2  # even if reset occurs, increment expected variance
                prev_chs = channels[stage_idx]
            stages += [nn.Sequential(*blocks)]
        self.stages = nn.Sequential(*stages)
        self.num_features = int(feat_mult * prev_chs)
        self.final_conv = ScaledStdConv2d(prev_chs, self.num_features, 1)
        self.final_act = GammaAct(inplace=True)
        self.head = ClassifierHead(self.num_features, num_classes, drop_rate)

    def forward(self, x):
        x = self.stem(x)
        x = self.stages(x)
        x = self.final_conv(x)
        x = self.final_act(x)
        return self.head(x)


# ---------------------------------------------------------------------------------------
# CSPDarknet53 as timm writes it (CspNet, cspdarknet53's stage arguments, Mish as in the
# YOLOv4 backbone, shrunk): stem Sequential with one ConvNormAct, `stages` of CrossStages
# (conv_down strided 3x3, conv_exp 1x1, split in two, `blocks` of DarkBlocks (conv1 1x1,
# attn Identity, conv2 3x3, drop_path + shortcut) on one half, conv_transition_b, concat
# with the other half, conv_transition), ClassifierHead. BatchNormAct2d holds the Mish.


class DarkBlock(nn.Module):
    def __init__(self, in_chs, out_chs, bottle_ratio=0.5, drop_path=0.0):
        super().__init__()
        mid_chs = int(round(out_chs * bottle_ratio))
        self.conv1 = ConvNormAct(in_chs, mid_chs, kernel_size=1, act_layer=nn.Mish)
        self.attn = nn.Identity()
        self.conv2 = ConvNormAct(mid_chs, out_chs, kernel_size=3, act_layer=nn.Mish)
        self.drop_path = DropPath(drop_path) if drop_path else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.conv1(x)
        x = self.attn(x)
        x = self.conv2(x)
        return self.drop_path(x) + shortcut


class CrossStage(nn.Module):
    def __init__(self, in_chs, out_chs, stride, depth, block_ratio=1.0, bottle_ratio=1.0, expand_ratio=1.0,
                 down_growth=True, block_dpr=None):
        super().__init__()
        down_chs = out_chs if down_growth else in_chs
        self.expand_chs = exp_chs = int(round(out_chs * expand_ratio))
        block_out_chs = int(round(out_chs * block_ratio))
        if stride != 1:
            self.conv_down = ConvNormAct(in_chs, down_chs, kernel_size=3, stride=stride, act_layer=nn.Mish)
            prev_chs = down_chs
        else:
            self.conv_down = nn.Identity()
            prev_chs = in_chs
        self.conv_exp = ConvNormAct(prev_chs, exp_chs, kernel_size=1, act_layer=nn.Mish)
        prev_chs = exp_chs // 2
        self.blocks = nn.Sequential()
        for i in range(depth):
            self.blocks.add_module(
                str(i),
                DarkBlock(
                    prev_chs,
                    block_out_chs,
                    bottle_ratio=bottle_ratio,
                    drop_path=block_dpr[i] if block_dpr is not None else 0.0,
                ),
            )
            prev_chs = block_out_chs
        self.conv_transition_b = ConvNormAct(prev_chs, exp_chs // 2, kernel_size=1, act_layer=nn.Mish)
        self.conv_transition = ConvNormAct(exp_chs, out_chs, kernel_size=1, act_layer=nn.Mish)

    def forward(self, x):
        x = self.conv_down(x)
        x = self.conv_exp(x)
        xs, xb = x.split(self.expand_chs // 2, dim=1)
        xb = self.blocks(xb)
        xb = self.conv_transition_b(xb).contiguous()
        return self.conv_transition(torch.cat([xs, xb], dim=1))


class CspNet(nn.Module):
    def __init__(self, stem_chs=16, out_chs=(32, 48, 64, 96), depth=(1, 2, 2, 1), num_classes=10, drop_path_rate=0.05):
        super().__init__()
        self.stem = nn.Sequential()
        self.stem.add_module("conv1", ConvNormAct(3, stem_chs, kernel_size=3, stride=1, act_layer=nn.Mish))
        expand_ratio = (2.0,) + (1.0,) * (len(depth) - 1)
        block_ratio = (1.0,) + (0.5,) * (len(depth) - 1)
        bottle_ratio = (0.5,) + (1.0,) * (len(depth) - 1)
        dpr = [x.tolist() for x in torch.linspace(0, drop_path_rate, sum(depth)).split(list(depth))]
        stages, prev_chs = [], stem_chs
        for i in range(len(depth)):
            stages.append(
                CrossStage(
                    prev_chs,
                    out_chs[i],
                    stride=2,
                    depth=depth[i],
                    block_ratio=block_ratio[i],
                    bottle_ratio=bottle_ratio[i],
                    expand_ratio=expand_ratio[i],
                    block_dpr=dpr[i],
                )
            )
            prev_chs = out_chs[i]
        self.stages = nn.Sequential(*stages)
        self.head = ClassifierHead(prev_chs, num_classes)

    def forward(self, x):
        x = self.stem(x)
        x = self.stages(x)
        return self.head(x)


# ---------------------------------------------------------------------------------------
# Deep Layer Aggregation as timm writes it (dla34's levels, narrowed): base_layer, level0 and
# level1 conv Sequentials, then DlaTrees (downsample max-pool, project, tree1 and tree2 (two
# DlaBasic blocks, or two sub-trees), a DlaRoot (a 1x1 conv over the concatenated children,
# bn, relu) on the leaves, level_root trees passing their downsampled input on as a child);
# global_pool, head_drop, a 1x1-conv fc, flatten.


class DlaBasic(nn.Module):
    def __init__(self, inplanes, planes, stride=1, dilation=1, **_):
        super().__init__()
        self.conv1 = nn.Conv2d(
            inplanes, planes, kernel_size=3, stride=stride, padding=dilation, bias=False, dilation=dilation
        )
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=dilation, bias=False, dilation=dilation)
        self.bn2 = nn.BatchNorm2d(planes)
        self.stride = stride

    def forward(self, x, shortcut=None, children=None):
        if shortcut is None:
            shortcut = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out += shortcut
        return self.relu(out)


class DlaRoot(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, shortcut):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1, stride=1, bias=False, padding=(kernel_size - 1) // 2)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = shortcut

    def forward(self, x_children):
        x = self.conv(torch.cat(x_children, 1))
        x = self.bn(x)
        if self.shortcut:
            x += x_children[0]
        return self.relu(x)


class DlaTree(nn.Module):
    def __init__(self, levels, block, in_channels, out_channels, stride=1, level_root=False, root_dim=0,
                 root_kernel_size=1, root_shortcut=False):
        super().__init__()
        if root_dim == 0:
            root_dim = 2 * out_channels
        if level_root:
            root_dim += in_channels
        self.downsample = nn.MaxPool2d(stride, stride=stride) if stride > 1 else nn.Identity()
        self.project = nn.Identity()
        if levels == 1:
            self.tree1 = block(in_channels, out_channels, stride)
            self.tree2 = block(out_channels, out_channels, 1)
            if in_channels != out_channels:
                self.project = nn.Sequential(
                    nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, bias=False),
                    nn.BatchNorm2d(out_channels),
                )
            self.root = DlaRoot(root_dim, out_channels, root_kernel_size, root_shortcut)
        else:
            cargs = dict(root_kernel_size=root_kernel_size, root_shortcut=root_shortcut)
            self.tree1 = DlaTree(levels - 1, block, in_channels, out_channels, stride, root_dim=0, **cargs)
            self.tree2 = DlaTree(
                levels - 1, block, out_channels, out_channels, root_dim=root_dim + out_channels, **cargs
            )
            self.root = None
        self.level_root = level_root
        self.root_dim = root_dim
        self.levels = levels

    def forward(self, x, shortcut=None, children=None):
        if children is None:
            children = []
        bottom = self.downsample(x)
        shortcut = self.project(bottom)
        if self.level_root:
            children.append(bottom)
        x1 = self.tree1(x, shortcut)
        if self.root is not None:
            x2 = self.tree2(x1)
            x = self.root([x2, x1] + children)
        else:
            children.append(x1)
            x = self.tree2(x1, None, children)
        return x


class DLA(nn.Module):
    def __init__(self, levels=(1, 1, 1, 2, 2, 1), channels=(8, 16, 32, 48, 64, 96), num_classes=10, drop_rate=0.0):
        super().__init__()
        self.base_layer = nn.Sequential(
            nn.Conv2d(3, channels[0], kernel_size=7, stride=1, padding=3, bias=False),
            nn.BatchNorm2d(channels[0]),
            nn.ReLU(inplace=True),
        )
        self.level0 = self._make_conv_level(channels[0], channels[0], levels[0])
        self.level1 = self._make_conv_level(channels[0], channels[1], levels[1], stride=2)
        self.level2 = DlaTree(levels[2], DlaBasic, channels[1], channels[2], 2, level_root=False)
        self.level3 = DlaTree(levels[3], DlaBasic, channels[2], channels[3], 2, level_root=True)
        self.level4 = DlaTree(levels[4], DlaBasic, channels[3], channels[4], 2, level_root=True)
        self.level5 = DlaTree(levels[5], DlaBasic, channels[4], channels[5], 2, level_root=True)
        self.num_features = channels[-1]
        self.global_pool = SelectAdaptivePool2d()
        self.head_drop = nn.Dropout(drop_rate)
        self.fc = nn.Conv2d(self.num_features, num_classes, 1, bias=True)
        self.flatten = nn.Flatten(1)

    def _make_conv_level(self, inplanes, planes, convs, stride=1, dilation=1):
        modules = []
        for i in range(convs):
            modules.extend(
                [
                    nn.Conv2d(
                        inplanes,
                        planes,
                        kernel_size=3,
                        stride=stride if i == 0 else 1,
                        padding=dilation,
                        bias=False,
                        dilation=dilation,
                    ),
                    nn.BatchNorm2d(planes),
                    nn.ReLU(inplace=True),
                ]
            )
            inplanes = planes
        return nn.Sequential(*modules)

    def forward_features(self, x):
        x = self.base_layer(x)
        x = self.level0(x)
        x = self.level1(x)
        x = self.level2(x)
        x = self.level3(x)
        x = self.level4(x)
        return self.level5(x)

    def forward_head(self, x):
        x = self.global_pool(x)
        x = self.head_drop(x)
        x = self.fc(x)
        return self.flatten(x)

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


# ---------------------------------------------------------------------------------------
# PyTorch Geometric's machinery, the parts the three graph models use, written as PyG has
# it without torch_scatter: utils.scatter (scatter_add_ for sum, a count for mean,
# scatter_reduce_ with include_self=False for min/max), utils.softmax (max, exp, sum over
# each target's edges), degree, remove_self_loops / add_self_loops, global_add_pool;
# MessagePassing.propagate (x_j / x_i lifted by index_select on edge_index[0] / [1],
# message, the `aggr_module` submodule called, update) and edge_updater; Aggregation
# modules (Sum, Mean, Max, Min, Var, Std, Multi, DegreeScaler); PyG's Linear (F.linear).


def broadcast(src, ref, dim):
    size = ((1,) * dim) + (-1,) + ((1,) * (ref.dim() - dim - 1))
    return src.view(size).expand_as(ref)


def scatter(src, index, dim=0, dim_size=None, reduce="sum"):
    if dim < 0:
        dim = src.dim() + dim
    if dim_size is None:
        dim_size = int(index.max()) + 1 if index.numel() > 0 else 0
    size = list(src.size())
    size[dim] = dim_size
    if reduce == "sum" or reduce == "add":
        index = broadcast(index, src, dim)
        return src.new_zeros(size).scatter_add_(dim, index, src)
    if reduce == "mean":
        count = src.new_zeros(dim_size)
        count.scatter_add_(0, index, src.new_ones(src.size(dim)))
        count = count.clamp(min=1)
        index = broadcast(index, src, dim)
        out = src.new_zeros(size).scatter_add_(dim, index, src)
        return out / broadcast(count, out, dim)
    if reduce in ("min", "max", "amin", "amax"):
        index = broadcast(index, src, dim)
        return src.new_zeros(size).scatter_reduce_(dim, index, src, reduce=f"a{reduce[-3:]}", include_self=False)
    raise ValueError(reduce)


def pyg_softmax(src, index, ptr=None, num_nodes=None, dim=0):
    N = int(index.max()) + 1 if num_nodes is None else num_nodes
    src_max = scatter(src.detach(), index, dim, dim_size=N, reduce="max")
    out = src - src_max.index_select(dim, index)
    out = out.exp()
    out_sum = scatter(out, index, dim, dim_size=N, reduce="sum") + 1e-16
    out_sum = out_sum.index_select(dim, index)
    return out / out_sum


def degree(index, num_nodes=None, dtype=None):
    N = int(index.max()) + 1 if num_nodes is None else num_nodes
    out = torch.zeros((N,), dtype=dtype)
    one = torch.ones((index.size(0),), dtype=out.dtype)
    return out.scatter_add_(0, index, one)


def remove_self_loops(edge_index, edge_attr=None):
    mask = edge_index[0] != edge_index[1]
    edge_index = edge_index[:, mask]
    return edge_index, None if edge_attr is None else edge_attr[mask]


def add_self_loops(edge_index, edge_attr=None, fill_value=None, num_nodes=None):
    loop_index = torch.arange(0, num_nodes, dtype=torch.long)
    loop_index = loop_index.unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loop_index], dim=1), edge_attr


def global_add_pool(x, batch, size=None):
    return scatter(x, batch, dim=-2, dim_size=size, reduce="sum")


class Linear(nn.Module):
    """torch_geometric.nn.dense.linear.Linear: its own weight and bias, F.linear."""

    def __init__(self, in_channels, out_channels, bias=True, weight_initializer="kaiming_uniform"):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        if weight_initializer == "glorot":
            nn.init.xavier_uniform_(self.weight)
        else:
            nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(in_channels)
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class Aggregation(nn.Module):
    def reduce(self, x, index=None, ptr=None, dim_size=None, dim=-2, reduce="sum"):
        return scatter(x, index, dim, dim_size, reduce)


class SumAggregation(Aggregation):
    def forward(self, x, index=None, ptr=None, dim_size=None, dim=-2):
        return self.reduce(x, index, ptr, dim_size, dim, reduce="sum")


class MeanAggregation(Aggregation):
    def forward(self, x, index=None, ptr=None, dim_size=None, dim=-2):
        return self.reduce(x, index, ptr, dim_size, dim, reduce="mean")


class MaxAggregation(Aggregation):
    def forward(self, x, index=None, ptr=None, dim_size=None, dim=-2):
        return self.reduce(x, index, ptr, dim_size, dim, reduce="max")


class MinAggregation(Aggregation):
    def forward(self, x, index=None, ptr=None, dim_size=None, dim=-2):
        return self.reduce(x, index, ptr, dim_size, dim, reduce="min")


class VarAggregation(Aggregation):
    def forward(self, x, index=None, ptr=None, dim_size=None, dim=-2):
        mean = self.reduce(x, index, ptr, dim_size, dim, reduce="mean")
        mean2 = self.reduce(x * x, index, ptr, dim_size, dim, reduce="mean")
        return mean2 - mean * mean


class StdAggregation(Aggregation):
    def __init__(self):
        super().__init__()
        self.var_aggr = VarAggregation()

    def forward(self, x, index=None, ptr=None, dim_size=None, dim=-2):
        var = self.var_aggr(x, index, ptr, dim_size, dim)
        out = var.clamp(min=1e-5).sqrt()
        return out.masked_fill(out <= math.sqrt(1e-5), 0.0)


AGGRS = dict(add=SumAggregation, sum=SumAggregation, mean=MeanAggregation, max=MaxAggregation, min=MinAggregation,
             std=StdAggregation)


class MultiAggregation(Aggregation):
    def __init__(self, aggrs):
        super().__init__()
        self.aggrs = nn.ModuleList([AGGRS[a]() for a in aggrs])

    def forward(self, x, index=None, ptr=None, dim_size=None, dim=-2):
        outs = [aggr(x, index, ptr, dim_size, dim) for aggr in self.aggrs]
        return torch.cat(outs, dim=-1)


class DegreeScalerAggregation(Aggregation):
    def __init__(self, aggr, scaler, deg):
        super().__init__()
        self.aggr = MultiAggregation(aggr)
        self.scaler = scaler
        deg = deg.to(torch.float)
        N = int(deg.sum())
        bin_degree = torch.arange(deg.numel())
        self.avg_deg_lin = float((bin_degree * deg).sum()) / N
        self.avg_deg_log = float(((bin_degree + 1).log() * deg).sum()) / N

    def forward(self, x, index=None, ptr=None, dim_size=None, dim=-2):
        out = self.aggr(x, index, ptr, dim_size, dim)
        deg = degree(index, num_nodes=dim_size, dtype=out.dtype)
        size = [1] * len(out.size())
        size[dim] = -1
        deg = deg.view(size)
        outs = []
        for scaler in self.scaler:
            if scaler == "identity":
                out_scaler = out
            elif scaler == "amplification":
                out_scaler = out * (torch.log(deg + 1) / self.avg_deg_log)
            elif scaler == "attenuation":
                out_scaler = out * (self.avg_deg_log / torch.log(deg.clamp(min=1) + 1))
            elif scaler == "linear":
                out_scaler = out * (deg / self.avg_deg_lin)
            else:
                raise ValueError(scaler)
            outs.append(out_scaler)
        return torch.cat(outs, dim=-1) if len(outs) > 1 else outs[0]


class MessagePassing(nn.Module):
    def __init__(self, aggr="add", node_dim=-2):
        super().__init__()
        self.aggr = aggr if isinstance(aggr, str) else None
        self.aggr_module = aggr if isinstance(aggr, nn.Module) else AGGRS[aggr]()
        self.node_dim = node_dim
        self._message_args = [a for a in inspect.signature(self.message).parameters]
        self._edge_update_args = [a for a in inspect.signature(self.edge_update).parameters]

    def _collect(self, args, edge_index, kwargs):
        out, dim_size = {}, None
        for arg in args:
            if arg[-2:] in ("_i", "_j") and arg[:-2] in kwargs:
                data = kwargs[arg[:-2]]
                j = arg[-2:] == "_j"
                if isinstance(data, (tuple, list)):
                    data = data[0] if j else data[1]
                if data is None:
                    out[arg] = None
                    continue
                dim = self.node_dim if self.node_dim >= 0 else data.dim() + self.node_dim
                dim_size = data.size(dim)
                out[arg] = data.index_select(dim, edge_index[0 if j else 1])
            else:
                out[arg] = kwargs.get(arg)
        out["index"], out["ptr"], out["dim_size"] = edge_index[1], None, dim_size
        return out

    def propagate(self, edge_index, size=None, **kwargs):
        coll_dict = self._collect(self._message_args, edge_index, kwargs)
        msg_kwargs = {a: coll_dict[a] for a in self._message_args}
        out = self.message(**msg_kwargs)
        out = self.aggregate(out, coll_dict["index"], coll_dict["ptr"], coll_dict["dim_size"])
        return self.update(out)

    def edge_updater(self, edge_index, **kwargs):
        coll_dict = self._collect(self._edge_update_args, edge_index, kwargs)
        return self.edge_update(**{a: coll_dict[a] for a in self._edge_update_args})

    def message(self, x_j):
        return x_j

    def aggregate(self, inputs, index, ptr=None, dim_size=None):
        return self.aggr_module(inputs, index, ptr=ptr, dim_size=dim_size, dim=self.node_dim)

    def edge_update(self):
        raise NotImplementedError

    def update(self, inputs):
        return inputs


# ---------------------------------------------------------------------------------------
# GAT as PyTorch Geometric writes it (GATConv; the model of examples/gat.py): `lin` (PyG
# Linear, glorot, no bias), att_src / att_dst parameters summed against the projected
# features, self loops removed and added, edge_update (alpha_j + alpha_i, leaky ReLU 0.2,
# softmax over each target's edges, F.dropout), message alpha * x_j, sum aggregation
# module, heads concatenated (or averaged), bias; the model applies F.dropout and F.elu.


class GATConv(MessagePassing):
    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0,
                 add_self_loops=True, bias=True):
        super().__init__(aggr="add", node_dim=0)
        self.in_channels, self.out_channels, self.heads = in_channels, out_channels, heads
        self.concat, self.negative_slope, self.dropout = concat, negative_slope, dropout
        self.add_self_loops = add_self_loops
        self.lin = Linear(in_channels, heads * out_channels, bias=False, weight_initializer="glorot")
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)
        if bias and concat:
            self.bias = nn.Parameter(torch.zeros(heads * out_channels))
        elif bias and not concat:
            self.bias = nn.Parameter(torch.zeros(out_channels))
        else:
            self.bias = None

    def forward(self, x, edge_index):
        H, C = self.heads, self.out_channels
        x_src = x_dst = self.lin(x).view(-1, H, C)
        x = (x_src, x_dst)
        alpha_src = (x_src * self.att_src).sum(dim=-1)
        alpha_dst = None if x_dst is None else (x_dst * self.att_dst).sum(-1)
        alpha = (alpha_src, alpha_dst)
        if self.add_self_loops:
            num_nodes = x_src.size(0)
            edge_index, _ = remove_self_loops(edge_index)
            edge_index, _ = add_self_loops(edge_index, num_nodes=num_nodes)
        alpha = self.edge_updater(edge_index, alpha=alpha)
        out = self.propagate(edge_index, x=x, alpha=alpha)
        if self.concat:
            out = out.view(-1, self.heads * self.out_channels)
        else:
            out = out.mean(dim=1)
        if self.bias is not None:
            out = out + self.bias
        return out

    def edge_update(self, alpha_j, alpha_i, index, ptr, dim_size):
        alpha = alpha_j if alpha_i is None else alpha_j + alpha_i
        alpha = F.leaky_relu(alpha, self.negative_slope)
        alpha = pyg_softmax(alpha, index, ptr, dim_size)
        return F.dropout(alpha, p=self.dropout, training=self.training)

    def message(self, x_j, alpha):
        return alpha.unsqueeze(-1) * x_j


class GAT(nn.Module):
    def __init__(self, in_channels=32, hidden_channels=8, out_channels=7, heads=8):
        super().__init__()
        self.conv1 = GATConv(in_channels, hidden_channels, heads, dropout=0.6)
        self.conv2 = GATConv(hidden_channels * heads, out_channels, heads=1, concat=False, dropout=0.6)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.6, training=self.training)
        x = F.elu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.6, training=self.training)
        return self.conv2(x, edge_index)


# ---------------------------------------------------------------------------------------
# GIN as PyTorch Geometric writes it (GINConv with train_eps; the model of the older
# examples/mutag_gin.py and proteins_gin.py): each GINConv's `nn` a Sequential of Linear,
# BatchNorm1d, ReLU, Linear, ReLU; propagate sums x_j into the targets (SumAggregation),
# out + (1 + eps) * x, then nn; global_add_pool per graph, lin1, .relu(), F.dropout, lin2.


class GINConv(MessagePassing):
    def __init__(self, nn_module, eps=0.0, train_eps=False):
        super().__init__(aggr="add")
        self.nn = nn_module
        self.initial_eps = eps
        if train_eps:
            self.eps = nn.Parameter(torch.tensor([eps]))
        else:
            self.register_buffer("eps", torch.tensor([eps]))

    def forward(self, x, edge_index, size=None):
        if isinstance(x, torch.Tensor):
            x = (x, x)
        out = self.propagate(edge_index, x=x, size=size)
        x_r = x[1]
        if x_r is not None:
            out = out + (1 + self.eps) * x_r
        return self.nn(out)

    def message(self, x_j):
        return x_j


class Net(nn.Module):
    """PyG's GIN example model (examples/mutag_gin.py names it Net)."""

    def __init__(self, in_channels=16, dim=32, out_channels=2, num_layers=3):
        super().__init__()
        self.convs = nn.ModuleList()
        for i in range(num_layers):
            mlp = nn.Sequential(
                nn.Linear(in_channels if i == 0 else dim, dim),
                nn.BatchNorm1d(dim),
                nn.ReLU(),
                nn.Linear(dim, dim),
                nn.ReLU(),
            )
            self.convs.append(GINConv(mlp, train_eps=True))
        self.lin1 = nn.Linear(dim, dim)
        self.lin2 = nn.Linear(dim, out_channels)

    def forward(self, x, edge_index, batch, num_graphs):
        for conv in self.convs:
            x = conv(x, edge_index)
        x = global_add_pool(x, batch, num_graphs)
        x = self.lin1(x).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        return self.lin2(x)


# ---------------------------------------------------------------------------------------
# PNA as PyTorch Geometric writes it (PNAConv; the model of examples/pna.py on ZINC-like
# molecules): node and edge Embeddings; each PNAConv repeats x over its towers, message
# concatenates x_i, x_j and the edge_encoder's features and runs each tower's pre_nns
# Sequential, a DegreeScalerAggregation (MultiAggregation of mean, min, max, std; identity,
# amplification and attenuation by the log degree) aggregates, each tower's post_nns runs
# on cat(x, aggregated), `lin` mixes the towers; a PyG BatchNorm wrapper and F.relu per
# layer; global_add_pool and an MLP Sequential; L1 loss.


class PNAConv(MessagePassing):
    def __init__(self, in_channels, out_channels, aggregators, scalers, deg, edge_dim, towers=1, pre_layers=1,
                 post_layers=1, divide_input=False):
        aggr = DegreeScalerAggregation(aggregators, scalers, deg)
        super().__init__(aggr=aggr, node_dim=0)
        self.in_channels, self.out_channels, self.edge_dim = in_channels, out_channels, edge_dim
        self.towers, self.divide_input = towers, divide_input
        self.F_in = in_channels // towers if divide_input else in_channels
        self.F_out = self.out_channels // towers
        self.edge_encoder = Linear(edge_dim, self.F_in)
        self.pre_nns = nn.ModuleList()
        self.post_nns = nn.ModuleList()
        for _ in range(towers):
            modules = [Linear(3 * self.F_in, self.F_in)]
            for _ in range(pre_layers - 1):
                modules += [nn.ReLU(), Linear(self.F_in, self.F_in)]
            self.pre_nns.append(nn.Sequential(*modules))
            in_ch = (len(aggregators) * len(scalers) + 1) * self.F_in
            modules = [Linear(in_ch, self.F_out)]
            for _ in range(post_layers - 1):
                modules += [nn.ReLU(), Linear(self.F_out, self.F_out)]
            self.post_nns.append(nn.Sequential(*modules))
        self.lin = Linear(out_channels, out_channels)

    def forward(self, x, edge_index, edge_attr=None):
        if self.divide_input:
            x = x.view(-1, self.towers, self.F_in)
        else:
            x = x.view(-1, 1, self.F_in).repeat(1, self.towers, 1)
        out = self.propagate(edge_index, x=x, edge_attr=edge_attr)
        out = torch.cat([x, out], dim=-1)
        outs = [nn_(out[:, i]) for i, nn_ in enumerate(self.post_nns)]
        out = torch.cat(outs, dim=1)
        return self.lin(out)

    def message(self, x_i, x_j, edge_attr):
        edge_attr = self.edge_encoder(edge_attr)
        edge_attr = edge_attr.view(-1, 1, self.F_in)
        edge_attr = edge_attr.repeat(1, self.towers, 1)
        h = torch.cat([x_i, x_j, edge_attr], dim=-1)
        hs = [nn_(h[:, i]) for i, nn_ in enumerate(self.pre_nns)]
        return torch.stack(hs, dim=1)


class BatchNorm(nn.Module):
    """torch_geometric.nn.norm.BatchNorm: a wrapped BatchNorm1d `module`."""

    def __init__(self, in_channels):
        super().__init__()
        self.module = nn.BatchNorm1d(in_channels)
        self.in_channels = in_channels

    def forward(self, x):
        return self.module(x)


class PNANet(nn.Module):
    def __init__(self, deg, hidden=40, edge_dim=16, layers=2, towers=4):
        super().__init__()
        self.node_emb = nn.Embedding(21, hidden)
        self.edge_emb = nn.Embedding(4, edge_dim)
        aggregators = ["mean", "min", "max", "std"]
        scalers = ["identity", "amplification", "attenuation"]
        self.convs = nn.ModuleList()
        self.batch_norms = nn.ModuleList()
        for _ in range(layers):
            conv = PNAConv(hidden, hidden, aggregators, scalers, deg, edge_dim=edge_dim, towers=towers)
            self.convs.append(conv)
            self.batch_norms.append(BatchNorm(hidden))
        self.mlp = nn.Sequential(
            nn.Linear(hidden, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1)
        )

    def forward(self, x, edge_index, edge_attr, batch, num_graphs):
        x = self.node_emb(x.squeeze())
        edge_attr = self.edge_emb(edge_attr)
        for conv, batch_norm in zip(self.convs, self.batch_norms):
            x = F.relu(batch_norm(conv(x, edge_index, edge_attr)))
        x = global_add_pool(x, batch, num_graphs)
        return self.mlp(x)


def l1(out, target):
    return (out.squeeze() - target).abs().mean()


# ---------------------------------------------------------------------------------------
# BERT4Rec as RecBole writes it: item_embedding (with a mask token) + position_embedding,
# LayerNorm, dropout, a bidirectional mask from the padding (torch.where to 0 / -10000),
# TransformerEncoder of TransformerLayers (MultiHeadAttention: query/key/value, nn.Softmax,
# attn_dropout, dense, out_dropout, LayerNorm of the sum; FeedForward: dense_1, a gelu
# method (not a module), dense_2, dropout, LayerNorm of the sum), returning every layer's
# output; output_ffn, output_gelu, output_ln; logits against item_embedding.weight (tied)
# plus output_bias, as its calculate_loss computes them; cross-entropy on masked positions.


class RecBoleMultiHeadAttention(nn.Module):
    def __init__(self, n_heads, hidden_size, hidden_dropout_prob, attn_dropout_prob, layer_norm_eps):
        super().__init__()
        self.num_attention_heads = n_heads
        self.attention_head_size = int(hidden_size / n_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.sqrt_attention_head_size = math.sqrt(self.attention_head_size)
        self.query = nn.Linear(hidden_size, self.all_head_size)
        self.key = nn.Linear(hidden_size, self.all_head_size)
        self.value = nn.Linear(hidden_size, self.all_head_size)
        self.softmax = nn.Softmax(dim=-1)
        self.attn_dropout = nn.Dropout(attn_dropout_prob)
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.out_dropout = nn.Dropout(hidden_dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(*new_x_shape)

    def forward(self, input_tensor, attention_mask):
        mixed_query_layer = self.query(input_tensor)
        mixed_key_layer = self.key(input_tensor)
        mixed_value_layer = self.value(input_tensor)
        query_layer = self.transpose_for_scores(mixed_query_layer).permute(0, 2, 1, 3)
        key_layer = self.transpose_for_scores(mixed_key_layer).permute(0, 2, 3, 1)
        value_layer = self.transpose_for_scores(mixed_value_layer).permute(0, 2, 1, 3)
        attention_scores = torch.matmul(query_layer, key_layer)
        attention_scores = attention_scores / self.sqrt_attention_head_size
        attention_scores = attention_scores + attention_mask
        attention_probs = self.softmax(attention_scores)
        attention_probs = self.attn_dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(*new_context_layer_shape)
        hidden_states = self.dense(context_layer)
        hidden_states = self.out_dropout(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


class RecBoleFeedForward(nn.Module):
    def __init__(self, hidden_size, inner_size, hidden_dropout_prob, layer_norm_eps):
        super().__init__()
        self.dense_1 = nn.Linear(hidden_size, inner_size)
        self.intermediate_act_fn = self.gelu
        self.dense_2 = nn.Linear(inner_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.dropout = nn.Dropout(hidden_dropout_prob)

    def gelu(self, x):
        return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))

    def forward(self, input_tensor):
        hidden_states = self.dense_1(input_tensor)
        hidden_states = self.intermediate_act_fn(hidden_states)
        hidden_states = self.dense_2(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


class RecBoleTransformerLayer(nn.Module):
    def __init__(self, n_heads, hidden_size, intermediate_size, hidden_dropout_prob, attn_dropout_prob, layer_norm_eps):
        super().__init__()
        self.multi_head_attention = RecBoleMultiHeadAttention(
            n_heads, hidden_size, hidden_dropout_prob, attn_dropout_prob, layer_norm_eps
        )
        self.feed_forward = RecBoleFeedForward(hidden_size, intermediate_size, hidden_dropout_prob, layer_norm_eps)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.multi_head_attention(hidden_states, attention_mask)
        return self.feed_forward(attention_output)


class RecBoleTransformerEncoder(nn.Module):
    def __init__(self, n_layers=2, n_heads=2, hidden_size=64, inner_size=256, hidden_dropout_prob=0.2,
                 attn_dropout_prob=0.2, layer_norm_eps=1e-12):
        super().__init__()
        layer = RecBoleTransformerLayer(
            n_heads, hidden_size, inner_size, hidden_dropout_prob, attn_dropout_prob, layer_norm_eps
        )
        self.layer = nn.ModuleList([copy.deepcopy(layer) for _ in range(n_layers)])

    def forward(self, hidden_states, attention_mask, output_all_encoded_layers=True):
        all_encoder_layers = []
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask)
            if output_all_encoded_layers:
                all_encoder_layers.append(hidden_states)
        if not output_all_encoded_layers:
            all_encoder_layers.append(hidden_states)
        return all_encoder_layers


class BERT4Rec(nn.Module):
    def __init__(self, n_items=300, max_seq_length=20, hidden_size=64, n_layers=2, n_heads=2):
        super().__init__()
        self.n_items = n_items
        self.mask_token = n_items
        self.layer_norm_eps = 1e-12
        self.item_embedding = nn.Embedding(n_items + 1, hidden_size, padding_idx=0)
        self.position_embedding = nn.Embedding(max_seq_length, hidden_size)
        self.trm_encoder = RecBoleTransformerEncoder(n_layers, n_heads, hidden_size, 4 * hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=self.layer_norm_eps)
        self.dropout = nn.Dropout(0.2)
        self.output_ffn = nn.Linear(hidden_size, hidden_size)
        self.output_gelu = nn.GELU()
        self.output_ln = nn.LayerNorm(hidden_size, eps=self.layer_norm_eps)
        self.output_bias = nn.Parameter(torch.zeros(n_items))
        self.apply(lambda m: init_weights(m, 0.02))

    def get_attention_mask(self, item_seq, bidirectional=False):
        attention_mask = item_seq != 0
        extended_attention_mask = attention_mask.unsqueeze(1).unsqueeze(2)
        if not bidirectional:
            extended_attention_mask = torch.tril(extended_attention_mask.expand((-1, -1, item_seq.size(-1), -1)))
        return torch.where(extended_attention_mask, 0.0, -10000.0)

    def forward(self, item_seq):
        position_ids = torch.arange(item_seq.size(1), dtype=torch.long)
        position_ids = position_ids.unsqueeze(0).expand_as(item_seq)
        position_embedding = self.position_embedding(position_ids)
        item_emb = self.item_embedding(item_seq)
        input_emb = item_emb + position_embedding
        input_emb = self.LayerNorm(input_emb)
        input_emb = self.dropout(input_emb)
        extended_attention_mask = self.get_attention_mask(item_seq, bidirectional=True)
        trm_output = self.trm_encoder(input_emb, extended_attention_mask, output_all_encoded_layers=True)
        ffn_output = self.output_ffn(trm_output[-1])
        ffn_output = self.output_gelu(ffn_output)
        seq_output = self.output_ln(ffn_output)
        test_item_emb = self.item_embedding.weight[: self.n_items]
        return torch.matmul(seq_output, test_item_emb.transpose(0, 1)) + self.output_bias


# ---------------------------------------------------------------------------------------
# Demucs (facebookresearch/demucs v2, demucs/model.py; no resampling): the mix normalised by
# its mono mean and std, `encoder` ModuleList of Sequentials (Conv1d k8 s4, ReLU, 1x1 Conv1d
# to twice the channels, GLU), a BLSTM (2-layer bidirectional nn.LSTM on time-major input,
# `linear` back to the width), `decoder` Sequentials (Conv1d k3 to twice the channels, GLU,
# ConvTranspose1d, ReLU but on the last) each after adding the centre-trimmed skip; ONE
# nn.GLU instance serves every encoder and decoder layer, as in the reference; rescale_module
# at init; output viewed as (batch, sources, channels, time); L1 loss.


class BLSTM(nn.Module):
    def __init__(self, dim, layers=1):
        super().__init__()
        self.lstm = nn.LSTM(bidirectional=True, num_layers=layers, hidden_size=dim, input_size=dim)
        self.linear = nn.Linear(2 * dim, dim)

    def forward(self, x):
        x = x.permute(2, 0, 1)
        x = self.lstm(x)[0]
        x = self.linear(x)
        return x.permute(1, 2, 0)


def rescale_conv(conv, reference):
    std = conv.weight.std().detach()
    scale = (std / reference) ** 0.5
    conv.weight.data /= scale
    if conv.bias is not None:
        conv.bias.data /= scale


def rescale_module(module, reference):
    for sub in module.modules():
        if isinstance(sub, (nn.Conv1d, nn.ConvTranspose1d)):
            rescale_conv(sub, reference)


def center_trim(tensor, reference):
    if hasattr(reference, "size"):
        reference = reference.size(-1)
    delta = tensor.size(-1) - reference
    if delta < 0:
        raise ValueError("tensor must be larger than reference. " f"Delta is {delta}.")
    if delta:
        tensor = tensor[..., delta // 2 : -(delta - delta // 2)]
    return tensor


class Demucs(nn.Module):
    def __init__(self, sources=2, audio_channels=1, channels=8, depth=4, rewrite=True, glu=True, rescale=0.1,
                 kernel_size=8, stride=4, growth=2.0, lstm_layers=2, context=3, normalize=True):
        super().__init__()
        self.audio_channels, self.sources = audio_channels, sources
        self.kernel_size, self.context, self.stride, self.depth = kernel_size, context, stride, depth
        self.normalize = normalize
        self.encoder = nn.ModuleList()
        self.decoder = nn.ModuleList()
        if glu:
            activation = nn.GLU(dim=1)
            ch_scale = 2
        else:
            activation = nn.ReLU()
            ch_scale = 1
        in_channels = audio_channels
        for index in range(depth):
            encode = []
            encode += [nn.Conv1d(in_channels, channels, kernel_size, stride), nn.ReLU()]
            if rewrite:
                encode += [nn.Conv1d(channels, ch_scale * channels, 1), activation]
            self.encoder.append(nn.Sequential(*encode))
            decode = []
            if index > 0:
                out_channels = in_channels
            else:
                out_channels = sources * audio_channels
            if rewrite:
                decode += [nn.Conv1d(channels, ch_scale * channels, context), activation]
            decode += [nn.ConvTranspose1d(channels, out_channels, kernel_size, stride)]
            if index > 0:
                decode.append(nn.ReLU())
            self.decoder.insert(0, nn.Sequential(*decode))
            in_channels = channels
            channels = int(growth * channels)
        channels = in_channels
        self.lstm = BLSTM(channels, lstm_layers) if lstm_layers else None
        if rescale:
            rescale_module(self, reference=rescale)

    def valid_length(self, length):
        for _ in range(self.depth):
            length = math.ceil((length - self.kernel_size) / self.stride) + 1
            length = max(1, length)
            length += self.context - 1
        for _ in range(self.depth):
            length = (length - 1) * self.stride + self.kernel_size
        return int(length)

    def output_length(self, length):
        for _ in range(self.depth):
            length = (length - self.kernel_size) // self.stride + 1
        for _ in range(self.depth):
            length = (length - self.context + 1 - 1) * self.stride + self.kernel_size
        return length

    def forward(self, mix):
        x = mix
        if self.normalize:
            mono = mix.mean(dim=1, keepdim=True)
            mean = mono.mean(dim=-1, keepdim=True)
            std = mono.std(dim=-1, keepdim=True)
        else:
            mean = 0
            std = 1
        x = (x - mean) / (1e-5 + std)
        saved = []
        for encode in self.encoder:
            x = encode(x)
            saved.append(x)
        if self.lstm:
            x = self.lstm(x)
        for decode in self.decoder:
            skip = center_trim(saved.pop(-1), x)
            x = x + skip
            x = decode(x)
        x = x * std + mean
        return x.view(x.size(0), self.sources, self.audio_channels, x.size(-1))


# ---------------------------------------------------------------------------------------
# PSPNet (hszhao/semseg, model/pspnet.py) on that repository's deep-base ResNet with
# Bottlenecks (one `relu` module called three times per block, `downsample` Sequential),
# narrowed: layer0 a Sequential of the stem's conv1/bn1/relu/conv2/bn2/relu/conv3/bn3/relu
# (the same ReLU three times) and maxpool, layer1..4 with layer3/4 dilated (2, 4) instead of
# strided, the PPM (a ModuleList of AdaptiveAvgPool2d, 1x1 conv, BN, ReLU branches for bins
# 1, 2, 3, 6, each upsampled with align_corners, concatenated with the input), `cls`
# (3x3 conv, BN, ReLU, Dropout2d, 1x1 conv), upsampling to the input size, the `aux` head on
# layer3 in training; the two cross-entropies (main + 0.4 aux) in the loss phase.


class SemsegBottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)
        out = self.conv3(out)
        out = self.bn3(out)
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        return self.relu(out)


class SemsegResNet(nn.Module):
    def __init__(self, layers=(1, 1, 1, 1), planes=(8, 16, 32, 64), stem=16):
        super().__init__()
        self.inplanes = stem * 2
        self.conv1 = nn.Conv2d(3, stem, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(stem, stem, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(stem)
        self.conv3 = nn.Conv2d(stem, stem * 2, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(stem * 2)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(planes[0], layers[0])
        self.layer2 = self._make_layer(planes[1], layers[1], stride=2)
        self.layer3 = self._make_layer(planes[2], layers[2], stride=2)
        self.layer4 = self._make_layer(planes[3], layers[3], stride=2)

    def _make_layer(self, planes, blocks, stride=1):
        block = SemsegBottleneck
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)


class PPM(nn.Module):
    def __init__(self, in_dim, reduction_dim, bins):
        super().__init__()
        self.features = []
        for bin in bins:
            self.features.append(
                nn.Sequential(
                    nn.AdaptiveAvgPool2d(bin),
                    nn.Conv2d(in_dim, reduction_dim, kernel_size=1, bias=False),
                    nn.BatchNorm2d(reduction_dim),
                    nn.ReLU(inplace=True),
                )
            )
        self.features = nn.ModuleList(self.features)

    def forward(self, x):
        x_size = x.size()
        out = [x]
        for f in self.features:
            out.append(F.interpolate(f(x), x_size[2:], mode="bilinear", align_corners=True))
        return torch.cat(out, 1)


class PSPNet(nn.Module):
    def __init__(self, bins=(1, 2, 3, 6), dropout=0.1, classes=4, zoom_factor=8, use_ppm=True):
        super().__init__()
        self.zoom_factor, self.use_ppm = zoom_factor, use_ppm
        resnet = SemsegResNet()
        self.layer0 = nn.Sequential(
            resnet.conv1, resnet.bn1, resnet.relu, resnet.conv2, resnet.bn2, resnet.relu,
            resnet.conv3, resnet.bn3, resnet.relu, resnet.maxpool,
        )
        self.layer1, self.layer2, self.layer3, self.layer4 = resnet.layer1, resnet.layer2, resnet.layer3, resnet.layer4
        for n, m in self.layer3.named_modules():
            if "conv2" in n:
                m.dilation, m.padding, m.stride = (2, 2), (2, 2), (1, 1)
            elif "downsample.0" in n:
                m.stride = (1, 1)
        for n, m in self.layer4.named_modules():
            if "conv2" in n:
                m.dilation, m.padding, m.stride = (4, 4), (4, 4), (1, 1)
            elif "downsample.0" in n:
                m.stride = (1, 1)
        fea_dim = resnet.inplanes
        if use_ppm:
            self.ppm = PPM(fea_dim, int(fea_dim / len(bins)), bins)
            fea_dim *= 2
        self.cls = nn.Sequential(
            nn.Conv2d(fea_dim, 64, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.Dropout2d(p=dropout),
            nn.Conv2d(64, classes, kernel_size=1),
        )
        self.aux = nn.Sequential(
            nn.Conv2d(fea_dim // 4, 32, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Dropout2d(p=dropout),
            nn.Conv2d(32, classes, kernel_size=1),
        )

    def forward(self, x):
        x_size = x.size()
        h = int((x_size[2] - 1) / 8 * self.zoom_factor + 1)
        w = int((x_size[3] - 1) / 8 * self.zoom_factor + 1)
        x = self.layer0(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x_tmp = self.layer3(x)
        x = self.layer4(x_tmp)
        if self.use_ppm:
            x = self.ppm(x)
        x = self.cls(x)
        if self.zoom_factor != 1:
            x = F.interpolate(x, size=(h, w), mode="bilinear", align_corners=True)
        if self.training:
            aux = self.aux(x_tmp)
            if self.zoom_factor != 1:
                aux = F.interpolate(aux, size=(h, w), mode="bilinear", align_corners=True)
            return x, aux
        return x


def psp_loss(out, target):
    x, aux = out
    return F.cross_entropy(x, target, ignore_index=255) + 0.4 * F.cross_entropy(aux, target, ignore_index=255)


# ---------------------------------------------------------------------------------------
# builders


def b_lm(make, vocab=512, batch=4, seq=24):
    return lambda: dict(
        model=make(), inputs=(randint(vocab, batch, seq),), target=randint(vocab, batch, seq, seed=3), loss=ce_tokens
    )


def b_mpt():
    ids = randint(512, 4, 24)
    mask = torch.ones(4, 24, dtype=torch.long)
    mask[3, 20:] = 0
    return dict(model=MptForCausalLM(), inputs=(ids, mask), target=randint(512, 4, 24, seed=3), loss=ce_tokens)


def b_bert():
    ids = randint(599, 8, 24) + 1
    mask = torch.ones(8, 24, dtype=torch.long)
    mask[1::2, 18:] = 0
    types = torch.zeros(8, 24, dtype=torch.long)
    types[:, 12:] = 1
    return dict(
        model=BertForSequenceClassification(), inputs=(ids, mask, types), target=randint(3, 8, seed=3), loss=ce
    )


def b_t5():
    ids = randint(511, 4, 20) + 1
    mask = torch.ones(4, 20, dtype=torch.long)
    mask[2, 15:] = 0
    labels = randint(511, 4, 12, seed=3) + 1
    return dict(model=T5ForConditionalGeneration(), inputs=(ids, mask, labels), target=labels, loss=ce_tokens)


def b_wav2vec2():
    audio = randn(2, 4000) * 0.1
    return dict(model=Wav2Vec2ForCTC(), inputs=(audio,), target=randint(31, 2, 12, seed=3) + 1, loss=ctc_logits)


def b_segformer():
    return dict(
        model=SegformerForSemanticSegmentation(),
        inputs=(randn(2, 3, 64, 64),),
        target=randint(4, 2, 64, 64, seed=3),
        loss=ce_seg,
    )


def b_clip():
    ids = randint(398, 4, 16) + 1
    ids[:, -1] = 399  # the end-of-text token has the highest id, as in CLIP's tokenizer
    ids[1, 12:] = 0
    ids[1, 11] = 399
    mask = (ids != 0).long()
    mask[1, 11] = 1
    return dict(
        model=CLIPModel(), inputs=(ids, randn(4, 3, 32, 32, seed=4), mask), target=torch.arange(4), loss=clip_loss
    )


def random_graph(nodes=256, edges=1024, feats=32, classes=7):
    src = randint(nodes, edges, seed=3)
    dst = randint(nodes, edges, seed=4)
    return randn(nodes, feats), torch.stack([src, dst]), randint(classes, nodes, seed=5)


def batched_graphs(graphs, nodes, chords, seed=3):
    """`graphs` molecule-sized graphs in one batch: a ring plus random chords each, every
    edge in both directions (PyG's to_undirected layout), and the batch vector."""
    g = torch.Generator().manual_seed(seed)
    parts = []
    for k in range(graphs):
        ring = torch.arange(nodes)
        src = torch.cat([ring, torch.randint(0, nodes, (chords,), generator=g)])
        dst = torch.cat([(ring + 1) % nodes, torch.randint(0, nodes, (chords,), generator=g)])
        keep = src != dst
        src, dst = src[keep], dst[keep]
        parts.append(torch.stack([torch.cat([src, dst]), torch.cat([dst, src])]) + k * nodes)
    return torch.cat(parts, 1), torch.arange(graphs).repeat_interleave(nodes)


def b_gat():
    x, edge_index, y = random_graph()
    return dict(model=GAT(), inputs=(x, edge_index), target=y, loss=ce)


def b_gin():
    edge_index, batch = batched_graphs(8, 16, 6)
    return dict(
        model=Net(), inputs=(randn(8 * 16, 16), edge_index, batch, 8), target=randint(2, 8, seed=6), loss=ce
    )


def b_pna():
    graphs, nodes = 8, 12
    edge_index, batch = batched_graphs(graphs, nodes, 4, seed=5)
    d = degree(edge_index[1], num_nodes=graphs * nodes, dtype=torch.long)
    deg = torch.bincount(d)
    return dict(
        model=PNANet(deg),
        inputs=(randint(21, graphs * nodes, 1), edge_index, randint(4, edge_index.shape[1], seed=6), batch, graphs),
        target=randn(graphs, seed=7),
        loss=l1,
    )


def b_bert4rec():
    seq = randint(299, 8, 20) + 1
    seq[::3, :6] = 0  # left padding of the shorter histories
    labels = torch.full((8, 20), -100, dtype=torch.long)
    masked = torch.rand(8, 20, generator=torch.Generator().manual_seed(4)) < 0.25
    masked[:, -1] = True  # the last item is always predicted
    masked &= seq != 0
    labels[masked] = seq[masked]  # the masked positions' item ids (RecBole's pos_items)
    seq = seq.masked_fill(masked, 300)  # the mask token
    return dict(model=BERT4Rec(), inputs=(seq,), target=labels, loss=ce_tokens)


def b_demucs():
    model = Demucs()
    length = model.valid_length(1600)
    out_len = model.output_length(length)
    mix = randn(2, 1, length) * 0.1
    target = randn(2, 2, 1, out_len, seed=3) * 0.05
    return dict(model=model, inputs=(mix,), target=target, loss=lambda out, t: F.l1_loss(out, t))


def b_pspnet():
    return dict(
        model=PSPNet(), inputs=(randn(2, 3, 65, 65),), target=randint(4, 2, 65, 65, seed=3), loss=psp_loss
    )


def b_image(make, batch=4, hw=32):
    return lambda: dict(model=make(), inputs=(randn(batch, 3, hw, hw),), target=randint(10, batch, seed=3), loss=ce)


REGISTRY = [
    ("llama_hf", "llm", "adamw", b_lm(LlamaForCausalLM)),
    ("qwen2_hf", "llm", "adamw", b_lm(Qwen2ForCausalLM)),
    ("gemma2_hf", "llm", "adamw", b_lm(Gemma2ForCausalLM)),
    ("stablelm_hf", "llm", "adamw", b_lm(StableLmForCausalLM)),
    ("mpt_like", "llm", "adamw", b_mpt),
    ("bert_hf", "bert", "adamw", b_bert),
    ("t5v11_ff", "seq2seq", "adamw", b_t5),
    ("wav2vec2_hf", "speech", "adam", b_wav2vec2),
    ("segformer_hf", "segmentation", "adamw", b_segformer),
    ("clip_hf", "multimodal", "adamw", b_clip),
    ("dinov2_like", "vit", "adamw", b_image(VisionTransformerReg)),
    ("resnet_hf", "residual", "sgd", b_image(ResNetForImageClassification, batch=2, hw=64)),
    ("resnetd_timm", "residual", "sgd", b_image(TimmResNet, batch=2, hw=64)),
    ("efficientnet_timm", "depthwise", "sgd", b_image(TimmEfficientNet, batch=2, hw=64)),
    ("convnext_timm", "convnext", "adamw", b_image(TimmConvNeXt, batch=2, hw=64)),
    ("nfnet_like", "residual", "sgd", b_image(NormFreeNet, batch=2, hw=64)),
    ("cspdarknet", "residual", "sgd", b_image(CspNet, batch=2, hw=64)),
    ("dla_like", "residual", "sgd", b_image(DLA, batch=2, hw=64)),
    ("pyg_gat", "gnn", "adam", b_gat),
    ("pyg_gin", "gnn", "adam", b_gin),
    ("pyg_pna", "gnn", "adam", b_pna),
    ("bert4rec", "recsys", "adam", b_bert4rec),
    ("demucs_like", "audio", "adam", b_demucs),
    ("pspnet_like", "segmentation", "sgd", b_pspnet),
]

SPLIT_RULE = (
    "every model is tune: a tuning set of more reference-style variants of common families, "
    "recorded for the layer inference's rules to be tuned on; tests/data/corpus-cpu-fresh is "
    "the check. It shares no model name with tests/data/corpus-cpu, corpus-cpu-modern, "
    "corpus-cpu-families, corpus-cpu-heldout, corpus-cpu-variants or corpus-cpu-fresh"
)

VARIANTS2 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants2.py",
    os.path.join(DATA, "corpus-cpu-variants2"),
    [
        os.path.join(DATA, "corpus-cpu"),
        os.path.join(DATA, "corpus-cpu-modern"),
        os.path.join(DATA, "corpus-cpu-families"),
        os.path.join(DATA, "corpus-cpu-heldout"),
        os.path.join(DATA, "corpus-cpu-variants"),
        os.path.join(DATA, "corpus-cpu-fresh"),
    ],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS2)
