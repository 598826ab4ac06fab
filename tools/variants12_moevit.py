"""Strata's twelfth variants CPU corpus, part "moevit": a mixture-of-experts LM and a cross-covariance ViT.

Hugging Face transformers' DBRX (models/dbrx/modeling_dbrx.py): DbrxForCausalLM of transformer, a
DbrxModel (wte, the embedding dropout, the 4D causal mask built from the 2D attention mask by
_update_causal_mask, blocks, a ModuleList of DbrxBlocks, norm_f, a bias-free LayerNorm) and a
bias-free lm_head. DbrxBlock: norm_attn_norm (DbrxNormAttentionNorm: residual, norm_1, attn,
dropout, the residual sum, then norm_2 with the new residual handed back), ffn (DbrxFFN: router,
DbrxRouter: layer, a Linear to the experts, softmax in float32, topk, the top weights divided by
their p-norm; experts, DbrxExperts: the one-hot expert mask permuted, mlp, a DbrxExpertGLU whose
w1, v1 and w2 are nn.Parameters of (num_experts * ffn_hidden, hidden), viewed per expert and
chunked; per expert torch.where, the tokens gathered, x @ w1.t(), SiLU, * (x @ v1.t()), @ w2, times
the top weight, index_add_ into the output), the residual dropout and the residual sum.
DbrxAttention: the fused Wqkv, its clamp to clip_qkv, the split into query, key and value, views
and transposes, rotary_emb (DbrxRotaryEmbedding under no_grad: inv_freq @ positions, cat, cos,
sin), rotate_half, repeat_kv of the grouped key and value heads, matmul / sqrt(head_dim), the
causal mask added, softmax in float32, dropout, matmul, transpose, reshape, out_proj. The loss is
the causal LM shifted cross entropy DbrxForCausalLM computes from its labels.

timm's XCiT (timm/models/xcit.py, with ClassAttn from timm/models/cait.py): Xcit of patch_embed
(ConvPatchEmbed: proj, a Sequential of conv3x3 stages, each a Sequential of a bias-free stride-2
Conv2d and a BatchNorm2d, with GELUs between; flatten and transpose to tokens), pos_embed
(PositionalEncodingFourier: sine and cosine features of the normalised grid by arange, stack and
cat, token_projection, a 1x1 Conv2d, repeated over the batch) added to the tokens, pos_drop,
blocks (XCABlocks: norm1, attn, XCA: qkv, reshape and permute to (3, B, heads, channels, N),
unbind, q and k L2-normalised along the tokens, q @ k^T times the per-head temperature, softmax
over the channel-channel matrix, attn_drop, @ v, permute, proj, proj_drop; gamma1 layer scale and
drop_path; norm3 and local_mp, LPI: the tokens to a map, a depthwise conv1, act, bn, depthwise
conv2, back to tokens; gamma3; norm2, mlp, gamma2), the class token concatenated, cls_attn_blocks
(ClassAttentionBlocks: norm1, attn, ClassAttn: q from the class token only, k and v from all
tokens, scaled softmax, attn_drop, proj; cat with the other normed tokens, gamma1, drop_path;
norm2 on the class token only, mlp on it, gamma2, cat, the residual sum), norm, the class token,
head_drop and head. Cross entropy.
"""

import math, os, sys  # noqa: E401
from dataclasses import dataclass, field
from functools import partial
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_cpu_heldout as rh  # noqa: E402,F401
from record_cpu_corpus import ce, mse, randint, randn  # noqa: E402,F401
import torch, torch.nn as nn, torch.nn.functional as F  # noqa: E401,E402
from record_cpu_variants2 import DropPath  # noqa: E402  (timm's DropPath / drop_path)
# transformers' Llama helpers, which DBRX's modeling file copies
from record_cpu_variants2 import apply_rotary_pos_emb, repeat_kv  # noqa: E402


