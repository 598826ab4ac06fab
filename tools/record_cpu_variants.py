#!/usr/bin/env python3
"""Record Strata's variants CPU corpus: variants of common families, first a check, now tuned on.

The layer inference is tuned on tests/data/corpus-cpu, corpus-cpu-modern and
corpus-cpu-families, and checked on corpus-cpu-heldout. This script records
tests/data/corpus-cpu-variants, made after the inference's rules were written: variants of
families those corpora already hold, each written the way its reference implementation
(Hugging Face transformers, timm, torchvision, the paper's code) writes it, with the same
module structure and attribute names where practical and the same functional-vs-module
choices. Decoders (OPT, Falcon, BLOOM), encoders (DistilBERT, DeBERTa), vision transformers
(DeiT, CaiT, BEiT), MLP models (gMLP, ResMLP), a hybrid (MobileViT), speech (FastSpeech,
Tacotron), recommendation (xDeepFM, BST), graphs (GatedGCN, SchNet), an RNN-like LM (RWKV),
segmentation (torchvision's FCN and DeepLabV3 on ResNet-50, UNet++), a NeRF MLP, a ConvLSTM
and ResNeSt. It was measured once as a check before any rule looked at it (its README keeps
those figures); since then it is tuned on, every model's split "tune", and
tests/data/corpus-cpu-fresh (tools/record_cpu_fresh.py) is the check. No model name is
shared with any other corpus.

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, ce_seg, ce_tokens, mse, randint, randn  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torchvision.models import segmentation as tvseg  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


def causal_mask(n):
    """Additive causal mask (0 on and below the diagonal, the dtype's minimum above), the
    way Hugging Face's _make_causal_mask builds it."""
    m = torch.full((n, n), torch.finfo(torch.float32).min)
    return torch.triu(m, 1)


# ---------------------------------------------------------------------------------------
# OPT (transformers' OPTForCausalLM): learned positions offset by 2, pre-norm decoder layers,
# q scaled right after q_proj, fc1 / ReLU / fc2, functional dropout.


class OPTLearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, attention_mask):
        attention_mask = attention_mask.long()
        positions = (torch.cumsum(attention_mask, dim=1).type_as(attention_mask) * attention_mask).long() - 1
        return super().forward(positions + self.offset)


class OPTAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = dropout
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _shape(self, t, seq_len, bsz):
        return t.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, attention_mask):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.view(*proj_shape)
        value_states = value_states.view(*proj_shape)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, -1) + attention_mask
        attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, -1)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_probs = F.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim).transpose(1, 2)
        attn_output = attn_output.reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output)


class OPTDecoderLayer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.self_attn = OPTAttention(d, heads)
        self.do_layer_norm_before = True
        self.dropout = 0.1
        self.activation_fn = nn.ReLU()
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ffn)
        self.fc2 = nn.Linear(ffn, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states = self.self_attn(hidden_states, attention_mask)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        shape = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden_states.size(-1))
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        hidden_states = self.fc2(hidden_states)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        return (residual + hidden_states).view(shape)


class OPTDecoder(nn.Module):
    def __init__(self, vocab, d, heads, ffn, layers, max_pos=64):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d, padding_idx=1)
        self.embed_positions = OPTLearnedPositionalEmbedding(max_pos, d)
        self.layers = nn.ModuleList([OPTDecoderLayer(d, heads, ffn) for _ in range(layers)])
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, input_ids, attention_mask):
        inputs_embeds = self.embed_tokens(input_ids)
        pos_embeds = self.embed_positions(attention_mask)
        n = input_ids.shape[1]
        mask = causal_mask(n)[None, None] + (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(
            torch.float32
        ).min
        hidden_states = inputs_embeds + pos_embeds
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask)
        return self.final_layer_norm(hidden_states)


class OPTModel(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.decoder = OPTDecoder(**kw)

    def forward(self, input_ids, attention_mask):
        return self.decoder(input_ids, attention_mask)


class OPTForCausalLM(nn.Module):
    def __init__(self, vocab=512, d=64, heads=4, ffn=256, layers=3):
        super().__init__()
        self.model = OPTModel(vocab=vocab, d=d, heads=heads, ffn=ffn, layers=layers)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.model.decoder.embed_tokens.weight  # tied, as in OPT
        nn.init.normal_(self.lm_head.weight, std=0.02)  # _init_weights' init_std

    def forward(self, input_ids, attention_mask):
        return self.lm_head(self.model(input_ids, attention_mask)).contiguous()


# ---------------------------------------------------------------------------------------
# Falcon (transformers' FalconForCausalLM, falcon-7b layout): one input_layernorm feeds both
# the attention and the MLP, which run in parallel; a fused multi-query query_key_value; rotary
# positions from a FalconRotaryEmbedding module.


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class FalconRotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, query, key, seq_len):
        t = torch.arange(seq_len, dtype=self.inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, :, :], emb.sin()[None, :, :]
        return (query * cos) + (rotate_half(query) * sin), (key * cos) + (rotate_half(key) * sin)


class FalconAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.hidden_size, self.num_heads = hidden_size, num_heads
        self.head_dim = hidden_size // num_heads
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.rotary_emb = FalconRotaryEmbedding(self.head_dim)
        # multi-query: num_heads query heads, one key head and one value head
        self.query_key_value = nn.Linear(hidden_size, hidden_size + 2 * self.head_dim, bias=False)
        self.dense = nn.Linear(hidden_size, hidden_size, bias=False)
        self.attention_dropout = nn.Dropout(0.0)

    def _split_heads(self, fused_qkv):
        b, s, _ = fused_qkv.shape
        fused_qkv = fused_qkv.view(b, s, self.num_heads + 2, self.head_dim)
        return fused_qkv[..., :-2, :], fused_qkv[..., [-2], :], fused_qkv[..., [-1], :]

    def forward(self, hidden_states, alibi_mask):
        fused_qkv = self.query_key_value(hidden_states)
        b, q_len, _ = hidden_states.shape
        query_layer, key_layer, value_layer = self._split_heads(fused_qkv)
        query_layer = query_layer.transpose(1, 2).reshape(b * self.num_heads, q_len, self.head_dim)
        key_layer = key_layer.transpose(1, 2).reshape(b, q_len, self.head_dim)
        value_layer = value_layer.transpose(1, 2).reshape(b, q_len, self.head_dim)
        query_layer, key_layer = self.rotary_emb(query_layer, key_layer, q_len)
        query_layer_ = query_layer.reshape(b, self.num_heads, q_len, self.head_dim)
        key_layer_ = key_layer.reshape(b, 1, q_len, self.head_dim)
        value_layer_ = value_layer.reshape(b, 1, q_len, self.head_dim)
        attention_scores = query_layer_ @ key_layer_.transpose(-1, -2)
        attention_scores = attention_scores * self.inv_norm_factor + alibi_mask
        attention_scores = F.softmax(attention_scores, dim=-1)
        attention_scores = self.attention_dropout(attention_scores)
        attn_output = attention_scores @ value_layer_
        attn_output = attn_output.permute(0, 2, 1, 3).reshape(b, q_len, self.hidden_size)
        return self.dense(attn_output)


class FalconMLP(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(hidden_size, 4 * hidden_size, bias=False)
        self.act = nn.GELU()
        self.dense_4h_to_h = nn.Linear(4 * hidden_size, hidden_size, bias=False)

    def forward(self, x):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(x)))


