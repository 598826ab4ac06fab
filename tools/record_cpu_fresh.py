#!/usr/bin/env python3
"""Record Strata's fresh CPU corpus: a held-out check on models the inference has never seen.

The layer inference is tuned on tests/data/corpus-cpu, corpus-cpu-modern, corpus-cpu-families
and corpus-cpu-variants, and checked on corpus-cpu-heldout. This script records a new check,
tests/data/corpus-cpu-fresh, made after the inference's rules were written: 24 small models,
each written the way its reference implementation (Hugging Face transformers, timm,
torchvision, PyTorch Geometric, DeepCTR-Torch, the paper's or the usual community code)
writes it, with the same module structure and attribute names where practical and the same
functional-vs-module choices. Decoder LMs (Mistral, Phi-2, GPT-J), BERT-style encoders
(RoBERTa, ELECTRA), vision transformers (HF ViT and Swin, LeViT, Twins-SVT, CoAtNet,
EfficientFormer), speech (Whisper's decoder, HuBERT), recommendation (FiBiNET, DIEN, AFM),
graphs (GCNII, APPNP, an NNConv MPNN), image generation and restoration (CycleGAN's and
pix2pix's generators, EDSR, StyleGAN2's mapping network and modulated convs) and a RetinaNet
with an FPN. Every model's split is "heldout": do not tune on it. No model name is shared with
any other corpus.

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_fresh.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_fresh.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-fresh.
"""

import functools
import itertools
import math
import os
import sys
import warnings
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, ce_tokens, mse, randint, randn  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence  # noqa: E402
from torchvision.ops import sigmoid_focal_loss  # noqa: E402

warnings.filterwarnings("ignore", message="scatter_reduce")  # beta warning in 1.13 (mpnn_like)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


class GELUActivation(nn.Module):
    """transformers.activations.GELUActivation (what ACT2FN["gelu"] returns)."""

    def forward(self, input):
        return F.gelu(input)


class NewGELUActivation(nn.Module):
    """transformers.activations.NewGELUActivation (ACT2FN["gelu_new"]), the tanh GELU by hand."""

    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids):
    cos = cos[position_ids].unsqueeze(1)
    sin = sin[position_ids].unsqueeze(1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class RotaryEmbedding(nn.Module):
    """transformers' (4.36) Llama/Mistral/Phi rotary embedding: cos/sin caches as buffers,
    forward(x, seq_len) returns the first seq_len rows."""

    def __init__(self, dim, max_position_embeddings=64, base=10000):
        super().__init__()
        self.dim = dim
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(max_position_embeddings, dtype=inv_freq.dtype)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x, seq_len):
        return self.cos_cached[:seq_len].to(dtype=x.dtype), self.sin_cached[:seq_len].to(dtype=x.dtype)


# ---------------------------------------------------------------------------------------
# Mistral (transformers' MistralForCausalLM): Llama-style decoder, grouped-query attention
# (repeat_kv), a sliding-window causal mask, MistralRMSNorm, SwiGLU MLP with an ACT2FN module.


class MistralRMSNorm(nn.Module):
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


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def sliding_window_causal_mask(attention_mask, sliding_window, dtype=torch.float32):
    """_prepare_4d_causal_attention_mask(..., sliding_window=w): a token sees itself and the
    w - 1 before it, and no padding."""
    bsz, n = attention_mask.shape
    min_value = torch.finfo(dtype).min
    mask = torch.full((n, n), min_value)
    mask_cond = torch.arange(n)
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(n, 1), 0)
    context_mask = torch.tril(torch.ones_like(mask, dtype=torch.bool), diagonal=-sliding_window)
    mask.masked_fill_(context_mask, min_value)
    mask = mask[None, None, :, :].expand(bsz, 1, n, n)
    inverted = 1.0 - attention_mask[:, None, None, :].expand(bsz, 1, n, n).to(dtype)
    return mask.masked_fill(inverted.to(torch.bool), min_value)


class MistralRotaryEmbedding(RotaryEmbedding):
    pass


class MistralAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, num_key_value_heads):
        super().__init__()
        self.hidden_size, self.num_heads = hidden_size, num_heads
        self.head_dim = hidden_size // num_heads
        self.num_key_value_heads = num_key_value_heads
        self.num_key_value_groups = num_heads // num_key_value_heads
        self.attention_dropout = 0.0
        self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)
        self.rotary_emb = MistralRotaryEmbedding(self.head_dim)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, seq_len=q_len)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin, position_ids)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)


class MistralMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class MistralDecoderLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, num_key_value_heads, intermediate_size):
        super().__init__()
        self.self_attn = MistralAttention(hidden_size, num_heads, num_key_value_heads)
        self.mlp = MistralMLP(hidden_size, intermediate_size)
        self.input_layernorm = MistralRMSNorm(hidden_size)
        self.post_attention_layernorm = MistralRMSNorm(hidden_size)

    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, attention_mask, position_ids)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class MistralModel(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_heads, num_key_value_heads, intermediate_size, layers,
                 sliding_window):
        super().__init__()
        self.padding_idx = 0
        self.sliding_window = sliding_window
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size, self.padding_idx)
        self.layers = nn.ModuleList(
            [MistralDecoderLayer(hidden_size, num_heads, num_key_value_heads, intermediate_size) for _ in range(layers)]
        )
        self.norm = MistralRMSNorm(hidden_size)

    def forward(self, input_ids, attention_mask):
        seq_length = input_ids.shape[1]
        position_ids = torch.arange(0, seq_length, dtype=torch.long).unsqueeze(0).view(-1, seq_length)
        inputs_embeds = self.embed_tokens(input_ids)
        mask = sliding_window_causal_mask(attention_mask, self.sliding_window, inputs_embeds.dtype)
        hidden_states = inputs_embeds
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, mask, position_ids)
        return self.norm(hidden_states)


class MistralForCausalLM(nn.Module):
    def __init__(self, vocab_size=512, hidden_size=64, num_heads=4, num_key_value_heads=2, intermediate_size=160,
                 layers=3, sliding_window=8):
        super().__init__()
        self.model = MistralModel(vocab_size, hidden_size, num_heads, num_key_value_heads, intermediate_size, layers,
                                  sliding_window)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids, attention_mask):
        hidden_states = self.model(input_ids, attention_mask)
        logits = self.lm_head(hidden_states)
        return logits.float()


# ---------------------------------------------------------------------------------------
# Phi-2 (transformers' PhiForCausalLM, 4.37): one input_layernorm feeds attention and MLP in
# parallel, both through resid_dropout; q/k/v with bias and a `dense` output; partial rotary
# (the first rotary_ndims of each head); scores in float32; fc1 / gelu_new / fc2.


class PhiRotaryEmbedding(RotaryEmbedding):
    pass


class PhiAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, partial_rotary_factor=0.5):
        super().__init__()
        self.hidden_size, self.num_heads = hidden_size, num_heads
        self.head_dim = hidden_size // num_heads
        self.rotary_ndims = int(partial_rotary_factor * self.head_dim)
        self.attention_dropout = nn.Dropout(0.0)
        self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=True)
        self.k_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=True)
        self.v_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=True)
        self.dense = nn.Linear(num_heads * self.head_dim, hidden_size, bias=True)
        self.qk_layernorm = False
        self.rotary_emb = PhiRotaryEmbedding(self.rotary_ndims)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary_emb(value_states, seq_len=q_len)
        query_rot, query_pass = query_states[..., : self.rotary_ndims], query_states[..., self.rotary_ndims :]
        key_rot, key_pass = key_states[..., : self.rotary_ndims], key_states[..., self.rotary_ndims :]
        query_rot, key_rot = apply_rotary_pos_emb(query_rot, key_rot, cos, sin, position_ids)
        query_states = torch.cat((query_rot, query_pass), dim=-1)
        key_states = torch.cat((key_rot, key_pass), dim=-1)
        attn_weights = torch.matmul(
            query_states.to(torch.float32), key_states.to(torch.float32).transpose(2, 3)
        ) / math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(value_states.dtype)
        attn_weights = self.attention_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.dense(attn_output)


class PhiMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.activation_fn = NewGELUActivation()
        self.fc1 = nn.Linear(hidden_size, intermediate_size)
        self.fc2 = nn.Linear(intermediate_size, hidden_size)

    def forward(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        return self.fc2(hidden_states)


class PhiDecoderLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, intermediate_size):
        super().__init__()
        self.self_attn = PhiAttention(hidden_size, num_heads)
        self.mlp = PhiMLP(hidden_size, intermediate_size)
        self.input_layernorm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.resid_dropout = nn.Dropout(0.1)

    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        attn_outputs = self.self_attn(hidden_states, attention_mask, position_ids)
        attn_outputs = self.resid_dropout(attn_outputs)
        feed_forward_hidden_states = self.resid_dropout(self.mlp(hidden_states))
        return attn_outputs + feed_forward_hidden_states + residual


class PhiModel(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_heads, intermediate_size, layers):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.embed_dropout = nn.Dropout(0.0)
        self.layers = nn.ModuleList([PhiDecoderLayer(hidden_size, num_heads, intermediate_size) for _ in range(layers)])
        self.final_layernorm = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, input_ids):
        seq_length = input_ids.shape[1]
        position_ids = torch.arange(0, seq_length, dtype=torch.long).unsqueeze(0)
        inputs_embeds = self.embed_tokens(input_ids)
        inputs_embeds = self.embed_dropout(inputs_embeds)
        n = seq_length
        mask = torch.triu(torch.full((n, n), torch.finfo(inputs_embeds.dtype).min), 1)[None, None]
        hidden_states = inputs_embeds
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, mask, position_ids)
        return self.final_layernorm(hidden_states)


class PhiForCausalLM(nn.Module):
    def __init__(self, vocab_size=512, hidden_size=64, num_heads=4, intermediate_size=256, layers=3):
        super().__init__()
        self.model = PhiModel(vocab_size, hidden_size, num_heads, intermediate_size, layers)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=True)

    def forward(self, input_ids):
        return self.lm_head(self.model(input_ids)).float()


# ---------------------------------------------------------------------------------------
# GPT-J (transformers' GPTJForCausalLM): ln_1 feeds attention and MLP in parallel; q/k/v and
# out_proj without bias; interleaved rotary (rotate_every_two) on the first rotary_dim
# channels from a sinusoid table gathered by position ids; a `bias` buffer as causal mask;
# fc_in / gelu_new / fc_out.


def create_sinusoidal_positions(num_pos, dim):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(num_pos, dtype=torch.float), inv_freq).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_rotary_pos_emb_gptj(tensor, sin, cos):
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (tensor * cos) + (rotate_every_two(tensor) * sin)


class GPTJAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, rotary_dim, max_positions=64):
        super().__init__()
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions
            ),
            persistent=False,
        )
        self.register_buffer("masked_bias", torch.tensor(-1e9), persistent=False)
        self.attn_dropout = nn.Dropout(0.0)
        self.resid_dropout = nn.Dropout(0.0)
        self.embed_dim, self.num_attention_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scale_attn = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32)).to(torch.get_default_dtype())
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.rotary_dim = rotary_dim
        self.embed_positions = create_sinusoidal_positions(max_positions, rotary_dim)

    def _split_heads(self, tensor, num_attention_heads, attn_head_size, rotary):
        new_shape = tensor.size()[:-1] + (num_attention_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        if rotary:
            return tensor
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_attention_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_attention_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value, attention_mask):
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        query = query.to(torch.float32)
        key = key.to(torch.float32)
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.tensor(mask_value, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = attn_weights / self.scale_attn
        attn_weights = attn_weights + attention_mask
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.to(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value)

    def _get_embed_positions(self, position_ids):
        embed_positions = self.embed_positions
        if embed_positions.device != position_ids.device:
            embed_positions = embed_positions.to(position_ids.device)
            self.embed_positions = embed_positions
        return embed_positions.repeat(position_ids.shape[0], 1, 1)

    def forward(self, hidden_states, attention_mask, position_ids):
        query = self.q_proj(hidden_states)
        key = self.k_proj(hidden_states)
        value = self.v_proj(hidden_states)
        query = self._split_heads(query, self.num_attention_heads, self.head_dim, True)
        key = self._split_heads(key, self.num_attention_heads, self.head_dim, True)
        value = self._split_heads(value, self.num_attention_heads, self.head_dim, False)
        embed_positions = self._get_embed_positions(position_ids)
        repeated_position_ids = position_ids.unsqueeze(-1).repeat(1, 1, embed_positions.shape[-1])
        sincos = torch.gather(embed_positions, 1, repeated_position_ids)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        k_rot = key[:, :, :, : self.rotary_dim]
        k_pass = key[:, :, :, self.rotary_dim :]
        q_rot = query[:, :, :, : self.rotary_dim]
        q_pass = query[:, :, :, self.rotary_dim :]
        k_rot = apply_rotary_pos_emb_gptj(k_rot, sin, cos)
        q_rot = apply_rotary_pos_emb_gptj(q_rot, sin, cos)
        key = torch.cat([k_rot, k_pass], dim=-1)
        query = torch.cat([q_rot, q_pass], dim=-1)
        key = key.permute(0, 2, 1, 3)
        query = query.permute(0, 2, 1, 3)
        attn_output = self._attn(query, key, value, attention_mask)
        attn_output = self._merge_heads(attn_output, self.num_attention_heads, self.head_dim)
        attn_output = self.out_proj(attn_output)
        return self.resid_dropout(attn_output)


class GPTJMLP(nn.Module):
    def __init__(self, intermediate_size, embed_dim):
        super().__init__()
        self.fc_in = nn.Linear(embed_dim, intermediate_size)
        self.fc_out = nn.Linear(intermediate_size, embed_dim)
        self.act = NewGELUActivation()
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states):
        hidden_states = self.fc_in(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.fc_out(hidden_states)
        return self.dropout(hidden_states)


class GPTJBlock(nn.Module):
    def __init__(self, embed_dim, num_heads, rotary_dim):
        super().__init__()
        self.ln_1 = nn.LayerNorm(embed_dim, eps=1e-5)
        self.attn = GPTJAttention(embed_dim, num_heads, rotary_dim)
        self.mlp = GPTJMLP(4 * embed_dim, embed_dim)

    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output = self.attn(hidden_states, attention_mask, position_ids)
        feed_forward_hidden_states = self.mlp(hidden_states)
        return attn_output + feed_forward_hidden_states + residual


class GPTJModel(nn.Module):
    def __init__(self, vocab_size, n_embd, n_head, n_layer, rotary_dim):
        super().__init__()
        self.embed_dim = n_embd
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList([GPTJBlock(n_embd, n_head, rotary_dim) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd, eps=1e-5)

    def forward(self, input_ids, attention_mask):
        input_shape = input_ids.size()
        position_ids = torch.arange(0, input_shape[-1], dtype=torch.long).unsqueeze(0)
        attention_mask = attention_mask.view(input_shape[0], -1)[:, None, None, :]
        attention_mask = (1.0 - attention_mask.to(torch.float32)) * torch.finfo(torch.float32).min
        hidden_states = self.wte(input_ids)
        hidden_states = self.drop(hidden_states)
        for block in self.h:
            hidden_states = block(hidden_states, attention_mask, position_ids)
        return self.ln_f(hidden_states)


class GPTJForCausalLM(nn.Module):
    def __init__(self, vocab_size=512, n_embd=64, n_head=4, n_layer=3, rotary_dim=8):
        super().__init__()
        self.transformer = GPTJModel(vocab_size, n_embd, n_head, n_layer, rotary_dim)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, input_ids, attention_mask):
        hidden_states = self.transformer(input_ids, attention_mask)
        return self.lm_head(hidden_states).to(torch.float32)


# ---------------------------------------------------------------------------------------
# RoBERTa (transformers' RobertaForSequenceClassification): BERT's module layout
# (RobertaSelfAttention / RobertaSelfOutput inside RobertaAttention, RobertaIntermediate,
# RobertaOutput), position ids made from the padding by create_position_ids_from_input_ids,
# no pooler, RobertaClassificationHead on the <s> token.


def create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length=0):
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
    return incremental_indices.long() + padding_idx


class BertStyleSelfAttention(nn.Module):
    """transformers' BertSelfAttention ("absolute" position embeddings), shared by the BERT
    copies below under their own class names."""

    def __init__(self, hidden_size, num_attention_heads, dropout=0.1):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(hidden_size, self.all_head_size)
        self.key = nn.Linear(hidden_size, self.all_head_size)
        self.value = nn.Linear(hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(dropout)

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


class BertStyleSelfOutput(nn.Module):
    def __init__(self, hidden_size, dropout=0.1, eps=1e-12):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


class BertStyleIntermediate(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, intermediate_size)
        self.intermediate_act_fn = GELUActivation()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertStyleOutput(nn.Module):
    def __init__(self, intermediate_size, hidden_size, dropout=0.1, eps=1e-12):
        super().__init__()
        self.dense = nn.Linear(intermediate_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


class RobertaSelfAttention(BertStyleSelfAttention):
    pass


class RobertaSelfOutput(BertStyleSelfOutput):
    pass


class RobertaIntermediate(BertStyleIntermediate):
    pass


class RobertaOutput(BertStyleOutput):
    pass


class RobertaAttention(nn.Module):
    def __init__(self, hidden_size, heads):
        super().__init__()
        self.self = RobertaSelfAttention(hidden_size, heads)
        self.output = RobertaSelfOutput(hidden_size, eps=1e-5)

    def forward(self, hidden_states, attention_mask):
        self_outputs = self.self(hidden_states, attention_mask)
        return self.output(self_outputs, hidden_states)


class RobertaLayer(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size):
        super().__init__()
        self.attention = RobertaAttention(hidden_size, heads)
        self.intermediate = RobertaIntermediate(hidden_size, intermediate_size)
        self.output = RobertaOutput(intermediate_size, hidden_size, eps=1e-5)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        intermediate_output = self.intermediate(attention_output)
        return self.output(intermediate_output, attention_output)


class RobertaEncoder(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.layer = nn.ModuleList([RobertaLayer(hidden_size, heads, intermediate_size) for _ in range(layers)])

    def forward(self, hidden_states, attention_mask):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask)
        return hidden_states


class RobertaEmbeddings(nn.Module):
    def __init__(self, vocab_size, hidden_size, max_position_embeddings=66, type_vocab_size=1, pad_token_id=1):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size, padding_idx=pad_token_id)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size, padding_idx=pad_token_id)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("token_type_ids", torch.zeros((1, max_position_embeddings), dtype=torch.long),
                             persistent=False)
        self.padding_idx = pad_token_id

    def forward(self, input_ids):
        position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        seq_length = input_ids.size(1)
        buffered_token_type_ids = self.token_type_ids[:, :seq_length]
        token_type_ids = buffered_token_type_ids.expand(input_ids.size(0), seq_length)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        return self.dropout(embeddings)


def get_extended_attention_mask(attention_mask, dtype=torch.float32):
    extended_attention_mask = attention_mask[:, None, None, :].to(dtype=dtype)
    return (1.0 - extended_attention_mask) * torch.finfo(dtype).min