# ---------------------------------------------------------------------------------------
# DBRX as Hugging Face transformers writes it (src/transformers/models/dbrx/modeling_dbrx.py:
# DbrxForCausalLM, DbrxModel, DbrxBlock, DbrxNormAttentionNorm, DbrxAttention (the "eager" class of
# DBRX_ATTENTION_CLASSES), DbrxRotaryEmbedding, rotate_half, apply_rotary_pos_emb, repeat_kv,
# DbrxFFN, DbrxRouter, DbrxExperts, DbrxExpertGLU; DbrxConfig / DbrxAttentionConfig /
# DbrxFFNConfig as small dataclasses). Scaled down: d_model 32, 2 blocks, 4 heads of 8 with
# kv_n_heads 2 (GQA, repeat_kv by 2), clip_qkv 8 (dbrx-base's), ffn_hidden_size 64, 4 experts
# top-2, moe_normalize_expert_weights 1 (DBRX's L1 renormalisation), vocab 128, batch 2 x 12
# tokens. Left out: the KV cache (use_cache off, as in training), the flash/sdpa attention
# classes, gradient checkpointing, moe_jitter_eps (None by default) and the router aux loss
# (output_router_logits off by default). torch 1.13's nn.LayerNorm has no bias argument, so
# DBRX's nn.LayerNorm(d_model, bias=False) is an nn.LayerNorm whose bias is set to None.
# _init_weights: Linear, Embedding and the expert weights normal(0.02), LayerNorm weight ones.


def dbrx_layer_norm(d_model):
    """nn.LayerNorm(d_model, bias=False) as DBRX builds it, for a torch without the bias argument."""
    norm = nn.LayerNorm(d_model)
    norm.bias = None  # F.layer_norm(x, shape, weight, None, eps)
    return norm


@dataclass
class DbrxAttentionConfig:
    attn_pdrop: float = 0.0
    clip_qkv: Optional[float] = None
    kv_n_heads: int = 1
    rope_theta: float = 10000.0


@dataclass
class DbrxFFNConfig:
    ffn_act_fn: dict = field(default_factory=lambda: {"name": "silu"})
    ffn_hidden_size: int = 3584
    moe_num_experts: int = 4
    moe_top_k: int = 1
    moe_jitter_eps: Optional[float] = None
    moe_loss_weight: float = 0.01
    moe_normalize_expert_weights: Optional[float] = 1.0


@dataclass
class DbrxConfig:
    d_model: int = 2048
    n_heads: int = 16
    n_layers: int = 24
    max_seq_len: int = 2048
    vocab_size: int = 32000
    resid_pdrop: float = 0.0
    emb_pdrop: float = 0.0
    attn_config: DbrxAttentionConfig = field(default_factory=DbrxAttentionConfig)
    ffn_config: DbrxFFNConfig = field(default_factory=DbrxFFNConfig)
    initializer_range: float = 0.02
    pad_token_id: Optional[int] = None
    _attn_implementation: str = "eager"

    @property
    def hidden_size(self):  # attribute_map: hidden_size -> d_model
        return self.d_model


class DbrxRotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position_embeddings=2048, base=10000):
        super().__init__()
        self.dim = dim
        self.max_position_embeddings = max_position_embeddings
        self.base = base
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2, dtype=torch.int64).float() / self.dim))
        self.register_buffer("inv_freq", tensor=inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        # float32 on purpose (autocast disabled in the reference)
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


class DbrxAttention(nn.Module):
    """Multi-head self attention (the eager class)."""

    def __init__(self, config, block_idx=None):
        super().__init__()
        self.config = config
        self.hidden_size = config.d_model
        self.num_heads = config.n_heads
        self.head_dim = self.hidden_size // self.num_heads
        self.max_position_embeddings = config.max_seq_len
        self.block_idx = block_idx

        attn_config = config.attn_config
        self.attn_pdrop = attn_config.attn_pdrop
        self.clip_qkv = attn_config.clip_qkv
        self.num_key_value_heads = attn_config.kv_n_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.rope_theta = attn_config.rope_theta
        self.is_causal = True

        self.Wqkv = nn.Linear(self.hidden_size, self.hidden_size + 2 * self.num_key_value_heads * self.head_dim,
                              bias=False)
        self.out_proj = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.rotary_emb = DbrxRotaryEmbedding(self.head_dim, max_position_embeddings=self.max_position_embeddings,
                                              base=self.rope_theta)

    def forward(self, hidden_states, position_ids, attention_mask=None):
        bsz, q_len, _ = hidden_states.size()

        qkv_states = self.Wqkv(hidden_states)
        min_val = -self.clip_qkv if self.clip_qkv is not None else None
        max_val = self.clip_qkv
        qkv_states = qkv_states.clamp(min=min_val, max=max_val)

        query_states, key_states, value_states = qkv_states.split(
            [self.hidden_size, self.num_key_value_heads * self.head_dim, self.num_key_value_heads * self.head_dim],
            dim=2,
        )

        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        cos, sin = self.rotary_emb(value_states, position_ids)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)

        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = attn_weights + causal_mask

        # upcast attention to fp32
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attn_pdrop, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        attn_output = self.out_proj(attn_output)
        return attn_output, None, None


