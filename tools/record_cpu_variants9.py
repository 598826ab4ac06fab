#!/usr/bin/env python3
"""Record Strata's ninth variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on the other variants corpora; this script records
tests/data/corpus-cpu-variants9, recorded after the rules, to measure them once on models they
were not written on, then to be tuned on as the other variants are: torchscale's RetNet
(RetNetRelPos's per-head decay mask and rotation angles, MultiScaleRetention's q/k/v/g
projections, theta_shift by hand, the parallel form q @ k^T * mask @ v, the per-head norm, the
swish gate, out_proj; pre-LayerNorm decoder layers with a FeedForwardNetwork and residual sums),
HazyResearch safari's Hyena LM (HyenaOperator: in_proj, the short depthwise Conv1d, HyenaFilter's
implicit filter, an MLP with a Sin module over positional features, ExponentialModulation, the
FFT convolution by rfft and irfft, the gating products, out_proj; flash-attn style prenorm
Blocks with an Mlp; a tied LM head), Beckschen's TransUNet (ResNetV2's StdConv2d, GroupNorm and
PreActBottleneck units, a 1x1 patch embedding, ViT Blocks, DecoderCup's DecoderBlocks of
bilinear upsampling, skip concatenation and Conv2dReLU Sequentials, SegmentationHead), FuxiCTR's
FinalMLP (FeatureEmbedding, two MLP_Blocks, FeatureSelection gates, InteractionAggregation's
bilinear head fusion), PyG's RGCNConv written without PyG (basis decomposition, a mean-normalised
sparse adjacency per relation, root weight, bias; the featureless entity-classification Net),
apple's MobileOne in training mode (MobileOneBlocks of a BatchNorm skip, a 1x1 conv-BN scale
branch and k conv-BN branches summed, SEBlock, ReLU; depthwise then pointwise blocks), ESPnet's
E-Branchformer encoder (Conv2dSubsampling, macaron feed-forwards, MultiHeadedAttention and
ConvolutionalGatingMLP branches merged by a depthwise conv and merge_proj; CTC) and thuml's
TimesNet (DataEmbedding, TimesBlocks of FFT_for_Period, 2-D Inception_Block_V1 convs per period
and a softmax-weighted sum, one LayerNorm between blocks, projection).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants9.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants9.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants9.
"""

import copy
import math
import os
import sys
from collections import OrderedDict, namedtuple
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, ce_tokens, mse, randint, randn  # noqa: E402
from record_cpu_fresh import random_edges  # noqa: E402
from record_cpu_variants7 import (DeepCrossing, FeatureEmbedding, FeatureMap, fuxictr_bce, fuxictr_inputs,  # noqa: E402
                                  get_activation, masked_nll)
from record_cpu_variants8 import PositionalEmbedding as TSPositionalEmbedding  # noqa: E402  (Time-Series-Library's)
from record_cpu_variants8 import TokenEmbedding, make_pad_mask  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torchvision.ops import StochasticDepth  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# RetNet as torchscale writes it (torchscale/architecture/retnet.py,
# component/multiscale_retention.py, component/feedforward_network.py; the parallel form):
# RetNetDecoder (embed_tokens, an nn.Embedding handed in, times embed_scale; dropout_module;
# retnet_rel_pos, RetNetRelPos: the rotation angles' sin and cos over the positions and the
# decay mask made per head, tril, masked_fill with inf, exp(mask * decay), nan_to_num,
# normalised by the root of its row sums; layers, a ModuleList of DecoderLayers; layer_norm;
# output_projection, bias-free). DecoderLayer: retention_layer_norm before the retention,
# dropout_module, residual * alpha + x; final_layer_norm before the ffn, the residual again.
# MultiScaleRetention: q_proj, k_proj, v_proj, g_proj (value_dim twice the embedding), k scaled
# in place, heads by view and transpose, theta_shift (x * cos + rotate_every_two(x) * sin,
# written by hand), parallel_forward (qr @ kr^T * mask, normalised by its detached absolute row
# sums clamped to [1, 5e4], @ v), group_norm (the per-head LayerNorm without affine weights),
# swish (F.silu) gate, out_proj. FeedForwardNetwork (use_glu off, subln off): fc1, F.gelu,
# activation_dropout_module, fc2, dropout_module. Next-token cross entropy.


class RetNetConfig:
    """The fields of torchscale's RetNetConfig that the modules read."""

    def __init__(self, **kwargs):
        self.decoder_embed_dim = kwargs.pop("decoder_embed_dim", 32)
        self.decoder_value_embed_dim = kwargs.pop("decoder_value_embed_dim", 64)
        self.decoder_retention_heads = kwargs.pop("decoder_retention_heads", 4)
        self.decoder_ffn_embed_dim = kwargs.pop("decoder_ffn_embed_dim", 64)
        self.decoder_layers = kwargs.pop("decoder_layers", 2)
        self.decoder_normalize_before = kwargs.pop("decoder_normalize_before", True)
        self.activation_fn = kwargs.pop("activation_fn", "gelu")
        self.dropout = kwargs.pop("dropout", 0.1)
        self.drop_path_rate = kwargs.pop("drop_path_rate", 0.0)
        self.activation_dropout = kwargs.pop("activation_dropout", 0.0)
        self.no_scale_embedding = kwargs.pop("no_scale_embedding", False)
        self.layernorm_embedding = kwargs.pop("layernorm_embedding", False)
        self.layernorm_eps = kwargs.pop("layernorm_eps", 1e-6)
        self.share_decoder_input_output_embed = kwargs.pop("share_decoder_input_output_embed", False)
        self.no_output_layer = kwargs.pop("no_output_layer", False)
        self.vocab_size = kwargs.pop("vocab_size", -1)
        self.chunkwise_recurrent = kwargs.pop("chunkwise_recurrent", False)
        self.recurrent_chunk_size = kwargs.pop("recurrent_chunk_size", 512)
        self.deepnorm = kwargs.pop("deepnorm", False)
        self.subln = kwargs.pop("subln", False)
        self.use_glu = kwargs.pop("use_glu", False)


def get_activation_fn(activation):
    if activation == "swish":
        return F.silu
    elif activation == "gelu":
        return F.gelu
    else:
        raise NotImplementedError


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)  # in einsum notation: rearrange(x, '... d j -> ... (d j)')


def theta_shift(x, sin, cos):
    return (x * cos) + (rotate_every_two(x) * sin)


class RetNetRelPos(nn.Module):
    def __init__(self, args):
        super().__init__()
        angle = 1.0 / (10000 ** torch.linspace(0, 1, args.decoder_embed_dim // args.decoder_retention_heads // 2))
        angle = angle.unsqueeze(-1).repeat(1, 2).flatten()
        decay = torch.log(1 - 2 ** (-5 - torch.arange(args.decoder_retention_heads, dtype=torch.float)))
        self.register_buffer("angle", angle)
        self.register_buffer("decay", decay)
        self.recurrent_chunk_size = args.recurrent_chunk_size

    def forward(self, slen, activate_recurrent=False, chunkwise_recurrent=False):
        assert not activate_recurrent and not chunkwise_recurrent, "the parallel form only"
        index = torch.arange(slen).to(self.decay)
        sin = torch.sin(index[:, None] * self.angle[None, :])
        cos = torch.cos(index[:, None] * self.angle[None, :])
        mask = torch.tril(torch.ones(slen, slen).to(self.decay))
        mask = torch.masked_fill(index[:, None] - index[None, :], ~mask.bool(), float("inf"))
        mask = torch.exp(mask * self.decay[:, None, None])
        mask = torch.nan_to_num(mask)
        mask = mask / mask.sum(dim=-1, keepdim=True).sqrt()
        retention_rel_pos = ((sin, cos), mask)
        return retention_rel_pos


class MultiScaleRetention(nn.Module):
    def __init__(self, args, embed_dim, value_dim, num_heads, gate_fn="swish"):
        super().__init__()
        self.args = args
        self.embed_dim = embed_dim
        self.value_dim = value_dim
        self.num_heads = num_heads
        self.head_dim = self.value_dim // num_heads
        self.key_dim = self.embed_dim // num_heads
        self.scaling = self.key_dim ** -0.5

        self.gate_fn = get_activation_fn(activation=str(gate_fn))

        # MultiwayWrapper(args, module) is the module itself without multiway
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, value_dim, bias=False)
        self.g_proj = nn.Linear(embed_dim, value_dim, bias=False)

        self.out_proj = nn.Linear(value_dim, embed_dim, bias=False)

        self.group_norm = nn.LayerNorm(self.head_dim, eps=args.layernorm_eps, elementwise_affine=False)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.q_proj.weight, gain=2 ** -2.5)
        nn.init.xavier_uniform_(self.k_proj.weight, gain=2 ** -2.5)
        nn.init.xavier_uniform_(self.v_proj.weight, gain=2 ** -2.5)
        nn.init.xavier_uniform_(self.g_proj.weight, gain=2 ** -2.5)
        nn.init.xavier_uniform_(self.out_proj.weight)

    def parallel_forward(self, qr, kr, v, mask):
        bsz, tgt_len, embed_dim = v.size()

        vr = v.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)

        qk_mat = qr @ kr.transpose(-1, -2)  # bsz * m * tgt_len * tgt_len
        qk_mat = qk_mat * mask
        # invariant after normalization
        qk_mat = qk_mat / qk_mat.detach().abs().sum(dim=-1, keepdim=True).clamp(min=1, max=5e4)
        output = torch.matmul(qk_mat, vr)
        output = output.transpose(1, 2)
        return output

    def forward(self, x, rel_pos, chunkwise_recurrent=False, incremental_state=None):
        bsz, tgt_len, _ = x.size()
        (sin, cos), inner_mask = rel_pos

        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        g = self.g_proj(x)

        k *= self.scaling
        q = q.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)
        k = k.view(bsz, tgt_len, self.num_heads, self.key_dim).transpose(1, 2)

        qr = theta_shift(q, sin, cos)
        kr = theta_shift(k, sin, cos)

        output = self.parallel_forward(qr, kr, v, inner_mask)

        output = self.group_norm(output).reshape(bsz, tgt_len, self.head_dim * self.num_heads)

        output = self.gate_fn(g) * output

        output = self.out_proj(output)

        return output


class FeedForwardNetwork(nn.Module):
    def __init__(self, embed_dim, ffn_dim, activation_fn, dropout, activation_dropout, layernorm_eps, subln=False):
        super().__init__()
        self.embed_dim = embed_dim
        self.activation_fn = get_activation_fn(activation=str(activation_fn))
        self.activation_dropout_module = torch.nn.Dropout(activation_dropout)
        self.dropout_module = torch.nn.Dropout(dropout)
        self.fc1 = nn.Linear(self.embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, self.embed_dim)
        self.ffn_layernorm = nn.LayerNorm(ffn_dim, eps=layernorm_eps) if subln else None

    def forward(self, x):
        x_shape = x.shape
        x = x.reshape(-1, x.size(-1))
        x = self.fc1(x)
        x = self.activation_fn(x.float()).type_as(x)
        x = self.activation_dropout_module(x)
        if self.ffn_layernorm is not None:
            x = self.ffn_layernorm(x)
        x = self.fc2(x)
        x = x.view(x_shape)
        x = self.dropout_module(x)
        return x


class DecoderLayer(nn.Module):
    def __init__(self, args, depth):
        super().__init__()
        self.args = args
        self.embed_dim = args.decoder_embed_dim
        self.dropout_module = torch.nn.Dropout(args.dropout)
        self.drop_path = None  # drop_path_rate 0
        self.retention = MultiScaleRetention(args, self.embed_dim, args.decoder_value_embed_dim,
                                             args.decoder_retention_heads)
        self.normalize_before = args.decoder_normalize_before
        self.retention_layer_norm = nn.LayerNorm(self.embed_dim, eps=args.layernorm_eps)
        self.ffn_dim = args.decoder_ffn_embed_dim
        self.ffn = FeedForwardNetwork(self.embed_dim, self.ffn_dim, args.activation_fn, args.dropout,
                                      args.activation_dropout, args.layernorm_eps, args.subln)
        self.final_layer_norm = nn.LayerNorm(self.embed_dim, eps=args.layernorm_eps)
        self.alpha = math.pow(2.0 * args.decoder_layers, 0.25) if args.deepnorm else 1.0

    def residual_connection(self, x, residual):
        return residual * self.alpha + x

    def forward(self, x, incremental_state=None, chunkwise_recurrent=False, retention_rel_pos=None):
        residual = x
        if self.normalize_before:
            x = self.retention_layer_norm(x)

        x = self.retention(x, incremental_state=incremental_state, rel_pos=retention_rel_pos,
                           chunkwise_recurrent=chunkwise_recurrent)
        x = self.dropout_module(x)

        if self.drop_path is not None:
            x = self.drop_path(x)

        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.retention_layer_norm(x)

        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.ffn(x)
        l_aux = None

        if self.drop_path is not None:
            x = self.drop_path(x)

        x = self.residual_connection(x, residual)
        if not self.normalize_before:
            x = self.final_layer_norm(x)

        return x, l_aux


