#!/usr/bin/env python3
"""Record Strata's tenth variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on the other variants corpora; this script records
tests/data/corpus-cpu-variants10, recorded after the rules, to measure them once on models they
were not written on, then to be tuned on as the other variants are: google-deepmind's
RecurrentGemma Griffin in PyTorch (ResidualBlocks of an RMSNorm, a temporal block and a gated
GeLU MLPBlock; the RecurrentBlock's linear_y GeLU branch and linear_x branch through a Conv1D
written as a loop over temporal shifts and the RG-LRU, its BlockDiagonalLinear input and a gates
and its scan over time by hand; a LocalAttentionBlock of multi-query attention with RoPE and a
sliding-window mask; the Embedder's table read by indexing and reused as the head), bwconrad's
Soft MoE ViT on timm's layers (SoftMoELayerWrapper: phi, the normalised tokens and slots,
dispatch softmax over tokens, combine softmax over all slots, a ModuleList of expert Mlps, one
per slot group; in the later blocks only; a conv PatchEmbed, no class token, mean pooling),
quark0's DARTS search network (cells of MixedOps over none, pools, skip, sep and dil convs,
weighted by the softmax of architecture alphas; ReLUConvBN and FactorizedReduce preprocessing;
reduction cells), yanx27's PointNet++ SSG classifier (farthest point sampling and ball query in
torch, PointNetSetAbstraction's shared Conv2d-BatchNorm2d MLP with F.relu and a max over each
group, group_all at the end, an FC head with dropout), Microsoft's FocalNet (FocalModulation's
f, hierarchical depthwise conv and GELU focal layers, gated aggregation, the global context, h
and proj; FocalNetBlocks; PatchEmbed downsampling between stages), DeepCTR-Torch's DCNMix
(CrossNetMix's low-rank experts U, V, C per layer with tanh, a gating Linear per expert, the
softmax mixture; a parallel DNN; the linear part), DGL's HAN example with GATConv written
without DGL (fc, attn_l and attn_r, leaky_relu, the edge softmax by scatter and index_add, the
weighted sum per destination; SemanticAttention's Linear, tanh and attention vector, softmax over
meta-paths) and upskyy's Squeezeformer (DepthwiseConv2dSubsampling, blocks of MHSA, FFN, conv
module and FFN each a ResidualConnectionModule followed by a LayerNorm, the TimeReductionLayer's
strided depthwise conv and the recovery by repeating frames with a skip; CTC).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants10.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants10.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants10.
"""

import dataclasses
import enum
import math
import os
import sys
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, randint, randn  # noqa: E402
from record_cpu_fresh import DeepCTRBase, combined_dnn_input, ctr_input, random_edges  # noqa: E402
from record_cpu_variants import PatchEmbed as TimmPatchEmbed  # noqa: E402  (timm's PatchEmbed: proj conv, flatten)
from record_cpu_variants import TimmAttention, TimmMlp  # noqa: E402  (timm's Attention and Mlp)
from record_cpu_variants2 import DropPath, LayerScale  # noqa: E402  (timm's DropPath and LayerScale)
from record_cpu_variants8 import deepctr_dnn  # noqa: E402  (DeepCTR-Torch's DNN, its weights as init_std sets them)
from record_cpu_variants9 import lm_ce_first  # noqa: E402  (cross entropy on the logits returned first)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# Griffin as google-deepmind's recurrentgemma writes it in PyTorch (recurrentgemma/torch/
# griffin.py, modules.py, layers.py; gradient_checkpointing off, so each block is called as
# block(x, segment_pos, cache) and computes its cache; einops written as reshapes): Griffin
# (embedder, an Embedder whose input_embedding table is read by indexing in encode, times
# sqrt(width) cast to bfloat16, and reused by decode as x @ table.T; blocks, a ModuleList of
# ResidualBlocks in the block_types pattern recurrent, recurrent, attention; final_norm; the
# logits soft cap tanh(logits / c) * c). ResidualBlock: temporal_pre_norm (RMSNorm: x * rsqrt of
# the mean square, times scale + 1), the temporal block, residual = x + raw_x, channel_pre_norm,
# mlp_block (MLPBlock: ffw_up, an Einsum module of two stacked weights, gelu (tanh) of the first
# times the second, ffw_down), x + residual. RecurrentBlock: linear_y then gelu; linear_x, conv_1d
# (Conv1D: a loop over temporal shifts of a slice of x masked in place at document boundaries,
# left padded by cat, times one row of w, summed, + b; its cache the last frames), rg_lru (RGLRU:
# input_gate and a_gate BlockDiagonalLinears (einsum per head + b), sigmoid, log_a = -8 gate_a
# softplus(a_param), exp, the gated input times SqrtBoundDerivative(1 - a^2) (an autograd
# Function), rnn_scan: h_t = a_t h_{t-1} + x_t stepped over time into y by slice assignment);
# x * y, linear_out. LocalAttentionBlock: proj_q (all heads), proj_k and proj_v (one head),
# _apply_rope to both (the first half rotated), the forward-pass mask (causal, within the window,
# same segment by cumsum), the cache from the prompt (_roll_tensor's index gathers, right
# padding), einsum logits * head_dim^-0.5, torch.where with the minimum logit, softmax, einsum,
# proj_final. Next-token cross entropy on the logits.


class TemporalBlockType(enum.Enum):
    """common.TemporalBlockType."""
    ATTENTION = enum.auto()
    RECURRENT = enum.auto()


@dataclasses.dataclass(frozen=True)
class GriffinConfig:
    """The fields of common.GriffinConfig that the modules read."""
    vocab_size: int
    width: int
    mlp_expanded_width: int
    num_heads: int
    block_types: tuple
    embeddings_scale_by_sqrt_dim: bool = True
    attention_window_size: int = 2048
    logits_soft_cap: float = 30.0
    lru_width: int = None

    @property
    def num_layers(self):
        return len(self.block_types)


_MIN_LOGITS_VALUE = -2.3819763e38  # Set to a large negative number.
_MAX_WAVELENGTH = 10_000
_MAX_SQRT_GRADIENT = 1000.0


class RMSNorm(nn.Module):
    """RMS Norm."""

    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.width = width
        self.eps = eps
        self.scale = nn.Parameter(torch.empty([self.width]))
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.zeros_(self.scale)

    def forward(self, x):
        var = torch.mean(torch.square(x), axis=-1, keepdims=True)
        normed_x = x * torch.rsqrt(var + self.eps)

        scale = torch.reshape(self.scale, [1 for _ in range(x.ndim - 1)] + [-1])

        return normed_x * (scale + 1)


class BlockDiagonalLinear(nn.Module):
    """Block-diagonal linear layer."""

    def __init__(self, width, num_blocks, w_init_variance_scale=1.0):
        super().__init__()
        self.width = width
        self.num_blocks = num_blocks
        self.w_init_variance_scale = w_init_variance_scale
        self.block_width = self.width // self.num_blocks
        self.w = nn.Parameter(torch.empty([self.num_blocks, self.block_width, self.block_width]))
        self.b = nn.Parameter(torch.empty([self.num_blocks, self.block_width]))
        self.reset_parameters()

    def reset_parameters(self):
        self.w_init_(self.w)
        torch.nn.init.zeros_(self.b)

    def w_init_(self, w):
        std = math.sqrt(self.w_init_variance_scale / self.block_width)
        torch.nn.init.normal_(w, mean=0.0, std=std)

    def forward(self, x):
        # Split x to blocks: rearrange(x, "... (h i) -> ... h i", h=self.num_blocks).
        x = x.reshape(*x.shape[:-1], self.num_blocks, self.block_width)

        # Linear layer over each block + bias.
        y = torch.einsum("... h i, h i j -> ... h j", x, self.w) + self.b

        # Flatten the output: rearrange(y, "... h j -> ... (h j)", h=self.num_blocks).
        return y.reshape(*y.shape[:-2], self.num_blocks * self.block_width)


def rnn_scan(x, a, reset, h0, acc_dtype=torch.float32):
    """Runs the recurrence of a linear RNN."""
    assert x.ndim == 3
    assert a.shape == x.shape[-a.ndim:]
    assert a.dtype == x.dtype
    assert type(a) is type(x)
    assert h0 is None or h0.dtype == acc_dtype

    # Multiply `a` by the reset.
    a = a * ~reset[..., None]

    if x.shape[1] == 1:
        # Using scan in sampling mode.
        if h0 is None:
            return x, x[:, 0].type(acc_dtype)

        else:
            y = a.type(acc_dtype) * h0[:, None] + x.type(acc_dtype)
            return y.type(x.dtype), y[:, -1]

    else:
        # Using scan in linear mode.
        if h0 is not None:
            h_t = h0
        else:
            h_t = torch.zeros(x[:, 0].shape, dtype=acc_dtype, device=x.device)

        y = torch.zeros_like(x)
        for t in range(x.shape[1]):
            h_t = a[:, t].type(acc_dtype) * h_t + x[:, t].type(acc_dtype)
            y[:, t] = h_t.type(x.dtype)

    return y, h_t


def rnn_param_init(tensor, min_rad, max_rad, transform="softplus", eps=1e-8):
    """Initializes the `A` parameter of the RG-LRU uniformly on a ring."""
    with torch.no_grad():
        # Proportional to area in a ring.
        tensor.uniform_(min_rad ** 2 + eps, max_rad ** 2 + eps)
        tensor.log_().mul_(0.5)

        if transform == "softplus":
            # Inverse transform.
            return tensor.neg_().exp_().sub_(1.0).log_()
        else:
            raise NotImplementedError()


class SqrtBoundDerivative(torch.autograd.Function):
    """Computes a square root with a gradient clipped at `_MAX_SQRT_GRADIENT`."""

    @staticmethod
    def forward(ctx, x):
        """The forward pass, which is a normal `sqrt`."""
        ctx.save_for_backward(x)
        return torch.sqrt(x)

    @staticmethod
    def backward(ctx, grad_output):
        """The backward pass, which clips the `sqrt` gradient."""
        (x,) = ctx.saved_tensors
        clipped_x_times_4 = torch.clip(4.0 * x, min=1 / (_MAX_SQRT_GRADIENT ** 2))
        return grad_output / torch.sqrt(clipped_x_times_4)


class RGLRU(nn.Module):
    """A Real-Gated Linear Recurrent Unit (RG-LRU) layer."""

    def __init__(self, width, num_heads, w_init_variance_scale=1.0):
        super().__init__()
        self.width = width
        self.num_heads = num_heads
        self.w_init_variance_scale = w_init_variance_scale
        self.a_param = nn.Parameter(torch.empty([self.width]))
        self.input_gate = BlockDiagonalLinear(width=self.width, num_blocks=self.num_heads,
                                              w_init_variance_scale=w_init_variance_scale)
        self.a_gate = BlockDiagonalLinear(width=self.width, num_blocks=self.num_heads,
                                          w_init_variance_scale=self.w_init_variance_scale)
        self.reset_parameters()

    def reset_parameters(self):
        self.input_gate.reset_parameters()
        self.a_gate.reset_parameters()
        self.a_param_init(self.a_param)

    def a_param_init(self, w):
        return rnn_param_init(w, min_rad=0.9, max_rad=0.999)

    def forward(self, x, segment_pos, cache=None, return_cache=True):
        bs, l, _ = x.shape  # noqa: E741
        assert segment_pos.shape == (bs, l)
        reset = segment_pos == 0

        # Gates for x and a.
        gate_x = torch.sigmoid(self.input_gate(x))
        gate_a = torch.sigmoid(self.a_gate(x))

        # Compute the parameter `A` of the recurrence.
        log_a = -8.0 * gate_a * nn.functional.softplus(self.a_param)
        a = torch.exp(log_a)
        a_square = torch.exp(2 * log_a)

        # Gate the input.
        gated_x = x * gate_x

        # Apply gamma normalization to the input.
        multiplier = SqrtBoundDerivative.apply(1 - a_square)
        multiplier = reset[..., None] + ~reset[..., None] * multiplier
        normalized_x = gated_x * multiplier.type(x.dtype)

        y, last_h = rnn_scan(x=normalized_x, a=a, reset=reset, h0=cache)

        if not return_cache:
            return y, None

        return y, last_h