class DbrxNormAttentionNorm(nn.Module):
    def __init__(self, config, block_idx=None):
        super().__init__()
        self.block_idx = block_idx
        self.resid_pdrop = config.resid_pdrop
        self.norm_1 = dbrx_layer_norm(config.d_model)
        self.attn = DbrxAttention(config=config, block_idx=block_idx)
        self.norm_2 = dbrx_layer_norm(config.d_model)

    def forward(self, hidden_states, position_ids, attention_mask=None):
        residual_states = hidden_states
        hidden_states = self.norm_1(hidden_states).to(hidden_states.dtype)

        hidden_states, attn_weights, past_key_value = self.attn(
            hidden_states=hidden_states, attention_mask=attention_mask, position_ids=position_ids)

        hidden_states = nn.functional.dropout(hidden_states, p=self.resid_pdrop, training=self.training)
        hidden_states = hidden_states + residual_states

        residual_states = hidden_states
        hidden_states = self.norm_2(hidden_states).to(hidden_states.dtype)

        return residual_states, hidden_states, attn_weights, past_key_value


class DbrxRouter(nn.Module):
    def __init__(self, hidden_size, moe_num_experts, moe_top_k, moe_jitter_eps, moe_normalize_expert_weights):
        super().__init__()
        self.hidden_size = hidden_size
        self.moe_num_experts = moe_num_experts
        self.moe_top_k = moe_top_k
        self.moe_jitter_eps = moe_jitter_eps
        self.moe_normalize_expert_weights = moe_normalize_expert_weights

        self.layer = nn.Linear(self.hidden_size, self.moe_num_experts, bias=False)

    def forward(self, hidden_states):
        if self.training and self.moe_jitter_eps is not None:
            hidden_states *= torch.empty_like(hidden_states).uniform_(1.0 - self.moe_jitter_eps,
                                                                      1.0 + self.moe_jitter_eps)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        weights = self.layer(hidden_states).softmax(dim=-1, dtype=torch.float32)
        top_weights, top_experts = torch.topk(weights, self.moe_top_k, dim=-1)

        top_weights_scale = (
            torch.norm(top_weights, p=self.moe_normalize_expert_weights, dim=-1, keepdim=True)
            if self.moe_normalize_expert_weights is not None
            else 1.0
        )
        top_weights = top_weights / top_weights_scale

        weights = weights.to(hidden_states.dtype)
        top_weights = top_weights.to(hidden_states.dtype)
        return weights, top_weights, top_experts


class DbrxExpertGLU(nn.Module):
    def __init__(self, hidden_size, ffn_hidden_size, moe_num_experts, ffn_act_fn):
        super().__init__()
        self.hidden_size = hidden_size
        self.ffn_hidden_size = ffn_hidden_size
        self.moe_num_experts = moe_num_experts

        self.w1 = nn.Parameter(torch.empty(moe_num_experts * ffn_hidden_size, hidden_size))
        self.v1 = nn.Parameter(torch.empty(moe_num_experts * ffn_hidden_size, hidden_size))
        self.w2 = nn.Parameter(torch.empty(moe_num_experts * ffn_hidden_size, hidden_size))

        act_fn_name = ffn_act_fn.get("name", "silu")
        assert act_fn_name == "silu"
        self.activation_fn = nn.SiLU()  # ACT2FN["silu"]

    def forward(self, x, expert_w1, expert_v1, expert_w2):
        gate_proj = x.matmul(expert_w1.t())
        up_proj = x.matmul(expert_v1.t())
        gate_proj = self.activation_fn(gate_proj)
        intermediate_states = gate_proj * up_proj
        down_proj = intermediate_states.matmul(expert_w2)
        return down_proj