class RobertaModel(nn.Module):
    def __init__(self, vocab_size, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.embeddings = RobertaEmbeddings(vocab_size, hidden_size)
        self.encoder = RobertaEncoder(hidden_size, heads, intermediate_size, layers)

    def forward(self, input_ids, attention_mask):
        extended_attention_mask = get_extended_attention_mask(attention_mask)
        embedding_output = self.embeddings(input_ids)
        return self.encoder(embedding_output, extended_attention_mask)


class RobertaClassificationHead(nn.Module):
    def __init__(self, hidden_size, num_labels):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(0.1)
        self.out_proj = nn.Linear(hidden_size, num_labels)

    def forward(self, features):
        x = features[:, 0, :]
        x = self.dropout(x)
        x = self.dense(x)
        x = torch.tanh(x)
        x = self.dropout(x)
        return self.out_proj(x)


class RobertaForSequenceClassification(nn.Module):
    def __init__(self, vocab_size=600, hidden_size=64, heads=4, intermediate_size=256, layers=3, num_labels=3):
        super().__init__()
        self.roberta = RobertaModel(vocab_size, hidden_size, heads, intermediate_size, layers)
        self.classifier = RobertaClassificationHead(hidden_size, num_labels)

    def forward(self, input_ids, attention_mask):
        sequence_output = self.roberta(input_ids, attention_mask)
        return self.classifier(sequence_output)


# ---------------------------------------------------------------------------------------
# ELECTRA (transformers' ElectraForPreTraining, the discriminator): embedding_size 32 below
# hidden_size 64, so ElectraModel projects with embeddings_project; BERT-style layers;
# ElectraDiscriminatorPredictions (dense, activation, dense_prediction to one logit a token);
# the loss is BCE over the non-padding tokens.


class ElectraSelfAttention(BertStyleSelfAttention):
    pass


class ElectraSelfOutput(BertStyleSelfOutput):
    pass


class ElectraIntermediate(BertStyleIntermediate):
    pass


class ElectraOutput(BertStyleOutput):
    pass


class ElectraAttention(nn.Module):
    def __init__(self, hidden_size, heads):
        super().__init__()
        self.self = ElectraSelfAttention(hidden_size, heads)
        self.output = ElectraSelfOutput(hidden_size)

    def forward(self, hidden_states, attention_mask):
        self_outputs = self.self(hidden_states, attention_mask)
        return self.output(self_outputs, hidden_states)


class ElectraLayer(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size):
        super().__init__()
        self.attention = ElectraAttention(hidden_size, heads)
        self.intermediate = ElectraIntermediate(hidden_size, intermediate_size)
        self.output = ElectraOutput(intermediate_size, hidden_size)

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        intermediate_output = self.intermediate(attention_output)
        return self.output(intermediate_output, attention_output)


class ElectraEncoder(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.layer = nn.ModuleList([ElectraLayer(hidden_size, heads, intermediate_size) for _ in range(layers)])

    def forward(self, hidden_states, attention_mask):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask)
        return hidden_states


class ElectraEmbeddings(nn.Module):
    def __init__(self, vocab_size, embedding_size, max_position_embeddings=64, type_vocab_size=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, embedding_size, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_position_embeddings, embedding_size)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, embedding_size)
        self.LayerNorm = nn.LayerNorm(embedding_size, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(max_position_embeddings).expand((1, -1)), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
                             persistent=False)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        buffered_token_type_ids = self.token_type_ids[:, :seq_length]
        token_type_ids = buffered_token_type_ids.expand(input_ids.size(0), seq_length)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        return self.dropout(embeddings)


class ElectraModel(nn.Module):
    def __init__(self, vocab_size, embedding_size, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.embeddings = ElectraEmbeddings(vocab_size, embedding_size)
        if embedding_size != hidden_size:
            self.embeddings_project = nn.Linear(embedding_size, hidden_size)
        self.encoder = ElectraEncoder(hidden_size, heads, intermediate_size, layers)

    def forward(self, input_ids, attention_mask):
        extended_attention_mask = get_extended_attention_mask(attention_mask)
        hidden_states = self.embeddings(input_ids)
        if hasattr(self, "embeddings_project"):
            hidden_states = self.embeddings_project(hidden_states)
        return self.encoder(hidden_states, extended_attention_mask)


class ElectraDiscriminatorPredictions(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = GELUActivation()
        self.dense_prediction = nn.Linear(hidden_size, 1)

    def forward(self, discriminator_hidden_states):
        hidden_states = self.dense(discriminator_hidden_states)
        hidden_states = self.activation(hidden_states)
        return self.dense_prediction(hidden_states).squeeze(-1)


class ElectraForPreTraining(nn.Module):
    def __init__(self, vocab_size=600, embedding_size=32, hidden_size=64, heads=4, intermediate_size=256, layers=3):
        super().__init__()
        self.electra = ElectraModel(vocab_size, embedding_size, hidden_size, heads, intermediate_size, layers)
        self.discriminator_predictions = ElectraDiscriminatorPredictions(hidden_size)

    def forward(self, input_ids, attention_mask):
        discriminator_sequence_output = self.electra(input_ids, attention_mask)
        return self.discriminator_predictions(discriminator_sequence_output)


def electra_loss(logits, target):
    labels, attention_mask = target
    active_loss = attention_mask.view(-1, logits.shape[1]) == 1
    active_logits = logits.view(-1, logits.shape[1])[active_loss]
    active_labels = labels[active_loss]
    return F.binary_cross_entropy_with_logits(active_logits, active_labels.float())


# ---------------------------------------------------------------------------------------
# ViT (transformers' ViTForImageClassification): ViTEmbeddings (cls_token, ViTPatchEmbeddings'
# `projection` conv, position_embeddings, dropout); ViTLayer = layernorm_before, ViTAttention
# (ViTSelfAttention + ViTSelfOutput, no residual inside), residual, layernorm_after,
# ViTIntermediate, ViTOutput (adds the residual); final layernorm; classifier on the CLS token.


class ViTPatchEmbeddings(nn.Module):
    def __init__(self, image_size, patch_size, num_channels, hidden_size):
        super().__init__()
        self.num_patches = (image_size // patch_size) ** 2
        self.projection = nn.Conv2d(num_channels, hidden_size, kernel_size=patch_size, stride=patch_size)

    def forward(self, pixel_values):
        return self.projection(pixel_values).flatten(2).transpose(1, 2)


class ViTEmbeddings(nn.Module):
    def __init__(self, image_size, patch_size, hidden_size):
        super().__init__()
        self.cls_token = nn.Parameter(torch.randn(1, 1, hidden_size))
        self.patch_embeddings = ViTPatchEmbeddings(image_size, patch_size, 3, hidden_size)
        num_patches = self.patch_embeddings.num_patches
        self.position_embeddings = nn.Parameter(torch.randn(1, num_patches + 1, hidden_size))
        self.dropout = nn.Dropout(0.0)

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]
        embeddings = self.patch_embeddings(pixel_values)
        cls_tokens = self.cls_token.expand(batch_size, -1, -1)
        embeddings = torch.cat((cls_tokens, embeddings), dim=1)
        embeddings = embeddings + self.position_embeddings
        return self.dropout(embeddings)


class ViTSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, qkv_bias=True):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(hidden_size, self.all_head_size, bias=qkv_bias)
        self.key = nn.Linear(hidden_size, self.all_head_size, bias=qkv_bias)
        self.value = nn.Linear(hidden_size, self.all_head_size, bias=qkv_bias)
        self.dropout = nn.Dropout(0.0)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_probs = F.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class ViTSelfOutput(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        return self.dropout(hidden_states)


class ViTAttention(nn.Module):
    def __init__(self, hidden_size, heads):
        super().__init__()
        self.attention = ViTSelfAttention(hidden_size, heads)
        self.output = ViTSelfOutput(hidden_size)

    def forward(self, hidden_states):
        self_outputs = self.attention(hidden_states)
        return self.output(self_outputs, hidden_states)


class ViTIntermediate(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, intermediate_size)
        self.intermediate_act_fn = GELUActivation()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class ViTOutput(nn.Module):
    def __init__(self, intermediate_size, hidden_size):
        super().__init__()
        self.dense = nn.Linear(intermediate_size, hidden_size)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states + input_tensor


class ViTLayer(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size):
        super().__init__()
        self.attention = ViTAttention(hidden_size, heads)
        self.intermediate = ViTIntermediate(hidden_size, intermediate_size)
        self.output = ViTOutput(intermediate_size, hidden_size)
        self.layernorm_before = nn.LayerNorm(hidden_size, eps=1e-12)
        self.layernorm_after = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, hidden_states):
        attention_output = self.attention(self.layernorm_before(hidden_states))
        hidden_states = attention_output + hidden_states
        layer_output = self.layernorm_after(hidden_states)
        layer_output = self.intermediate(layer_output)
        return self.output(layer_output, hidden_states)


class ViTEncoder(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(hidden_size, heads, intermediate_size) for _ in range(layers)])

    def forward(self, hidden_states):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states)
        return hidden_states


class ViTModel(nn.Module):
    def __init__(self, image_size, patch_size, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.embeddings = ViTEmbeddings(image_size, patch_size, hidden_size)
        self.encoder = ViTEncoder(hidden_size, heads, intermediate_size, layers)
        self.layernorm = nn.LayerNorm(hidden_size, eps=1e-12)

    def forward(self, pixel_values):
        embedding_output = self.embeddings(pixel_values)
        sequence_output = self.encoder(embedding_output)
        return self.layernorm(sequence_output)


class ViTForImageClassification(nn.Module):
    def __init__(self, image_size=32, patch_size=4, hidden_size=64, heads=4, intermediate_size=128, layers=4,
                 num_labels=10):
        super().__init__()
        self.vit = ViTModel(image_size, patch_size, hidden_size, heads, intermediate_size, layers)
        self.classifier = nn.Linear(hidden_size, num_labels)

    def forward(self, pixel_values):
        sequence_output = self.vit(pixel_values)
        return self.classifier(sequence_output[:, 0, :])


# ---------------------------------------------------------------------------------------
# Swin (transformers' SwinForImageClassification): SwinEmbeddings (SwinPatchEmbeddings'
# `projection`, norm), SwinStage of SwinLayers (layernorm_before, window partition with
# torch.roll shifts and the -100 shifted-window mask made per call, SwinAttention = SwinSelfAttention
# with a relative_position_bias_table + SwinSelfOutput, SwinDropPath, layernorm_after,
# SwinIntermediate, SwinOutput), SwinPatchMerging, pooler AdaptiveAvgPool1d.


def window_partition(input_feature, window_size):
    batch_size, height, width, num_channels = input_feature.shape
    input_feature = input_feature.view(
        batch_size, height // window_size, window_size, width // window_size, window_size, num_channels
    )
    return input_feature.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, num_channels)


def window_reverse(windows, window_size, height, width):
    num_channels = windows.shape[-1]
    windows = windows.view(-1, height // window_size, width // window_size, window_size, window_size, num_channels)
    return windows.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, height, width, num_channels)


def drop_path(input, drop_prob=0.0, training=False):
    if drop_prob == 0.0 or not training:
        return input
    keep_prob = 1 - drop_prob
    shape = (input.shape[0],) + (1,) * (input.ndim - 1)
    random_tensor = keep_prob + torch.rand(shape, dtype=input.dtype, device=input.device)
    random_tensor.floor_()
    return input.div(keep_prob) * random_tensor


class SwinDropPath(nn.Module):
    def __init__(self, drop_prob):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, hidden_states):
        return drop_path(hidden_states, self.drop_prob, self.training)


class SwinPatchEmbeddings(nn.Module):
    def __init__(self, patch_size, num_channels, embed_dim):
        super().__init__()
        self.patch_size = patch_size
        self.projection = nn.Conv2d(num_channels, embed_dim, kernel_size=patch_size, stride=patch_size)

    def maybe_pad(self, pixel_values, height, width):
        if width % self.patch_size != 0:
            pixel_values = F.pad(pixel_values, (0, self.patch_size - width % self.patch_size))
        if height % self.patch_size != 0:
            pixel_values = F.pad(pixel_values, (0, 0, 0, self.patch_size - height % self.patch_size))
        return pixel_values

    def forward(self, pixel_values):
        _, num_channels, height, width = pixel_values.shape
        pixel_values = self.maybe_pad(pixel_values, height, width)
        embeddings = self.projection(pixel_values)
        _, _, height, width = embeddings.shape
        output_dimensions = (height, width)
        embeddings = embeddings.flatten(2).transpose(1, 2)
        return embeddings, output_dimensions


class SwinEmbeddings(nn.Module):
    def __init__(self, patch_size, embed_dim):
        super().__init__()
        self.patch_embeddings = SwinPatchEmbeddings(patch_size, 3, embed_dim)
        self.mask_token = None
        self.position_embeddings = None
        self.norm = nn.LayerNorm(embed_dim)
        self.dropout = nn.Dropout(0.0)

    def forward(self, pixel_values):
        embeddings, output_dimensions = self.patch_embeddings(pixel_values)
        embeddings = self.norm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings, output_dimensions


class SwinPatchMerging(nn.Module):
    def __init__(self, input_resolution, dim):
        super().__init__()
        self.input_resolution = input_resolution
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = nn.LayerNorm(4 * dim)

    def maybe_pad(self, input_feature, height, width):
        if (height % 2 == 1) or (width % 2 == 1):
            input_feature = F.pad(input_feature, (0, 0, 0, width % 2, 0, height % 2))
        return input_feature

    def forward(self, input_feature, input_dimensions):
        height, width = input_dimensions
        batch_size, dim, num_channels = input_feature.shape
        input_feature = input_feature.view(batch_size, height, width, num_channels)
        input_feature = self.maybe_pad(input_feature, height, width)
        input_feature_0 = input_feature[:, 0::2, 0::2, :]
        input_feature_1 = input_feature[:, 1::2, 0::2, :]
        input_feature_2 = input_feature[:, 0::2, 1::2, :]
        input_feature_3 = input_feature[:, 1::2, 1::2, :]
        input_feature = torch.cat([input_feature_0, input_feature_1, input_feature_2, input_feature_3], -1)
        input_feature = input_feature.view(batch_size, -1, 4 * num_channels)
        input_feature = self.norm(input_feature)
        return self.reduction(input_feature)


class SwinSelfAttention(nn.Module):
    def __init__(self, dim, num_heads, window_size):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = dim // num_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.window_size = (window_size, window_size)
        self.relative_position_bias_table = nn.Parameter(
            torch.zeros((2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1), num_heads)
        )
        coords_h = torch.arange(self.window_size[0])
        coords_w = torch.arange(self.window_size[1])
        coords = torch.stack(torch.meshgrid([coords_h, coords_w], indexing="ij"))
        coords_flatten = torch.flatten(coords, 1)
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
        relative_coords = relative_coords.permute(1, 2, 0).contiguous()
        relative_coords[:, :, 0] += self.window_size[0] - 1
        relative_coords[:, :, 1] += self.window_size[1] - 1
        relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
        relative_position_index = relative_coords.sum(-1)
        self.register_buffer("relative_position_index", relative_position_index)
        self.query = nn.Linear(self.all_head_size, self.all_head_size, bias=True)
        self.key = nn.Linear(self.all_head_size, self.all_head_size, bias=True)
        self.value = nn.Linear(self.all_head_size, self.all_head_size, bias=True)
        self.dropout = nn.Dropout(0.0)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None):
        batch_size, dim, num_channels = hidden_states.shape
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        relative_position_bias = self.relative_position_bias_table[self.relative_position_index.view(-1)]
        relative_position_bias = relative_position_bias.view(
            self.window_size[0] * self.window_size[1], self.window_size[0] * self.window_size[1], -1
        )
        relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()
        attention_scores = attention_scores + relative_position_bias.unsqueeze(0)
        if attention_mask is not None:
            mask_shape = attention_mask.shape[0]
            attention_scores = attention_scores.view(
                batch_size // mask_shape, mask_shape, self.num_attention_heads, dim, dim
            )
            attention_scores = attention_scores + attention_mask.unsqueeze(1).unsqueeze(0)
            attention_scores = attention_scores.view(-1, self.num_attention_heads, dim, dim)
        attention_probs = F.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class SwinSelfOutput(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dense = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states, input_tensor):
        return self.dropout(self.dense(hidden_states))


class SwinAttention(nn.Module):
    def __init__(self, dim, num_heads, window_size):
        super().__init__()
        self.self = SwinSelfAttention(dim, num_heads, window_size)
        self.output = SwinSelfOutput(dim)

    def forward(self, hidden_states, attention_mask=None):
        self_outputs = self.self(hidden_states, attention_mask)
        return self.output(self_outputs, hidden_states)


class SwinIntermediate(nn.Module):
    def __init__(self, dim, mlp_ratio=4.0):
        super().__init__()
        self.dense = nn.Linear(dim, int(mlp_ratio * dim))
        self.intermediate_act_fn = GELUActivation()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class SwinOutput(nn.Module):
    def __init__(self, dim, mlp_ratio=4.0):
        super().__init__()
        self.dense = nn.Linear(int(mlp_ratio * dim), dim)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states):
        return self.dropout(self.dense(hidden_states))