class Conv1D(nn.Module):
    """A 1D temporal convolution layer (the training path: no cache is passed in)."""

    def __init__(self, width, temporal_width, w_init_variance_scale=0.01):
        super().__init__()
        self.width = width
        self.temporal_width = temporal_width
        self.w_init_variance_scale = w_init_variance_scale
        self.w = nn.Parameter(torch.empty([self.temporal_width, self.width]))
        self.b = nn.Parameter(torch.empty([width]))
        self.reset_parameters()

    def reset_parameters(self):
        self.w_init_(self.w)
        torch.nn.init.zeros_(self.b)

    def w_init_(self, w):
        std = math.sqrt(self.w_init_variance_scale / self.temporal_width)
        torch.nn.init.normal_(w, mean=0.0, std=std)

    def forward(self, x, segment_pos, cache=None, return_cache=True):
        assert cache is None, "decoding mode: not used here"
        output_len = x.shape[1]

        # 1. Training mode: the full sequence length need to be output.
        prompt_len = 0
        cache_dtype = x.dtype

        # 3. Perform the convolution: initialize an accumulator for the convolution output.
        convolution_output = 0.0

        # We cannot look back by more than the total sequence length ("valid" convolution).
        temporal_width = min(self.temporal_width, prompt_len + output_len)

        # The convolution is implemented as a manual loop so that we can incorporate the window
        # masking further below.
        for temporal_shift in range(temporal_width):
            start_idx, end_idx = self._convolution_window_indices(prompt_len=prompt_len, shift_back=temporal_shift,
                                                                  output_len=output_len)
            x_window = x[:, start_idx:end_idx]

            if cache is None:
                # Ensure that the mask prevents accessing tokens from a different document in training mode.
                window_mask = self._compute_document_mask(segment_pos=segment_pos, start_idx=start_idx,
                                                          end_idx=end_idx, max_look_ahead=temporal_shift)
                x_window *= window_mask[:, :, None].type(x.dtype).to(device=x.device)

            x_window = self._pad_window(x_window, output_len)

            # Select w for this temporal shift, and expand on the batch and time dimensions.
            w = self.w[self.temporal_width - temporal_shift - 1][None, None, :]

            # Accumulate the convolution result.
            convolution_output += x_window * w

        # Add the bias of the convolution.
        convolution_output += self.b[None, None]

        if not return_cache:
            return convolution_output, None

        # 4. Store the new (potentially padded) cache for future decoding.
        new_cache = x[:, 1 - self.temporal_width:].type(cache_dtype)
        new_cache = self._pad_cache(new_cache)

        return convolution_output, new_cache

    def _convolution_window_indices(self, *, prompt_len, shift_back, output_len):
        start_idx = max(prompt_len - shift_back, 0)
        end_idx = prompt_len + output_len - shift_back
        return start_idx, end_idx

    def _compute_document_mask(self, *, segment_pos, start_idx, end_idx, max_look_ahead):
        batch_size = segment_pos.shape[0]
        not_a_document_boundary = (segment_pos != 0).type(torch.int32)
        mask = torch.ones((batch_size, end_idx - start_idx), device=segment_pos.device)
        for shift in range(1, max_look_ahead + 1):
            # At each position, look ahead by `shift` tokens to see if a document boundary is present there.
            mask *= not_a_document_boundary[:, start_idx + shift: end_idx + shift]
        return mask

    def _pad_window(self, window, output_len):
        """Left-pads the window if it is shorter than the output sequence length."""
        batch_size, window_len, width = window.shape
        padding_len = output_len - window_len
        padding = torch.zeros((batch_size, padding_len, width), dtype=window.dtype, device=window.device)
        return torch.concatenate([padding, window], dim=1)

    def _pad_cache(self, state):
        """Left-pads the state if it is shorter than the temporal width."""
        b, state_seq_len, d = state.shape
        padding_len = self.temporal_width - state_seq_len - 1
        padding = torch.zeros((b, padding_len, d), dtype=state.dtype, device=state.device)
        return torch.concatenate([padding, state], dim=1)


class Einsum(nn.Module):
    """Einsum is a convenience module for parameterized tensor multiplication."""

    def __init__(self, w_shape, b_shape, eqn, w_init_variance_scale=1.0):
        super().__init__()
        self.w_shape = tuple(w_shape)
        self.b_shape = tuple(b_shape)
        self.eqn = eqn
        self.w_init_variance_scale = w_init_variance_scale
        self.w = nn.Parameter(torch.empty(self.w_shape))
        self.b = nn.Parameter(torch.empty(self.b_shape))
        self.reset_parameters()

    def reset_parameters(self):
        self.w_init_(self.w)
        torch.nn.init.zeros_(self.b)

    def w_init_(self, w):
        std = math.sqrt(self.w_init_variance_scale / self.w_shape[1])
        torch.nn.init.normal_(w, mean=0.0, std=std)

    def forward(self, x):
        return torch.einsum(self.eqn, x, self.w) + self.b