class RetNetDecoder(nn.Module):
    def __init__(self, args, embed_tokens=None, output_projection=None):
        super().__init__()
        self.args = args
        self.dropout_module = torch.nn.Dropout(args.dropout)
        embed_dim = args.decoder_embed_dim
        self.embed_dim = embed_dim
        self.embed_scale = 1.0 if args.no_scale_embedding else math.sqrt(embed_dim)
        self.embed_tokens = embed_tokens
        if output_projection is None and not args.no_output_layer and args.vocab_size > 0:
            self.output_projection = self.build_output_projection(args)
        else:
            self.output_projection = output_projection
        self.layernorm_embedding = nn.LayerNorm(embed_dim, eps=args.layernorm_eps) if args.layernorm_embedding else None
        self.layers = nn.ModuleList([])
        for i in range(args.decoder_layers):
            self.layers.append(DecoderLayer(args, depth=i))
        self.num_layers = len(self.layers)
        self.layer_norm = nn.LayerNorm(embed_dim, eps=args.layernorm_eps) if args.decoder_normalize_before else None
        self.retnet_rel_pos = RetNetRelPos(args)
        self.chunkwise_recurrent = args.chunkwise_recurrent
        self.recurrent_chunk_size = args.recurrent_chunk_size

    def build_output_projection(self, args):
        if args.share_decoder_input_output_embed:
            output_projection = torch.nn.Linear(self.embed_tokens.weight.shape[1], self.embed_tokens.weight.shape[0],
                                                bias=False)
            output_projection.weight = self.embed_tokens.weight
        else:
            output_projection = torch.nn.Linear(args.decoder_embed_dim, args.vocab_size, bias=False)
            torch.nn.init.normal_(output_projection.weight, mean=0, std=args.decoder_embed_dim ** -0.5)
        return output_projection

    def forward_embedding(self, tokens, token_embedding=None, incremental_state=None):
        if token_embedding is None:
            token_embedding = self.embed_tokens(tokens)
        x = embed = self.embed_scale * token_embedding
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout_module(x)
        return x, embed

    def is_first_step(self, incremental_state):
        if incremental_state is None:
            return False
        return incremental_state.get("is_first_step", False)

    def forward(self, prev_output_tokens, incremental_state=None, features_only=False, return_all_hiddens=False,
                token_embeddings=None):
        # embed tokens
        x, _ = self.forward_embedding(prev_output_tokens, token_embeddings, incremental_state)
        is_first_step = self.is_first_step(incremental_state)

        slen = prev_output_tokens.size(1)
        # relative position
        retention_rel_pos = self.retnet_rel_pos(slen, incremental_state is not None and not is_first_step,
                                                chunkwise_recurrent=self.chunkwise_recurrent)

        # decoder layers
        inner_states = [x]
        l_aux = []
        for idx, layer in enumerate(self.layers):
            x, l_aux_i = layer(x, None, retention_rel_pos=retention_rel_pos,
                               chunkwise_recurrent=self.chunkwise_recurrent)
            l_aux.append(l_aux_i)
            inner_states.append(x)

        if self.layer_norm is not None:
            x = self.layer_norm(x)

        if not features_only:
            x = self.output_layer(x)

        return x, {"inner_states": inner_states, "l_aux": l_aux, "attn": None}

    def output_layer(self, features):
        return self.output_projection(features)


def lm_ce_first(out, target):
    """Cross entropy on the logits a model returns first (with its extras after them)."""
    return ce_tokens(out[0], target)


def b_retnet():
    vocab, batch, seq = 200, 4, 16
    ids = randint(vocab, batch, seq + 1, seed=3)
    args = RetNetConfig(vocab_size=vocab)
    model = RetNetDecoder(args, embed_tokens=nn.Embedding(vocab, args.decoder_embed_dim))
    return dict(model=model, inputs=(ids[:, :-1],), target=ids[:, 1:], loss=lm_ce_first)


# ---------------------------------------------------------------------------------------
# A Hyena LM as HazyResearch's safari writes it (standalone_hyena.py's HyenaOperator and
# HyenaFilter, order 2; simple_lm.py's SimpleLMHeadModel, LMBackbone, create_block's Block
# and Mlp): backbone (embeddings, GPT2Embeddings of word_embeddings alone; layers, prenorm
# Blocks: dropout1, drop_path1 (torchvision's StochasticDepth), the running residual summed,
# norm1, mixer, dropout2, drop_path2, the residual again, norm2, mlp (Mlp: fc1, tanh
# F.gelu, fc2); drop_f, the last residual sum, ln_f), lm_head tied to the word embeddings.
# HyenaOperator: in_proj to 3 d, the b l d -> b d l rearrange (a permute), short_filter a
# depthwise Conv1d, split into x0, x1 and v; filter_fn.filter(L) called as a method (pos_emb,
# a PositionalEmbedding of complex exponentials (z a Parameter, t a buffer); implicit_filter,
# a Sequential of Linears with one Sin module (sin(freq * x)) after each but the last, the same
# module each time; modulation, ExponentialModulation's exp(-t |deltas|)); v * x1, dropout,
# filter_fn (fftconv: rfft of the filter and of u to twice the length, irfft of their product,
# u * D added); v * x0; out_proj. Next-token cross entropy on the logits.


def fftconv(u, k, D):
    seqlen = u.shape[-1]
    fft_size = 2 * seqlen

    k_f = torch.fft.rfft(k, n=fft_size) / fft_size
    u_f = torch.fft.rfft(u.to(dtype=k.dtype), n=fft_size)

    if len(u.shape) > 3:
        k_f = k_f.unsqueeze(1)
    y = torch.fft.irfft(u_f * k_f, n=fft_size, norm="forward")[..., :seqlen]

    out = y + u * D.unsqueeze(-1)
    return out.to(dtype=u.dtype)


class OptimModule(nn.Module):
    """ Interface for Module that allows registering buffers/parameters with configurable optimizer hyperparameters """

    def register(self, name, tensor, lr=None, wd=0.0):
        """Register a tensor with a configurable learning rate and 0 weight decay"""

        if lr == 0.0:
            self.register_buffer(name, tensor)
        else:
            self.register_parameter(name, nn.Parameter(tensor))

            optim = {}
            if lr is not None:
                optim["lr"] = lr
            if wd is not None:
                optim["weight_decay"] = wd
            setattr(getattr(self, name), "_optim", optim)


class Sin(nn.Module):
    def __init__(self, dim, w=10, train_freq=True):
        super().__init__()
        self.freq = nn.Parameter(w * torch.ones(1, dim)) if train_freq else w * torch.ones(1, dim)

    def forward(self, x):
        return torch.sin(self.freq * x)


class PositionalEmbedding(OptimModule):
    def __init__(self, emb_dim, seq_len, lr_pos_emb=1e-5, **kwargs):
        """Complex exponential positional embeddings for Hyena filters."""
        super().__init__()

        self.seq_len = seq_len
        # The time embedding fed to the filteres is normalized so that t_f = 1
        t = torch.linspace(0, 1, self.seq_len)[None, :, None]  # 1, L, 1

        if emb_dim > 1:
            bands = (emb_dim - 1) // 2
        # To compute the right embeddings we use the "proper" linspace
        t_rescaled = torch.linspace(0, seq_len - 1, seq_len)[None, :, None]
        w = 2 * math.pi * t_rescaled / seq_len  # 1, L, 1

        f = torch.linspace(1e-4, bands - 1, bands)[None, None]
        z = torch.exp(-1j * f * w)
        z = torch.cat([t, z.real, z.imag], dim=-1)
        self.register("z", z, lr=lr_pos_emb)
        self.register("t", t, lr=0.0)

    def forward(self, L):
        return self.z[:, :L], self.t[:, :L]


class ExponentialModulation(OptimModule):
    def __init__(self, d_model, fast_decay_pct=0.3, slow_decay_pct=1.5, target=1e-2, modulation_lr=0.0,
                 modulate=True, shift=0.0, **kwargs):
        super().__init__()
        self.modulate = modulate
        self.shift = shift
        max_decay = math.log(target) / fast_decay_pct
        min_decay = math.log(target) / slow_decay_pct
        deltas = torch.linspace(min_decay, max_decay, d_model)[None, None]
        self.register("deltas", deltas, lr=modulation_lr)

    def forward(self, t, x):
        if self.modulate:
            decay = torch.exp(-t * self.deltas.abs())
            x = x * (decay + self.shift)
        return x


class HyenaFilter(OptimModule):
    def __init__(self, d_model, emb_dim=3, order=16, fused_fft_conv=False, seq_len=1024, lr=1e-3, lr_pos_emb=1e-5,
                 dropout=0.0, w=1, wd=0, bias=True, num_inner_mlps=2, normalized=False, **kwargs):
        super().__init__()
        self.d_model = d_model
        self.use_bias = bias
        self.fused_fft_conv = fused_fft_conv
        self.bias = nn.Parameter(torch.randn(self.d_model))
        self.dropout = nn.Dropout(dropout)

        act = Sin(dim=order, w=w)
        self.emb_dim = emb_dim
        assert emb_dim % 2 != 0 and emb_dim >= 3, "emb_dim must be odd and greater or equal to 3 (time, sine and cosine)"
        self.seq_len = seq_len

        self.pos_emb = PositionalEmbedding(emb_dim, seq_len, lr_pos_emb)

        self.implicit_filter = nn.Sequential(
            nn.Linear(emb_dim, order),
            act,
        )
        for i in range(num_inner_mlps):
            self.implicit_filter.append(nn.Linear(order, order))
            self.implicit_filter.append(act)

        self.implicit_filter.append(nn.Linear(order, d_model, bias=False))

        self.modulation = ExponentialModulation(d_model, **kwargs)

        self.normalized = normalized
        for c in self.implicit_filter.children():
            for name, v in c.state_dict().items():
                optim = {"weight_decay": wd, "lr": lr}
                setattr(getattr(c, name), "_optim", optim)

    def filter(self, L, *args, **kwargs):
        z, t = self.pos_emb(L)
        h = self.implicit_filter(z)
        h = self.modulation(t, h)
        return h

    def forward(self, x, L, k=None, bias=None, *args, **kwargs):
        if k is None:
            k = self.filter(L)

        # Ensure compatibility with filters that return a tuple
        k = k[0] if type(k) is tuple else k

        y = fftconv(x, k, bias)
        return y


class HyenaOperator(nn.Module):
    def __init__(self, d_model, l_max, order=2, filter_order=64, dropout=0.0, filter_dropout=0.0, **filter_args):
        super().__init__()
        self.d_model = d_model
        self.l_max = l_max
        self.order = order
        inner_width = d_model * (order + 1)
        self.dropout = nn.Dropout(dropout)
        self.in_proj = nn.Linear(d_model, inner_width)
        self.out_proj = nn.Linear(d_model, d_model)

        self.short_filter = nn.Conv1d(inner_width, inner_width, 3, padding=2, groups=inner_width)
        self.filter_fn = HyenaFilter(d_model * (order - 1), order=filter_order, seq_len=l_max, channels=1,
                                     dropout=filter_dropout, **filter_args)

    def forward(self, u, *args, **kwargs):
        l = u.size(-2)  # noqa: E741
        l_filter = min(l, self.l_max)
        u = self.in_proj(u)
        u = u.permute(0, 2, 1)  # rearrange(u, 'b l d -> b d l')

        uc = self.short_filter(u)[..., :l_filter]
        *x, v = uc.split(self.d_model, dim=1)

        k = self.filter_fn.filter(l_filter)[0]
        k = k.reshape(l_filter, self.order - 1, self.d_model).permute(1, 2, 0)  # 'l (o d) -> o d l'
        bias = self.filter_fn.bias.reshape(self.order - 1, self.d_model)  # '(o d) -> o d'

        for o, x_i in enumerate(reversed(x[1:])):
            v = self.dropout(v * x_i)
            v = self.filter_fn(v, l_filter, k=k[o], bias=bias[o])

        y = (v * x[0]).permute(0, 2, 1)  # rearrange(v * x[0], 'b d l -> b l d')

        y = self.out_proj(y)
        return y


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, activation=F.gelu,
                 return_residual=False):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.return_residual = return_residual
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.activation = activation
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x):
        y = self.fc1(x)
        y = self.activation(y)
        y = self.fc2(y)
        return y if not self.return_residual else (y, x)