class SwinLayer(nn.Module):
    def __init__(self, dim, input_resolution, num_heads, window_size, shift_size=0, drop_path_rate=0.0):
        super().__init__()
        self.shift_size = shift_size
        self.window_size = window_size
        self.input_resolution = input_resolution
        self.layernorm_before = nn.LayerNorm(dim, eps=1e-5)
        self.attention = SwinAttention(dim, num_heads, window_size=self.window_size)
        self.drop_path = SwinDropPath(drop_path_rate) if drop_path_rate > 0.0 else nn.Identity()
        self.layernorm_after = nn.LayerNorm(dim, eps=1e-5)
        self.intermediate = SwinIntermediate(dim)
        self.output = SwinOutput(dim)

    def set_shift_and_window_size(self, input_resolution):
        if min(input_resolution) <= self.window_size:
            self.shift_size = 0
            self.window_size = min(input_resolution)

    def get_attn_mask(self, height, width, dtype):
        if self.shift_size > 0:
            img_mask = torch.zeros((1, height, width, 1), dtype=dtype)
            height_slices = (
                slice(0, -self.window_size),
                slice(-self.window_size, -self.shift_size),
                slice(-self.shift_size, None),
            )
            width_slices = height_slices
            count = 0
            for height_slice in height_slices:
                for width_slice in width_slices:
                    img_mask[:, height_slice, width_slice, :] = count
                    count += 1
            mask_windows = window_partition(img_mask, self.window_size)
            mask_windows = mask_windows.view(-1, self.window_size * self.window_size)
            attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))
        else:
            attn_mask = None
        return attn_mask

    def maybe_pad(self, hidden_states, height, width):
        pad_right = (self.window_size - width % self.window_size) % self.window_size
        pad_bottom = (self.window_size - height % self.window_size) % self.window_size
        pad_values = (0, 0, 0, pad_right, 0, pad_bottom)
        hidden_states = F.pad(hidden_states, pad_values)
        return hidden_states, pad_values

    def forward(self, hidden_states, input_dimensions):
        self.set_shift_and_window_size(input_dimensions)
        height, width = input_dimensions
        batch_size, _, channels = hidden_states.size()
        shortcut = hidden_states
        hidden_states = self.layernorm_before(hidden_states)
        hidden_states = hidden_states.view(batch_size, height, width, channels)
        hidden_states, pad_values = self.maybe_pad(hidden_states, height, width)
        _, height_pad, width_pad, _ = hidden_states.shape
        if self.shift_size > 0:
            shifted_hidden_states = torch.roll(hidden_states, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
        else:
            shifted_hidden_states = hidden_states
        hidden_states_windows = window_partition(shifted_hidden_states, self.window_size)
        hidden_states_windows = hidden_states_windows.view(-1, self.window_size * self.window_size, channels)
        attn_mask = self.get_attn_mask(height_pad, width_pad, dtype=hidden_states.dtype)
        attention_output = self.attention(hidden_states_windows, attn_mask)
        attention_windows = attention_output.view(-1, self.window_size, self.window_size, channels)
        shifted_windows = window_reverse(attention_windows, self.window_size, height_pad, width_pad)
        if self.shift_size > 0:
            attention_windows = torch.roll(shifted_windows, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
        else:
            attention_windows = shifted_windows
        was_padded = pad_values[3] > 0 or pad_values[5] > 0
        if was_padded:
            attention_windows = attention_windows[:, :height, :width, :].contiguous()
        attention_windows = attention_windows.view(batch_size, height * width, channels)
        hidden_states = shortcut + self.drop_path(attention_windows)
        layer_output = self.layernorm_after(hidden_states)
        layer_output = self.intermediate(layer_output)
        return hidden_states + self.output(layer_output)


class SwinStage(nn.Module):
    def __init__(self, dim, input_resolution, depth, num_heads, window_size, drop_path, downsample):
        super().__init__()
        self.dim = dim
        self.blocks = nn.ModuleList(
            [
                SwinLayer(dim, input_resolution, num_heads, window_size,
                          shift_size=0 if (i % 2 == 0) else window_size // 2, drop_path_rate=drop_path[i])
                for i in range(depth)
            ]
        )
        self.downsample = SwinPatchMerging(input_resolution, dim=dim) if downsample else None

    def forward(self, hidden_states, input_dimensions):
        height, width = input_dimensions
        for layer_module in self.blocks:
            hidden_states = layer_module(hidden_states, input_dimensions)
        hidden_states_before_downsampling = hidden_states
        if self.downsample is not None:
            height_downsampled, width_downsampled = (height + 1) // 2, (width + 1) // 2
            output_dimensions = (height_downsampled, width_downsampled)
            hidden_states = self.downsample(hidden_states_before_downsampling, input_dimensions)
        else:
            output_dimensions = (height, width)
        return hidden_states, output_dimensions


class SwinEncoder(nn.Module):
    def __init__(self, grid_size, embed_dim, depths, num_heads, window_size, drop_path_rate=0.1):
        super().__init__()
        self.num_layers = len(depths)
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        self.layers = nn.ModuleList(
            [
                SwinStage(
                    dim=int(embed_dim * 2**i_layer),
                    input_resolution=(grid_size[0] // (2**i_layer), grid_size[1] // (2**i_layer)),
                    depth=depths[i_layer],
                    num_heads=num_heads[i_layer],
                    window_size=window_size,
                    drop_path=dpr[sum(depths[:i_layer]) : sum(depths[: i_layer + 1])],
                    downsample=i_layer < self.num_layers - 1,
                )
                for i_layer in range(self.num_layers)
            ]
        )

    def forward(self, hidden_states, input_dimensions):
        for layer_module in self.layers:
            hidden_states, input_dimensions = layer_module(hidden_states, input_dimensions)
        return hidden_states


class SwinModel(nn.Module):
    def __init__(self, image_size, patch_size, embed_dim, depths, num_heads, window_size):
        super().__init__()
        self.num_features = int(embed_dim * 2 ** (len(depths) - 1))
        self.embeddings = SwinEmbeddings(patch_size, embed_dim)
        grid = (image_size // patch_size, image_size // patch_size)
        self.encoder = SwinEncoder(grid, embed_dim, depths, num_heads, window_size)
        self.layernorm = nn.LayerNorm(self.num_features, eps=1e-5)
        self.pooler = nn.AdaptiveAvgPool1d(1)

    def forward(self, pixel_values):
        embedding_output, input_dimensions = self.embeddings(pixel_values)
        sequence_output = self.encoder(embedding_output, input_dimensions)
        sequence_output = self.layernorm(sequence_output)
        pooled_output = self.pooler(sequence_output.transpose(1, 2))
        return torch.flatten(pooled_output, 1)


class SwinForImageClassification(nn.Module):
    def __init__(self, image_size=32, patch_size=2, embed_dim=32, depths=(2, 2), num_heads=(2, 4), window_size=4,
                 num_labels=10):
        super().__init__()
        self.swin = SwinModel(image_size, patch_size, embed_dim, depths, num_heads, window_size)
        self.classifier = nn.Linear(self.swin.num_features, num_labels)

    def forward(self, pixel_values):
        return self.classifier(self.swin(pixel_values))


# ---------------------------------------------------------------------------------------
# LeViT (timm's levit.py, LevitDistilled): Stem16 of ConvNorm (conv + BN) and Hardswish,
# LinearNorm (Linear then BatchNorm1d over the flattened tokens) for q/k/v, projections and
# MLPs; attention_biases gathered by the attention_bias_idxs buffer; LevitDownsample =
# AttentionDownsample (queries from a strided Subsample) + residual LevitMlp; NormLinear
# head and head_dist, averaged.


def ndgrid(*tensors):
    return torch.meshgrid(*tensors, indexing="ij")


class ConvNorm(nn.Module):
    def __init__(self, in_chs, out_chs, kernel_size=1, stride=1, padding=0, dilation=1, groups=1, bn_weight_init=1):
        super().__init__()
        self.linear = nn.Conv2d(in_chs, out_chs, kernel_size, stride, padding, dilation, groups, bias=False)
        self.bn = nn.BatchNorm2d(out_chs)
        nn.init.constant_(self.bn.weight, bn_weight_init)

    def forward(self, x):
        return self.bn(self.linear(x))


class LinearNorm(nn.Module):
    def __init__(self, in_features, out_features, bn_weight_init=1):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.bn = nn.BatchNorm1d(out_features)
        nn.init.constant_(self.bn.weight, bn_weight_init)

    def forward(self, x):
        x = self.linear(x)
        return self.bn(x.flatten(0, 1)).reshape_as(x)


class NormLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, drop=0.0):
        super().__init__()
        self.bn = nn.BatchNorm1d(in_features)
        self.drop = nn.Dropout(drop)
        self.linear = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x):
        return self.linear(self.drop(self.bn(x)))


class Stem16(nn.Module):
    def __init__(self, in_chs, out_chs, act_layer):
        super().__init__()
        self.stride = 16
        self.conv1 = ConvNorm(in_chs, out_chs // 8, 3, stride=2, padding=1)
        self.act1 = act_layer()
        self.conv2 = ConvNorm(out_chs // 8, out_chs // 4, 3, stride=2, padding=1)
        self.act2 = act_layer()
        self.conv3 = ConvNorm(out_chs // 4, out_chs // 2, 3, stride=2, padding=1)
        self.act3 = act_layer()
        self.conv4 = ConvNorm(out_chs // 2, out_chs, 3, stride=2, padding=1)

    def forward(self, x):
        x = self.act1(self.conv1(x))
        x = self.act2(self.conv2(x))
        x = self.act3(self.conv3(x))
        return self.conv4(x)


class Subsample(nn.Module):
    def __init__(self, stride, resolution):
        super().__init__()
        self.stride = stride
        self.resolution = (resolution, resolution)

    def forward(self, x):
        B, N, C = x.shape
        x = x.view(B, self.resolution[0], self.resolution[1], C)
        x = x[:, :: self.stride, :: self.stride]
        return x.reshape(B, -1, C)


class LevitAttention(nn.Module):
    def __init__(self, dim, key_dim, num_heads=8, attn_ratio=4.0, resolution=14, act_layer=nn.Hardswish):
        super().__init__()
        resolution = (resolution, resolution)
        self.num_heads = num_heads
        self.scale = key_dim**-0.5
        self.key_dim = key_dim
        self.key_attn_dim = key_dim * num_heads
        self.val_dim = int(attn_ratio * key_dim)
        self.val_attn_dim = int(attn_ratio * key_dim) * num_heads
        self.qkv = LinearNorm(dim, self.val_attn_dim + self.key_attn_dim * 2)
        self.proj = nn.Sequential(OrderedDict([("act", act_layer()),
                                               ("ln", LinearNorm(self.val_attn_dim, dim, bn_weight_init=0))]))
        self.attention_biases = nn.Parameter(torch.zeros(num_heads, resolution[0] * resolution[1]))
        pos = torch.stack(ndgrid(torch.arange(resolution[0]), torch.arange(resolution[1]))).flatten(1)
        rel_pos = (pos[..., :, None] - pos[..., None, :]).abs()
        rel_pos = (rel_pos[0] * resolution[1]) + rel_pos[1]
        self.register_buffer("attention_bias_idxs", rel_pos, persistent=False)

    def get_attention_biases(self, device):
        return self.attention_biases[:, self.attention_bias_idxs]

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).view(B, N, self.num_heads, -1).split([self.key_dim, self.key_dim, self.val_dim], dim=3)
        q = q.permute(0, 2, 1, 3)
        k = k.permute(0, 2, 3, 1)
        v = v.permute(0, 2, 1, 3)
        attn = q @ k * self.scale + self.get_attention_biases(x.device)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.val_attn_dim)
        return self.proj(x)


class AttentionDownsample(nn.Module):
    def __init__(self, in_dim, out_dim, key_dim, num_heads=8, attn_ratio=2.0, stride=2, resolution=14,
                 act_layer=nn.Hardswish):
        super().__init__()
        resolution = (resolution, resolution)
        self.stride = stride
        self.resolution = resolution
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.key_attn_dim = key_dim * num_heads
        self.val_dim = int(attn_ratio * key_dim)
        self.val_attn_dim = self.val_dim * self.num_heads
        self.scale = key_dim**-0.5
        self.kv = LinearNorm(in_dim, self.val_attn_dim + self.key_attn_dim)
        self.q = nn.Sequential(OrderedDict([("down", Subsample(stride, resolution[0])),
                                            ("ln", LinearNorm(in_dim, self.key_attn_dim))]))
        self.proj = nn.Sequential(OrderedDict([("act", act_layer()), ("ln", LinearNorm(self.val_attn_dim, out_dim))]))
        self.attention_biases = nn.Parameter(torch.zeros(num_heads, resolution[0] * resolution[1]))
        k_pos = torch.stack(ndgrid(torch.arange(resolution[0]), torch.arange(resolution[1]))).flatten(1)
        q_pos = torch.stack(
            ndgrid(torch.arange(0, resolution[0], step=stride), torch.arange(0, resolution[1], step=stride))
        ).flatten(1)
        rel_pos = (q_pos[..., :, None] - k_pos[..., None, :]).abs()
        rel_pos = (rel_pos[0] * resolution[1]) + rel_pos[1]
        self.register_buffer("attention_bias_idxs", rel_pos, persistent=False)

    def get_attention_biases(self, device):
        return self.attention_biases[:, self.attention_bias_idxs]

    def forward(self, x):
        B, N, C = x.shape
        k, v = self.kv(x).view(B, N, self.num_heads, -1).split([self.key_dim, self.val_dim], dim=3)
        k = k.permute(0, 2, 3, 1)
        v = v.permute(0, 2, 1, 3)
        q = self.q(x).view(B, -1, self.num_heads, self.key_dim).permute(0, 2, 1, 3)
        attn = q @ k * self.scale + self.get_attention_biases(x.device)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, -1, self.val_attn_dim)
        return self.proj(x)


class LevitMlp(nn.Module):
    def __init__(self, in_features, hidden_features, out_features=None, act_layer=nn.Hardswish, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        self.ln1 = LinearNorm(in_features, hidden_features)
        self.act = act_layer()
        self.drop = nn.Dropout(drop)
        self.ln2 = LinearNorm(hidden_features, out_features, bn_weight_init=0)

    def forward(self, x):
        x = self.ln1(x)
        x = self.act(x)
        x = self.drop(x)
        return self.ln2(x)


class LevitDownsample(nn.Module):
    def __init__(self, in_dim, out_dim, key_dim, num_heads, attn_ratio=4.0, mlp_ratio=2.0, resolution=14):
        super().__init__()
        self.attn_downsample = AttentionDownsample(in_dim, out_dim, key_dim, num_heads, attn_ratio,
                                                   resolution=resolution)
        self.mlp = LevitMlp(out_dim, int(out_dim * mlp_ratio))
        self.drop_path = nn.Identity()

    def forward(self, x):
        x = self.attn_downsample(x)
        return x + self.drop_path(self.mlp(x))


class LevitBlock(nn.Module):
    def __init__(self, dim, key_dim, num_heads, attn_ratio, mlp_ratio, resolution):
        super().__init__()
        self.attn = LevitAttention(dim, key_dim, num_heads, attn_ratio, resolution)
        self.drop_path1 = nn.Identity()
        self.mlp = LevitMlp(dim, int(dim * mlp_ratio))
        self.drop_path2 = nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.attn(x))
        return x + self.drop_path2(self.mlp(x))


class LevitStage(nn.Module):
    def __init__(self, in_dim, out_dim, key_dim, depth, num_heads, attn_ratio, mlp_ratio, resolution, downsample):
        super().__init__()
        if downsample:
            self.downsample = LevitDownsample(in_dim, out_dim, key_dim, num_heads=in_dim // key_dim,
                                              resolution=resolution)
            resolution = (resolution - 1) // 2 + 1
        else:
            assert in_dim == out_dim
            self.downsample = nn.Identity()
        self.blocks = nn.Sequential(
            *[LevitBlock(out_dim, key_dim, num_heads, attn_ratio, mlp_ratio, resolution) for _ in range(depth)]
        )

    def forward(self, x):
        x = self.downsample(x)
        return self.blocks(x)


class LevitDistilled(nn.Module):
    def __init__(self, img_size=64, num_classes=10, embed_dim=(32, 48), key_dim=8, depth=(2, 2), num_heads=(2, 3),
                 attn_ratio=(2.0, 2.0), mlp_ratio=(2.0, 2.0)):
        super().__init__()
        self.stem = Stem16(3, embed_dim[0], act_layer=nn.Hardswish)
        resolution = img_size // self.stem.stride
        in_dim, stages = embed_dim[0], []
        for i in range(len(embed_dim)):
            stage_stride = 2 if i > 0 else 1
            stages.append(LevitStage(in_dim, embed_dim[i], key_dim, depth[i], num_heads[i], attn_ratio[i],
                                     mlp_ratio[i], resolution, downsample=stage_stride == 2))
            resolution = (resolution - 1) // stage_stride + 1
            in_dim = embed_dim[i]
        self.stages = nn.Sequential(*stages)
        self.head = NormLinear(embed_dim[-1], num_classes)
        self.head_dist = NormLinear(embed_dim[-1], num_classes)

    def forward_features(self, x):
        x = self.stem(x)
        x = x.flatten(2).transpose(1, 2)
        return self.stages(x)

    def forward_head(self, x):
        x = x.mean(dim=1)
        x, x_dist = self.head(x), self.head_dist(x)
        return (x + x_dist) / 2

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


# ---------------------------------------------------------------------------------------
# Twins-SVT (timm's twins.py): per stage a PatchEmbed (conv + LayerNorm), Blocks alternating
# LocallyGroupedAttn (windows, even blocks) and GlobalSubSampleAttn (keys/values from an
# `sr` conv + norm, odd blocks), a PosConv (PEG) after each stage's first block; timm Mlp.


class TimmMlp(nn.Module):
    """timm.layers.Mlp: fc1, act, drop1, norm (Identity), fc2, drop2."""

    def __init__(self, in_features, hidden_features, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
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


class TimmDropPath(nn.Module):
    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)


class LocallyGroupedAttn(nn.Module):
    def __init__(self, dim, num_heads=8, attn_drop=0.0, proj_drop=0.0, ws=1):
        super().__init__()
        self.dim = dim
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim**-0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.ws = ws

    def forward(self, x, size):
        B, N, C = x.shape
        H, W = size
        x = x.view(B, H, W, C)
        pad_l = pad_t = 0
        pad_r = (self.ws - W % self.ws) % self.ws
        pad_b = (self.ws - H % self.ws) % self.ws
        x = F.pad(x, (0, 0, pad_l, pad_r, pad_t, pad_b))
        _, Hp, Wp, _ = x.shape
        _h, _w = Hp // self.ws, Wp // self.ws
        x = x.reshape(B, _h, self.ws, _w, self.ws, C).transpose(2, 3)
        qkv = (
            self.qkv(x)
            .reshape(B, _h * _w, self.ws * self.ws, 3, self.num_heads, C // self.num_heads)
            .permute(3, 0, 1, 4, 2, 5)
        )
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = attn @ v
        x = x.transpose(2, 3).reshape(B, _h, _w, self.ws, self.ws, C)
        x = x.transpose(2, 3).reshape(B, _h * self.ws, _w * self.ws, C)
        if pad_r > 0 or pad_b > 0:
            x = x[:, :H, :W, :].contiguous()
        x = x.reshape(B, N, C)
        x = self.proj(x)
        return self.proj_drop(x)


class GlobalSubSampleAttn(nn.Module):
    def __init__(self, dim, num_heads=8, attn_drop=0.0, proj_drop=0.0, sr_ratio=1):
        super().__init__()
        self.dim = dim
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim**-0.5
        self.q = nn.Linear(dim, dim, bias=True)
        self.kv = nn.Linear(dim, dim * 2, bias=True)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.sr_ratio = sr_ratio
        if sr_ratio > 1:
            self.sr = nn.Conv2d(dim, dim, kernel_size=sr_ratio, stride=sr_ratio)
            self.norm = nn.LayerNorm(dim)
        else:
            self.sr = None
            self.norm = None

    def forward(self, x, size):
        B, N, C = x.shape
        q = self.q(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        if self.sr is not None:
            x = x.permute(0, 2, 1).reshape(B, C, *size)
            x = self.sr(x).reshape(B, C, -1).permute(0, 2, 1)
            x = self.norm(x)
        kv = self.kv(x).reshape(B, -1, 2, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        k, v = kv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        return self.proj_drop(x)


class TwinsBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, drop_path=0.0, sr_ratio=1, ws=None):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        if ws == 1:
            self.attn = GlobalSubSampleAttn(dim, num_heads, sr_ratio=sr_ratio)
        else:
            self.attn = LocallyGroupedAttn(dim, num_heads, ws=ws)
        self.drop_path1 = TimmDropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = TimmMlp(dim, int(dim * mlp_ratio))
        self.drop_path2 = TimmDropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x, size):
        x = x + self.drop_path1(self.attn(self.norm1(x), size))
        return x + self.drop_path2(self.mlp(self.norm2(x)))


class PosConv(nn.Module):
    def __init__(self, in_chans, embed_dim=768, stride=1):
        super().__init__()
        self.proj = nn.Sequential(nn.Conv2d(in_chans, embed_dim, 3, stride, 1, bias=True, groups=embed_dim))
        self.stride = stride

    def forward(self, x, size):
        B, N, C = x.shape
        cnn_feat_token = x.transpose(1, 2).view(B, C, *size)
        x = self.proj(cnn_feat_token)
        if self.stride == 1:
            x += cnn_feat_token
        return x.flatten(2).transpose(1, 2)


class TwinsPatchEmbed(nn.Module):
    def __init__(self, patch_size, in_chans, embed_dim):
        super().__init__()
        self.patch_size = (patch_size, patch_size)
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        B, C, H, W = x.shape
        x = self.proj(x).flatten(2).transpose(1, 2)
        x = self.norm(x)
        out_size = (H // self.patch_size[0], W // self.patch_size[1])
        return x, out_size


class Twins(nn.Module):
    def __init__(self, patch_size=4, num_classes=10, embed_dims=(32, 64), num_heads=(2, 4), mlp_ratios=(4, 4),
                 depths=(2, 2), sr_ratios=(4, 2), wss=(4, 4), drop_path_rate=0.1):
        super().__init__()
        self.depths = depths
        prev_chs = 3
        self.patch_embeds = nn.ModuleList()
        self.pos_drops = nn.ModuleList()
        for i in range(len(depths)):
            self.patch_embeds.append(TwinsPatchEmbed(patch_size, prev_chs, embed_dims[i]))
            self.pos_drops.append(nn.Dropout(p=0.0))
            prev_chs = embed_dims[i]
            patch_size = 2
        self.blocks = nn.ModuleList()
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        cur = 0
        for k in range(len(depths)):
            _block = nn.ModuleList(
                [
                    TwinsBlock(embed_dims[k], num_heads[k], mlp_ratios[k], drop_path=dpr[cur + i],
                               sr_ratio=sr_ratios[k], ws=1 if wss is None or i % 2 == 1 else wss[k])
                    for i in range(depths[k])
                ]
            )
            self.blocks.append(_block)
            cur += depths[k]
        self.pos_block = nn.ModuleList([PosConv(embed_dim, embed_dim) for embed_dim in embed_dims])
        self.norm = nn.LayerNorm(embed_dims[-1])
        self.head_drop = nn.Dropout(0.0)
        self.head = nn.Linear(embed_dims[-1], num_classes)

    def forward_features(self, x):
        B = x.shape[0]
        for i, (embed, drop, blocks, pos_blk) in enumerate(
            zip(self.patch_embeds, self.pos_drops, self.blocks, self.pos_block)
        ):
            x, size = embed(x)
            x = drop(x)
            for j, blk in enumerate(blocks):
                x = blk(x, size)
                if j == 0:
                    x = pos_blk(x, size)
            if i < len(self.depths) - 1:
                x = x.reshape(B, *size, -1).permute(0, 3, 1, 2).contiguous()
        return self.norm(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = x.mean(dim=1)
        x = self.head_drop(x)
        return self.head(x)


# ---------------------------------------------------------------------------------------
# CoAtNet (the common community port, chinhsuanwu/coatnet-pytorch): s0 conv stem, MBConv
# stages (PreNorm with BatchNorm2d, SE, max-pool + 1x1 proj shortcut when downsampling), then
# Transformer stages (Rearrange, PreNorm(LayerNorm) around a relative-attention Attention with
# a gathered relative_bias_table, Rearrange back; the same for the FeedForward); AvgPool, fc.
# einops is not installed here, so `Rearrange` is a small module doing the same reshapes.


class Rearrange(nn.Module):
    """Stands in for einops.layers.torch.Rearrange for the two patterns CoAtNet uses."""

    def __init__(self, pattern, **axes_lengths):
        super().__init__()
        self.pattern = pattern
        self.axes_lengths = axes_lengths

    def forward(self, x):
        if self.pattern == "b c ih iw -> b (ih iw) c":
            b, c, ih, iw = x.shape
            return x.permute(0, 2, 3, 1).reshape(b, ih * iw, c)
        if self.pattern == "b (ih iw) c -> b c ih iw":
            b, n, c = x.shape
            ih, iw = self.axes_lengths["ih"], self.axes_lengths["iw"]
            return x.reshape(b, ih, iw, c).permute(0, 3, 1, 2)
        raise ValueError(self.pattern)


def conv_3x3_bn(inp, oup, image_size, downsample=False):
    stride = 1 if downsample is False else 2
    return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1, bias=False), nn.BatchNorm2d(oup), nn.GELU())


class PreNorm(nn.Module):
    def __init__(self, dim, fn, norm):
        super().__init__()
        self.norm = norm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)


class SE(nn.Module):
    def __init__(self, inp, oup, expansion=0.25):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Linear(oup, int(inp * expansion), bias=False),
            nn.GELU(),
            nn.Linear(int(inp * expansion), oup, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        b, c, _, _ = x.size()
        y = self.avg_pool(x).view(b, c)
        y = self.fc(y).view(b, c, 1, 1)
        return x * y


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, dropout=0.0):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden_dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden_dim, dim), nn.Dropout(dropout)
        )

    def forward(self, x):
        return self.net(x)


class MBConv(nn.Module):
    def __init__(self, inp, oup, image_size, downsample=False, expansion=4):
        super().__init__()
        self.downsample = downsample
        stride = 1 if self.downsample is False else 2
        hidden_dim = int(inp * expansion)
        if self.downsample:
            self.pool = nn.MaxPool2d(3, 2, 1)
            self.proj = nn.Conv2d(inp, oup, 1, 1, 0, bias=False)
        self.conv = nn.Sequential(
            nn.Conv2d(inp, hidden_dim, 1, stride, 0, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.GELU(),
            nn.Conv2d(hidden_dim, hidden_dim, 3, 1, 1, groups=hidden_dim, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.GELU(),
            SE(inp, hidden_dim),
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        )
        self.conv = PreNorm(inp, self.conv, nn.BatchNorm2d)

    def forward(self, x):
        if self.downsample:
            return self.proj(self.pool(x)) + self.conv(x)
        return x + self.conv(x)


class CoAtAttention(nn.Module):
    def __init__(self, inp, oup, image_size, heads=8, dim_head=32, dropout=0.0):
        super().__init__()
        inner_dim = dim_head * heads
        project_out = not (heads == 1 and dim_head == inp)
        self.ih, self.iw = image_size
        self.heads = heads
        self.scale = dim_head**-0.5
        self.relative_bias_table = nn.Parameter(torch.zeros((2 * self.ih - 1) * (2 * self.iw - 1), heads))
        coords = torch.meshgrid((torch.arange(self.ih), torch.arange(self.iw)), indexing="ij")
        coords = torch.flatten(torch.stack(coords), 1)
        relative_coords = coords[:, :, None] - coords[:, None, :]
        relative_coords[0] += self.ih - 1
        relative_coords[1] += self.iw - 1
        relative_coords[0] *= 2 * self.iw - 1
        relative_coords = relative_coords.permute(1, 2, 0)
        relative_index = relative_coords.sum(-1).flatten().unsqueeze(1)
        self.register_buffer("relative_index", relative_index)
        self.attend = nn.Softmax(dim=-1)
        self.to_qkv = nn.Linear(inp, inner_dim * 3, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, oup), nn.Dropout(dropout)) if project_out else nn.Identity()

    def forward(self, x):
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        b, n, _ = x.shape
        q, k, v = map(lambda t: t.reshape(b, n, self.heads, -1).permute(0, 2, 1, 3), qkv)
        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        relative_bias = self.relative_bias_table.gather(0, self.relative_index.repeat(1, self.heads))
        relative_bias = relative_bias.reshape(self.ih * self.iw, self.ih * self.iw, -1).permute(2, 0, 1).unsqueeze(0)
        dots = dots + relative_bias
        attn = self.attend(dots)
        out = torch.matmul(attn, v)
        out = out.permute(0, 2, 1, 3).reshape(b, n, -1)
        return self.to_out(out)


class CoAtTransformer(nn.Module):
    def __init__(self, inp, oup, image_size, heads=2, dim_head=16, downsample=False, dropout=0.0):
        super().__init__()
        hidden_dim = int(inp * 4)
        self.ih, self.iw = image_size
        self.downsample = downsample
        if self.downsample:
            self.pool1 = nn.MaxPool2d(3, 2, 1)
            self.pool2 = nn.MaxPool2d(3, 2, 1)
            self.proj = nn.Conv2d(inp, oup, 1, 1, 0, bias=False)
        self.attn = CoAtAttention(inp, oup, image_size, heads, dim_head, dropout)
        self.ff = FeedForward(oup, hidden_dim, dropout)
        self.attn = nn.Sequential(
            Rearrange("b c ih iw -> b (ih iw) c"),
            PreNorm(inp, self.attn, nn.LayerNorm),
            Rearrange("b (ih iw) c -> b c ih iw", ih=self.ih, iw=self.iw),
        )
        self.ff = nn.Sequential(
            Rearrange("b c ih iw -> b (ih iw) c"),
            PreNorm(oup, self.ff, nn.LayerNorm),
            Rearrange("b (ih iw) c -> b c ih iw", ih=self.ih, iw=self.iw),
        )

    def forward(self, x):
        if self.downsample:
            x = self.proj(self.pool1(x)) + self.attn(self.pool2(x))
        else:
            x = x + self.attn(x)
        return x + self.ff(x)


class CoAtNet(nn.Module):
    def __init__(self, image_size=(64, 64), in_channels=3, num_blocks=(1, 1, 1, 2, 1), channels=(16, 24, 32, 48, 64),
                 num_classes=10, block_types=("C", "C", "T", "T")):
        super().__init__()
        ih, iw = image_size
        block = {"C": MBConv, "T": CoAtTransformer}
        self.s0 = self._make_layer(conv_3x3_bn, in_channels, channels[0], num_blocks[0], (ih // 2, iw // 2))
        self.s1 = self._make_layer(block[block_types[0]], channels[0], channels[1], num_blocks[1], (ih // 4, iw // 4))
        self.s2 = self._make_layer(block[block_types[1]], channels[1], channels[2], num_blocks[2], (ih // 8, iw // 8))
        self.s3 = self._make_layer(block[block_types[2]], channels[2], channels[3], num_blocks[3],
                                   (ih // 16, iw // 16))
        self.s4 = self._make_layer(block[block_types[3]], channels[3], channels[4], num_blocks[4],
                                   (ih // 32, iw // 32))
        self.pool = nn.AvgPool2d(ih // 32, 1)
        self.fc = nn.Linear(channels[-1], num_classes, bias=False)

    def forward(self, x):
        x = self.s0(x)
        x = self.s1(x)
        x = self.s2(x)
        x = self.s3(x)
        x = self.s4(x)
        x = self.pool(x).view(-1, x.shape[1])
        return self.fc(x)

    def _make_layer(self, block, inp, oup, depth, image_size):
        layers = nn.ModuleList([])
        for i in range(depth):
            if i == 0:
                layers.append(block(inp, oup, image_size, downsample=True))
            else:
                layers.append(block(oup, oup, image_size))
        return nn.Sequential(*layers)


# ---------------------------------------------------------------------------------------
# EfficientFormer (snap-research's efficientformer.py, v1): `stem` (two stride-2 conv-BN-ReLU),
# `network` ModuleList of stages (Sequentials of Meta4D: Pooling mixer `pool(x) - x`, conv Mlp
# with BN, layer_scale_1/2 parameters) and Embedding downsamplers (conv + BN); in the last
# stage a Flat then Meta3D (LayerNorm, Attention with attention_biases, LinearMlp); head and
# dist_head on the token mean, both trained.


class EFAttention(nn.Module):
    def __init__(self, dim=384, key_dim=32, num_heads=8, attn_ratio=4, resolution=7):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim**-0.5
        self.key_dim = key_dim
        self.nh_kd = nh_kd = key_dim * num_heads
        self.d = int(attn_ratio * key_dim)
        self.dh = int(attn_ratio * key_dim) * num_heads
        self.attn_ratio = attn_ratio
        h = self.dh + nh_kd * 2
        self.qkv = nn.Linear(dim, h)
        self.proj = nn.Linear(self.dh, dim)
        points = list(itertools.product(range(resolution), range(resolution)))
        N = len(points)
        attention_offsets, idxs = {}, []
        for p1 in points:
            for p2 in points:
                offset = (abs(p1[0] - p2[0]), abs(p1[1] - p2[1]))
                if offset not in attention_offsets:
                    attention_offsets[offset] = len(attention_offsets)
                idxs.append(attention_offsets[offset])
        self.attention_biases = nn.Parameter(torch.zeros(num_heads, len(attention_offsets)))
        self.register_buffer("attention_bias_idxs", torch.LongTensor(idxs).view(N, N))

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x)
        q, k, v = (
            qkv.reshape(B, N, self.num_heads, -1).permute(0, 2, 1, 3).split([self.key_dim, self.key_dim, self.d], dim=3)
        )
        attn = (q @ k.transpose(-2, -1)) * self.scale + self.attention_biases[:, self.attention_bias_idxs]
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.dh)
        return self.proj(x)


def ef_stem(in_chs, out_chs):
    return nn.Sequential(
        nn.Conv2d(in_chs, out_chs // 2, kernel_size=3, stride=2, padding=1),
        nn.BatchNorm2d(out_chs // 2),
        nn.ReLU(),
        nn.Conv2d(out_chs // 2, out_chs, kernel_size=3, stride=2, padding=1),
        nn.BatchNorm2d(out_chs),
        nn.ReLU(),
    )


class Embedding(nn.Module):
    def __init__(self, patch_size=3, stride=2, padding=1, in_chans=3, embed_dim=768):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=stride, padding=padding)
        self.norm = nn.BatchNorm2d(embed_dim)

    def forward(self, x):
        return self.norm(self.proj(x))


class Flat(nn.Module):
    def forward(self, x):
        return x.flatten(2).transpose(1, 2)


class Pooling(nn.Module):
    def __init__(self, pool_size=3):
        super().__init__()
        self.pool = nn.AvgPool2d(pool_size, stride=1, padding=pool_size // 2, count_include_pad=False)

    def forward(self, x):
        return self.pool(x) - x


class LinearMlp(nn.Module):
    def __init__(self, in_features, hidden_features, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.fc2(x)
        return self.drop2(x)


class EFMlp(nn.Module):
    def __init__(self, in_features, hidden_features, drop=0.0):
        super().__init__()
        self.fc1 = nn.Conv2d(in_features, hidden_features, 1)
        self.act = nn.GELU()
        self.fc2 = nn.Conv2d(hidden_features, in_features, 1)
        self.drop = nn.Dropout(drop)
        self.norm1 = nn.BatchNorm2d(hidden_features)
        self.norm2 = nn.BatchNorm2d(in_features)

    def forward(self, x):
        x = self.fc1(x)
        x = self.norm1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.norm2(x)
        return self.drop(x)


class Meta3D(nn.Module):
    def __init__(self, dim, mlp_ratio=4.0, drop_path=0.0, layer_scale_init_value=1e-5, resolution=7):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mixer = EFAttention(dim, key_dim=8, num_heads=2, attn_ratio=2, resolution=resolution)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = LinearMlp(dim, int(dim * mlp_ratio))
        self.drop_path = TimmDropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.use_layer_scale = True
        self.layer_scale_1 = nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True)
        self.layer_scale_2 = nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True)

    def forward(self, x):
        x = x + self.drop_path(self.layer_scale_1.unsqueeze(0).unsqueeze(0) * self.token_mixer(self.norm1(x)))
        return x + self.drop_path(self.layer_scale_2.unsqueeze(0).unsqueeze(0) * self.mlp(self.norm2(x)))


class Meta4D(nn.Module):
    def __init__(self, dim, pool_size=3, mlp_ratio=4.0, drop_path=0.0, layer_scale_init_value=1e-5):
        super().__init__()
        self.token_mixer = Pooling(pool_size=pool_size)
        self.mlp = EFMlp(dim, int(dim * mlp_ratio))
        self.drop_path = TimmDropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.use_layer_scale = True
        self.layer_scale_1 = nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True)
        self.layer_scale_2 = nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True)

    def forward(self, x):
        x = x + self.drop_path(self.layer_scale_1.unsqueeze(-1).unsqueeze(-1) * self.token_mixer(x))
        return x + self.drop_path(self.layer_scale_2.unsqueeze(-1).unsqueeze(-1) * self.mlp(x))


def meta_blocks(dim, index, layers, mlp_ratio=4.0, drop_path_rate=0.0, vit_num=1, resolution=7):
    blocks = []
    if index == 3 and vit_num == layers[index]:
        blocks.append(Flat())
    for block_idx in range(layers[index]):
        block_dpr = drop_path_rate * (block_idx + sum(layers[:index])) / (sum(layers) - 1)
        if index == 3 and layers[index] - block_idx <= vit_num:
            blocks.append(Meta3D(dim, mlp_ratio=mlp_ratio, drop_path=block_dpr, resolution=resolution))
        else:
            blocks.append(Meta4D(dim, mlp_ratio=mlp_ratio, drop_path=block_dpr))
            if index == 3 and layers[index] - block_idx - 1 == vit_num:
                blocks.append(Flat())
    return nn.Sequential(*blocks)


class EfficientFormer(nn.Module):
    def __init__(self, layers=(1, 1, 2, 2), embed_dims=(16, 24, 32, 48), mlp_ratios=4, downsamples=(True,) * 4,
                 num_classes=10, drop_path_rate=0.1, vit_num=1, img_size=96):
        super().__init__()
        self.patch_embed = ef_stem(3, embed_dims[0])
        network = []
        for i in range(len(layers)):
            stage = meta_blocks(embed_dims[i], i, layers, mlp_ratio=mlp_ratios, drop_path_rate=drop_path_rate,
                                vit_num=vit_num, resolution=img_size // 32)
            network.append(stage)
            if i >= len(layers) - 1:
                break
            if downsamples[i] or embed_dims[i] != embed_dims[i + 1]:
                network.append(Embedding(in_chans=embed_dims[i], embed_dim=embed_dims[i + 1]))
        self.network = nn.ModuleList(network)
        self.norm = nn.LayerNorm(embed_dims[-1])
        self.head = nn.Linear(embed_dims[-1], num_classes)
        self.dist = True
        self.dist_head = nn.Linear(embed_dims[-1], num_classes)

    def forward_tokens(self, x):
        for idx, block in enumerate(self.network):
            x = block(x)
        return x

    def forward(self, x):
        x = self.patch_embed(x)
        x = self.forward_tokens(x)
        x = self.norm(x)
        cls_out = self.head(x.mean(-2)), self.dist_head(x.mean(-2))
        if not self.training:
            cls_out = (cls_out[0] + cls_out[1]) / 2
        return cls_out


def ce_two_heads(out, target):
    return (F.cross_entropy(out[0], target) + F.cross_entropy(out[1], target)) / 2


# ---------------------------------------------------------------------------------------
# RetinaNet with an FPN, torchvision's layout written small: a ResNet-style body (conv1, bn1,
# relu, maxpool, layer1..layer4 of BasicBlocks) whose layer2..4 feed a FeaturePyramidNetwork
# (inner_blocks 1x1 laterals, nearest top-down upsample-add, layer_blocks 3x3 outputs, picked
# by index in get_result_from_*_blocks) with LastLevelP6P7; RetinaNetHead's classification
# and regression heads (conv stacks + cls_logits / bbox_reg) applied to every level in a loop.
# Loss: sigmoid focal loss on the logits plus L1 on the box deltas, against fixed targets.


class RNBasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNetBody(nn.Module):
    def __init__(self, widths=(16, 32, 64, 128), blocks=(1, 1, 1, 1)):
        super().__init__()
        self.inplanes = widths[0]
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(widths[0], blocks[0])
        self.layer2 = self._make_layer(widths[1], blocks[1], stride=2)
        self.layer3 = self._make_layer(widths[2], blocks[2], stride=2)
        self.layer4 = self._make_layer(widths[3], blocks[3], stride=2)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [RNBasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(RNBasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        c2 = self.layer1(x)
        c3 = self.layer2(c2)
        c4 = self.layer3(c3)
        c5 = self.layer4(c4)
        return OrderedDict([("0", c3), ("1", c4), ("2", c5)])


class LastLevelP6P7(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        self.use_P5 = in_channels == out_channels

    def forward(self, p, c, names):
        p5, c5 = p[-1], c[-1]
        x = p5 if self.use_P5 else c5
        p6 = self.p6(x)
        p7 = self.p7(F.relu(p6))
        p.extend([p6, p7])
        names.extend(["p6", "p7"])
        return p, names


class FeaturePyramidNetwork(nn.Module):
    def __init__(self, in_channels_list, out_channels, extra_blocks=None):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            self.inner_blocks.append(nn.Conv2d(in_channels, out_channels, 1))
            self.layer_blocks.append(nn.Conv2d(out_channels, out_channels, 3, padding=1))
        self.extra_blocks = extra_blocks

    def get_result_from_inner_blocks(self, x, idx):
        num_blocks = len(self.inner_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.inner_blocks):
            if i == idx:
                out = module(x)
        return out

    def get_result_from_layer_blocks(self, x, idx):
        num_blocks = len(self.layer_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.layer_blocks):
            if i == idx:
                out = module(x)
        return out

    def forward(self, x):
        names = list(x.keys())
        x = list(x.values())
        last_inner = self.get_result_from_inner_blocks(x[-1], -1)
        results = [self.get_result_from_layer_blocks(last_inner, -1)]
        for idx in range(len(x) - 2, -1, -1):
            inner_lateral = self.get_result_from_inner_blocks(x[idx], idx)
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))
        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, x, names)
        return OrderedDict([(k, v) for k, v in zip(names, results)])


class BackboneWithFPN(nn.Module):
    def __init__(self, out_channels=32):
        super().__init__()
        self.body = ResNetBody()
        self.fpn = FeaturePyramidNetwork([32, 64, 128], out_channels, extra_blocks=LastLevelP6P7(out_channels,
                                                                                                 out_channels))
        self.out_channels = out_channels

    def forward(self, x):
        return self.fpn(self.body(x))


class RetinaNetClassificationHead(nn.Module):
    def __init__(self, in_channels, num_anchors, num_classes, num_convs=2):
        super().__init__()
        conv = []
        for _ in range(num_convs):
            conv.append(nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1))
            conv.append(nn.ReLU())
        self.conv = nn.Sequential(*conv)
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1)
        self.num_classes = num_classes
        self.num_anchors = num_anchors

    def forward(self, x):
        all_cls_logits = []
        for features in x:
            cls_logits = self.conv(features)
            cls_logits = self.cls_logits(cls_logits)
            N, _, H, W = cls_logits.shape
            cls_logits = cls_logits.view(N, -1, self.num_classes, H, W)
            cls_logits = cls_logits.permute(0, 3, 4, 1, 2)
            cls_logits = cls_logits.reshape(N, -1, self.num_classes)
            all_cls_logits.append(cls_logits)
        return torch.cat(all_cls_logits, dim=1)


class RetinaNetRegressionHead(nn.Module):
    def __init__(self, in_channels, num_anchors, num_convs=2):
        super().__init__()
        conv = []
        for _ in range(num_convs):
            conv.append(nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1))
            conv.append(nn.ReLU())
        self.conv = nn.Sequential(*conv)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=3, stride=1, padding=1)

    def forward(self, x):
        all_bbox_regression = []
        for features in x:
            bbox_regression = self.conv(features)
            bbox_regression = self.bbox_reg(bbox_regression)
            N, _, H, W = bbox_regression.shape
            bbox_regression = bbox_regression.view(N, -1, 4, H, W)
            bbox_regression = bbox_regression.permute(0, 3, 4, 1, 2)
            bbox_regression = bbox_regression.reshape(N, -1, 4)
            all_bbox_regression.append(bbox_regression)
        return torch.cat(all_bbox_regression, dim=1)


class RetinaNetHead(nn.Module):
    def __init__(self, in_channels, num_anchors, num_classes):
        super().__init__()
        self.classification_head = RetinaNetClassificationHead(in_channels, num_anchors, num_classes)
        self.regression_head = RetinaNetRegressionHead(in_channels, num_anchors)

    def forward(self, x):
        return {"cls_logits": self.classification_head(x), "bbox_regression": self.regression_head(x)}


class RetinaNetLite(nn.Module):
    def __init__(self, num_classes=4, num_anchors=3):
        super().__init__()
        self.backbone = BackboneWithFPN()
        self.head = RetinaNetHead(self.backbone.out_channels, num_anchors, num_classes)

    def forward(self, images):
        features = self.backbone(images)
        features = list(features.values())
        return self.head(features)


def retinanet_loss(out, target):
    cls_t, box_t, fg = target
    cls_loss = sigmoid_focal_loss(out["cls_logits"], cls_t, reduction="sum") / max(1, int(fg.sum()))
    box_loss = F.l1_loss(out["bbox_regression"][fg], box_t[fg], reduction="sum") / max(1, int(fg.sum()))
    return cls_loss + box_loss


# ---------------------------------------------------------------------------------------
# Whisper's decoder (transformers' WhisperForCausalLM: model.decoder + proj_out): token
# embeddings plus WhisperPositionalEmbedding (an nn.Embedding whose forward slices its weight),
# pre-norm WhisperDecoderLayers (self_attn, encoder_attn cross-attention on given encoder
# states, fc1 / GELUActivation / fc2, functional dropout), the layerdrop draw per layer,
# final layer_norm. WhisperAttention is BART's: q scaled after q_proj, bias-free k_proj, bmm.


class WhisperPositionalEmbedding(nn.Embedding):
    def __init__(self, num_positions, embedding_dim, padding_idx=None):
        super().__init__(num_positions, embedding_dim)

    def forward(self, input_ids, past_key_values_length=0):
        return self.weight[past_key_values_length : past_key_values_length + input_ids.shape[1]]


class WhisperAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, is_decoder=False, bias=True, is_causal=False,
                 k_bias=False):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**-0.5
        self.is_decoder = is_decoder
        self.is_causal = is_causal
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=k_bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, key_value_states=None, attention_mask=None):
        is_cross_attention = key_value_states is not None
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        if is_cross_attention:
            key_states = self._shape(self.k_proj(key_value_states), -1, bsz)
            value_states = self._shape(self.v_proj(key_value_states), -1, bsz)
        else:
            key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
            value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        if attention_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_probs = F.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim)
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output)


class WhisperDecoderLayer(nn.Module):
    def __init__(self, d_model, heads, ffn_dim, dropout=0.1):
        super().__init__()
        self.embed_dim = d_model
        self.self_attn = WhisperAttention(d_model, heads, dropout=0.0, is_decoder=True, is_causal=True)
        self.dropout = dropout
        self.activation_fn = GELUActivation()
        self.activation_dropout = 0.0
        self.self_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.encoder_attn = WhisperAttention(d_model, heads, dropout=0.0, is_decoder=True)
        self.encoder_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.fc1 = nn.Linear(self.embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, self.embed_dim)
        self.final_layer_norm = nn.LayerNorm(self.embed_dim)

    def forward(self, hidden_states, attention_mask, encoder_hidden_states):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states = self.self_attn(hidden_states=hidden_states, attention_mask=attention_mask)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.encoder_attn_layer_norm(hidden_states)
        hidden_states = self.encoder_attn(hidden_states=hidden_states, key_value_states=encoder_hidden_states)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = F.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        return residual + hidden_states


class WhisperDecoder(nn.Module):
    def __init__(self, vocab_size, d_model, heads, ffn_dim, layers, max_target_positions=48, pad_token_id=0):
        super().__init__()
        self.dropout = 0.1
        self.layerdrop = 0.0
        self.padding_idx = pad_token_id
        self.embed_tokens = nn.Embedding(vocab_size, d_model, self.padding_idx)
        self.embed_positions = WhisperPositionalEmbedding(max_target_positions, d_model)
        self.layers = nn.ModuleList([WhisperDecoderLayer(d_model, heads, ffn_dim) for _ in range(layers)])
        self.layer_norm = nn.LayerNorm(d_model)

    def forward(self, input_ids, encoder_hidden_states):
        inputs_embeds = self.embed_tokens(input_ids)
        n = input_ids.shape[1]
        attention_mask = torch.triu(torch.full((n, n), torch.finfo(inputs_embeds.dtype).min), 1)[None, None]
        attention_mask = attention_mask.expand(input_ids.shape[0], 1, n, n)
        positions = self.embed_positions(input_ids, past_key_values_length=0)
        hidden_states = inputs_embeds + positions
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        for idx, decoder_layer in enumerate(self.layers):
            if self.training:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    continue
            hidden_states = decoder_layer(hidden_states, attention_mask, encoder_hidden_states)
        return self.layer_norm(hidden_states)


class WhisperDecoderWrapper(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.decoder = WhisperDecoder(**kw)

    def forward(self, *args, **kwargs):
        return self.decoder(*args, **kwargs)


class WhisperForCausalLM(nn.Module):
    def __init__(self, vocab_size=512, d_model=64, heads=4, ffn_dim=256, layers=3):
        super().__init__()
        self.model = WhisperDecoderWrapper(vocab_size=vocab_size, d_model=d_model, heads=heads, ffn_dim=ffn_dim,
                                           layers=layers)
        self.proj_out = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, input_ids, encoder_outputs):
        outputs = self.model.decoder(input_ids, encoder_hidden_states=encoder_outputs)
        return self.proj_out(outputs)


# ---------------------------------------------------------------------------------------
# HuBERT (transformers' HubertForSequenceClassification): HubertFeatureEncoder (a
# HubertGroupNormConvLayer, then HubertNoLayerNormConvLayers; bias-free Conv1d, GELU),
# HubertFeatureProjection (layer_norm, projection, dropout), HubertEncoder (post-norm: a
# HubertPositionalConvEmbedding = weight-normed grouped Conv1d + HubertSamePadLayer + GELU,
# added, then layer_norm, dropout and HubertEncoderLayers with BART-style attention and a
# HubertFeedForward); projector, mean pool, classifier. SpecAugment is off (mask_time_prob 0).


class HubertGroupNormConvLayer(nn.Module):
    def __init__(self, conv_dim, conv_kernel, conv_stride, layer_id=0):
        super().__init__()
        self.in_conv_dim = conv_dim[layer_id - 1] if layer_id > 0 else 1
        self.out_conv_dim = conv_dim[layer_id]
        self.conv = nn.Conv1d(self.in_conv_dim, self.out_conv_dim, kernel_size=conv_kernel[layer_id],
                              stride=conv_stride[layer_id], bias=False)
        self.activation = GELUActivation()
        self.layer_norm = nn.GroupNorm(num_groups=self.out_conv_dim, num_channels=self.out_conv_dim, affine=True)

    def forward(self, hidden_states):
        hidden_states = self.conv(hidden_states)
        hidden_states = self.layer_norm(hidden_states)
        return self.activation(hidden_states)


class HubertNoLayerNormConvLayer(nn.Module):
    def __init__(self, conv_dim, conv_kernel, conv_stride, layer_id=0):
        super().__init__()
        self.in_conv_dim = conv_dim[layer_id - 1] if layer_id > 0 else 1
        self.out_conv_dim = conv_dim[layer_id]
        self.conv = nn.Conv1d(self.in_conv_dim, self.out_conv_dim, kernel_size=conv_kernel[layer_id],
                              stride=conv_stride[layer_id], bias=False)
        self.activation = GELUActivation()

    def forward(self, hidden_states):
        return self.activation(self.conv(hidden_states))


class HubertFeatureEncoder(nn.Module):
    def __init__(self, conv_dim, conv_kernel, conv_stride):
        super().__init__()
        conv_layers = [HubertGroupNormConvLayer(conv_dim, conv_kernel, conv_stride, layer_id=0)] + [
            HubertNoLayerNormConvLayer(conv_dim, conv_kernel, conv_stride, layer_id=i + 1)
            for i in range(len(conv_dim) - 1)
        ]
        self.conv_layers = nn.ModuleList(conv_layers)
        self._requires_grad = True

    def forward(self, input_values):
        hidden_states = input_values[:, None]
        if self._requires_grad and self.training:
            hidden_states.requires_grad = True
        for conv_layer in self.conv_layers:
            hidden_states = conv_layer(hidden_states)
        return hidden_states


class HubertFeatureProjection(nn.Module):
    def __init__(self, conv_dim_last, hidden_size):
        super().__init__()
        self.feat_proj_layer_norm = True
        self.layer_norm = nn.LayerNorm(conv_dim_last, eps=1e-5)
        self.projection = nn.Linear(conv_dim_last, hidden_size)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states):
        if self.feat_proj_layer_norm:
            hidden_states = self.layer_norm(hidden_states)
        hidden_states = self.projection(hidden_states)
        return self.dropout(hidden_states)


class HubertSamePadLayer(nn.Module):
    def __init__(self, num_conv_pos_embeddings):
        super().__init__()
        self.num_pad_remove = 1 if num_conv_pos_embeddings % 2 == 0 else 0

    def forward(self, hidden_states):
        if self.num_pad_remove > 0:
            hidden_states = hidden_states[:, :, : -self.num_pad_remove]
        return hidden_states


class HubertPositionalConvEmbedding(nn.Module):
    def __init__(self, hidden_size, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4):
        super().__init__()
        self.conv = nn.Conv1d(hidden_size, hidden_size, kernel_size=num_conv_pos_embeddings,
                              padding=num_conv_pos_embeddings // 2, groups=num_conv_pos_embedding_groups)
        self.conv = nn.utils.weight_norm(self.conv, name="weight", dim=2)
        self.padding = HubertSamePadLayer(num_conv_pos_embeddings)
        self.activation = GELUActivation()

    def forward(self, hidden_states):
        hidden_states = hidden_states.transpose(1, 2)
        hidden_states = self.conv(hidden_states)
        hidden_states = self.padding(hidden_states)
        hidden_states = self.activation(hidden_states)
        return hidden_states.transpose(1, 2)


class HubertAttention(WhisperAttention):
    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__(embed_dim, num_heads, dropout=dropout, k_bias=True)


class HubertFeedForward(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.intermediate_dropout = nn.Dropout(0.0)
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


class HubertEncoderLayer(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size):
        super().__init__()
        self.attention = HubertAttention(hidden_size, heads, dropout=0.1)
        self.dropout = nn.Dropout(0.1)
        self.layer_norm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.feed_forward = HubertFeedForward(hidden_size, intermediate_size)
        self.final_layer_norm = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, hidden_states, attention_mask=None):
        attn_residual = hidden_states
        hidden_states = self.attention(hidden_states, attention_mask=attention_mask)
        hidden_states = self.dropout(hidden_states)
        hidden_states = attn_residual + hidden_states
        hidden_states = self.layer_norm(hidden_states)
        hidden_states = hidden_states + self.feed_forward(hidden_states)
        return self.final_layer_norm(hidden_states)


class HubertEncoder(nn.Module):
    def __init__(self, hidden_size, heads, intermediate_size, layers):
        super().__init__()
        self.pos_conv_embed = HubertPositionalConvEmbedding(hidden_size)
        self.layer_norm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList([HubertEncoderLayer(hidden_size, heads, intermediate_size) for _ in range(layers)])
        self.layerdrop = 0.1

    def forward(self, hidden_states):
        position_embeddings = self.pos_conv_embed(hidden_states)
        hidden_states = hidden_states + position_embeddings
        hidden_states = self.layer_norm(hidden_states)
        hidden_states = self.dropout(hidden_states)
        for layer in self.layers:
            dropout_probability = torch.rand([], generator=self._layerdrop_gen)
            skip_the_layer = True if self.training and (dropout_probability < self.layerdrop) else False
            if not skip_the_layer:
                hidden_states = layer(hidden_states)
        return hidden_states

    # a fixed generator so that every recording drops the same layers (none, with this seed)
    _layerdrop_gen = torch.Generator().manual_seed(7)


class HubertModel(nn.Module):
    def __init__(self, conv_dim=(32, 32, 32), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2), hidden_size=64, heads=4,
                 intermediate_size=128, layers=2):
        super().__init__()
        self.feature_extractor = HubertFeatureEncoder(conv_dim, conv_kernel, conv_stride)
        self.feature_projection = HubertFeatureProjection(conv_dim[-1], hidden_size)
        self.encoder = HubertEncoder(hidden_size, heads, intermediate_size, layers)

    def forward(self, input_values):
        extract_features = self.feature_extractor(input_values)
        extract_features = extract_features.transpose(1, 2)
        hidden_states = self.feature_projection(extract_features)
        return self.encoder(hidden_states)


class HubertForSequenceClassification(nn.Module):
    def __init__(self, hidden_size=64, classifier_proj_size=32, num_labels=4):
        super().__init__()
        self.hubert = HubertModel(hidden_size=hidden_size)
        self.projector = nn.Linear(hidden_size, classifier_proj_size)
        self.classifier = nn.Linear(classifier_proj_size, num_labels)

    def forward(self, input_values):
        hidden_states = self.hubert(input_values)
        hidden_states = self.projector(hidden_states)
        pooled_output = hidden_states.mean(dim=1)
        return self.classifier(pooled_output)


# ---------------------------------------------------------------------------------------
# DeepCTR-Torch models. As in its BaseModel, the input X is one float tensor of all features
# (sparse ids as floats, then dense values); embedding_dict is an nn.ModuleDict of per-field
# Embeddings looked up with X[:, i:i+1].long(); linear_model is DeepCTR's `Linear` (1-dim
# embeddings summed, dense values times a weight); `out` is PredictionLayer (bias + sigmoid).


class PredictionLayer(nn.Module):
    def __init__(self, task="binary", use_bias=True):
        super().__init__()
        self.use_bias = use_bias
        self.task = task
        if self.use_bias:
            self.bias = nn.Parameter(torch.zeros((1,)))

    def forward(self, X):
        output = X
        if self.use_bias:
            output += self.bias
        if self.task == "binary":
            output = torch.sigmoid(output)
        return output


class DNN(nn.Module):
    def __init__(self, inputs_dim, hidden_units, activation="relu", dropout_rate=0.0, init_std=0.0001):
        super().__init__()
        self.dropout = nn.Dropout(dropout_rate)
        hidden_units = [inputs_dim] + list(hidden_units)
        self.linears = nn.ModuleList(
            [nn.Linear(hidden_units[i], hidden_units[i + 1]) for i in range(len(hidden_units) - 1)]
        )
        act = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid}[activation]
        self.activation_layers = nn.ModuleList([act() for _ in range(len(hidden_units) - 1)])
        for name, tensor in self.linears.named_parameters():
            if "weight" in name:
                nn.init.normal_(tensor, mean=0, std=init_std)

    def forward(self, inputs):
        deep_input = inputs
        for i in range(len(self.linears)):
            fc = self.linears[i](deep_input)
            fc = self.activation_layers[i](fc)
            fc = self.dropout(fc)
            deep_input = fc
        return deep_input


class DeepCTRLinear(nn.Module):
    def __init__(self, sparse_vocab, n_dense, init_std=0.0001):
        super().__init__()
        self.n_sparse = len(sparse_vocab)
        self.embedding_dict = nn.ModuleDict({f"C{i}": nn.Embedding(v, 1) for i, v in enumerate(sparse_vocab)})
        for tensor in self.embedding_dict.values():
            nn.init.normal_(tensor.weight, mean=0, std=init_std)
        self.n_dense = n_dense
        if n_dense > 0:
            self.weight = nn.Parameter(torch.Tensor(n_dense, 1))
            nn.init.normal_(self.weight, mean=0, std=init_std)

    def forward(self, X):
        sparse_embedding_list = [self.embedding_dict[f"C{i}"](X[:, i : i + 1].long()) for i in range(self.n_sparse)]
        dense_value_list = [X[:, self.n_sparse + j : self.n_sparse + j + 1] for j in range(self.n_dense)]
        linear_logit = torch.zeros([X.shape[0], 1])
        if len(sparse_embedding_list) > 0:
            sparse_embedding_cat = torch.cat(sparse_embedding_list, dim=-1)
            sparse_feat_logit = torch.sum(sparse_embedding_cat, dim=-1, keepdim=False)
            linear_logit += sparse_feat_logit
        if len(dense_value_list) > 0:
            dense_value_logit = torch.cat(dense_value_list, dim=-1).matmul(self.weight)
            linear_logit += dense_value_logit
        return linear_logit


class DeepCTRBase(nn.Module):
    def __init__(self, sparse_vocab, n_dense, embedding_size, init_std=0.0001):
        super().__init__()
        self.n_sparse, self.n_dense = len(sparse_vocab), n_dense
        self.embedding_size = embedding_size
        self.embedding_dict = nn.ModuleDict(
            {f"C{i}": nn.Embedding(v, embedding_size) for i, v in enumerate(sparse_vocab)}
        )
        for tensor in self.embedding_dict.values():
            nn.init.normal_(tensor.weight, mean=0, std=init_std)
        self.linear_model = DeepCTRLinear(sparse_vocab, n_dense)
        self.out = PredictionLayer("binary")

    def input_from_feature_columns(self, X):
        sparse_embedding_list = [self.embedding_dict[f"C{i}"](X[:, i : i + 1].long()) for i in range(self.n_sparse)]
        dense_value_list = [X[:, self.n_sparse + j : self.n_sparse + j + 1] for j in range(self.n_dense)]
        return sparse_embedding_list, dense_value_list


def combined_dnn_input(sparse_embedding_list, dense_value_list):
    sparse_dnn_input = torch.flatten(torch.cat(sparse_embedding_list, dim=-1), start_dim=1)
    if not dense_value_list:
        return sparse_dnn_input
    dense_dnn_input = torch.flatten(torch.cat(dense_value_list, dim=-1), start_dim=1)
    return torch.cat([sparse_dnn_input, dense_dnn_input], dim=-1)


def bce_prob(out, target):
    return F.binary_cross_entropy(out, target)


# FiBiNET (DeepCTR-Torch): SENETLayer squeezes each field embedding to its mean, excites the
# fields through Linear-ReLU-Linear-ReLU and reweights them; one BilinearInteraction
# ("interaction": a bias-free Linear per field pair) is applied to both the SENET output and
# the raw embeddings (so it runs twice a step); DNN on both, dnn_linear, plus the linear part.


class SENETLayer(nn.Module):
    def __init__(self, filed_size, reduction_ratio=3):
        super().__init__()
        self.filed_size = filed_size
        self.reduction_size = max(1, filed_size // reduction_ratio)
        self.reduction_ratio = reduction_ratio
        self.excitation = nn.Sequential(
            nn.Linear(self.filed_size, self.reduction_size, bias=False),
            nn.ReLU(),
            nn.Linear(self.reduction_size, self.filed_size, bias=False),
            nn.ReLU(),
        )

    def forward(self, inputs):
        Z = torch.mean(inputs, dim=-1, out=None)
        A = self.excitation(Z)
        return torch.mul(inputs, torch.unsqueeze(A, dim=2))


class BilinearInteraction(nn.Module):
    def __init__(self, filed_size, embedding_size, bilinear_type="interaction"):
        super().__init__()
        self.bilinear_type = bilinear_type
        self.bilinear = nn.ModuleList()
        for _, _ in itertools.combinations(range(filed_size), 2):
            self.bilinear.append(nn.Linear(embedding_size, embedding_size, bias=False))

    def forward(self, inputs):
        inputs = torch.split(inputs, 1, dim=1)
        p = [
            torch.mul(bilinear(v_i), v_j)
            for (v_i, v_j), bilinear in zip(itertools.combinations(inputs, 2), self.bilinear)
        ]
        return torch.cat(p, dim=1)


class FiBiNET(DeepCTRBase):
    def __init__(self, sparse_vocab=(50, 40, 30, 60, 20, 10), n_dense=2, embedding_size=8, reduction_ratio=3,
                 dnn_hidden_units=(64, 32)):
        super().__init__(sparse_vocab, n_dense, embedding_size)
        self.field_size = len(self.embedding_dict)
        self.SE = SENETLayer(self.field_size, reduction_ratio)
        self.Bilinear = BilinearInteraction(self.field_size, embedding_size)
        pairs = self.field_size * (self.field_size - 1) // 2
        self.dnn = DNN(2 * pairs * embedding_size + n_dense, dnn_hidden_units)
        self.dnn_linear = nn.Linear(dnn_hidden_units[-1], 1, bias=False)

    def forward(self, X):
        sparse_embedding_list, dense_value_list = self.input_from_feature_columns(X)
        sparse_embedding_input = torch.cat(sparse_embedding_list, dim=1)
        senet_output = self.SE(sparse_embedding_input)
        senet_bilinear_out = self.Bilinear(senet_output)
        bilinear_out = self.Bilinear(sparse_embedding_input)
        linear_logit = self.linear_model(X)
        temp = torch.split(torch.cat((senet_bilinear_out, bilinear_out), dim=1), 1, dim=1)
        dnn_input = combined_dnn_input(temp, dense_value_list)
        dnn_output = self.dnn(dnn_input)
        dnn_logit = self.dnn_linear(dnn_output)
        final_logit = linear_logit + dnn_logit
        return self.out(final_logit)


# AFM (DeepCTR-Torch): the linear part plus AFMLayer over the field embeddings: every pair's
# element-wise product (itertools.combinations, cat), an attention net written with
# parameters and tensordot (attention_W, attention_b, ReLU, projection_h, softmax over
# pairs), the attention-weighted sum, dropout, projection_p; PredictionLayer.


class AFMLayer(nn.Module):
    def __init__(self, in_features, attention_factor=4, dropout_rate=0.0):
        super().__init__()
        self.attention_factor = attention_factor
        embedding_size = in_features
        self.attention_W = nn.Parameter(torch.Tensor(embedding_size, self.attention_factor))
        self.attention_b = nn.Parameter(torch.Tensor(self.attention_factor))
        self.projection_h = nn.Parameter(torch.Tensor(self.attention_factor, 1))
        self.projection_p = nn.Parameter(torch.Tensor(embedding_size, 1))
        for tensor in [self.attention_W, self.projection_h, self.projection_p]:
            nn.init.xavier_normal_(tensor)
        for tensor in [self.attention_b]:
            nn.init.zeros_(tensor)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, inputs):
        embeds_vec_list = inputs
        row, col = [], []
        for r, c in itertools.combinations(embeds_vec_list, 2):
            row.append(r)
            col.append(c)
        p = torch.cat(row, dim=1)
        q = torch.cat(col, dim=1)
        inner_product = p * q
        bi_interaction = inner_product
        attention_temp = F.relu(torch.tensordot(bi_interaction, self.attention_W, dims=([-1], [0])) + self.attention_b)
        self.normalized_att_score = F.softmax(torch.tensordot(attention_temp, self.projection_h, dims=([-1], [0])),
                                              dim=1)
        attention_output = torch.sum(self.normalized_att_score * bi_interaction, dim=1)
        attention_output = self.dropout(attention_output)
        return torch.tensordot(attention_output, self.projection_p, dims=([-1], [0]))


class AFM(DeepCTRBase):
    def __init__(self, sparse_vocab=(50, 40, 30, 60, 20, 10, 25, 35), embedding_size=8, attention_factor=8,
                 afm_dropout=0.1):
        super().__init__(sparse_vocab, 0, embedding_size)
        self.use_attention = True
        self.fm = AFMLayer(embedding_size, attention_factor, afm_dropout)

    def forward(self, X):
        sparse_embedding_list, _ = self.input_from_feature_columns(X)
        logit = self.linear_model(X)
        logit += self.fm(sparse_embedding_list)
        return self.out(logit)


# DIEN (DeepCTR-Torch): InterestExtractor (nn.GRU over the packed behaviour sequence and an
# auxiliary_net DNN scoring clicked vs. negative next items for the auxiliary loss),
# InterestEvolving with gru_type "AUGRU": AttentionSequencePoolingLayer (LocalActivationUnit:
# DNN on [q, k, q-k, q*k] and `dense`; masked softmax) gives per-step scores, and DynamicGRU
# runs AUGRUCell (F.linear gates, attention-scaled update gate) over the packed batch_sizes in
# a Python loop; last state, DNN, linear, PredictionLayer. forward returns (y, aux_loss).


class LocalActivationUnit(nn.Module):
    def __init__(self, hidden_units=(64, 32), embedding_dim=4, activation="sigmoid"):
        super().__init__()
        self.dnn = DNN(4 * embedding_dim, hidden_units, activation=activation)
        self.dense = nn.Linear(hidden_units[-1], 1)

    def forward(self, query, user_behavior):
        user_behavior_len = user_behavior.size(1)
        queries = query.expand(-1, user_behavior_len, -1)
        attention_input = torch.cat([queries, user_behavior, queries - user_behavior, queries * user_behavior], dim=-1)
        attention_output = self.dnn(attention_input)
        return self.dense(attention_output)


class AttentionSequencePoolingLayer(nn.Module):
    def __init__(self, att_hidden_units=(80, 40), att_activation="sigmoid", weight_normalization=False,
                 return_score=False, embedding_dim=4):
        super().__init__()
        self.return_score = return_score
        self.weight_normalization = weight_normalization
        self.supports_masking = False
        self.local_att = LocalActivationUnit(att_hidden_units, embedding_dim, att_activation)

    def forward(self, query, keys, keys_length):
        batch_size, max_length, _ = keys.size()
        keys_masks = torch.arange(max_length, dtype=keys_length.dtype).repeat(batch_size, 1)
        keys_masks = keys_masks < keys_length.view(-1, 1)
        keys_masks = keys_masks.unsqueeze(1)
        attention_score = self.local_att(query, keys)
        outputs = torch.transpose(attention_score, 1, 2)
        if self.weight_normalization:
            paddings = torch.ones_like(outputs) * (-(2**32) + 1)
        else:
            paddings = torch.zeros_like(outputs)
        outputs = torch.where(keys_masks, outputs, paddings)
        if self.weight_normalization:
            outputs = F.softmax(outputs, dim=-1)
        if not self.return_score:
            outputs = torch.matmul(outputs, keys)
        return outputs


class AUGRUCell(nn.Module):
    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = nn.Parameter(torch.Tensor(3 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.Tensor(3 * hidden_size, hidden_size))
        # DeepCTR-Torch leaves the weights uninitialised; initialised here as nn.GRUCell does
        for w in (self.weight_ih, self.weight_hh):
            nn.init.uniform_(w, -hidden_size**-0.5, hidden_size**-0.5)
        self.bias_ih = nn.Parameter(torch.Tensor(3 * hidden_size))
        self.bias_hh = nn.Parameter(torch.Tensor(3 * hidden_size))
        for tensor in [self.bias_ih, self.bias_hh]:
            nn.init.zeros_(tensor)

    def forward(self, inputs, hx, att_score):
        gi = F.linear(inputs, self.weight_ih, self.bias_ih)
        gh = F.linear(hx, self.weight_hh, self.bias_hh)
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        reset_gate = torch.sigmoid(i_r + h_r)
        update_gate = torch.sigmoid(i_z + h_z)
        new_state = torch.tanh(i_n + reset_gate * h_n)
        att_score = att_score.view(-1, 1)
        update_gate = att_score * update_gate
        return (1.0 - update_gate) * hx + update_gate * new_state


class DynamicGRU(nn.Module):
    def __init__(self, input_size, hidden_size, bias=True, gru_type="AUGRU"):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.rnn = AUGRUCell(input_size, hidden_size, bias)

    def forward(self, inputs, att_scores=None, hx=None):
        inputs, batch_sizes, sorted_indices, unsorted_indices = inputs
        att_scores, _, _, _ = att_scores
        max_batch_size = int(batch_sizes[0])
        if hx is None:
            hx = torch.zeros(max_batch_size, self.hidden_size, dtype=inputs.dtype, device=inputs.device)
        outputs = torch.zeros(inputs.size(0), self.hidden_size, dtype=inputs.dtype, device=inputs.device)
        begin = 0
        for batch in batch_sizes:
            new_hx = self.rnn(inputs[begin : begin + batch], hx[0:batch], att_scores[begin : begin + batch])
            outputs[begin : begin + batch] = new_hx
            hx = new_hx
            begin += batch
        return PackedSequence(outputs, batch_sizes, sorted_indices, unsorted_indices)


class InterestExtractor(nn.Module):
    def __init__(self, input_size, use_neg=False, init_std=0.001):
        super().__init__()
        self.use_neg = use_neg
        self.gru = nn.GRU(input_size=input_size, hidden_size=input_size, batch_first=True)
        if self.use_neg:
            self.auxiliary_net = DNN(input_size * 2, [32, 16, 1], "sigmoid", init_std=init_std)

    def forward(self, keys, keys_length, neg_keys=None):
        batch_size, max_length, dim = keys.size()
        aux_loss = torch.zeros((1,))
        mask = keys_length > 0
        masked_keys_length = keys_length[mask]
        masked_keys = torch.masked_select(keys, mask.view(-1, 1, 1)).view(-1, max_length, dim)
        packed_keys = pack_padded_sequence(masked_keys, lengths=masked_keys_length.cpu(), batch_first=True,
                                           enforce_sorted=False)
        packed_interests, _ = self.gru(packed_keys)
        interests, _ = pad_packed_sequence(packed_interests, batch_first=True, padding_value=0.0,
                                           total_length=max_length)
        if self.use_neg and neg_keys is not None:
            masked_neg_keys = torch.masked_select(neg_keys, mask.view(-1, 1, 1)).view(-1, max_length, dim)
            aux_loss = self._cal_auxiliary_loss(interests[:, :-1, :], masked_keys[:, 1:, :],
                                                masked_neg_keys[:, 1:, :], masked_keys_length - 1)
        return interests, aux_loss

    def _cal_auxiliary_loss(self, states, click_seq, noclick_seq, keys_length):
        mask_shape = keys_length > 0
        keys_length = keys_length[mask_shape]
        _, max_seq_length, embedding_size = states.size()
        states = torch.masked_select(states, mask_shape.view(-1, 1, 1)).view(-1, max_seq_length, embedding_size)
        click_seq = torch.masked_select(click_seq, mask_shape.view(-1, 1, 1)).view(-1, max_seq_length, embedding_size)
        noclick_seq = torch.masked_select(noclick_seq, mask_shape.view(-1, 1, 1)).view(
            -1, max_seq_length, embedding_size
        )
        batch_size = states.size()[0]
        mask = (torch.arange(max_seq_length).repeat(batch_size, 1) < keys_length.view(-1, 1)).float()
        click_input = torch.cat([states, click_seq], dim=-1)
        noclick_input = torch.cat([states, noclick_seq], dim=-1)
        embedding_size = embedding_size * 2
        click_p = self.auxiliary_net(click_input.view(batch_size * max_seq_length, embedding_size)).view(
            batch_size, max_seq_length
        )[mask > 0].view(-1, 1)
        click_target = torch.ones(click_p.size(), dtype=torch.float)
        noclick_p = self.auxiliary_net(noclick_input.view(batch_size * max_seq_length, embedding_size)).view(
            batch_size, max_seq_length
        )[mask > 0].view(-1, 1)
        noclick_target = torch.zeros(noclick_p.size(), dtype=torch.float)
        return F.binary_cross_entropy(torch.cat([click_p, noclick_p], dim=0),
                                      torch.cat([click_target, noclick_target], dim=0))


class InterestEvolving(nn.Module):
    def __init__(self, input_size, gru_type="AUGRU", att_hidden_size=(64, 16), att_activation="sigmoid",
                 att_weight_normalization=False):
        super().__init__()
        self.gru_type = gru_type
        self.attention = AttentionSequencePoolingLayer(embedding_dim=input_size, att_hidden_units=att_hidden_size,
                                                       att_activation=att_activation,
                                                       weight_normalization=att_weight_normalization,
                                                       return_score=True)
        self.interest_evolution = DynamicGRU(input_size=input_size, hidden_size=input_size, gru_type=gru_type)

    @staticmethod
    def _get_last_state(states, keys_length):
        batch_size, max_seq_length, _ = states.size()
        mask = torch.arange(max_seq_length).repeat(batch_size, 1) == (keys_length.view(-1, 1) - 1)
        return states[mask]

    def forward(self, query, keys, keys_length):
        batch_size, dim = query.size()
        max_length = keys.size()[1]
        zero_outputs = torch.zeros(batch_size, dim)
        mask = keys_length > 0
        keys_length = keys_length[mask]
        query = torch.masked_select(query, mask.view(-1, 1)).view(-1, dim).unsqueeze(1)
        att_scores = self.attention(query, keys, keys_length.unsqueeze(1)).squeeze(1)
        packed_keys = pack_padded_sequence(keys, lengths=keys_length.cpu(), batch_first=True, enforce_sorted=False)
        packed_scores = pack_padded_sequence(att_scores, lengths=keys_length.cpu(), batch_first=True,
                                             enforce_sorted=False)
        outputs = self.interest_evolution(packed_keys, packed_scores)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, padding_value=0.0, total_length=max_length)
        outputs = InterestEvolving._get_last_state(outputs, keys_length)
        zero_outputs[mask] = outputs
        return zero_outputs


class DIEN(nn.Module):
    """Inputs: user id, target item and category, history items and categories, negative
    history items and categories, history lengths (DeepCTR packs these into X by
    feature_index; they are separate tensors here)."""

    def __init__(self, n_user=100, n_item=200, n_cate=20, embedding_size=8, alpha=1.0, dnn_hidden_units=(32, 16),
                 att_hidden_units=(16, 8)):
        super().__init__()
        self.alpha = alpha
        self.embedding_dict = nn.ModuleDict({
            "user": nn.Embedding(n_user, embedding_size),
            "item_id": nn.Embedding(n_item, embedding_size, padding_idx=0),
            "cate_id": nn.Embedding(n_cate, embedding_size, padding_idx=0),
        })
        for tensor in self.embedding_dict.values():
            nn.init.normal_(tensor.weight, mean=0, std=0.0001)
        input_size = 2 * embedding_size
        self.interest_extractor = InterestExtractor(input_size=input_size, use_neg=True)
        self.interest_evolution = InterestEvolving(input_size=input_size, gru_type="AUGRU",
                                                   att_hidden_size=att_hidden_units, att_activation="relu",
                                                   att_weight_normalization=True)
        dnn_input_size = embedding_size + input_size + input_size
        self.dnn = DNN(dnn_input_size, dnn_hidden_units, "relu")
        self.linear = nn.Linear(dnn_hidden_units[-1], 1, bias=False)
        self.out = PredictionLayer("binary")

    def _get_emb(self, item, cate, hist_item, hist_cate, neg_item, neg_cate, keys_length):
        query_emb = torch.squeeze(
            torch.cat([self.embedding_dict["item_id"](item), self.embedding_dict["cate_id"](cate)], dim=-1), 1
        )
        keys_emb = torch.cat([self.embedding_dict["item_id"](hist_item), self.embedding_dict["cate_id"](hist_cate)],
                             dim=-1)
        neg_keys_emb = torch.cat([self.embedding_dict["item_id"](neg_item), self.embedding_dict["cate_id"](neg_cate)],
                                 dim=-1)
        return query_emb, keys_emb, neg_keys_emb, keys_length

    def forward(self, user, item, cate, hist_item, hist_cate, neg_item, neg_cate, keys_length):
        query_emb, keys_emb, neg_keys_emb, keys_length = self._get_emb(item, cate, hist_item, hist_cate, neg_item,
                                                                       neg_cate, keys_length)
        masked_interest, aux_loss = self.interest_extractor(keys_emb, keys_length, neg_keys_emb)
        hist = self.interest_evolution(query_emb, masked_interest, keys_length)
        deep_input_emb = torch.cat([torch.squeeze(self.embedding_dict["user"](user), 1), query_emb], dim=-1)
        deep_input_emb = torch.cat([hist, deep_input_emb], dim=-1)
        dnn_input = torch.flatten(deep_input_emb, start_dim=1)
        output = self.linear(self.dnn(dnn_input))
        y_pred = self.out(output)
        return y_pred, aux_loss * self.alpha


def dien_loss(out, target):
    y_pred, aux_loss = out
    return F.binary_cross_entropy(y_pred, target) + aux_loss


# ---------------------------------------------------------------------------------------
# Graphs, as PyTorch Geometric's examples write them (without PyG: its message passing is
# written out with index_select / index_add_ / scatter_reduce, and SparseTensor matmuls with
# torch.sparse.mm).


def gcn_norm_dense_to_sparse(edge_index, num_nodes):
    """D^-1/2 (A + I) D^-1/2 as a torch sparse tensor, made once before training as
    gcn2_cora.py does (data.adj_t = gcn_norm(data.adj_t))."""
    loops = torch.arange(num_nodes)
    row = torch.cat([edge_index[0], loops])
    col = torch.cat([edge_index[1], loops])
    deg = torch.zeros(num_nodes).index_add_(0, col, torch.ones(col.numel()))
    dinv = deg.pow(-0.5)
    val = dinv[row] * dinv[col]
    return torch.sparse_coo_tensor(torch.stack([col, row]), val, (num_nodes, num_nodes)).coalesce()


# GCNII (PyG's examples/gcn2_cora.py): lins[0] and ReLU give x_0, then a loop over GCN2Conv
# layers (functional dropout, adj_t @ x, initial residual alpha * x_0, identity mapping
# addmm(out, out, weight1, beta=1-beta, alpha=beta) with beta = log(theta / layer + 1), ReLU);
# lins[1], log_softmax.


class GCN2Conv(nn.Module):
    def __init__(self, channels, alpha, theta=None, layer=None, shared_weights=True):
        super().__init__()
        self.channels = channels
        self.alpha = alpha
        self.beta = 1.0
        if theta is not None or layer is not None:
            self.beta = math.log(theta / layer + 1)
        self.weight1 = nn.Parameter(torch.empty(channels, channels))
        self.register_parameter("weight2", None)
        nn.init.xavier_uniform_(self.weight1)

    def forward(self, x, x_0, adj_t):
        x = torch.sparse.mm(adj_t, x)
        x.mul_(1 - self.alpha)
        x_0 = self.alpha * x_0[: x.size(0)]
        out = x.add_(x_0)
        return torch.addmm(out, out, self.weight1, beta=1.0 - self.beta, alpha=self.beta)


class GCNIINet(nn.Module):
    def __init__(self, num_features=32, hidden_channels=32, num_classes=7, num_layers=8, alpha=0.1, theta=0.5,
                 dropout=0.6):
        super().__init__()
        self.lins = nn.ModuleList()
        self.lins.append(nn.Linear(num_features, hidden_channels))
        self.lins.append(nn.Linear(hidden_channels, num_classes))
        self.convs = nn.ModuleList()
        for layer in range(num_layers):
            self.convs.append(GCN2Conv(hidden_channels, alpha, theta, layer + 1, shared_weights=True))
        self.dropout = dropout

    def forward(self, x, adj_t):
        x = F.dropout(x, self.dropout, training=self.training)
        x = x_0 = self.lins[0](x).relu()
        for conv in self.convs:
            x = F.dropout(x, self.dropout, training=self.training)
            x = conv(x, x_0, adj_t)
            x = x.relu()
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.lins[1](x)
        return x.log_softmax(dim=-1)


def nll(out, target):
    return F.nll_loss(out, target)


# APPNP (PyG's examples/citation/appnp.py, with APPNP's propagation written into the model's
# forward instead of a `prop1` module): dropout, lin1, ReLU, dropout, lin2, then gcn_norm
# (self-loops, degrees, D^-1/2) and K steps of x = (1 - alpha) * A_hat x + alpha * h, each a
# gather of source rows and an index_add_ onto targets; log_softmax.


class APPNPNet(nn.Module):
    def __init__(self, num_features=32, hidden=32, num_classes=7, K=10, alpha=0.1, dropout=0.5):
        super().__init__()
        self.lin1 = nn.Linear(num_features, hidden)
        self.lin2 = nn.Linear(hidden, num_classes)
        self.K, self.alpha, self.dropout = K, alpha, dropout

    def forward(self, x, edge_index):
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = F.relu(self.lin1(x))
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.lin2(x)
        num_nodes = x.size(0)
        loop_index = torch.arange(0, num_nodes, dtype=torch.long)
        row = torch.cat([edge_index[0], loop_index])
        col = torch.cat([edge_index[1], loop_index])
        edge_weight = torch.ones(row.size(0), dtype=x.dtype)
        deg = torch.zeros(num_nodes, dtype=x.dtype).index_add_(0, col, edge_weight)
        deg_inv_sqrt = deg.pow_(-0.5)
        deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float("inf"), 0)
        edge_weight = deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]
        h = x
        for k in range(self.K):
            x_j = x.index_select(0, row) * edge_weight.view(-1, 1)
            x = torch.zeros_like(x).index_add_(0, col, x_j)
            x = x * (1 - self.alpha)
            x = x + self.alpha * h
        return F.log_softmax(x, dim=1)


# MPNN (PyG's examples/qm9_nn_conv.py): lin0, then three rounds of NNConv (an edge network
# `nn` = Sequential(Linear, ReLU, Linear) making a dim x dim matrix per edge, messages
# x_j @ W_e, mean aggregation, root weight `lin`, bias) and a GRU update; Set2Set readout (an
# LSTM and a per-graph softmax attention, 3 steps); lin1, lin2.


def scatter_sum(src, index, dim_size):
    out = torch.zeros((dim_size,) + src.shape[1:], dtype=src.dtype)
    return out.index_add_(0, index, src)


def scatter_mean(src, index, dim_size):
    out = scatter_sum(src, index, dim_size)
    count = scatter_sum(torch.ones(index.numel(), dtype=src.dtype), index, dim_size)
    count.clamp_(1)
    return out / count.view(-1, *([1] * (src.dim() - 1)))


def pyg_softmax(src, index, num_nodes):
    src_max = torch.zeros((num_nodes,) + src.shape[1:], dtype=src.dtype).scatter_reduce(
        0, index.view(-1, 1).expand_as(src), src.detach(), reduce="amax", include_self=False
    )
    out = src - src_max.index_select(0, index)
    out = out.exp()
    out_sum = scatter_sum(out, index, num_nodes) + 1e-16
    out_sum = out_sum.index_select(0, index)
    return out / out_sum


class NNConv(nn.Module):
    def __init__(self, in_channels, out_channels, nn_, aggr="mean", root_weight=True, bias=True):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.nn = nn_
        self.aggr = aggr
        self.root_weight = root_weight
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def message(self, x_j, edge_attr):
        weight = self.nn(edge_attr)
        weight = weight.view(-1, self.in_channels, self.out_channels)
        return torch.matmul(x_j.unsqueeze(1), weight).squeeze(1)

    def forward(self, x, edge_index, edge_attr):
        x_j = x.index_select(0, edge_index[0])
        msg = self.message(x_j, edge_attr)
        out = scatter_mean(msg, edge_index[1], x.size(0))
        out = out + self.lin(x)
        return out + self.bias


class Set2Set(nn.Module):
    def __init__(self, in_channels, processing_steps):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = 2 * in_channels
        self.processing_steps = processing_steps
        self.lstm = nn.LSTM(self.out_channels, in_channels)

    def forward(self, x, index, dim_size):
        h = (x.new_zeros((self.lstm.num_layers, dim_size, x.size(-1))),
             x.new_zeros((self.lstm.num_layers, dim_size, x.size(-1))))
        q_star = x.new_zeros(dim_size, self.out_channels)
        for _ in range(self.processing_steps):
            q, h = self.lstm(q_star.unsqueeze(0), h)
            q = q.view(dim_size, self.in_channels)
            e = (x * q[index]).sum(dim=-1, keepdim=True)
            a = pyg_softmax(e, index, dim_size)
            r = scatter_sum(a * x, index, dim_size)
            q_star = torch.cat([q, r], dim=-1)
        return q_star


class MPNNNet(nn.Module):
    def __init__(self, num_features=11, edge_features=5, dim=16):
        super().__init__()
        self.lin0 = nn.Linear(num_features, dim)
        nn_ = nn.Sequential(nn.Linear(edge_features, 32), nn.ReLU(), nn.Linear(32, dim * dim))
        self.conv = NNConv(dim, dim, nn_, aggr="mean")
        self.gru = nn.GRU(dim, dim)
        self.set2set = Set2Set(dim, processing_steps=3)
        self.lin1 = nn.Linear(2 * dim, dim)
        self.lin2 = nn.Linear(dim, 1)

    def forward(self, x, edge_index, edge_attr, batch, num_graphs):
        out = F.relu(self.lin0(x))
        h = out.unsqueeze(0)
        for i in range(3):
            m = F.relu(self.conv(out, edge_index, edge_attr))
            out, h = self.gru(m.unsqueeze(0), h)
            out = out.squeeze(0)
        out = self.set2set(out, batch, num_graphs)
        out = F.relu(self.lin1(out))
        out = self.lin2(out)
        return out.view(-1)


# ---------------------------------------------------------------------------------------
# CycleGAN's generator (junyanz/pytorch-CycleGAN-and-pix2pix networks.py ResnetGenerator):
# one `model` Sequential of ReflectionPad2d(3), 7x7 conv, InstanceNorm2d (affine=False, so
# use_bias), ReLU(True); two stride-2 downsampling convs; ResnetBlocks (conv_block Sequential:
# ReflectionPad2d(1), conv, norm, ReLU, ReflectionPad2d(1), conv, norm; x + conv_block(x));
# two ConvTranspose2d upsamplings; ReflectionPad2d(3), 7x7 conv, Tanh. L1 loss to a target.


class ResnetBlock(nn.Module):
    def __init__(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        super().__init__()
        self.conv_block = self.build_conv_block(dim, padding_type, norm_layer, use_dropout, use_bias)

    def build_conv_block(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        conv_block = []
        p = 0
        if padding_type == "reflect":
            conv_block += [nn.ReflectionPad2d(1)]
        conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim), nn.ReLU(True)]
        if use_dropout:
            conv_block += [nn.Dropout(0.5)]
        if padding_type == "reflect":
            conv_block += [nn.ReflectionPad2d(1)]
        conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim)]
        return nn.Sequential(*conv_block)

    def forward(self, x):
        return x + self.conv_block(x)