def _apply_rope(inputs, positions, max_wavelength=_MAX_WAVELENGTH):
    """Applies RoPE to the first half of inputs."""
    batch_size, sequence_length = positions.shape
    x_rope, x = torch.chunk(inputs, 2, dim=-1)
    positions = positions.reshape(batch_size, sequence_length, 1, 1)

    freq = torch.arange(x_rope.shape[-1] // 2, device=x.device)
    freq_exponents = 2 * freq / x_rope.shape[-1]
    timescale = max_wavelength ** freq_exponents
    inv_frequencies = 1.0 / timescale

    sinusoid_imp = positions * inv_frequencies
    sin = torch.sin(sinusoid_imp).type_as(inputs)
    cos = torch.cos(sinusoid_imp).type_as(inputs)

    first_half, second_half = torch.chunk(x_rope, 2, dim=-1)
    first_part = first_half * cos - second_half * sin
    second_part = second_half * cos + first_half * sin

    return torch.concatenate([first_part, second_part, x], dim=-1)


def _compute_causal_mask(q_positions, k_positions, window_size, q_segment_ids, k_segment_ids):
    """Computes the causal mask for local attention."""
    # Mask for attending only to the same segment.
    if q_segment_ids is not None or k_segment_ids is not None:
        assert q_segment_ids is not None and k_segment_ids is not None
        same_segment_mask = q_segment_ids[..., None] == k_segment_ids[..., None, :]
    else:
        same_segment_mask = (k_positions >= 0)[..., None, :]

    # Mask for attending only to previous tokens.
    causal_mask = q_positions[..., None] >= k_positions[..., None, :]

    # Mask for attending only to things within the window size.
    window_cond = q_positions[..., None] <= (k_positions[..., None, :] + window_size)

    mask = torch.logical_and(causal_mask, window_cond)
    mask = torch.logical_and(same_segment_mask, mask)
    return mask


def _compute_forward_pass_mask(segment_pos, window_size):
    """Compute the forward pass mask."""
    segment_ids = torch.cumsum(segment_pos == 0, dim=-1)
    positions = torch.arange(segment_pos.shape[-1], device=segment_pos.device)
    positions = torch.repeat_interleave(positions[None], segment_pos.shape[0], dim=0)
    return _compute_causal_mask(positions, positions, window_size, segment_ids, segment_ids)


def _roll_tensor(x, shifts, dim):
    """Rolls the tensor along the given axis by shifts."""
    indexes = []
    for i in range(x.ndim):
        idx = torch.arange(x.shape[i], device=x.device)
        for _ in range(i):
            idx = idx[None]
        for _ in range(x.ndim - 1 - i):
            idx = idx[..., None]
        idx = idx.expand(*x.shape)
        if i == dim:
            idx = (idx - shifts) % x.shape[dim]
        indexes.append(idx)
    return x[tuple(indexes)]


def _right_pad_tensor(x, size, dim):
    if x.shape[dim] >= size:
        return x

    pad_shape = list(x.shape)
    pad_shape[dim] = size - x.shape[dim]
    pad_value = torch.zeros(pad_shape, dtype=x.dtype, device=x.device)
    return torch.concatenate([x, pad_value], dim=dim)


AttentionBlockCache = dataclasses.make_dataclass("AttentionBlockCache", ["keys", "values", "num_tokens"])
RecurrentBlockCache = dataclasses.make_dataclass("RecurrentBlockCache", ["rg_lru_state", "conv1d_state"])


def _attention_cache_from_prompt(keys, values, segment_pos, window_size):
    """Creates a new cache from a prompt."""
    w = min(window_size, keys.shape[1])
    num_tokens = segment_pos[:, -1] + 1

    # This ensures that the keys and values are right padded in the cache.
    shifts = num_tokens[:, None, None, None] % window_size
    right_padded_keys = _roll_tensor(keys[:, -w:], shifts, dim=1)
    right_padded_values = _roll_tensor(values[:, -w:], shifts, dim=1)

    return AttentionBlockCache(
        keys=_right_pad_tensor(right_padded_keys, window_size, dim=1),
        values=_right_pad_tensor(right_padded_values, window_size, dim=1),
        num_tokens=num_tokens,
    )


def gelu(x):
    """Returns the GELU activation function with the same approximation as JAX."""
    return nn.functional.gelu(x, approximate="tanh")


class LocalAttentionBlock(nn.Module):
    """Local Multi-Head Attention (MHA) block."""

    def __init__(self, width, num_heads, window_size, final_w_init_variance_scale=1.0):
        super().__init__()
        self.width = width
        self.num_heads = num_heads
        self.window_size = window_size
        self.final_w_init_variance_scale = final_w_init_variance_scale
        self.proj_q = nn.Linear(in_features=self.width, out_features=self.width, bias=False)
        self.proj_k = nn.Linear(in_features=self.width, out_features=self.head_dim, bias=False)
        self.proj_v = nn.Linear(in_features=self.width, out_features=self.head_dim, bias=False)
        self.proj_final = nn.Linear(in_features=self.width, out_features=self.width, bias=True)
        self.reset_parameters()

    def reset_parameters(self):
        self.w_init_(self.proj_q.weight)
        self.w_init_(self.proj_k.weight)
        self.w_init_(self.proj_v.weight)
        self.out_w_init_(self.proj_final.weight)
        torch.nn.init.zeros_(self.proj_final.bias)

    @property
    def head_dim(self):
        return self.width // self.num_heads

    def w_init_(self, w):
        torch.nn.init.normal_(w, mean=0.0, std=math.sqrt(1.0 / self.width))

    def out_w_init_(self, w):
        std = math.sqrt(self.final_w_init_variance_scale / self.width)
        torch.nn.init.normal_(w, mean=0.0, std=std)

    def forward(self, x, segment_pos, cache=None, return_cache=True):
        b, t, _ = x.shape
        assert segment_pos.shape == (b, t), segment_pos.shape
        assert cache is None, "decoding with a KV-cache: not used here"

        # Generate keys, values and queries.
        queries = self.proj_q(x)
        keys = self.proj_k(x)
        values = self.proj_v(x)
        queries = queries.reshape(b, t, self.num_heads, self.head_dim)  # "... (n h) -> ... n h", n=num_heads
        keys = keys.reshape(b, t, 1, self.head_dim)  # n=1
        values = values.reshape(b, t, 1, self.head_dim)

        # Apply rotary embeddings.
        queries = _apply_rope(queries, segment_pos)
        keys = _apply_rope(keys, segment_pos)

        attn_mask = _compute_forward_pass_mask(segment_pos, self.window_size)

        if return_cache:
            new_cache = _attention_cache_from_prompt(keys, values, segment_pos, self.window_size)
        else:
            new_cache = None

        # Compute attention.
        logits = torch.einsum("btnh,bsnh->bnts", queries, keys)
        logits = logits * (self.head_dim ** -0.5)
        # Expand for heads axis.
        attn_mask = torch.unsqueeze(attn_mask, dim=1)

        masked_logits = torch.where(attn_mask, logits, _MIN_LOGITS_VALUE)
        masked_logits = masked_logits.type(torch.float32)

        probs = nn.functional.softmax(masked_logits, dim=-1).type_as(x)
        encoded = torch.einsum("bnts,bsnh->btnh", probs, values)
        encoded = encoded.reshape(b, t, self.num_heads * self.head_dim)  # "... n h -> ... (n h)"
        attn_output = self.proj_final(encoded)

        return attn_output, new_cache


class RecurrentBlock(nn.Module):
    """Griffin and Hawk's recurrent block."""

    def __init__(self, width, num_heads, lru_width=None, conv1d_temporal_width=4, final_w_init_variance_scale=1.0):
        super().__init__()
        self.width = width
        self.num_heads = num_heads
        self.lru_width = lru_width or width
        self.conv1d_temporal_width = conv1d_temporal_width
        self.final_w_init_variance_scale = final_w_init_variance_scale
        self.linear_y = nn.Linear(in_features=self.width, out_features=self.lru_width)
        self.linear_x = nn.Linear(in_features=self.width, out_features=self.lru_width)
        self.linear_out = nn.Linear(in_features=self.lru_width, out_features=self.width)
        self.conv_1d = Conv1D(width=self.lru_width, temporal_width=self.conv1d_temporal_width)
        self.rg_lru = RGLRU(width=self.lru_width, num_heads=self.num_heads)
        self.reset_parameters()

    def reset_parameters(self):
        self.w_init_(self.linear_x.weight)
        torch.nn.init.zeros_(self.linear_x.bias)
        self.w_init_(self.linear_y.weight)
        torch.nn.init.zeros_(self.linear_y.bias)
        self.out_w_init_(self.linear_out.weight)
        torch.nn.init.zeros_(self.linear_out.bias)
        self.conv_1d.reset_parameters()
        self.rg_lru.reset_parameters()

    def w_init_(self, w):
        torch.nn.init.normal_(w, mean=0.0, std=math.sqrt(1.0 / self.width))

    def out_w_init_(self, w):
        std = math.sqrt(self.final_w_init_variance_scale / self.lru_width)
        torch.nn.init.normal_(w, mean=0.0, std=std)

    def forward(self, x, segment_pos, cache=None, return_cache=True):
        # y branch.
        y = self.linear_y(x)
        y = gelu(y)

        # x branch.
        x = self.linear_x(x)
        x, conv1d_state = self.conv_1d(x=x, segment_pos=segment_pos,
                                       cache=None if cache is None else cache.conv1d_state, return_cache=return_cache)
        x, rg_lru_state = self.rg_lru(x=x, segment_pos=segment_pos,
                                      cache=None if cache is None else cache.rg_lru_state, return_cache=return_cache)

        # Join branches.
        x = x * y
        x = self.linear_out(x)

        if not return_cache:
            return x, None

        return x, RecurrentBlockCache(conv1d_state=conv1d_state, rg_lru_state=rg_lru_state)


class MLPBlock(nn.Module):
    """MLP block."""

    def __init__(self, width, expanded_width, final_w_init_variance_scale=1.0):
        super().__init__()
        self.width = width
        self.expanded_width = expanded_width
        self.final_w_init_variance_scale = final_w_init_variance_scale
        self.ffw_up = Einsum(w_shape=(2, self.width, self.expanded_width), b_shape=(2, 1, 1, self.expanded_width),
                             eqn="...td,cdD->c...tD")
        self.ffw_down = nn.Linear(in_features=self.expanded_width, out_features=self.width)
        self.reset_parameters()

    def reset_parameters(self):
        self.ffw_up.reset_parameters()
        self.out_w_init_(self.ffw_down.weight)
        torch.nn.init.zeros_(self.ffw_down.bias)

    def out_w_init_(self, w):
        std = math.sqrt(self.final_w_init_variance_scale / self.expanded_width)
        torch.nn.init.normal_(w, mean=0.0, std=std)

    def forward(self, x):
        out = self.ffw_up(x)
        gate_value = gelu(out[0])
        activations = gate_value * out[1]
        return self.ffw_down(activations)


class ResidualBlock(nn.Module):
    """Griffin and Hawk's residual block."""

    def __init__(self, width, mlp_expanded_width, num_heads, attention_window_size, temporal_block_type,
                 lru_width=None, conv1d_temporal_width=4, final_w_init_variance_scale=1.0):
        super().__init__()
        self.width = width
        self.mlp_expanded_width = mlp_expanded_width
        self.num_heads = num_heads
        self.attention_window_size = attention_window_size
        self.temporal_block_type = temporal_block_type
        self.lru_width = lru_width
        self.conv1d_temporal_width = conv1d_temporal_width
        self.final_w_init_variance_scale = final_w_init_variance_scale

        # Sub-blocks and layers.
        self.temporal_pre_norm = RMSNorm(width=self.width)

        match self.temporal_block_type:
            case TemporalBlockType.RECURRENT:
                self.recurrent_block = RecurrentBlock(width=self.width, num_heads=self.num_heads,
                                                      lru_width=self.lru_width,
                                                      conv1d_temporal_width=self.conv1d_temporal_width,
                                                      final_w_init_variance_scale=self.final_w_init_variance_scale)

            case TemporalBlockType.ATTENTION:
                self.attention_block = LocalAttentionBlock(width=self.width, num_heads=self.num_heads,
                                                           window_size=self.attention_window_size,
                                                           final_w_init_variance_scale=self.final_w_init_variance_scale)

        self.channel_pre_norm = RMSNorm(width=width)
        self.mlp_block = MLPBlock(width=self.width, expanded_width=self.mlp_expanded_width,
                                  final_w_init_variance_scale=self.final_w_init_variance_scale)

    @property
    def temporal_block(self):
        """Alias for the temporal block."""
        match self.temporal_block_type:
            case TemporalBlockType.RECURRENT:
                return self.recurrent_block
            case TemporalBlockType.ATTENTION:
                return self.attention_block

    def forward(self, x, segment_pos, cache=None, return_cache=True):
        raw_x = x

        inputs_normalized = self.temporal_pre_norm(raw_x)
        x, cache = self.temporal_block(inputs_normalized, segment_pos, cache, return_cache=return_cache)

        residual = x + raw_x

        x = self.channel_pre_norm(residual)
        x = self.mlp_block(x)

        x = x + residual

        return x, cache


class Embedder(nn.Module):
    """Embedder module."""

    def __init__(self, vocab_size, embed_dim, scale_by_sqrt_dim):
        super().__init__()
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim
        self.scale_by_sqrt_dim = scale_by_sqrt_dim
        self.input_embedding = nn.Parameter(torch.empty([self.vocab_size, self.embed_dim]))
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.normal_(self.input_embedding, mean=0.0, std=math.sqrt(1.0 / self.embed_dim))

    def encode(self, x):
        """Encodes an input sequence of tokens."""
        x = self.input_embedding[(x,)]
        if self.scale_by_sqrt_dim:
            # Cast to bfloat16 to match training.
            x = x * torch.tensor(math.sqrt(self.embed_dim)).type(torch.bfloat16)
        return x

    def decode(self, x):
        """Decodes an input sequence of activations."""
        return x @ self.input_embedding.T


class Griffin(nn.Module):
    """Griffin model - https://arxiv.org/abs/2402.19427."""

    def __init__(self, config, gradient_checkpointing=False):
        super().__init__()
        self.config = config
        self.gradient_checkpointing = gradient_checkpointing
        assert not gradient_checkpointing, "checkpointing reruns the blocks in the backward: not used here"

        self.embedder = Embedder(vocab_size=self.config.vocab_size, embed_dim=self.config.width,
                                 scale_by_sqrt_dim=self.config.embeddings_scale_by_sqrt_dim)

        self.blocks = nn.ModuleList([
            ResidualBlock(
                width=self.config.width,
                mlp_expanded_width=self.config.mlp_expanded_width,
                num_heads=self.config.num_heads,
                attention_window_size=self.config.attention_window_size,
                temporal_block_type=block_type,
                lru_width=self.config.lru_width,
                final_w_init_variance_scale=2.0 / self.config.num_layers,
            )
            for block_type in self.config.block_types
        ])
        self.final_norm = RMSNorm(width=self.config.width)

    def forward(self, tokens, segment_pos, cache=None, return_logits=True, return_cache=True):
        if not return_logits and not return_cache:
            return None, None

        input_emb = self.embedder.encode(tokens)
        x = input_emb

        new_cache = {}
        for i, block in enumerate(self.blocks):
            block_name = f"blocks.{i}"
            block_cache = None if cache is None else cache[block_name]
            x, new_cache[block_name] = block(x, segment_pos, block_cache)

        if not return_logits:
            return None, new_cache

        x = self.final_norm(x)
        logits = self.embedder.decode(x)

        c = self.config.logits_soft_cap
        if c:
            logits = nn.functional.tanh(logits / c) * c

        if not return_cache:
            return logits, None

        return logits, new_cache


def b_griffin():
    vocab, batch, seq = 256, 4, 16
    ids = randint(vocab, batch, seq + 1, seed=3)
    segment_pos = torch.arange(seq).repeat(batch, 1)
    config = GriffinConfig(vocab_size=vocab, width=32, mlp_expanded_width=96, num_heads=4, lru_width=32,
                           attention_window_size=8,
                           block_types=(TemporalBlockType.RECURRENT, TemporalBlockType.RECURRENT,
                                        TemporalBlockType.ATTENTION))
    return dict(model=Griffin(config), inputs=(ids[:, :-1], segment_pos), target=ids[:, 1:], loss=lm_ce_first)


# ---------------------------------------------------------------------------------------
# A Soft MoE ViT as bwconrad's soft-moe writes it (soft_moe_pytorch/soft_moe.py and
# vision_transformer.py on timm's layers; global_pool "avg", no class token):
# SoftMoEVisionTransformer (patch_embed, timm's PatchEmbed (tools/record_cpu_variants.py's: proj
# conv, flatten, transpose, an Identity norm); pos_embed added, pos_drop; patch_drop and norm_pre
# Identities; blocks, a Sequential of timm Blocks (norm1, attn (timm's Attention, imported: fused
# qkv, q_norm and k_norm Identities, softmax, attn_drop, proj, proj_drop), ls1 Identity,
# drop_path1 (timm's DropPath, from tools/record_cpu_variants2.py, after the first block), the
# residual sum, norm2, mlp, ls2, drop_path2, the residual sum); norm an Identity; the token mean;
# fc_norm, head_drop, head). The mlp is timm's Mlp up to moe_layer_index, then
# SoftMoELayerWrapper: F.normalize of the tokens and of phi (times scale), the einsum logits,
# the dispatch weights a softmax over the tokens and the combine weights one over every expert's
# slots, both soft_moe.py's softmax written by hand (amax, exp, sum, divide), the slots by
# einsum, each expert (a ModuleList of timm Mlps) on its slots, stacked, the einsum back to
# tokens. Weights as timm's init_weights_vit_timm sets them. Cross entropy.


def soft_moe_softmax(x, dim):
    """soft_moe.py's softmax: along one dimension or several."""
    max_vals = torch.amax(x, dim=dim, keepdim=True)
    e_x = torch.exp(x - max_vals)
    sum_exp = e_x.sum(dim=dim, keepdim=True)
    return e_x / sum_exp


class SoftMoELayerWrapper(nn.Module):
    """A wrapper class to create a Soft Mixture of Experts layer."""

    def __init__(self, dim, num_experts, slots_per_expert, layer, normalize=True, **layer_kwargs):
        super().__init__()

        self.dim = dim
        self.num_experts = num_experts
        self.slots_per_expert = slots_per_expert
        self.normalize = normalize

        # Initialize phi and normalization scaling factor
        self.phi = nn.Parameter(torch.zeros(dim, num_experts, slots_per_expert))
        if self.normalize:
            self.scale = nn.Parameter(torch.ones(1))

        # Initialize phi using LeCun normal initialization
        nn.init.normal_(self.phi, mean=0, std=1 / dim ** 0.5)

        # Create a list of expert networks
        self.experts = nn.ModuleList([layer(**layer_kwargs) for _ in range(num_experts)])

    def forward(self, x):
        assert x.shape[-1] == self.dim, f"Input feature dim of {x.shape[-1]} does not match layer dim of {self.dim}"
        assert len(x.shape) == 3, f"Input expected to have 3 dimensions but has {len(x.shape)}"

        phi = self.phi

        # Normalize input and phi
        if self.normalize:
            x = F.normalize(x, dim=2)  # [b, m, d]
            phi = self.scale * F.normalize(phi, dim=0)  # [d, n, p]

        # Compute dispatch and combine weights
        logits = torch.einsum("bmd,dnp->bmnp", x, phi)
        d = soft_moe_softmax(logits, dim=1)
        c = soft_moe_softmax(logits, dim=(2, 3))

        # Compute input slots as weighted average of input tokens using dispatch weights
        xs = torch.einsum("bmd,bmnp->bnpd", x, d)

        # Apply expert to corresponding slots
        ys = torch.stack([f_i(xs[:, i, :, :]) for i, f_i in enumerate(self.experts)], dim=1)

        # Compute output tokens as weighted average of output slots using combine weights
        y = torch.einsum("bnpd,bmnp->bmd", ys, c)

        return y


class Block(nn.Module):
    """timm's vision_transformer Block, its mlp_layer called with keyword arguments."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, qk_norm=False, proj_drop=0.0, attn_drop=0.0,
                 init_values=None, drop_path=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm, mlp_layer=TimmMlp):
        super().__init__()
        assert not qk_norm and attn_drop == 0.0 and proj_drop == 0.0
        self.norm1 = norm_layer(dim)
        self.attn = TimmAttention(dim, num_heads=num_heads, qkv_bias=qkv_bias)
        self.ls1 = LayerScale(dim, init_values=init_values) if init_values else nn.Identity()
        self.drop_path1 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

        self.norm2 = norm_layer(dim)
        self.mlp = mlp_layer(in_features=dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer,
                             drop=proj_drop)
        self.ls2 = LayerScale(dim, init_values=init_values) if init_values else nn.Identity()
        self.drop_path2 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


def init_weights_vit_timm(module, name=""):
    """ViT weight initialization, original timm impl (for reproducibility)."""
    if isinstance(module, nn.Linear):
        nn.init.trunc_normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif hasattr(module, "init_weights"):
        module.init_weights()


class SoftMoEVisionTransformer(nn.Module):
    """Vision Transformer with Soft Mixture of Experts MLP layers."""

    def __init__(self, num_experts=128, slots_per_expert=1, moe_layer_index=6, img_size=224, patch_size=16,
                 in_chans=3, num_classes=1000, global_pool="token", embed_dim=768, depth=12, num_heads=12,
                 mlp_ratio=4.0, qkv_bias=True, qk_norm=False, init_values=None, class_token=True,
                 no_embed_class=False, pre_norm=False, fc_norm=None, drop_rate=0.0, pos_drop_rate=0.0,
                 patch_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, weight_init="",
                 norm_layer=None, act_layer=None, block_fn=Block, mlp_layer=TimmMlp):
        super().__init__()
        assert global_pool in ("", "avg", "token")
        assert class_token or global_pool != "token"
        assert not pre_norm and patch_drop_rate == 0
        use_fc_norm = global_pool == "avg" if fc_norm is None else fc_norm
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        act_layer = act_layer or nn.GELU

        self.num_classes = num_classes
        self.global_pool = global_pool
        self.num_features = self.embed_dim = embed_dim
        self.num_prefix_tokens = 1 if class_token else 0
        self.no_embed_class = no_embed_class
        self.grad_checkpointing = False

        self.patch_embed = TimmPatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches

        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if class_token else None
        embed_len = num_patches if no_embed_class else num_patches + self.num_prefix_tokens
        self.pos_embed = nn.Parameter(torch.randn(1, embed_len, embed_dim) * 0.02)
        self.pos_drop = nn.Dropout(p=pos_drop_rate)
        self.patch_drop = nn.Identity()
        self.norm_pre = nn.Identity()

        # Wrap the mlp_layer in a soft-moe wrapper
        self.num_experts = num_experts
        self.slots_per_expert = slots_per_expert

        moe_mlp_layer = partial(SoftMoELayerWrapper, layer=mlp_layer, dim=embed_dim, num_experts=self.num_experts,
                                slots_per_expert=self.slots_per_expert)

        # Create a list where each index is the mlp layer class to use at that depth
        self.moe_layer_index = moe_layer_index
        if isinstance(moe_layer_index, list):
            mlp_layers_list = [moe_mlp_layer if i in moe_layer_index else mlp_layer for i in range(depth)]
        else:
            mlp_layers_list = [moe_mlp_layer if i >= moe_layer_index else mlp_layer for i in range(depth)]

        # stochastic depth decay rule
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.Sequential(*[
            block_fn(dim=embed_dim, num_heads=num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, qk_norm=qk_norm,
                     init_values=init_values, proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, drop_path=dpr[i],
                     norm_layer=norm_layer, act_layer=act_layer, mlp_layer=mlp_layers_list[i])
            for i in range(depth)
        ])
        self.norm = norm_layer(embed_dim) if not use_fc_norm else nn.Identity()

        # Classifier Head
        self.fc_norm = norm_layer(embed_dim) if use_fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(self.embed_dim, num_classes) if num_classes > 0 else nn.Identity()

        if weight_init != "skip":
            self.init_weights(weight_init)

    def init_weights(self, mode=""):
        assert mode == ""
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        if self.cls_token is not None:
            nn.init.normal_(self.cls_token, std=1e-6)
        for m in self.modules():  # named_apply(get_init_weights_vit(mode, head_bias), self)
            if m is not self:
                init_weights_vit_timm(m)

    def _pos_embed(self, x):
        if self.no_embed_class:
            x = x + self.pos_embed
            if self.cls_token is not None:
                x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        else:
            if self.cls_token is not None:
                x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
            x = x + self.pos_embed
        return self.pos_drop(x)

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = self._pos_embed(x)
        x = self.patch_drop(x)
        x = self.norm_pre(x)
        x = self.blocks(x)
        x = self.norm(x)
        return x

    def forward_head(self, x, pre_logits=False):
        if self.global_pool:
            x = x[:, self.num_prefix_tokens:].mean(dim=1) if self.global_pool == "avg" else x[:, 0]
        x = self.fc_norm(x)
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def b_soft_moe_vit():
    model = SoftMoEVisionTransformer(num_experts=4, slots_per_expert=2, moe_layer_index=2, img_size=32, patch_size=4,
                                     num_classes=10, global_pool="avg", embed_dim=32, depth=4, num_heads=4,
                                     mlp_ratio=2.0, class_token=False, drop_path_rate=0.1)
    return dict(model=model, inputs=(randn(4, 3, 32, 32),), target=randint(10, 4), loss=ce)


# ---------------------------------------------------------------------------------------
# The DARTS search network as quark0's darts writes it (cnn/model_search.py, operations.py,
# genotypes.py; the weight step, the architecture step left out; six of the eight PRIMITIVES,
# none of the 5x5 ones): Network (stem, a Sequential of Conv2d and BatchNorm2d; cells, a
# ModuleList of Cells, the reduction ones at a third and two thirds of the depth; per cell the
# softmax of alphas_normal or alphas_reduce, plain tensors that require grad, not parameters;
# s0, s1 = s1, cell(s0, s1, weights); global_pooling, view, classifier). Cell: preprocess0
# (FactorizedReduce after a reduction cell, else ReLUConvBN) and preprocess1 (ReLUConvBN: op, a
# Sequential of ReLU, Conv2d, BatchNorm2d without affine); _ops, a ModuleList of a MixedOp per
# edge (stride 2 on a reduction cell's input edges); each step's state the Python sum over the
# states of their edge's MixedOp; the last multiplier states concatenated. MixedOp: _ops, a
# ModuleList of the primitives (Zero: x.mul(0.), strided on reduction edges; MaxPool2d and
# AvgPool2d (count_include_pad False) each in a Sequential with a BatchNorm2d without affine;
# Identity, or FactorizedReduce on reduction edges (relu, conv_1 and conv_2 1x1 stride 2, the
# second on x[:, :, 1:, 1:], cat, bn); SepConv (op: ReLU, depthwise conv, 1x1 conv, BN, ReLU,
# depthwise, 1x1, BN); DilConv (op: ReLU, dilated depthwise conv, 1x1 conv, BN)), the Python sum
# of w * op(x). Cross entropy.


PRIMITIVES = [
    "none",
    "max_pool_3x3",
    "avg_pool_3x3",
    "skip_connect",
    "sep_conv_3x3",
    "dil_conv_3x3",
]


class ReLUConvBN(nn.Module):

    def __init__(self, C_in, C_out, kernel_size, stride, padding, affine=True):
        super(ReLUConvBN, self).__init__()
        self.op = nn.Sequential(
            nn.ReLU(inplace=False),
            nn.Conv2d(C_in, C_out, kernel_size, stride=stride, padding=padding, bias=False),
            nn.BatchNorm2d(C_out, affine=affine)
        )

    def forward(self, x):
        return self.op(x)


class DilConv(nn.Module):

    def __init__(self, C_in, C_out, kernel_size, stride, padding, dilation, affine=True):
        super(DilConv, self).__init__()
        self.op = nn.Sequential(
            nn.ReLU(inplace=False),
            nn.Conv2d(C_in, C_in, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                      groups=C_in, bias=False),
            nn.Conv2d(C_in, C_out, kernel_size=1, padding=0, bias=False),
            nn.BatchNorm2d(C_out, affine=affine),
        )

    def forward(self, x):
        return self.op(x)


class SepConv(nn.Module):

    def __init__(self, C_in, C_out, kernel_size, stride, padding, affine=True):
        super(SepConv, self).__init__()
        self.op = nn.Sequential(
            nn.ReLU(inplace=False),
            nn.Conv2d(C_in, C_in, kernel_size=kernel_size, stride=stride, padding=padding, groups=C_in, bias=False),
            nn.Conv2d(C_in, C_in, kernel_size=1, padding=0, bias=False),
            nn.BatchNorm2d(C_in, affine=affine),
            nn.ReLU(inplace=False),
            nn.Conv2d(C_in, C_in, kernel_size=kernel_size, stride=1, padding=padding, groups=C_in, bias=False),
            nn.Conv2d(C_in, C_out, kernel_size=1, padding=0, bias=False),
            nn.BatchNorm2d(C_out, affine=affine),
        )

    def forward(self, x):
        return self.op(x)


class Identity(nn.Module):

    def __init__(self):
        super(Identity, self).__init__()

    def forward(self, x):
        return x


class Zero(nn.Module):

    def __init__(self, stride):
        super(Zero, self).__init__()
        self.stride = stride

    def forward(self, x):
        if self.stride == 1:
            return x.mul(0.)
        return x[:, :, ::self.stride, ::self.stride].mul(0.)


class FactorizedReduce(nn.Module):

    def __init__(self, C_in, C_out, affine=True):
        super(FactorizedReduce, self).__init__()
        assert C_out % 2 == 0
        self.relu = nn.ReLU(inplace=False)
        self.conv_1 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
        self.conv_2 = nn.Conv2d(C_in, C_out // 2, 1, stride=2, padding=0, bias=False)
        self.bn = nn.BatchNorm2d(C_out, affine=affine)

    def forward(self, x):
        x = self.relu(x)
        out = torch.cat([self.conv_1(x), self.conv_2(x[:, :, 1:, 1:])], dim=1)
        out = self.bn(out)
        return out


OPS = {
    "none": lambda C, stride, affine: Zero(stride),
    "avg_pool_3x3": lambda C, stride, affine: nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False),
    "max_pool_3x3": lambda C, stride, affine: nn.MaxPool2d(3, stride=stride, padding=1),
    "skip_connect": lambda C, stride, affine: Identity() if stride == 1 else FactorizedReduce(C, C, affine=affine),
    "sep_conv_3x3": lambda C, stride, affine: SepConv(C, C, 3, stride, 1, affine=affine),
    "dil_conv_3x3": lambda C, stride, affine: DilConv(C, C, 3, stride, 2, 2, affine=affine),
}


class MixedOp(nn.Module):

    def __init__(self, C, stride):
        super(MixedOp, self).__init__()
        self._ops = nn.ModuleList()
        for primitive in PRIMITIVES:
            op = OPS[primitive](C, stride, False)
            if "pool" in primitive:
                op = nn.Sequential(op, nn.BatchNorm2d(C, affine=False))
            self._ops.append(op)

    def forward(self, x, weights):
        return sum(w * op(x) for w, op in zip(weights, self._ops))


class Cell(nn.Module):

    def __init__(self, steps, multiplier, C_prev_prev, C_prev, C, reduction, reduction_prev):
        super(Cell, self).__init__()
        self.reduction = reduction

        if reduction_prev:
            self.preprocess0 = FactorizedReduce(C_prev_prev, C, affine=False)
        else:
            self.preprocess0 = ReLUConvBN(C_prev_prev, C, 1, 1, 0, affine=False)
        self.preprocess1 = ReLUConvBN(C_prev, C, 1, 1, 0, affine=False)
        self._steps = steps
        self._multiplier = multiplier

        self._ops = nn.ModuleList()
        self._bns = nn.ModuleList()
        for i in range(self._steps):
            for j in range(2 + i):
                stride = 2 if reduction and j < 2 else 1
                op = MixedOp(C, stride)
                self._ops.append(op)

    def forward(self, s0, s1, weights):
        s0 = self.preprocess0(s0)
        s1 = self.preprocess1(s1)

        states = [s0, s1]
        offset = 0
        for i in range(self._steps):
            s = sum(self._ops[offset + j](h, weights[offset + j]) for j, h in enumerate(states))
            offset += len(states)
            states.append(s)

        return torch.cat(states[-self._multiplier:], dim=1)


class Network(nn.Module):

    def __init__(self, C, num_classes, layers, criterion, steps=4, multiplier=4, stem_multiplier=3):
        super(Network, self).__init__()
        self._C = C
        self._num_classes = num_classes
        self._layers = layers
        self._criterion = criterion
        self._steps = steps
        self._multiplier = multiplier

        C_curr = stem_multiplier * C
        self.stem = nn.Sequential(
            nn.Conv2d(3, C_curr, 3, padding=1, bias=False),
            nn.BatchNorm2d(C_curr)
        )

        C_prev_prev, C_prev, C_curr = C_curr, C_curr, C
        self.cells = nn.ModuleList()
        reduction_prev = False
        for i in range(layers):
            if i in [layers // 3, 2 * layers // 3]:
                C_curr *= 2
                reduction = True
            else:
                reduction = False
            cell = Cell(steps, multiplier, C_prev_prev, C_prev, C_curr, reduction, reduction_prev)
            reduction_prev = reduction
            self.cells += [cell]
            C_prev_prev, C_prev = C_prev, multiplier * C_curr

        self.global_pooling = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(C_prev, num_classes)

        self._initialize_alphas()

    def forward(self, input):
        s0 = s1 = self.stem(input)
        for i, cell in enumerate(self.cells):
            if cell.reduction:
                weights = F.softmax(self.alphas_reduce, dim=-1)
            else:
                weights = F.softmax(self.alphas_normal, dim=-1)
            s0, s1 = s1, cell(s0, s1, weights)
        out = self.global_pooling(s1)
        logits = self.classifier(out.view(out.size(0), -1))
        return logits

    def _loss(self, input, target):
        logits = self(input)
        return self._criterion(logits, target)

    def _initialize_alphas(self):
        k = sum(1 for i in range(self._steps) for n in range(2 + i))
        num_ops = len(PRIMITIVES)

        # Variable(1e-3 * torch.randn(k, num_ops).cuda(), requires_grad=True)
        self.alphas_normal = (1e-3 * torch.randn(k, num_ops)).requires_grad_()
        self.alphas_reduce = (1e-3 * torch.randn(k, num_ops)).requires_grad_()
        self._arch_parameters = [
            self.alphas_normal,
            self.alphas_reduce,
        ]

    def arch_parameters(self):
        return self._arch_parameters


def b_darts():
    model = Network(C=4, num_classes=10, layers=4, criterion=nn.CrossEntropyLoss(), steps=2, multiplier=2)
    return dict(model=model, inputs=(randn(2, 3, 16, 16),), target=randint(10, 2), loss=ce)


# ---------------------------------------------------------------------------------------
# PointNet++ single-scale grouping classification as yanx27's Pointnet_Pointnet2_pytorch writes
# it (models/pointnet2_cls_ssg.py's get_model, models/pointnet2_utils.py; normal_channel on):
# the normals split off the xyz channels; sa1, sa2 (PointNetSetAbstraction: the permutes;
# sample_and_group: farthest_point_sample (a loop over the samples: the centroid gathered, the
# squared distances, the running minimum by a mask and index_put, max), index_points (a batch
# index by arange, view and repeat, advanced indexing), query_ball_point (square_distance by
# matmul and the squared norms added in place, the indices beyond the radius set to N, sort,
# the first index copied into the empty slots), the grouped points centred, cat with the
# features; the shared MLP: mlp_convs and mlp_bns, ModuleLists of Conv2d 1x1 and BatchNorm2d,
# F.relu between; torch.max over each group), sa3 (group_all: every point in one group, no
# sampling); view, fc1, bn1, F.relu, drop1, fc2, bn2, F.relu, drop2, fc3, log_softmax; returns
# the log-probabilities and l3_points. get_loss's NLL on the first.


def square_distance(src, dst):
    """Calculate Euclid distance between each two points."""
    B, N, _ = src.shape
    _, M, _ = dst.shape
    dist = -2 * torch.matmul(src, dst.permute(0, 2, 1))
    dist += torch.sum(src ** 2, -1).view(B, N, 1)
    dist += torch.sum(dst ** 2, -1).view(B, 1, M)
    return dist


def index_points(points, idx):
    device = points.device
    B = points.shape[0]
    view_shape = list(idx.shape)
    view_shape[1:] = [1] * (len(view_shape) - 1)
    repeat_shape = list(idx.shape)
    repeat_shape[0] = 1
    batch_indices = torch.arange(B, dtype=torch.long).to(device).view(view_shape).repeat(repeat_shape)
    new_points = points[batch_indices, idx, :]
    return new_points


def farthest_point_sample(xyz, npoint):
    device = xyz.device
    B, N, C = xyz.shape
    centroids = torch.zeros(B, npoint, dtype=torch.long).to(device)
    distance = torch.ones(B, N).to(device) * 1e10
    farthest = torch.randint(0, N, (B,), dtype=torch.long).to(device)
    batch_indices = torch.arange(B, dtype=torch.long).to(device)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch_indices, farthest, :].view(B, 1, 3)
        dist = torch.sum((xyz - centroid) ** 2, -1)
        mask = dist < distance
        distance[mask] = dist[mask]
        farthest = torch.max(distance, -1)[1]
    return centroids


def query_ball_point(radius, nsample, xyz, new_xyz):
    device = xyz.device
    B, N, C = xyz.shape
    _, S, _ = new_xyz.shape
    group_idx = torch.arange(N, dtype=torch.long).to(device).view(1, 1, N).repeat([B, S, 1])
    sqrdists = square_distance(new_xyz, xyz)
    group_idx[sqrdists > radius ** 2] = N
    group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
    group_first = group_idx[:, :, 0].view(B, S, 1).repeat([1, 1, nsample])
    mask = group_idx == N
    group_idx[mask] = group_first[mask]
    return group_idx


def sample_and_group(npoint, radius, nsample, xyz, points, returnfps=False):
    B, N, C = xyz.shape
    S = npoint
    fps_idx = farthest_point_sample(xyz, npoint)  # [B, npoint, C]
    new_xyz = index_points(xyz, fps_idx)
    idx = query_ball_point(radius, nsample, xyz, new_xyz)
    grouped_xyz = index_points(xyz, idx)  # [B, npoint, nsample, C]
    grouped_xyz_norm = grouped_xyz - new_xyz.view(B, S, 1, C)

    if points is not None:
        grouped_points = index_points(points, idx)
        new_points = torch.cat([grouped_xyz_norm, grouped_points], dim=-1)  # [B, npoint, nsample, C+D]
    else:
        new_points = grouped_xyz_norm
    if returnfps:
        return new_xyz, new_points, grouped_xyz, fps_idx
    else:
        return new_xyz, new_points


def sample_and_group_all(xyz, points):
    device = xyz.device
    B, N, C = xyz.shape
    new_xyz = torch.zeros(B, 1, C).to(device)
    grouped_xyz = xyz.view(B, 1, N, C)
    if points is not None:
        new_points = torch.cat([grouped_xyz, points.view(B, 1, N, -1)], dim=-1)
    else:
        new_points = grouped_xyz
    return new_xyz, new_points


class PointNetSetAbstraction(nn.Module):
    def __init__(self, npoint, radius, nsample, in_channel, mlp, group_all):
        super(PointNetSetAbstraction, self).__init__()
        self.npoint = npoint
        self.radius = radius
        self.nsample = nsample
        self.mlp_convs = nn.ModuleList()
        self.mlp_bns = nn.ModuleList()
        last_channel = in_channel
        for out_channel in mlp:
            self.mlp_convs.append(nn.Conv2d(last_channel, out_channel, 1))
            self.mlp_bns.append(nn.BatchNorm2d(out_channel))
            last_channel = out_channel
        self.group_all = group_all

    def forward(self, xyz, points):
        xyz = xyz.permute(0, 2, 1)
        if points is not None:
            points = points.permute(0, 2, 1)

        if self.group_all:
            new_xyz, new_points = sample_and_group_all(xyz, points)
        else:
            new_xyz, new_points = sample_and_group(self.npoint, self.radius, self.nsample, xyz, points)
        # new_xyz: sampled points position data, [B, npoint, C]
        # new_points: sampled points data, [B, npoint, nsample, C+D]
        new_points = new_points.permute(0, 3, 2, 1)  # [B, C+D, nsample,npoint]
        for i, conv in enumerate(self.mlp_convs):
            bn = self.mlp_bns[i]
            new_points = F.relu(bn(conv(new_points)))

        new_points = torch.max(new_points, 2)[0]
        new_xyz = new_xyz.permute(0, 2, 1)
        return new_xyz, new_points


class get_model(nn.Module):  # noqa: N801  (the reference's name)
    def __init__(self, num_class, normal_channel=True, npoints=(32, 8), radii=(0.4, 0.8), nsamples=(8, 16),
                 mlps=((16, 16, 32), (32, 32, 64), (64, 64, 128)), fc=(64, 32)):
        super(get_model, self).__init__()
        in_channel = 6 if normal_channel else 3
        self.normal_channel = normal_channel
        self.sa1 = PointNetSetAbstraction(npoint=npoints[0], radius=radii[0], nsample=nsamples[0],
                                          in_channel=in_channel, mlp=list(mlps[0]), group_all=False)
        self.sa2 = PointNetSetAbstraction(npoint=npoints[1], radius=radii[1], nsample=nsamples[1],
                                          in_channel=mlps[0][-1] + 3, mlp=list(mlps[1]), group_all=False)
        self.sa3 = PointNetSetAbstraction(npoint=None, radius=None, nsample=None, in_channel=mlps[1][-1] + 3,
                                          mlp=list(mlps[2]), group_all=True)
        self.feat_dim = mlps[2][-1]
        self.fc1 = nn.Linear(self.feat_dim, fc[0])
        self.bn1 = nn.BatchNorm1d(fc[0])
        self.drop1 = nn.Dropout(0.4)
        self.fc2 = nn.Linear(fc[0], fc[1])
        self.bn2 = nn.BatchNorm1d(fc[1])
        self.drop2 = nn.Dropout(0.4)
        self.fc3 = nn.Linear(fc[1], num_class)

    def forward(self, xyz):
        B, _, _ = xyz.shape
        if self.normal_channel:
            norm = xyz[:, 3:, :]
            xyz = xyz[:, :3, :]
        else:
            norm = None
        l1_xyz, l1_points = self.sa1(xyz, norm)
        l2_xyz, l2_points = self.sa2(l1_xyz, l1_points)
        l3_xyz, l3_points = self.sa3(l2_xyz, l2_points)
        x = l3_points.view(B, self.feat_dim)
        x = self.drop1(F.relu(self.bn1(self.fc1(x))))
        x = self.drop2(F.relu(self.bn2(self.fc2(x))))
        x = self.fc3(x)
        x = F.log_softmax(x, -1)

        return x, l3_points


def pointnet2_nll(out, target):
    """get_loss: F.nll_loss on the log-probabilities (trans_feat unused)."""
    pred, trans_feat = out
    return F.nll_loss(pred, target)


def b_pointnet2():
    batch, n = 4, 128
    xyz = randn(batch, 3, n).clamp(-2, 2) / 2  # points in the unit cube's neighbourhood
    normals = F.normalize(randn(batch, 3, n, seed=3), dim=1)
    points = torch.cat([xyz, normals], 1)  # the training script's points.transpose(2, 1): (B, 6, N)
    return dict(model=get_model(10, normal_channel=True), inputs=(points,), target=randint(10, batch),
                loss=pointnet2_nll)


# ---------------------------------------------------------------------------------------
# FocalNet as Microsoft's FocalNet writes it (classification/focalnet.py; srf: focal levels 2,
# windows 3; no layerscale, no post-LN): patch_embed (PatchEmbed: proj conv, flatten, transpose,
# norm), pos_drop, layers (a ModuleList of BasicLayers: blocks, a ModuleList of FocalNetBlocks,
# H and W set on each before the call; downsample, a PatchEmbed of patch 2 after the tokens are
# made a map again, but in the last stage), norm, avgpool (AdaptiveAvgPool1d over the tokens),
# flatten, head. FocalNetBlock: norm1, view to (B, H, W, C), modulation, view back; shortcut +
# drop_path(gamma_1 * x) (gamma 1.0, a float; timm's DropPath after the first block, an
# Identity there); x + drop_path(gamma_2 * mlp(norm2(x))) (Mlp: fc1, act GELU, drop, fc2, the
# same drop again). FocalModulation: f, a Linear to q, ctx and focal_level + 1 gates, permuted
# to channels first and split; per focal level focal_layers[l] (a Sequential of a depthwise
# Conv2d of growing kernel and GELU) on the previous context, ctx_all + ctx * gate; the global
# context act(ctx.mean(2).mean(3)) times the last gate; h, a 1x1 Conv2d, the modulator, q times
# it, permuted back, proj, proj_drop. Weights as _init_weights sets them. Cross entropy.


def to_2tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x


class FocalModulation(nn.Module):
    def __init__(self, dim, focal_window, focal_level, focal_factor=2, bias=True, proj_drop=0.,
                 use_postln_in_modulation=False, normalize_modulator=False):
        super().__init__()

        self.dim = dim
        self.focal_window = focal_window
        self.focal_level = focal_level
        self.focal_factor = focal_factor
        self.use_postln_in_modulation = use_postln_in_modulation
        self.normalize_modulator = normalize_modulator

        self.f = nn.Linear(dim, 2 * dim + (self.focal_level + 1), bias=bias)
        self.h = nn.Conv2d(dim, dim, kernel_size=1, stride=1, bias=bias)

        self.act = nn.GELU()
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.focal_layers = nn.ModuleList()

        self.kernel_sizes = []
        for k in range(self.focal_level):
            kernel_size = self.focal_factor * k + self.focal_window
            self.focal_layers.append(
                nn.Sequential(
                    nn.Conv2d(dim, dim, kernel_size=kernel_size, stride=1,
                              groups=dim, padding=kernel_size // 2, bias=False),
                    nn.GELU(),
                )
            )
            self.kernel_sizes.append(kernel_size)
        if self.use_postln_in_modulation:
            self.ln = nn.LayerNorm(dim)

    def forward(self, x):
        C = x.shape[-1]

        # pre linear projection
        x = self.f(x).permute(0, 3, 1, 2).contiguous()
        q, ctx, self.gates = torch.split(x, (C, C, self.focal_level + 1), 1)

        # context aggreation
        ctx_all = 0
        for l in range(self.focal_level):  # noqa: E741
            ctx = self.focal_layers[l](ctx)
            ctx_all = ctx_all + ctx * self.gates[:, l:l + 1]
        ctx_global = self.act(ctx.mean(2, keepdim=True).mean(3, keepdim=True))
        ctx_all = ctx_all + ctx_global * self.gates[:, self.focal_level:]

        # normalize context
        if self.normalize_modulator:
            ctx_all = ctx_all / (self.focal_level + 1)

        # focal modulation
        self.modulator = self.h(ctx_all)
        x_out = q * self.modulator
        x_out = x_out.permute(0, 2, 3, 1).contiguous()
        if self.use_postln_in_modulation:
            x_out = self.ln(x_out)

        # post linear porjection
        x_out = self.proj(x_out)
        x_out = self.proj_drop(x_out)
        return x_out


class FocalNetBlock(nn.Module):
    def __init__(self, dim, input_resolution, mlp_ratio=4., drop=0., drop_path=0., act_layer=nn.GELU,
                 norm_layer=nn.LayerNorm, focal_level=1, focal_window=3, use_layerscale=False, layerscale_value=1e-4,
                 use_postln=False, use_postln_in_modulation=False, normalize_modulator=False):
        super().__init__()
        self.dim = dim
        self.input_resolution = input_resolution
        self.mlp_ratio = mlp_ratio

        self.focal_window = focal_window
        self.focal_level = focal_level
        self.use_postln = use_postln

        self.norm1 = norm_layer(dim)
        self.modulation = FocalModulation(dim, proj_drop=drop, focal_window=focal_window,
                                          focal_level=self.focal_level,
                                          use_postln_in_modulation=use_postln_in_modulation,
                                          normalize_modulator=normalize_modulator)

        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()
        self.norm2 = norm_layer(dim)
        mlp_hidden_dim = int(dim * mlp_ratio)
        self.mlp = Mlp(in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop)

        self.gamma_1 = 1.0
        self.gamma_2 = 1.0
        if use_layerscale:
            self.gamma_1 = nn.Parameter(layerscale_value * torch.ones((dim)), requires_grad=True)
            self.gamma_2 = nn.Parameter(layerscale_value * torch.ones((dim)), requires_grad=True)

        self.H = None
        self.W = None

    def forward(self, x):
        H, W = self.H, self.W
        B, L, C = x.shape
        shortcut = x

        # Focal Modulation
        x = x if self.use_postln else self.norm1(x)
        x = x.view(B, H, W, C)
        x = self.modulation(x).view(B, H * W, C)
        x = x if not self.use_postln else self.norm1(x)

        # FFN
        x = shortcut + self.drop_path(self.gamma_1 * x)
        x = x + self.drop_path(self.gamma_2 * (self.norm2(self.mlp(x)) if self.use_postln else
                                               self.mlp(self.norm2(x))))

        return x


class BasicLayer(nn.Module):
    def __init__(self, dim, out_dim, input_resolution, depth, mlp_ratio=4., drop=0., drop_path=0.,
                 norm_layer=nn.LayerNorm, downsample=None, use_checkpoint=False, focal_level=1, focal_window=1,
                 use_conv_embed=False, use_layerscale=False, layerscale_value=1e-4, use_postln=False,
                 use_postln_in_modulation=False, normalize_modulator=False):

        super().__init__()
        self.dim = dim
        self.input_resolution = input_resolution
        self.depth = depth
        self.use_checkpoint = use_checkpoint
        assert not use_checkpoint

        # build blocks
        self.blocks = nn.ModuleList([
            FocalNetBlock(
                dim=dim,
                input_resolution=input_resolution,
                mlp_ratio=mlp_ratio,
                drop=drop,
                drop_path=drop_path[i] if isinstance(drop_path, list) else drop_path,
                norm_layer=norm_layer,
                focal_level=focal_level,
                focal_window=focal_window,
                use_layerscale=use_layerscale,
                layerscale_value=layerscale_value,
                use_postln=use_postln,
                use_postln_in_modulation=use_postln_in_modulation,
                normalize_modulator=normalize_modulator,
            )
            for i in range(depth)])

        if downsample is not None:
            self.downsample = downsample(img_size=input_resolution, patch_size=2, in_chans=dim, embed_dim=out_dim,
                                         use_conv_embed=use_conv_embed, norm_layer=norm_layer, is_stem=False)
        else:
            self.downsample = None

    def forward(self, x, H, W):
        for blk in self.blocks:
            blk.H, blk.W = H, W
            x = blk(x)

        if self.downsample is not None:
            x = x.transpose(1, 2).reshape(x.shape[0], -1, H, W)
            x, Ho, Wo = self.downsample(x)
        else:
            Ho, Wo = H, W
        return x, Ho, Wo


class PatchEmbed(nn.Module):
    def __init__(self, img_size=(224, 224), patch_size=4, in_chans=3, embed_dim=96, use_conv_embed=False,
                 norm_layer=None, is_stem=False):
        super().__init__()
        patch_size = to_2tuple(patch_size)
        patches_resolution = [img_size[0] // patch_size[0], img_size[1] // patch_size[1]]
        self.img_size = img_size
        self.patch_size = patch_size
        self.patches_resolution = patches_resolution
        self.num_patches = patches_resolution[0] * patches_resolution[1]

        self.in_chans = in_chans
        self.embed_dim = embed_dim

        if use_conv_embed:
            # if we choose to use conv embedding, then we treat the stem and non-stem differently
            if is_stem:
                kernel_size = 7
                padding = 2
                stride = 4
            else:
                kernel_size = 3
                padding = 1
                stride = 2
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=kernel_size, stride=stride, padding=padding)
        else:
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

        if norm_layer is not None:
            self.norm = norm_layer(embed_dim)
        else:
            self.norm = None

    def forward(self, x):
        B, C, H, W = x.shape

        x = self.proj(x)
        H, W = x.shape[2:]
        x = x.flatten(2).transpose(1, 2)  # B Ph*Pw C
        if self.norm is not None:
            x = self.norm(x)
        return x, H, W


class FocalNet(nn.Module):
    def __init__(self, img_size=224, patch_size=4, in_chans=3, num_classes=1000, embed_dim=96, depths=[2, 2, 6, 2],
                 mlp_ratio=4., drop_rate=0., drop_path_rate=0.1, norm_layer=nn.LayerNorm, patch_norm=True,
                 use_checkpoint=False, focal_levels=[2, 2, 2, 2], focal_windows=[3, 3, 3, 3], use_conv_embed=False,
                 use_layerscale=False, layerscale_value=1e-4, use_postln=False, use_postln_in_modulation=False,
                 normalize_modulator=False, **kwargs):
        super().__init__()

        self.num_layers = len(depths)
        embed_dim = [embed_dim * (2 ** i) for i in range(self.num_layers)]

        self.num_classes = num_classes
        self.embed_dim = embed_dim
        self.patch_norm = patch_norm
        self.num_features = embed_dim[-1]
        self.mlp_ratio = mlp_ratio

        # split image into patches using either non-overlapped embedding or overlapped embedding
        self.patch_embed = PatchEmbed(img_size=to_2tuple(img_size), patch_size=patch_size, in_chans=in_chans,
                                      embed_dim=embed_dim[0], use_conv_embed=use_conv_embed,
                                      norm_layer=norm_layer if self.patch_norm else None, is_stem=True)

        patches_resolution = self.patch_embed.patches_resolution
        self.patches_resolution = patches_resolution
        self.pos_drop = nn.Dropout(p=drop_rate)

        # stochastic depth
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]  # stochastic depth decay rule

        # build layers
        self.layers = nn.ModuleList()
        for i_layer in range(self.num_layers):
            layer = BasicLayer(dim=embed_dim[i_layer],
                               out_dim=embed_dim[i_layer + 1] if (i_layer < self.num_layers - 1) else None,
                               input_resolution=(patches_resolution[0] // (2 ** i_layer),
                                                 patches_resolution[1] // (2 ** i_layer)),
                               depth=depths[i_layer],
                               mlp_ratio=self.mlp_ratio,
                               drop=drop_rate,
                               drop_path=dpr[sum(depths[:i_layer]):sum(depths[:i_layer + 1])],
                               norm_layer=norm_layer,
                               downsample=PatchEmbed if (i_layer < self.num_layers - 1) else None,
                               focal_level=focal_levels[i_layer],
                               focal_window=focal_windows[i_layer],
                               use_conv_embed=use_conv_embed,
                               use_checkpoint=use_checkpoint,
                               use_layerscale=use_layerscale,
                               layerscale_value=layerscale_value,
                               use_postln=use_postln,
                               use_postln_in_modulation=use_postln_in_modulation,
                               normalize_modulator=normalize_modulator)
            self.layers.append(layer)

        self.norm = norm_layer(self.num_features)
        self.avgpool = nn.AdaptiveAvgPool1d(1)
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def forward_features(self, x):
        x, H, W = self.patch_embed(x)
        x = self.pos_drop(x)

        for layer in self.layers:
            x, H, W = layer(x, H, W)
        x = self.norm(x)  # B L C
        x = self.avgpool(x.transpose(1, 2))  # B C 1
        x = torch.flatten(x, 1)
        return x

    def forward(self, x):
        x = self.forward_features(x)
        x = self.head(x)
        return x


def b_focalnet():
    model = FocalNet(img_size=32, patch_size=4, num_classes=10, embed_dim=16, depths=[2, 2, 2],
                     focal_levels=[2, 2, 2], focal_windows=[3, 3, 3])
    return dict(model=model, inputs=(randn(4, 3, 32, 32),), target=randint(10, 4), loss=ce)


# ---------------------------------------------------------------------------------------
# DCN-Mix as DeepCTR-Torch writes it (deepctr_torch/models/dcnmix.py, layers/interaction.py's
# CrossNetMix) on its BaseModel (tools/record_cpu_fresh.py's DeepCTRBase: embedding_dict, one
# Embedding per sparse field looked up with X[:, i:i+1].long(); linear_model, DeepCTR's Linear;
# out, PredictionLayer's bias added in place and sigmoid): the linear logit; combined_dnn_input
# (the embeddings cat and flattened, the dense values after them); dnn (DeepCTR's DNN:
# linears, ReLU(inplace=True) activation_layers, one dropout) and crossnet (CrossNetMix, 2
# layers, 3 experts, rank 8: per layer and expert the gating[expert_id] Linear on x_l; V^T x_l,
# tanh, C, tanh, U (U_list, V_list and C_list Parameters indexed per layer and expert), + bias,
# x_0 times it; the experts stacked, matmul with the gates' softmax, + x_l; squeeze) on the same
# input; cat, dnn_linear added to the logit in place; out. Binary cross entropy summed, as
# BaseModel.fit computes it (its L2 regularisation terms left out).


class CrossNetMix(nn.Module):
    """DCN-Mix model in DCN-M paper (the mixture of low-rank cross experts)."""

    def __init__(self, in_features, low_rank=32, num_experts=4, layer_num=2, device="cpu"):
        super(CrossNetMix, self).__init__()
        self.layer_num = layer_num
        self.num_experts = num_experts

        # U: (in_features, low_rank)
        self.U_list = nn.Parameter(torch.Tensor(self.layer_num, num_experts, in_features, low_rank))
        # V: (in_features, low_rank)
        self.V_list = nn.Parameter(torch.Tensor(self.layer_num, num_experts, in_features, low_rank))
        # C: (low_rank, low_rank)
        self.C_list = nn.Parameter(torch.Tensor(self.layer_num, num_experts, low_rank, low_rank))
        self.gating = nn.ModuleList([nn.Linear(in_features, 1, bias=False) for i in range(self.num_experts)])

        self.bias = nn.Parameter(torch.Tensor(self.layer_num, in_features, 1))

        init_para_list = [self.U_list, self.V_list, self.C_list]
        for para in init_para_list:
            for i in range(self.layer_num):
                nn.init.xavier_normal_(para[i])

        for i in range(len(self.bias)):
            nn.init.zeros_(self.bias[i])

        self.to(device)

    def forward(self, inputs):
        x_0 = inputs.unsqueeze(2)  # (bs, in_features, 1)
        x_l = x_0
        for i in range(self.layer_num):
            output_of_experts = []
            gating_score_of_experts = []
            for expert_id in range(self.num_experts):
                # (1) G(x_l)
                # compute the gating score by x_l
                gating_score_of_experts.append(self.gating[expert_id](x_l.squeeze(2)))

                # (2) E(x_l)
                # project the input x_l to $\mathbb{R}^{r}$
                v_x = torch.matmul(self.V_list[i][expert_id].t(), x_l)  # (bs, low_rank, 1)

                # nonlinear activation in low rank space
                v_x = torch.tanh(v_x)
                v_x = torch.matmul(self.C_list[i][expert_id], v_x)
                v_x = torch.tanh(v_x)

                # project back to $\mathbb{R}^{d}$
                uv_x = torch.matmul(self.U_list[i][expert_id], v_x)  # (bs, in_features, 1)

                dot_ = uv_x + self.bias[i]
                dot_ = x_0 * dot_  # Hadamard-product

                output_of_experts.append(dot_.squeeze(2))

            # (3) mixture of low-rank experts
            output_of_experts = torch.stack(output_of_experts, 2)  # (bs, in_features, num_experts)
            gating_score_of_experts = torch.stack(gating_score_of_experts, 1)  # (bs, num_experts, 1)
            moe_out = torch.matmul(output_of_experts, gating_score_of_experts.softmax(1))
            x_l = moe_out + x_l  # (bs, in_features, 1)

        x_l = x_l.squeeze()  # (bs, in_features)
        return x_l


class DCNMix(DeepCTRBase):
    def __init__(self, sparse_vocab=(50, 40, 30, 60, 20, 10), n_dense=2, embedding_size=8, cross_num=2,
                 dnn_hidden_units=(32, 32), low_rank=8, num_experts=3, init_std=0.0001, dnn_dropout=0,
                 device="cpu"):
        super().__init__(sparse_vocab, n_dense, embedding_size, init_std)
        self.dnn_hidden_units = dnn_hidden_units
        self.cross_num = cross_num
        input_dim = len(sparse_vocab) * embedding_size + n_dense  # compute_input_dim(dnn_feature_columns)
        self.dnn = deepctr_dnn(input_dim, dnn_hidden_units, dropout_rate=dnn_dropout, init_std=init_std)
        if len(self.dnn_hidden_units) > 0 and self.cross_num > 0:
            dnn_linear_in_feature = input_dim + dnn_hidden_units[-1]
        elif len(self.dnn_hidden_units) > 0:
            dnn_linear_in_feature = dnn_hidden_units[-1]
        elif self.cross_num > 0:
            dnn_linear_in_feature = input_dim

        self.dnn_linear = nn.Linear(dnn_linear_in_feature, 1, bias=False).to(device)
        self.crossnet = CrossNetMix(in_features=input_dim, low_rank=low_rank, num_experts=num_experts,
                                    layer_num=cross_num, device=device)
        self.to(device)

    def forward(self, X):
        logit = self.linear_model(X)
        sparse_embedding_list, dense_value_list = self.input_from_feature_columns(X)
        dnn_input = combined_dnn_input(sparse_embedding_list, dense_value_list)

        if len(self.dnn_hidden_units) > 0 and self.cross_num > 0:  # Deep & Cross
            deep_out = self.dnn(dnn_input)
            cross_out = self.crossnet(dnn_input)
            stack_out = torch.cat((cross_out, deep_out), dim=-1)
            logit += self.dnn_linear(stack_out)
        elif len(self.dnn_hidden_units) > 0:  # Only Deep
            deep_out = self.dnn(dnn_input)
            logit += self.dnn_linear(deep_out)
        elif self.cross_num > 0:  # Only Cross
            cross_out = self.crossnet(dnn_input)
            logit += self.dnn_linear(cross_out)
        y_pred = self.out(logit)
        return y_pred


def deepctr_bce_sum(y_pred, y):
    """BaseModel.fit's loss: binary_crossentropy(y_pred, y.squeeze(), reduction='sum')."""
    return F.binary_cross_entropy(y_pred.squeeze(), y.squeeze(), reduction="sum")


def b_dcn_mix():
    x = ctr_input(64, (50, 40, 30, 60, 20, 10), 2)
    return dict(model=DCNMix(), inputs=(x,), target=randint(2, 64, 1, seed=3).float(), loss=deepctr_bce_sum)


# ---------------------------------------------------------------------------------------
# HAN as DGL's examples/pytorch/han/model.py writes it (the meta-path graphs given, as its
# load_acm makes them, self loops included), DGL's GATConv written without DGL: HAN (layers, a
# ModuleList of one HANLayer; predict, a Linear). HANLayer: gat_layers, a ModuleList of a GATConv
# per meta-path, each output flattened over its heads, stacked; semantic_attention
# (SemanticAttention: project, a Sequential of Linear, Tanh and a bias-free Linear, averaged
# over the nodes, softmax over the meta-paths, expanded, the weighted sum). GATConv (feat_drop,
# attn_drop and activation F.elu as HANLayer builds it): feat_drop, fc (bias-free) viewed per
# head, el and er as (feat * attn_l).sum and (feat * attn_r).sum; per edge el[src] + er[dst]
# (apply_edges' u_add_v), leaky_relu (a module), edge_softmax (the max per destination by
# scatter_reduce, detached as DGL's custom function does, exp, the sum per destination by
# index_add_, divided), attn_drop; messages ft[src] * a summed per destination by index_add_
# (update_all's u_mul_e and sum); + bias; activation. Cross entropy on the training nodes.


def edge_softmax(dst, score, num_nodes):
    """dgl.ops.edge_softmax over the in-edges of each node: subtract the max, exp, divide by the sum."""
    index = dst.view(-1, *([1] * (score.dim() - 1))).expand_as(score)
    with torch.no_grad():
        score_max = score.new_full((num_nodes,) + score.shape[1:], float("-inf")).scatter_reduce(
            0, index, score, reduce="amax", include_self=True)
    score = torch.exp(score - score_max[dst])
    score_sum = score.new_zeros((num_nodes,) + score.shape[1:]).index_add_(0, dst, score)
    return score / score_sum[dst]


class GATConv(nn.Module):
    def __init__(self, in_feats, out_feats, num_heads, feat_drop=0.0, attn_drop=0.0, negative_slope=0.2,
                 residual=False, activation=None, allow_zero_in_degree=False, bias=True):
        super(GATConv, self).__init__()
        assert not residual
        self._num_heads = num_heads
        self._in_src_feats = self._in_dst_feats = in_feats
        self._out_feats = out_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        self.fc = nn.Linear(self._in_src_feats, out_feats * num_heads, bias=False)
        self.attn_l = nn.Parameter(torch.FloatTensor(size=(1, num_heads, out_feats)))
        self.attn_r = nn.Parameter(torch.FloatTensor(size=(1, num_heads, out_feats)))
        self.feat_drop = nn.Dropout(feat_drop)
        self.attn_drop = nn.Dropout(attn_drop)
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        if bias:
            self.bias = nn.Parameter(torch.FloatTensor(size=(num_heads * out_feats,)))
        else:
            self.register_buffer("bias", None)
        self.register_buffer("res_fc", None)
        self.reset_parameters()
        self.activation = activation

    def reset_parameters(self):
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.fc.weight, gain=gain)
        nn.init.xavier_normal_(self.attn_l, gain=gain)
        nn.init.xavier_normal_(self.attn_r, gain=gain)
        if self.bias is not None:
            nn.init.constant_(self.bias, 0)

    def forward(self, graph, feat):
        src, dst = graph
        num_nodes = feat.shape[0]
        h_src = h_dst = self.feat_drop(feat)
        feat_src = feat_dst = self.fc(h_src).view(-1, self._num_heads, self._out_feats)
        # NOTE: GAT paper uses "first concatenation then linear projection" to compute attention
        # scores, while ours is "first projection then addition", the two approaches are
        # mathematically equivalent.
        el = (feat_src * self.attn_l).sum(dim=-1).unsqueeze(-1)
        er = (feat_dst * self.attn_r).sum(dim=-1).unsqueeze(-1)
        # compute edge attention, el and er are a_l Wh_i and a_r Wh_j respectively.
        e = el[src] + er[dst]  # graph.apply_edges(fn.u_add_v("el", "er", "e"))
        e = self.leaky_relu(e)
        # compute softmax
        a = self.attn_drop(edge_softmax(dst, e, num_nodes))
        # message passing: graph.update_all(fn.u_mul_e("ft", "a", "m"), fn.sum("m", "ft"))
        m = feat_src[src] * a
        rst = feat_src.new_zeros(num_nodes, self._num_heads, self._out_feats).index_add_(0, dst, m)
        # bias
        if self.bias is not None:
            rst = rst + self.bias.view(1, self._num_heads, self._out_feats)
        # activation
        if self.activation:
            rst = self.activation(rst)
        return rst