class DbrxExperts(nn.Module):
    def __init__(self, hidden_size, ffn_hidden_size, moe_num_experts, ffn_act_fn):
        super().__init__()
        self.moe_num_experts = moe_num_experts
        self.mlp = DbrxExpertGLU(hidden_size=hidden_size, ffn_hidden_size=ffn_hidden_size,
                                 moe_num_experts=moe_num_experts, ffn_act_fn=ffn_act_fn)

    def forward(self, x, weights, top_weights, top_experts):
        bsz, q_len, hidden_size = x.shape
        x = x.view(-1, hidden_size)
        out = torch.zeros_like(x)

        expert_mask = nn.functional.one_hot(top_experts, num_classes=self.moe_num_experts).permute(2, 1, 0)
        # the expert weights chunked at once, as the reference does
        shape = (self.mlp.moe_num_experts, self.mlp.ffn_hidden_size, self.mlp.hidden_size)
        w1_chunked = self.mlp.w1.view(*shape).chunk(self.moe_num_experts, dim=0)
        v1_chunked = self.mlp.v1.view(*shape).chunk(self.moe_num_experts, dim=0)
        w2_chunked = self.mlp.w2.view(*shape).chunk(self.moe_num_experts, dim=0)
        w1_chunked = [w1.squeeze(dim=0) for w1 in w1_chunked]
        v1_chunked = [v1.squeeze(dim=0) for v1 in v1_chunked]
        w2_chunked = [w2.squeeze(dim=0) for w2 in w2_chunked]
        for expert_idx in range(0, self.moe_num_experts):
            topk_idx, token_idx = torch.where(expert_mask[expert_idx])
            if token_idx.shape[0] == 0:
                continue

            token_list = token_idx
            topk_list = topk_idx

            expert_tokens = x[None, token_list].reshape(-1, hidden_size)
            expert_out = (
                self.mlp(expert_tokens, w1_chunked[expert_idx], v1_chunked[expert_idx], w2_chunked[expert_idx])
                * top_weights[token_list, topk_list, None]
            )

            out.index_add_(0, token_idx, expert_out)

        out = out.reshape(bsz, q_len, hidden_size)
        return out


class DbrxFFN(nn.Module):
    def __init__(self, config):
        super().__init__()
        ffn_config = config.ffn_config
        self.router = DbrxRouter(
            hidden_size=config.d_model,
            moe_num_experts=ffn_config.moe_num_experts,
            moe_top_k=ffn_config.moe_top_k,
            moe_jitter_eps=ffn_config.moe_jitter_eps,
            moe_normalize_expert_weights=ffn_config.moe_normalize_expert_weights,
        )
        self.experts = DbrxExperts(
            hidden_size=config.d_model,
            ffn_hidden_size=ffn_config.ffn_hidden_size,
            moe_num_experts=ffn_config.moe_num_experts,
            ffn_act_fn=ffn_config.ffn_act_fn,
        )

    def forward(self, x):
        weights, top_weights, top_experts = self.router(x)
        out = self.experts(x, weights, top_weights, top_experts)
        return out, weights


class DbrxBlock(nn.Module):
    def __init__(self, config, block_idx):
        super().__init__()
        self.hidden_size = config.d_model
        self.resid_pdrop = config.resid_pdrop
        self.block_idx = block_idx
        self.norm_attn_norm = DbrxNormAttentionNorm(config=config, block_idx=block_idx)
        self.ffn = DbrxFFN(config=config)

    def forward(self, hidden_states, attention_mask=None, position_ids=None):
        # Norm + Attention + Norm
        resid_states, hidden_states, self_attn_weights, present_key_value = self.norm_attn_norm(
            hidden_states=hidden_states, attention_mask=attention_mask, position_ids=position_ids)

        # Fully Connected
        hidden_states, router_logits = self.ffn(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.resid_pdrop, training=self.training)
        hidden_states = resid_states + hidden_states

        outputs = (hidden_states,)
        return outputs


