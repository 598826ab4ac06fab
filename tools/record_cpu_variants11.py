#!/usr/bin/env python3
"""Record Strata's eleventh variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on the other variants corpora; this script records
tests/data/corpus-cpu-variants11, recorded after the rules, to measure them once on models they
were not written on, then to be tuned on as the other variants are: Hugging Face transformers'
ViViT (VivitEmbeddings: the Conv3d tubelet projection, called twice as that release does, the
class token tiled, position embeddings, dropout; VivitLayers of HF's ViT layer code: separate
query, key and value Linears, transpose_for_scores by view and permute, the scaled softmax and
dropout, VivitSelfOutput, layernorm_before and layernorm_after, the first residual sum in the
layer and the second in VivitOutput; the final layernorm, the classifier on the class token),
transformers' CodeGen (CodeGenBlocks of one ln_1 feeding the attention and the MLP in parallel,
hidden = attn + mlp + residual; CodeGenAttention's fused qkv_proj reshaped into mp_num groups
and split into query, value and key, rotary embedding from create_sinusoidal_positions on the
first rotary_dim channels of each head by rotate_every_two, the causal mask buffer by
torch.where, softmax, attn_dropout, out_proj, resid_dropout; CodeGenMLP's fc_in, the tanh GELU
by hand, fc_out, dropout; wte, drop, ln_f, lm_head), aladdinpersson's ProGAN generator
(WSConv2d: conv(x * scale) + its own bias viewed; PixelNorm; the initial Sequential from 1x1
to 4x4; ConvBlocks of two WSConv2d, LeakyReLU and PixelNorm after nearest upsampling by
F.interpolate; toRGB WSConv2ds and the tanh fade-in with alpha), ZJUGiveLab's UNet 3+ (unetConv2
encoder blocks of Conv-BN-ReLU twice; per decoder stage every scale brought to it by a max
pool or an Upsample, each then its own conv, bn and relu attributes such as h1_PT_hd3_conv,
concatenated and fused by a Conv-BN-ReLU; sigmoid), DeepCTR's DSIN written as DeepCTR-Torch
writes its models (the sessions' embeddings, BiasEncoding, one Transformer layer shared by the
sessions with its attention by hand, the blinding diagonal, its mean; a BiLSTM of forward and
backward nn.LSTMs; AttentionSequencePoolingLayers with DeepCTR-Torch's LocalActivationUnit on the
sessions and on the BiLSTM's outputs; the DNN), schnetpack's PaiNN (Gaussian radial basis,
cosine cutoff, filter_net split per interaction; PaiNNInteraction's interatomic context net of
Dense layers, the filters, the three-way split and scatter_add by index_add; PaiNNMixing's
mu_channel_mix, vector norms and intra-atomic context net; in a NeuralNetworkPotential of
PairwiseDistances and an Atomwise energy with sum pooling), Apple's FastViT at train time
(MobileOneBlocks of conv-BN branches, a scale branch and an identity BN summed; RepMixer blocks,
x + layer_scale * (mixer(x) - norm(x)); ConvFFN; PatchEmbed of a ReparamLargeKernelConv and a
MobileOneBlock; RepCPE before the attention stage of MHSA on flattened tokens with a BatchNorm2d
norm; conv_exp with squeeze-excite) and cheerss's CrossFormer (PatchEmbed and PatchMerging as
cross-scale embeddings of several convs concatenated; CrossFormerBlocks alternating short- and
long-distance grouping by reshape and permute; Attention with its DynamicPosBias MLP of pos_proj
and pos1 to pos3; Mlp; DropPath) and transformers' Marian (MarianAttention: q_proj scaled, k_proj
and v_proj, bmm, softmax, dropout, bmm, out_proj; post-norm encoder and decoder layers with the
decoder's cross attention, fc1, swish, activation_dropout, fc2; the fixed sinusoidal position
embedding; the embedding shared by the encoder, the decoder and the tied lm_head).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants11.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants11.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants11.
"""

import dataclasses
import math
import os
import sys
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, mse, randint, randn  # noqa: E402
from record_cpu_fresh import (AttentionSequencePoolingLayer, DeepCTRBase, NewGELUActivation,  # noqa: E402
                              ViTOutput, ViTSelfAttention, ViTSelfOutput, WhisperAttention, apply_rotary_pos_emb_gptj,
                              bce_prob, combined_dnn_input, create_sinusoidal_positions, ctr_input)
from record_cpu_variants2 import DropPath  # noqa: E402  (timm's DropPath)
from record_cpu_variants8 import deepctr_dnn  # noqa: E402  (DeepCTR-Torch's DNN, its weights as init_std sets them)
from record_cpu_variants10 import Mlp, to_2tuple  # noqa: E402  (the Swin-style Mlp: fc1, act, drop, fc2, drop)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# ViViT as Hugging Face transformers writes it (models/vivit/modeling_vivit.py as first released;
# VivitConfig's defaults but the sizes: hidden_act gelu_fast, dropouts 0.0, layer_norm_eps 1e-6,
# qkv_bias): VivitForVideoClassification (vivit, a VivitModel without pooler; classifier on the
# class token). VivitModel: embeddings (VivitEmbeddings: patch_embeddings, VivitTubeletEmbeddings:
# the video permuted to channels first, its projection Conv3d called twice as that release does,
# the second flattened and transposed; cls_token tiled, cat, + position_embeddings, dropout),
# encoder (VivitEncoder: layer, a ModuleList of VivitLayers), layernorm. VivitLayer:
# layernorm_before, attention (VivitAttention: attention, VivitSelfAttention, HF's
# ViTSelfAttention: query, key and value Linears, transpose_for_scores by view and permute,
# matmul, / sqrt(head size), softmax, dropout, matmul, permute, contiguous, view; output,
# VivitSelfOutput: dense, dropout), the first residual sum, layernorm_after, intermediate
# (VivitIntermediate: dense, intermediate_act_fn, FastGELUActivation by hand, dropout), output
# (VivitOutput: dense, dropout, + the residual). The three ViT classes are
# tools/record_cpu_fresh.py's, under ViViT's names as HF copies them. _init_weights: Linear and
# Conv3d normal(0.02), LayerNorm ones and zeros, the class token and positions zeros. Cross
# entropy.


class FastGELUActivation(nn.Module):
    """transformers.activations.FastGELUActivation (ACT2FN["gelu_fast"], ViViT's default hidden_act)."""

    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(input * 0.7978845608 * (1.0 + 0.044715 * input * input)))


@dataclasses.dataclass
class VivitConfig:
    image_size: int = 224
    num_frames: int = 32
    tubelet_size: tuple = (2, 16, 16)
    num_channels: int = 3
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-06
    qkv_bias: bool = True
    num_labels: int = 400


class VivitTubeletEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_frames = config.num_frames
        self.image_size = config.image_size
        self.patch_size = config.tubelet_size
        self.num_patches = (
            (self.image_size // self.patch_size[2])
            * (self.image_size // self.patch_size[1])
            * (self.num_frames // self.patch_size[0])
        )
        self.embed_dim = config.hidden_size

        self.projection = nn.Conv3d(
            config.num_channels, config.hidden_size, kernel_size=config.tubelet_size, stride=config.tubelet_size
        )

    def forward(self, pixel_values):
        batch_size, num_frames, num_channels, height, width = pixel_values.shape
        if height != self.image_size or width != self.image_size:
            raise ValueError(
                f"Input image size ({height}*{width}) doesn't match model ({self.image_size}*{self.image_size})."
            )

        # permute to (batch_size, num_channels, num_frames, height, width)
        pixel_values = pixel_values.permute(0, 2, 1, 3, 4)

        x = self.projection(pixel_values)
        # out_batch_size, out_num_channels, out_num_frames, out_height, out_width = x.shape
        x = self.projection(pixel_values).flatten(2).transpose(1, 2)
        return x


class VivitEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()

        self.cls_token = nn.Parameter(torch.zeros(1, 1, config.hidden_size))
        self.patch_embeddings = VivitTubeletEmbeddings(config)

        self.position_embeddings = nn.Parameter(
            torch.zeros(1, self.patch_embeddings.num_patches + 1, config.hidden_size)
        )
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.config = config

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]
        embeddings = self.patch_embeddings(pixel_values)

        cls_tokens = self.cls_token.tile([batch_size, 1, 1])

        embeddings = torch.cat((cls_tokens, embeddings), dim=1)

        # add positional encoding to each token
        embeddings = embeddings + self.position_embeddings

        embeddings = self.dropout(embeddings)

        return embeddings


class VivitSelfAttention(ViTSelfAttention):
    """Copied from transformers.models.vit.modeling_vit.ViTSelfAttention with ViT->Vivit."""

    def __init__(self, config):
        super().__init__(config.hidden_size, config.num_attention_heads, qkv_bias=config.qkv_bias)


class VivitSelfOutput(ViTSelfOutput):
    """Copied from transformers.models.vit.modeling_vit.ViTSelfOutput with ViT->Vivit (the residual
    connection is in VivitLayer)."""

    def __init__(self, config):
        super().__init__(config.hidden_size)


class VivitAttention(nn.Module):
    """Copied from transformers.models.vit.modeling_vit.ViTAttention with ViT->Vivit."""

    def __init__(self, config):
        super().__init__()
        self.attention = VivitSelfAttention(config)
        self.output = VivitSelfOutput(config)
        self.pruned_heads = set()

    def forward(self, hidden_states, head_mask=None, output_attentions=False):
        self_outputs = (self.attention(hidden_states),)

        attention_output = self.output(self_outputs[0], hidden_states)

        outputs = (attention_output,) + self_outputs[1:]  # add attentions if we output them
        return outputs


class VivitIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.intermediate_act_fn = FastGELUActivation()  # ACT2FN[config.hidden_act], "gelu_fast"

    def forward(self, hidden_states):

        hidden_states = self.dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)
        hidden_states = self.dropout(hidden_states)

        return hidden_states


class VivitOutput(ViTOutput):
    """dense, dropout, + input_tensor (the second residual connection)."""

    def __init__(self, config):
        super().__init__(config.intermediate_size, config.hidden_size)


class VivitLayer(nn.Module):
    """This corresponds to the EncoderBlock class in the scenic/vivit implementation."""

    def __init__(self, config):
        super().__init__()
        self.seq_len_dim = 1
        self.attention = VivitAttention(config)
        self.intermediate = VivitIntermediate(config)
        self.output = VivitOutput(config)
        self.layernorm_before = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.layernorm_after = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states, head_mask=None, output_attentions=False):
        self_attention_outputs = self.attention(
            self.layernorm_before(hidden_states),  # in Vivit, layernorm is applied before self-attention
            head_mask,
            output_attentions=output_attentions,
        )
        attention_output = self_attention_outputs[0]
        outputs = self_attention_outputs[1:]  # add self attentions if we output attention weights

        # first residual connection
        hidden_states = attention_output + hidden_states

        # in Vivit, layernorm is also applied after self-attention
        layer_output = self.layernorm_after(hidden_states)
        layer_output = self.intermediate(layer_output)

        # second residual connection is done here
        layer_output = self.output(layer_output, hidden_states)

        outputs = (layer_output,) + outputs

        return outputs


class VivitEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList([VivitLayer(config) for _ in range(config.num_hidden_layers)])
        self.gradient_checkpointing = False

    def forward(self, hidden_states, head_mask=None, output_attentions=False):
        for i, layer_module in enumerate(self.layer):
            layer_head_mask = head_mask[i] if head_mask is not None else None
            layer_outputs = layer_module(hidden_states, layer_head_mask, output_attentions)
            hidden_states = layer_outputs[0]
        return (hidden_states,)


class VivitModel(nn.Module):
    def __init__(self, config, add_pooling_layer=True):
        super().__init__()
        assert not add_pooling_layer, "VivitForVideoClassification builds it without the pooler"
        self.config = config

        self.embeddings = VivitEmbeddings(config)
        self.encoder = VivitEncoder(config)

        self.layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.pooler = None

    def forward(self, pixel_values=None, head_mask=None):
        embedding_output = self.embeddings(pixel_values)

        encoder_outputs = self.encoder(embedding_output, head_mask=head_mask)
        sequence_output = encoder_outputs[0]
        sequence_output = self.layernorm(sequence_output)
        pooled_output = self.pooler(sequence_output) if self.pooler is not None else None

        return (sequence_output, pooled_output) + encoder_outputs[1:]


class VivitForVideoClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.vivit = VivitModel(config, add_pooling_layer=False)

        # Classifier Head
        self.classifier = nn.Linear(config.hidden_size, config.num_labels) if config.num_labels > 0 else nn.Identity()

        self.apply(self._init_weights)  # post_init

    def _init_weights(self, module):
        """Initialize the weights"""
        if isinstance(module, (nn.Linear, nn.Conv3d)):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, pixel_values=None, head_mask=None):
        outputs = self.vivit(pixel_values, head_mask=head_mask)

        sequence_output = outputs[0]

        logits = self.classifier(sequence_output[:, 0, :])
        return logits


def b_vivit():
    config = VivitConfig(image_size=32, num_frames=8, tubelet_size=(2, 8, 8), hidden_size=64, num_hidden_layers=3,
                         num_attention_heads=4, intermediate_size=128, num_labels=10)
    video = randn(2, 8, 3, 32, 32)  # (batch_size, num_frames, num_channels, height, width)
    return dict(model=VivitForVideoClassification(config), inputs=(video,), target=randint(10, 2), loss=ce)


# ---------------------------------------------------------------------------------------
# CodeGen as Hugging Face transformers writes it (models/codegen/modeling_codegen.py of the
# releases with position_ids and create_sinusoidal_positions and the causal_mask buffer; the
# CodeGenConfig defaults but the sizes: gelu_new, dropouts 0.0; use_cache off, as in training):
# CodeGenForCausalLM (transformer, lm_head; the logits cast to float32). CodeGenModel: the
# attention mask viewed to (batch, 1, 1, seq), (1 - mask) * the dtype's minimum; wte, drop, h (a
# ModuleList of CodeGenBlocks), ln_f. CodeGenBlock: residual, ln_1, attn and mlp on the same
# normed states, attn_output + feed_forward_hidden_states + residual. CodeGenAttention: qkv_proj
# (fused, bias-free), reshaped to (..., mp_num 4, -1), split into query, value and key,
# _split_heads (two reshapes), the value permuted; the sin and cos gathered from embed_positions
# (create_sinusoidal_positions, a plain tensor) by position ids, split; the first rotary_dim
# channels of key and query rotated by apply_rotary_pos_emb (repeat_interleave, rotate_every_two),
# cat with the rest, permuted; _attn: the causal_mask buffer sliced, both cast to float32,
# matmul, / scale_attn, torch.where with the minimum, + the attention mask, nn.Softmax made in
# the call, attn_dropout, matmul; _merge_heads, out_proj, resid_dropout. CodeGenMLP: fc_in, act
# (NewGELUActivation, tools/record_cpu_fresh.py's: the tanh formula by hand), fc_out, dropout.
# Weights as _init_weights sets them. The loss as CodeGenForCausalLM computes it from labels:
# the logits shifted left, the labels right, cross entropy.


@dataclasses.dataclass
class CodeGenConfig:
    vocab_size: int = 50400
    n_positions: int = 2048
    n_ctx: int = 2048
    n_embd: int = 4096
    n_layer: int = 28
    n_head: int = 16
    rotary_dim: int = 64
    n_inner: int = None
    resid_pdrop: float = 0.0
    embd_pdrop: float = 0.0
    attn_pdrop: float = 0.0
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02

    @property
    def max_position_embeddings(self):
        return self.n_positions

    @property
    def hidden_size(self):
        return self.n_embd

    @property
    def num_attention_heads(self):
        return self.n_head