class SemanticAttention(nn.Module):
    def __init__(self, in_size, hidden_size=128):
        super(SemanticAttention, self).__init__()

        self.project = nn.Sequential(
            nn.Linear(in_size, hidden_size),
            nn.Tanh(),
            nn.Linear(hidden_size, 1, bias=False),
        )

    def forward(self, z):
        w = self.project(z).mean(0)  # (M, 1)
        beta = torch.softmax(w, dim=0)  # (M, 1)
        beta = beta.expand((z.shape[0],) + beta.shape)  # (N, M, 1)

        return (beta * z).sum(1)  # (N, D * K)


class HANLayer(nn.Module):
    def __init__(self, num_meta_paths, in_size, out_size, layer_num_heads, dropout):
        super(HANLayer, self).__init__()

        # One GAT layer for each meta path based adjacency matrix
        self.gat_layers = nn.ModuleList()
        for i in range(num_meta_paths):
            self.gat_layers.append(GATConv(in_size, out_size, layer_num_heads, dropout, dropout, activation=F.elu))
        self.semantic_attention = SemanticAttention(in_size=out_size * layer_num_heads)
        self.num_meta_paths = num_meta_paths

    def forward(self, gs, h):
        semantic_embeddings = []

        for i, g in enumerate(gs):
            semantic_embeddings.append(self.gat_layers[i](g, h).flatten(1))
        semantic_embeddings = torch.stack(semantic_embeddings, dim=1)  # (N, M, D * K)

        return self.semantic_attention(semantic_embeddings)  # (N, D * K)