class FalconDecoderLayer(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(hidden_size)
        self.self_attention = FalconAttention(hidden_size, num_heads)
        self.mlp = FalconMLP(hidden_size)
        self.hidden_dropout = 0.0

    def forward(self, hidden_states, mask):
        residual = hidden_states
        attention_layernorm_out = self.input_layernorm(hidden_states)
        attention_output = self.self_attention(attention_layernorm_out, mask)
        mlp_output = self.mlp(attention_layernorm_out)
        mlp_output = mlp_output + attention_output
        return F.dropout(mlp_output, p=self.hidden_dropout, training=self.training) + residual


class FalconModel(nn.Module):
    def __init__(self, vocab, hidden_size, num_heads, layers):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden_size)
        self.h = nn.ModuleList([FalconDecoderLayer(hidden_size, num_heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden_size)

    def forward(self, input_ids):
        hidden_states = self.word_embeddings(input_ids)
        mask = causal_mask(input_ids.shape[1])[None, None]
        for block in self.h:
            hidden_states = block(hidden_states, mask)
        return self.ln_f(hidden_states)


class FalconForCausalLM(nn.Module):
    def __init__(self, vocab=512, hidden_size=64, num_heads=4, layers=3):
        super().__init__()
        self.transformer = FalconModel(vocab, hidden_size, num_heads, layers)
        self.lm_head = nn.Linear(hidden_size, vocab, bias=False)

    def forward(self, input_ids):
        return self.lm_head(self.transformer(input_ids))


# ---------------------------------------------------------------------------------------
# BLOOM (transformers' BloomForCausalLM): ALiBi bias built once per forward and added to the
# scores with baddbmm, a fused query_key_value laid out (heads, 3, head_dim),
# word_embeddings_layernorm after the embedding, BLOOM's tanh GELU written out (BloomGelu).


def build_alibi_tensor(attention_mask, num_heads):
    batch_size, seq_length = attention_mask.shape
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[..., None] * arange_tensor
    return alibi.reshape(batch_size * num_heads, 1, seq_length)


def bloom_gelu_forward(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class BloomGelu(nn.Module):
    def forward(self, x):
        return bloom_gelu_forward(x)


def dropout_add(x, residual, prob, training):
    return residual + F.dropout(x, p=prob, training=training)


class BloomAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.hidden_size, self.num_heads = hidden_size, num_heads
        self.head_dim = hidden_size // num_heads
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.beta = 1.0
        self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size, bias=True)
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.attention_dropout = nn.Dropout(0.0)
        self.hidden_dropout = 0.0

    def _split_heads(self, fused_qkv):
        b, s, _ = fused_qkv.shape
        fused_qkv = fused_qkv.view(b, s, self.num_heads, 3, self.head_dim)
        return fused_qkv[..., 0, :], fused_qkv[..., 1, :], fused_qkv[..., 2, :]

    def _merge_heads(self, x):
        bh, s, _ = x.shape
        b = bh // self.num_heads
        x = x.view(b, self.num_heads, s, self.head_dim).permute(0, 2, 1, 3)
        return x.reshape(b, s, self.num_heads * self.head_dim)

    def forward(self, hidden_states, residual, alibi, attention_mask):
        fused_qkv = self.query_key_value(hidden_states)
        query_layer, key_layer, value_layer = self._split_heads(fused_qkv)
        b, q_length, _, _ = query_layer.shape
        query_layer = query_layer.transpose(1, 2).reshape(b * self.num_heads, q_length, self.head_dim)
        key_layer = key_layer.permute(0, 2, 3, 1).reshape(b * self.num_heads, self.head_dim, q_length)
        value_layer = value_layer.transpose(1, 2).reshape(b * self.num_heads, q_length, self.head_dim)
        matmul_result = alibi.baddbmm(batch1=query_layer, batch2=key_layer, beta=self.beta, alpha=self.inv_norm_factor)
        attention_scores = matmul_result.view(b, self.num_heads, q_length, q_length)
        attn_weights = torch.masked_fill(attention_scores, attention_mask, torch.finfo(attention_scores.dtype).min)
        attention_probs = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
        attention_probs = self.attention_dropout(attention_probs)
        attention_probs_reshaped = attention_probs.view(b * self.num_heads, q_length, q_length)
        context_layer = torch.bmm(attention_probs_reshaped, value_layer)
        context_layer = self._merge_heads(context_layer)
        output_tensor = self.dense(context_layer)
        return dropout_add(output_tensor, residual, self.hidden_dropout, self.training)


class BloomMLP(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(hidden_size, 4 * hidden_size)
        self.gelu_impl = BloomGelu()
        self.dense_4h_to_h = nn.Linear(4 * hidden_size, hidden_size)
        self.hidden_dropout = 0.0

    def forward(self, hidden_states, residual):
        hidden_states = self.gelu_impl(self.dense_h_to_4h(hidden_states))
        return dropout_add(self.dense_4h_to_h(hidden_states), residual, self.hidden_dropout, self.training)


class BloomBlock(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(hidden_size)
        self.self_attention = BloomAttention(hidden_size, num_heads)
        self.post_attention_layernorm = nn.LayerNorm(hidden_size)
        self.mlp = BloomMLP(hidden_size)

    def forward(self, hidden_states, alibi, attention_mask):
        layernorm_output = self.input_layernorm(hidden_states)
        attention_output = self.self_attention(layernorm_output, hidden_states, alibi, attention_mask)
        layernorm_output = self.post_attention_layernorm(attention_output)
        return self.mlp(layernorm_output, attention_output)


class BloomModel(nn.Module):
    def __init__(self, vocab, hidden_size, num_heads, layers):
        super().__init__()
        self.num_heads = num_heads
        self.word_embeddings = nn.Embedding(vocab, hidden_size)
        self.word_embeddings_layernorm = nn.LayerNorm(hidden_size)
        self.h = nn.ModuleList([BloomBlock(hidden_size, num_heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden_size)

    def forward(self, input_ids, attention_mask):
        inputs_embeds = self.word_embeddings(input_ids)
        hidden_states = self.word_embeddings_layernorm(inputs_embeds)
        alibi = build_alibi_tensor(attention_mask, self.num_heads)
        n = input_ids.shape[1]
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)[None, None]
        causal_mask_ = causal | ~attention_mask.bool()[:, None, None, :]
        for block in self.h:
            hidden_states = block(hidden_states, alibi, causal_mask_)
        return self.ln_f(hidden_states)


class BloomForCausalLM(nn.Module):
    def __init__(self, vocab=512, hidden_size=64, num_heads=4, layers=3):
        super().__init__()
        self.transformer = BloomModel(vocab, hidden_size, num_heads, layers)
        self.lm_head = nn.Linear(hidden_size, vocab, bias=False)
        self.lm_head.weight = self.transformer.word_embeddings.weight  # tied, as in BLOOM
        nn.init.normal_(self.lm_head.weight, std=0.02)  # _init_weights' initializer_range

    def forward(self, input_ids, attention_mask):
        return self.lm_head(self.transformer(input_ids, attention_mask))


# ---------------------------------------------------------------------------------------
# DistilBERT (transformers' DistilBertForSequenceClassification): q_lin/k_lin/v_lin/out_lin,
# post-norm sa_layer_norm and output_layer_norm, FFN lin1 / GELU module / lin2.


class Embeddings(nn.Module):
    def __init__(self, vocab, dim, max_pos):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, dim, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, dim)
        self.LayerNorm = nn.LayerNorm(dim, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)), persistent=False)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.dim = n_heads, dim
        self.dropout = nn.Dropout(p=0.1)
        self.q_lin = nn.Linear(dim, dim)
        self.k_lin = nn.Linear(dim, dim)
        self.v_lin = nn.Linear(dim, dim)
        self.out_lin = nn.Linear(dim, dim)

    def forward(self, query, key, value, mask):
        bs, q_length, dim = query.size()
        k_length = key.size(1)
        dim_per_head = self.dim // self.n_heads
        mask_reshp = (bs, 1, 1, k_length)

        def shape(x):
            return x.view(bs, -1, self.n_heads, dim_per_head).transpose(1, 2)

        def unshape(x):
            return x.transpose(1, 2).contiguous().view(bs, -1, self.n_heads * dim_per_head)

        q = shape(self.q_lin(query))
        k = shape(self.k_lin(key))
        v = shape(self.v_lin(value))
        q = q / math.sqrt(dim_per_head)
        scores = torch.matmul(q, k.transpose(2, 3))
        mask = (mask == 0).view(mask_reshp).expand_as(scores)
        scores = scores.masked_fill(mask, torch.tensor(torch.finfo(scores.dtype).min))
        weights = F.softmax(scores, dim=-1)
        weights = self.dropout(weights)
        context = unshape(torch.matmul(weights, v))
        return self.out_lin(context)


class FFN(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.dropout = nn.Dropout(p=0.1)
        self.lin1 = nn.Linear(dim, hidden_dim)
        self.lin2 = nn.Linear(hidden_dim, dim)
        self.activation = nn.GELU()

    def forward(self, x):
        return self.dropout(self.lin2(self.activation(self.lin1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, dim, n_heads, hidden_dim):
        super().__init__()
        self.attention = MultiHeadSelfAttention(dim, n_heads)
        self.sa_layer_norm = nn.LayerNorm(dim, eps=1e-12)
        self.ffn = FFN(dim, hidden_dim)
        self.output_layer_norm = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x, attn_mask):
        sa_output = self.attention(x, x, x, attn_mask)
        sa_output = self.sa_layer_norm(sa_output + x)
        ffn_output = self.ffn(sa_output)
        return self.output_layer_norm(ffn_output + sa_output)


class Transformer(nn.Module):
    def __init__(self, n_layers, dim, n_heads, hidden_dim):
        super().__init__()
        self.layer = nn.ModuleList([TransformerBlock(dim, n_heads, hidden_dim) for _ in range(n_layers)])

    def forward(self, x, attn_mask):
        hidden_state = x
        for layer_module in self.layer:
            hidden_state = layer_module(hidden_state, attn_mask)
        return hidden_state


class DistilBertModel(nn.Module):
    def __init__(self, vocab, dim, n_heads, hidden_dim, n_layers, max_pos=64):
        super().__init__()
        self.embeddings = Embeddings(vocab, dim, max_pos)
        self.transformer = Transformer(n_layers, dim, n_heads, hidden_dim)

    def forward(self, input_ids, attention_mask):
        return self.transformer(self.embeddings(input_ids), attention_mask)


class DistilBertForSequenceClassification(nn.Module):
    def __init__(self, vocab=600, dim=64, n_heads=4, hidden_dim=256, n_layers=3, num_labels=3):
        super().__init__()
        self.distilbert = DistilBertModel(vocab, dim, n_heads, hidden_dim, n_layers)
        self.pre_classifier = nn.Linear(dim, dim)
        self.classifier = nn.Linear(dim, num_labels)
        self.dropout = nn.Dropout(0.2)

    def forward(self, input_ids, attention_mask):
        hidden_state = self.distilbert(input_ids, attention_mask)
        pooled_output = hidden_state[:, 0]
        pooled_output = self.pre_classifier(pooled_output)
        pooled_output = nn.ReLU()(pooled_output)  # an unregistered module, as in transformers
        pooled_output = self.dropout(pooled_output)
        return self.classifier(pooled_output)


# ---------------------------------------------------------------------------------------
# DeiT (timm's VisionTransformerDistilled): class and distillation tokens, timm's Block with
# Identity layer scale / drop path, two heads averaged (the non-distilled training path).


class PatchEmbed(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = nn.Identity()

    def forward(self, x):
        x = self.proj(x).flatten(2).transpose(1, 2)  # NCHW -> NLC
        return self.norm(x)


class TimmAttention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
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
        return self.proj_drop(self.proj(x))


class TimmMlp(nn.Module):
    def __init__(self, in_features, hidden_features, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.norm = nn.Identity()
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.drop1(self.act(self.fc1(x)))
        return self.drop2(self.fc2(self.norm(x)))


class TimmBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = TimmAttention(dim, num_heads)
        self.ls1 = nn.Identity()
        self.drop_path1 = nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = TimmMlp(dim, int(dim * mlp_ratio))
        self.ls2 = nn.Identity()
        self.drop_path2 = nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        return x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))


class VisionTransformerDistilled(nn.Module):
    def __init__(self, img_size=32, patch_size=4, embed_dim=64, depth=4, num_heads=4, num_classes=10):
        super().__init__()
        self.num_prefix_tokens = 2
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.dist_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 2, embed_dim) * 0.02)
        self.pos_drop = nn.Dropout(0.0)
        self.patch_drop = nn.Identity()
        self.norm_pre = nn.Identity()
        self.blocks = nn.Sequential(*[TimmBlock(embed_dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.fc_norm = nn.Identity()
        self.head_drop = nn.Dropout(0.0)
        self.head = nn.Linear(embed_dim, num_classes)
        self.head_dist = nn.Linear(embed_dim, num_classes)

    def _pos_embed(self, x):
        x = torch.cat(
            (self.cls_token.expand(x.shape[0], -1, -1), self.dist_token.expand(x.shape[0], -1, -1), x), dim=1
        )
        return self.pos_drop(x + self.pos_embed)

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = self._pos_embed(x)
        x = self.patch_drop(x)
        x = self.norm_pre(x)
        x = self.blocks(x)
        return self.norm(x)

    def forward_head(self, x):
        x, x_dist = x[:, 0], x[:, 1]
        x = self.head(self.head_drop(self.fc_norm(x)))
        x_dist = self.head_dist(x_dist)
        return (x + x_dist) / 2

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


# ---------------------------------------------------------------------------------------
# DeBERTa (transformers' DebertaForSequenceClassification, v1): fused bias-free in_proj with
# separate q_bias / v_bias, disentangled attention (content-to-position through pos_proj and
# position-to-content through pos_q_proj, both gathered by relative position and added to the
# scores), the encoder's rel_embeddings weight read directly (never called), DeBERTa's own
# LayerNorm and StableDropout modules, a ContextPooler.


class DebertaLayerNorm(nn.Module):
    def __init__(self, size, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) / torch.sqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states + self.bias


class StableDropout(nn.Module):
    def __init__(self, drop_prob):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if self.training and self.drop_prob > 0:
            return F.dropout(x, self.drop_prob, True)
        return x


def x_softmax(scores, mask, dim):
    rmask = ~(mask.to(torch.bool))
    output = scores.masked_fill(rmask, torch.tensor(torch.finfo(scores.dtype).min))
    output = torch.softmax(output, dim)
    return output.masked_fill(rmask, 0)


def build_relative_position(query_size, key_size):
    q_ids = torch.arange(query_size)
    k_ids = torch.arange(key_size)
    rel_pos_ids = q_ids[:, None] - k_ids.view(1, -1).repeat(query_size, 1)
    return rel_pos_ids[:query_size, :].unsqueeze(0)


class DisentangledSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, max_relative_positions):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = hidden_size // num_heads
        self.all_head_size = hidden_size
        self.in_proj = nn.Linear(hidden_size, self.all_head_size * 3, bias=False)
        self.q_bias = nn.Parameter(torch.zeros(self.all_head_size))
        self.v_bias = nn.Parameter(torch.zeros(self.all_head_size))
        self.pos_att_type = ["c2p", "p2c"]
        self.max_relative_positions = max_relative_positions
        self.pos_dropout = StableDropout(0.1)
        self.pos_proj = nn.Linear(hidden_size, self.all_head_size, bias=False)
        self.pos_q_proj = nn.Linear(hidden_size, self.all_head_size)
        self.dropout = StableDropout(0.1)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, -1)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask, relative_pos, rel_embeddings):
        qp = self.in_proj(hidden_states)
        query_layer, key_layer, value_layer = self.transpose_for_scores(qp).chunk(3, dim=-1)
        query_layer = query_layer + self.transpose_for_scores(self.q_bias[None, None, :])
        value_layer = value_layer + self.transpose_for_scores(self.v_bias[None, None, :])
        scale_factor = 1 + len(self.pos_att_type)
        scale = math.sqrt(query_layer.size(-1) * scale_factor)
        query_layer = query_layer / scale
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        rel_embeddings = self.pos_dropout(rel_embeddings)
        rel_att = self.disentangled_att_bias(query_layer, key_layer, relative_pos, rel_embeddings, scale_factor)
        attention_scores = attention_scores + rel_att
        attention_probs = x_softmax(attention_scores, attention_mask, -1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        return context_layer.view(context_layer.size()[:-2] + (-1,))

    def disentangled_att_bias(self, query_layer, key_layer, relative_pos, rel_embeddings, scale_factor):
        relative_pos = relative_pos.unsqueeze(1)  # (1, 1, q, k)
        att_span = min(max(query_layer.size(-2), key_layer.size(-2)), self.max_relative_positions)
        rel_embeddings = rel_embeddings[
            self.max_relative_positions - att_span : self.max_relative_positions + att_span, :
        ].unsqueeze(0)
        score = 0
        # content -> position
        pos_key_layer = self.transpose_for_scores(self.pos_proj(rel_embeddings))
        c2p_att = torch.matmul(query_layer, pos_key_layer.transpose(-1, -2))
        c2p_pos = torch.clamp(relative_pos + att_span, 0, att_span * 2 - 1)
        index = c2p_pos.expand([query_layer.size(0), query_layer.size(1), query_layer.size(2), relative_pos.size(-1)])
        score += torch.gather(c2p_att, dim=-1, index=index)
        # position -> content
        pos_query_layer = self.transpose_for_scores(self.pos_q_proj(rel_embeddings))
        pos_query_layer /= math.sqrt(pos_query_layer.size(-1) * scale_factor)
        p2c_pos = torch.clamp(-relative_pos + att_span, 0, att_span * 2 - 1)
        p2c_att = torch.matmul(key_layer, pos_query_layer.transpose(-1, -2))
        index = p2c_pos.expand([query_layer.size(0), query_layer.size(1), key_layer.size(-2), key_layer.size(-2)])
        score += torch.gather(p2c_att, dim=-1, index=index).transpose(-1, -2)
        return score


class DebertaSelfOutput(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = DebertaLayerNorm(hidden_size)
        self.dropout = StableDropout(0.1)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class DebertaAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, max_rel):
        super().__init__()
        self.self = DisentangledSelfAttention(hidden_size, num_heads, max_rel)
        self.output = DebertaSelfOutput(hidden_size)

    def forward(self, hidden_states, attention_mask, relative_pos, rel_embeddings):
        self_output = self.self(hidden_states, attention_mask, relative_pos, rel_embeddings)
        return self.output(self_output, hidden_states)


class DebertaIntermediate(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, intermediate_size)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class DebertaOutput(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.dense = nn.Linear(intermediate_size, hidden_size)
        self.LayerNorm = DebertaLayerNorm(hidden_size)
        self.dropout = StableDropout(0.1)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class DebertaLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, intermediate_size, max_rel):
        super().__init__()
        self.attention = DebertaAttention(hidden_size, num_heads, max_rel)
        self.intermediate = DebertaIntermediate(hidden_size, intermediate_size)
        self.output = DebertaOutput(hidden_size, intermediate_size)

    def forward(self, hidden_states, attention_mask, relative_pos, rel_embeddings):
        attention_output = self.attention(hidden_states, attention_mask, relative_pos, rel_embeddings)
        intermediate_output = self.intermediate(attention_output)
        return self.output(intermediate_output, attention_output)


class DebertaEncoder(nn.Module):
    def __init__(self, hidden_size, num_heads, intermediate_size, layers, max_rel):
        super().__init__()
        self.layer = nn.ModuleList(
            [DebertaLayer(hidden_size, num_heads, intermediate_size, max_rel) for _ in range(layers)]
        )
        self.max_relative_positions = max_rel
        self.rel_embeddings = nn.Embedding(max_rel * 2, hidden_size)

    def get_attention_mask(self, attention_mask):
        extended_attention_mask = attention_mask.unsqueeze(1).unsqueeze(2)
        attention_mask = extended_attention_mask * extended_attention_mask.squeeze(-2).unsqueeze(-1)
        return attention_mask.byte()

    def forward(self, hidden_states, attention_mask):
        attention_mask = self.get_attention_mask(attention_mask)
        relative_pos = build_relative_position(hidden_states.size(-2), hidden_states.size(-2))
        rel_embeddings = self.rel_embeddings.weight  # read directly, as in transformers
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask, relative_pos, rel_embeddings)
        return hidden_states


class DebertaEmbeddings(nn.Module):
    def __init__(self, vocab, hidden_size):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden_size, padding_idx=0)
        self.LayerNorm = DebertaLayerNorm(hidden_size)
        self.dropout = StableDropout(0.1)

    def forward(self, input_ids, mask):
        embeddings = self.LayerNorm(self.word_embeddings(input_ids))
        embeddings = embeddings * mask.unsqueeze(2).to(embeddings.dtype)
        return self.dropout(embeddings)


class ContextPooler(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.dropout = StableDropout(0.0)

    def forward(self, hidden_states):
        context_token = self.dropout(hidden_states[:, 0])
        return F.gelu(self.dense(context_token))  # ACT2FN[pooler_hidden_act], not registered


class DebertaModel(nn.Module):
    def __init__(self, vocab, hidden_size, num_heads, intermediate_size, layers, max_rel):
        super().__init__()
        self.embeddings = DebertaEmbeddings(vocab, hidden_size)
        self.encoder = DebertaEncoder(hidden_size, num_heads, intermediate_size, layers, max_rel)

    def forward(self, input_ids, attention_mask):
        return self.encoder(self.embeddings(input_ids, attention_mask), attention_mask)


class DebertaForSequenceClassification(nn.Module):
    def __init__(self, vocab=600, hidden_size=64, num_heads=4, intermediate_size=256, layers=3, max_rel=16,
                 num_labels=3):
        super().__init__()
        self.deberta = DebertaModel(vocab, hidden_size, num_heads, intermediate_size, layers, max_rel)
        self.pooler = ContextPooler(hidden_size)
        self.classifier = nn.Linear(hidden_size, num_labels)
        self.dropout = StableDropout(0.1)

    def forward(self, input_ids, attention_mask):
        encoder_layer = self.deberta(input_ids, attention_mask)
        pooled_output = self.dropout(self.pooler(encoder_layer))
        return self.classifier(pooled_output)


# ---------------------------------------------------------------------------------------
# CaiT (timm's cait.py): LayerScale as gamma_1 * x / gamma_2 * x parameters, talking-heads
# attention (proj_l before and proj_w after the softmax, over the heads), then class-attention
# blocks in which only the class token attends.


class TalkingHeadAttn(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_l = nn.Linear(num_heads, num_heads)
        self.proj_w = nn.Linear(num_heads, num_heads)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1)
        attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        attn = attn.softmax(dim=-1)
        attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class ClassAttn(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.q = nn.Linear(dim, dim, bias=qkv_bias)
        self.k = nn.Linear(dim, dim, bias=qkv_bias)
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        q = self.q(x[:, 0]).unsqueeze(1).reshape(B, 1, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        k = self.k(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        v = self.v(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x_cls = (attn @ v).transpose(1, 2).reshape(B, 1, C)
        return self.proj_drop(self.proj(x_cls))


class LayerScaleBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, init_values=1e-4):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = TalkingHeadAttn(dim, num_heads, qkv_bias=True)
        self.drop_path = nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = TimmMlp(dim, int(dim * mlp_ratio))
        self.gamma_1 = nn.Parameter(init_values * torch.ones(dim))
        self.gamma_2 = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        x = x + self.drop_path(self.gamma_1 * self.attn(self.norm1(x)))
        return x + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x)))


class LayerScaleBlockClassAttn(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, init_values=1e-4):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = ClassAttn(dim, num_heads, qkv_bias=True)
        self.drop_path = nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = TimmMlp(dim, int(dim * mlp_ratio))
        self.gamma_1 = nn.Parameter(init_values * torch.ones(dim))
        self.gamma_2 = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x, x_cls):
        u = torch.cat((x_cls, x), dim=1)
        x_cls = x_cls + self.drop_path(self.gamma_1 * self.attn(self.norm1(u)))
        return x_cls + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x_cls)))