class CodeGenAttention(nn.Module):
    def __init__(self, config):
        super().__init__()

        max_positions = config.max_position_embeddings
        self.register_buffer(
            "causal_mask",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions
            ),
            persistent=False,
        )

        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

        self.embed_dim = config.hidden_size
        self.num_attention_heads = config.num_attention_heads
        self.head_dim = self.embed_dim // self.num_attention_heads
        if self.head_dim * self.num_attention_heads != self.embed_dim:
            raise ValueError(
                f"embed_dim must be divisible by num_attention_heads (got `embed_dim`: {self.embed_dim} and"
                f" `num_attention_heads`: {self.num_attention_heads})."
            )
        self.scale_attn = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32)).to(torch.get_default_dtype())
        self.qkv_proj = nn.Linear(self.embed_dim, self.embed_dim * 3, bias=False)

        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.rotary_dim = config.rotary_dim
        pos_embd_dim = self.rotary_dim or self.embed_dim
        self.embed_positions = create_sinusoidal_positions(max_positions, pos_embd_dim)

    def _split_heads(self, x, n_head, dim_head, mp_num):
        reshaped = x.reshape(x.shape[:-1] + (n_head // mp_num, dim_head))
        reshaped = reshaped.reshape(x.shape[:-2] + (-1,) + reshaped.shape[-1:])
        return reshaped

    def _merge_heads(self, tensor, num_attention_heads, attn_head_size):
        """
        Merges attn_head_size dim and num_attn_heads dim into n_ctx
        """
        if len(tensor.shape) == 5:
            tensor = tensor.permute(0, 1, 3, 2, 4).contiguous()
        elif len(tensor.shape) == 4:
            tensor = tensor.permute(0, 2, 1, 3).contiguous()
        else:
            raise ValueError(f"Input tensor rank should be one of [4, 5], but is: {len(tensor.shape)}")
        new_shape = tensor.size()[:-2] + (num_attention_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value, attention_mask=None, head_mask=None):
        # compute causal mask from causal mask buffer
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.causal_mask[:, :, key_length - query_length: key_length, :key_length]

        # Keep the attention weights computation in fp32 to avoid overflow issues
        query = query.to(torch.float32)
        key = key.to(torch.float32)

        attn_weights = torch.matmul(query, key.transpose(-1, -2))

        attn_weights = attn_weights / self.scale_attn
        mask_value = torch.finfo(attn_weights.dtype).min
        # Need to be a tensor, otherwise we get error: `RuntimeError: expected scalar type float but found double`.
        # Need to be on the same device, otherwise `RuntimeError: ..., x and y to be on the same device`
        mask_value = torch.tensor(mask_value, dtype=attn_weights.dtype).to(attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)

        if attention_mask is not None:
            # Apply the attention mask
            attn_weights = attn_weights + attention_mask

        attn_weights = nn.Softmax(dim=-1)(attn_weights)
        attn_weights = attn_weights.to(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)

        # Mask heads if we want to
        if head_mask is not None:
            attn_weights = attn_weights * head_mask

        attn_output = torch.matmul(attn_weights, value)

        return attn_output, attn_weights

    def forward(self, hidden_states, layer_past=None, attention_mask=None, position_ids=None, head_mask=None,
                use_cache=False, output_attentions=False):
        qkv = self.qkv_proj(hidden_states)
        # TODO(enijkamp): factor out number of logical TPU-v4 cores or make forward pass agnostic
        mp_num = 4
        qkv_split = qkv.reshape(qkv.shape[:-1] + (mp_num, -1))

        local_dim = self.head_dim * self.num_attention_heads // mp_num
        query, value, key = torch.split(qkv_split, local_dim, dim=-1)
        query = self._split_heads(query, self.num_attention_heads, self.head_dim, mp_num=mp_num)
        key = self._split_heads(key, self.num_attention_heads, self.head_dim, mp_num=mp_num)

        value = self._split_heads(value, self.num_attention_heads, self.head_dim, mp_num=mp_num)
        value = value.permute(0, 2, 1, 3)

        embed_positions = self.embed_positions
        if embed_positions.device != position_ids.device:
            embed_positions = embed_positions.to(position_ids.device)
            self.embed_positions = embed_positions

        sincos = embed_positions[position_ids]
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)

        if self.rotary_dim is not None:
            k_rot = key[:, :, :, : self.rotary_dim]
            k_pass = key[:, :, :, self.rotary_dim:]

            q_rot = query[:, :, :, : self.rotary_dim]
            q_pass = query[:, :, :, self.rotary_dim:]

            k_rot = apply_rotary_pos_emb_gptj(k_rot, sin, cos)
            q_rot = apply_rotary_pos_emb_gptj(q_rot, sin, cos)

            key = torch.cat([k_rot, k_pass], dim=-1)
            query = torch.cat([q_rot, q_pass], dim=-1)
        else:
            key = apply_rotary_pos_emb_gptj(key, sin, cos)
            query = apply_rotary_pos_emb_gptj(query, sin, cos)

        key = key.permute(0, 2, 1, 3)
        query = query.permute(0, 2, 1, 3)

        assert layer_past is None and not use_cache, "decoding with a cache: not used here"
        present = None

        # compute self-attention: V x Softmax(QK^T)
        attn_output, attn_weights = self._attn(query, key, value, attention_mask, head_mask)

        attn_output = self._merge_heads(attn_output, self.num_attention_heads, self.head_dim)
        attn_output = self.out_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)

        outputs = (attn_output, present)
        if output_attentions:
            outputs += (attn_weights,)

        return outputs  # a, present, (attentions)


class CodeGenMLP(nn.Module):
    def __init__(self, intermediate_size, config):  # in MLP: intermediate_size= 4 * embed_dim
        super().__init__()
        embed_dim = config.n_embd

        self.fc_in = nn.Linear(embed_dim, intermediate_size)
        self.fc_out = nn.Linear(intermediate_size, embed_dim)

        self.act = NewGELUActivation()  # ACT2FN[config.activation_function], "gelu_new"
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.fc_in(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.fc_out(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class CodeGenBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        inner_dim = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = CodeGenAttention(config)
        self.mlp = CodeGenMLP(inner_dim, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, position_ids=None, head_mask=None,
                use_cache=False, output_attentions=False):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_outputs = self.attn(
            hidden_states=hidden_states,
            layer_past=layer_past,
            attention_mask=attention_mask,
            position_ids=position_ids,
            head_mask=head_mask,
            use_cache=use_cache,
            output_attentions=output_attentions,
        )
        attn_output = attn_outputs[0]  # output_attn: a, present, (attentions)
        outputs = attn_outputs[1:]

        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = attn_output + feed_forward_hidden_states + residual

        if use_cache:
            outputs = (hidden_states,) + outputs
        else:
            outputs = (hidden_states,) + outputs[1:]

        return outputs  # hidden_states, present, (attentions)


class CodeGenModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_dim = config.n_embd
        self.vocab_size = config.vocab_size
        self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([CodeGenBlock(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)
        self.rotary_dim = min(config.rotary_dim, config.n_ctx // config.num_attention_heads)
        self.gradient_checkpointing = False

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, use_cache=False):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        device = input_ids.device

        past_length = 0
        past_key_values = tuple([None] * len(self.h))
        if position_ids is None:
            position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long, device=device)
            position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])

        # Attention mask.
        if attention_mask is not None:
            if batch_size <= 0:
                raise ValueError("batch_size has to be defined and > 0")
            attention_mask = attention_mask.view(batch_size, -1)
            attention_mask = attention_mask[:, None, None, :]
            attention_mask = attention_mask.to(dtype=torch.float32)  # fp16 compatibility
            attention_mask = (1.0 - attention_mask) * torch.finfo(torch.float32).min

        head_mask = [None] * self.config.n_layer  # get_head_mask(None, n_layer)

        inputs_embeds = self.wte(input_ids)
        hidden_states = inputs_embeds
        hidden_states = self.drop(hidden_states)

        output_shape = input_shape + (hidden_states.size(-1),)

        for i, (block, layer_past) in enumerate(zip(self.h, past_key_values)):
            outputs = block(
                hidden_states=hidden_states,
                layer_past=layer_past,
                attention_mask=attention_mask,
                position_ids=position_ids,
                head_mask=head_mask[i],
                use_cache=use_cache,
            )
            hidden_states = outputs[0]

        hidden_states = self.ln_f(hidden_states)

        hidden_states = hidden_states.view(output_shape)
        return (hidden_states,)


class CodeGenForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = CodeGenModel(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)
        self.apply(self._init_weights)  # post_init

    def _init_weights(self, module):
        """Initialize the weights."""
        if isinstance(module, (nn.Linear,)):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, input_ids=None, attention_mask=None):
        transformer_outputs = self.transformer(input_ids, attention_mask=attention_mask)
        hidden_states = transformer_outputs[0]

        # make sure sampling in fp16 works correctly and
        # compute loss in fp32 to match with mesh-tf version
        # https://github.com/EleutherAI/gpt-neo/blob/89ce74164da2fb16179106f54e2269b5da8db333/models/gpt2/gpt2.py#L179
        lm_logits = self.lm_head(hidden_states).to(torch.float32)
        return lm_logits


def causal_lm_shifted_ce(lm_logits, labels):
    """CodeGenForCausalLM's loss with labels = input_ids: shift so that tokens < n predict n."""
    shift_logits = lm_logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    loss_fct = nn.CrossEntropyLoss()
    return loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))


def b_codegen():
    vocab, batch, seq = 256, 4, 16
    config = CodeGenConfig(vocab_size=vocab, n_positions=64, n_ctx=64, n_embd=64, n_layer=3, n_head=4, rotary_dim=8)
    ids = randint(vocab, batch, seq, seed=3)
    attention_mask = torch.ones(batch, seq, dtype=torch.long)
    return dict(model=CodeGenForCausalLM(config), inputs=(ids, attention_mask), target=ids,
                loss=causal_lm_shifted_ce)


# ---------------------------------------------------------------------------------------
# The ProGAN generator as aladdinpersson's Machine-Learning-Collection writes it
# (ML/Pytorch/GANs/ProGAN/model.py; the module-level factors; z_dim and in_channels 32; step 3
# of the progressive growing, 32x32 images, alpha 0.5): Generator (initial, a Sequential of
# PixelNorm, ConvTranspose2d from 1x1 to 4x4, LeakyReLU, WSConv2d, LeakyReLU, PixelNorm;
# initial_rgb, also rgb_layers[0]; prog_blocks, a ModuleList of a ConvBlock per factor step;
# rgb_layers, WSConv2d 1x1 toRGBs). forward: initial; per step F.interpolate (nearest, scale 2)
# and prog_blocks[step]; rgb_layers[steps - 1] on the last upscaled map and rgb_layers[steps] on
# the output; fade_in, tanh(alpha * generated + (1 - alpha) * upscaled). ConvBlock: conv1, leaky,
# pn, conv2, leaky, pn (WSConv2d: conv(x * scale) with the conv's bias moved to the module and
# added viewed (1, C, 1, 1); PixelNorm: x / sqrt(mean(x ** 2, dim=1, keepdim) + eps)). The blocks
# past the current step are built and not called. A generator step only: the mean squared error
# to a target image stands in for the critic's -E[critic(fake)].


factors = [1, 1, 1, 1, 1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32]


class WSConv2d(nn.Module):
    """
    Weight scaled Conv2d (Equalized Learning Rate)
    Note that input is multiplied rather than changing weights
    this will have the same result.
    """

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=1, gain=2):
        super(WSConv2d, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding)
        self.scale = (gain / (in_channels * (kernel_size ** 2))) ** 0.5
        self.bias = self.conv.bias
        self.conv.bias = None

        # initialize conv layer
        nn.init.normal_(self.conv.weight)
        nn.init.zeros_(self.bias)

    def forward(self, x):
        return self.conv(x * self.scale) + self.bias.view(1, self.bias.shape[0], 1, 1)


class PixelNorm(nn.Module):
    def __init__(self):
        super(PixelNorm, self).__init__()
        self.epsilon = 1e-8

    def forward(self, x):
        return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.epsilon)


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, use_pixelnorm=True):
        super(ConvBlock, self).__init__()
        self.use_pn = use_pixelnorm
        self.conv1 = WSConv2d(in_channels, out_channels)
        self.conv2 = WSConv2d(out_channels, out_channels)
        self.leaky = nn.LeakyReLU(0.2)
        self.pn = PixelNorm()

    def forward(self, x):
        x = self.leaky(self.conv1(x))
        x = self.pn(x) if self.use_pn else x
        x = self.leaky(self.conv2(x))
        x = self.pn(x) if self.use_pn else x
        return x


class Generator(nn.Module):
    def __init__(self, z_dim, in_channels, img_channels=3):
        super(Generator, self).__init__()

        # initial takes 1x1 -> 4x4
        self.initial = nn.Sequential(
            PixelNorm(),
            nn.ConvTranspose2d(z_dim, in_channels, 4, 1, 0),
            nn.LeakyReLU(0.2),
            WSConv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1),
            nn.LeakyReLU(0.2),
            PixelNorm(),
        )

        self.initial_rgb = WSConv2d(in_channels, img_channels, kernel_size=1, stride=1, padding=0)
        self.prog_blocks, self.rgb_layers = (
            nn.ModuleList([]),
            nn.ModuleList([self.initial_rgb]),
        )

        for i in range(len(factors) - 1):  # -1 to prevent index error because of factors[i+1]
            conv_in_c = int(in_channels * factors[i])
            conv_out_c = int(in_channels * factors[i + 1])
            self.prog_blocks.append(ConvBlock(conv_in_c, conv_out_c))
            self.rgb_layers.append(WSConv2d(conv_out_c, img_channels, kernel_size=1, stride=1, padding=0))

    def fade_in(self, alpha, upscaled, generated):
        # alpha should be scalar within [0, 1], and upscale.shape == generated.shape
        return torch.tanh(alpha * generated + (1 - alpha) * upscaled)

    def forward(self, x, alpha, steps):
        out = self.initial(x)

        if steps == 0:
            return self.initial_rgb(out)

        for step in range(steps):
            upscaled = F.interpolate(out, scale_factor=2, mode="nearest")
            out = self.prog_blocks[step](upscaled)

        # The number of channels in upscale will stay the same, while
        # out which has moved through prog_blocks might change. To ensure
        # we can convert both to rgb we use different rgb_layers
        # (steps-1) and steps for upscaled, out respectively
        final_upscaled = self.rgb_layers[steps - 1](upscaled)
        final_out = self.rgb_layers[steps](out)
        return self.fade_in(alpha, final_upscaled, final_out)


def b_progan():
    z_dim, batch, steps = 32, 4, 3
    noise = randn(batch, z_dim, 1, 1)
    real = torch.tanh(randn(batch, 3, 4 * 2 ** steps, 4 * 2 ** steps, seed=3))
    return dict(model=Generator(z_dim, 32, img_channels=3), inputs=(noise, 0.5, steps), target=real, loss=mse)


# ---------------------------------------------------------------------------------------
# UNet 3+ as ZJUGiveLab's UNet-Version writes it (models/UNet_3Plus.py, layers.py,
# init_weights.py), with four scales instead of five and small filters: UNet_3Plus (encoder:
# conv1 to conv4, unetConv2s (conv1 and conv2 attributes, each a Sequential of Conv2d,
# BatchNorm2d, ReLU(inplace)), maxpool1 to maxpool3 between them; per decoder stage (3d, 2d, 1d)
# every encoder map above it by a ceil-mode MaxPool2d (h1_PT_hd3 ...), the map of its own scale
# as it is (h3_Cat_hd3 ...) and every decoder map below it by an nn.Upsample, bilinear
# (hd4_UT_hd3 ...), each then its own _conv, _bn and _relu attributes, the results concatenated
# and fused by conv3d_1, bn3d_1, relu3d_1 (and so on); outconv1, F.sigmoid). Weights as
# init_weights' kaiming init sets them. Binary cross entropy on the sigmoid map.


def weights_init_kaiming(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.kaiming_normal_(m.weight.data, a=0, mode="fan_in")
    elif classname.find("Linear") != -1:
        nn.init.kaiming_normal_(m.weight.data, a=0, mode="fan_in")
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0.0)


def init_weights(net, init_type="normal"):
    assert init_type == "kaiming"
    net.apply(weights_init_kaiming)


class unetConv2(nn.Module):  # noqa: N801  (the reference's name)
    def __init__(self, in_size, out_size, is_batchnorm, n=2, ks=3, stride=1, padding=1):
        super(unetConv2, self).__init__()
        self.n = n
        self.ks = ks
        self.stride = stride
        self.padding = padding
        s = stride
        p = padding
        if is_batchnorm:
            for i in range(1, n + 1):
                conv = nn.Sequential(nn.Conv2d(in_size, out_size, ks, s, p),
                                     nn.BatchNorm2d(out_size),
                                     nn.ReLU(inplace=True), )
                setattr(self, "conv%d" % i, conv)
                in_size = out_size

        else:
            for i in range(1, n + 1):
                conv = nn.Sequential(nn.Conv2d(in_size, out_size, ks, s, p),
                                     nn.ReLU(inplace=True), )
                setattr(self, "conv%d" % i, conv)
                in_size = out_size

        # initialise the blocks
        for m in self.children():
            init_weights(m, init_type="kaiming")

    def forward(self, inputs):
        x = inputs
        for i in range(1, self.n + 1):
            conv = getattr(self, "conv%d" % i)
            x = conv(x)

        return x