class HAN(nn.Module):
    def __init__(self, num_meta_paths, in_size, hidden_size, out_size, num_heads, dropout):
        super(HAN, self).__init__()

        self.layers = nn.ModuleList()
        self.layers.append(HANLayer(num_meta_paths, in_size, hidden_size, num_heads[0], dropout))
        for l in range(1, len(num_heads)):  # noqa: E741
            self.layers.append(HANLayer(num_meta_paths, hidden_size * num_heads[l - 1], hidden_size, num_heads[l],
                                        dropout))
        self.predict = nn.Linear(hidden_size * num_heads[-1], out_size)

    def forward(self, g, h):
        for gnn in self.layers:
            h = gnn(g, h)

        return self.predict(h)


def masked_ce(logits, target):
    """main.py's loss_fcn(logits[train_mask], labels[train_mask]), CrossEntropyLoss."""
    labels, train_mask = target
    return F.cross_entropy(logits[train_mask], labels[train_mask])


def metapath_graph(n, edges, seed):
    """A meta-path reachable graph as (src, dst): random symmetric edges and every node's self loop."""
    edge_index = random_edges(n, edges, seed=seed)
    loops = torch.arange(n)
    return torch.cat([edge_index[0], loops]), torch.cat([edge_index[1], loops])


def b_han():
    n, feats, classes = 60, 32, 3
    gs = (metapath_graph(n, 120, seed=4), metapath_graph(n, 90, seed=5))  # PAP and PSP
    train_mask = torch.arange(n) % 4 != 3
    model = HAN(num_meta_paths=len(gs), in_size=feats, hidden_size=8, out_size=classes, num_heads=[4], dropout=0.6)
    return dict(model=model, inputs=(gs, randn(n, feats)), target=(randint(classes, n, seed=3), train_mask),
                loss=masked_ce)