class ResnetGenerator(nn.Module):
    def __init__(self, input_nc=3, output_nc=3, ngf=16, norm_layer=None, use_dropout=False, n_blocks=3,
                 padding_type="reflect"):
        super().__init__()
        norm_layer = norm_layer or functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
        if type(norm_layer) == functools.partial:
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d
        model = [nn.ReflectionPad2d(3), nn.Conv2d(input_nc, ngf, kernel_size=7, padding=0, bias=use_bias),
                 norm_layer(ngf), nn.ReLU(True)]
        n_downsampling = 2
        for i in range(n_downsampling):
            mult = 2**i
            model += [nn.Conv2d(ngf * mult, ngf * mult * 2, kernel_size=3, stride=2, padding=1, bias=use_bias),
                      norm_layer(ngf * mult * 2), nn.ReLU(True)]
        mult = 2**n_downsampling
        for i in range(n_blocks):
            model += [ResnetBlock(ngf * mult, padding_type=padding_type, norm_layer=norm_layer,
                                  use_dropout=use_dropout, use_bias=use_bias)]
        for i in range(n_downsampling):
            mult = 2 ** (n_downsampling - i)
            model += [nn.ConvTranspose2d(ngf * mult, int(ngf * mult / 2), kernel_size=3, stride=2, padding=1,
                                         output_padding=1, bias=use_bias),
                      norm_layer(int(ngf * mult / 2)), nn.ReLU(True)]
        model += [nn.ReflectionPad2d(3)]
        model += [nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0)]
        model += [nn.Tanh()]
        self.model = nn.Sequential(*model)

    def forward(self, input):
        return self.model(input)