class UNet_3Plus(nn.Module):  # noqa: N801  (the reference's name)

    def __init__(self, in_channels=3, n_classes=1, feature_scale=4, is_deconv=True, is_batchnorm=True,
                 filters=(64, 128, 256, 512)):
        super(UNet_3Plus, self).__init__()
        self.is_deconv = is_deconv
        self.in_channels = in_channels
        self.is_batchnorm = is_batchnorm
        self.feature_scale = feature_scale

        filters = list(filters)

        # -------------Encoder--------------
        self.conv1 = unetConv2(self.in_channels, filters[0], self.is_batchnorm)
        self.maxpool1 = nn.MaxPool2d(kernel_size=2)

        self.conv2 = unetConv2(filters[0], filters[1], self.is_batchnorm)
        self.maxpool2 = nn.MaxPool2d(kernel_size=2)

        self.conv3 = unetConv2(filters[1], filters[2], self.is_batchnorm)
        self.maxpool3 = nn.MaxPool2d(kernel_size=2)

        self.conv4 = unetConv2(filters[2], filters[3], self.is_batchnorm)

        # -------------Decoder--------------
        self.CatChannels = filters[0]
        self.CatBlocks = 4
        self.UpChannels = self.CatChannels * self.CatBlocks

        '''stage 3d'''
        # h1->320*320, hd3->80*80, Pooling 4 times
        self.h1_PT_hd3 = nn.MaxPool2d(4, 4, ceil_mode=True)
        self.h1_PT_hd3_conv = nn.Conv2d(filters[0], self.CatChannels, 3, padding=1)
        self.h1_PT_hd3_bn = nn.BatchNorm2d(self.CatChannels)
        self.h1_PT_hd3_relu = nn.ReLU(inplace=True)

        # h2->160*160, hd3->80*80, Pooling 2 times
        self.h2_PT_hd3 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.h2_PT_hd3_conv = nn.Conv2d(filters[1], self.CatChannels, 3, padding=1)
        self.h2_PT_hd3_bn = nn.BatchNorm2d(self.CatChannels)
        self.h2_PT_hd3_relu = nn.ReLU(inplace=True)

        # h3->80*80, hd3->80*80, Concatenation
        self.h3_Cat_hd3_conv = nn.Conv2d(filters[2], self.CatChannels, 3, padding=1)
        self.h3_Cat_hd3_bn = nn.BatchNorm2d(self.CatChannels)
        self.h3_Cat_hd3_relu = nn.ReLU(inplace=True)

        # hd4->40*40, hd3->80*80, Upsample 2 times
        self.hd4_UT_hd3 = nn.Upsample(scale_factor=2, mode="bilinear")  # 14*14
        self.hd4_UT_hd3_conv = nn.Conv2d(filters[3], self.CatChannels, 3, padding=1)
        self.hd4_UT_hd3_bn = nn.BatchNorm2d(self.CatChannels)
        self.hd4_UT_hd3_relu = nn.ReLU(inplace=True)

        # fusion(h1_PT_hd3, h2_PT_hd3, h3_Cat_hd3, hd4_UT_hd3)
        self.conv3d_1 = nn.Conv2d(self.UpChannels, self.UpChannels, 3, padding=1)  # 16
        self.bn3d_1 = nn.BatchNorm2d(self.UpChannels)
        self.relu3d_1 = nn.ReLU(inplace=True)

        '''stage 2d '''
        # h1->320*320, hd2->160*160, Pooling 2 times
        self.h1_PT_hd2 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.h1_PT_hd2_conv = nn.Conv2d(filters[0], self.CatChannels, 3, padding=1)
        self.h1_PT_hd2_bn = nn.BatchNorm2d(self.CatChannels)
        self.h1_PT_hd2_relu = nn.ReLU(inplace=True)

        # h2->160*160, hd2->160*160, Concatenation
        self.h2_Cat_hd2_conv = nn.Conv2d(filters[1], self.CatChannels, 3, padding=1)
        self.h2_Cat_hd2_bn = nn.BatchNorm2d(self.CatChannels)
        self.h2_Cat_hd2_relu = nn.ReLU(inplace=True)

        # hd3->80*80, hd2->160*160, Upsample 2 times
        self.hd3_UT_hd2 = nn.Upsample(scale_factor=2, mode="bilinear")  # 14*14
        self.hd3_UT_hd2_conv = nn.Conv2d(self.UpChannels, self.CatChannels, 3, padding=1)
        self.hd3_UT_hd2_bn = nn.BatchNorm2d(self.CatChannels)
        self.hd3_UT_hd2_relu = nn.ReLU(inplace=True)

        # hd4->40*40, hd2->160*160, Upsample 4 times
        self.hd4_UT_hd2 = nn.Upsample(scale_factor=4, mode="bilinear")  # 14*14
        self.hd4_UT_hd2_conv = nn.Conv2d(filters[3], self.CatChannels, 3, padding=1)
        self.hd4_UT_hd2_bn = nn.BatchNorm2d(self.CatChannels)
        self.hd4_UT_hd2_relu = nn.ReLU(inplace=True)

        # fusion(h1_PT_hd2, h2_Cat_hd2, hd3_UT_hd2, hd4_UT_hd2)
        self.conv2d_1 = nn.Conv2d(self.UpChannels, self.UpChannels, 3, padding=1)  # 16
        self.bn2d_1 = nn.BatchNorm2d(self.UpChannels)
        self.relu2d_1 = nn.ReLU(inplace=True)

        '''stage 1d'''
        # h1->320*320, hd1->320*320, Concatenation
        self.h1_Cat_hd1_conv = nn.Conv2d(filters[0], self.CatChannels, 3, padding=1)
        self.h1_Cat_hd1_bn = nn.BatchNorm2d(self.CatChannels)
        self.h1_Cat_hd1_relu = nn.ReLU(inplace=True)

        # hd2->160*160, hd1->320*320, Upsample 2 times
        self.hd2_UT_hd1 = nn.Upsample(scale_factor=2, mode="bilinear")  # 14*14
        self.hd2_UT_hd1_conv = nn.Conv2d(self.UpChannels, self.CatChannels, 3, padding=1)
        self.hd2_UT_hd1_bn = nn.BatchNorm2d(self.CatChannels)
        self.hd2_UT_hd1_relu = nn.ReLU(inplace=True)

        # hd3->80*80, hd1->320*320, Upsample 4 times
        self.hd3_UT_hd1 = nn.Upsample(scale_factor=4, mode="bilinear")  # 14*14
        self.hd3_UT_hd1_conv = nn.Conv2d(self.UpChannels, self.CatChannels, 3, padding=1)
        self.hd3_UT_hd1_bn = nn.BatchNorm2d(self.CatChannels)
        self.hd3_UT_hd1_relu = nn.ReLU(inplace=True)

        # hd4->40*40, hd1->320*320, Upsample 8 times
        self.hd4_UT_hd1 = nn.Upsample(scale_factor=8, mode="bilinear")  # 14*14
        self.hd4_UT_hd1_conv = nn.Conv2d(filters[3], self.CatChannels, 3, padding=1)
        self.hd4_UT_hd1_bn = nn.BatchNorm2d(self.CatChannels)
        self.hd4_UT_hd1_relu = nn.ReLU(inplace=True)

        # fusion(h1_Cat_hd1, hd2_UT_hd1, hd3_UT_hd1, hd4_UT_hd1)
        self.conv1d_1 = nn.Conv2d(self.UpChannels, self.UpChannels, 3, padding=1)  # 16
        self.bn1d_1 = nn.BatchNorm2d(self.UpChannels)
        self.relu1d_1 = nn.ReLU(inplace=True)

        # output
        self.outconv1 = nn.Conv2d(self.UpChannels, n_classes, 3, padding=1)

        # initialise weights
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                init_weights(m, init_type="kaiming")
            elif isinstance(m, nn.BatchNorm2d):
                init_weights(m, init_type="kaiming")

    def forward(self, inputs):
        # -------------Encoder-------------
        h1 = self.conv1(inputs)  # h1->320*320*64

        h2 = self.maxpool1(h1)
        h2 = self.conv2(h2)  # h2->160*160*128

        h3 = self.maxpool2(h2)
        h3 = self.conv3(h3)  # h3->80*80*256

        h4 = self.maxpool3(h3)
        hd4 = self.conv4(h4)  # h4->40*40*512

        # -------------Decoder-------------
        h1_PT_hd3 = self.h1_PT_hd3_relu(self.h1_PT_hd3_bn(self.h1_PT_hd3_conv(self.h1_PT_hd3(h1))))
        h2_PT_hd3 = self.h2_PT_hd3_relu(self.h2_PT_hd3_bn(self.h2_PT_hd3_conv(self.h2_PT_hd3(h2))))
        h3_Cat_hd3 = self.h3_Cat_hd3_relu(self.h3_Cat_hd3_bn(self.h3_Cat_hd3_conv(h3)))
        hd4_UT_hd3 = self.hd4_UT_hd3_relu(self.hd4_UT_hd3_bn(self.hd4_UT_hd3_conv(self.hd4_UT_hd3(hd4))))
        hd3 = self.relu3d_1(self.bn3d_1(self.conv3d_1(
            torch.cat((h1_PT_hd3, h2_PT_hd3, h3_Cat_hd3, hd4_UT_hd3), 1))))  # hd3->80*80*UpChannels

        h1_PT_hd2 = self.h1_PT_hd2_relu(self.h1_PT_hd2_bn(self.h1_PT_hd2_conv(self.h1_PT_hd2(h1))))
        h2_Cat_hd2 = self.h2_Cat_hd2_relu(self.h2_Cat_hd2_bn(self.h2_Cat_hd2_conv(h2)))
        hd3_UT_hd2 = self.hd3_UT_hd2_relu(self.hd3_UT_hd2_bn(self.hd3_UT_hd2_conv(self.hd3_UT_hd2(hd3))))
        hd4_UT_hd2 = self.hd4_UT_hd2_relu(self.hd4_UT_hd2_bn(self.hd4_UT_hd2_conv(self.hd4_UT_hd2(hd4))))
        hd2 = self.relu2d_1(self.bn2d_1(self.conv2d_1(
            torch.cat((h1_PT_hd2, h2_Cat_hd2, hd3_UT_hd2, hd4_UT_hd2), 1))))  # hd2->160*160*UpChannels

        h1_Cat_hd1 = self.h1_Cat_hd1_relu(self.h1_Cat_hd1_bn(self.h1_Cat_hd1_conv(h1)))
        hd2_UT_hd1 = self.hd2_UT_hd1_relu(self.hd2_UT_hd1_bn(self.hd2_UT_hd1_conv(self.hd2_UT_hd1(hd2))))
        hd3_UT_hd1 = self.hd3_UT_hd1_relu(self.hd3_UT_hd1_bn(self.hd3_UT_hd1_conv(self.hd3_UT_hd1(hd3))))
        hd4_UT_hd1 = self.hd4_UT_hd1_relu(self.hd4_UT_hd1_bn(self.hd4_UT_hd1_conv(self.hd4_UT_hd1(hd4))))
        hd1 = self.relu1d_1(self.bn1d_1(self.conv1d_1(
            torch.cat((h1_Cat_hd1, hd2_UT_hd1, hd3_UT_hd1, hd4_UT_hd1), 1))))  # hd1->320*320*UpChannels

        d1 = self.outconv1(hd1)  # d1->320*320*n_classes
        return F.sigmoid(d1)


def bce_map(out, target):
    return F.binary_cross_entropy(out, target)


def b_unet3plus():
    batch, hw = 2, 32
    mask = (randn(batch, 1, hw, hw, seed=3) > 0).float()
    model = UNet_3Plus(in_channels=3, n_classes=1, filters=(8, 16, 32, 64))
    return dict(model=model, inputs=(randn(batch, 3, hw, hw),), target=mask, loss=bce_map)


# ---------------------------------------------------------------------------------------
# DSIN as DeepCTR writes it (deepctr/models/sequence/dsin.py, layers/sequence.py's BiasEncoding,
# Transformer and BiLSTM) in DeepCTR-Torch's way (tools/record_cpu_fresh.py's DeepCTRBase:
# embedding_dict, one Embedding per sparse field looked up with X[:, i:i+1].long(), its
# linear_model built and, as in DIN, not called; PredictionLayer `out`; its
# AttentionSequencePoolingLayer and LocalActivationUnit; tools/record_cpu_variants8.py's
# deepctr_dnn); bias_encoding on, so no positional encoding; 3 sessions of up to 4 behaviours
# (item and category, sharing the target's embeddings), one head per dimension. DSIN: the query
# embeddings (item, category) looked up and cat; every field's embedding, cat and flattened;
# sess_interest_division: per session the behaviours' embeddings cat, their mask (both ids
# nonzero, as mask_zero and Concatenate's mask make it), bias_encoding (BiasEncoding: per
# session + item_bias_embedding + seq_bias_embedding + sess_bias_embedding[i]);
# sess_interest_extractor: self_attention (one Transformer layer called on each session:
# tensordot with W_Query, W_key and W_Value, the heads split and cat on the batch, matmul, /
# sqrt(d), the key mask by torch.where with -2^32 + 1, the blinding diagonal set by
# diagonal_scatter, minus the max, softmax, times the query mask, dropout, matmul, the heads cat
# back, + queries, fw1 with relu, dropout, fw2, + it, the mean over the behaviours), cat over the
# sessions; interest_attention_layer on the session interests; bilstm (BiLSTM: per layer fw_lstm
# on the sequence and bw_lstm on it reversed, reversed back; their average) and
# lstm_attention_layer on its outputs, both AttentionSequencePoolingLayers with the session count
# as keys_length (LocalActivationUnit: queries, keys, q - k, q * k cat, its DNN with sigmoid, dense
# to 1; transposed, the mask by torch.where with -2^32 + 1, softmax, matmul with the keys); cat
# with the flattened embeddings, combined_dnn_input with the dense value, dnn, dnn_linear
# (bias-free), out. Binary cross entropy, as compile("adam", "binary_crossentropy") computes it.


class BiasEncoding(nn.Module):
    def __init__(self, sess_max_count, seq_len_max, embed_size, seed=1024):
        super().__init__()
        self.sess_max_count = sess_max_count
        self.seed = seed
        # TruncatedNormal(mean=0.0, stddev=0.0001)
        self.sess_bias_embedding = nn.Parameter(torch.empty(sess_max_count, 1, 1))
        self.seq_bias_embedding = nn.Parameter(torch.empty(1, seq_len_max, 1))
        self.item_bias_embedding = nn.Parameter(torch.empty(1, 1, embed_size))
        for p in (self.sess_bias_embedding, self.seq_bias_embedding, self.item_bias_embedding):
            nn.init.trunc_normal_(p, mean=0.0, std=0.0001, a=-0.0002, b=0.0002)

    def forward(self, inputs):
        """
        :param concated_embeds_value: None * field_size * embedding_size
        :return: None*1
        """
        transformer_out = []
        for i in range(self.sess_max_count):
            transformer_out.append(
                inputs[i] + self.item_bias_embedding + self.seq_bias_embedding + self.sess_bias_embedding[i])
        return transformer_out