# ---------------------------------------------------------------------------------------
# Squeezeformer as upskyy's Squeezeformer writes it (squeezeformer/model.py, encoder.py,
# attention.py, convolution.py, modules.py, activation.py): Squeezeformer (encoder, fc bias-free,
# log_softmax; returns the log-probabilities and the output lengths). SqueezeformerEncoder:
# conv_subsample (DepthwiseConv2dSubsampling: sequential of Conv2d, ReLU, DepthwiseConv2d (conv,
# groups = channels), ReLU; permute, view; the lengths >> 2 - 1 in place), input_proj (Linear,
# Dropout); layers, a ModuleList of SqueezeformerBlocks, those from reduce_layer_index until
# recover_layer_index wrapped in a ResidualConnectionModule; at the reduce index the outputs kept
# as recover_tensor, time_reduction_layer (TimeReductionLayer: a one-channel strided
# DepthwiseConv2d and Swish over (time, feature), so the features shrink too; permute, view; the
# lengths >> 1 - 1), time_reduction_proj back to the width; at the recover index
# recover_resolution (every frame stacked twice by a Python loop over slices), time_recover_layer,
# the kept tensor added in place, the lengths * 2. SqueezeformerBlock: sequential of
# ResidualConnectionModule(MultiHeadedSelfAttentionModule), LayerNorm,
# ResidualConnectionModule(FeedForwardModule) with module_factor, LayerNorm, the conv module, LayerNorm,
# the second feed-forward, LayerNorm (the MF/CF order, post-LN, module(x) * factor + x).
# MultiHeadedSelfAttentionModule: positional_encoding (a sinusoid buffer sliced), repeated over the
# batch, attention (RelativeMultiHeadAttention: query_proj, key_proj, value_proj, pos_proj, the u
# and v biases, content and position scores, _relative_shift by pad and view, / sqrt(d_model),
# softmax, dropout, out_proj), dropout. FeedForwardModule: Linear, Swish, Dropout, Linear, Dropout.
# ConvModule: Transpose, PointwiseConv1d, GLU, DepthwiseConv1d, BatchNorm1d, Swish,
# PointwiseConv1d, Dropout; transposed back. nn.CTCLoss on the time-first log-probabilities.