def l1(out, target):
    return F.l1_loss(out, target)


# ---------------------------------------------------------------------------------------
# EDSR (sanghyun-son/EDSR-PyTorch, model/edsr.py and model/common.py): MeanShift (a frozen
# 1x1 Conv2d subclass) before and after, `head` conv, `body` of ResBlocks without BN
# (conv, ReLU, conv; `.mul(res_scale)` and += x) and a conv, long skip, `tail` = Upsampler
# (an nn.Sequential subclass: conv to 4x channels, PixelShuffle(2)) and a conv. As in the
# reference, a single nn.ReLU(True) instance is shared by every ResBlock. L1 loss.


def default_conv(in_channels, out_channels, kernel_size, bias=True):
    return nn.Conv2d(in_channels, out_channels, kernel_size, padding=(kernel_size // 2), bias=bias)


class MeanShift(nn.Conv2d):
    def __init__(self, rgb_range, rgb_mean=(0.4488, 0.4371, 0.4040), rgb_std=(1.0, 1.0, 1.0), sign=-1):
        super().__init__(3, 3, kernel_size=1)
        std = torch.Tensor(rgb_std)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1) / std.view(3, 1, 1, 1)
        self.bias.data = sign * rgb_range * torch.Tensor(rgb_mean) / std
        for p in self.parameters():
            p.requires_grad = False


class EDSRResBlock(nn.Module):
    def __init__(self, conv, n_feats, kernel_size, bias=True, bn=False, act=nn.ReLU(True), res_scale=1):
        super().__init__()
        m = []
        for i in range(2):
            m.append(conv(n_feats, n_feats, kernel_size, bias=bias))
            if bn:
                m.append(nn.BatchNorm2d(n_feats))
            if i == 0:
                m.append(act)
        self.body = nn.Sequential(*m)
        self.res_scale = res_scale

    def forward(self, x):
        res = self.body(x).mul(self.res_scale)
        res += x
        return res


class Upsampler(nn.Sequential):
    def __init__(self, conv, scale, n_feats, bn=False, act=False, bias=True):
        m = []
        if (scale & (scale - 1)) == 0:
            for _ in range(int(math.log(scale, 2))):
                m.append(conv(n_feats, 4 * n_feats, 3, bias))
                m.append(nn.PixelShuffle(2))
                if bn:
                    m.append(nn.BatchNorm2d(n_feats))
                if act == "relu":
                    m.append(nn.ReLU(True))
        else:
            raise NotImplementedError
        super().__init__(*m)


class EDSR(nn.Module):
    def __init__(self, n_resblocks=4, n_feats=32, scale=2, res_scale=0.1, rgb_range=1, n_colors=3,
                 conv=default_conv):
        super().__init__()
        kernel_size = 3
        act = nn.ReLU(True)
        self.sub_mean = MeanShift(rgb_range)
        self.add_mean = MeanShift(rgb_range, sign=1)
        m_head = [conv(n_colors, n_feats, kernel_size)]
        m_body = [EDSRResBlock(conv, n_feats, kernel_size, act=act, res_scale=res_scale) for _ in range(n_resblocks)]
        m_body.append(conv(n_feats, n_feats, kernel_size))
        m_tail = [Upsampler(conv, scale, n_feats, act=False), conv(n_feats, n_colors, kernel_size)]
        self.head = nn.Sequential(*m_head)
        self.body = nn.Sequential(*m_body)
        self.tail = nn.Sequential(*m_tail)

    def forward(self, x):
        x = self.sub_mean(x)
        x = self.head(x)
        res = self.body(x)
        res += x
        x = self.tail(res)
        return self.add_mean(x)


# ---------------------------------------------------------------------------------------
# StyleGAN2's generator (rosinality/stylegan2-pytorch model.py, its CPU code paths), small:
# `style` = PixelNorm + EqualLinear mapping layers (weights scaled at run time, lr_mul 0.01,
# fused_leaky_relu), ConstantInput, StyledConvs (ModulatedConv2d: `modulation` EqualLinear,
# weight demodulation, grouped conv over the batch; the upsampling ones use conv_transpose2d
# and a Blur through upfirdn2d_native; NoiseInjection; FusedLeakyReLU), ToRGB (un-demodulated
# 1x1 ModulatedConv2d, skip upsampled by Upsample). Trained here with MSE to a fixed image.


def make_kernel(k):
    k = torch.tensor(k, dtype=torch.float32)
    if k.ndim == 1:
        k = k[None, :] * k[:, None]
    k /= k.sum()
    return k


def upfirdn2d_native(input, kernel, up_x, up_y, down_x, down_y, pad_x0, pad_x1, pad_y0, pad_y1):
    _, channel, in_h, in_w = input.shape
    input = input.reshape(-1, in_h, in_w, 1)
    _, in_h, in_w, minor = input.shape
    kernel_h, kernel_w = kernel.shape
    out = input.view(-1, in_h, 1, in_w, 1, minor)
    out = F.pad(out, [0, 0, 0, up_x - 1, 0, 0, 0, up_y - 1])
    out = out.view(-1, in_h * up_y, in_w * up_x, minor)
    out = F.pad(out, [0, 0, max(pad_x0, 0), max(pad_x1, 0), max(pad_y0, 0), max(pad_y1, 0)])
    out = out[:, max(-pad_y0, 0) : out.shape[1] - max(-pad_y1, 0), max(-pad_x0, 0) : out.shape[2] - max(-pad_x1, 0), :]
    out = out.permute(0, 3, 1, 2)
    out = out.reshape([-1, 1, in_h * up_y + pad_y0 + pad_y1, in_w * up_x + pad_x0 + pad_x1])
    w = torch.flip(kernel, [0, 1]).view(1, 1, kernel_h, kernel_w)
    out = F.conv2d(out, w)
    out = out.reshape(-1, minor, in_h * up_y + pad_y0 + pad_y1 - kernel_h + 1,
                      in_w * up_x + pad_x0 + pad_x1 - kernel_w + 1)
    out = out.permute(0, 2, 3, 1)
    out = out[:, ::down_y, ::down_x, :]
    out_h = (in_h * up_y + pad_y0 + pad_y1 - kernel_h + down_y) // down_y
    out_w = (in_w * up_x + pad_x0 + pad_x1 - kernel_w + down_x) // down_x
    return out.view(-1, channel, out_h, out_w)


def upfirdn2d(input, kernel, up=1, down=1, pad=(0, 0)):
    return upfirdn2d_native(input, kernel, up, up, down, down, pad[0], pad[1], pad[0], pad[1])


def fused_leaky_relu(input, bias=None, negative_slope=0.2, scale=2**0.5):
    if bias is not None:
        rest_dim = [1] * (input.ndim - bias.ndim - 1)
        return F.leaky_relu(input + bias.view(1, bias.shape[0], *rest_dim), negative_slope=0.2) * scale
    return F.leaky_relu(input, negative_slope=0.2) * scale


class FusedLeakyReLU(nn.Module):
    def __init__(self, channel, bias=True, negative_slope=0.2, scale=2**0.5):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(channel)) if bias else None
        self.negative_slope = negative_slope
        self.scale = scale

    def forward(self, input):
        return fused_leaky_relu(input, self.bias, self.negative_slope, self.scale)