class Transformer(nn.Module):
    """Simplified version of Transformer proposed in 《Attention is all you need》 (the
    scaled_dot_product attention type, output_type "mean")."""

    def __init__(self, embedding_size, att_embedding_size=1, head_num=8, dropout_rate=0.0,
                 use_positional_encoding=True, use_res=True, use_feed_forward=True, use_layer_norm=False,
                 blinding=True, seed=1024, supports_masking=False, output_type="mean"):
        super().__init__()
        if head_num <= 0:
            raise ValueError("head_num must be a int > 0")
        assert not use_positional_encoding, "DSIN with bias_encoding builds it without positional encoding"
        assert supports_masking and output_type == "mean"
        self.att_embedding_size = att_embedding_size
        self.head_num = head_num
        self.num_units = att_embedding_size * head_num
        self.use_res = use_res
        self.use_feed_forward = use_feed_forward
        self.seed = seed
        self.use_positional_encoding = use_positional_encoding
        self.dropout_rate = dropout_rate
        self.use_layer_norm = use_layer_norm
        self.blinding = blinding
        self.supports_masking = supports_masking
        self.output_type = output_type

        # build
        if self.num_units != embedding_size:
            raise ValueError(
                "att_embedding_size * head_num must equal the last dimension size of inputs,got %d * %d != %d" % (
                    self.att_embedding_size, self.head_num, embedding_size))
        self.W_Query = nn.Parameter(torch.empty(embedding_size, self.att_embedding_size * self.head_num))
        self.W_key = nn.Parameter(torch.empty(embedding_size, self.att_embedding_size * self.head_num))
        self.W_Value = nn.Parameter(torch.empty(embedding_size, self.att_embedding_size * self.head_num))
        for w in (self.W_Query, self.W_key, self.W_Value):  # TruncatedNormal (stddev 0.05)
            nn.init.trunc_normal_(w, std=0.05, a=-0.1, b=0.1)
        if self.use_feed_forward:
            self.fw1 = nn.Parameter(torch.empty(self.num_units, 4 * self.num_units))
            self.fw2 = nn.Parameter(torch.empty(4 * self.num_units, self.num_units))
            nn.init.xavier_uniform_(self.fw1)  # glorot_uniform
            nn.init.xavier_uniform_(self.fw2)

        self.dropout = nn.Dropout(self.dropout_rate)
        self.ln = nn.LayerNorm(embedding_size)  # built as the reference builds it; unused without use_layer_norm

    def forward(self, inputs, mask=None):
        queries, keys = inputs
        query_masks, key_masks = mask
        query_masks = query_masks.float()
        key_masks = key_masks.float()

        Q = torch.tensordot(queries, self.W_Query, dims=([-1], [0]))  # N T_q D*h
        K = torch.tensordot(keys, self.W_key, dims=([-1], [0]))
        V = torch.tensordot(keys, self.W_Value, dims=([-1], [0]))

        # h*N T_q D
        Q_ = torch.cat(torch.chunk(Q, self.head_num, dim=2), dim=0)
        K_ = torch.cat(torch.chunk(K, self.head_num, dim=2), dim=0)
        V_ = torch.cat(torch.chunk(V, self.head_num, dim=2), dim=0)

        # h*N T_q T_k
        outputs = torch.matmul(Q_, K_.transpose(-1, -2))

        outputs = outputs / (K_.shape[-1] ** 0.5)

        key_masks = key_masks.repeat(self.head_num, 1)

        # (h*N, T_q, T_k)
        key_masks = key_masks.unsqueeze(1).repeat(1, queries.shape[1], 1)

        paddings = torch.ones_like(outputs) * (-2 ** 32 + 1)

        # (h*N, T_q, T_k)

        outputs = torch.where(key_masks == 1, outputs, paddings)
        if self.blinding:  # tf.matrix_set_diag
            outputs = torch.diagonal_scatter(outputs, torch.ones_like(outputs)[:, :, 0] * (-2 ** 32 + 1),
                                             dim1=1, dim2=2)

        outputs = outputs - torch.max(outputs, dim=-1, keepdim=True)[0]
        outputs = F.softmax(outputs, dim=-1)
        query_masks = query_masks.repeat(self.head_num, 1)  # (h*N, T_q)
        # (h*N, T_q, T_k)
        query_masks = query_masks.unsqueeze(-1).repeat(1, 1, keys.shape[1])

        outputs = outputs * query_masks

        outputs = self.dropout(outputs)
        # Weighted sum
        # ( h*N, T_q, C/h)
        result = torch.matmul(outputs, V_)
        result = torch.cat(torch.chunk(result, self.head_num, dim=0), dim=2)

        if self.use_res:
            # tf.tensordot(queries, self.W_Res, axes=(-1, 0))
            result = result + queries
        if self.use_layer_norm:
            result = self.ln(result)

        if self.use_feed_forward:
            fw1 = F.relu(torch.tensordot(result, self.fw1, dims=([-1], [0])))
            fw1 = self.dropout(fw1)
            fw2 = torch.tensordot(fw1, self.fw2, dims=([-1], [0]))
            if self.use_res:
                result = result + fw2
            if self.use_layer_norm:
                result = self.ln(result)

        return torch.mean(result, dim=1, keepdim=True)


class BiLSTM(nn.Module):
    """A multiple layer Bidirectional Residual LSTM Layer (merge_mode "ave")."""

    def __init__(self, units, layers=2, res_layers=0, dropout_rate=0.2, merge_mode="ave"):
        super().__init__()
        assert merge_mode == "ave"
        self.units = units
        self.layers = layers
        self.res_layers = res_layers
        self.dropout_rate = dropout_rate
        self.merge_mode = merge_mode
        self.fw_lstm = nn.ModuleList()
        self.bw_lstm = nn.ModuleList()
        for _ in range(self.layers):
            self.fw_lstm.append(nn.LSTM(units, units, batch_first=True))
            self.bw_lstm.append(nn.LSTM(units, units, batch_first=True))
        for lstm in list(self.fw_lstm) + list(self.bw_lstm):  # bias_initializer="ones"
            nn.init.ones_(lstm.bias_ih_l0)
            nn.init.zeros_(lstm.bias_hh_l0)

    def forward(self, inputs):
        input_fw = inputs
        input_bw = inputs
        for i in range(self.layers):
            output_fw, _ = self.fw_lstm[i](input_fw)
            output_bw, _ = self.bw_lstm[i](torch.flip(input_bw, [1]))  # go_backwards=True
            output_bw = torch.flip(output_bw, [1])  # K.reverse(x, 1)

            if i >= self.layers - self.res_layers:
                output_fw = output_fw + input_fw
                output_bw = output_bw + input_bw
            input_fw = output_fw
            input_bw = output_bw

        output_fw = input_fw
        output_bw = input_bw

        output = (output_fw + output_bw) / 2
        return output


class DSIN(DeepCTRBase):
    """Inputs: X as DeepCTR-Torch's BaseModel takes it (user, gender, item and category ids as
    floats, then the dense value), each session's item and category ids, the session count."""

    def __init__(self, sparse_vocab=(50, 3, 100, 20), n_dense=1, embedding_size=4, sess_feature_index=(2, 3),
                 sess_max_count=3, sess_len_max=4, bias_encoding=True, att_embedding_size=1, att_head_num=8,
                 dnn_hidden_units=(32, 16), dnn_dropout=0, init_std=0.0001):
        super().__init__(sparse_vocab, n_dense, embedding_size, init_std)
        hist_emb_size = len(sess_feature_index) * embedding_size
        if att_embedding_size * att_head_num != hist_emb_size:
            raise ValueError(
                "hist_emb_size must equal to att_embedding_size * att_head_num ,got %d != %d *%d" % (
                    hist_emb_size, att_embedding_size, att_head_num))
        self.sess_feature_index = sess_feature_index
        self.sess_max_count = sess_max_count
        self.use_bias_encoding = bias_encoding
        self.bias_encoding = BiasEncoding(sess_max_count, sess_len_max, hist_emb_size)
        self.self_attention = Transformer(hist_emb_size, att_embedding_size, att_head_num, dropout_rate=0,
                                          use_layer_norm=False, use_positional_encoding=(not bias_encoding),
                                          supports_masking=True, blinding=True)
        self.interest_attention_layer = AttentionSequencePoolingLayer(att_hidden_units=(64, 16),
                                                                      weight_normalization=True,
                                                                      embedding_dim=hist_emb_size)
        self.bilstm = BiLSTM(hist_emb_size, layers=2, res_layers=0, dropout_rate=0.2)
        self.lstm_attention_layer = AttentionSequencePoolingLayer(att_hidden_units=(64, 16),
                                                                  weight_normalization=True,
                                                                  embedding_dim=hist_emb_size)
        dnn_input_dim = len(sparse_vocab) * embedding_size + 2 * hist_emb_size + n_dense
        self.dnn = deepctr_dnn(dnn_input_dim, dnn_hidden_units, dropout_rate=dnn_dropout, init_std=init_std)
        self.dnn_linear = nn.Linear(dnn_hidden_units[-1], 1, bias=False)
        nn.init.xavier_normal_(self.dnn_linear.weight)  # glorot_normal

    def sess_interest_division(self, sess_ids):
        tr_input, tr_mask = [], []
        for i in range(self.sess_max_count):
            keys_emb_list = [self.embedding_dict[f"C{f}"](ids[:, i])
                             for f, ids in zip(self.sess_feature_index, sess_ids)]
            keys_emb = torch.cat(keys_emb_list, dim=-1)
            keys_mask = (sess_ids[0][:, i] != 0) & (sess_ids[1][:, i] != 0)  # mask_zero, concat_func(mask=True)
            tr_input.append(keys_emb)
            tr_mask.append(keys_mask)
        if self.use_bias_encoding:
            tr_input = self.bias_encoding(tr_input)
        return tr_input, tr_mask

    def sess_interest_extractor(self, tr_input, tr_mask):
        tr_out = []
        for i in range(self.sess_max_count):
            tr_out.append(self.self_attention([tr_input[i], tr_input[i]], mask=[tr_mask[i], tr_mask[i]]))
        sess_fea = torch.cat(tr_out, dim=1)
        return sess_fea

    def forward(self, X, sess_item, sess_cate, sess_length):
        query_emb_list = [self.embedding_dict[f"C{i}"](X[:, i:i + 1].long()) for i in self.sess_feature_index]
        dnn_input_emb_list, dense_value_list = self.input_from_feature_columns(X)
        query_emb = torch.cat(query_emb_list, dim=-1)
        dnn_input_emb = torch.flatten(torch.cat(dnn_input_emb_list, dim=-1), start_dim=1)

        tr_input, tr_mask = self.sess_interest_division((sess_item, sess_cate))
        sess_fea = self.sess_interest_extractor(tr_input, tr_mask)

        interest_attention = self.interest_attention_layer(query_emb, sess_fea, sess_length)
        lstm_outputs = self.bilstm(sess_fea)
        lstm_attention = self.lstm_attention_layer(query_emb, lstm_outputs, sess_length)

        dnn_input_emb = torch.cat([dnn_input_emb, torch.flatten(interest_attention, start_dim=1),
                                   torch.flatten(lstm_attention, start_dim=1)], dim=-1)
        dnn_input = combined_dnn_input([dnn_input_emb], dense_value_list)
        output = self.dnn(dnn_input)
        output = self.dnn_linear(output)
        return self.out(output)


def b_dsin():
    batch, sessions, length = 32, 3, 4
    X = ctr_input(batch, (50, 3, 100, 20), 1)
    g = torch.Generator().manual_seed(5)
    sess_length = torch.randint(1, sessions + 1, (batch, 1), generator=g)
    items = torch.randint(1, 100, (batch, sessions, length), generator=g)
    cates = torch.randint(1, 20, (batch, sessions, length), generator=g)
    n_behaviours = torch.randint(1, length + 1, (batch, sessions, 1), generator=g)
    keep = ((torch.arange(length)[None, None, :] < n_behaviours)
            & (torch.arange(sessions)[None, :, None] < sess_length[:, :, None]))
    items, cates = items * keep, cates * keep  # 0 pads the behaviours and the sessions past the count
    return dict(model=DSIN(), inputs=(X, items, cates, sess_length), target=randint(2, batch, 1, seed=3).float(),
                loss=bce_prob)


# ---------------------------------------------------------------------------------------
# PaiNN as schnetpack writes it (representation/painn.py, nn/base.py's Dense, nn/scatter.py,
# nn/radial.py, nn/cutoff.py, nn/blocks.py's build_mlp, atomistic/atomwise.py,
# atomistic/distances.py, model/base.py; 32 features, 3 interactions, 20 Gaussians, cutoff 5):
# NeuralNetworkPotential (input_modules, a ModuleList of PairwiseDistances: R[idx_j] - R[idx_i] +
# offsets; representation; output_modules, a ModuleList of an Atomwise energy; postprocessors, an
# empty ModuleList; the outputs picked from the inputs dict). PaiNN: d_ij by torch.norm, dir_ij,
# radial_basis (GaussianRBF: exp(-0.5 / widths^2 * (d - offsets)^2)), cutoff_fn (CosineCutoff:
# 0.5 (cos(pi d / rc) + 1) times d < rc, in place), filter_net (a Dense) times the cutoff, split
# into one filter per interaction; embedding, unsqueeze, mu zeros; per block interactions[i]
# (PaiNNInteraction: interatomic_context_net, a Sequential of Dense with F.silu and Dense; x[idx_j]
# times the filter, split in three, scatter_add (zeros and index_add, schnetpack's scripted
# function) of dq, dmuR * dir_ij + dmumu * mu[idx_j] scattered, q + dq, mu + dmu) and mixing[i]
# (PaiNNMixing: mu_channel_mix, a bias-free Dense, split into V and W, the norm of V, cat with q,
# intraatomic_context_net, split in three, the updates). Dense is schnetpack's: F.linear and its
# activation (the function F.silu, or an nn.Identity module when none). Atomwise: outnet
# (build_mlp: a Sequential of Dense layers halving the width), scatter_add over the molecules,
# squeeze. Four random molecules of 8 atoms, every pair within the cutoff a neighbour pair (as a
# neighbour list transform gives them); the mean squared error on the energy, as ModelOutput's
# MSELoss.


class properties:  # noqa: N801  (schnetpack.properties' keys)
    Z = "_atomic_numbers"
    R = "_positions"
    idx_m = "_idx_m"
    idx_i = "_idx_i"
    idx_j = "_idx_j"
    Rij = "_Rij"
    n_atoms = "_n_atoms"
    offsets = "_offsets"