class Cait(nn.Module):
    def __init__(self, img_size=32, patch_size=4, embed_dim=64, depth=4, num_heads=4, depth_token_only=2,
                 num_classes=10):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches, embed_dim) * 0.02)
        self.pos_drop = nn.Dropout(0.0)
        self.blocks = nn.Sequential(*[LayerScaleBlock(embed_dim, num_heads) for _ in range(depth)])
        self.blocks_token_only = nn.ModuleList(
            [LayerScaleBlockClassAttn(embed_dim, num_heads) for _ in range(depth_token_only)]
        )
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head_drop = nn.Dropout(0.0)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = x + self.pos_embed
        x = self.pos_drop(x)
        x = self.blocks(x)
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
        for blk in self.blocks_token_only:
            cls_tokens = blk(x, cls_tokens)
        x = torch.cat((cls_tokens, x), dim=1)
        return self.norm(x)

    def forward(self, x):
        x = self.forward_features(x)
        return self.head(self.head_drop(x[:, 0]))


# ---------------------------------------------------------------------------------------
# BEiT (timm's beit.py): q_bias / v_bias with the qkv weight applied by F.linear (the qkv
# module itself is never called), a relative position bias table gathered by a
# relative_position_index buffer, gamma_1 / gamma_2 layer scale, mean pooling then fc_norm.


def gen_relative_position_index(window_size):
    num_relative_distance = (2 * window_size[0] - 1) * (2 * window_size[1] - 1) + 3
    window_area = window_size[0] * window_size[1]
    coords = torch.stack(torch.meshgrid([torch.arange(window_size[0]), torch.arange(window_size[1])], indexing="ij"))
    coords_flatten = torch.flatten(coords, 1)
    relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
    relative_coords = relative_coords.permute(1, 2, 0).contiguous()
    relative_coords[:, :, 0] += window_size[0] - 1
    relative_coords[:, :, 1] += window_size[1] - 1
    relative_coords[:, :, 0] *= 2 * window_size[1] - 1
    relative_position_index = torch.zeros(size=(window_area + 1,) * 2, dtype=relative_coords.dtype)
    relative_position_index[1:, 1:] = relative_coords.sum(-1)
    relative_position_index[0, 0:] = num_relative_distance - 3
    relative_position_index[0:, 0] = num_relative_distance - 2
    relative_position_index[0, 0] = num_relative_distance - 1
    return relative_position_index


class BeitAttention(nn.Module):
    def __init__(self, dim, num_heads, window_size):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.q_bias = nn.Parameter(torch.zeros(dim))
        self.register_buffer("k_bias", torch.zeros(dim), persistent=False)
        self.v_bias = nn.Parameter(torch.zeros(dim))
        self.window_size = window_size
        self.window_area = window_size[0] * window_size[1]
        self.num_relative_distance = (2 * window_size[0] - 1) * (2 * window_size[1] - 1) + 3
        self.relative_position_bias_table = nn.Parameter(torch.zeros(self.num_relative_distance, num_heads))
        self.register_buffer("relative_position_index", gen_relative_position_index(window_size), persistent=False)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def _get_rel_pos_bias(self):
        relative_position_bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(
            self.window_area + 1, self.window_area + 1, -1
        )
        relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()
        return relative_position_bias.unsqueeze(0)

    def forward(self, x):
        B, N, C = x.shape
        qkv_bias = torch.cat((self.q_bias, self.k_bias, self.v_bias))
        qkv = F.linear(x, weight=self.qkv.weight, bias=qkv_bias)
        qkv = qkv.reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn + self._get_rel_pos_bias()
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class BeitBlock(nn.Module):
    def __init__(self, dim, num_heads, window_size, mlp_ratio=4.0, init_values=0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = BeitAttention(dim, num_heads, window_size)
        self.drop_path1 = nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = TimmMlp(dim, int(dim * mlp_ratio))
        self.drop_path2 = nn.Identity()
        self.gamma_1 = nn.Parameter(init_values * torch.ones(dim))
        self.gamma_2 = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        x = x + self.drop_path1(self.gamma_1 * self.attn(self.norm1(x)))
        return x + self.drop_path2(self.gamma_2 * self.mlp(self.norm2(x)))


class Beit(nn.Module):
    def __init__(self, img_size=32, patch_size=4, embed_dim=64, depth=4, num_heads=4, num_classes=10):
        super().__init__()
        self.num_prefix_tokens = 1
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, embed_dim)
        grid = (img_size // patch_size, img_size // patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_drop = nn.Dropout(0.0)
        self.blocks = nn.ModuleList([BeitBlock(embed_dim, num_heads, grid) for _ in range(depth)])
        self.norm = nn.Identity()
        self.fc_norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head_drop = nn.Dropout(0.0)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = self.pos_drop(x)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)

    def forward_head(self, x):
        x = x[:, self.num_prefix_tokens :].mean(dim=1)
        x = self.fc_norm(x)
        return self.head(self.head_drop(x))

    def forward(self, x):
        return self.forward_head(self.forward_features(x))


# ---------------------------------------------------------------------------------------
# gMLP and ResMLP (timm's mlp_mixer.py, MlpMixer with another block_layer): gMLP's
# SpatialGatingBlock (GatedMlp with a SpatialGatingUnit: chunk, LayerNorm, a Linear over the
# tokens, multiply); ResMLP's ResBlock (Affine instead of norms, a cross-patch Linear over the
# tokens, ls1 / ls2 layer scale).


class SpatialGatingUnit(nn.Module):
    def __init__(self, dim, seq_len):
        super().__init__()
        gate_dim = dim // 2
        self.norm = nn.LayerNorm(gate_dim, eps=1e-6)
        self.proj = nn.Linear(seq_len, seq_len)

    def forward(self, x):
        u, v = x.chunk(2, dim=-1)
        v = self.norm(v)
        v = self.proj(v.transpose(-1, -2))
        return u * v.transpose(-1, -2)


class GatedMlp(nn.Module):
    def __init__(self, in_features, hidden_features, seq_len):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.drop1 = nn.Dropout(0.0)
        self.gate = SpatialGatingUnit(hidden_features, seq_len)
        self.norm = nn.Identity()
        self.fc2 = nn.Linear(hidden_features // 2, in_features)
        self.drop2 = nn.Dropout(0.0)

    def forward(self, x):
        x = self.drop1(self.act(self.fc1(x)))
        x = self.gate(x)
        x = self.norm(x)
        return self.drop2(self.fc2(x))


class SpatialGatingBlock(nn.Module):
    def __init__(self, dim, seq_len, mlp_ratio=4):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.mlp_channels = GatedMlp(dim, dim * mlp_ratio, seq_len)
        self.drop_path = nn.Identity()

    def forward(self, x):
        return x + self.drop_path(self.mlp_channels(self.norm(x)))


class Affine(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones((1, 1, dim)))
        self.beta = nn.Parameter(torch.zeros((1, 1, dim)))

    def forward(self, x):
        return torch.addcmul(self.beta, self.alpha, x)


class ResBlock(nn.Module):
    def __init__(self, dim, seq_len, mlp_ratio=4, init_values=1e-4):
        super().__init__()
        self.norm1 = Affine(dim)
        self.linear_tokens = nn.Linear(seq_len, seq_len)
        self.drop_path = nn.Identity()
        self.norm2 = Affine(dim)
        self.mlp_channels = TimmMlp(dim, dim * mlp_ratio)
        self.ls1 = nn.Parameter(init_values * torch.ones(dim))
        self.ls2 = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        x = x + self.drop_path(self.ls1 * self.linear_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2))
        return x + self.drop_path(self.ls2 * self.mlp_channels(self.norm2(x)))


class MlpMixer(nn.Module):
    def __init__(self, block_layer, norm_layer, img_size=32, patch_size=4, embed_dim=64, num_blocks=4,
                 num_classes=10):
        super().__init__()
        self.stem = PatchEmbed(img_size, patch_size, 3, embed_dim)
        seq_len = self.stem.num_patches
        self.blocks = nn.Sequential(*[block_layer(embed_dim, seq_len) for _ in range(num_blocks)])
        self.norm = norm_layer(embed_dim)
        self.head_drop = nn.Dropout(0.0)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        x = self.norm(self.blocks(self.stem(x)))
        x = x.mean(dim=1)
        return self.head(self.head_drop(x))


# ---------------------------------------------------------------------------------------
# MobileViT (transformers' MobileViTForImageClassification): MobileNetV2 inverted residuals,
# then MobileViT layers (local kxk conv, 1x1 conv, unfold to patches by reshapes, a small
# transformer, fold back, 1x1 projection, concat with the input, fusion conv), SiLU modules.


class MobileViTConvLayer(nn.Module):
    def __init__(self, cin, cout, kernel_size, stride=1, groups=1, use_normalization=True, use_activation=True):
        super().__init__()
        padding = (kernel_size - 1) // 2
        self.convolution = nn.Conv2d(cin, cout, kernel_size, stride, padding, groups=groups, bias=False)
        self.normalization = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1) if use_normalization else None
        self.activation = nn.SiLU() if use_activation else None

    def forward(self, features):
        features = self.convolution(features)
        if self.normalization is not None:
            features = self.normalization(features)
        if self.activation is not None:
            features = self.activation(features)
        return features


class MobileViTInvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand_ratio=4):
        super().__init__()
        expanded = int(round(cin * expand_ratio))
        self.use_residual = stride == 1 and cin == cout
        self.expand_1x1 = MobileViTConvLayer(cin, expanded, 1)
        self.conv_3x3 = MobileViTConvLayer(expanded, expanded, 3, stride=stride, groups=expanded)
        self.reduce_1x1 = MobileViTConvLayer(expanded, cout, 1, use_activation=False)

    def forward(self, features):
        residual = features
        features = self.expand_1x1(features)
        features = self.conv_3x3(features)
        features = self.reduce_1x1(features)
        return residual + features if self.use_residual else features


class MobileViTMobileNetLayer(nn.Module):
    def __init__(self, cin, cout, stride=1, num_stages=1):
        super().__init__()
        self.layer = nn.ModuleList()
        for i in range(num_stages):
            self.layer.append(MobileViTInvertedResidual(cin, cout, stride if i == 0 else 1))
            cin = cout

    def forward(self, features):
        for layer_module in self.layer:
            features = layer_module(features)
        return features


class MobileViTSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = hidden_size // num_heads
        self.all_head_size = hidden_size
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(0.0)

    def transpose_for_scores(self, x):
        x = x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size))
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_probs = self.dropout(nn.functional.softmax(attention_scores, dim=-1))
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        return context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))


class MobileViTSelfOutput(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states):
        return self.dropout(self.dense(hidden_states))


class MobileViTAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.attention = MobileViTSelfAttention(hidden_size, num_heads)
        self.output = MobileViTSelfOutput(hidden_size)

    def forward(self, hidden_states):
        return self.output(self.attention(hidden_states))


class MobileViTIntermediate(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.dense = nn.Linear(hidden_size, intermediate_size)
        self.intermediate_act_fn = nn.SiLU()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class MobileViTOutput(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.dense = nn.Linear(intermediate_size, hidden_size)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states, input_tensor):
        return self.dropout(self.dense(hidden_states)) + input_tensor


class MobileViTTransformerLayer(nn.Module):
    def __init__(self, hidden_size, intermediate_size, num_heads=4):
        super().__init__()
        self.attention = MobileViTAttention(hidden_size, num_heads)
        self.intermediate = MobileViTIntermediate(hidden_size, intermediate_size)
        self.output = MobileViTOutput(hidden_size, intermediate_size)
        self.layernorm_before = nn.LayerNorm(hidden_size, eps=1e-5)
        self.layernorm_after = nn.LayerNorm(hidden_size, eps=1e-5)

    def forward(self, hidden_states):
        attention_output = self.attention(self.layernorm_before(hidden_states))
        hidden_states = attention_output + hidden_states
        layer_output = self.layernorm_after(hidden_states)
        layer_output = self.intermediate(layer_output)
        return self.output(layer_output, hidden_states)


class MobileViTTransformer(nn.Module):
    def __init__(self, hidden_size, num_stages):
        super().__init__()
        self.layer = nn.ModuleList([MobileViTTransformerLayer(hidden_size, 2 * hidden_size) for _ in range(num_stages)])

    def forward(self, hidden_states):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states)
        return hidden_states


class MobileViTLayer(nn.Module):
    def __init__(self, cin, cout, stride, hidden_size, num_stages, patch_size=2):
        super().__init__()
        self.patch_width = self.patch_height = patch_size
        if stride == 2:
            self.downsampling_layer = MobileViTInvertedResidual(cin, cout, stride)
            cin = cout
        else:
            self.downsampling_layer = None
        self.conv_kxk = MobileViTConvLayer(cin, cin, 3)
        self.conv_1x1 = MobileViTConvLayer(cin, hidden_size, 1, use_normalization=False, use_activation=False)
        self.transformer = MobileViTTransformer(hidden_size, num_stages)
        self.layernorm = nn.LayerNorm(hidden_size, eps=1e-5)
        self.conv_projection = MobileViTConvLayer(hidden_size, cin, 1)
        self.fusion = MobileViTConvLayer(2 * cin, cin, 3)

    def unfolding(self, features):
        patch_width, patch_height = self.patch_width, self.patch_height
        patch_area = patch_width * patch_height
        batch_size, channels, orig_height, orig_width = features.shape
        num_patch_width = orig_width // patch_width
        num_patch_height = orig_height // patch_height
        num_patches = num_patch_height * num_patch_width
        patches = features.reshape(batch_size * channels * num_patch_height, patch_height, num_patch_width, patch_width)
        patches = patches.transpose(1, 2)
        patches = patches.reshape(batch_size, channels, num_patches, patch_area)
        patches = patches.transpose(1, 3)
        patches = patches.reshape(batch_size * patch_area, num_patches, -1)
        info = dict(batch_size=batch_size, channels=channels, num_patches_width=num_patch_width,
                    num_patches_height=num_patch_height)
        return patches, info

    def folding(self, patches, info):
        patch_width, patch_height = self.patch_width, self.patch_height
        patch_area = patch_width * patch_height
        batch_size, channels = info["batch_size"], info["channels"]
        num_patch_height, num_patch_width = info["num_patches_height"], info["num_patches_width"]
        num_patches = num_patch_height * num_patch_width
        features = patches.contiguous().view(batch_size, patch_area, num_patches, -1)
        features = features.transpose(1, 3)
        features = features.reshape(batch_size * channels * num_patch_height, num_patch_width, patch_height, patch_width)
        features = features.transpose(1, 2)
        return features.reshape(batch_size, channels, num_patch_height * patch_height, num_patch_width * patch_width)

    def forward(self, features):
        if self.downsampling_layer:
            features = self.downsampling_layer(features)
        residual = features
        features = self.conv_kxk(features)
        features = self.conv_1x1(features)
        patches, info_dict = self.unfolding(features)
        patches = self.transformer(patches)
        patches = self.layernorm(patches)
        features = self.folding(patches, info_dict)
        features = self.conv_projection(features)
        return self.fusion(torch.cat((residual, features), dim=1))


class MobileViTEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList(
            [
                MobileViTMobileNetLayer(16, 16, 1, 1),
                MobileViTMobileNetLayer(16, 24, 2, 2),
                MobileViTLayer(24, 32, 2, hidden_size=48, num_stages=2),
                MobileViTLayer(32, 48, 2, hidden_size=64, num_stages=2),
            ]
        )

    def forward(self, hidden_states):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states)
        return hidden_states


class MobileViTModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_stem = MobileViTConvLayer(3, 16, 3, stride=2)
        self.encoder = MobileViTEncoder()
        self.conv_1x1_exp = MobileViTConvLayer(48, 96, 1)

    def forward(self, pixel_values):
        embedding_output = self.conv_stem(pixel_values)
        last_hidden_state = self.conv_1x1_exp(self.encoder(embedding_output))
        return torch.mean(last_hidden_state, dim=[-2, -1], keepdim=False)


class MobileViTForImageClassification(nn.Module):
    def __init__(self, num_labels=10):
        super().__init__()
        self.mobilevit = MobileViTModel()
        self.dropout = nn.Dropout(0.1, inplace=True)
        self.classifier = nn.Linear(96, num_labels)

    def forward(self, pixel_values):
        return self.classifier(self.dropout(self.mobilevit(pixel_values)))


# ---------------------------------------------------------------------------------------
# FastSpeech (FFT blocks as in the FastSpeech / FastSpeech 2 reference code): a sinusoid
# position table, FFT blocks of nn.MultiheadAttention then a Conv1d-ReLU-Conv1d position-wise
# feed-forward, each post-norm and masked; a variance (duration) predictor of Conv-ReLU-
# LayerNorm-Dropout twice and a Linear; a length regulator expanding each phoneme by its
# ground-truth duration; a decoder of FFT blocks and mel_linear.