class PixelNorm(nn.Module):
    def forward(self, input):
        return input * torch.rsqrt(torch.mean(input**2, dim=1, keepdim=True) + 1e-8)


class Upsample(nn.Module):
    def __init__(self, kernel, factor=2):
        super().__init__()
        self.factor = factor
        kernel = make_kernel(kernel) * (factor**2)
        self.register_buffer("kernel", kernel)
        p = kernel.shape[0] - factor
        pad0 = (p + 1) // 2 + factor - 1
        pad1 = p // 2
        self.pad = (pad0, pad1)

    def forward(self, input):
        return upfirdn2d(input, self.kernel, up=self.factor, down=1, pad=self.pad)


class Blur(nn.Module):
    def __init__(self, kernel, pad, upsample_factor=1):
        super().__init__()
        kernel = make_kernel(kernel)
        if upsample_factor > 1:
            kernel = kernel * (upsample_factor**2)
        self.register_buffer("kernel", kernel)
        self.pad = pad

    def forward(self, input):
        return upfirdn2d(input, self.kernel, pad=self.pad)


class EqualLinear(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init))
        else:
            self.bias = None
        self.activation = activation
        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, input):
        if self.activation:
            out = F.linear(input, self.weight * self.scale)
            out = fused_leaky_relu(out, self.bias * self.lr_mul)
        else:
            out = F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)
        return out


class ModulatedConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True, upsample=False,
                 blur_kernel=(1, 3, 3, 1)):
        super().__init__()
        self.eps = 1e-8
        self.kernel_size = kernel_size
        self.in_channel = in_channel
        self.out_channel = out_channel
        self.upsample = upsample
        if upsample:
            factor = 2
            p = (len(blur_kernel) - factor) - (kernel_size - 1)
            pad0 = (p + 1) // 2 + factor - 1
            pad1 = p // 2 + 1
            self.blur = Blur(blur_kernel, pad=(pad0, pad1), upsample_factor=factor)
        fan_in = in_channel * kernel_size**2
        self.scale = 1 / math.sqrt(fan_in)
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(torch.randn(1, out_channel, in_channel, kernel_size, kernel_size))
        self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)
        self.demodulate = demodulate

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape
        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = self.scale * self.weight * style
        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
        weight = weight.view(batch * self.out_channel, in_channel, self.kernel_size, self.kernel_size)
        if self.upsample:
            input = input.view(1, batch * in_channel, height, width)
            weight = weight.view(batch, self.out_channel, in_channel, self.kernel_size, self.kernel_size)
            weight = weight.transpose(1, 2).reshape(batch * in_channel, self.out_channel, self.kernel_size,
                                                    self.kernel_size)
            out = F.conv_transpose2d(input, weight, padding=0, stride=2, groups=batch)
            _, _, height, width = out.shape
            out = out.view(batch, self.out_channel, height, width)
            out = self.blur(out)
        else:
            input = input.view(1, batch * in_channel, height, width)
            out = F.conv2d(input, weight, padding=self.padding, groups=batch)
            _, _, height, width = out.shape
            out = out.view(batch, self.out_channel, height, width)
        return out