class AtomsBatch(dict):
    """The batch dict schnetpack's AtomsLoader collates; a dict that describes itself by the shapes
    of the keys it was given (the model adds its results to it, as schnetpack's does)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self._given = {k: (list(v.shape), str(v.dtype).replace("torch.", "")) for k, v in self.items()}

    def __repr__(self):
        return "{" + ", ".join(f"{k}: {s} {d}" for k, (s, d) in self._given.items()) + "}"


class Dense(nn.Linear):
    r"""Fully connected linear layer with activation function."""

    def __init__(self, in_features, out_features, bias=True, activation=None, weight_init=nn.init.xavier_uniform_,
                 bias_init=nn.init.zeros_):
        self.weight_init = weight_init
        self.bias_init = bias_init
        super(Dense, self).__init__(in_features, out_features, bias)
        self.activation = activation
        if self.activation is None:
            self.activation = nn.Identity()

    def reset_parameters(self):
        self.weight_init(self.weight)
        if self.bias is not None:
            self.bias_init(self.bias)

    def forward(self, input):
        y = F.linear(input, self.weight, self.bias)
        y = self.activation(y)
        return y


def scatter_add(x, idx_i, dim_size, dim=0):
    """Sum over values with the same indices."""
    return _scatter_add(x, idx_i, dim_size, dim)


@torch.jit.script
def _scatter_add(x: torch.Tensor, idx_i: torch.Tensor, dim_size: int, dim: int = 0) -> torch.Tensor:
    shape = list(x.shape)
    shape[dim] = dim_size
    tmp = torch.zeros(shape, dtype=x.dtype, device=x.device)
    y = tmp.index_add(dim, idx_i, x)
    return y


def replicate_module(module_factory, n, share_params):
    if share_params:
        module_list = nn.ModuleList([module_factory()] * n)
    else:
        module_list = nn.ModuleList([module_factory() for i in range(n)])
    return module_list


def gaussian_rbf(inputs, offsets, widths):
    coeff = -0.5 / torch.pow(widths, 2)
    diff = inputs[..., None] - offsets
    y = torch.exp(coeff * torch.pow(diff, 2))
    return y


class GaussianRBF(nn.Module):
    r"""Gaussian radial basis functions."""

    def __init__(self, n_rbf, cutoff, start=0.0, trainable=False):
        super(GaussianRBF, self).__init__()
        self.n_rbf = n_rbf

        # compute offset and width of Gaussian functions
        offset = torch.linspace(start, cutoff, n_rbf)
        widths = torch.FloatTensor(torch.abs(offset[1] - offset[0]) * torch.ones_like(offset))
        if trainable:
            self.widths = nn.Parameter(widths)
            self.offsets = nn.Parameter(offset)
        else:
            self.register_buffer("widths", widths)
            self.register_buffer("offsets", offset)

    def forward(self, inputs):
        return gaussian_rbf(inputs, self.offsets, self.widths)


def cosine_cutoff(input, cutoff):
    # Compute values of cutoff function
    input_cut = 0.5 * (torch.cos(input * math.pi / cutoff) + 1.0)
    # Remove contributions beyond the cutoff radius
    input_cut *= (input < cutoff).float()
    return input_cut


class CosineCutoff(nn.Module):
    r"""Behler-style cosine cutoff module."""

    def __init__(self, cutoff):
        super(CosineCutoff, self).__init__()
        self.register_buffer("cutoff", torch.FloatTensor([cutoff]))

    def forward(self, input):
        return cosine_cutoff(input, self.cutoff)


def build_mlp(n_in, n_out, n_hidden=None, n_layers=2, activation=F.silu, last_bias=True, last_zero_init=False):
    assert n_hidden is None and not last_zero_init
    # get list of number of nodes in input, hidden & output layers
    c_neurons = n_in
    n_neurons = []
    for i in range(n_layers):
        n_neurons.append(c_neurons)
        c_neurons = max(n_out, c_neurons // 2)
    n_neurons.append(n_out)

    # assign a Dense layer (with activation function) to each hidden layer
    layers = [Dense(n_neurons[i], n_neurons[i + 1], activation=activation) for i in range(n_layers - 1)]
    # assign a Dense layer (without activation function) to the output layer
    layers.append(Dense(n_neurons[-2], n_neurons[-1], activation=None, bias=last_bias))
    # put all layers together to make the network
    out_net = nn.Sequential(*layers)
    return out_net


class PaiNNInteraction(nn.Module):
    r"""PaiNN interaction block for modeling equivariant interactions of atomistic systems."""

    def __init__(self, n_atom_basis, activation):
        super(PaiNNInteraction, self).__init__()
        self.n_atom_basis = n_atom_basis

        self.interatomic_context_net = nn.Sequential(
            Dense(n_atom_basis, n_atom_basis, activation=activation),
            Dense(n_atom_basis, 3 * n_atom_basis, activation=None),
        )

    def forward(self, q, mu, Wij, dir_ij, idx_i, idx_j, n_atoms):
        # inter-atomic
        x = self.interatomic_context_net(q)
        xj = x[idx_j]
        muj = mu[idx_j]
        x = Wij * xj

        dq, dmuR, dmumu = torch.split(x, self.n_atom_basis, dim=-1)
        dq = scatter_add(dq, idx_i, dim_size=n_atoms)
        dmu = dmuR * dir_ij[..., None] + dmumu * muj
        dmu = scatter_add(dmu, idx_i, dim_size=n_atoms)

        q = q + dq
        mu = mu + dmu

        return q, mu


class PaiNNMixing(nn.Module):
    r"""PaiNN interaction block for mixing on atom features."""

    def __init__(self, n_atom_basis, activation, epsilon=1e-8):
        super(PaiNNMixing, self).__init__()
        self.n_atom_basis = n_atom_basis

        self.intraatomic_context_net = nn.Sequential(
            Dense(2 * n_atom_basis, n_atom_basis, activation=activation),
            Dense(n_atom_basis, 3 * n_atom_basis, activation=None),
        )
        self.mu_channel_mix = Dense(n_atom_basis, 2 * n_atom_basis, activation=None, bias=False)
        self.epsilon = epsilon

    def forward(self, q, mu):
        # intra-atomic
        mu_mix = self.mu_channel_mix(mu)
        mu_V, mu_W = torch.split(mu_mix, self.n_atom_basis, dim=-1)
        mu_Vn = torch.sqrt(torch.sum(mu_V ** 2, dim=-2, keepdim=True) + self.epsilon)

        ctx = torch.cat([q, mu_Vn], dim=-1)
        x = self.intraatomic_context_net(ctx)

        dq_intra, dmu_intra, dqmu_intra = torch.split(x, self.n_atom_basis, dim=-1)
        dmu_intra = dmu_intra * mu_W

        dqmu_intra = dqmu_intra * torch.sum(mu_V * mu_W, dim=1, keepdim=True)

        q = q + dq_intra + dqmu_intra
        mu = mu + dmu_intra
        return q, mu


class PaiNN(nn.Module):
    """PaiNN - polarizable interaction neural network."""

    def __init__(self, n_atom_basis, n_interactions, radial_basis, cutoff_fn=None, activation=F.silu,
                 shared_interactions=False, shared_filters=False, epsilon=1e-8, nuclear_embedding=None,
                 electronic_embeddings=None):
        super(PaiNN, self).__init__()

        self.n_atom_basis = n_atom_basis
        self.n_interactions = n_interactions
        self.cutoff_fn = cutoff_fn
        self.cutoff = cutoff_fn.cutoff
        self.radial_basis = radial_basis

        # initialize embeddings
        if nuclear_embedding is None:
            nuclear_embedding = nn.Embedding(100, n_atom_basis)
        self.embedding = nuclear_embedding
        if electronic_embeddings is None:
            electronic_embeddings = []
        electronic_embeddings = nn.ModuleList(electronic_embeddings)
        self.electronic_embeddings = electronic_embeddings

        # initialize filter layers
        self.share_filters = shared_filters
        if shared_filters:
            self.filter_net = Dense(self.radial_basis.n_rbf, 3 * n_atom_basis, activation=None)
        else:
            self.filter_net = Dense(self.radial_basis.n_rbf, self.n_interactions * n_atom_basis * 3,
                                    activation=None)

        # initialize interaction blocks
        self.interactions = replicate_module(
            lambda: PaiNNInteraction(n_atom_basis=self.n_atom_basis, activation=activation),
            self.n_interactions,
            shared_interactions,
        )
        self.mixing = replicate_module(
            lambda: PaiNNMixing(n_atom_basis=self.n_atom_basis, activation=activation, epsilon=epsilon),
            self.n_interactions,
            shared_interactions,
        )

    def forward(self, inputs):
        # get tensors from input dictionary
        atomic_numbers = inputs[properties.Z]
        r_ij = inputs[properties.Rij]
        idx_i = inputs[properties.idx_i]
        idx_j = inputs[properties.idx_j]
        n_atoms = atomic_numbers.shape[0]

        # compute atom and pair features
        d_ij = torch.norm(r_ij, dim=1, keepdim=True)
        dir_ij = r_ij / d_ij
        phi_ij = self.radial_basis(d_ij)
        fcut = self.cutoff_fn(d_ij)

        filters = self.filter_net(phi_ij) * fcut[..., None]
        if self.share_filters:
            filter_list = [filters] * self.n_interactions
        else:
            filter_list = torch.split(filters, 3 * self.n_atom_basis, dim=-1)

        # compute initial embeddings
        q = self.embedding(atomic_numbers)
        for embedding in self.electronic_embeddings:
            q = q + embedding(q, inputs)
        q = q.unsqueeze(1)

        # compute interaction blocks and update atomic embeddings
        qs = q.shape
        mu = torch.zeros((qs[0], 3, qs[2]), device=q.device)
        for i, (interaction, mixing) in enumerate(zip(self.interactions, self.mixing)):
            q, mu = interaction(q, mu, filter_list[i], dir_ij, idx_i, idx_j, n_atoms)
            q, mu = mixing(q, mu)
        q = q.squeeze(1)

        # collect results
        inputs["scalar_representation"] = q
        inputs["vector_representation"] = mu

        return inputs


class PairwiseDistances(nn.Module):
    """Compute pair-wise distances from indices provided by a neighbor list transform."""

    def forward(self, inputs):
        R = inputs[properties.R]
        offsets = inputs[properties.offsets]
        idx_i = inputs[properties.idx_i]
        idx_j = inputs[properties.idx_j]

        # To avoid error in Windows OS
        idx_i = idx_i.long()
        idx_j = idx_j.long()

        Rij = R[idx_j] - R[idx_i] + offsets
        inputs[properties.Rij] = Rij
        return inputs


class Atomwise(nn.Module):
    """Predicts atom-wise contributions and accumulates global prediction, e.g. for the energy."""

    def __init__(self, n_in, n_out=1, n_hidden=None, n_layers=2, activation=F.silu, aggregation_mode="sum",
                 output_key="y", per_atom_output_key=None):
        super(Atomwise, self).__init__()
        self.output_key = output_key
        self.model_outputs = [output_key]
        self.per_atom_output_key = per_atom_output_key
        if self.per_atom_output_key is not None:
            self.model_outputs.append(self.per_atom_output_key)
        self.n_out = n_out

        self.outnet = build_mlp(n_in=n_in, n_out=n_out, n_hidden=n_hidden, n_layers=n_layers, activation=activation)
        self.aggregation_mode = aggregation_mode

    def forward(self, inputs):
        # predict atomwise contributions
        y = self.outnet(inputs["scalar_representation"])

        # accumulate the per-atom output if necessary
        if self.per_atom_output_key is not None:
            inputs[self.per_atom_output_key] = y

        # aggregate
        if self.aggregation_mode is not None:
            idx_m = inputs[properties.idx_m]
            maxm = int(idx_m[-1]) + 1
            y = scatter_add(y, idx_m, dim_size=maxm)
            y = torch.squeeze(y, -1)

            if self.aggregation_mode == "avg":
                y = y / inputs[properties.n_atoms]

        inputs[self.output_key] = y
        return inputs


class NeuralNetworkPotential(nn.Module):
    """schnetpack's NeuralNetworkPotential on AtomisticModel (no response properties: no
    derivatives are required, so initialize_derivatives sets none)."""

    def __init__(self, representation, input_modules=None, output_modules=None, postprocessors=None,
                 input_dtype_str="float32", do_postprocessing=True):
        super().__init__()
        self.input_dtype_str = input_dtype_str
        self.do_postprocessing = do_postprocessing
        self.postprocessors = nn.ModuleList(postprocessors)
        self.required_derivatives = None
        self.model_outputs = None
        self.representation = representation
        self.input_modules = nn.ModuleList(input_modules)
        self.output_modules = nn.ModuleList(output_modules)
        self.collect_derivatives()
        self.collect_outputs()

    def collect_derivatives(self):
        self.required_derivatives = None
        required_derivatives = set()
        for m in self.modules():
            if hasattr(m, "required_derivatives") and m.required_derivatives is not None:
                required_derivatives.update(m.required_derivatives)
        self.required_derivatives = list(required_derivatives)

    def collect_outputs(self):
        self.model_outputs = None
        model_outputs = set()
        for m in self.modules():
            if hasattr(m, "model_outputs") and m.model_outputs is not None:
                model_outputs.update(m.model_outputs)
        self.model_outputs = list(model_outputs)

    def initialize_derivatives(self, inputs):
        for p in self.required_derivatives:
            if p in inputs.keys():
                inputs[p].requires_grad_()
        return inputs

    def postprocess(self, inputs):
        if self.do_postprocessing:
            # apply postprocessing
            for pp in self.postprocessors:
                inputs = pp(inputs)
        return inputs

    def extract_outputs(self, inputs):
        results = {k: inputs[k] for k in self.model_outputs}
        return results

    def forward(self, inputs):
        # initialize derivatives for response properties
        inputs = self.initialize_derivatives(inputs)

        for m in self.input_modules:
            inputs = m(inputs)

        inputs = self.representation(inputs)

        for m in self.output_modules:
            inputs = m(inputs)

        # apply postprocessing (if enabled)
        inputs = self.postprocess(inputs)
        results = self.extract_outputs(inputs)

        return results


def energy_mse(results, energy):
    """ModelOutput(name="energy", loss_fn=torch.nn.MSELoss()) of an AtomisticTask."""
    return nn.MSELoss()(results["energy"], energy)


def random_molecules(n_mol, n_at, cutoff, seed=4):
    """Positions and atomic numbers of small random molecules and every pair within the cutoff."""
    g = torch.Generator().manual_seed(seed)
    Z = torch.tensor([1, 6, 7, 8])[torch.randint(0, 4, (n_mol * n_at,), generator=g)]
    R = torch.randn(n_mol * n_at, 3, generator=g) * 1.2
    idx_m = torch.arange(n_mol).repeat_interleave(n_at)
    same = (idx_m[:, None] == idx_m[None, :]) & ~torch.eye(n_mol * n_at, dtype=torch.bool)
    near = torch.cdist(R, R) < cutoff
    idx_i, idx_j = torch.nonzero(same & near, as_tuple=True)
    return AtomsBatch({
        properties.Z: Z,
        properties.R: R,
        properties.idx_m: idx_m,
        properties.n_atoms: torch.full((n_mol,), n_at),
        properties.idx_i: idx_i,
        properties.idx_j: idx_j,
        properties.offsets: torch.zeros(idx_i.shape[0], 3),
    })


def b_painn():
    cutoff, n_atom_basis = 5.0, 32
    representation = PaiNN(n_atom_basis=n_atom_basis, n_interactions=3,
                           radial_basis=GaussianRBF(n_rbf=20, cutoff=cutoff), cutoff_fn=CosineCutoff(cutoff))
    model = NeuralNetworkPotential(representation=representation, input_modules=[PairwiseDistances()],
                                   output_modules=[Atomwise(n_in=n_atom_basis, output_key="energy")])
    inputs = random_molecules(4, 8, cutoff)
    return dict(model=model, inputs=(inputs,), target=randn(4, seed=3), loss=energy_mse)


# ---------------------------------------------------------------------------------------
# FastViT as Apple's ml-fastvit writes it at train time (models/fastvit.py,
# models/modules/mobileone.py, models/modules/replknet.py; fastvit_sa12's layout, small: layers
# 2, 2, 2, 1, widths 8 to 64, mlp ratio 3, RepMixer stages then an attention stage after a RepCPE;
# drop_path_rate 0.1): FastViT (patch_embed, convolutional_stem's Sequential of three
# MobileOneBlocks; network, a ModuleList of the stages (Sequentials of RepMixerBlocks or
# AttentionBlocks), the PatchEmbeds between them and the RepCPE; conv_exp, a MobileOneBlock with
# SEBlock; gap; view; head). MobileOneBlock at train time: rbr_skip (a BatchNorm2d when the shape
# is kept), rbr_scale (a 1x1 conv-bn Sequential when the kernel is larger), rbr_conv (a ModuleList
# of conv-bn Sequentials); out = scale_out + identity_out, out += each conv branch;
# activation(se(out)), the activation the default nn.GELU() argument, one instance shared by
# every MobileOneBlock that takes it (an Identity with use_act False). SEBlock: avg_pool2d over
# the map, reduce, relu, expand, sigmoid, view, inputs * x. RepMixerBlock: token_mixer (RepMixer:
# x + layer_scale * (mixer(x) - norm(x)), norm a MobileOneBlock of only the identity BN, mixer a
# depthwise MobileOneBlock), x + drop_path(layer_scale * convffn(x)) (ConvFFN: conv, a Sequential
# of a depthwise 7x7 conv and BN; fc1, act GELU, drop, fc2, drop). PatchEmbed: proj, a Sequential
# of ReparamLargeKernelConv (lkb_origin and small_conv conv-bn Sequentials, strided and grouped,
# out += small_conv(x); activation(out) computed and its result dropped, as the reference does,
# again one default nn.GELU() for every instance) and a 1x1 MobileOneBlock. RepCPE: pe, a
# depthwise 7x7 Conv2d, + x. AttentionBlock: x + drop_path(layer_scale_1 * token_mixer(norm(x)))
# (norm BatchNorm2d; MHSA: flatten and transpose, qkv Linear, reshape, permute, unbind, (q *
# scale) @ k^T, softmax, attn_drop, @ v, transpose, reshape, proj, proj_drop, back to a map), x +
# drop_path(layer_scale_2 * convffn(x)). Weights as cls_init_weights and ConvFFN's _init_weights
# set them. Cross entropy.


class SEBlock(nn.Module):
    """Squeeze and Excite module."""

    def __init__(self, in_channels, rd_ratio=0.0625):
        super(SEBlock, self).__init__()
        self.reduce = nn.Conv2d(in_channels=in_channels, out_channels=int(in_channels * rd_ratio), kernel_size=1,
                                stride=1, bias=True)
        self.expand = nn.Conv2d(in_channels=int(in_channels * rd_ratio), out_channels=in_channels, kernel_size=1,
                                stride=1, bias=True)

    def forward(self, inputs):
        """Apply forward pass."""
        b, c, h, w = inputs.size()
        x = F.avg_pool2d(inputs, kernel_size=[h, w])
        x = self.reduce(x)
        x = F.relu(x)
        x = self.expand(x)
        x = torch.sigmoid(x)
        x = x.view(-1, c, 1, 1)
        return inputs * x


class MobileOneBlock(nn.Module):
    """MobileOne building block (the train-time, multi-branched form)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 inference_mode=False, use_se=False, use_act=True, use_scale_branch=True, num_conv_branches=1,
                 activation=nn.GELU()):
        super(MobileOneBlock, self).__init__()
        assert not inference_mode
        self.inference_mode = inference_mode
        self.groups = groups
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.kernel_size = kernel_size
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_conv_branches = num_conv_branches

        # Check if SE-ReLU is requested
        if use_se:
            self.se = SEBlock(out_channels)
        else:
            self.se = nn.Identity()

        if use_act:
            self.activation = activation
        else:
            self.activation = nn.Identity()

        # Re-parameterizable skip connection
        self.rbr_skip = (
            nn.BatchNorm2d(num_features=in_channels)
            if out_channels == in_channels and stride == 1
            else None
        )

        # Re-parameterizable conv branches
        if num_conv_branches > 0:
            rbr_conv = list()
            for _ in range(self.num_conv_branches):
                rbr_conv.append(self._conv_bn(kernel_size=kernel_size, padding=padding))
            self.rbr_conv = nn.ModuleList(rbr_conv)
        else:
            self.rbr_conv = None

        # Re-parameterizable scale branch
        self.rbr_scale = None
        if (kernel_size > 1) and use_scale_branch:
            self.rbr_scale = self._conv_bn(kernel_size=1, padding=0)

    def forward(self, x):
        """Apply forward pass."""
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
        if self.rbr_conv is not None:
            for ix in range(self.num_conv_branches):
                out += self.rbr_conv[ix](x)

        return self.activation(self.se(out))

    def _conv_bn(self, kernel_size, padding):
        """Helper method to construct conv-batchnorm layers."""
        mod_list = nn.Sequential()
        mod_list.add_module(
            "conv",
            nn.Conv2d(in_channels=self.in_channels, out_channels=self.out_channels, kernel_size=kernel_size,
                      stride=self.stride, padding=padding, groups=self.groups, bias=False),
        )
        mod_list.add_module("bn", nn.BatchNorm2d(num_features=self.out_channels))
        return mod_list