class DbrxPreTrainedModel(nn.Module):
    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.data.fill_(1.0)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, DbrxExpertGLU):
            module.w1.data.normal_(mean=0.0, std=std)
            module.v1.data.normal_(mean=0.0, std=std)
            module.w2.data.normal_(mean=0.0, std=std)

    def post_init(self):
        self.apply(self._init_weights)


class DbrxModel(DbrxPreTrainedModel):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.padding_idx = config.pad_token_id
        self.vocab_size = config.vocab_size
        self.emb_pdrop = config.emb_pdrop

        self.wte = nn.Embedding(config.vocab_size, config.d_model, self.padding_idx)
        self.blocks = nn.ModuleList([DbrxBlock(config, block_idx) for block_idx in range(config.n_layers)])
        self.norm_f = dbrx_layer_norm(config.d_model)
        self.post_init()

    def forward(self, input_ids, attention_mask=None):
        inputs_embeds = self.wte(input_ids)
        inputs_embeds = nn.functional.dropout(inputs_embeds, p=self.emb_pdrop, training=self.training)

        past_seen_tokens = 0  # no cache in training
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + inputs_embeds.shape[1],
                                      device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)

        causal_mask = self._update_causal_mask(attention_mask, inputs_embeds, cache_position)

        hidden_states = inputs_embeds
        for block in self.blocks:
            block_outputs = block(hidden_states, attention_mask=causal_mask, position_ids=position_ids)
            hidden_states = block_outputs[0]

        hidden_states = self.norm_f(hidden_states)
        return (hidden_states,)

    def _update_causal_mask(self, attention_mask, input_tensor, cache_position):
        """The eager path of LlamaModel._update_causal_mask as DbrxModel copies it (no cache)."""
        dtype, device = input_tensor.dtype, input_tensor.device
        min_dtype = torch.finfo(dtype).min
        sequence_length = input_tensor.shape[1]
        target_length = (attention_mask.shape[-1] if isinstance(attention_mask, torch.Tensor)
                         else sequence_length + 1)
        batch_size = input_tensor.shape[0]

        causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype, device=device)
        if sequence_length != 1:
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(target_length, device=device) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)
        if attention_mask is not None:
            causal_mask = causal_mask.clone()  # copy to contiguous memory for in-place edit
            mask_length = attention_mask.shape[-1]
            padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :]
            padding_mask = padding_mask == 0
            causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(
                padding_mask, min_dtype)
        return causal_mask


class DbrxForCausalLM(DbrxPreTrainedModel):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = DbrxModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.moe_loss_weight = config.ffn_config.moe_loss_weight
        self.num_experts = config.ffn_config.moe_num_experts
        self.num_experts_per_tok = config.ffn_config.moe_top_k
        self.post_init()

    def forward(self, input_ids, attention_mask=None, num_logits_to_keep=0):
        outputs = self.transformer(input_ids=input_ids, attention_mask=attention_mask)
        hidden_states = outputs[0]
        # No upscaling to float was ever done for Dbrx
        logits = self.lm_head(hidden_states[:, -num_logits_to_keep:, :])
        return logits


def dbrx_causal_lm_loss(logits, labels):
    """DbrxForCausalLM's loss with labels = input_ids: shift so that tokens < n predict n."""
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    loss_fct = nn.CrossEntropyLoss()
    shift_logits = shift_logits.view(-1, shift_logits.size(-1))
    shift_labels = shift_labels.view(-1)
    return loss_fct(shift_logits, shift_labels)


def b_dbrx_param_experts():
    vocab, batch, seq = 128, 2, 12
    config = DbrxConfig(
        d_model=32, n_heads=4, n_layers=2, max_seq_len=64, vocab_size=vocab,
        attn_config=DbrxAttentionConfig(clip_qkv=8.0, kv_n_heads=2),
        ffn_config=DbrxFFNConfig(ffn_hidden_size=64, moe_num_experts=4, moe_top_k=2),
    )
    ids = randint(vocab, batch, seq, seed=3)
    attention_mask = torch.ones(batch, seq, dtype=torch.long)
    return dict(model=DbrxForCausalLM(config), inputs=(ids, attention_mask), target=ids, loss=dbrx_causal_lm_loss)