class Swish(nn.Module):
    def __init__(self) -> None:
        super(Swish, self).__init__()

    def forward(self, inputs):
        return inputs * inputs.sigmoid()


class GLU(nn.Module):
    def __init__(self, dim: int) -> None:
        super(GLU, self).__init__()
        self.dim = dim

    def forward(self, inputs):
        outputs, gate = inputs.chunk(2, dim=self.dim)
        return outputs * gate.sigmoid()


class FeedForwardModule(nn.Module):
    def __init__(self, encoder_dim=512, expansion_factor=4, dropout_p=0.1):
        super(FeedForwardModule, self).__init__()
        self.sequential = nn.Sequential(
            nn.Linear(encoder_dim, encoder_dim * expansion_factor, bias=True),
            Swish(),
            nn.Dropout(p=dropout_p),
            nn.Linear(encoder_dim * expansion_factor, encoder_dim, bias=True),
            nn.Dropout(p=dropout_p),
        )

    def forward(self, inputs):
        return self.sequential(inputs)


class SqueezeformerPositionalEncoding(nn.Module):
    """modules.py's PositionalEncoding (a sinusoid buffer, sliced to the length)."""

    def __init__(self, d_model=512, max_len=10000):
        super(SqueezeformerPositionalEncoding, self).__init__()
        pe = torch.zeros(max_len, d_model, requires_grad=False)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        self.register_buffer("pe", pe)

    def forward(self, length):
        return self.pe[:, :length]


class ResidualConnectionModule(nn.Module):
    """outputs = (module(inputs) x module_factor + inputs x input_factor)"""

    def __init__(self, module, module_factor=1.0):
        super(ResidualConnectionModule, self).__init__()
        self.module = module
        self.module_factor = module_factor

    def forward(self, inputs):
        return (self.module(inputs) * self.module_factor) + inputs


class Transpose(nn.Module):
    """ Wrapper class of torch.transpose() for Sequential module. """

    def __init__(self, shape: tuple) -> None:
        super(Transpose, self).__init__()
        self.shape = shape

    def forward(self, x):
        return x.transpose(*self.shape)