class Block(nn.Module):
    def __init__(self, dim, mixer_cls=None, mlp_cls=None, norm_cls=nn.LayerNorm, dropout_cls=nn.Dropout, prenorm=True,
                 resid_dropout1=0., resid_dropout2=0., drop_path1=0., drop_path2=0., return_residual=False,
                 residual_in_fp32=False):
        super().__init__()
        self.prenorm = prenorm
        self.return_residual = return_residual
        self.residual_in_fp32 = residual_in_fp32
        self.mixer = mixer_cls(dim)
        self.dropout1 = dropout_cls(resid_dropout1)
        self.drop_path1 = StochasticDepth(drop_path1, mode="row")
        self.norm1 = norm_cls(dim)
        self.mlp = mlp_cls(dim)
        if not isinstance(self.mlp, nn.Identity):
            self.dropout2 = dropout_cls(resid_dropout2)
            self.drop_path2 = StochasticDepth(drop_path2, mode="row")
            self.norm2 = norm_cls(dim)

    def forward(self, hidden_states, residual=None, mixer_subset=None, mixer_kwargs=None):
        assert self.prenorm
        dropped = self.drop_path1(self.dropout1(hidden_states))
        residual = (dropped + residual) if residual is not None else dropped
        hidden_states = self.norm1(residual.to(dtype=self.norm1.weight.dtype))
        if self.residual_in_fp32:
            residual = residual.to(torch.float32)
        if mixer_kwargs is None:
            mixer_kwargs = {}
        hidden_states = self.mixer(hidden_states, **mixer_kwargs)
        if not isinstance(self.mlp, nn.Identity):
            dropped = self.drop_path2(self.dropout2(hidden_states))
            residual = (dropped + residual) if residual is not None else dropped
            hidden_states = self.norm2(residual.to(dtype=self.norm2.weight.dtype))
            if self.residual_in_fp32:
                residual = residual.to(torch.float32)
            hidden_states = self.mlp(hidden_states)
        return hidden_states, residual


class GPT2Embeddings(nn.Module):
    def __init__(self, embed_dim, vocab_size, max_position_embeddings, padding_idx=None):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        self.project_in = None
        self.max_position_embeddings = max_position_embeddings
        if self.max_position_embeddings > 0:
            self.position_embeddings = nn.Embedding(max_position_embeddings, embed_dim)

    def forward(self, input_ids, position_ids=None):
        batch_size, seqlen = input_ids.shape
        embeddings = self.word_embeddings(input_ids)
        if self.project_in is not None:
            embeddings = self.project_in(embeddings)
        if self.max_position_embeddings > 0:
            if position_ids is None:
                position_ids = torch.arange(seqlen, dtype=torch.long, device=input_ids.device)
            position_embeddings = self.position_embeddings(position_ids)
            embeddings = embeddings + position_embeddings
        return embeddings


def create_mixer_cls(layer=None):
    layer = dict(layer)
    assert layer.pop("_name_") == "hyena"
    return partial(HyenaOperator, **layer)


def create_mlp_cls(d_model, d_inner=None):
    inner_dim = d_inner if d_inner is not None else 4 * d_model
    return partial(Mlp, hidden_features=inner_dim, activation=partial(F.gelu, approximate="tanh"))


def create_block(d_model, d_inner=None, layer=None, layer_norm_epsilon=1e-5, resid_dropout1=0.0, resid_dropout2=0.0,
                 residual_in_fp32=False, layer_idx=None):
    mixer_cls = create_mixer_cls(layer=layer)
    mlp_cls = create_mlp_cls(d_model, d_inner=d_inner)
    norm_cls = partial(nn.LayerNorm, eps=layer_norm_epsilon)
    block = Block(d_model, mixer_cls, mlp_cls, norm_cls=norm_cls, prenorm=True, resid_dropout1=resid_dropout1,
                  resid_dropout2=resid_dropout2, residual_in_fp32=residual_in_fp32)
    block.layer_idx = layer_idx
    return block


def _init_weights(module, n_layer, initializer_range=0.02, rescale_prenorm_residual=True, glu_act=False):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=initializer_range)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=initializer_range)

    if rescale_prenorm_residual:
        for name, p in module.named_parameters():
            if name in ["out_proj.weight", "fc2.weight"]:
                nn.init.normal_(p, mean=0.0, std=initializer_range / math.sqrt(2 * n_layer))


class LMBackbone(nn.Module):
    def __init__(self, d_model, n_layer, d_inner, vocab_size, layer=None, max_position_embeddings=0,
                 resid_dropout=0.0, embed_dropout=0.1, layer_norm_epsilon=1e-5, initializer_cfg=None,
                 residual_in_fp32=False):
        super().__init__()
        self.residual_in_fp32 = residual_in_fp32
        self.embeddings = GPT2Embeddings(d_model, vocab_size, max_position_embeddings)
        self.layers = nn.ModuleList([create_block(
            d_model, d_inner=d_inner, layer=layer, layer_norm_epsilon=layer_norm_epsilon,
            resid_dropout1=embed_dropout if i == 0 else resid_dropout, resid_dropout2=resid_dropout,
            residual_in_fp32=residual_in_fp32, layer_idx=i) for i in range(n_layer)])
        self.drop_f = nn.Dropout(resid_dropout)
        self.ln_f = nn.LayerNorm(d_model, eps=layer_norm_epsilon)
        self.apply(partial(_init_weights, n_layer=n_layer, **(initializer_cfg if initializer_cfg is not None else {})))

    def forward(self, input_ids, position_ids=None):
        hidden_states = self.embeddings(input_ids, position_ids=position_ids)
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(hidden_states, residual)
        dropped = self.drop_f(hidden_states)
        residual = (dropped + residual) if residual is not None else dropped
        hidden_states = self.ln_f(residual.to(dtype=self.ln_f.weight.dtype))
        return hidden_states


CausalLMOutput = namedtuple("CausalLMOutput", ["logits"])


class SimpleLMHeadModel(nn.Module):
    def __init__(self, d_model, n_layer, d_inner, vocab_size, layer=None, max_position_embeddings=0,
                 resid_dropout=0.0, embed_dropout=0.1, layer_norm_epsilon=1e-5, initializer_cfg=None,
                 residual_in_fp32=False, pad_vocab_size_multiple=1):
        super().__init__()
        if vocab_size % pad_vocab_size_multiple != 0:
            vocab_size += pad_vocab_size_multiple - (vocab_size % pad_vocab_size_multiple)
        self.backbone = LMBackbone(d_model=d_model, n_layer=n_layer, d_inner=d_inner, vocab_size=vocab_size,
                                   layer=layer, max_position_embeddings=max_position_embeddings,
                                   resid_dropout=resid_dropout, embed_dropout=embed_dropout,
                                   layer_norm_epsilon=layer_norm_epsilon, initializer_cfg=initializer_cfg,
                                   residual_in_fp32=residual_in_fp32)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.apply(partial(_init_weights, n_layer=n_layer, **(initializer_cfg if initializer_cfg is not None else {})))
        self.tie_weights()

    def tie_weights(self):
        self.lm_head.weight = self.backbone.embeddings.word_embeddings.weight

    def forward(self, input_ids, position_ids=None, state=None):  # state for the repo interface
        hidden_states = self.backbone(input_ids, position_ids=position_ids)
        lm_logits = self.lm_head(hidden_states)
        return CausalLMOutput(logits=lm_logits), None


def hyena_ce(out, target):
    return ce_tokens(out[0].logits, target)


def b_hyena():
    vocab, batch, seq = 128, 4, 32
    ids = randint(vocab, batch, seq + 1, seed=3)
    layer = {"_name_": "hyena", "l_max": seq, "order": 2, "filter_order": 16, "emb_dim": 3, "w": 10,
             "modulate": True}
    model = SimpleLMHeadModel(d_model=32, n_layer=2, d_inner=64, vocab_size=vocab, layer=layer, embed_dropout=0.1)
    return dict(model=model, inputs=(ids[:, :-1],), target=ids[:, 1:], loss=hyena_ce)


# ---------------------------------------------------------------------------------------
# TransUNet as Beckschen's TransUNet writes it (networks/vit_seg_modeling.py and
# vit_seg_modeling_resnet_skip.py, the R50-ViT hybrid shrunk: width factor 0.5, one unit a
# block, hidden 32, 2 layers, a 2 x 2 grid; its Mlp, Block and VisionTransformer are named
# TransUNetMlp, TransUNetBlock and TransUNet here): transformer (Transformer: embeddings
# (Embeddings: hybrid_model, ResNetV2 (root, a Sequential of StdConv2d (the weight
# standardised by var_mean, F.conv2d), GroupNorm, ReLU; a MaxPool2d made in the forward; body,
# three Sequentials of PreActBottleneck units (conv1/gn1/relu, conv2/gn2/relu, conv3/gn3, a
# StdConv2d downsample and gn_proj, relu(residual + y)); the block1 map zero-padded to its
# size by a slice assignment; the skip features reversed), patch_embeddings a 1x1 Conv2d,
# flatten, transpose, + position_embeddings, dropout); encoder (Encoder: layer, a ModuleList of
# Blocks: attention_norm, attn (Attention: query, key, value Linears, transpose_for_scores,
# matmul, / sqrt, a Softmax module, attn_dropout, matmul, out, proj_dropout), x + h, ffn_norm,
# ffn (Mlp: fc1, F.gelu, dropout, fc2, dropout), x + h; encoder_norm)); decoder (DecoderCup:
# the tokens reshaped to a map, conv_more a Conv2dReLU, blocks of DecoderBlocks: up an
# UpsamplingBilinear2d, cat with the skip, conv1 and conv2 Conv2dReLU Sequentials of conv, BN,
# ReLU); segmentation_head (SegmentationHead: a conv and an Identity). A one-channel slice
# repeated to three channels, as the model does. Cross entropy per pixel.