# ---------------------------------------------------------------------------------------
# XCiT as timm writes it (timm/models/xcit.py: Xcit, ConvPatchEmbed, conv3x3,
# PositionalEncodingFourier, XCABlock, XCA, LPI, ClassAttentionBlock; ClassAttn from
# timm/models/cait.py; Mlp of timm.layers (fc1, act, drop1, norm Identity, fc2, drop2); DropPath).
# xcit_nano-like (eta 1.0, tokens_norm False, qkv_bias True, LayerNorm eps 1e-6, GELU) but scaled
# down: 32x32 images with patch_size 8 (ConvPatchEmbed's three conv3x3 stages, 8 -> 16 -> 32
# channels, a 4x4 token map), embed_dim 32, 4 heads, depth 2, cls_attn_layers 1, mlp_ratio 4,
# drop_path_rate 0.1, 10 classes, batch 2. XCA's fused_attn is use_fused_attn(experimental=True),
# off by default, so its explicit softmax path is the default anyway; ClassAttn's fused
# F.scaled_dot_product_attention path (absent in torch 1.13) is replaced by its own non-fused path.
# Left out: grad checkpointing, forward_intermediates, the feature-info plumbing. Init: the class
# token and Linear weights trunc_normal(0.02), Linear biases zero, LayerNorm ones and zeros.