def recover_resolution(inputs):
    outputs = list()

    for idx in range(inputs.size(1) * 2):
        outputs.append(inputs[:, idx // 2, :])
    return torch.stack(outputs, dim=1)


class RelativeMultiHeadAttention(nn.Module):
    def __init__(self, d_model=512, num_heads=16, dropout_p=0.1):
        super(RelativeMultiHeadAttention, self).__init__()
        assert d_model % num_heads == 0, "d_model % num_heads should be zero."
        self.d_model = d_model
        self.d_head = int(d_model / num_heads)
        self.num_heads = num_heads
        self.sqrt_dim = math.sqrt(d_model)

        self.query_proj = nn.Linear(d_model, d_model)
        self.key_proj = nn.Linear(d_model, d_model)
        self.value_proj = nn.Linear(d_model, d_model)
        self.pos_proj = nn.Linear(d_model, d_model, bias=False)

        self.dropout = nn.Dropout(p=dropout_p)
        self.u_bias = nn.Parameter(torch.Tensor(self.num_heads, self.d_head))
        self.v_bias = nn.Parameter(torch.Tensor(self.num_heads, self.d_head))
        torch.nn.init.xavier_uniform_(self.u_bias)
        torch.nn.init.xavier_uniform_(self.v_bias)

        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, pos_embedding, mask=None):
        batch_size = value.size(0)

        query = self.query_proj(query).view(batch_size, -1, self.num_heads, self.d_head)
        key = self.key_proj(key).view(batch_size, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
        value = self.value_proj(value).view(batch_size, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
        pos_embedding = self.pos_proj(pos_embedding).view(batch_size, -1, self.num_heads, self.d_head)

        content_score = torch.matmul((query + self.u_bias).transpose(1, 2), key.transpose(2, 3))
        pos_score = torch.matmul((query + self.v_bias).transpose(1, 2), pos_embedding.permute(0, 2, 3, 1))
        pos_score = self._relative_shift(pos_score)

        score = (content_score + pos_score) / self.sqrt_dim

        if mask is not None:
            mask = mask.unsqueeze(1)
            score.masked_fill_(mask, -1e9)

        attn = F.softmax(score, -1)
        attn = self.dropout(attn)

        context = torch.matmul(attn, value).transpose(1, 2)
        context = context.contiguous().view(batch_size, -1, self.d_model)

        return self.out_proj(context)

    def _relative_shift(self, pos_score):
        batch_size, num_heads, seq_length1, seq_length2 = pos_score.size()
        zeros = pos_score.new_zeros(batch_size, num_heads, seq_length1, 1)
        padded_pos_score = torch.cat([zeros, pos_score], dim=-1)

        padded_pos_score = padded_pos_score.view(batch_size, num_heads, seq_length2 + 1, seq_length1)
        pos_score = padded_pos_score[:, :, 1:].view_as(pos_score)

        return pos_score


class MultiHeadedSelfAttentionModule(nn.Module):
    def __init__(self, d_model, num_heads, dropout_p=0.1):
        super(MultiHeadedSelfAttentionModule, self).__init__()
        self.positional_encoding = SqueezeformerPositionalEncoding(d_model)
        self.attention = RelativeMultiHeadAttention(d_model, num_heads, dropout_p)
        self.dropout = nn.Dropout(p=dropout_p)

    def forward(self, inputs, mask=None):
        batch_size, seq_length, _ = inputs.size()
        pos_embedding = self.positional_encoding(seq_length)
        pos_embedding = pos_embedding.repeat(batch_size, 1, 1)

        outputs = self.attention(inputs, inputs, inputs, pos_embedding=pos_embedding, mask=mask)

        return self.dropout(outputs)


class DepthwiseConv2dSubsampling(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(DepthwiseConv2dSubsampling, self).__init__()
        self.sequential = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=2),
            nn.ReLU(),
            DepthwiseConv2d(out_channels, out_channels, kernel_size=3, stride=2),
            nn.ReLU(),
        )

    def forward(self, inputs, input_lengths):
        outputs = self.sequential(inputs.unsqueeze(1))
        batch_size, channels, subsampled_lengths, subsampled_dim = outputs.size()

        outputs = outputs.permute(0, 2, 1, 3)
        outputs = outputs.contiguous().view(batch_size, subsampled_lengths, channels * subsampled_dim)

        output_lengths = input_lengths >> 2
        output_lengths -= 1

        return outputs, output_lengths


class DepthwiseConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=2, padding=0):
        super(DepthwiseConv2d, self).__init__()
        assert out_channels % in_channels == 0, "out_channels should be constant multiple of in_channels"
        self.conv = nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size,
                              stride=stride, padding=padding, groups=in_channels)

    def forward(self, inputs):
        return self.conv(inputs)


class DepthwiseConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=False):
        super(DepthwiseConv1d, self).__init__()
        assert out_channels % in_channels == 0, "out_channels should be constant multiple of in_channels"
        self.conv = nn.Conv1d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size,
                              groups=in_channels, stride=stride, padding=padding, bias=bias)

    def forward(self, inputs):
        return self.conv(inputs)


class PointwiseConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1, padding=0, bias=True):
        super(PointwiseConv1d, self).__init__()
        self.conv = nn.Conv1d(in_channels=in_channels, out_channels=out_channels, kernel_size=1, stride=stride,
                              padding=padding, bias=bias)

    def forward(self, inputs):
        return self.conv(inputs)


class ConvModule(nn.Module):
    def __init__(self, in_channels, kernel_size=31, expansion_factor=2, dropout_p=0.1):
        super(ConvModule, self).__init__()
        assert (kernel_size - 1) % 2 == 0, "kernel_size should be a odd number for 'SAME' padding"
        assert expansion_factor == 2, "Currently, Only Supports expansion_factor 2"

        self.sequential = nn.Sequential(
            Transpose(shape=(1, 2)),
            PointwiseConv1d(in_channels, in_channels * expansion_factor, stride=1, padding=0, bias=True),
            GLU(dim=1),
            DepthwiseConv1d(in_channels, in_channels, kernel_size, stride=1, padding=(kernel_size - 1) // 2),
            nn.BatchNorm1d(in_channels),
            Swish(),
            PointwiseConv1d(in_channels, in_channels, stride=1, padding=0, bias=True),
            nn.Dropout(p=dropout_p),
        )

    def forward(self, inputs):
        return self.sequential(inputs).transpose(1, 2)


class TimeReductionLayer(nn.Module):
    def __init__(self, in_channels=1, out_channels=1, kernel_size=3, stride=2):
        super(TimeReductionLayer, self).__init__()
        self.sequential = nn.Sequential(
            DepthwiseConv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size,
                            stride=stride),
            Swish(),
        )

    def forward(self, inputs, input_lengths):
        outputs = self.sequential(inputs.unsqueeze(1))
        batch_size, channels, subsampled_lengths, subsampled_dim = outputs.size()

        outputs = outputs.permute(0, 2, 1, 3)
        outputs = outputs.contiguous().view(batch_size, subsampled_lengths, channels * subsampled_dim)

        output_lengths = input_lengths >> 1
        output_lengths -= 1
        return outputs, output_lengths


class SqueezeformerBlock(nn.Module):
    def __init__(self, encoder_dim=512, num_attention_heads=8, feed_forward_expansion_factor=4,
                 conv_expansion_factor=2, feed_forward_dropout_p=0.1, attention_dropout_p=0.1, conv_dropout_p=0.1,
                 conv_kernel_size=31, half_step_residual=False):
        super(SqueezeformerBlock, self).__init__()
        if half_step_residual:
            self.feed_forward_residual_factor = 0.5
        else:
            self.feed_forward_residual_factor = 1.0

        self.sequential = nn.Sequential(
            ResidualConnectionModule(
                module=MultiHeadedSelfAttentionModule(
                    d_model=encoder_dim,
                    num_heads=num_attention_heads,
                    dropout_p=attention_dropout_p,
                ),
            ),
            nn.LayerNorm(encoder_dim),
            ResidualConnectionModule(
                module=FeedForwardModule(
                    encoder_dim=encoder_dim,
                    expansion_factor=feed_forward_expansion_factor,
                    dropout_p=feed_forward_dropout_p,
                ),
                module_factor=self.feed_forward_residual_factor,
            ),
            nn.LayerNorm(encoder_dim),
            ResidualConnectionModule(
                module=ConvModule(
                    in_channels=encoder_dim,
                    kernel_size=conv_kernel_size,
                    expansion_factor=conv_expansion_factor,
                    dropout_p=conv_dropout_p,
                ),
            ),
            nn.LayerNorm(encoder_dim),
            ResidualConnectionModule(
                module=FeedForwardModule(
                    encoder_dim=encoder_dim,
                    expansion_factor=feed_forward_expansion_factor,
                    dropout_p=feed_forward_dropout_p,
                ),
                module_factor=self.feed_forward_residual_factor,
            ),
            nn.LayerNorm(encoder_dim),
        )

    def forward(self, inputs):
        return self.sequential(inputs)


class SqueezeformerEncoder(nn.Module):
    def __init__(self, input_dim=80, encoder_dim=512, num_layers=16, reduce_layer_index=7, recover_layer_index=15,
                 num_attention_heads=8, feed_forward_expansion_factor=4, conv_expansion_factor=2,
                 input_dropout_p=0.1, feed_forward_dropout_p=0.1, attention_dropout_p=0.1, conv_dropout_p=0.1,
                 conv_kernel_size=31, half_step_residual=False):
        super(SqueezeformerEncoder, self).__init__()
        self.num_layers = num_layers
        self.reduce_layer_index = reduce_layer_index
        self.recover_layer_index = recover_layer_index
        self.conv_subsample = DepthwiseConv2dSubsampling(in_channels=1, out_channels=encoder_dim)
        self.input_proj = nn.Sequential(
            nn.Linear(encoder_dim * (((input_dim - 1) // 2 - 1) // 2), encoder_dim),
            nn.Dropout(p=input_dropout_p),
        )
        self.time_reduction_layer = TimeReductionLayer()
        self.time_reduction_proj = nn.Linear((encoder_dim - 1) // 2, encoder_dim)
        self.time_recover_layer = nn.Linear(encoder_dim, encoder_dim)
        self.recover_tensor = None

        def block():
            return SqueezeformerBlock(encoder_dim=encoder_dim, num_attention_heads=num_attention_heads,
                                      feed_forward_expansion_factor=feed_forward_expansion_factor,
                                      conv_expansion_factor=conv_expansion_factor,
                                      feed_forward_dropout_p=feed_forward_dropout_p,
                                      attention_dropout_p=attention_dropout_p, conv_dropout_p=conv_dropout_p,
                                      conv_kernel_size=conv_kernel_size, half_step_residual=half_step_residual)

        self.layers = nn.ModuleList()
        for idx in range(num_layers):
            if idx < reduce_layer_index:
                self.layers.append(block())
            elif reduce_layer_index <= idx < recover_layer_index:
                self.layers.append(ResidualConnectionModule(module=block()))
            else:
                self.layers.append(block())

    def forward(self, inputs, input_lengths):
        outputs, output_lengths = self.conv_subsample(inputs, input_lengths)
        outputs = self.input_proj(outputs)

        for idx, layer in enumerate(self.layers):
            if idx == self.reduce_layer_index:
                self.recover_tensor = outputs
                outputs, output_lengths = self.time_reduction_layer(outputs, output_lengths)
                outputs = self.time_reduction_proj(outputs)

            if idx == self.recover_layer_index:
                outputs = recover_resolution(outputs)
                length = outputs.size(1)
                outputs = self.time_recover_layer(outputs)
                outputs += self.recover_tensor[:, :length, :]
                output_lengths *= 2

            outputs = layer(outputs)

        return outputs, output_lengths


class Squeezeformer(nn.Module):
    def __init__(self, num_classes, input_dim=80, encoder_dim=512, num_encoder_layers=16, reduce_layer_index=7,
                 recover_layer_index=15, num_attention_heads=8, feed_forward_expansion_factor=4,
                 conv_expansion_factor=2, input_dropout_p=0.1, feed_forward_dropout_p=0.1, attention_dropout_p=0.1,
                 conv_dropout_p=0.1, conv_kernel_size=31, half_step_residual=False):
        super(Squeezeformer, self).__init__()
        self.encoder = SqueezeformerEncoder(
            input_dim=input_dim,
            encoder_dim=encoder_dim,
            num_layers=num_encoder_layers,
            reduce_layer_index=reduce_layer_index,
            recover_layer_index=recover_layer_index,
            num_attention_heads=num_attention_heads,
            feed_forward_expansion_factor=feed_forward_expansion_factor,
            conv_expansion_factor=conv_expansion_factor,
            input_dropout_p=input_dropout_p,
            feed_forward_dropout_p=feed_forward_dropout_p,
            attention_dropout_p=attention_dropout_p,
            conv_dropout_p=conv_dropout_p,
            conv_kernel_size=conv_kernel_size,
            half_step_residual=half_step_residual,
        )
        self.fc = nn.Linear(encoder_dim, num_classes, bias=False)

    def forward(self, inputs, input_lengths):
        encoder_outputs, encoder_output_lengths = self.encoder(inputs, input_lengths)
        outputs = self.fc(encoder_outputs)
        outputs = F.log_softmax(outputs, dim=-1)
        return outputs, encoder_output_lengths


def squeezeformer_ctc(out, target):
    """The test's criterion: nn.CTCLoss()(outputs.transpose(0, 1), targets, output_lengths, target_lengths)."""
    outputs, output_lengths = out
    targets, target_lengths = target
    return nn.CTCLoss()(outputs.transpose(0, 1), targets, output_lengths, target_lengths)


def b_squeezeformer():
    batch, frames, feats, vocab = 4, 96, 40, 20
    input_lengths = torch.IntTensor([96, 88, 80, 72])
    inputs = randn(batch, frames, feats)
    target_lengths = torch.LongTensor([5, 4, 4, 3])
    targets = randint(vocab - 1, batch, 5, seed=3) + 1  # 0 is the blank
    model = Squeezeformer(num_classes=vocab, input_dim=feats, encoder_dim=32, num_encoder_layers=4,
                          reduce_layer_index=1, recover_layer_index=3, num_attention_heads=4, conv_kernel_size=7)
    return dict(model=model, inputs=(inputs, input_lengths), target=(targets, target_lengths),
                loss=squeezeformer_ctc)


REGISTRY = [
    ("griffin_lite", "llm", "adamw", b_griffin),
    ("soft_moe_vit", "moe", "adamw", b_soft_moe_vit),
    ("darts_cell_net", "nas", "sgd", b_darts),
    ("pointnet2_ssg", "point", "adam", b_pointnet2),
    ("focalnet_lite", "vit", "adamw", b_focalnet),
    ("dcn_mix_ctr", "recsys", "adam", b_dcn_mix),
    ("han_hetero", "gnn", "adam", b_han),
    ("squeezeformer_lite", "speech", "adam", b_squeezeformer),
]

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS10 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants10.py",
    os.path.join(DATA, "corpus-cpu-variants10"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-backward", "corpus-cpu-modern", "corpus-cpu-families",
                                      "corpus-cpu-heldout", "corpus-cpu-variants", "corpus-cpu-variants2",
                                      "corpus-cpu-variants3", "corpus-cpu-variants4", "corpus-cpu-variants5",
                                      "corpus-cpu-variants6", "corpus-cpu-variants7", "corpus-cpu-variants8",
                                      "corpus-cpu-variants9", "corpus-cpu-objectives", "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS10)