class ReparamLargeKernelConv(nn.Module):
    """Building Block of RepLKNet (the train-time form)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, groups, small_kernel, inference_mode=False,
                 activation=nn.GELU()):
        super(ReparamLargeKernelConv, self).__init__()
        assert not inference_mode

        self.stride = stride
        self.groups = groups
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.activation = activation

        self.kernel_size = kernel_size
        self.small_kernel = small_kernel
        self.padding = kernel_size // 2
        self.lkb_origin = self._conv_bn(kernel_size=kernel_size, padding=self.padding)
        if small_kernel is not None:
            assert small_kernel <= kernel_size, "The kernel size for re-param cannot be larger than the large kernel!"
            self.small_conv = self._conv_bn(kernel_size=small_kernel, padding=small_kernel // 2)

    def forward(self, x):
        """Apply forward pass."""
        if hasattr(self, "lkb_reparam"):
            out = self.lkb_reparam(x)
        else:
            out = self.lkb_origin(x)
            if hasattr(self, "small_conv"):
                out += self.small_conv(x)

        self.activation(out)
        return out

    def _conv_bn(self, kernel_size, padding=0):
        """Helper method to construct conv-batchnorm layers."""
        mod_list = nn.Sequential()
        mod_list.add_module(
            "conv",
            nn.Conv2d(in_channels=self.in_channels, out_channels=self.out_channels, kernel_size=kernel_size,
                      stride=self.stride, padding=padding, groups=self.groups, bias=False),
        )
        mod_list.add_module("bn", nn.BatchNorm2d(num_features=self.out_channels))
        return mod_list


def convolutional_stem(in_channels, out_channels, inference_mode=False):
    """Build convolutional stem with MobileOne blocks."""
    return nn.Sequential(
        MobileOneBlock(in_channels=in_channels, out_channels=out_channels, kernel_size=3, stride=2, padding=1,
                       groups=1, inference_mode=inference_mode, use_se=False, num_conv_branches=1),
        MobileOneBlock(in_channels=out_channels, out_channels=out_channels, kernel_size=3, stride=2, padding=1,
                       groups=out_channels, inference_mode=inference_mode, use_se=False, num_conv_branches=1),
        MobileOneBlock(in_channels=out_channels, out_channels=out_channels, kernel_size=1, stride=1, padding=0,
                       groups=1, inference_mode=inference_mode, use_se=False, num_conv_branches=1),
    )


class MHSA(nn.Module):
    """Multi-headed Self Attention module."""

    def __init__(self, dim, head_dim=32, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        assert dim % head_dim == 0, "dim should be divisible by head_dim"
        self.head_dim = head_dim
        self.num_heads = dim // head_dim
        self.scale = head_dim ** -0.5

        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        shape = x.shape
        B, C, H, W = shape
        N = H * W
        if len(shape) == 4:
            x = torch.flatten(x, start_dim=2).transpose(-2, -1)  # (B, N, C)
        qkv = (
            self.qkv(x)
            .reshape(B, N, 3, self.num_heads, self.head_dim)
            .permute(2, 0, 3, 1, 4)
        )
        q, k, v = qkv.unbind(0)  # make torchscript happy (cannot use tensor as tuple)

        # trick here to make q@k.t more stable
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)

        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        if len(shape) == 4:
            x = x.transpose(-2, -1).reshape(B, C, H, W)

        return x


class PatchEmbed(nn.Module):
    """Convolutional patch embedding layer."""

    def __init__(self, patch_size, stride, in_channels, embed_dim, inference_mode=False):
        super().__init__()
        block = list()
        block.append(
            ReparamLargeKernelConv(in_channels=in_channels, out_channels=embed_dim, kernel_size=patch_size,
                                   stride=stride, groups=in_channels, small_kernel=3, inference_mode=inference_mode)
        )
        block.append(
            MobileOneBlock(in_channels=embed_dim, out_channels=embed_dim, kernel_size=1, stride=1, padding=0,
                           groups=1, inference_mode=inference_mode, use_se=False, num_conv_branches=1)
        )
        self.proj = nn.Sequential(*block)

    def forward(self, x):
        x = self.proj(x)
        return x


class RepMixer(nn.Module):
    """Reparameterizable token mixer (the train-time form)."""

    def __init__(self, dim, kernel_size=3, use_layer_scale=True, layer_scale_init_value=1e-5, inference_mode=False):
        super().__init__()
        assert not inference_mode
        self.dim = dim
        self.kernel_size = kernel_size
        self.inference_mode = inference_mode

        self.norm = MobileOneBlock(dim, dim, kernel_size, padding=kernel_size // 2, groups=dim, use_act=False,
                                   use_scale_branch=False, num_conv_branches=0)
        self.mixer = MobileOneBlock(dim, dim, kernel_size, padding=kernel_size // 2, groups=dim, use_act=False)
        self.use_layer_scale = use_layer_scale
        if use_layer_scale:
            self.layer_scale = nn.Parameter(layer_scale_init_value * torch.ones((dim, 1, 1)), requires_grad=True)

    def forward(self, x):
        if hasattr(self, "reparam_conv"):
            x = self.reparam_conv(x)
            return x
        else:
            if self.use_layer_scale:
                x = x + self.layer_scale * (self.mixer(x) - self.norm(x))
            else:
                x = x + self.mixer(x) - self.norm(x)
            return x


class ConvFFN(nn.Module):
    """Convolutional FFN Module."""

    def __init__(self, in_channels, hidden_channels=None, out_channels=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_channels = out_channels or in_channels
        hidden_channels = hidden_channels or in_channels
        self.conv = nn.Sequential()
        self.conv.add_module(
            "conv",
            nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=7, padding=3,
                      groups=in_channels, bias=False),
        )
        self.conv.add_module("bn", nn.BatchNorm2d(num_features=out_channels))
        self.fc1 = nn.Conv2d(in_channels, hidden_channels, kernel_size=1)
        self.act = act_layer()
        self.fc2 = nn.Conv2d(hidden_channels, out_channels, kernel_size=1)
        self.drop = nn.Dropout(drop)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Conv2d):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.conv(x)
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x


class RepCPE(nn.Module):
    """Implementation of conditional positional encoding (the train-time form)."""

    def __init__(self, in_channels, embed_dim=768, spatial_shape=(7, 7), inference_mode=False):
        super(RepCPE, self).__init__()
        assert not inference_mode
        if isinstance(spatial_shape, int):
            spatial_shape = tuple([spatial_shape] * 2)

        self.spatial_shape = spatial_shape
        self.embed_dim = embed_dim
        self.in_channels = in_channels
        self.groups = embed_dim

        self.pe = nn.Conv2d(in_channels, embed_dim, spatial_shape, 1, int(spatial_shape[0] // 2), bias=True,
                            groups=embed_dim)

    def forward(self, x):
        if hasattr(self, "reparam_conv"):
            x = self.reparam_conv(x)
            return x
        else:
            x = self.pe(x) + x
            return x


class RepMixerBlock(nn.Module):
    """Implementation of Metaformer block with RepMixer as token mixer."""

    def __init__(self, dim, kernel_size=3, mlp_ratio=4.0, act_layer=nn.GELU, drop=0.0, drop_path=0.0,
                 use_layer_scale=True, layer_scale_init_value=1e-5, inference_mode=False):
        super().__init__()

        self.token_mixer = RepMixer(dim, kernel_size=kernel_size, use_layer_scale=use_layer_scale,
                                    layer_scale_init_value=layer_scale_init_value, inference_mode=inference_mode)

        assert mlp_ratio > 0, "MLP ratio should be greater than 0, found: {}".format(mlp_ratio)
        mlp_hidden_dim = int(dim * mlp_ratio)
        self.convffn = ConvFFN(in_channels=dim, hidden_channels=mlp_hidden_dim, act_layer=act_layer, drop=drop)

        # Drop Path
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

        # Layer Scale
        self.use_layer_scale = use_layer_scale
        if use_layer_scale:
            self.layer_scale = nn.Parameter(layer_scale_init_value * torch.ones((dim, 1, 1)), requires_grad=True)

    def forward(self, x):
        if self.use_layer_scale:
            x = self.token_mixer(x)
            x = x + self.drop_path(self.layer_scale * self.convffn(x))
        else:
            x = self.token_mixer(x)
            x = x + self.drop_path(self.convffn(x))
        return x


class AttentionBlock(nn.Module):
    """Implementation of metaformer block with MHSA as token mixer."""

    def __init__(self, dim, mlp_ratio=4.0, act_layer=nn.GELU, norm_layer=nn.BatchNorm2d, drop=0.0, drop_path=0.0,
                 use_layer_scale=True, layer_scale_init_value=1e-5):
        super().__init__()

        self.norm = norm_layer(dim)
        self.token_mixer = MHSA(dim=dim)

        assert mlp_ratio > 0, "MLP ratio should be greater than 0, found: {}".format(mlp_ratio)
        mlp_hidden_dim = int(dim * mlp_ratio)
        self.convffn = ConvFFN(in_channels=dim, hidden_channels=mlp_hidden_dim, act_layer=act_layer, drop=drop)

        # Drop path
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

        # Layer Scale
        self.use_layer_scale = use_layer_scale
        if use_layer_scale:
            self.layer_scale_1 = nn.Parameter(layer_scale_init_value * torch.ones((dim, 1, 1)), requires_grad=True)
            self.layer_scale_2 = nn.Parameter(layer_scale_init_value * torch.ones((dim, 1, 1)), requires_grad=True)

    def forward(self, x):
        if self.use_layer_scale:
            x = x + self.drop_path(self.layer_scale_1 * self.token_mixer(self.norm(x)))
            x = x + self.drop_path(self.layer_scale_2 * self.convffn(x))
        else:
            x = x + self.drop_path(self.token_mixer(self.norm(x)))
            x = x + self.drop_path(self.convffn(x))
        return x


def basic_blocks(dim, block_index, num_blocks, token_mixer_type, kernel_size=3, mlp_ratio=4.0, act_layer=nn.GELU,
                 norm_layer=nn.BatchNorm2d, drop_rate=0.0, drop_path_rate=0.0, use_layer_scale=True,
                 layer_scale_init_value=1e-5, inference_mode=False):
    """Build FastViT blocks within a stage."""
    blocks = []
    for block_idx in range(num_blocks[block_index]):
        block_dpr = drop_path_rate * (block_idx + sum(num_blocks[:block_index])) / (sum(num_blocks) - 1)
        if token_mixer_type == "repmixer":
            blocks.append(
                RepMixerBlock(dim, kernel_size=kernel_size, mlp_ratio=mlp_ratio, act_layer=act_layer, drop=drop_rate,
                              drop_path=block_dpr, use_layer_scale=use_layer_scale,
                              layer_scale_init_value=layer_scale_init_value, inference_mode=inference_mode)
            )
        elif token_mixer_type == "attention":
            blocks.append(
                AttentionBlock(dim, mlp_ratio=mlp_ratio, act_layer=act_layer, norm_layer=norm_layer, drop=drop_rate,
                               drop_path=block_dpr, use_layer_scale=use_layer_scale,
                               layer_scale_init_value=layer_scale_init_value)
            )
        else:
            raise ValueError("Token mixer type: {} not supported".format(token_mixer_type))
    blocks = nn.Sequential(*blocks)

    return blocks


class FastViT(nn.Module):
    """This class implements `FastViT architecture <https://arxiv.org/pdf/2303.14189.pdf>`_"""

    def __init__(self, layers, token_mixers, embed_dims=None, mlp_ratios=None, downsamples=None,
                 repmixer_kernel_size=3, norm_layer=nn.BatchNorm2d, act_layer=nn.GELU, num_classes=1000,
                 pos_embs=None, down_patch_size=7, down_stride=2, drop_rate=0.0, drop_path_rate=0.0,
                 use_layer_scale=True, layer_scale_init_value=1e-5, fork_feat=False, init_cfg=None, pretrained=None,
                 cls_ratio=2.0, inference_mode=False, **kwargs):

        super().__init__()
        assert not fork_feat

        self.num_classes = num_classes
        self.fork_feat = fork_feat

        if pos_embs is None:
            pos_embs = [None] * len(layers)

        # Convolutional stem
        self.patch_embed = convolutional_stem(3, embed_dims[0], inference_mode)

        # Build the main stages of the network architecture
        network = []
        for i in range(len(layers)):
            # Add position embeddings if requested
            if pos_embs[i] is not None:
                network.append(pos_embs[i](embed_dims[i], embed_dims[i], inference_mode=inference_mode))
            stage = basic_blocks(embed_dims[i], i, layers, token_mixer_type=token_mixers[i],
                                 kernel_size=repmixer_kernel_size, mlp_ratio=mlp_ratios[i], act_layer=act_layer,
                                 norm_layer=norm_layer, drop_rate=drop_rate, drop_path_rate=drop_path_rate,
                                 use_layer_scale=use_layer_scale, layer_scale_init_value=layer_scale_init_value,
                                 inference_mode=inference_mode)
            network.append(stage)
            if i >= len(layers) - 1:
                break

            # Patch merging/downsampling between stages.
            if downsamples[i] or embed_dims[i] != embed_dims[i + 1]:
                network.append(
                    PatchEmbed(patch_size=down_patch_size, stride=down_stride, in_channels=embed_dims[i],
                               embed_dim=embed_dims[i + 1], inference_mode=inference_mode)
                )

        self.network = nn.ModuleList(network)

        # Classifier head
        self.gap = nn.AdaptiveAvgPool2d(output_size=1)
        self.conv_exp = MobileOneBlock(in_channels=embed_dims[-1], out_channels=int(embed_dims[-1] * cls_ratio),
                                       kernel_size=3, stride=1, padding=1, groups=embed_dims[-1],
                                       inference_mode=inference_mode, use_se=True, num_conv_branches=1)
        self.head = nn.Linear(int(embed_dims[-1] * cls_ratio), num_classes) if num_classes > 0 else nn.Identity()

        self.apply(self.cls_init_weights)

    def cls_init_weights(self, m):
        """Init. for classification"""
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward_embeddings(self, x):
        x = self.patch_embed(x)
        return x

    def forward_tokens(self, x):
        for idx, block in enumerate(self.network):
            x = block(x)
        # output only the features of last layer for image classification
        return x

    def forward(self, x):
        # input embedding
        x = self.forward_embeddings(x)
        # through backbone
        x = self.forward_tokens(x)
        # for image classification
        x = self.conv_exp(x)
        x = self.gap(x)
        x = x.view(x.size(0), -1)
        cls_out = self.head(x)
        return cls_out


def b_fastvit():
    model = FastViT(layers=[2, 2, 2, 1], token_mixers=("repmixer", "repmixer", "repmixer", "attention"),
                    embed_dims=[8, 16, 32, 64], mlp_ratios=[3, 3, 3, 3], downsamples=[True, True, True, True],
                    pos_embs=[None, None, None, partial(RepCPE, spatial_shape=(7, 7))], num_classes=10,
                    drop_path_rate=0.1)
    return dict(model=model, inputs=(randn(4, 3, 64, 64),), target=randint(10, 4), loss=ce)


# ---------------------------------------------------------------------------------------
# CrossFormer as cheerss's CrossFormer writes it (models/crossformer.py; crossformer-T's cross-scale
# patch sizes 4, 8, 16, 32 and merge sizes 2, 4; embed 32, three stages of depth 2, 2, 1, group
# sizes 4, 2, 2, drop_path_rate 0.1): CrossFormer (patch_embed (the reference's PatchEmbed, named
# CrossFormerPatchEmbed here beside FastViT's: projs, a ModuleList of strided Conv2ds of growing
# kernels, each flattened and transposed, cat on the channels; norm), pos_drop, layers (a ModuleList
# of Stages: blocks, a ModuleList of CrossFormerBlocks alternating SDA and LDA; downsample, a
# PatchMerging: norm, view to a map, reductions (a ModuleList of Conv2ds of kernels 2 and 4, stride
# 2), each flattened and transposed, cat; none in the last stage), norm, avgpool over the tokens,
# flatten, head). CrossFormerBlock: shortcut, norm1, view to (B, H, W, C), the groups by reshape and
# permute (adjacent G x G windows for SDA; every (H / G)-th token for LDA), attn (Attention: qkv,
# reshape, permute, q * scale, q @ k^T, pos (DynamicPosBias, non-residual: pos_proj, pos1, pos2,
# pos3, Sequentials of LayerNorm, ReLU(inplace), Linear) on the biases buffer, indexed by
# relative_position_index, permuted, added; softmax (an nn.Softmax), attn_drop, @ v, transpose,
# reshape, proj, proj_drop), ungrouped; shortcut + drop_path(x); x + drop_path(mlp(norm2(x))) (Mlp,
# tools/record_cpu_variants10.py's, the same Swin-style code: fc1, act GELU, drop, fc2, drop).
# Weights as _init_weights sets them. Cross entropy.


class DynamicPosBias(nn.Module):
    def __init__(self, dim, num_heads, residual):
        super().__init__()
        self.residual = residual
        self.num_heads = num_heads
        self.pos_dim = dim // 4
        self.pos_proj = nn.Linear(2, self.pos_dim)
        self.pos1 = nn.Sequential(
            nn.LayerNorm(self.pos_dim),
            nn.ReLU(inplace=True),
            nn.Linear(self.pos_dim, self.pos_dim),
        )
        self.pos2 = nn.Sequential(
            nn.LayerNorm(self.pos_dim),
            nn.ReLU(inplace=True),
            nn.Linear(self.pos_dim, self.pos_dim)
        )
        self.pos3 = nn.Sequential(
            nn.LayerNorm(self.pos_dim),
            nn.ReLU(inplace=True),
            nn.Linear(self.pos_dim, self.num_heads)
        )

    def forward(self, biases):
        if self.residual:
            pos = self.pos_proj(biases)  # 2Wh-1 * 2Ww-1, heads
            pos = pos + self.pos1(pos)
            pos = pos + self.pos2(pos)
            pos = self.pos3(pos)
        else:
            pos = self.pos3(self.pos2(self.pos1(self.pos_proj(biases))))
        return pos


class Attention(nn.Module):
    r""" Multi-head self attention module with dynamic position bias."""

    def __init__(self, dim, group_size, num_heads, qkv_bias=True, qk_scale=None, attn_drop=0., proj_drop=0.,
                 position_bias=True):

        super().__init__()
        self.dim = dim
        self.group_size = group_size  # Wh, Ww
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = qk_scale or head_dim ** -0.5
        self.position_bias = position_bias

        if position_bias:
            self.pos = DynamicPosBias(self.dim // 4, self.num_heads, residual=False)

            # generate mother-set
            position_bias_h = torch.arange(1 - self.group_size[0], self.group_size[0])
            position_bias_w = torch.arange(1 - self.group_size[1], self.group_size[1])
            biases = torch.stack(torch.meshgrid([position_bias_h, position_bias_w]))  # 2, 2Wh-1, 2W2-1
            biases = biases.flatten(1).transpose(0, 1).float()
            self.register_buffer("biases", biases)

            # get pair-wise relative position index for each token inside the group
            coords_h = torch.arange(self.group_size[0])
            coords_w = torch.arange(self.group_size[1])
            coords = torch.stack(torch.meshgrid([coords_h, coords_w]))  # 2, Wh, Ww
            coords_flatten = torch.flatten(coords, 1)  # 2, Wh*Ww
            relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]  # 2, Wh*Ww, Wh*Ww
            relative_coords = relative_coords.permute(1, 2, 0).contiguous()  # Wh*Ww, Wh*Ww, 2
            relative_coords[:, :, 0] += self.group_size[0] - 1  # shift to start from 0
            relative_coords[:, :, 1] += self.group_size[1] - 1
            relative_coords[:, :, 0] *= 2 * self.group_size[1] - 1
            relative_position_index = relative_coords.sum(-1)  # Wh*Ww, Wh*Ww
            self.register_buffer("relative_position_index", relative_position_index)

        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x, mask=None):
        """
        Args:
            x: input features with shape of (num_groups*B, N, C)
            mask: (0/-inf) mask with shape of (num_groups, Wh*Ww, Wh*Ww) or None
        """
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # make torchscript happy (cannot use tensor as tuple)

        q = q * self.scale
        attn = (q @ k.transpose(-2, -1))

        if self.position_bias:
            pos = self.pos(self.biases)  # 2Wh-1 * 2Ww-1, heads
            # select position bias
            relative_position_bias = pos[self.relative_position_index.view(-1)].view(
                self.group_size[0] * self.group_size[1], self.group_size[0] * self.group_size[1], -1)  # Wh*Ww,Wh*Ww,nH
            relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()  # nH, Wh*Ww, Wh*Ww
            attn = attn + relative_position_bias.unsqueeze(0)

        if mask is not None:
            nW = mask.shape[0]
            attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
            attn = self.softmax(attn)
        else:
            attn = self.softmax(attn)

        attn = self.attn_drop(attn)

        x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class CrossFormerBlock(nn.Module):
    r""" CrossFormer Block."""

    def __init__(self, dim, input_resolution, num_heads, group_size=7, lsda_flag=0, mlp_ratio=4., qkv_bias=True,
                 qk_scale=None, drop=0., attn_drop=0., drop_path=0., act_layer=nn.GELU, norm_layer=nn.LayerNorm,
                 num_patch_size=1):
        super().__init__()
        self.dim = dim
        self.input_resolution = input_resolution
        self.num_heads = num_heads
        self.group_size = group_size
        self.lsda_flag = lsda_flag
        self.mlp_ratio = mlp_ratio
        self.num_patch_size = num_patch_size
        if min(self.input_resolution) <= self.group_size:
            # if group size is larger than input resolution, we don't partition groups
            self.lsda_flag = 0
            self.group_size = min(self.input_resolution)

        self.norm1 = norm_layer(dim)

        self.attn = Attention(
            dim, group_size=to_2tuple(self.group_size), num_heads=num_heads,
            qkv_bias=qkv_bias, qk_scale=qk_scale, attn_drop=attn_drop, proj_drop=drop,
            position_bias=True)

        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()
        self.norm2 = norm_layer(dim)
        mlp_hidden_dim = int(dim * mlp_ratio)
        self.mlp = Mlp(in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop)

        attn_mask = None
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x):
        H, W = self.input_resolution
        B, L, C = x.shape
        assert L == H * W, "input feature has wrong size %d, %d, %d" % (L, H, W)

        shortcut = x
        x = self.norm1(x)
        x = x.view(B, H, W, C)

        # group embeddings
        G = self.group_size
        if self.lsda_flag == 0:  # 0 for SDA
            x = x.reshape(B, H // G, G, W // G, G, C).permute(0, 1, 3, 2, 4, 5)
        else:  # 1 for LDA
            x = x.reshape(B, G, H // G, G, W // G, C).permute(0, 2, 4, 1, 3, 5)
        x = x.reshape(B * H * W // G ** 2, G ** 2, C)

        # multi-head self-attention
        x = self.attn(x, mask=self.attn_mask)  # nW*B, G*G, C

        # ungroup embeddings
        x = x.reshape(B, H // G, W // G, G, G, C)
        if self.lsda_flag == 0:
            x = x.permute(0, 1, 3, 2, 4, 5).reshape(B, H, W, C)
        else:
            x = x.permute(0, 3, 1, 4, 2, 5).reshape(B, H, W, C)
        x = x.view(B, H * W, C)

        # FFN
        x = shortcut + self.drop_path(x)
        x = x + self.drop_path(self.mlp(self.norm2(x)))

        return x


class PatchMerging(nn.Module):
    r""" Patch Merging Layer."""

    def __init__(self, input_resolution, dim, norm_layer=nn.LayerNorm, patch_size=[2], num_input_patch_size=1):
        super().__init__()
        self.input_resolution = input_resolution
        self.dim = dim
        self.reductions = nn.ModuleList()
        self.patch_size = patch_size
        self.norm = norm_layer(dim)

        for i, ps in enumerate(patch_size):
            if i == len(patch_size) - 1:
                out_dim = 2 * dim // 2 ** i
            else:
                out_dim = 2 * dim // 2 ** (i + 1)
            stride = 2
            padding = (ps - stride) // 2
            self.reductions.append(nn.Conv2d(dim, out_dim, kernel_size=ps, stride=stride, padding=padding))

    def forward(self, x):
        """
        x: B, H*W, C
        """
        H, W = self.input_resolution
        B, L, C = x.shape
        assert L == H * W, "input feature has wrong size"
        assert H % 2 == 0 and W % 2 == 0, f"x size ({H}*{W}) are not even."

        x = self.norm(x)
        x = x.view(B, H, W, C).permute(0, 3, 1, 2)

        xs = []
        for i in range(len(self.reductions)):
            tmp_x = self.reductions[i](x).flatten(2).transpose(1, 2)
            xs.append(tmp_x)
        x = torch.cat(xs, dim=2)
        return x


class Stage(nn.Module):
    """ CrossFormer blocks for one stage."""

    def __init__(self, dim, input_resolution, depth, num_heads, group_size, mlp_ratio=4., qkv_bias=True,
                 qk_scale=None, drop=0., attn_drop=0., drop_path=0., norm_layer=nn.LayerNorm, downsample=None,
                 use_checkpoint=False, patch_size_end=[4], num_patch_size=None):

        super().__init__()
        self.dim = dim
        self.input_resolution = input_resolution
        self.depth = depth
        self.use_checkpoint = use_checkpoint
        assert not use_checkpoint

        # build blocks
        self.blocks = nn.ModuleList()
        for i in range(depth):
            lsda_flag = 0 if (i % 2 == 0) else 1
            self.blocks.append(CrossFormerBlock(dim=dim, input_resolution=input_resolution,
                                                num_heads=num_heads, group_size=group_size,
                                                lsda_flag=lsda_flag,
                                                mlp_ratio=mlp_ratio,
                                                qkv_bias=qkv_bias, qk_scale=qk_scale,
                                                drop=drop, attn_drop=attn_drop,
                                                drop_path=drop_path[i] if isinstance(drop_path, list) else drop_path,
                                                norm_layer=norm_layer,
                                                num_patch_size=num_patch_size))

        # patch merging layer
        if downsample is not None:
            self.downsample = downsample(input_resolution, dim=dim, norm_layer=norm_layer,
                                         patch_size=patch_size_end, num_input_patch_size=num_patch_size)
        else:
            self.downsample = None

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        if self.downsample is not None:
            x = self.downsample(x)
        return x


class CrossFormerPatchEmbed(nn.Module):
    r""" Image to Patch Embedding (the reference's PatchEmbed)."""

    def __init__(self, img_size=224, patch_size=[4], in_chans=3, embed_dim=96, norm_layer=None):
        super().__init__()
        img_size = to_2tuple(img_size)
        # patch_size = to_2tuple(patch_size)
        patches_resolution = [img_size[0] // patch_size[0], img_size[0] // patch_size[0]]
        self.img_size = img_size
        self.patch_size = patch_size
        self.patches_resolution = patches_resolution
        self.num_patches = patches_resolution[0] * patches_resolution[1]

        self.in_chans = in_chans
        self.embed_dim = embed_dim

        self.projs = nn.ModuleList()
        for i, ps in enumerate(patch_size):
            if i == len(patch_size) - 1:
                dim = embed_dim // 2 ** i
            else:
                dim = embed_dim // 2 ** (i + 1)
            stride = patch_size[0]
            padding = (ps - patch_size[0]) // 2
            self.projs.append(nn.Conv2d(in_chans, dim, kernel_size=ps, stride=stride, padding=padding))
        if norm_layer is not None:
            self.norm = norm_layer(embed_dim)
        else:
            self.norm = None

    def forward(self, x):
        B, C, H, W = x.shape
        # FIXME look at relaxing size constraints
        assert H == self.img_size[0] and W == self.img_size[1], \
            f"Input image size ({H}*{W}) doesn't match model ({self.img_size[0]}*{self.img_size[1]})."
        xs = []
        for i in range(len(self.projs)):
            tx = self.projs[i](x).flatten(2).transpose(1, 2)
            xs.append(tx)  # B Ph*Pw C
        x = torch.cat(xs, dim=2)
        if self.norm is not None:
            x = self.norm(x)
        return x


class CrossFormer(nn.Module):
    r""" CrossFormer: A Versatile Vision Transformer Based on Cross-scale Attention."""

    def __init__(self, img_size=224, patch_size=[4], in_chans=3, num_classes=1000, embed_dim=96, depths=[2, 2, 6, 2],
                 num_heads=[3, 6, 12, 24], group_size=7, mlp_ratio=4., qkv_bias=True, qk_scale=None, drop_rate=0.,
                 attn_drop_rate=0., drop_path_rate=0.1, norm_layer=nn.LayerNorm, ape=False, patch_norm=True,
                 use_checkpoint=False, merge_size=[[2], [2], [2]], **kwargs):
        super().__init__()
        assert not ape

        self.num_classes = num_classes
        self.num_layers = len(depths)
        self.embed_dim = embed_dim
        self.ape = ape
        self.patch_norm = patch_norm
        self.num_features = int(embed_dim * 2 ** (self.num_layers - 1))
        self.mlp_ratio = mlp_ratio

        # split image into non-overlapping patches
        self.patch_embed = CrossFormerPatchEmbed(
            img_size=img_size, patch_size=patch_size, in_chans=in_chans, embed_dim=embed_dim,
            norm_layer=norm_layer if self.patch_norm else None)
        patches_resolution = self.patch_embed.patches_resolution
        self.patches_resolution = patches_resolution

        self.pos_drop = nn.Dropout(p=drop_rate)

        # stochastic depth
        dpr = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]  # stochastic depth decay rule

        # build layers
        self.layers = nn.ModuleList()

        num_patch_sizes = [len(patch_size)] + [len(m) for m in merge_size]
        for i_layer in range(self.num_layers):
            patch_size_end = merge_size[i_layer] if i_layer < self.num_layers - 1 else None
            num_patch_size = num_patch_sizes[i_layer]
            layer = Stage(dim=int(embed_dim * 2 ** i_layer),
                          input_resolution=(patches_resolution[0] // (2 ** i_layer),
                                            patches_resolution[1] // (2 ** i_layer)),
                          depth=depths[i_layer],
                          num_heads=num_heads[i_layer],
                          group_size=group_size[i_layer],
                          mlp_ratio=self.mlp_ratio,
                          qkv_bias=qkv_bias, qk_scale=qk_scale,
                          drop=drop_rate, attn_drop=attn_drop_rate,
                          drop_path=dpr[sum(depths[:i_layer]):sum(depths[:i_layer + 1])],
                          norm_layer=norm_layer,
                          downsample=PatchMerging if (i_layer < self.num_layers - 1) else None,
                          use_checkpoint=use_checkpoint,
                          patch_size_end=patch_size_end,
                          num_patch_size=num_patch_size)
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
        x = self.patch_embed(x)
        x = self.pos_drop(x)

        for layer in self.layers:
            x = layer(x)

        x = self.norm(x)  # B L C
        x = self.avgpool(x.transpose(1, 2))  # B C 1
        x = torch.flatten(x, 1)
        return x

    def forward(self, x):
        x = self.forward_features(x)
        x = self.head(x)
        return x


def b_crossformer():
    model = CrossFormer(img_size=32, patch_size=[4, 8, 16, 32], num_classes=10, embed_dim=32, depths=[2, 2, 1],
                        num_heads=[2, 4, 8], group_size=[4, 2, 2], mlp_ratio=4., drop_path_rate=0.1,
                        merge_size=[[2, 4], [2, 4]])
    return dict(model=model, inputs=(randn(4, 3, 32, 32),), target=randint(10, 4), loss=ce)


# ---------------------------------------------------------------------------------------
# Marian as Hugging Face transformers writes it (models/marian/modeling_marian.py; an opus-mt
# style config: swish, scale_embedding, the shared embedding tied to lm_head, dropout 0.1;
# 2 encoder and 2 decoder layers of width 32): MarianMTModel (model, lm_head; labels given, so
# the decoder inputs are shift_tokens_right(labels) in forward; lm_logits = lm_head(...) +
# final_logits_bias). MarianModel: shared, an Embedding that the encoder and the decoder register
# as embed_tokens; encoder (MarianEncoder: embed_tokens * embed_scale, embed_positions
# (MarianSinusoidalPositionalEmbedding: an nn.Embedding whose weight is the fixed sinusoid
# table, no gradient, its forward under no_grad on arange positions), the sum, functional dropout,
# _expand_mask of the source mask, layers each after the layerdrop draw torch.rand([])), decoder
# (MarianDecoder: the same embedding, _make_causal_mask, _expand_mask of the source mask for the
# cross attention, positions, dropout, layers). MarianEncoderLayer (post-norm): self_attn, dropout,
# residual + it, self_attn_layer_norm; fc1, activation_fn (SiLUActivation), activation_dropout,
# fc2, dropout, residual + it, final_layer_norm. MarianDecoderLayer: self_attn (causal),
# dropout, residual sum, self_attn_layer_norm; encoder_attn on the encoder states, dropout,
# residual sum, encoder_attn_layer_norm; the feed-forward as the encoder's, final_layer_norm.
# MarianAttention (BART's: tools/record_cpu_fresh.py's WhisperAttention with a biased k_proj,
# under Marian's name): q_proj times scaling, k_proj and v_proj shaped per head, bmm, + mask,
# softmax, functional dropout, bmm, reshape, out_proj. Weights as _init_weights sets them (the
# sinusoid left). Cross entropy over the decoder's logits.


@dataclasses.dataclass
class MarianConfig:
    vocab_size: int = 58101
    max_position_embeddings: int = 1024
    encoder_layers: int = 12
    encoder_ffn_dim: int = 4096
    encoder_attention_heads: int = 16
    decoder_layers: int = 12
    decoder_ffn_dim: int = 4096
    decoder_attention_heads: int = 16
    encoder_layerdrop: float = 0.0
    decoder_layerdrop: float = 0.0
    d_model: int = 1024
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    init_std: float = 0.02
    decoder_start_token_id: int = 58100
    scale_embedding: bool = False
    pad_token_id: int = 58100


class SiLUActivation(nn.Module):
    """transformers.activations.SiLUActivation (ACT2FN["swish"])."""

    def forward(self, input):
        return F.silu(input)


def shift_tokens_right(input_ids, pad_token_id, decoder_start_token_id):
    """Shift input ids one token to the right."""
    shifted_input_ids = input_ids.new_zeros(input_ids.shape)
    shifted_input_ids[:, 1:] = input_ids[:, :-1].clone()
    shifted_input_ids[:, 0] = decoder_start_token_id

    if pad_token_id is None:
        raise ValueError("self.model.config.pad_token_id has to be defined.")
    # replace possible -100 values in labels by `pad_token_id`
    shifted_input_ids.masked_fill_(shifted_input_ids == -100, pad_token_id)

    return shifted_input_ids


def _make_causal_mask(input_ids_shape, dtype, device, past_key_values_length=0):
    """Make causal mask used for bi-directional self-attention."""
    bsz, tgt_len = input_ids_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min, device=device)
    mask_cond = torch.arange(mask.size(-1), device=device)
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)

    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype, device=device), mask], dim=-1)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)