class ConfigDict(dict):
    """ml_collections.ConfigDict as the model reads it: items as attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name)


class StdConv2d(nn.Conv2d):

    def forward(self, x):
        w = self.weight
        v, m = torch.var_mean(w, dim=[1, 2, 3], keepdim=True, unbiased=False)
        w = (w - m) / torch.sqrt(v + 1e-5)
        return F.conv2d(x, w, self.bias, self.stride, self.padding, self.dilation, self.groups)


def conv3x3(cin, cout, stride=1, groups=1, bias=False):
    return StdConv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=bias, groups=groups)


def conv1x1(cin, cout, stride=1, bias=False):
    return StdConv2d(cin, cout, kernel_size=1, stride=stride, padding=0, bias=bias)


class PreActBottleneck(nn.Module):
    """Pre-activation (v2) bottleneck block.
    """

    def __init__(self, cin, cout=None, cmid=None, stride=1):
        super().__init__()
        cout = cout or cin
        cmid = cmid or cout // 4

        self.gn1 = nn.GroupNorm(32, cmid, eps=1e-6)
        self.conv1 = conv1x1(cin, cmid, bias=False)
        self.gn2 = nn.GroupNorm(32, cmid, eps=1e-6)
        self.conv2 = conv3x3(cmid, cmid, stride, bias=False)  # Original code has it on conv1!!
        self.gn3 = nn.GroupNorm(32, cout, eps=1e-6)
        self.conv3 = conv1x1(cmid, cout, bias=False)
        self.relu = nn.ReLU(inplace=True)

        if (stride != 1 or cin != cout):
            # Projection also with pre-activation according to paper.
            self.downsample = conv1x1(cin, cout, stride, bias=False)
            self.gn_proj = nn.GroupNorm(cout, cout)

    def forward(self, x):

        # Residual branch
        residual = x
        if hasattr(self, "downsample"):
            residual = self.downsample(x)
            residual = self.gn_proj(residual)

        # Unit's branch
        y = self.relu(self.gn1(self.conv1(x)))
        y = self.relu(self.gn2(self.conv2(y)))
        y = self.gn3(self.conv3(y))

        y = self.relu(residual + y)
        return y


class ResNetV2(nn.Module):
    """Implementation of Pre-activation (v2) ResNet mode."""

    def __init__(self, block_units, width_factor):
        super().__init__()
        width = int(64 * width_factor)
        self.width = width

        self.root = nn.Sequential(OrderedDict([
            ("conv", StdConv2d(3, width, kernel_size=7, stride=2, bias=False, padding=3)),
            ("gn", nn.GroupNorm(32, width, eps=1e-6)),
            ("relu", nn.ReLU(inplace=True)),
            # ('pool', nn.MaxPool2d(kernel_size=3, stride=2, padding=0))
        ]))

        self.body = nn.Sequential(OrderedDict([
            ("block1", nn.Sequential(OrderedDict(
                [("unit1", PreActBottleneck(cin=width, cout=width * 4, cmid=width))] +
                [(f"unit{i:d}", PreActBottleneck(cin=width * 4, cout=width * 4, cmid=width))
                 for i in range(2, block_units[0] + 1)],
            ))),
            ("block2", nn.Sequential(OrderedDict(
                [("unit1", PreActBottleneck(cin=width * 4, cout=width * 8, cmid=width * 2, stride=2))] +
                [(f"unit{i:d}", PreActBottleneck(cin=width * 8, cout=width * 8, cmid=width * 2))
                 for i in range(2, block_units[1] + 1)],
            ))),
            ("block3", nn.Sequential(OrderedDict(
                [("unit1", PreActBottleneck(cin=width * 8, cout=width * 16, cmid=width * 4, stride=2))] +
                [(f"unit{i:d}", PreActBottleneck(cin=width * 16, cout=width * 16, cmid=width * 4))
                 for i in range(2, block_units[2] + 1)],
            ))),
        ]))

    def forward(self, x):
        features = []
        b, c, in_size, _ = x.size()
        x = self.root(x)
        features.append(x)
        x = nn.MaxPool2d(kernel_size=3, stride=2, padding=0)(x)
        for i in range(len(self.body) - 1):
            x = self.body[i](x)
            right_size = int(in_size / 4 / (i + 1))
            if x.size()[2] != right_size:
                pad = right_size - x.size()[2]
                assert pad < 3 and pad > 0, "x {} should {}".format(x.size(), right_size)
                feat = torch.zeros((b, x.size()[1], right_size, right_size), device=x.device)
                feat[:, :, 0:x.size()[2], 0:x.size()[3]] = x[:]
            else:
                feat = x
            features.append(feat)
        x = self.body[-1](x)
        return x, features[::-1]


def swish(x):
    return x * torch.sigmoid(x)


ACT2FN = {"gelu": torch.nn.functional.gelu, "relu": torch.nn.functional.relu, "swish": swish}


class Attention(nn.Module):
    def __init__(self, config, vis):
        super().__init__()
        self.vis = vis
        self.num_attention_heads = config.transformer["num_heads"]
        self.attention_head_size = int(config.hidden_size / self.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size

        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)

        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.attn_dropout = nn.Dropout(config.transformer["attention_dropout_rate"])
        self.proj_dropout = nn.Dropout(config.transformer["attention_dropout_rate"])

        self.softmax = nn.Softmax(dim=-1)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(*new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        mixed_query_layer = self.query(hidden_states)
        mixed_key_layer = self.key(hidden_states)
        mixed_value_layer = self.value(hidden_states)

        query_layer = self.transpose_for_scores(mixed_query_layer)
        key_layer = self.transpose_for_scores(mixed_key_layer)
        value_layer = self.transpose_for_scores(mixed_value_layer)

        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_probs = self.softmax(attention_scores)
        weights = attention_probs if self.vis else None
        attention_probs = self.attn_dropout(attention_probs)

        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(*new_context_layer_shape)
        attention_output = self.out(context_layer)
        attention_output = self.proj_dropout(attention_output)
        return attention_output, weights


class TransUNetMlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc1 = nn.Linear(config.hidden_size, config.transformer["mlp_dim"])
        self.fc2 = nn.Linear(config.transformer["mlp_dim"], config.hidden_size)
        self.act_fn = ACT2FN["gelu"]
        self.dropout = nn.Dropout(config.transformer["dropout_rate"])

        self._init_weights()

    def _init_weights(self):
        nn.init.xavier_uniform_(self.fc1.weight)
        nn.init.xavier_uniform_(self.fc2.weight)
        nn.init.normal_(self.fc1.bias, std=1e-6)
        nn.init.normal_(self.fc2.bias, std=1e-6)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act_fn(x)
        x = self.dropout(x)
        x = self.fc2(x)
        x = self.dropout(x)
        return x


class Embeddings(nn.Module):
    """Construct the embeddings from patch, position embeddings.
    """

    def __init__(self, config, img_size, in_channels=3):
        super().__init__()
        self.hybrid = None
        self.config = config
        img_size = (img_size, img_size)

        if config.patches.get("grid") is not None:  # ResNet
            grid_size = config.patches["grid"]
            patch_size = (img_size[0] // 16 // grid_size[0], img_size[1] // 16 // grid_size[1])
            patch_size_real = (patch_size[0] * 16, patch_size[1] * 16)
            n_patches = (img_size[0] // patch_size_real[0]) * (img_size[1] // patch_size_real[1])
            self.hybrid = True
        else:
            patch_size = (config.patches["size"], config.patches["size"])
            n_patches = (img_size[0] // patch_size[0]) * (img_size[1] // patch_size[1])
            self.hybrid = False

        if self.hybrid:
            self.hybrid_model = ResNetV2(block_units=config.resnet.num_layers, width_factor=config.resnet.width_factor)
            in_channels = self.hybrid_model.width * 16
        self.patch_embeddings = nn.Conv2d(in_channels=in_channels, out_channels=config.hidden_size,
                                          kernel_size=patch_size, stride=patch_size)
        self.position_embeddings = nn.Parameter(torch.zeros(1, n_patches, config.hidden_size))

        self.dropout = nn.Dropout(config.transformer["dropout_rate"])

    def forward(self, x):
        if self.hybrid:
            x, features = self.hybrid_model(x)
        else:
            features = None
        x = self.patch_embeddings(x)  # (B, hidden. n_patches^(1/2), n_patches^(1/2))
        x = x.flatten(2)
        x = x.transpose(-1, -2)  # (B, n_patches, hidden)

        embeddings = x + self.position_embeddings
        embeddings = self.dropout(embeddings)
        return embeddings, features


class TransUNetBlock(nn.Module):
    def __init__(self, config, vis):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=1e-6)
        self.ffn_norm = nn.LayerNorm(config.hidden_size, eps=1e-6)
        self.ffn = TransUNetMlp(config)
        self.attn = Attention(config, vis)

    def forward(self, x):
        h = x
        x = self.attention_norm(x)
        x, weights = self.attn(x)
        x = x + h

        h = x
        x = self.ffn_norm(x)
        x = self.ffn(x)
        x = x + h
        return x, weights


class Encoder(nn.Module):
    def __init__(self, config, vis):
        super().__init__()
        self.vis = vis
        self.layer = nn.ModuleList()
        self.encoder_norm = nn.LayerNorm(config.hidden_size, eps=1e-6)
        for _ in range(config.transformer["num_layers"]):
            layer = TransUNetBlock(config, vis)
            self.layer.append(copy.deepcopy(layer))

    def forward(self, hidden_states):
        attn_weights = []
        for layer_block in self.layer:
            hidden_states, weights = layer_block(hidden_states)
            if self.vis:
                attn_weights.append(weights)
        encoded = self.encoder_norm(hidden_states)
        return encoded, attn_weights


class Transformer(nn.Module):
    def __init__(self, config, img_size, vis):
        super().__init__()
        self.embeddings = Embeddings(config, img_size=img_size)
        self.encoder = Encoder(config, vis)

    def forward(self, input_ids):
        embedding_output, features = self.embeddings(input_ids)
        encoded, attn_weights = self.encoder(embedding_output)  # (B, n_patch, hidden)
        return encoded, attn_weights, features


class Conv2dReLU(nn.Sequential):
    def __init__(self, in_channels, out_channels, kernel_size, padding=0, stride=1, use_batchnorm=True):
        conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                         bias=not (use_batchnorm))
        relu = nn.ReLU(inplace=True)

        bn = nn.BatchNorm2d(out_channels)

        super().__init__(conv, bn, relu)


class DecoderBlock(nn.Module):
    def __init__(self, in_channels, out_channels, skip_channels=0, use_batchnorm=True):
        super().__init__()
        self.conv1 = Conv2dReLU(in_channels + skip_channels, out_channels, kernel_size=3, padding=1,
                                use_batchnorm=use_batchnorm)
        self.conv2 = Conv2dReLU(out_channels, out_channels, kernel_size=3, padding=1, use_batchnorm=use_batchnorm)
        self.up = nn.UpsamplingBilinear2d(scale_factor=2)

    def forward(self, x, skip=None):
        x = self.up(x)
        if skip is not None:
            x = torch.cat([x, skip], dim=1)
        x = self.conv1(x)
        x = self.conv2(x)
        return x


class SegmentationHead(nn.Sequential):

    def __init__(self, in_channels, out_channels, kernel_size=3, upsampling=1):
        conv2d = nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, padding=kernel_size // 2)
        upsampling = nn.UpsamplingBilinear2d(scale_factor=upsampling) if upsampling > 1 else nn.Identity()
        super().__init__(conv2d, upsampling)


class DecoderCup(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        head_channels = 512
        self.conv_more = Conv2dReLU(config.hidden_size, head_channels, kernel_size=3, padding=1, use_batchnorm=True)
        decoder_channels = config.decoder_channels
        in_channels = [head_channels] + list(decoder_channels[:-1])
        out_channels = decoder_channels

        if self.config.n_skip != 0:
            skip_channels = self.config.skip_channels
            for i in range(4 - self.config.n_skip):  # re-select the skip channels according to n_skip
                skip_channels[3 - i] = 0

        else:
            skip_channels = [0, 0, 0, 0]

        blocks = [
            DecoderBlock(in_ch, out_ch, sk_ch) for in_ch, out_ch, sk_ch in zip(in_channels, out_channels, skip_channels)
        ]
        self.blocks = nn.ModuleList(blocks)

    def forward(self, hidden_states, features=None):
        B, n_patch, hidden = hidden_states.size()  # reshape from (B, n_patch, hidden) to (B, h, w, hidden)
        h, w = int(np.sqrt(n_patch)), int(np.sqrt(n_patch))
        x = hidden_states.permute(0, 2, 1)
        x = x.contiguous().view(B, hidden, h, w)
        x = self.conv_more(x)
        for i, decoder_block in enumerate(self.blocks):
            if features is not None:
                skip = features[i] if (i < self.config.n_skip) else None
            else:
                skip = None
            x = decoder_block(x, skip=skip)
        return x


class TransUNet(nn.Module):
    def __init__(self, config, img_size=224, num_classes=21843, zero_head=False, vis=False):
        super().__init__()
        self.num_classes = num_classes
        self.zero_head = zero_head
        self.classifier = config.classifier
        self.transformer = Transformer(config, img_size, vis)
        self.decoder = DecoderCup(config)
        self.segmentation_head = SegmentationHead(
            in_channels=config["decoder_channels"][-1],
            out_channels=config["n_classes"],
            kernel_size=3,
        )
        self.config = config

    def forward(self, x):
        if x.size()[1] == 1:
            x = x.repeat(1, 3, 1, 1)
        x, attn_weights, features = self.transformer(x)  # (B, n_patch, hidden)
        x = self.decoder(x, features)
        logits = self.segmentation_head(x)
        return logits


def get_r50_b16_lite_config(n_classes=4):
    """get_r50_b16_config shrunk: width factor 0.5, one unit a block, hidden 32, 2 layers."""
    config = ConfigDict()
    config.update(
        patches=ConfigDict(size=(16, 16), grid=(2, 2)),
        hidden_size=32,
        transformer=ConfigDict(mlp_dim=64, num_heads=4, num_layers=2, attention_dropout_rate=0.0, dropout_rate=0.1),
        classifier="seg",
        representation_size=None,
        resnet=ConfigDict(num_layers=(1, 1, 1), width_factor=0.5),
        decoder_channels=(64, 32, 16, 8),
        skip_channels=[256, 128, 32, 16],
        n_classes=n_classes,
        n_skip=3,
        activation="softmax",
    )
    return config


def b_transunet():
    classes, img = 4, 32
    model = TransUNet(get_r50_b16_lite_config(classes), img_size=img, num_classes=classes)
    return dict(model=model, inputs=(randn(2, 1, img, img),), target=randint(classes, 2, img, img), loss=ce)


# ---------------------------------------------------------------------------------------
# FinalMLP as FuxiCTR writes it (model_zoo/FinalMLP/src/FinalMLP.py on its BaseModel, with
# fuxictr's MLP_Block): output_activation (BaseModel's Sigmoid, set first), embedding_layer
# (tools/record_cpu_variants7.py's FeatureEmbedding, as Deep Crossing there: one table a
# categorical field, a bias-free Linear a numeric one, stacked and flattened), mlp1 and mlp2
# (MLP_Blocks: mlp, a Sequential of Linear, BatchNorm1d, ReLU, Dropout per hidden layer),
# fs_module (FeatureSelection: fs1 with no context, its fs1_ctx_bias repeated over the batch;
# fs2 with one context field, fs2_ctx_emb, a FeatureEmbedding of that field alone; fs1_gate and
# fs2_gate MLP_Blocks of Linear, ReLU, Linear, Sigmoid; the gate times 2 times the flat
# embedding), fusion_module (InteractionAggregation, 2 heads: w_x(x) + w_y(y), the streams
# split into heads, matmul with w_xy viewed per head, matmul with the other head, squeeze,
# summed over the heads and added in place). Weights as reset_parameters sets them (Deep
# Crossing's, imported); F.binary_cross_entropy on the sigmoid output.


class MLP_Block(nn.Module):
    def __init__(self, input_dim, hidden_units=[], hidden_activations="ReLU", output_dim=None, output_activation=None,
                 dropout_rates=0.0, batch_norm=False, bn_only_once=False, use_bias=True):
        super().__init__()
        dense_layers = []
        if not isinstance(dropout_rates, list):
            dropout_rates = [dropout_rates] * len(hidden_units)
        if not isinstance(hidden_activations, list):
            hidden_activations = [hidden_activations] * len(hidden_units)
        hidden_activations = [get_activation(a) for a in hidden_activations]  # get_activation's list branch
        hidden_units = [input_dim] + hidden_units
        if batch_norm and bn_only_once:
            dense_layers.append(nn.BatchNorm1d(input_dim))
        for idx in range(len(hidden_units) - 1):
            dense_layers.append(nn.Linear(hidden_units[idx], hidden_units[idx + 1], bias=use_bias))
            if batch_norm and not bn_only_once:
                dense_layers.append(nn.BatchNorm1d(hidden_units[idx + 1]))
            if hidden_activations[idx]:
                dense_layers.append(hidden_activations[idx])
            if dropout_rates[idx] > 0:
                dense_layers.append(nn.Dropout(p=dropout_rates[idx]))
        if output_dim is not None:
            dense_layers.append(nn.Linear(hidden_units[-1], output_dim, bias=use_bias))
        if output_activation is not None:
            dense_layers.append(get_activation(output_activation))
        self.mlp = nn.Sequential(*dense_layers)  # * used to unpack list

    def forward(self, inputs):
        return self.mlp(inputs)


class FeatureSelection(nn.Module):
    def __init__(self, feature_map, feature_dim, embedding_dim, fs_hidden_units=[], fs1_context=[], fs2_context=[]):
        super().__init__()
        self.fs1_context = fs1_context
        if len(fs1_context) == 0:
            self.fs1_ctx_bias = nn.Parameter(torch.zeros(1, embedding_dim))
        else:
            self.fs1_ctx_emb = FeatureEmbedding(feature_map, embedding_dim, required_feature_columns=fs1_context)
        self.fs2_context = fs2_context
        if len(fs2_context) == 0:
            self.fs2_ctx_bias = nn.Parameter(torch.zeros(1, embedding_dim))
        else:
            self.fs2_ctx_emb = FeatureEmbedding(feature_map, embedding_dim, required_feature_columns=fs2_context)
        self.fs1_gate = MLP_Block(input_dim=embedding_dim * max(1, len(fs1_context)), output_dim=feature_dim,
                                  hidden_units=fs_hidden_units, hidden_activations="ReLU",
                                  output_activation="Sigmoid", batch_norm=False)
        self.fs2_gate = MLP_Block(input_dim=embedding_dim * max(1, len(fs2_context)), output_dim=feature_dim,
                                  hidden_units=fs_hidden_units, hidden_activations="ReLU",
                                  output_activation="Sigmoid", batch_norm=False)

    def forward(self, X, flat_emb):
        if len(self.fs1_context) == 0:
            fs1_input = self.fs1_ctx_bias.repeat(flat_emb.size(0), 1)
        else:
            fs1_input = self.fs1_ctx_emb(X).flatten(start_dim=1)
        gt1 = self.fs1_gate(fs1_input) * 2
        feature1 = flat_emb * gt1
        if len(self.fs2_context) == 0:
            fs2_input = self.fs2_ctx_bias.repeat(flat_emb.size(0), 1)
        else:
            fs2_input = self.fs2_ctx_emb(X).flatten(start_dim=1)
        gt2 = self.fs2_gate(fs2_input) * 2
        feature2 = flat_emb * gt2
        return feature1, feature2


class InteractionAggregation(nn.Module):
    def __init__(self, x_dim, y_dim, output_dim=1, num_heads=1):
        super().__init__()
        assert x_dim % num_heads == 0 and y_dim % num_heads == 0, \
            "Input dim must be divisible by num_heads!"
        self.num_heads = num_heads
        self.output_dim = output_dim
        self.head_x_dim = x_dim // num_heads
        self.head_y_dim = y_dim // num_heads
        self.w_x = nn.Linear(x_dim, output_dim)
        self.w_y = nn.Linear(y_dim, output_dim)
        self.w_xy = nn.Parameter(torch.Tensor(num_heads * self.head_x_dim * self.head_y_dim, output_dim))
        nn.init.xavier_normal_(self.w_xy)

    def forward(self, x, y):
        output = self.w_x(x) + self.w_y(y)
        head_x = x.view(-1, self.num_heads, self.head_x_dim)
        head_y = y.view(-1, self.num_heads, self.head_y_dim)
        xy = torch.matmul(torch.matmul(head_x.unsqueeze(2),
                                       self.w_xy.view(self.num_heads, self.head_x_dim, -1))
                          .view(-1, self.num_heads, self.output_dim, self.head_y_dim),
                          head_y.unsqueeze(-1)).squeeze(-1)
        output += xy.sum(dim=1)
        return output


class FinalMLP(nn.Module):
    def __init__(self, feature_map, embedding_dim=8, mlp1_hidden_units=[32, 32], mlp1_hidden_activations="ReLU",
                 mlp1_dropout=0.1, mlp1_batch_norm=True, mlp2_hidden_units=[32, 32], mlp2_hidden_activations="ReLU",
                 mlp2_dropout=0.1, mlp2_batch_norm=True, use_fs=True, fs_hidden_units=[32], fs1_context=[],
                 fs2_context=["C1"], num_heads=2):
        super().__init__()
        self.device = torch.device("cpu")  # get_device(gpu=-1)
        self.feature_map = feature_map
        self.output_activation = nn.Sigmoid()  # BaseModel.get_output_activation("binary_classification")
        self.embedding_layer = FeatureEmbedding(feature_map, embedding_dim)
        feature_dim = embedding_dim * feature_map.num_fields
        self.mlp1 = MLP_Block(input_dim=feature_dim, output_dim=None, hidden_units=mlp1_hidden_units,
                              hidden_activations=mlp1_hidden_activations, output_activation=None,
                              dropout_rates=mlp1_dropout, batch_norm=mlp1_batch_norm)
        self.mlp2 = MLP_Block(input_dim=feature_dim, output_dim=None, hidden_units=mlp2_hidden_units,
                              hidden_activations=mlp2_hidden_activations, output_activation=None,
                              dropout_rates=mlp2_dropout, batch_norm=mlp2_batch_norm)
        self.use_fs = use_fs
        if self.use_fs:
            self.fs_module = FeatureSelection(feature_map, feature_dim, embedding_dim, fs_hidden_units, fs1_context,
                                              fs2_context)
        self.fusion_module = InteractionAggregation(mlp1_hidden_units[-1], mlp2_hidden_units[-1], output_dim=1,
                                                    num_heads=num_heads)
        self.reset_parameters()

    reset_parameters = DeepCrossing.reset_parameters  # BaseModel's
    get_inputs = DeepCrossing.get_inputs  # BaseModel's

    def forward(self, inputs):
        X = self.get_inputs(inputs)
        flat_emb = self.embedding_layer(X).flatten(start_dim=1)
        if self.use_fs:
            feat1, feat2 = self.fs_module(X, flat_emb)
        else:
            feat1, feat2 = flat_emb, flat_emb
        y_pred = self.fusion_module(self.mlp1(feat1), self.mlp2(feat2))
        y_pred = self.output_activation(y_pred)
        return_dict = {"y_pred": y_pred}
        return return_dict


def b_finalmlp():
    fmap, batch = FeatureMap(), 64
    return dict(model=FinalMLP(fmap), inputs=(fuxictr_inputs(fmap, batch),), target=randint(2, batch, 1, seed=3).float(),
                loss=fuxictr_bce)


# ---------------------------------------------------------------------------------------
# A relational GCN as PyG's examples/rgcn.py writes it (entity classification, featureless
# nodes), RGCNConv's semantics written without PyG: Net (conv1, F.relu, conv2, log_softmax).
# RGCNConv (aggr "mean", num_bases, root_weight, bias): the basis decomposition weight =
# (comp @ weight.view(num_bases, -1)).view(relations, in, out); with no input features x_l is
# arange(in_channels) and each relation adds propagate(x=weight[i, x_l]), otherwise
# propagate(x) @ weight[i]; propagate is the SparseTensor path's spmm with reduce "mean", a
# torch.sparse.mm with the relation's adjacency (rows its target nodes, each row normalised by
# its in-degree, made before the model as ToSparseTensor does); root[x_r] or x_r @ root; bias.
# Relations come with their inverses, as in the Entities datasets. NLL on the training nodes.


def glorot(value):
    if value is not None:
        stdv = math.sqrt(6.0 / (value.size(-2) + value.size(-1)))
        value.data.uniform_(-stdv, stdv)


class RGCNConv(nn.Module):
    def __init__(self, in_channels, out_channels, num_relations, num_bases=None, num_blocks=None, aggr="mean",
                 root_weight=True, bias=True):
        super().__init__()
        assert aggr == "mean" and num_blocks is None
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_relations = num_relations
        self.num_bases = num_bases
        self.num_blocks = num_blocks
        self.in_channels_l = in_channels

        if num_bases is not None:
            self.weight = nn.Parameter(torch.empty(num_bases, self.in_channels_l, out_channels))
            self.comp = nn.Parameter(torch.empty(num_relations, num_bases))
        else:
            self.weight = nn.Parameter(torch.empty(num_relations, self.in_channels_l, out_channels))
            self.register_parameter("comp", None)

        if root_weight:
            self.root = nn.Parameter(torch.empty(self.in_channels_l, out_channels))
        else:
            self.register_parameter("root", None)

        if bias:
            self.bias = nn.Parameter(torch.empty(out_channels))
        else:
            self.register_parameter("bias", None)

        self.reset_parameters()

    def reset_parameters(self):
        glorot(self.weight)
        glorot(self.comp)
        glorot(self.root)
        if self.bias is not None:
            self.bias.data.zero_()

    def propagate(self, adj_t, x):
        return torch.sparse.mm(adj_t, x)  # message_and_aggregate: spmm(adj_t, x, reduce="mean")

    def forward(self, x, adj_ts):
        x_l = x
        if x_l is None:
            x_l = torch.arange(self.in_channels_l, device=self.weight.device)
        x_r = x_l

        out = torch.zeros(x_r.size(0), self.out_channels, device=x_r.device)

        weight = self.weight
        if self.num_bases is not None:  # Basis-decomposition =================
            weight = (self.comp @ weight.view(self.num_bases, -1)).view(
                self.num_relations, self.in_channels_l, self.out_channels)

        for i in range(self.num_relations):
            tmp = adj_ts[i]
            if x_l.dtype == torch.long:
                out = out + self.propagate(tmp, x=weight[i, x_l])
            else:
                h = self.propagate(tmp, x=x_l)
                out = out + (h @ weight[i])

        root = self.root
        if root is not None:
            if not torch.is_floating_point(x_r):
                out = out + root[x_r]
            else:
                out = out + x_r @ root

        if self.bias is not None:
            out = out + self.bias

        return out


class RGCNNet(nn.Module):
    def __init__(self, num_nodes, num_relations, num_classes, num_bases=2):
        super().__init__()
        self.conv1 = RGCNConv(num_nodes, 16, num_relations, num_bases=num_bases)
        self.conv2 = RGCNConv(16, num_classes, num_relations, num_bases=num_bases)

    def forward(self, adj_ts):
        x = F.relu(self.conv1(None, adj_ts))
        x = self.conv2(x, adj_ts)
        return F.log_softmax(x, dim=1)


def relation_adjacency(edge_index, edge_type, num_nodes, num_relations):
    """One mean-normalised sparse adjacency per relation: rows the target nodes, values 1 / in-degree."""
    adj_ts = []
    for r in range(num_relations):
        src, dst = edge_index[:, edge_type == r]
        deg = torch.zeros(num_nodes).index_add_(0, dst, torch.ones(dst.numel()))
        val = 1.0 / deg[dst]
        adj_ts.append(torch.sparse_coo_tensor(torch.stack([dst, src]), val, (num_nodes, num_nodes)).coalesce())
    return tuple(adj_ts)


def b_rgcn():
    n, base_relations, classes = 60, 2, 4
    edge_index = random_edges(n, 120, seed=4)  # both directions: the forward half, then the inverse half
    half = edge_index.shape[1] // 2
    fwd_type = randint(base_relations, half, seed=5)
    edge_type = torch.cat([fwd_type, fwd_type + base_relations])  # inverse relations after the others
    adj_ts = relation_adjacency(edge_index, edge_type, n, 2 * base_relations)
    train_mask = torch.arange(n) % 4 != 3
    return dict(model=RGCNNet(n, 2 * base_relations, classes), inputs=(adj_ts,),
                target=(randint(classes, n, seed=3), train_mask), loss=masked_nll)


# ---------------------------------------------------------------------------------------
# MobileOne as apple/ml-mobileone writes it (mobileone.py, training mode, use_se as in s4,
# num_conv_branches 2, the widths quartered): stage0 (a MobileOneBlock 3 -> 16, stride 2),
# stage1..stage4 (Sequentials of a depthwise MobileOneBlock (3x3, groups = channels, the
# stride) then a pointwise one (1x1), per block; SE in the later half of stage3 and all of
# stage4), gap, linear. MobileOneBlock: rbr_skip (a BatchNorm2d when channels and stride allow),
# rbr_scale (a 1x1 conv-BN Sequential when the kernel is larger than 1), rbr_conv (a ModuleList
# of conv-BN Sequentials), out = scale_out + identity_out, out += each conv branch, se (SEBlock:
# F.avg_pool2d over the map, reduce, F.relu, expand, sigmoid, view, inputs * x; or an
# Identity), activation (ReLU). Cross entropy.


class SEBlock(nn.Module):
    """ Squeeze and Excite module.

        Pytorch implementation of `Squeeze-and-Excitation Networks` -
        https://arxiv.org/pdf/1709.01507.pdf
    """

    def __init__(self, in_channels, rd_ratio=0.0625):
        super().__init__()
        self.reduce = nn.Conv2d(in_channels=in_channels, out_channels=int(in_channels * rd_ratio), kernel_size=1,
                                stride=1, bias=True)
        self.expand = nn.Conv2d(in_channels=int(in_channels * rd_ratio), out_channels=in_channels, kernel_size=1,
                                stride=1, bias=True)

    def forward(self, inputs):
        b, c, h, w = inputs.size()
        x = F.avg_pool2d(inputs, kernel_size=[h, w])
        x = self.reduce(x)
        x = F.relu(x)
        x = self.expand(x)
        x = torch.sigmoid(x)
        x = x.view(-1, c, 1, 1)
        return inputs * x


class MobileOneBlock(nn.Module):
    """ MobileOne building block.

        This block has a multi-branched architecture at train-time
        and plain-CNN style architecture at inference time
        For more details, please refer to our paper:
        `An Improved One millisecond Mobile Backbone` -
        https://arxiv.org/pdf/2206.04040.pdf
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 inference_mode=False, use_se=False, num_conv_branches=1):
        super().__init__()
        self.inference_mode = inference_mode
        self.groups = groups
        self.stride = stride
        self.kernel_size = kernel_size
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_conv_branches = num_conv_branches

        # Check if SE-ReLU is requested
        if use_se:
            self.se = SEBlock(out_channels)
        else:
            self.se = nn.Identity()
        self.activation = nn.ReLU()

        assert not inference_mode, "the train-time branches only"
        # Re-parameterizable skip connection
        self.rbr_skip = nn.BatchNorm2d(num_features=in_channels) \
            if out_channels == in_channels and stride == 1 else None

        # Re-parameterizable conv branches
        rbr_conv = list()
        for _ in range(self.num_conv_branches):
            rbr_conv.append(self._conv_bn(kernel_size=kernel_size, padding=padding))
        self.rbr_conv = nn.ModuleList(rbr_conv)

        # Re-parameterizable scale branch
        self.rbr_scale = None
        if kernel_size > 1:
            self.rbr_scale = self._conv_bn(kernel_size=1, padding=0)

    def forward(self, x):
        """ Apply forward pass. """
        # Multi-branched train-time forward pass.
        # Skip branch output
        identity_out = 0
        if self.rbr_skip is not None:
            identity_out = self.rbr_skip(x)

        # Scale branch output
        scale_out = 0
        if self.rbr_scale is not None:
            scale_out = self.rbr_scale(x)

        # Other branches
        out = scale_out + identity_out
        for ix in range(self.num_conv_branches):
            out += self.rbr_conv[ix](x)

        return self.activation(self.se(out))

    def _conv_bn(self, kernel_size, padding):
        mod_list = nn.Sequential()
        mod_list.add_module("conv", nn.Conv2d(in_channels=self.in_channels, out_channels=self.out_channels,
                                              kernel_size=kernel_size, stride=self.stride, padding=padding,
                                              groups=self.groups, bias=False))
        mod_list.add_module("bn", nn.BatchNorm2d(num_features=self.out_channels))
        return mod_list