class Mlp(nn.Module):
    """timm.layers.Mlp."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, norm_layer=None,
                 bias=True, drop=0.):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features, bias=bias)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.norm = norm_layer(hidden_features) if norm_layer is not None else nn.Identity()
        self.fc2 = nn.Linear(hidden_features, out_features, bias=bias)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class PositionalEncodingFourier(nn.Module):
    def __init__(self, hidden_dim=32, dim=768, temperature=10000):
        super().__init__()
        self.token_projection = nn.Conv2d(hidden_dim * 2, dim, kernel_size=1)
        self.scale = 2 * math.pi
        self.temperature = temperature
        self.hidden_dim = hidden_dim
        self.dim = dim
        self.eps = 1e-6

    def forward(self, B: int, H: int, W: int):
        device = self.token_projection.weight.device
        dtype = self.token_projection.weight.dtype
        y_embed = torch.arange(1, H + 1, device=device).to(torch.float32).unsqueeze(1).repeat(1, 1, W)
        x_embed = torch.arange(1, W + 1, device=device).to(torch.float32).repeat(1, H, 1)
        y_embed = y_embed / (y_embed[:, -1:, :] + self.eps) * self.scale
        x_embed = x_embed / (x_embed[:, :, -1:] + self.eps) * self.scale
        dim_t = torch.arange(self.hidden_dim, device=device).to(torch.float32)
        dim_t = self.temperature ** (2 * torch.div(dim_t, 2, rounding_mode='floor') / self.hidden_dim)
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack([pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()], dim=4).flatten(3)
        pos_y = torch.stack([pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()], dim=4).flatten(3)
        pos = torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)
        pos = self.token_projection(pos.to(dtype))
        return pos.repeat(B, 1, 1, 1)  # (B, C, H, W)


def conv3x3(in_planes, out_planes, stride=1):
    """3x3 convolution + batch norm"""
    return nn.Sequential(
        nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(out_planes),
    )


class ConvPatchEmbed(nn.Module):
    """Image to Patch Embedding using multiple convolutional layers"""

    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768, act_layer=nn.GELU):
        super().__init__()
        img_size = (img_size, img_size) if isinstance(img_size, int) else tuple(img_size)
        self.img_size = img_size
        self.patch_size = patch_size
        self.num_patches = (img_size[1] // patch_size) * (img_size[0] // patch_size)

        if patch_size == 16:
            self.proj = nn.Sequential(
                conv3x3(in_chans, embed_dim // 8, 2), act_layer(),
                conv3x3(embed_dim // 8, embed_dim // 4, 2), act_layer(),
                conv3x3(embed_dim // 4, embed_dim // 2, 2), act_layer(),
                conv3x3(embed_dim // 2, embed_dim, 2),
            )
        elif patch_size == 8:
            self.proj = nn.Sequential(
                conv3x3(in_chans, embed_dim // 4, 2), act_layer(),
                conv3x3(embed_dim // 4, embed_dim // 2, 2), act_layer(),
                conv3x3(embed_dim // 2, embed_dim, 2),
            )
        else:
            raise ValueError('For convolutional projection, patch size has to be in [8, 16]')

    def forward(self, x):
        x = self.proj(x)
        Hp, Wp = x.shape[2], x.shape[3]
        x = x.flatten(2).transpose(1, 2)  # (B, N, C)
        return x, (Hp, Wp)


class LPI(nn.Module):
    """Local Patch Interaction: two depthwise 3x3 convs with GELU and BatchNorm2d between."""

    def __init__(self, in_features, out_features=None, act_layer=nn.GELU, kernel_size=3):
        super().__init__()
        out_features = out_features or in_features
        padding = kernel_size // 2
        self.conv1 = nn.Conv2d(in_features, in_features, kernel_size=kernel_size, padding=padding,
                               groups=in_features)
        self.act = act_layer()
        self.bn = nn.BatchNorm2d(in_features)
        self.conv2 = nn.Conv2d(in_features, out_features, kernel_size=kernel_size, padding=padding,
                               groups=out_features)

    def forward(self, x, H: int, W: int):
        B, N, C = x.shape
        x = x.permute(0, 2, 1).reshape(B, C, H, W)
        x = self.conv1(x)
        x = self.act(x)
        x = self.bn(x)
        x = self.conv2(x)
        x = x.reshape(B, C, N).permute(0, 2, 1)
        return x


class ClassAttn(nn.Module):
    """timm cait.ClassAttn, its non-fused path: the query from the class token only."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0., proj_drop=0.):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.fused_attn = False  # no F.scaled_dot_product_attention in torch 1.13

        self.q = nn.Linear(dim, dim, bias=qkv_bias)
        self.k = nn.Linear(dim, dim, bias=qkv_bias)
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        q = self.q(x[:, 0]).unsqueeze(1).reshape(B, 1, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        k = self.k(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        v = self.v(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)

        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x_cls = attn @ v

        x_cls = x_cls.transpose(1, 2).reshape(B, 1, C)
        x_cls = self.proj(x_cls)
        x_cls = self.proj_drop(x_cls)
        return x_cls


class ClassAttentionBlock(nn.Module):
    """Class Attention Layer as in CaiT."""

    def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=False, proj_drop=0., attn_drop=0., drop_path=0.,
                 act_layer=nn.GELU, norm_layer=nn.LayerNorm, eta=1., tokens_norm=False):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = ClassAttn(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop)
        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)

        if eta is not None:  # LayerScale Initialization (no layerscale when None)
            self.gamma1 = nn.Parameter(eta * torch.ones(dim))
            self.gamma2 = nn.Parameter(eta * torch.ones(dim))
        else:
            self.gamma1, self.gamma2 = 1.0, 1.0
        self.tokens_norm = tokens_norm

    def forward(self, x):
        x_norm1 = self.norm1(x)
        x_attn = torch.cat([self.attn(x_norm1), x_norm1[:, 1:]], dim=1)
        x = x + self.drop_path(self.gamma1 * x_attn)
        if self.tokens_norm:
            x = self.norm2(x)
        else:
            x = torch.cat([self.norm2(x[:, 0:1]), x[:, 1:]], dim=1)
        x_res = x
        cls_token = x[:, 0:1]
        cls_token = self.gamma2 * self.mlp(cls_token)
        x = torch.cat([cls_token, x[:, 1:]], dim=1)
        x = x_res + self.drop_path(x)
        return x