def _expand_mask(mask, dtype, tgt_len=None):
    """Expands attention_mask from `[bsz, seq_len]` to `[bsz, 1, tgt_seq_len, src_seq_len]`."""
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len

    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)

    inverted_mask = 1.0 - expanded_mask

    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


class MarianSinusoidalPositionalEmbedding(nn.Embedding):
    """This module produces sinusoidal positional embeddings of any length."""

    def __init__(self, num_positions, embedding_dim, padding_idx=None):
        super().__init__(num_positions, embedding_dim)
        self.weight = self._init_weight(self.weight)

    @staticmethod
    def _init_weight(out):
        """
        Identical to the XLM create_sinusoidal_embeddings except features are not interleaved. The cos features are in
        the 2nd half of the vector. [dim // 2:]
        """
        n_pos, dim = out.shape
        position_enc = np.array(
            [[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)]
        )
        out.requires_grad = False  # set early to avoid an error in pytorch-1.8+
        sentinel = dim // 2 if dim % 2 == 0 else (dim // 2) + 1
        out[:, 0:sentinel] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
        out[:, sentinel:] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
        out.detach_()
        return out

    @torch.no_grad()
    def forward(self, input_ids_shape, past_key_values_length=0):
        """`input_ids_shape` is expected to be [bsz x seqlen]."""
        bsz, seq_len = input_ids_shape[:2]
        positions = torch.arange(
            past_key_values_length, past_key_values_length + seq_len, dtype=torch.long, device=self.weight.device
        )
        return super().forward(positions)