class NoiseInjection(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = image.new_empty(batch, 1, height, width).normal_()
        return image + self.weight * noise


class ConstantInput(nn.Module):
    def __init__(self, channel, size=4):
        super().__init__()
        self.input = nn.Parameter(torch.randn(1, channel, size, size))

    def forward(self, input):
        batch = input.shape[0]
        return self.input.repeat(batch, 1, 1, 1)


class StyledConv(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, upsample=False, blur_kernel=(1, 3, 3, 1),
                 demodulate=True):
        super().__init__()
        self.conv = ModulatedConv2d(in_channel, out_channel, kernel_size, style_dim, upsample=upsample,
                                    blur_kernel=blur_kernel, demodulate=demodulate)
        self.noise = NoiseInjection()
        self.activate = FusedLeakyReLU(out_channel)

    def forward(self, input, style, noise=None):
        out = self.conv(input, style)
        out = self.noise(out, noise=noise)
        return self.activate(out)


class ToRGB(nn.Module):
    def __init__(self, in_channel, style_dim, upsample=True, blur_kernel=(1, 3, 3, 1)):
        super().__init__()
        if upsample:
            self.upsample = Upsample(blur_kernel)
        self.conv = ModulatedConv2d(in_channel, 3, 1, style_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

    def forward(self, input, style, skip=None):
        out = self.conv(input, style)
        out = out + self.bias
        if skip is not None:
            skip = self.upsample(skip)
            out = out + skip
        return out


class Generator(nn.Module):
    def __init__(self, size=16, style_dim=32, n_mlp=4, channel=32, blur_kernel=(1, 3, 3, 1), lr_mlp=0.01):
        super().__init__()
        self.size = size
        self.style_dim = style_dim
        layers = [PixelNorm()]
        for i in range(n_mlp):
            layers.append(EqualLinear(style_dim, style_dim, lr_mul=lr_mlp, activation="fused_lrelu"))
        self.style = nn.Sequential(*layers)
        self.channels = {2**i: channel for i in range(2, 11)}
        self.input = ConstantInput(self.channels[4])
        self.conv1 = StyledConv(self.channels[4], self.channels[4], 3, style_dim, blur_kernel=blur_kernel)
        self.to_rgb1 = ToRGB(self.channels[4], style_dim, upsample=False)
        self.log_size = int(math.log(size, 2))
        self.num_layers = (self.log_size - 2) * 2 + 1
        self.convs = nn.ModuleList()
        self.upsamples = nn.ModuleList()
        self.to_rgbs = nn.ModuleList()
        self.noises = nn.Module()
        in_channel = self.channels[4]
        for layer_idx in range(self.num_layers):
            res = (layer_idx + 5) // 2
            shape = [1, 1, 2**res, 2**res]
            self.noises.register_buffer(f"noise_{layer_idx}", torch.randn(*shape))
        for i in range(3, self.log_size + 1):
            out_channel = self.channels[2**i]
            self.convs.append(StyledConv(in_channel, out_channel, 3, style_dim, upsample=True,
                                         blur_kernel=blur_kernel))
            self.convs.append(StyledConv(out_channel, out_channel, 3, style_dim, blur_kernel=blur_kernel))
            self.to_rgbs.append(ToRGB(out_channel, style_dim))
            in_channel = out_channel
        self.n_latent = self.log_size * 2 - 2

    def forward(self, z):
        styles = [z]
        styles = [self.style(s) for s in styles]
        noise = [None] * self.num_layers
        inject_index = self.n_latent
        latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
        out = self.input(latent)
        out = self.conv1(out, latent[:, 0], noise=noise[0])
        skip = self.to_rgb1(out, latent[:, 1])
        i = 1
        for conv1, conv2, noise1, noise2, to_rgb in zip(self.convs[::2], self.convs[1::2], noise[1::2], noise[2::2],
                                                        self.to_rgbs):
            out = conv1(out, latent[:, i], noise=noise1)
            out = conv2(out, latent[:, i + 1], noise=noise2)
            skip = to_rgb(out, latent[:, i + 2], skip)
            i += 2
        return skip


# ---------------------------------------------------------------------------------------
# pix2pix's generator (junyanz networks.py UnetGenerator): UnetSkipConnectionBlocks nested
# through `submodule`, each one `model` Sequential: down = LeakyReLU(0.2, True), 4x4 stride-2
# conv, BatchNorm (bias-free convs); up = ReLU(True), ConvTranspose2d, BatchNorm; the
# ngf*8 blocks between innermost and the rest add Dropout(0.5); every block but the
# outermost returns cat([x, model(x)]) (its in-place LeakyReLU has already rewritten x, as in
# the reference); the outermost ends in Tanh. L1 loss.


class UnetSkipConnectionBlock(nn.Module):
    def __init__(self, outer_nc, inner_nc, input_nc=None, submodule=None, outermost=False, innermost=False,
                 norm_layer=nn.BatchNorm2d, use_dropout=False):
        super().__init__()
        self.outermost = outermost
        if type(norm_layer) == functools.partial:
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d
        if input_nc is None:
            input_nc = outer_nc
        downconv = nn.Conv2d(input_nc, inner_nc, kernel_size=4, stride=2, padding=1, bias=use_bias)
        downrelu = nn.LeakyReLU(0.2, True)
        downnorm = norm_layer(inner_nc)
        uprelu = nn.ReLU(True)
        upnorm = norm_layer(outer_nc)
        if outermost:
            upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc, kernel_size=4, stride=2, padding=1)
            down = [downconv]
            up = [uprelu, upconv, nn.Tanh()]
            model = down + [submodule] + up
        elif innermost:
            upconv = nn.ConvTranspose2d(inner_nc, outer_nc, kernel_size=4, stride=2, padding=1, bias=use_bias)
            down = [downrelu, downconv]
            up = [uprelu, upconv, upnorm]
            model = down + up
        else:
            upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc, kernel_size=4, stride=2, padding=1, bias=use_bias)
            down = [downrelu, downconv, downnorm]
            up = [uprelu, upconv, upnorm]
            if use_dropout:
                model = down + [submodule] + up + [nn.Dropout(0.5)]
            else:
                model = down + [submodule] + up
        self.model = nn.Sequential(*model)

    def forward(self, x):
        if self.outermost:
            return self.model(x)
        return torch.cat([x, self.model(x)], 1)


class UnetGenerator(nn.Module):
    def __init__(self, input_nc=3, output_nc=3, num_downs=6, ngf=8, norm_layer=nn.BatchNorm2d, use_dropout=True):
        super().__init__()
        unet_block = UnetSkipConnectionBlock(ngf * 8, ngf * 8, input_nc=None, submodule=None, norm_layer=norm_layer,
                                             innermost=True)
        for i in range(num_downs - 5):
            unet_block = UnetSkipConnectionBlock(ngf * 8, ngf * 8, input_nc=None, submodule=unet_block,
                                                 norm_layer=norm_layer, use_dropout=use_dropout)
        unet_block = UnetSkipConnectionBlock(ngf * 4, ngf * 8, input_nc=None, submodule=unet_block,
                                             norm_layer=norm_layer)
        unet_block = UnetSkipConnectionBlock(ngf * 2, ngf * 4, input_nc=None, submodule=unet_block,
                                             norm_layer=norm_layer)
        unet_block = UnetSkipConnectionBlock(ngf, ngf * 2, input_nc=None, submodule=unet_block, norm_layer=norm_layer)
        self.model = UnetSkipConnectionBlock(output_nc, ngf, input_nc=input_nc, submodule=unet_block, outermost=True,
                                             norm_layer=norm_layer)

    def forward(self, input):
        return self.model(input)


# ---------------------------------------------------------------------------------------
# builders


def b_mistral():
    ids = randint(512, 4, 24)
    mask = torch.ones(4, 24, dtype=torch.long)
    mask[3, 20:] = 0
    return dict(model=MistralForCausalLM(), inputs=(ids, mask), target=randint(512, 4, 24, seed=3), loss=ce_tokens)


def b_gptj():
    ids = randint(512, 4, 24)
    mask = torch.ones(4, 24, dtype=torch.long)
    mask[1, 18:] = 0
    return dict(model=GPTJForCausalLM(), inputs=(ids, mask), target=randint(512, 4, 24, seed=3), loss=ce_tokens)


def b_roberta():
    ids = randint(597, 8, 24) + 3  # 0 <s>, 1 <pad>, 2 </s>
    ids[:, 0] = 0
    mask = torch.ones(8, 24, dtype=torch.long)
    mask[1::2, 18:] = 0
    ids[mask == 0] = 1
    return dict(model=RobertaForSequenceClassification(), inputs=(ids, mask), target=randint(3, 8, seed=3), loss=ce)


def b_electra():
    ids = randint(599, 4, 24) + 1
    mask = torch.ones(4, 24, dtype=torch.long)
    mask[2:, 20:] = 0
    ids[mask == 0] = 0
    labels = randint(2, 4, 24, seed=3)
    return dict(model=ElectraForPreTraining(), inputs=(ids, mask), target=(labels, mask), loss=electra_loss)


def b_image(make, batch=4, hw=32, classes=10):
    return lambda: dict(model=make(), inputs=(randn(batch, 3, hw, hw),), target=randint(classes, batch, seed=3),
                        loss=ce)


def b_retinanet():
    anchors = (8 * 8 + 4 * 4 + 2 * 2 + 1 + 1) * 3
    labels = randint(5, 2, anchors, seed=3) - 1  # -1: background
    fg = labels >= 0
    cls_t = torch.zeros(2, anchors, 4)
    cls_t[fg] = F.one_hot(labels[fg], 4).float()
    return dict(model=RetinaNetLite(), inputs=(randn(2, 3, 64, 64),), target=(cls_t, randn(2, anchors, 4, seed=4), fg),
                loss=retinanet_loss)


def b_whisper():
    ids = randint(512, 2, 16)
    return dict(model=WhisperForCausalLM(), inputs=(ids, randn(2, 30, 64)), target=randint(512, 2, 16, seed=3),
                loss=ce_tokens)


def ctr_input(batch, vocab, n_dense, seed=1):
    g = torch.Generator().manual_seed(seed)
    sparse = torch.stack([torch.randint(0, v, (batch,), generator=g) for v in vocab], 1).float()
    return torch.cat([sparse, torch.rand(batch, n_dense, generator=g)], 1)


def b_fibinet():
    x = ctr_input(64, (50, 40, 30, 60, 20, 10), 2)
    return dict(model=FiBiNET(), inputs=(x,), target=randint(2, 64, 1, seed=3).float(), loss=bce_prob)


def b_afm():
    x = ctr_input(64, (50, 40, 30, 60, 20, 10, 25, 35), 0)
    return dict(model=AFM(), inputs=(x,), target=randint(2, 64, 1, seed=3).float(), loss=bce_prob)


def b_dien():
    b, t = 32, 10
    lengths = randint(t - 1, b, seed=9) + 2  # 2..10
    pad = torch.arange(t)[None, :] >= lengths[:, None]
    hist_item, hist_cate = randint(199, b, t, seed=3) + 1, randint(19, b, t, seed=4) + 1
    neg_item, neg_cate = randint(199, b, t, seed=5) + 1, randint(19, b, t, seed=6) + 1
    for h in (hist_item, hist_cate, neg_item, neg_cate):
        h[pad] = 0
    inputs = (randint(100, b, 1), randint(199, b, 1, seed=7) + 1, randint(19, b, 1, seed=8) + 1, hist_item, hist_cate,
              neg_item, neg_cate, lengths)
    return dict(model=DIEN(), inputs=inputs, target=randint(2, b, 1, seed=10).float(), loss=dien_loss)


def random_edges(nodes, edges, seed=4):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, nodes, (edges,), generator=g)
    dst = torch.randint(0, nodes, (edges,), generator=g)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    return torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])  # undirected


def b_gcnii():
    n = 512
    adj_t = gcn_norm_dense_to_sparse(random_edges(n, 1024), n)
    return dict(model=GCNIINet(), inputs=(randn(n, 32), adj_t), target=randint(7, n, seed=3), loss=nll)


def b_appnp():
    n = 512
    return dict(model=APPNPNet(), inputs=(randn(n, 32), random_edges(n, 1024)), target=randint(7, n, seed=3),
                loss=nll)


def b_mpnn():
    graphs, atoms = 4, 12
    ids = torch.arange(atoms)
    pairs = torch.stack(torch.meshgrid(ids, ids, indexing="ij")).reshape(2, -1)
    pairs = pairs[:, pairs[0] != pairs[1]]  # T.Complete()
    edge_index = torch.cat([pairs + g * atoms for g in range(graphs)], 1)
    batch = torch.arange(graphs).repeat_interleave(atoms)
    return dict(model=MPNNNet(), inputs=(randn(graphs * atoms, 11), edge_index, randn(edge_index.shape[1], 5, seed=3),
                                         batch, graphs),
                target=randn(graphs, seed=4), loss=mse)


def b_image_to_image(make, batch, hw, out_hw=None):
    out_hw = out_hw or hw

    def build():
        target = torch.rand(batch, 3, out_hw, out_hw, generator=torch.Generator().manual_seed(3)) * 2 - 1
        return dict(model=make(), inputs=(randn(batch, 3, hw, hw),), target=target, loss=l1)

    return build


def b_stylegan():
    target = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(3)) * 2 - 1
    return dict(model=Generator(), inputs=(randn(2, 32),), target=target, loss=mse)


REGISTRY = [
    ("mistral_like", "llm", "adamw", b_mistral),
    (
        "phi_like",
        "llm",
        "adamw",
        lambda: dict(
            model=PhiForCausalLM(), inputs=(randint(512, 4, 24),), target=randint(512, 4, 24, seed=3), loss=ce_tokens
        ),
    ),
    ("gptj_like", "gpt", "adamw", b_gptj),
    ("roberta_hf", "bert", "adamw", b_roberta),
    ("electra_hf", "bert", "adamw", b_electra),
    ("vit_hf", "vit", "adamw", b_image(ViTForImageClassification)),
    ("swin_hf", "swin", "adamw", b_image(SwinForImageClassification)),
    ("levit_like", "hybrid", "adamw", b_image(LevitDistilled, hw=64)),
    ("twins_like", "vit", "adamw", b_image(Twins, batch=2, hw=64)),
    ("coatnet_like", "hybrid", "adamw", b_image(CoAtNet, batch=2, hw=64)),
    (
        "efficientformer_like",
        "hybrid",
        "adamw",
        lambda: dict(model=EfficientFormer(), inputs=(randn(2, 3, 96, 96),), target=randint(10, 2, seed=3),
                     loss=ce_two_heads),
    ),
    ("retinanet_fpn_lite", "detection", "sgd", b_retinanet),
    ("whisper_decoder", "speech", "adamw", b_whisper),
    ("hubert_like", "speech", "adamw",
     lambda: dict(model=HubertForSequenceClassification(), inputs=(randn(2, 1600),), target=randint(4, 2, seed=3),
                  loss=ce)),
    ("fibinet", "recsys", "adam", b_fibinet),
    ("dien_like", "recsys", "adam", b_dien),
    ("afm", "recsys", "adam", b_afm),
    ("gcnii", "gnn", "adam", b_gcnii),
    ("appnp", "gnn", "adam", b_appnp),
    ("mpnn_like", "gnn", "adam", b_mpnn),
    ("cyclegan_generator", "gan", "adam", b_image_to_image(ResnetGenerator, 2, 32)),
    ("edsr_lite", "superres", "adam", b_image_to_image(EDSR, 2, 24, 48)),
    ("stylegan_mapping", "gan", "adam", b_stylegan),
    ("pix2pix_unet", "unet", "adam", b_image_to_image(UnetGenerator, 2, 64)),
]

SPLIT_RULE = (
    "every model is heldout: this corpus checks the layer inference on models it has never seen, "
    "recorded after its rules were written; it is never used for tuning and shares no model name "
    "with tests/data/corpus-cpu, corpus-cpu-modern, corpus-cpu-families, corpus-cpu-heldout or "
    "corpus-cpu-variants"
)

FRESH = rh.Corpus(
    REGISTRY,
    "heldout",
    SPLIT_RULE,
    "tools/record_cpu_fresh.py",
    os.path.join(DATA, "corpus-cpu-fresh"),
    [
        os.path.join(DATA, "corpus-cpu"),
        os.path.join(DATA, "corpus-cpu-modern"),
        os.path.join(DATA, "corpus-cpu-families"),
        os.path.join(DATA, "corpus-cpu-heldout"),
        os.path.join(DATA, "corpus-cpu-variants"),
    ],
    __doc__,
)

if __name__ == "__main__":
    rh.main(FRESH)