class XCA(nn.Module):
    """Cross-Covariance Attention: softmax over the (channels x channels) q^T k per head."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0., proj_drop=0.):
        super().__init__()
        self.num_heads = num_heads
        self.fused_attn = False  # use_fused_attn(experimental=True): off by default
        self.temperature = nn.Parameter(torch.ones(num_heads, 1, 1))
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        # (qkv, B, heads, channels per head, N)
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 4, 1)
        q, k, v = qkv.unbind(0)

        # Paper section 3.2 l2-Normalization and temperature scaling
        q = torch.nn.functional.normalize(q, dim=-1)
        k = torch.nn.functional.normalize(k, dim=-1)
        attn = (q @ k.transpose(-2, -1)) * self.temperature
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = attn @ v

        x = x.permute(0, 3, 1, 2).reshape(B, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class XCABlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=False, proj_drop=0., attn_drop=0., drop_path=0.,
                 act_layer=nn.GELU, norm_layer=nn.LayerNorm, eta=1.):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = XCA(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop)
        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()

        self.norm3 = norm_layer(dim)
        self.local_mp = LPI(in_features=dim, act_layer=act_layer)

        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)

        self.gamma1 = nn.Parameter(eta * torch.ones(dim))
        self.gamma3 = nn.Parameter(eta * torch.ones(dim))
        self.gamma2 = nn.Parameter(eta * torch.ones(dim))

    def forward(self, x, H: int, W: int):
        x = x + self.drop_path(self.gamma1 * self.attn(self.norm1(x)))
        # the official code's order: 3 (local patch interaction) then 2 (mlp)
        x = x + self.drop_path(self.gamma3 * self.local_mp(self.norm3(x), H, W))
        x = x + self.drop_path(self.gamma2 * self.mlp(self.norm2(x)))
        return x


class Xcit(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool='token',
                 embed_dim=768, depth=12, num_heads=12, mlp_ratio=4., qkv_bias=True, drop_rate=0.,
                 pos_drop_rate=0., proj_drop_rate=0., attn_drop_rate=0., drop_path_rate=0., act_layer=None,
                 norm_layer=None, cls_attn_layers=2, use_pos_embed=True, eta=1., tokens_norm=False):
        super().__init__()
        assert global_pool in ('', 'avg', 'token')
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        act_layer = act_layer or nn.GELU

        self.num_classes = num_classes
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.global_pool = global_pool
        self.grad_checkpointing = False

        self.patch_embed = ConvPatchEmbed(img_size=img_size, patch_size=patch_size, in_chans=in_chans,
                                          embed_dim=embed_dim, act_layer=act_layer)

        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = PositionalEncodingFourier(dim=embed_dim) if use_pos_embed else None
        self.pos_drop = nn.Dropout(p=pos_drop_rate)

        self.blocks = nn.ModuleList([
            XCABlock(dim=embed_dim, num_heads=num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                     proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, drop_path=drop_path_rate,
                     act_layer=act_layer, norm_layer=norm_layer, eta=eta)
            for _ in range(depth)])

        self.cls_attn_blocks = nn.ModuleList([
            ClassAttentionBlock(dim=embed_dim, num_heads=num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                                proj_drop=drop_rate, attn_drop=attn_drop_rate, act_layer=act_layer,
                                norm_layer=norm_layer, eta=eta, tokens_norm=tokens_norm)
            for _ in range(cls_attn_layers)])

        # Classifier head
        self.norm = norm_layer(embed_dim)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

        nn.init.trunc_normal_(self.cls_token, std=.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward_features(self, x):
        B = x.shape[0]
        x, (Hp, Wp) = self.patch_embed(x)

        if self.pos_embed is not None:
            # (B, C, Hp, Wp) -> (B, C, N) -> (B, N, C)
            pos_encoding = self.pos_embed(B, Hp, Wp).reshape(B, -1, x.shape[1]).permute(0, 2, 1)
            x = x + pos_encoding
        x = self.pos_drop(x)

        for blk in self.blocks:
            x = blk(x, Hp, Wp)

        x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)

        for blk in self.cls_attn_blocks:
            x = blk(x)

        x = self.norm(x)
        return x

    def forward_head(self, x, pre_logits: bool = False):
        if self.global_pool:
            x = x[:, 1:].mean(dim=1) if self.global_pool == 'avg' else x[:, 0]
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def b_xcit_timm_style():
    model = Xcit(img_size=32, patch_size=8, num_classes=10, embed_dim=32, depth=2, num_heads=4, mlp_ratio=4.,
                 cls_attn_layers=1, drop_path_rate=0.1, eta=1.0, tokens_norm=False)
    return dict(model=model, inputs=(randn(2, 3, 32, 32),), target=randint(10, 2), loss=ce)


REGISTRY = [
    ("dbrx_param_experts", "moe", "adamw", b_dbrx_param_experts),
    ("xcit_timm_style", "vit", "adamw", b_xcit_timm_style),
]