class MobileOne(nn.Module):
    """ MobileOne Model

        Pytorch implementation of `An Improved One millisecond Mobile Backbone` -
        https://arxiv.org/pdf/2206.04040.pdf
    """

    def __init__(self, num_blocks_per_stage=[2, 8, 10, 1], num_classes=1000, width_multipliers=None,
                 inference_mode=False, use_se=False, num_conv_branches=1):
        super().__init__()

        assert len(width_multipliers) == 4
        self.inference_mode = inference_mode
        self.in_planes = min(64, int(64 * width_multipliers[0]))
        self.use_se = use_se
        self.num_conv_branches = num_conv_branches

        # Build stages
        self.stage0 = MobileOneBlock(in_channels=3, out_channels=self.in_planes, kernel_size=3, stride=2, padding=1,
                                     inference_mode=self.inference_mode)
        self.cur_layer_idx = 1
        self.stage1 = self._make_stage(int(64 * width_multipliers[0]), num_blocks_per_stage[0], num_se_blocks=0)
        self.stage2 = self._make_stage(int(128 * width_multipliers[1]), num_blocks_per_stage[1], num_se_blocks=0)
        self.stage3 = self._make_stage(int(256 * width_multipliers[2]), num_blocks_per_stage[2],
                                       num_se_blocks=int(num_blocks_per_stage[2] // 2) if use_se else 0)
        self.stage4 = self._make_stage(int(512 * width_multipliers[3]), num_blocks_per_stage[3],
                                       num_se_blocks=num_blocks_per_stage[3] if use_se else 0)
        self.gap = nn.AdaptiveAvgPool2d(output_size=1)
        self.linear = nn.Linear(int(512 * width_multipliers[3]), num_classes)

    def _make_stage(self, planes, num_blocks, num_se_blocks):
        # Get strides for all layers
        strides = [2] + [1] * (num_blocks - 1)
        blocks = []
        for ix, stride in enumerate(strides):
            use_se = False
            if num_se_blocks > num_blocks:
                raise ValueError("Number of SE blocks cannot exceed number of layers.")
            if ix >= (num_blocks - num_se_blocks):
                use_se = True

            # Depthwise conv
            blocks.append(MobileOneBlock(in_channels=self.in_planes, out_channels=self.in_planes, kernel_size=3,
                                         stride=stride, padding=1, groups=self.in_planes,
                                         inference_mode=self.inference_mode, use_se=use_se,
                                         num_conv_branches=self.num_conv_branches))
            # Pointwise conv
            blocks.append(MobileOneBlock(in_channels=self.in_planes, out_channels=planes, kernel_size=1, stride=1,
                                         padding=0, groups=1, inference_mode=self.inference_mode, use_se=use_se,
                                         num_conv_branches=self.num_conv_branches))
            self.in_planes = planes
            self.cur_layer_idx += 1
        return nn.Sequential(*blocks)

    def forward(self, x):
        """ Apply forward pass. """
        x = self.stage0(x)
        x = self.stage1(x)
        x = self.stage2(x)
        x = self.stage3(x)
        x = self.stage4(x)
        x = self.gap(x)
        x = x.view(x.size(0), -1)
        x = self.linear(x)
        return x


def b_mobileone():
    model = MobileOne(num_blocks_per_stage=[1, 2, 2, 1], num_classes=10, width_multipliers=(0.25, 0.25, 0.25, 0.25),
                      use_se=True, num_conv_branches=2)
    return dict(model=model, inputs=(randn(4, 3, 32, 32),), target=randint(10, 4), loss=ce)


# ---------------------------------------------------------------------------------------
# An E-Branchformer CTC model as ESPnet writes it (espnet2/asr/encoder/e_branchformer_encoder.py,
# espnet2/asr/layers/cgmlp.py, the transformer layers of espnet/nets/pytorch_backend, abs_pos
# and selfattn, use_ffn and macaron_ffn on): ESPnetASRModel's encoder and ctc. encoder
# (EBranchformerEncoder: the pad mask, embed (Conv2dSubsampling: conv, a Sequential of Conv2d,
# ReLU, Conv2d, ReLU; out, a Sequential of the Linear and PositionalEncoding (x * xscale + pe,
# dropout); the mask subsampled by slices), encoders (repeat's MultiSequential of
# EBranchformerEncoderLayers, a layer-drop draw each call), after_norm). EBranchformerEncoderLayer:
# norm_ff_macaron, feed_forward_macaron (PositionwiseFeedForward: w_1, a Swish module, dropout,
# w_2) at half step; two branches of one input: norm_mha then attn (MultiHeadedAttention:
# linear_q/k/v, scores masked with the dtype's min, softmax, masked again, dropout, matmul,
# linear_out), dropout; norm_mlp then cgmlp (ConvolutionalGatingMLP: channel_proj1 a Sequential
# of Linear and GELU; csgu (ConvolutionalSpatialGatingUnit: chunk, norm, depthwise conv over
# time, an Identity act, x_r * x_g, dropout); channel_proj2), dropout; cat, the depthwise
# depthwise_conv_fusion, x + dropout(merge_proj(x_concat + x_tmp)); norm_ff, feed_forward at
# half step; norm_final. LayerNorm is ESPnet's (eps 1e-12). One Swish a feed-forward (ESPnet
# hands one instance to all of them). ctc (CTC: ctc_lo over F.dropout, time first); the builtin
# CTC loss as ESPnet's CTC.loss_fn computes it: log_softmax, CTCLoss(reduction "none"), summed,
# divided by the batch.


class LayerNorm(torch.nn.LayerNorm):
    """Layer normalization module."""

    def __init__(self, nout, dim=-1):
        super().__init__(nout, eps=1e-12)
        self.dim = dim

    def forward(self, x):
        if self.dim == -1:
            return super().forward(x)
        return super().forward(x.transpose(self.dim, -1)).transpose(self.dim, -1)


class Swish(torch.nn.Module):
    """Swish activation definition."""

    def __init__(self, beta=1.0):
        super().__init__()
        self.beta = beta
        if beta > 1:
            self.swish = lambda x: (x * torch.sigmoid(x * self.beta)) / self.beta
        else:
            self.swish = lambda x: x * torch.sigmoid(x)

    def forward(self, x):
        return self.swish(x)


def get_espnet_activation(act):
    activation_funcs = {"relu": torch.nn.ReLU, "swish": Swish, "gelu": torch.nn.GELU}
    return activation_funcs[act]()


class PositionalEncoding(torch.nn.Module):
    def __init__(self, d_model, dropout_rate, max_len=5000, reverse=False):
        super().__init__()
        self.d_model = d_model
        self.reverse = reverse
        self.xscale = math.sqrt(self.d_model)
        self.dropout = torch.nn.Dropout(p=dropout_rate)
        self.pe = None
        self.extend_pe(torch.tensor(0.0).expand(1, max_len))

    def extend_pe(self, x):
        """Reset the positional encodings."""
        if self.pe is not None:
            if self.pe.size(1) >= x.size(1):
                if self.pe.dtype != x.dtype or self.pe.device != x.device:
                    self.pe = self.pe.to(dtype=x.dtype, device=x.device)
                return
        pe = torch.zeros(x.size(1), self.d_model)
        if self.reverse:
            position = torch.arange(x.size(1) - 1, -1, -1.0, dtype=torch.float32).unsqueeze(1)
        else:
            position = torch.arange(0, x.size(1), dtype=torch.float32).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, self.d_model, 2, dtype=torch.float32) *
                             -(math.log(10000.0) / self.d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        self.pe = pe.to(device=x.device, dtype=x.dtype)

    def forward(self, x):
        self.extend_pe(x)
        x = x * self.xscale + self.pe[:, : x.size(1)]
        return self.dropout(x)


class Conv2dSubsampling(torch.nn.Module):
    """Convolutional 2D subsampling (to 1/4 length)."""

    def __init__(self, idim, odim, dropout_rate, pos_enc=None):
        super().__init__()
        self.conv = torch.nn.Sequential(
            torch.nn.Conv2d(1, odim, 3, 2),
            torch.nn.ReLU(),
            torch.nn.Conv2d(odim, odim, 3, 2),
            torch.nn.ReLU(),
        )
        self.out = torch.nn.Sequential(
            torch.nn.Linear(odim * (((idim - 1) // 2 - 1) // 2), odim),
            pos_enc if pos_enc is not None else PositionalEncoding(odim, dropout_rate),
        )

    def forward(self, x, x_mask):
        x = x.unsqueeze(1)  # (b, c, t, f)
        x = self.conv(x)
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))
        if x_mask is None:
            return x, None
        return x, x_mask[:, :, :-2:2][:, :, :-2:2]


class MultiHeadedAttention(nn.Module):
    """Multi-Head Attention layer."""

    def __init__(self, n_head, n_feat, dropout_rate):
        super().__init__()
        assert n_feat % n_head == 0
        # We assume d_v always equals d_k
        self.d_k = n_feat // n_head
        self.h = n_head
        self.linear_q = nn.Linear(n_feat, n_feat)
        self.linear_k = nn.Linear(n_feat, n_feat)
        self.linear_v = nn.Linear(n_feat, n_feat)
        self.linear_out = nn.Linear(n_feat, n_feat)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout_rate)

    def forward_qkv(self, query, key, value):
        n_batch = query.size(0)
        q = self.linear_q(query).view(n_batch, -1, self.h, self.d_k)
        k = self.linear_k(key).view(n_batch, -1, self.h, self.d_k)
        v = self.linear_v(value).view(n_batch, -1, self.h, self.d_k)
        q = q.transpose(1, 2)  # (batch, head, time1, d_k)
        k = k.transpose(1, 2)  # (batch, head, time2, d_k)
        v = v.transpose(1, 2)  # (batch, head, time2, d_k)

        return q, k, v

    def forward_attention(self, value, scores, mask):
        n_batch = value.size(0)
        if mask is not None:
            mask = mask.unsqueeze(1).eq(0)  # (batch, 1, *, time2)
            min_value = torch.finfo(scores.dtype).min
            scores = scores.masked_fill(mask, min_value)
            self.attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)  # (batch, head, time1, time2)
        else:
            self.attn = torch.softmax(scores, dim=-1)  # (batch, head, time1, time2)

        p_attn = self.dropout(self.attn)
        x = torch.matmul(p_attn, value)  # (batch, head, time1, d_k)
        x = x.transpose(1, 2).contiguous().view(n_batch, -1, self.h * self.d_k)  # (batch, time1, d_model)

        return self.linear_out(x)  # (batch, time1, d_model)

    def forward(self, query, key, value, mask):
        q, k, v = self.forward_qkv(query, key, value)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        return self.forward_attention(v, scores, mask)


class PositionwiseFeedForward(torch.nn.Module):
    """Positionwise feed forward layer."""

    def __init__(self, idim, hidden_units, dropout_rate, activation=torch.nn.ReLU()):
        super().__init__()
        self.w_1 = torch.nn.Linear(idim, hidden_units)
        self.w_2 = torch.nn.Linear(hidden_units, idim)
        self.dropout = torch.nn.Dropout(dropout_rate)
        self.activation = activation

    def forward(self, x):
        return self.w_2(self.dropout(self.activation(self.w_1(x))))


class ConvolutionalSpatialGatingUnit(torch.nn.Module):
    """Convolutional Spatial Gating Unit (CSGU)."""

    def __init__(self, size, kernel_size, dropout_rate, use_linear_after_conv, gate_activation):
        super().__init__()

        n_channels = size // 2  # split input channels
        self.norm = LayerNorm(n_channels)
        self.conv = torch.nn.Conv1d(n_channels, n_channels, kernel_size, 1, (kernel_size - 1) // 2,
                                    groups=n_channels)
        if use_linear_after_conv:
            self.linear = torch.nn.Linear(n_channels, n_channels)
        else:
            self.linear = None

        if gate_activation == "identity":
            self.act = torch.nn.Identity()
        else:
            self.act = get_espnet_activation(gate_activation)

        self.dropout = torch.nn.Dropout(dropout_rate)

    def espnet_initialization_fn(self):
        torch.nn.init.normal_(self.conv.weight, std=1e-6)
        torch.nn.init.ones_(self.conv.bias)
        if self.linear is not None:
            torch.nn.init.normal_(self.linear.weight, std=1e-6)
            torch.nn.init.ones_(self.linear.bias)

    def forward(self, x, gate_add=None):
        x_r, x_g = x.chunk(2, dim=-1)

        x_g = self.norm(x_g)  # (N, T, D/2)
        x_g = self.conv(x_g.transpose(1, 2)).transpose(1, 2)  # (N, T, D/2)
        if self.linear is not None:
            x_g = self.linear(x_g)

        if gate_add is not None:
            x_g = x_g + gate_add

        x_g = self.act(x_g)
        out = x_r * x_g  # (N, T, D/2)
        out = self.dropout(out)
        return out


class ConvolutionalGatingMLP(torch.nn.Module):
    """Convolutional Gating MLP (cgMLP)."""

    def __init__(self, size, linear_units, kernel_size, dropout_rate, use_linear_after_conv, gate_activation):
        super().__init__()

        self.channel_proj1 = torch.nn.Sequential(torch.nn.Linear(size, linear_units), torch.nn.GELU())
        self.csgu = ConvolutionalSpatialGatingUnit(size=linear_units, kernel_size=kernel_size,
                                                   dropout_rate=dropout_rate,
                                                   use_linear_after_conv=use_linear_after_conv,
                                                   gate_activation=gate_activation)
        self.channel_proj2 = torch.nn.Linear(linear_units // 2, size)

    def forward(self, x, mask):
        if isinstance(x, tuple):
            xs_pad, pos_emb = x
        else:
            xs_pad, pos_emb = x, None

        xs_pad = self.channel_proj1(xs_pad)  # size -> linear_units
        xs_pad = self.csgu(xs_pad)  # linear_units -> linear_units/2
        xs_pad = self.channel_proj2(xs_pad)  # linear_units/2 -> size

        if pos_emb is not None:
            out = (xs_pad, pos_emb)
        else:
            out = xs_pad
        return out


class EBranchformerEncoderLayer(torch.nn.Module):
    """E-Branchformer encoder layer module."""

    def __init__(self, size, attn, cgmlp, feed_forward, feed_forward_macaron, dropout_rate, merge_conv_kernel=3):
        super().__init__()

        self.size = size
        self.attn = attn
        self.cgmlp = cgmlp

        self.feed_forward = feed_forward
        self.feed_forward_macaron = feed_forward_macaron
        self.ff_scale = 1.0
        if self.feed_forward is not None:
            self.ff_scale = 0.5
            self.norm_ff = LayerNorm(size)
        if self.feed_forward_macaron is not None:
            self.ff_scale = 0.5
            self.norm_ff_macaron = LayerNorm(size)

        self.norm_mha = LayerNorm(size)  # for the MHA module
        self.norm_mlp = LayerNorm(size)  # for the MLP module
        self.norm_final = LayerNorm(size)  # for the final output of the block

        self.dropout = torch.nn.Dropout(dropout_rate)

        self.depthwise_conv_fusion = torch.nn.Conv1d(size + size, size + size, kernel_size=merge_conv_kernel, stride=1,
                                                     padding=(merge_conv_kernel - 1) // 2, groups=size + size,
                                                     bias=True)
        self.merge_proj = torch.nn.Linear(size + size, size)

    def forward(self, x_input, mask, cache=None):
        if cache is not None:
            raise NotImplementedError("cache is not None, which is not tested")

        if isinstance(x_input, tuple):
            x, pos_emb = x_input[0], x_input[1]
        else:
            x, pos_emb = x_input, None

        if self.feed_forward_macaron is not None:
            residual = x
            x = self.norm_ff_macaron(x)
            x = residual + self.ff_scale * self.dropout(self.feed_forward_macaron(x))

        # Two branches
        x1 = x
        x2 = x

        # Branch 1: multi-headed attention module
        x1 = self.norm_mha(x1)

        if pos_emb is not None:
            x_att = self.attn(x1, x1, x1, pos_emb, mask)
        else:
            x_att = self.attn(x1, x1, x1, mask)

        x1 = self.dropout(x_att)

        # Branch 2: convolutional gating mlp
        x2 = self.norm_mlp(x2)

        if pos_emb is not None:
            x2 = (x2, pos_emb)
        x2 = self.cgmlp(x2, mask)
        if isinstance(x2, tuple):
            x2 = x2[0]

        x2 = self.dropout(x2)

        # Merge two branches
        x_concat = torch.cat([x1, x2], dim=-1)
        x_tmp = x_concat.transpose(1, 2)
        x_tmp = self.depthwise_conv_fusion(x_tmp)
        x_tmp = x_tmp.transpose(1, 2)
        x = x + self.dropout(self.merge_proj(x_concat + x_tmp))

        if self.feed_forward is not None:
            # feed forward module
            residual = x
            x = self.norm_ff(x)
            x = residual + self.ff_scale * self.dropout(self.feed_forward(x))

        x = self.norm_final(x)

        if pos_emb is not None:
            return (x, pos_emb), mask

        return x, mask


class MultiSequential(torch.nn.Sequential):
    """Multi-input multi-output torch.nn.Sequential."""

    def __init__(self, *args, layer_drop_rate=0.0):
        super().__init__(*args)
        self.layer_drop_rate = layer_drop_rate

    def forward(self, *args):
        _probs = torch.empty(len(self)).uniform_()
        for idx, m in enumerate(self):
            if not self.training or (_probs[idx] >= self.layer_drop_rate):
                args = m(*args)
        return args


def repeat(N, fn, layer_drop_rate=0.0):
    return MultiSequential(*[fn(n) for n in range(N)], layer_drop_rate=layer_drop_rate)


class EBranchformerEncoder(nn.Module):
    """E-Branchformer encoder module."""

    def __init__(self, input_size, output_size=256, attention_heads=4, cgmlp_linear_units=2048, cgmlp_conv_kernel=31,
                 use_linear_after_conv=False, gate_activation="identity", num_blocks=12, dropout_rate=0.1,
                 positional_dropout_rate=0.1, attention_dropout_rate=0.0, max_pos_emb_len=5000, layer_drop_rate=0.0,
                 use_ffn=False, macaron_ffn=False, ffn_activation_type="swish", linear_units=2048,
                 merge_conv_kernel=3):
        super().__init__()
        self._output_size = output_size

        self.embed = Conv2dSubsampling(input_size, output_size, dropout_rate,
                                       PositionalEncoding(output_size, positional_dropout_rate, max_pos_emb_len))

        def positionwise_layer():
            return PositionwiseFeedForward(output_size, linear_units, dropout_rate,
                                           get_espnet_activation(ffn_activation_type))

        encoder_selfattn_layer_args = (attention_heads, output_size, attention_dropout_rate)
        cgmlp_layer_args = (output_size, cgmlp_linear_units, cgmlp_conv_kernel, dropout_rate, use_linear_after_conv,
                            gate_activation)

        self.encoders = repeat(
            num_blocks,
            lambda lnum: EBranchformerEncoderLayer(
                output_size,
                MultiHeadedAttention(*encoder_selfattn_layer_args),
                ConvolutionalGatingMLP(*cgmlp_layer_args),
                positionwise_layer() if use_ffn else None,
                positionwise_layer() if use_ffn and macaron_ffn else None,
                dropout_rate,
                merge_conv_kernel,
            ),
            layer_drop_rate,
        )
        self.after_norm = LayerNorm(output_size)

    def output_size(self):
        return self._output_size

    def forward(self, xs_pad, ilens, prev_states=None):
        masks = (~make_pad_mask(ilens)[:, None, :]).to(xs_pad.device)
        xs_pad, masks = self.embed(xs_pad, masks)
        xs_pad, masks = self.encoders(xs_pad, masks)

        if isinstance(xs_pad, tuple):
            xs_pad = xs_pad[0]

        xs_pad = self.after_norm(xs_pad)
        olens = masks.squeeze(1).sum(1)
        return xs_pad, olens, None


class CTC(torch.nn.Module):
    """CTC module (ctc_type builtin): ctc_lo; the loss is computed in espnet_ctc_loss."""

    def __init__(self, odim, encoder_output_size, dropout_rate=0.0):
        super().__init__()
        eprojs = encoder_output_size
        self.dropout_rate = dropout_rate
        self.ctc_lo = torch.nn.Linear(eprojs, odim)

    def forward(self, hs_pad):
        # hs_pad: (B, L, NProj) -> ys_hat: (B, L, Nvocab), then (L, B, Nvocab) for the builtin loss
        ys_hat = self.ctc_lo(F.dropout(hs_pad, p=self.dropout_rate))
        ys_hat = ys_hat.transpose(0, 1)
        return ys_hat


class ESPnetASRModel(nn.Module):
    """The encoder and CTC of ESPnetASRModel (ctc_weight 1.0, no frontend, specaug, normalize or decoder)."""

    def __init__(self, vocab_size, encoder, ctc):
        super().__init__()
        self.vocab_size = vocab_size
        self.encoder = encoder
        self.ctc = ctc

    def forward(self, speech, speech_lengths):
        encoder_out, encoder_out_lens, _ = self.encoder(speech, speech_lengths)
        return self.ctc(encoder_out), encoder_out_lens


def espnet_ctc_loss(out, target):
    th_pred, hlens = out
    ys_pad, ys_lens = target
    ys_true = torch.cat([ys_pad[i, :l] for i, l in enumerate(ys_lens)])  # the builtin loss takes them concatenated
    th_pred = th_pred.log_softmax(2)
    loss = F.ctc_loss(th_pred, ys_true, hlens, ys_lens, reduction="none", zero_infinity=True)
    size = th_pred.size(1)
    return loss.sum() / size


def b_e_branchformer():
    batch, frames, feats, vocab = 4, 48, 40, 20
    speech_lengths = torch.tensor([48, 40, 36, 48])
    speech = randn(batch, frames, feats)
    speech = speech.masked_fill(make_pad_mask(speech_lengths).unsqueeze(-1), 0.0)
    ys_lens = torch.tensor([4, 3, 3, 4])
    ys_pad = randint(vocab - 1, batch, 4, seed=3) + 1  # 0 is the blank
    encoder = EBranchformerEncoder(feats, output_size=32, attention_heads=4, cgmlp_linear_units=64,
                                   cgmlp_conv_kernel=7, num_blocks=2, dropout_rate=0.1, use_ffn=True,
                                   macaron_ffn=True, linear_units=64)
    model = ESPnetASRModel(vocab, encoder, CTC(vocab, encoder.output_size()))
    return dict(model=model, inputs=(speech, speech_lengths), target=(ys_pad, ys_lens), loss=espnet_ctc_loss)


# ---------------------------------------------------------------------------------------
# TimesNet as thuml's Time-Series-Library writes it (models/TimesNet.py, layers/Embed.py,
# layers/Conv_Blocks.py; long_term_forecast, embed timeF, freq h): the Non-stationary
# Transformer normalisation (means detached, the unbiased=False stdev), enc_embedding
# (DataEmbedding: value_embedding a TokenEmbedding, circular Conv1d; temporal_embedding a
# TimeFeatureEmbedding, a bias-free Linear over the 4 time features; position_embedding a
# sinusoid buffer; summed in that order, dropout; TokenEmbedding and PositionalEmbedding are
# tools/record_cpu_variants8.py's, identical in both libraries), predict_linear over time, model
# (a ModuleList of TimesBlocks: FFT_for_Period (rfft over time, the amplitudes averaged, the DC
# zeroed in place, topk, the periods in numpy), per period zero padding by cat, reshape to
# (B, N, length / period, period), conv (a Sequential of Inception_Block_V1 (a ModuleList of
# Conv2d of kernels 1, 3, 5, stacked and averaged), GELU, Inception_Block_V1), reshape back;
# stacked, the softmax of the period amplitudes repeated, the weighted sum, + x), one
# layer_norm after every block, projection, the de-normalisation. MSE on the horizon.


class TimeFeatureEmbedding(nn.Module):
    def __init__(self, d_model, embed_type="timeF", freq="h"):
        super().__init__()

        freq_map = {"h": 4, "t": 5, "s": 6, "m": 1, "a": 1, "w": 2, "d": 3, "b": 3}
        d_inp = freq_map[freq]
        self.embed = nn.Linear(d_inp, d_model, bias=False)

    def forward(self, x):
        return self.embed(x)


class DataEmbedding(nn.Module):
    def __init__(self, c_in, d_model, embed_type="fixed", freq="h", dropout=0.1):
        super().__init__()

        self.value_embedding = TokenEmbedding(c_in=c_in, d_model=d_model)
        self.position_embedding = TSPositionalEmbedding(d_model=d_model)
        assert embed_type == "timeF", "TemporalEmbedding: not used here"
        self.temporal_embedding = TimeFeatureEmbedding(d_model=d_model, embed_type=embed_type, freq=freq)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, x_mark):
        if x_mark is None:
            x = self.value_embedding(x) + self.position_embedding(x)
        else:
            x = self.value_embedding(x) + self.temporal_embedding(x_mark) + self.position_embedding(x)
        return self.dropout(x)


class Inception_Block_V1(nn.Module):
    def __init__(self, in_channels, out_channels, num_kernels=6, init_weight=True):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_kernels = num_kernels
        kernels = []
        for i in range(self.num_kernels):
            kernels.append(nn.Conv2d(in_channels, out_channels, kernel_size=2 * i + 1, padding=i))
        self.kernels = nn.ModuleList(kernels)
        if init_weight:
            self._initialize_weights()

    def _initialize_weights(self):
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        res_list = []
        for i in range(self.num_kernels):
            res_list.append(self.kernels[i](x))
        res = torch.stack(res_list, dim=-1).mean(-1)
        return res


def FFT_for_Period(x, k=2):
    # [B, T, C]
    xf = torch.fft.rfft(x, dim=1)
    # find period by amplitudes
    frequency_list = abs(xf).mean(0).mean(-1)
    frequency_list[0] = 0
    _, top_list = torch.topk(frequency_list, k)
    top_list = top_list.detach().cpu().numpy()
    period = x.shape[1] // top_list
    return period, abs(xf).mean(-1)[:, top_list]


class TimesBlock(nn.Module):
    def __init__(self, configs):
        super().__init__()
        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len
        self.k = configs.top_k
        # parameter-efficient design
        self.conv = nn.Sequential(
            Inception_Block_V1(configs.d_model, configs.d_ff, num_kernels=configs.num_kernels),
            nn.GELU(),
            Inception_Block_V1(configs.d_ff, configs.d_model, num_kernels=configs.num_kernels)
        )

    def forward(self, x):
        B, T, N = x.size()
        period_list, period_weight = FFT_for_Period(x, self.k)

        res = []
        for i in range(self.k):
            period = period_list[i]
            # padding
            if (self.seq_len + self.pred_len) % period != 0:
                length = (((self.seq_len + self.pred_len) // period) + 1) * period
                padding = torch.zeros([x.shape[0], (length - (self.seq_len + self.pred_len)), x.shape[2]]).to(x.device)
                out = torch.cat([x, padding], dim=1)
            else:
                length = (self.seq_len + self.pred_len)
                out = x
            # reshape
            out = out.reshape(B, length // period, period, N).permute(0, 3, 1, 2).contiguous()
            # 2D conv: from 1d Variation to 2d Variation
            out = self.conv(out)
            # reshape back
            out = out.permute(0, 2, 3, 1).reshape(B, -1, N)
            res.append(out[:, :(self.seq_len + self.pred_len), :])
        res = torch.stack(res, dim=-1)
        # adaptive aggregation
        period_weight = F.softmax(period_weight, dim=1)
        period_weight = period_weight.unsqueeze(1).unsqueeze(1).repeat(1, T, N, 1)
        res = torch.sum(res * period_weight, -1)
        # residual connection
        res = res + x
        return res


class Model(nn.Module):
    """
    Paper link: https://openreview.net/pdf?id=ju_Uqw384Oq
    """

    def __init__(self, configs):
        super().__init__()
        self.configs = configs
        self.task_name = configs.task_name
        self.seq_len = configs.seq_len
        self.label_len = configs.label_len
        self.pred_len = configs.pred_len
        self.model = nn.ModuleList([TimesBlock(configs) for _ in range(configs.e_layers)])
        self.enc_embedding = DataEmbedding(configs.enc_in, configs.d_model, configs.embed, configs.freq,
                                           configs.dropout)
        self.layer = configs.e_layers
        self.layer_norm = nn.LayerNorm(configs.d_model)
        assert self.task_name == "long_term_forecast"
        self.predict_linear = nn.Linear(self.seq_len, self.pred_len + self.seq_len)
        self.projection = nn.Linear(configs.d_model, configs.c_out, bias=True)

    def forecast(self, x_enc, x_mark_enc, x_dec, x_mark_dec):
        # Normalization from Non-stationary Transformer
        means = x_enc.mean(1, keepdim=True).detach()
        x_enc = x_enc.sub(means)
        stdev = torch.sqrt(torch.var(x_enc, dim=1, keepdim=True, unbiased=False) + 1e-5)
        x_enc = x_enc.div(stdev)

        # embedding
        enc_out = self.enc_embedding(x_enc, x_mark_enc)  # [B,T,C]
        enc_out = self.predict_linear(enc_out.permute(0, 2, 1)).permute(0, 2, 1)  # align temporal dimension
        # TimesNet
        for i in range(self.layer):
            enc_out = self.layer_norm(self.model[i](enc_out))
        # project back
        dec_out = self.projection(enc_out)

        # De-Normalization from Non-stationary Transformer
        dec_out = dec_out.mul((stdev[:, 0, :].unsqueeze(1).repeat(1, self.pred_len + self.seq_len, 1)))
        dec_out = dec_out.add((means[:, 0, :].unsqueeze(1).repeat(1, self.pred_len + self.seq_len, 1)))
        return dec_out

    def forward(self, x_enc, x_mark_enc, x_dec, x_mark_dec, mask=None):
        dec_out = self.forecast(x_enc, x_mark_enc, x_dec, x_mark_dec)
        return dec_out[:, -self.pred_len:, :]  # [B, L, D]


class TimesNetConfigs:
    """The run.py arguments TimesNet reads."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def hourly_time_features(batch, length, start):
    """time_features(dates, freq='h') for timeenc 1: HourOfDay, DayOfWeek, DayOfMonth, DayOfYear, each in
    [-0.5, 0.5]."""
    hours = start[:, None] + torch.arange(length)[None, :]
    days = hours // 24
    hour = (hours % 24).float() / 23.0 - 0.5
    weekday = (days % 7).float() / 6.0 - 0.5
    day = (days % 28).float() / 30.0 - 0.5
    yday = (days % 336).float() / 365.0 - 0.5
    return torch.stack([hour, weekday, day, yday], dim=-1)


def b_timesnet():
    batch, seq_len, label_len, pred_len, c = 4, 24, 12, 12, 4
    series = randn(batch, seq_len + pred_len, c)
    marks = hourly_time_features(batch, seq_len + pred_len, randint(500, batch, seed=5))
    batch_x, batch_x_mark = series[:, :seq_len], marks[:, :seq_len]
    batch_y, batch_y_mark = series[:, seq_len - label_len:], marks[:, seq_len - label_len:]
    dec_inp = torch.zeros_like(batch_y[:, -pred_len:, :]).float()
    dec_inp = torch.cat([batch_y[:, :label_len, :], dec_inp], dim=1).float()
    configs = TimesNetConfigs(task_name="long_term_forecast", seq_len=seq_len, label_len=label_len,
                              pred_len=pred_len, e_layers=2, enc_in=c, c_out=c, d_model=16, d_ff=16, top_k=2,
                              num_kernels=3, embed="timeF", freq="h", dropout=0.1)
    return dict(model=Model(configs), inputs=(batch_x, batch_x_mark, dec_inp, batch_y_mark),
                target=batch_y[:, -pred_len:, :], loss=mse)


REGISTRY = [
    ("retnet_lite", "llm", "adamw", b_retnet),
    ("hyena_lm", "decoder", "adamw", b_hyena),
    ("transunet_lite", "unet", "sgd", b_transunet),
    ("finalmlp_ctr", "recsys", "adam", b_finalmlp),
    ("rgcn_basis", "gnn", "adam", b_rgcn),
    ("mobileone_train", "depthwise", "sgd", b_mobileone),
    ("e_branchformer", "speech", "adam", b_e_branchformer),
    ("timesnet_lite", "timeseries", "adam", b_timesnet),
]

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS9 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants9.py",
    os.path.join(DATA, "corpus-cpu-variants9"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-backward", "corpus-cpu-modern", "corpus-cpu-families",
                                      "corpus-cpu-heldout", "corpus-cpu-variants", "corpus-cpu-variants2",
                                      "corpus-cpu-variants3", "corpus-cpu-variants4", "corpus-cpu-variants5",
                                      "corpus-cpu-variants6", "corpus-cpu-variants7", "corpus-cpu-variants8",
                                      "corpus-cpu-objectives", "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS9)