def get_sinusoid_encoding_table(n_position, d_hid):
    pos = torch.arange(n_position, dtype=torch.float32)[:, None]
    i = torch.arange(d_hid)[None, :]
    table = pos / torch.pow(10000.0, 2 * (i // 2).float() / d_hid)
    table[:, 0::2] = torch.sin(table[:, 0::2])
    table[:, 1::2] = torch.cos(table[:, 1::2])
    return table


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_in, d_hid, kernel_size=(9, 1), dropout=0.1):
        super().__init__()
        self.w_1 = nn.Conv1d(d_in, d_hid, kernel_size=kernel_size[0], padding=(kernel_size[0] - 1) // 2)
        self.w_2 = nn.Conv1d(d_hid, d_in, kernel_size=kernel_size[1], padding=(kernel_size[1] - 1) // 2)
        self.layer_norm = nn.LayerNorm(d_in)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        residual = x
        output = x.transpose(1, 2)
        output = self.w_2(F.relu(self.w_1(output)))
        output = output.transpose(1, 2)
        output = self.dropout(output)
        return self.layer_norm(output + residual)


class FFTBlock(nn.Module):
    def __init__(self, d_model, n_head, d_inner, dropout=0.1):
        super().__init__()
        self.slf_attn = nn.MultiheadAttention(d_model, n_head, dropout=dropout, batch_first=True)
        self.layer_norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.pos_ffn = PositionwiseFeedForward(d_model, d_inner, dropout=dropout)

    def forward(self, enc_input, mask):
        enc_output, _ = self.slf_attn(enc_input, enc_input, enc_input, key_padding_mask=mask, need_weights=False)
        enc_output = self.layer_norm(self.dropout(enc_output) + enc_input)
        enc_output = enc_output.masked_fill(mask.unsqueeze(-1), 0)
        enc_output = self.pos_ffn(enc_output)
        return enc_output.masked_fill(mask.unsqueeze(-1), 0)


class FastSpeechEncoder(nn.Module):
    def __init__(self, n_vocab, d_model, n_layers, n_head, d_inner, max_seq_len=64):
        super().__init__()
        self.src_word_emb = nn.Embedding(n_vocab, d_model, padding_idx=0)
        self.position_enc = nn.Parameter(get_sinusoid_encoding_table(max_seq_len, d_model).unsqueeze(0),
                                         requires_grad=False)
        self.layer_stack = nn.ModuleList([FFTBlock(d_model, n_head, d_inner) for _ in range(n_layers)])

    def forward(self, src_seq, mask):
        enc_output = self.src_word_emb(src_seq) + self.position_enc[:, : src_seq.shape[1], :]
        for enc_layer in self.layer_stack:
            enc_output = enc_layer(enc_output, mask)
        return enc_output


class FastSpeechDecoder(nn.Module):
    def __init__(self, d_model, n_layers, n_head, d_inner, max_seq_len=64):
        super().__init__()
        self.position_enc = nn.Parameter(get_sinusoid_encoding_table(max_seq_len, d_model).unsqueeze(0),
                                         requires_grad=False)
        self.layer_stack = nn.ModuleList([FFTBlock(d_model, n_head, d_inner) for _ in range(n_layers)])

    def forward(self, enc_seq, mask):
        dec_output = enc_seq + self.position_enc[:, : enc_seq.shape[1], :]
        for dec_layer in self.layer_stack:
            dec_output = dec_layer(dec_output, mask)
        return dec_output


class Conv(nn.Module):
    """FastSpeech 2's Conv: a Conv1d applied to (batch, time, channels)."""

    def __init__(self, in_channels, out_channels, kernel_size=1, padding=0):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size=kernel_size, padding=padding)

    def forward(self, x):
        return self.conv(x.contiguous().transpose(1, 2)).contiguous().transpose(1, 2)


class VariancePredictor(nn.Module):
    def __init__(self, d_model, filter_size=32, kernel=3, dropout=0.5):
        super().__init__()
        self.conv_layer = nn.Sequential(
            Conv(d_model, filter_size, kernel_size=kernel, padding=(kernel - 1) // 2),
            nn.ReLU(),
            nn.LayerNorm(filter_size),
            nn.Dropout(dropout),
            Conv(filter_size, filter_size, kernel_size=kernel, padding=1),
            nn.ReLU(),
            nn.LayerNorm(filter_size),
            nn.Dropout(dropout),
        )
        self.linear_layer = nn.Linear(filter_size, 1)

    def forward(self, encoder_output, mask):
        out = self.linear_layer(self.conv_layer(encoder_output)).squeeze(-1)
        return out.masked_fill(mask, 0.0)


class LengthRegulator(nn.Module):
    def forward(self, x, duration, max_len):
        output = []
        for batch, expand_target in zip(x, duration):
            out = [vec.expand(int(expand_target[i].item()), -1) for i, vec in enumerate(batch)]
            output.append(torch.cat(out, 0))
        return torch.stack([F.pad(o, (0, 0, 0, max_len - o.size(0))) for o in output])


class VarianceAdaptor(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.duration_predictor = VariancePredictor(d_model)
        self.length_regulator = LengthRegulator()

    def forward(self, x, src_mask, d_target, max_len):
        log_duration_prediction = self.duration_predictor(x, src_mask)
        return self.length_regulator(x, d_target, max_len), log_duration_prediction


class FastSpeech(nn.Module):
    def __init__(self, n_vocab=100, d_model=64, n_layers=2, n_head=2, d_inner=128, n_mels=20):
        super().__init__()
        self.encoder = FastSpeechEncoder(n_vocab, d_model, n_layers, n_head, d_inner)
        self.variance_adaptor = VarianceAdaptor(d_model)
        self.decoder = FastSpeechDecoder(d_model, n_layers, n_head, d_inner)
        self.mel_linear = nn.Linear(d_model, n_mels)

    def forward(self, texts, d_targets):
        src_masks = texts == 0
        mel_len = int(d_targets.sum(1).max())
        mel_masks = torch.arange(mel_len)[None, :] >= d_targets.sum(1)[:, None]
        output = self.encoder(texts, src_masks)
        output, log_d_predictions = self.variance_adaptor(output, src_masks, d_targets, mel_len)
        output = self.decoder(output, mel_masks)
        return self.mel_linear(output), log_d_predictions


def fastspeech_loss(out, target):
    mel, log_d = out
    mel_t, d_t = target
    return F.mse_loss(mel, mel_t) + F.mse_loss(log_d, torch.log(d_t.float() + 1))


# ---------------------------------------------------------------------------------------
# Tacotron 2 (NVIDIA's tacotron2 model.py): LinearNorm / ConvNorm wrappers, an encoder of
# ConvNorm-BatchNorm1d (F.relu, F.dropout) and a packed bidirectional LSTM, a decoder unrolled
# over the mel frames in Python (prenet with always-on dropout, attention LSTMCell,
# location-sensitive attention, decoder LSTMCell, mel projection and gate), a postnet of
# ConvNorm-BatchNorm1d-Tanh.


class LinearNorm(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True):
        super().__init__()
        self.linear_layer = nn.Linear(in_dim, out_dim, bias=bias)

    def forward(self, x):
        return self.linear_layer(x)


class ConvNorm(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding=None, bias=True):
        super().__init__()
        if padding is None:
            padding = (kernel_size - 1) // 2
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride, padding, bias=bias)

    def forward(self, signal):
        return self.conv(signal)


class LocationLayer(nn.Module):
    def __init__(self, attention_n_filters, attention_kernel_size, attention_dim):
        super().__init__()
        self.location_conv = ConvNorm(2, attention_n_filters, attention_kernel_size, bias=False)
        self.location_dense = LinearNorm(attention_n_filters, attention_dim, bias=False)

    def forward(self, attention_weights_cat):
        processed_attention = self.location_conv(attention_weights_cat).transpose(1, 2)
        return self.location_dense(processed_attention)


class TacotronAttention(nn.Module):
    def __init__(self, attention_rnn_dim, embedding_dim, attention_dim, n_filters, kernel_size):
        super().__init__()
        self.query_layer = LinearNorm(attention_rnn_dim, attention_dim, bias=False)
        self.memory_layer = LinearNorm(embedding_dim, attention_dim, bias=False)
        self.v = LinearNorm(attention_dim, 1, bias=False)
        self.location_layer = LocationLayer(n_filters, kernel_size, attention_dim)
        self.score_mask_value = -float("inf")

    def get_alignment_energies(self, query, processed_memory, attention_weights_cat):
        processed_query = self.query_layer(query.unsqueeze(1))
        processed_attention_weights = self.location_layer(attention_weights_cat)
        energies = self.v(torch.tanh(processed_query + processed_attention_weights + processed_memory))
        return energies.squeeze(-1)

    def forward(self, attention_hidden_state, memory, processed_memory, attention_weights_cat, mask):
        alignment = self.get_alignment_energies(attention_hidden_state, processed_memory, attention_weights_cat)
        alignment = alignment.masked_fill(mask, self.score_mask_value)
        attention_weights = F.softmax(alignment, dim=1)
        attention_context = torch.bmm(attention_weights.unsqueeze(1), memory).squeeze(1)
        return attention_context, attention_weights


class Prenet(nn.Module):
    def __init__(self, in_dim, sizes):
        super().__init__()
        in_sizes = [in_dim] + sizes[:-1]
        self.layers = nn.ModuleList([LinearNorm(i, o, bias=False) for i, o in zip(in_sizes, sizes)])

    def forward(self, x):
        for linear in self.layers:
            x = F.dropout(F.relu(linear(x)), p=0.5, training=True)
        return x


class Postnet(nn.Module):
    def __init__(self, n_mel, emb=32, kernel=5, n_convs=3):
        super().__init__()
        chans = [n_mel] + [emb] * (n_convs - 1) + [n_mel]
        self.convolutions = nn.ModuleList(
            nn.Sequential(ConvNorm(chans[i], chans[i + 1], kernel), nn.BatchNorm1d(chans[i + 1]))
            for i in range(n_convs)
        )

    def forward(self, x):
        for i in range(len(self.convolutions) - 1):
            x = F.dropout(torch.tanh(self.convolutions[i](x)), 0.5, self.training)
        return F.dropout(self.convolutions[-1](x), 0.5, self.training)


class TacotronEncoder(nn.Module):
    def __init__(self, emb=32, n_convs=2, kernel=5):
        super().__init__()
        self.convolutions = nn.ModuleList(
            nn.Sequential(ConvNorm(emb, emb, kernel), nn.BatchNorm1d(emb)) for _ in range(n_convs)
        )
        self.lstm = nn.LSTM(emb, emb // 2, 1, batch_first=True, bidirectional=True)

    def forward(self, x, input_lengths):
        for conv in self.convolutions:
            x = F.dropout(F.relu(conv(x)), 0.5, self.training)
        x = x.transpose(1, 2)
        x = nn.utils.rnn.pack_padded_sequence(x, input_lengths, batch_first=True)
        outputs, _ = self.lstm(x)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
        return outputs


class TacotronDecoder(nn.Module):
    def __init__(self, n_mel=16, emb=32, attention_rnn_dim=64, decoder_rnn_dim=64, prenet_dim=32,
                 attention_dim=32, n_filters=8, kernel=5):
        super().__init__()
        self.n_mel_channels = n_mel
        self.attention_rnn_dim, self.decoder_rnn_dim = attention_rnn_dim, decoder_rnn_dim
        self.prenet = Prenet(n_mel, [prenet_dim, prenet_dim])
        self.attention_rnn = nn.LSTMCell(prenet_dim + emb, attention_rnn_dim)
        self.attention_layer = TacotronAttention(attention_rnn_dim, emb, attention_dim, n_filters, kernel)
        self.decoder_rnn = nn.LSTMCell(attention_rnn_dim + emb, decoder_rnn_dim)
        self.linear_projection = LinearNorm(decoder_rnn_dim + emb, n_mel)
        self.gate_layer = LinearNorm(decoder_rnn_dim + emb, 1)

    def forward(self, memory, decoder_inputs, mask):
        B, T_in, E = memory.shape
        go = memory.new_zeros(1, B, self.n_mel_channels)
        decoder_inputs = torch.cat((go, decoder_inputs.permute(2, 0, 1)), dim=0)
        decoder_inputs = self.prenet(decoder_inputs)
        attention_hidden = memory.new_zeros(B, self.attention_rnn_dim)
        attention_cell = memory.new_zeros(B, self.attention_rnn_dim)
        decoder_hidden = memory.new_zeros(B, self.decoder_rnn_dim)
        decoder_cell = memory.new_zeros(B, self.decoder_rnn_dim)
        attention_weights = memory.new_zeros(B, T_in)
        attention_weights_cum = memory.new_zeros(B, T_in)
        attention_context = memory.new_zeros(B, E)
        processed_memory = self.attention_layer.memory_layer(memory)
        mel_outputs, gate_outputs = [], []
        while len(mel_outputs) < decoder_inputs.size(0) - 1:
            decoder_input = decoder_inputs[len(mel_outputs)]
            cell_input = torch.cat((decoder_input, attention_context), -1)
            attention_hidden, attention_cell = self.attention_rnn(cell_input, (attention_hidden, attention_cell))
            attention_hidden = F.dropout(attention_hidden, 0.1, self.training)
            attention_weights_cat = torch.cat(
                (attention_weights.unsqueeze(1), attention_weights_cum.unsqueeze(1)), dim=1
            )
            attention_context, attention_weights = self.attention_layer(
                attention_hidden, memory, processed_memory, attention_weights_cat, mask
            )
            attention_weights_cum = attention_weights_cum + attention_weights
            decoder_input = torch.cat((attention_hidden, attention_context), -1)
            decoder_hidden, decoder_cell = self.decoder_rnn(decoder_input, (decoder_hidden, decoder_cell))
            decoder_hidden = F.dropout(decoder_hidden, 0.1, self.training)
            decoder_hidden_attention_context = torch.cat((decoder_hidden, attention_context), dim=1)
            mel_outputs.append(self.linear_projection(decoder_hidden_attention_context))
            gate_outputs.append(self.gate_layer(decoder_hidden_attention_context).squeeze(1))
        mel_outputs = torch.stack(mel_outputs).transpose(0, 1).transpose(1, 2)
        gate_outputs = torch.stack(gate_outputs).transpose(0, 1)
        return mel_outputs, gate_outputs


class Tacotron2(nn.Module):
    def __init__(self, n_symbols=60, emb=32, n_mel=16):
        super().__init__()
        self.embedding = nn.Embedding(n_symbols, emb)
        self.encoder = TacotronEncoder(emb)
        self.decoder = TacotronDecoder(n_mel, emb)
        self.postnet = Postnet(n_mel)

    def forward(self, text_inputs, text_lengths, mels):
        embedded_inputs = self.embedding(text_inputs).transpose(1, 2)
        encoder_outputs = self.encoder(embedded_inputs, text_lengths)
        mask = torch.arange(text_inputs.size(1))[None, :] >= text_lengths[:, None]
        mel_outputs, gate_outputs = self.decoder(encoder_outputs, mels, mask)
        mel_outputs_postnet = mel_outputs + self.postnet(mel_outputs)
        return mel_outputs, mel_outputs_postnet, gate_outputs


def tacotron2_loss(out, target):
    mel_out, mel_out_postnet, gate_out = out
    mel_target, gate_target = target
    return (F.mse_loss(mel_out, mel_target) + F.mse_loss(mel_out_postnet, mel_target)
            + F.binary_cross_entropy_with_logits(gate_out, gate_target))


# ---------------------------------------------------------------------------------------
# xDeepFM (DeepCTR-Torch's xDeepFM): an embedding_dict of per-field Embeddings, a linear part
# (per-field 1-d embeddings plus a dense weight), CIN (outer products by einsum, a Conv1d of
# kernel 1 per layer, split_half) with cin_linear, a DNN (linears and ReLU modules in
# ModuleLists) with dnn_linear, and a PredictionLayer (bias, sigmoid).


class DeepCTRLinear(nn.Module):
    def __init__(self, n_fields, vocab, n_dense):
        super().__init__()
        self.embedding_dict = nn.ModuleDict({f"C{i}": nn.Embedding(vocab, 1) for i in range(n_fields)})
        self.weight = nn.Parameter(torch.randn(n_dense, 1) * 1e-4)

    def forward(self, sparse, dense):
        sparse_embedding_list = [self.embedding_dict[f"C{i}"](sparse[:, i : i + 1]) for i in range(sparse.shape[1])]
        linear_logit = torch.sum(torch.cat(sparse_embedding_list, dim=-1), dim=-1, keepdim=False)
        return linear_logit + dense.matmul(self.weight)


class CIN(nn.Module):
    def __init__(self, field_size, layer_size=(16, 16), split_half=True):
        super().__init__()
        self.layer_size = layer_size
        self.field_nums = [field_size]
        self.split_half = split_half
        self.activation = nn.ReLU()
        self.conv1ds = nn.ModuleList()
        for i, size in enumerate(self.layer_size):
            self.conv1ds.append(nn.Conv1d(self.field_nums[-1] * self.field_nums[0], size, 1))
            if self.split_half and i != len(self.layer_size) - 1:
                self.field_nums.append(size // 2)
            else:
                self.field_nums.append(size)

    def forward(self, inputs):
        batch_size, dim = inputs.shape[0], inputs.shape[-1]
        hidden_nn_layers = [inputs]
        final_result = []
        for i, size in enumerate(self.layer_size):
            x = torch.einsum("bhd,bmd->bhmd", hidden_nn_layers[-1], hidden_nn_layers[0])
            x = x.reshape(batch_size, hidden_nn_layers[-1].shape[1] * hidden_nn_layers[0].shape[1], dim)
            x = self.conv1ds[i](x)
            curr_out = self.activation(x)
            if self.split_half:
                if i != len(self.layer_size) - 1:
                    next_hidden, direct_connect = torch.split(curr_out, 2 * [size // 2], 1)
                else:
                    direct_connect, next_hidden = curr_out, 0
            else:
                direct_connect, next_hidden = curr_out, curr_out
            final_result.append(direct_connect)
            hidden_nn_layers.append(next_hidden)
        result = torch.cat(final_result, dim=1)
        return torch.sum(result, -1)


class DNN(nn.Module):
    def __init__(self, inputs_dim, hidden_units, dropout_rate=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout_rate)
        hidden_units = [inputs_dim] + list(hidden_units)
        self.linears = nn.ModuleList(
            [nn.Linear(hidden_units[i], hidden_units[i + 1]) for i in range(len(hidden_units) - 1)]
        )
        self.activation_layers = nn.ModuleList([nn.ReLU(inplace=True) for _ in range(len(hidden_units) - 1)])

    def forward(self, inputs):
        deep_input = inputs
        for i in range(len(self.linears)):
            fc = self.linears[i](deep_input)
            fc = self.activation_layers[i](fc)
            fc = self.dropout(fc)
            deep_input = fc
        return deep_input


class PredictionLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros((1,)))

    def forward(self, X):
        return torch.sigmoid(X + self.bias)


class xDeepFM(nn.Module):
    def __init__(self, n_fields=8, vocab=100, n_dense=4, emb=8, dnn_hidden_units=(64, 32), cin_layer_size=(16, 16)):
        super().__init__()
        self.embedding_dict = nn.ModuleDict({f"C{i}": nn.Embedding(vocab, emb) for i in range(n_fields)})
        self.linear_model = DeepCTRLinear(n_fields, vocab, n_dense)
        self.dnn = DNN(n_fields * emb + n_dense, dnn_hidden_units)
        self.dnn_linear = nn.Linear(dnn_hidden_units[-1], 1, bias=False)
        self.cin = CIN(n_fields, cin_layer_size)
        featuremap_num = sum(cin_layer_size[:-1]) // 2 + cin_layer_size[-1]
        self.cin_linear = nn.Linear(featuremap_num, 1, bias=False)
        self.out = PredictionLayer()

    def forward(self, sparse, dense):
        sparse_embedding_list = [self.embedding_dict[f"C{i}"](sparse[:, i : i + 1]) for i in range(sparse.shape[1])]
        linear_logit = self.linear_model(sparse, dense)
        cin_input = torch.cat(sparse_embedding_list, dim=1)
        cin_logit = self.cin_linear(self.cin(cin_input))
        dnn_input = torch.cat([torch.flatten(torch.cat(sparse_embedding_list, dim=-1), start_dim=1), dense], dim=-1)
        dnn_logit = self.dnn_linear(self.dnn(dnn_input))
        return self.out(linear_logit + dnn_logit + cin_logit)


def bce_prob(out, target):
    return F.binary_cross_entropy(out, target)


# ---------------------------------------------------------------------------------------
# BST (Behavior Sequence Transformer, as the common PyTorch ports write it): item and
# position embeddings over the behaviour sequence plus the target item, one
# nn.TransformerEncoderLayer, flattened together with user-feature embeddings, then an MLP of
# Linear-LeakyReLU-Dropout.


class BST(nn.Module):
    def __init__(self, n_items=500, n_users=200, n_ages=8, d=32, seq_len=8):
        super().__init__()
        self.embeddings_user_id = nn.Embedding(n_users, d)
        self.embeddings_age = nn.Embedding(n_ages, 8)
        self.embeddings_item_id = nn.Embedding(n_items, d)
        self.positional_embedding = nn.Embedding(seq_len + 1, d)
        self.transfomerlayer = nn.TransformerEncoderLayer(d, 4, dim_feedforward=64, dropout=0.2, batch_first=True)
        self.linear = nn.Sequential(
            nn.Linear((seq_len + 1) * d + d + 8, 128),
            nn.LeakyReLU(),
            nn.Dropout(0.2),
            nn.Linear(128, 64),
            nn.LeakyReLU(),
            nn.Linear(64, 1),
        )

    def forward(self, user_id, age, item_history, target_item):
        items = torch.cat((item_history, target_item[:, None]), dim=1)
        item_embeds = self.embeddings_item_id(items)
        positions = torch.arange(items.size(1)).expand_as(items)
        transformer_features = item_embeds + self.positional_embedding(positions)
        transformer_output = self.transfomerlayer(transformer_features)
        transformer_output = torch.flatten(transformer_output, start_dim=1)
        user_features = torch.cat((self.embeddings_user_id(user_id), self.embeddings_age(age)), dim=1)
        features = torch.cat((transformer_output, user_features), dim=1)
        return self.linear(features).squeeze(-1)


def bce_logits(out, target):
    return F.binary_cross_entropy_with_logits(out, target)


# ---------------------------------------------------------------------------------------
# GatedGCN (benchmarking-gnns' GatedGCNLayer, Bresson & Laurent): A..E Linears, edge gates
# sigmoid(Ce_ij + Dh_i + Eh_j), gated sums by index_add_ normalised by the gate sums,
# BatchNorm1d on nodes and edges, F.relu, residual, F.dropout; embedding_h / embedding_e and
# an MLPReadout.


class GatedGCNLayer(nn.Module):
    def __init__(self, input_dim, output_dim, dropout=0.1, batch_norm=True, residual=True):
        super().__init__()
        self.dropout, self.batch_norm, self.residual = dropout, batch_norm, residual
        self.A = nn.Linear(input_dim, output_dim, bias=True)
        self.B = nn.Linear(input_dim, output_dim, bias=True)
        self.C = nn.Linear(input_dim, output_dim, bias=True)
        self.D = nn.Linear(input_dim, output_dim, bias=True)
        self.E = nn.Linear(input_dim, output_dim, bias=True)
        self.bn_node_h = nn.BatchNorm1d(output_dim)
        self.bn_node_e = nn.BatchNorm1d(output_dim)

    def forward(self, h, e, src, dst):
        h_in, e_in = h, e
        Ah, Bh, Dh, Eh, Ce = self.A(h), self.B(h), self.D(h), self.E(h), self.C(e)
        e = Dh[src] + Eh[dst] + Ce  # edges.src['Dh'] + edges.dst['Eh'] + edges.data['Ce']
        sigma = torch.sigmoid(e)
        sum_sigma_h = torch.zeros_like(Ah).index_add_(0, dst, sigma * Bh[src])
        sum_sigma = torch.zeros_like(Ah).index_add_(0, dst, sigma)
        h = Ah + sum_sigma_h / (sum_sigma + 1e-6)
        if self.batch_norm:
            h = self.bn_node_h(h)
            e = self.bn_node_e(e)
        h, e = F.relu(h), F.relu(e)
        if self.residual:
            h, e = h_in + h, e_in + e
        h = F.dropout(h, self.dropout, training=self.training)
        e = F.dropout(e, self.dropout, training=self.training)
        return h, e


class MLPReadout(nn.Module):
    def __init__(self, input_dim, output_dim, L=2):
        super().__init__()
        list_FC_layers = [nn.Linear(input_dim // 2 ** l, input_dim // 2 ** (l + 1), bias=True) for l in range(L)]
        list_FC_layers.append(nn.Linear(input_dim // 2 ** L, output_dim, bias=True))
        self.FC_layers = nn.ModuleList(list_FC_layers)
        self.L = L

    def forward(self, x):
        y = x
        for l in range(self.L):
            y = F.relu(self.FC_layers[l](y))
        return self.FC_layers[self.L](y)


class GatedGCNNet(nn.Module):
    def __init__(self, in_dim=16, in_dim_edge=4, hidden_dim=32, n_classes=6, L=3):
        super().__init__()
        self.embedding_h = nn.Linear(in_dim, hidden_dim)
        self.embedding_e = nn.Linear(in_dim_edge, hidden_dim)
        self.in_feat_dropout = nn.Dropout(0.0)
        self.layers = nn.ModuleList([GatedGCNLayer(hidden_dim, hidden_dim) for _ in range(L)])
        self.MLP_layer = MLPReadout(hidden_dim, n_classes)

    def forward(self, h, e, src, dst):
        h = self.in_feat_dropout(self.embedding_h(h))
        e = self.embedding_e(e)
        for conv in self.layers:
            h, e = conv(h, e, src, dst)
        return self.MLP_layer(h)


# ---------------------------------------------------------------------------------------
# SchNet (PyTorch Geometric's SchNet): atom-type Embedding, GaussianSmearing RBF expansion of
# the interatomic distances, interaction blocks (CFConv: a filter network Linear-
# ShiftedSoftplus-Linear times a cosine cutoff, lin1, neighbours gathered by index, summed by
# index_add_, lin2; then ShiftedSoftplus and lin) added residually, lin1 / act / lin2 and a
# sum readout per molecule.


class ShiftedSoftplus(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = torch.log(torch.tensor(2.0)).item()

    def forward(self, x):
        return F.softplus(x) - self.shift


class GaussianSmearing(nn.Module):
    def __init__(self, start=0.0, stop=5.0, num_gaussians=25):
        super().__init__()
        offset = torch.linspace(start, stop, num_gaussians)
        self.coeff = -0.5 / (offset[1] - offset[0]).item() ** 2
        self.register_buffer("offset", offset)

    def forward(self, dist):
        dist = dist.view(-1, 1) - self.offset.view(1, -1)
        return torch.exp(self.coeff * torch.pow(dist, 2))


class CFConv(nn.Module):
    def __init__(self, in_channels, out_channels, num_filters, nn_, cutoff):
        super().__init__()
        self.lin1 = nn.Linear(in_channels, num_filters, bias=False)
        self.lin2 = nn.Linear(num_filters, out_channels)
        self.nn = nn_
        self.cutoff = cutoff

    def forward(self, x, edge_index, edge_weight, edge_attr):
        C = 0.5 * (torch.cos(edge_weight * math.pi / self.cutoff) + 1.0)
        W = self.nn(edge_attr) * C.view(-1, 1)
        x = self.lin1(x)
        x_j = x.index_select(0, edge_index[0])  # propagate: message x_j * W, aggr "add"
        x = torch.zeros_like(x).index_add_(0, edge_index[1], x_j * W)
        return self.lin2(x)


class InteractionBlock(nn.Module):
    def __init__(self, hidden_channels, num_gaussians, num_filters, cutoff):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(num_gaussians, num_filters), ShiftedSoftplus(), nn.Linear(num_filters, num_filters)
        )
        self.conv = CFConv(hidden_channels, hidden_channels, num_filters, self.mlp, cutoff)
        self.act = ShiftedSoftplus()
        self.lin = nn.Linear(hidden_channels, hidden_channels)

    def forward(self, x, edge_index, edge_weight, edge_attr):
        x = self.conv(x, edge_index, edge_weight, edge_attr)
        x = self.act(x)
        return self.lin(x)


class SchNet(nn.Module):
    def __init__(self, hidden_channels=64, num_filters=64, num_interactions=3, num_gaussians=25, cutoff=5.0):
        super().__init__()
        self.embedding = nn.Embedding(100, hidden_channels, padding_idx=0)
        self.distance_expansion = GaussianSmearing(0.0, cutoff, num_gaussians)
        self.interactions = nn.ModuleList(
            [InteractionBlock(hidden_channels, num_gaussians, num_filters, cutoff) for _ in range(num_interactions)]
        )
        self.lin1 = nn.Linear(hidden_channels, hidden_channels // 2)
        self.act = ShiftedSoftplus()
        self.lin2 = nn.Linear(hidden_channels // 2, 1)

    def forward(self, z, pos, edge_index, batch, n_graphs):
        h = self.embedding(z)
        row, col = edge_index
        edge_weight = (pos[row] - pos[col]).norm(dim=-1)
        edge_attr = self.distance_expansion(edge_weight)
        for interaction in self.interactions:
            h = h + interaction(h, edge_index, edge_weight, edge_attr)
        h = self.lin1(h)
        h = self.act(h)
        h = self.lin2(h)
        return torch.zeros(n_graphs, 1).index_add_(0, batch, h).squeeze(-1)


# ---------------------------------------------------------------------------------------
# RWKV (transformers' RwkvForCausalLM, RWKV-4): token shift by nn.ZeroPad2d, time_mix_*
# coefficients, key / value / receptance Linears, the WKV recurrence in a Python loop
# (rwkv_linear_attention_cpu), squared-ReLU channel mixing, pre_ln in the first block only.


def rwkv_linear_attention_cpu(time_decay, time_first, key, value):
    _, seq_length, _ = key.size()
    output = torch.zeros_like(key)
    num_state = torch.zeros_like(key[:, 0], dtype=torch.float32)
    den_state = torch.zeros_like(key[:, 0], dtype=torch.float32)
    max_state = torch.zeros_like(key[:, 0], dtype=torch.float32) - 1e38
    time_decay = -torch.exp(time_decay)
    for current_index in range(seq_length):
        current_key = key[:, current_index].float()
        current_value = value[:, current_index]
        max_for_output = torch.maximum(max_state, current_key + time_first)
        e1 = torch.exp(max_state - max_for_output)
        e2 = torch.exp(current_key + time_first - max_for_output)
        numerator = e1 * num_state + e2 * current_value
        denominator = e1 * den_state + e2
        output[:, current_index] = (numerator / denominator).to(output.dtype)
        max_for_state = torch.maximum(max_state + time_decay, current_key)
        e1 = torch.exp(max_state + time_decay - max_for_state)
        e2 = torch.exp(current_key - max_for_state)
        num_state = e1 * num_state + e2 * current_value
        den_state = e1 * den_state + e2
        max_state = max_for_state
    return output


class RwkvSelfAttention(nn.Module):
    def __init__(self, hidden_size, layer_id, num_layers):
        super().__init__()
        ratio = 1.0 - layer_id / num_layers
        ramp = torch.arange(hidden_size).float() / hidden_size
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.time_decay = nn.Parameter(-5 + 8 * ramp)
        self.time_first = nn.Parameter(torch.full((hidden_size,), math.log(0.3)))
        self.time_mix_key = nn.Parameter(torch.pow(ramp, ratio)[None, None])
        self.time_mix_value = nn.Parameter((torch.pow(ramp, ratio) + 0.3 * ratio)[None, None])
        self.time_mix_receptance = nn.Parameter(torch.pow(ramp, 0.5 * ratio)[None, None])
        self.key = nn.Linear(hidden_size, hidden_size, bias=False)
        self.value = nn.Linear(hidden_size, hidden_size, bias=False)
        self.receptance = nn.Linear(hidden_size, hidden_size, bias=False)
        self.output = nn.Linear(hidden_size, hidden_size, bias=False)

    def extract_key_value(self, hidden):
        shifted = self.time_shift(hidden)
        key = hidden * self.time_mix_key + shifted * (1 - self.time_mix_key)
        value = hidden * self.time_mix_value + shifted * (1 - self.time_mix_value)
        receptance = hidden * self.time_mix_receptance + shifted * (1 - self.time_mix_receptance)
        key = self.key(key)
        value = self.value(value)
        receptance = torch.sigmoid(self.receptance(receptance))
        return receptance, key, value

    def forward(self, hidden):
        receptance, key, value = self.extract_key_value(hidden)
        rwkv = rwkv_linear_attention_cpu(self.time_decay, self.time_first, key, value)
        return self.output(receptance * rwkv)


class RwkvFeedForward(nn.Module):
    def __init__(self, hidden_size, intermediate_size, layer_id, num_layers):
        super().__init__()
        ratio = 1.0 - layer_id / num_layers
        ramp = torch.arange(hidden_size).float() / hidden_size
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.time_mix_key = nn.Parameter(torch.pow(ramp, ratio)[None, None])
        self.time_mix_receptance = nn.Parameter(torch.pow(ramp, ratio)[None, None])
        self.key = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.receptance = nn.Linear(hidden_size, hidden_size, bias=False)
        self.value = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, hidden):
        shifted = self.time_shift(hidden)
        key = hidden * self.time_mix_key + shifted * (1 - self.time_mix_key)
        receptance = hidden * self.time_mix_receptance + shifted * (1 - self.time_mix_receptance)
        key = torch.square(torch.relu(self.key(key)))
        value = self.value(key)
        receptance = torch.sigmoid(self.receptance(receptance))
        return receptance * value


class RwkvBlock(nn.Module):
    def __init__(self, hidden_size, layer_id, num_layers):
        super().__init__()
        self.layer_id = layer_id
        if layer_id == 0:
            self.pre_ln = nn.LayerNorm(hidden_size)
        self.ln1 = nn.LayerNorm(hidden_size)
        self.ln2 = nn.LayerNorm(hidden_size)
        self.attention = RwkvSelfAttention(hidden_size, layer_id, num_layers)
        self.feed_forward = RwkvFeedForward(hidden_size, 4 * hidden_size, layer_id, num_layers)

    def forward(self, hidden):
        if self.layer_id == 0:
            hidden = self.pre_ln(hidden)
        hidden = hidden + self.attention(self.ln1(hidden))
        return hidden + self.feed_forward(self.ln2(hidden))


class RwkvModel(nn.Module):
    def __init__(self, vocab, hidden_size, num_layers):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden_size)
        self.blocks = nn.ModuleList([RwkvBlock(hidden_size, i, num_layers) for i in range(num_layers)])
        self.ln_out = nn.LayerNorm(hidden_size)

    def forward(self, input_ids):
        hidden_states = self.embeddings(input_ids)
        for block in self.blocks:
            hidden_states = block(hidden_states)
        return self.ln_out(hidden_states)


class RwkvForCausalLM(nn.Module):
    def __init__(self, vocab=400, hidden_size=64, num_layers=3):
        super().__init__()
        self.rwkv = RwkvModel(vocab, hidden_size, num_layers)
        self.head = nn.Linear(hidden_size, vocab, bias=False)

    def forward(self, input_ids):
        return self.head(self.rwkv(input_ids))


# ---------------------------------------------------------------------------------------
# UNet++ (the NestedUNet of the common pytorch-nested-unet code): VGGBlocks (one ReLU module
# called twice), a shared MaxPool2d and a shared bilinear nn.Upsample, the nested dense skips
# x{i}_{j} = conv(cat(x{i}_0..x{i}_{j-1}, up(x{i+1}_{j-1}))), a 1x1 final conv.


class VGGBlock(nn.Module):
    def __init__(self, in_channels, middle_channels, out_channels):
        super().__init__()
        self.relu = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(in_channels, middle_channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(middle_channels)
        self.conv2 = nn.Conv2d(middle_channels, out_channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)))


class NestedUNet(nn.Module):
    def __init__(self, num_classes=3, input_channels=3, nb_filter=(8, 16, 32, 64, 128)):
        super().__init__()
        f = nb_filter
        self.pool = nn.MaxPool2d(2, 2)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv0_0 = VGGBlock(input_channels, f[0], f[0])
        self.conv1_0 = VGGBlock(f[0], f[1], f[1])
        self.conv2_0 = VGGBlock(f[1], f[2], f[2])
        self.conv3_0 = VGGBlock(f[2], f[3], f[3])
        self.conv4_0 = VGGBlock(f[3], f[4], f[4])
        self.conv0_1 = VGGBlock(f[0] + f[1], f[0], f[0])
        self.conv1_1 = VGGBlock(f[1] + f[2], f[1], f[1])
        self.conv2_1 = VGGBlock(f[2] + f[3], f[2], f[2])
        self.conv3_1 = VGGBlock(f[3] + f[4], f[3], f[3])
        self.conv0_2 = VGGBlock(f[0] * 2 + f[1], f[0], f[0])
        self.conv1_2 = VGGBlock(f[1] * 2 + f[2], f[1], f[1])
        self.conv2_2 = VGGBlock(f[2] * 2 + f[3], f[2], f[2])
        self.conv0_3 = VGGBlock(f[0] * 3 + f[1], f[0], f[0])
        self.conv1_3 = VGGBlock(f[1] * 3 + f[2], f[1], f[1])
        self.conv0_4 = VGGBlock(f[0] * 4 + f[1], f[0], f[0])
        self.final = nn.Conv2d(f[0], num_classes, kernel_size=1)

    def forward(self, input):
        x0_0 = self.conv0_0(input)
        x1_0 = self.conv1_0(self.pool(x0_0))
        x0_1 = self.conv0_1(torch.cat([x0_0, self.up(x1_0)], 1))
        x2_0 = self.conv2_0(self.pool(x1_0))
        x1_1 = self.conv1_1(torch.cat([x1_0, self.up(x2_0)], 1))
        x0_2 = self.conv0_2(torch.cat([x0_0, x0_1, self.up(x1_1)], 1))
        x3_0 = self.conv3_0(self.pool(x2_0))
        x2_1 = self.conv2_1(torch.cat([x2_0, self.up(x3_0)], 1))
        x1_2 = self.conv1_2(torch.cat([x1_0, x1_1, self.up(x2_1)], 1))
        x0_3 = self.conv0_3(torch.cat([x0_0, x0_1, x0_2, self.up(x1_2)], 1))
        x4_0 = self.conv4_0(self.pool(x3_0))
        x3_1 = self.conv3_1(torch.cat([x3_0, self.up(x4_0)], 1))
        x2_2 = self.conv2_2(torch.cat([x2_0, x2_1, self.up(x3_1)], 1))
        x1_3 = self.conv1_3(torch.cat([x1_0, x1_1, x1_2, self.up(x2_2)], 1))
        x0_4 = self.conv0_4(torch.cat([x0_0, x0_1, x0_2, x0_3, self.up(x1_3)], 1))
        return self.final(x0_4)


# ---------------------------------------------------------------------------------------
# NeRF (nerf-pytorch): the positional encoding is a plain Embedder object (sin/cos of
# 2^k-scaled inputs, not a module), the NeRF MLP has 8 pts_linears with F.relu and the input
# concatenated again after layer 4, alpha_linear, feature_linear, a views_linears branch on the
# encoded view directions and rgb_linear; raw2outputs does the volume rendering.


class Embedder:
    def __init__(self, input_dims, multires):
        self.embed_fns = [lambda x: x]
        freq_bands = 2.0 ** torch.linspace(0.0, multires - 1, steps=multires)
        for freq in freq_bands:
            for p_fn in (torch.sin, torch.cos):
                self.embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
        self.out_dim = input_dims * len(self.embed_fns)

    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)


class NeRF(nn.Module):
    def __init__(self, D=8, W=64, input_ch=3, input_ch_views=3, output_ch=4, skips=(4,), use_viewdirs=True):
        super().__init__()
        self.D, self.W = D, W
        self.input_ch, self.input_ch_views = input_ch, input_ch_views
        self.skips = list(skips)
        self.use_viewdirs = use_viewdirs
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)]
            + [nn.Linear(W, W) if i not in self.skips else nn.Linear(W + input_ch, W) for i in range(D - 1)]
        )
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
        if use_viewdirs:
            self.feature_linear = nn.Linear(W, W)
            self.alpha_linear = nn.Linear(W, 1)
            self.rgb_linear = nn.Linear(W // 2, 3)
        else:
            self.output_linear = nn.Linear(W, output_ch)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, l in enumerate(self.pts_linears):
            h = F.relu(self.pts_linears[i](h))
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        alpha = self.alpha_linear(h)
        feature = self.feature_linear(h)
        h = torch.cat([feature, input_views], -1)
        for i, l in enumerate(self.views_linears):
            h = F.relu(self.views_linears[i](h))
        rgb = self.rgb_linear(h)
        return torch.cat([rgb, alpha], -1)


class NeRFRenderer(nn.Module):
    """render_rays for one coarse network: sample points, encode, query, raw2outputs."""

    def __init__(self, n_samples=16, multires=6, multires_views=3):
        super().__init__()
        self.embed_fn = Embedder(3, multires)
        self.embeddirs_fn = Embedder(3, multires_views)
        self.model = NeRF(input_ch=self.embed_fn.out_dim, input_ch_views=self.embeddirs_fn.out_dim)
        self.n_samples = n_samples

    def forward(self, rays_o, rays_d, near=2.0, far=6.0):
        viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
        t_vals = torch.linspace(0.0, 1.0, steps=self.n_samples)
        z_vals = (near * (1.0 - t_vals) + far * t_vals).expand(rays_o.shape[0], self.n_samples)
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
        # run_network
        inputs_flat = pts.reshape(-1, pts.shape[-1])
        embedded = self.embed_fn.embed(inputs_flat)
        input_dirs = viewdirs[:, None].expand(pts.shape).reshape(-1, 3)
        embedded = torch.cat([embedded, self.embeddirs_fn.embed(input_dirs)], -1)
        raw = self.model(embedded).reshape(list(pts.shape[:-1]) + [4])
        # raw2outputs
        dists = z_vals[..., 1:] - z_vals[..., :-1]
        dists = torch.cat([dists, torch.tensor([1e10]).expand(dists[..., :1].shape)], -1)
        dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
        rgb = torch.sigmoid(raw[..., :3])
        alpha = 1.0 - torch.exp(-F.relu(raw[..., 3]) * dists)
        weights = alpha * torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
        return torch.sum(weights[..., None] * rgb, -2)


# ---------------------------------------------------------------------------------------
# ConvLSTM (the common ConvLSTM_pytorch code): ConvLSTMCell is one Conv2d over
# cat(input, h) split into i, f, o, g; ConvLSTM unrolls a cell_list over the frames layer by
# layer; a next-frame model puts a conv head on the last hidden state.


class ConvLSTMCell(nn.Module):
    def __init__(self, input_dim, hidden_dim, kernel_size, bias=True):
        super().__init__()
        self.input_dim, self.hidden_dim = input_dim, hidden_dim
        self.padding = kernel_size[0] // 2, kernel_size[1] // 2
        self.conv = nn.Conv2d(input_dim + hidden_dim, 4 * hidden_dim, kernel_size, padding=self.padding, bias=bias)

    def forward(self, input_tensor, cur_state):
        h_cur, c_cur = cur_state
        combined = torch.cat([input_tensor, h_cur], dim=1)
        combined_conv = self.conv(combined)
        cc_i, cc_f, cc_o, cc_g = torch.split(combined_conv, self.hidden_dim, dim=1)
        i = torch.sigmoid(cc_i)
        f = torch.sigmoid(cc_f)
        o = torch.sigmoid(cc_o)
        g = torch.tanh(cc_g)
        c_next = f * c_cur + i * g
        h_next = o * torch.tanh(c_next)
        return h_next, c_next

    def init_hidden(self, batch_size, image_size):
        height, width = image_size
        return (torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device),
                torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device))


class ConvLSTM(nn.Module):
    def __init__(self, input_dim, hidden_dim, kernel_size, num_layers, batch_first=True, bias=True):
        super().__init__()
        self.num_layers, self.batch_first = num_layers, batch_first
        self.cell_list = nn.ModuleList(
            [ConvLSTMCell(input_dim if i == 0 else hidden_dim[i - 1], hidden_dim[i], kernel_size, bias)
             for i in range(num_layers)]
        )

    def forward(self, input_tensor):
        if not self.batch_first:
            input_tensor = input_tensor.permute(1, 0, 2, 3, 4)
        b, _, _, h, w = input_tensor.size()
        seq_len = input_tensor.size(1)
        cur_layer_input = input_tensor
        layer_output_list, last_state_list = [], []
        for layer_idx in range(self.num_layers):
            h_, c = self.cell_list[layer_idx].init_hidden(b, (h, w))
            output_inner = []
            for t in range(seq_len):
                h_, c = self.cell_list[layer_idx](input_tensor=cur_layer_input[:, t, :, :, :], cur_state=[h_, c])
                output_inner.append(h_)
            layer_output = torch.stack(output_inner, dim=1)
            cur_layer_input = layer_output
            layer_output_list.append(layer_output)
            last_state_list.append([h_, c])
        return layer_output_list[-1:], last_state_list[-1:]


class ConvLSTMNextFrame(nn.Module):
    def __init__(self, channels=1, hidden=(16, 16)):
        super().__init__()
        self.convlstm = ConvLSTM(channels, list(hidden), (3, 3), len(hidden))
        self.head = nn.Sequential(nn.Conv2d(hidden[-1], 16, 3, padding=1), nn.ReLU(inplace=True),
                                  nn.Conv2d(16, channels, 1))

    def forward(self, frames):
        _, last_states = self.convlstm(frames)
        return torch.sigmoid(self.head(last_states[0][0]))


# ---------------------------------------------------------------------------------------
# ResNeSt (the ResNeSt reference code, resnet.py and splat.py): a deep stem, bottlenecks whose
# 3x3 conv is SplAtConv2d (radix-grouped conv, bn0, ReLU, the radix splits summed, adaptive
# average pooling, fc1-bn1-ReLU-fc2 as 1x1 convs, rSoftMax over the radix, weighted sum), avd
# average-pool downsampling after it, avg_down shortcuts, GlobalAvgPool2d.


class rSoftMax(nn.Module):
    def __init__(self, radix, cardinality):
        super().__init__()
        self.radix, self.cardinality = radix, cardinality

    def forward(self, x):
        batch = x.size(0)
        if self.radix > 1:
            x = x.view(batch, self.cardinality, self.radix, -1).transpose(1, 2)
            x = F.softmax(x, dim=1)
            return x.reshape(batch, -1)
        return torch.sigmoid(x)


class SplAtConv2d(nn.Module):
    def __init__(self, in_channels, channels, kernel_size, stride=1, padding=0, groups=1, bias=True, radix=2,
                 reduction_factor=4):
        super().__init__()
        inter_channels = max(in_channels * radix // reduction_factor, 32)
        self.radix, self.cardinality, self.channels = radix, groups, channels
        self.conv = nn.Conv2d(in_channels, channels * radix, kernel_size, stride, padding, groups=groups * radix,
                              bias=bias)
        self.bn0 = nn.BatchNorm2d(channels * radix)
        self.relu = nn.ReLU(inplace=True)
        self.fc1 = nn.Conv2d(channels, inter_channels, 1, groups=self.cardinality)
        self.bn1 = nn.BatchNorm2d(inter_channels)
        self.fc2 = nn.Conv2d(inter_channels, channels * radix, 1, groups=self.cardinality)
        self.rsoftmax = rSoftMax(radix, groups)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn0(x)
        x = self.relu(x)
        batch, rchannel = x.shape[:2]
        splited = torch.split(x, rchannel // self.radix, dim=1)
        gap = sum(splited)
        gap = F.adaptive_avg_pool2d(gap, 1)
        gap = self.fc1(gap)
        gap = self.bn1(gap)
        gap = self.relu(gap)
        atten = self.fc2(gap)
        atten = self.rsoftmax(atten).view(batch, -1, 1, 1)
        attens = torch.split(atten, rchannel // self.radix, dim=1)
        out = sum([att * split for (att, split) in zip(attens, splited)])
        return out.contiguous()


class ResNeStBottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, radix=2, cardinality=1, bottleneck_width=64):
        super().__init__()
        group_width = int(planes * (bottleneck_width / 64.0)) * cardinality
        self.conv1 = nn.Conv2d(inplanes, group_width, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(group_width)
        self.radix = radix
        self.avd = stride > 1
        if self.avd:
            self.avd_layer = nn.AvgPool2d(3, stride, padding=1)
            stride = 1
        self.conv2 = SplAtConv2d(group_width, group_width, kernel_size=3, stride=stride, padding=1,
                                 groups=cardinality, bias=False, radix=radix)
        self.conv3 = nn.Conv2d(group_width, planes * 4, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        if self.avd:
            out = self.avd_layer(out)
        out = self.conv3(out)
        out = self.bn3(out)
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        return self.relu(out)


class GlobalAvgPool2d(nn.Module):
    def forward(self, inputs):
        return F.adaptive_avg_pool2d(inputs, 1).view(inputs.size(0), -1)


class ResNeSt(nn.Module):
    def __init__(self, layers=(1, 1, 1, 1), planes=(8, 16, 32, 64), stem_width=8, num_classes=10):
        super().__init__()
        self.inplanes = stem_width * 2
        self.conv1 = nn.Sequential(
            nn.Conv2d(3, stem_width, kernel_size=3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(stem_width),
            nn.ReLU(inplace=True),
            nn.Conv2d(stem_width, stem_width, kernel_size=3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(stem_width),
            nn.ReLU(inplace=True),
            nn.Conv2d(stem_width, stem_width * 2, kernel_size=3, stride=1, padding=1, bias=False),
        )
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(planes[0], layers[0])
        self.layer2 = self._make_layer(planes[1], layers[1], stride=2)
        self.layer3 = self._make_layer(planes[2], layers[2], stride=2)
        self.layer4 = self._make_layer(planes[3], layers[3], stride=2)
        self.avgpool = GlobalAvgPool2d()
        self.fc = nn.Linear(planes[3] * ResNeStBottleneck.expansion, num_classes)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * ResNeStBottleneck.expansion:
            down_layers = []
            if stride != 1:
                down_layers.append(nn.AvgPool2d(kernel_size=stride, stride=stride, ceil_mode=True,
                                                count_include_pad=False))
            else:
                down_layers.append(nn.AvgPool2d(kernel_size=1, stride=1, ceil_mode=True, count_include_pad=False))
            down_layers.append(nn.Conv2d(self.inplanes, planes * ResNeStBottleneck.expansion, 1, bias=False))
            down_layers.append(nn.BatchNorm2d(planes * ResNeStBottleneck.expansion))
            downsample = nn.Sequential(*down_layers)
        layers = [ResNeStBottleneck(self.inplanes, planes, stride, downsample=downsample)]
        self.inplanes = planes * ResNeStBottleneck.expansion
        for _ in range(1, blocks):
            layers.append(ResNeStBottleneck(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


# ---------------------------------------------------------------------------------------
# builders


def b_opt():
    ids = randint(512, 4, 24)
    mask = torch.ones(4, 24, dtype=torch.long)
    mask[1, 20:] = 0
    return dict(model=OPTForCausalLM(), inputs=(ids, mask), target=randint(512, 4, 24, seed=3), loss=ce_tokens)


def b_bloom():
    ids = randint(512, 4, 24)
    mask = torch.ones(4, 24, dtype=torch.long)
    mask[2, 18:] = 0
    return dict(model=BloomForCausalLM(), inputs=(ids, mask), target=randint(512, 4, 24, seed=3), loss=ce_tokens)


def b_distilbert():
    ids = randint(600, 8, 24)
    mask = torch.ones(8, 24, dtype=torch.long)
    mask[::2, 16:] = 0
    return dict(
        model=DistilBertForSequenceClassification(), inputs=(ids, mask), target=randint(3, 8, seed=3), loss=ce
    )


def b_deberta():
    ids = randint(600, 8, 24)
    mask = torch.ones(8, 24, dtype=torch.long)
    mask[1::2, 18:] = 0
    return dict(
        model=DebertaForSequenceClassification(), inputs=(ids, mask), target=randint(3, 8, seed=3), loss=ce
    )


def b_image(make, batch=4, hw=32):
    return lambda: dict(model=make(), inputs=(randn(batch, 3, hw, hw),), target=randint(10, batch, seed=3), loss=ce)


def b_fastspeech():
    texts = randint(99, 2, 12) + 1
    texts[1, 10:] = 0
    d = torch.tensor([[2] * 12, [1, 3] * 5 + [0, 0]])
    return dict(model=FastSpeech(), inputs=(texts, d), target=(randn(2, 24, 20, seed=3), d), loss=fastspeech_loss)


def b_tacotron():
    text = randint(59, 2, 10) + 1
    lengths = torch.tensor([10, 8])
    text[1, 8:] = 0
    mels = randn(2, 16, 6, seed=3)
    gate = torch.zeros(2, 6)
    gate[:, -1] = 1
    return dict(model=Tacotron2(), inputs=(text, lengths, mels), target=(mels, gate), loss=tacotron2_loss)


def b_xdeepfm():
    return dict(
        model=xDeepFM(),
        inputs=(randint(100, 64, 8), randn(64, 4, seed=3)),
        target=randint(2, 64, 1, seed=4).float(),
        loss=bce_prob,
    )


def b_bst():
    return dict(
        model=BST(),
        inputs=(randint(200, 32), randint(8, 32, seed=3), randint(500, 32, 8, seed=4), randint(500, 32, seed=5)),
        target=randint(2, 32, seed=6).float(),
        loss=bce_logits,
    )


def b_gated_gcn():
    n, m = 256, 1024
    return dict(
        model=GatedGCNNet(),
        inputs=(randn(n, 16), randn(m, 4, seed=3), randint(n, m, seed=4), randint(n, m, seed=5)),
        target=randint(6, n, seed=6),
        loss=ce,
    )


def b_schnet():
    graphs, atoms = 4, 12
    n = graphs * atoms
    ids = torch.arange(atoms)
    pairs = torch.stack(torch.meshgrid(ids, ids, indexing="ij")).reshape(2, -1)
    pairs = pairs[:, pairs[0] != pairs[1]]
    edge_index = torch.cat([pairs + g * atoms for g in range(graphs)], 1)
    batch = torch.arange(graphs).repeat_interleave(atoms)
    return dict(
        model=SchNet(),
        inputs=(randint(9, n) + 1, randn(n, 3, seed=3) * 1.5, edge_index, batch, graphs),
        target=randn(graphs, seed=4),
        loss=mse,
    )


def b_nerf():
    rays_o = randn(64, 3) * 0.1
    rays_d = randn(64, 3, seed=3)
    return dict(model=NeRFRenderer(), inputs=(rays_o, rays_d), target=torch.rand(64, 3, generator=torch.Generator().manual_seed(4)), loss=mse)


def b_convlstm():
    frames = torch.rand(2, 5, 1, 16, 16, generator=torch.Generator().manual_seed(1))
    target = torch.rand(2, 1, 16, 16, generator=torch.Generator().manual_seed(3))
    return dict(model=ConvLSTMNextFrame(), inputs=(frames,), target=target, loss=mse)


def b_tvseg(fn):
    def build():
        model = fn(weights=None, weights_backbone=None, num_classes=4, aux_loss=False)
        return dict(model=model, inputs=(randn(2, 3, 64, 64),), target=randint(4, 2, 64, 64, seed=3), loss=ce_seg)

    return build


REGISTRY = [
    ("opt_like", "gpt", "adamw", b_opt),
    (
        "falcon_like",
        "llm",
        "adamw",
        lambda: dict(
            model=FalconForCausalLM(), inputs=(randint(512, 4, 24),), target=randint(512, 4, 24, seed=3), loss=ce_tokens
        ),
    ),
    ("bloom_like", "llm", "adamw", b_bloom),
    ("distilbert_hf", "bert", "adamw", b_distilbert),
    (
        "deit_tiny",
        "vit",
        "adamw",
        lambda: dict(
            model=VisionTransformerDistilled(), inputs=(randn(4, 3, 32, 32),), target=randint(10, 4, seed=3), loss=ce
        ),
    ),
    ("fcn_resnet50", "segmentation", "sgd", b_tvseg(tvseg.fcn_resnet50)),
    ("deberta_like", "bert", "adamw", b_deberta),
    ("cait_like", "vit", "adamw", b_image(Cait)),
    ("beit_like", "vit", "adamw", b_image(Beit)),
    ("gmlp", "mixer", "adamw", b_image(lambda: MlpMixer(SpatialGatingBlock, lambda d: nn.LayerNorm(d, eps=1e-6)))),
    ("resmlp", "mixer", "adamw", b_image(lambda: MlpMixer(ResBlock, Affine))),
    ("mobilevit_like", "hybrid", "adamw", b_image(MobileViTForImageClassification, batch=2, hw=64)),
    ("fastspeech_like", "speech", "adam", b_fastspeech),
    ("tacotron_like", "speech", "adam", b_tacotron),
    ("xdeepfm", "recsys", "adam", b_xdeepfm),
    ("bst", "recsys", "adam", b_bst),
    ("gated_gcn", "gnn", "adam", b_gated_gcn),
    ("schnet_like", "gnn", "adam", b_schnet),
    (
        "rwkv_like",
        "rnn",
        "adamw",
        lambda: dict(
            model=RwkvForCausalLM(), inputs=(randint(400, 4, 12),), target=randint(400, 4, 12, seed=3), loss=ce_tokens
        ),
    ),
    ("deeplabv3_resnet50", "segmentation", "sgd", b_tvseg(tvseg.deeplabv3_resnet50)),
    (
        "unet_plusplus",
        "unet",
        "adam",
        lambda: dict(
            model=NestedUNet(), inputs=(randn(2, 3, 32, 32),), target=randint(3, 2, 32, 32, seed=3), loss=ce_seg
        ),
    ),
    ("nerf_mlp", "mlp", "adam", b_nerf),
    ("convlstm", "rnn", "adam", b_convlstm),
    ("resnest_like", "residual", "sgd", b_image(ResNeSt, batch=2, hw=64)),
]

SPLIT_RULE = (
    "every model is tune: this corpus was recorded after the layer inference's rules as a check "
    "on variants of common families, measured once so (README), then tuned on; tests/data/"
    "corpus-cpu-fresh is the check now. It shares no model name with tests/data/corpus-cpu, "
    "corpus-cpu-modern, corpus-cpu-families or corpus-cpu-heldout"
)

VARIANTS = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants.py",
    os.path.join(DATA, "corpus-cpu-variants"),
    [
        os.path.join(DATA, "corpus-cpu"),
        os.path.join(DATA, "corpus-cpu-modern"),
        os.path.join(DATA, "corpus-cpu-families"),
        os.path.join(DATA, "corpus-cpu-heldout"),
    ],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS)