class MarianAttention(WhisperAttention):
    """Copied from transformers.models.bart.modeling_bart.BartAttention with Bart->Marian."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, is_decoder=False, bias=True):
        super().__init__(embed_dim, num_heads, dropout=dropout, is_decoder=is_decoder, bias=bias, k_bias=bias)


class MarianEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config.d_model
        self.self_attn = MarianAttention(
            embed_dim=self.embed_dim,
            num_heads=config.encoder_attention_heads,
            dropout=config.attention_dropout,
        )
        self.self_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.dropout = config.dropout
        self.activation_fn = SiLUActivation()  # ACT2FN[config.activation_function], "swish"
        self.activation_dropout = config.activation_dropout
        self.fc1 = nn.Linear(self.embed_dim, config.encoder_ffn_dim)
        self.fc2 = nn.Linear(config.encoder_ffn_dim, self.embed_dim)
        self.final_layer_norm = nn.LayerNorm(self.embed_dim)

    def forward(self, hidden_states, attention_mask, layer_head_mask=None, output_attentions=False):
        residual = hidden_states
        hidden_states = self.self_attn(hidden_states=hidden_states, attention_mask=attention_mask)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)

        residual = hidden_states
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = nn.functional.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.final_layer_norm(hidden_states)

        if hidden_states.dtype == torch.float16 and (
            torch.isinf(hidden_states).any() or torch.isnan(hidden_states).any()
        ):
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)

        outputs = (hidden_states,)
        return outputs


class MarianDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config.d_model

        self.self_attn = MarianAttention(
            embed_dim=self.embed_dim,
            num_heads=config.decoder_attention_heads,
            dropout=config.attention_dropout,
            is_decoder=True,
        )
        self.dropout = config.dropout
        self.activation_fn = SiLUActivation()  # ACT2FN[config.activation_function], "swish"
        self.activation_dropout = config.activation_dropout

        self.self_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.encoder_attn = MarianAttention(
            self.embed_dim,
            config.decoder_attention_heads,
            dropout=config.attention_dropout,
            is_decoder=True,
        )
        self.encoder_attn_layer_norm = nn.LayerNorm(self.embed_dim)
        self.fc1 = nn.Linear(self.embed_dim, config.decoder_ffn_dim)
        self.fc2 = nn.Linear(config.decoder_ffn_dim, self.embed_dim)
        self.final_layer_norm = nn.LayerNorm(self.embed_dim)

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None):
        residual = hidden_states

        # Self Attention
        hidden_states = self.self_attn(hidden_states=hidden_states, attention_mask=attention_mask)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)

        # Cross-Attention Block
        if encoder_hidden_states is not None:
            residual = hidden_states

            hidden_states = self.encoder_attn(
                hidden_states=hidden_states,
                key_value_states=encoder_hidden_states,
                attention_mask=encoder_attention_mask,
            )
            hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
            hidden_states = residual + hidden_states
            hidden_states = self.encoder_attn_layer_norm(hidden_states)

        # Fully Connected
        residual = hidden_states
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = nn.functional.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.final_layer_norm(hidden_states)

        outputs = (hidden_states,)
        return outputs


class MarianEncoder(nn.Module):
    def __init__(self, config, embed_tokens=None):
        super().__init__()

        self.dropout = config.dropout
        self.layerdrop = config.encoder_layerdrop

        embed_dim = config.d_model
        self.padding_idx = config.pad_token_id
        self.max_source_positions = config.max_position_embeddings
        self.embed_scale = math.sqrt(embed_dim) if config.scale_embedding else 1.0

        if embed_tokens is not None:
            self.embed_tokens = embed_tokens
        else:
            self.embed_tokens = nn.Embedding(config.vocab_size, embed_dim, self.padding_idx)

        self.embed_positions = MarianSinusoidalPositionalEmbedding(
            config.max_position_embeddings, embed_dim, self.padding_idx
        )
        self.layers = nn.ModuleList([MarianEncoderLayer(config) for _ in range(config.encoder_layers)])

    def forward(self, input_ids=None, attention_mask=None):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])

        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale

        embed_pos = self.embed_positions(input_shape)

        hidden_states = inputs_embeds + embed_pos
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)

        # expand attention_mask
        if attention_mask is not None:
            # [bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]
            attention_mask = _expand_mask(attention_mask, inputs_embeds.dtype)

        for idx, encoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://arxiv.org/abs/1909.11556 for description)
            to_drop = False
            if self.training:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:  # skip the layer
                    to_drop = True

            if to_drop:
                layer_outputs = (None, None)
            else:
                layer_outputs = encoder_layer(hidden_states, attention_mask)

                hidden_states = layer_outputs[0]

        return (hidden_states,)


class MarianDecoder(nn.Module):
    def __init__(self, config, embed_tokens=None):
        super().__init__()
        self.dropout = config.dropout
        self.layerdrop = config.decoder_layerdrop
        self.padding_idx = config.pad_token_id
        self.max_target_positions = config.max_position_embeddings
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0

        if embed_tokens is not None:
            self.embed_tokens = embed_tokens
        else:
            self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model, self.padding_idx)

        self.embed_positions = MarianSinusoidalPositionalEmbedding(
            config.max_position_embeddings, config.d_model, self.padding_idx
        )
        self.layers = nn.ModuleList([MarianDecoderLayer(config) for _ in range(config.decoder_layers)])

    def _prepare_decoder_attention_mask(self, attention_mask, input_shape, inputs_embeds, past_key_values_length):
        # create causal mask
        # [bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]
        combined_attention_mask = None
        if input_shape[-1] > 1:
            combined_attention_mask = _make_causal_mask(
                input_shape,
                inputs_embeds.dtype,
                device=inputs_embeds.device,
                past_key_values_length=past_key_values_length,
            )

        if attention_mask is not None:
            # [bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]
            expanded_attn_mask = _expand_mask(attention_mask, inputs_embeds.dtype, tgt_len=input_shape[-1]).to(
                inputs_embeds.device
            )
            combined_attention_mask = (
                expanded_attn_mask if combined_attention_mask is None else expanded_attn_mask + combined_attention_mask
            )

        return combined_attention_mask

    def forward(self, input_ids=None, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])

        # past_key_values_length
        past_key_values_length = 0

        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale

        attention_mask = self._prepare_decoder_attention_mask(
            attention_mask, input_shape, inputs_embeds, past_key_values_length
        )

        # expand encoder attention mask
        if encoder_hidden_states is not None and encoder_attention_mask is not None:
            # [bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]
            encoder_attention_mask = _expand_mask(encoder_attention_mask, inputs_embeds.dtype, tgt_len=input_shape[-1])

        # embed positions
        positions = self.embed_positions(input_shape, past_key_values_length)

        hidden_states = inputs_embeds + positions

        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)

        for idx, decoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://arxiv.org/abs/1909.11556 for description)
            if self.training:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    continue

            layer_outputs = decoder_layer(
                hidden_states,
                attention_mask=attention_mask,
                encoder_hidden_states=encoder_hidden_states,
                encoder_attention_mask=encoder_attention_mask,
            )
            hidden_states = layer_outputs[0]

        return (hidden_states,)


class MarianModel(nn.Module):
    def __init__(self, config):
        super().__init__()

        padding_idx, vocab_size = config.pad_token_id, config.vocab_size

        # We always use self.shared for token embeddings to ensure compatibility with all marian models
        self.shared = nn.Embedding(vocab_size, config.d_model, padding_idx)
        encoder_embed_tokens = decoder_embed_tokens = self.shared  # share_encoder_decoder_embeddings

        self.encoder = MarianEncoder(config, encoder_embed_tokens)
        self.decoder = MarianDecoder(config, decoder_embed_tokens)

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None, decoder_attention_mask=None):
        encoder_outputs = self.encoder(input_ids=input_ids, attention_mask=attention_mask)

        # decoder outputs consists of (dec_features, past_key_value, dec_hidden, dec_attn)
        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            encoder_hidden_states=encoder_outputs[0],
            encoder_attention_mask=attention_mask,
        )

        return decoder_outputs + encoder_outputs


class MarianMTModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = MarianModel(config)

        target_vocab_size = config.vocab_size
        self.register_buffer("final_logits_bias", torch.zeros((1, target_vocab_size)))
        self.lm_head = nn.Linear(config.d_model, target_vocab_size, bias=False)

        self.apply(self._init_weights)  # post_init
        self.lm_head.weight = self.model.shared.weight  # tie_weights

    def _init_weights(self, module):
        std = self.config.init_std
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, MarianSinusoidalPositionalEmbedding):
            pass
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()

    def forward(self, input_ids=None, attention_mask=None, labels=None, decoder_input_ids=None):
        if labels is not None:
            if decoder_input_ids is None:
                decoder_input_ids = shift_tokens_right(
                    labels, self.config.pad_token_id, self.config.decoder_start_token_id
                )

        outputs = self.model(input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)
        lm_logits = self.lm_head(outputs[0]) + self.final_logits_bias
        return lm_logits


def marian_lm_ce(lm_logits, labels):
    """MarianMTModel's masked_lm_loss: CrossEntropyLoss over the decoder's logits and the labels."""
    loss_fct = nn.CrossEntropyLoss()
    return loss_fct(lm_logits.view(-1, lm_logits.shape[-1]), labels.view(-1))


def b_marian():
    vocab, batch, src_len, tgt_len = 200, 4, 12, 10
    pad = vocab - 1
    config = MarianConfig(vocab_size=vocab, max_position_embeddings=64, encoder_layers=2, encoder_ffn_dim=64,
                          encoder_attention_heads=4, decoder_layers=2, decoder_ffn_dim=64, decoder_attention_heads=4,
                          d_model=32, scale_embedding=True, decoder_start_token_id=pad, pad_token_id=pad)
    src_lengths = torch.tensor([12, 10, 9, 12])
    attention_mask = (torch.arange(src_len)[None, :] < src_lengths[:, None]).long()
    input_ids = torch.where(attention_mask.bool(), randint(pad - 1, batch, src_len, seed=3) + 1, pad)
    labels = randint(pad - 1, batch, tgt_len, seed=4) + 1
    return dict(model=MarianMTModel(config), inputs=(input_ids, attention_mask, labels), target=labels,
                loss=marian_lm_ce)


REGISTRY = [
    ("vivit_hf_style", "vit", "adamw", b_vivit),
    ("codegen_like", "llm", "adamw", b_codegen),
    ("progan_generator", "gan", "adam", b_progan),
    ("unet3plus_lite", "unet", "adam", b_unet3plus),
    ("dsin_like", "recsys", "adam", b_dsin),
    ("painn_lite", "gnn", "adam", b_painn),
    ("fastvit_lite", "vit", "adamw", b_fastvit),
    ("crossformer_lite", "vit", "adamw", b_crossformer),
    ("marian_decoder_hf_style", "seq2seq", "adamw", b_marian),
]

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS11 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants11.py",
    os.path.join(DATA, "corpus-cpu-variants11"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-backward", "corpus-cpu-modern", "corpus-cpu-families",
                                      "corpus-cpu-heldout", "corpus-cpu-variants", "corpus-cpu-variants2",
                                      "corpus-cpu-variants3", "corpus-cpu-variants4", "corpus-cpu-variants5",
                                      "corpus-cpu-variants6", "corpus-cpu-variants7", "corpus-cpu-variants8",
                                      "corpus-cpu-variants9", "corpus-cpu-variants10", "corpus-cpu-objectives",
                                      "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS11)
