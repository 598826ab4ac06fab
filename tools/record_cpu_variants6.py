#!/usr/bin/env python3
"""Record Strata's sixth variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on the other variants corpora; this script records
tests/data/corpus-cpu-variants6, recorded after the rules, to measure them once on models they
were not written on, then to be tuned on as the other variants are: pytorch/examples' fast
neural style TransformerNet (reflection-padded ConvLayers, instance norms, five residual
blocks, nearest-upsampling conv layers), transformers' CvT (convolutional token embeddings,
attention whose query, key and value come from depthwise conv and BatchNorm projections, the
MLP's residual sum inside CvtOutput), transformers' mBART (a pre-norm encoder-decoder with
q/k/v/out projections, cross-attention and learned positions), NARM for session-based
recommendation (a GRU, an additive attention over its outputs, a bilinear decoder against the
item embeddings), chemprop's directed MPNN (one W_h called at every message-passing step over
bond messages, the reverse bond's message subtracted, a mean readout per molecule, an FFN),
Newell's stacked hourglass as pytorch-pose writes it (pre-activation bottlenecks, a recursive
hourglass of ModuleLists, intermediate heads summed back), a Neural Factorization Machine (Bi-
Interaction pooling written by hand) and rosinality's StyleGAN2 discriminator (equalized-lr
convs and linears, FusedLeakyReLU, blurred downsampling by upfirdn2d's CPU path, a hand-written
minibatch standard deviation).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants6.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants6.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants6.
"""

import math
import os
import random
import sys
from functools import reduce

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import bce, ce, ce_tokens, mse, randint, randn  # noqa: E402
from record_cpu_fresh import WhisperAttention  # noqa: E402
from record_cpu_variants2 import GELUActivation  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# Fast neural style as pytorch/examples writes it (fast_neural_style/transformer_net.py):
# TransformerNet = conv1/in1, conv2/in2, conv3/in3 (ConvLayer: reflection_pad, conv2d), one
# shared ReLU module, res1..res5 (ResidualBlock: conv1, in1, relu, conv2, in2, the residual
# sum), deconv1/in4 and deconv2/in5 (UpsampleConvLayer: F.interpolate nearest, then
# reflection_pad and conv2d), deconv3 a ConvLayer to RGB.


class ConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = nn.InstanceNorm2d(channels, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = F.interpolate(x_in, mode="nearest", scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


class TransformerNet(nn.Module):
    def __init__(self, c=(8, 16, 32)):
        super().__init__()
        self.conv1 = ConvLayer(3, c[0], kernel_size=9, stride=1)
        self.in1 = nn.InstanceNorm2d(c[0], affine=True)
        self.conv2 = ConvLayer(c[0], c[1], kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d(c[1], affine=True)
        self.conv3 = ConvLayer(c[1], c[2], kernel_size=3, stride=2)
        self.in3 = nn.InstanceNorm2d(c[2], affine=True)
        self.res1 = ResidualBlock(c[2])
        self.res2 = ResidualBlock(c[2])
        self.res3 = ResidualBlock(c[2])
        self.res4 = ResidualBlock(c[2])
        self.res5 = ResidualBlock(c[2])
        self.deconv1 = UpsampleConvLayer(c[2], c[1], kernel_size=3, stride=1, upsample=2)
        self.in4 = nn.InstanceNorm2d(c[1], affine=True)
        self.deconv2 = UpsampleConvLayer(c[1], c[0], kernel_size=3, stride=1, upsample=2)
        self.in5 = nn.InstanceNorm2d(c[0], affine=True)
        self.deconv3 = ConvLayer(c[0], 3, kernel_size=9, stride=1)
        self.relu = nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res1(y)
        y = self.res2(y)
        y = self.res3(y)
        y = self.res4(y)
        y = self.res5(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        y = self.deconv3(y)
        return y


def b_fast_style():
    return dict(model=TransformerNet(), inputs=(randn(2, 3, 32, 32),), target=randn(2, 3, 32, 32, seed=3), loss=mse)


# ---------------------------------------------------------------------------------------
# CvT as transformers writes it (CvtForImageClassification): cvt (CvtModel) = encoder
# (CvtEncoder) = stages of CvtStage: embedding (CvtEmbeddings: convolution_embeddings =
# CvtConvEmbeddings, a strided Conv2d projection and a LayerNorm over the flattened tokens;
# dropout), a cls token on the last stage, layers of CvtLayer: layernorm_before, attention
# (CvtAttention: attention = CvtSelfAttention, whose convolution_projection_query/key/value
# are CvtSelfAttentionProjection = convolution_projection (CvtSelfAttentionConvProjection:
# depthwise Conv2d, BatchNorm2d) and linear_projection (the flatten); projection_query/key/
# value Linears; einsum scores, softmax, dropout, einsum context; output = CvtSelfOutput:
# dense, dropout), drop_path (Identity), the residual sum, layernorm_after, intermediate
# (dense, GELU module), output (CvtOutput: dense, dropout, the residual sum inside); then the
# classifier's layernorm on the cls token and its Linear.


class CvtConvEmbeddings(nn.Module):
    def __init__(self, patch_size, num_channels, embed_dim, stride, padding):
        super().__init__()
        self.patch_size = (patch_size, patch_size)
        self.projection = nn.Conv2d(num_channels, embed_dim, kernel_size=patch_size, stride=stride, padding=padding)
        self.normalization = nn.LayerNorm(embed_dim)

    def forward(self, pixel_values):
        pixel_values = self.projection(pixel_values)
        batch_size, num_channels, height, width = pixel_values.shape
        hidden_size = height * width
        pixel_values = pixel_values.view(batch_size, num_channels, hidden_size).permute(0, 2, 1)
        if self.normalization:
            pixel_values = self.normalization(pixel_values)
        pixel_values = pixel_values.permute(0, 2, 1).view(batch_size, num_channels, height, width)
        return pixel_values


class CvtEmbeddings(nn.Module):
    def __init__(self, patch_size, num_channels, embed_dim, stride, padding, dropout_rate):
        super().__init__()
        self.convolution_embeddings = CvtConvEmbeddings(patch_size, num_channels, embed_dim, stride, padding)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, pixel_values):
        hidden_state = self.convolution_embeddings(pixel_values)
        hidden_state = self.dropout(hidden_state)
        return hidden_state


class CvtSelfAttentionConvProjection(nn.Module):
    def __init__(self, embed_dim, kernel_size, padding, stride):
        super().__init__()
        self.convolution = nn.Conv2d(embed_dim, embed_dim, kernel_size=kernel_size, padding=padding, stride=stride,
                                     bias=False, groups=embed_dim)
        self.normalization = nn.BatchNorm2d(embed_dim)

    def forward(self, hidden_state):
        hidden_state = self.convolution(hidden_state)
        hidden_state = self.normalization(hidden_state)
        return hidden_state


class CvtSelfAttentionLinearProjection(nn.Module):
    def forward(self, hidden_state):
        batch_size, num_channels, height, width = hidden_state.shape
        hidden_size = height * width
        hidden_state = hidden_state.view(batch_size, num_channels, hidden_size).permute(0, 2, 1)
        return hidden_state


class CvtSelfAttentionProjection(nn.Module):
    def __init__(self, embed_dim, kernel_size, padding, stride):
        super().__init__()
        self.convolution_projection = CvtSelfAttentionConvProjection(embed_dim, kernel_size, padding, stride)
        self.linear_projection = CvtSelfAttentionLinearProjection()

    def forward(self, hidden_state):
        hidden_state = self.convolution_projection(hidden_state)
        hidden_state = self.linear_projection(hidden_state)
        return hidden_state


class CvtSelfAttention(nn.Module):
    def __init__(self, num_heads, embed_dim, kernel_size=3, padding_q=1, padding_kv=1, stride_q=1, stride_kv=2,
                 qkv_bias=True, attention_drop_rate=0.0, with_cls_token=True):
        super().__init__()
        self.scale = embed_dim**-0.5
        self.with_cls_token = with_cls_token
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.convolution_projection_query = CvtSelfAttentionProjection(embed_dim, kernel_size, padding_q, stride_q)
        self.convolution_projection_key = CvtSelfAttentionProjection(embed_dim, kernel_size, padding_kv, stride_kv)
        self.convolution_projection_value = CvtSelfAttentionProjection(embed_dim, kernel_size, padding_kv, stride_kv)
        self.projection_query = nn.Linear(embed_dim, embed_dim, bias=qkv_bias)
        self.projection_key = nn.Linear(embed_dim, embed_dim, bias=qkv_bias)
        self.projection_value = nn.Linear(embed_dim, embed_dim, bias=qkv_bias)
        self.dropout = nn.Dropout(attention_drop_rate)

    def rearrange_for_multi_head_attention(self, hidden_state):
        batch_size, hidden_size, _ = hidden_state.shape
        head_dim = self.embed_dim // self.num_heads
        return hidden_state.view(batch_size, hidden_size, self.num_heads, head_dim).permute(0, 2, 1, 3)

    def forward(self, hidden_state, height, width):
        if self.with_cls_token:
            cls_token, hidden_state = torch.split(hidden_state, [1, height * width], 1)
        batch_size, hidden_size, num_channels = hidden_state.shape
        hidden_state = hidden_state.permute(0, 2, 1).view(batch_size, num_channels, height, width)

        key = self.convolution_projection_key(hidden_state)
        query = self.convolution_projection_query(hidden_state)
        value = self.convolution_projection_value(hidden_state)

        if self.with_cls_token:
            query = torch.cat((cls_token, query), dim=1)
            key = torch.cat((cls_token, key), dim=1)
            value = torch.cat((cls_token, value), dim=1)

        head_dim = self.embed_dim // self.num_heads
        query = self.rearrange_for_multi_head_attention(self.projection_query(query))
        key = self.rearrange_for_multi_head_attention(self.projection_key(key))
        value = self.rearrange_for_multi_head_attention(self.projection_value(value))

        attention_score = torch.einsum("bhlk,bhtk->bhlt", [query, key]) * self.scale
        attention_probs = F.softmax(attention_score, dim=-1)
        attention_probs = self.dropout(attention_probs)

        context = torch.einsum("bhlt,bhtv->bhlv", [attention_probs, value])
        _, _, hidden_size, _ = context.shape
        context = context.permute(0, 2, 1, 3).contiguous().view(batch_size, hidden_size, self.num_heads * head_dim)
        return context


class CvtSelfOutput(nn.Module):
    def __init__(self, embed_dim, drop_rate):
        super().__init__()
        self.dense = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(drop_rate)

    def forward(self, hidden_state, input_tensor):
        hidden_state = self.dense(hidden_state)
        hidden_state = self.dropout(hidden_state)
        return hidden_state


class CvtAttention(nn.Module):
    def __init__(self, num_heads, embed_dim, drop_rate, with_cls_token):
        super().__init__()
        self.attention = CvtSelfAttention(num_heads, embed_dim, with_cls_token=with_cls_token)
        self.output = CvtSelfOutput(embed_dim, drop_rate)

    def forward(self, hidden_state, height, width):
        self_output = self.attention(hidden_state, height, width)
        attention_output = self.output(self_output, hidden_state)
        return attention_output


class CvtIntermediate(nn.Module):
    def __init__(self, embed_dim, mlp_ratio):
        super().__init__()
        self.dense = nn.Linear(embed_dim, int(embed_dim * mlp_ratio))
        self.activation = nn.GELU()

    def forward(self, hidden_state):
        hidden_state = self.dense(hidden_state)
        hidden_state = self.activation(hidden_state)
        return hidden_state


class CvtOutput(nn.Module):
    def __init__(self, embed_dim, mlp_ratio, drop_rate):
        super().__init__()
        self.dense = nn.Linear(int(embed_dim * mlp_ratio), embed_dim)
        self.dropout = nn.Dropout(drop_rate)

    def forward(self, hidden_state, input_tensor):
        hidden_state = self.dense(hidden_state)
        hidden_state = self.dropout(hidden_state)
        hidden_state = hidden_state + input_tensor
        return hidden_state


class CvtLayer(nn.Module):
    def __init__(self, num_heads, embed_dim, mlp_ratio=4.0, drop_rate=0.0, with_cls_token=False):
        super().__init__()
        self.attention = CvtAttention(num_heads, embed_dim, drop_rate, with_cls_token)
        self.intermediate = CvtIntermediate(embed_dim, mlp_ratio)
        self.output = CvtOutput(embed_dim, mlp_ratio, drop_rate)
        self.drop_path = nn.Identity()  # drop_path_rate 0.0
        self.layernorm_before = nn.LayerNorm(embed_dim)
        self.layernorm_after = nn.LayerNorm(embed_dim)

    def forward(self, hidden_state, height, width):
        self_attention_output = self.attention(self.layernorm_before(hidden_state), height, width)
        attention_output = self_attention_output
        attention_output = self.drop_path(attention_output)
        hidden_state = attention_output + hidden_state
        layer_output = self.layernorm_after(hidden_state)
        layer_output = self.intermediate(layer_output)
        layer_output = self.output(layer_output, hidden_state)
        layer_output = self.drop_path(layer_output)
        return layer_output


class CvtStage(nn.Module):
    def __init__(self, cfg, stage):
        super().__init__()
        self.stage = stage
        self.use_cls_token = cfg["cls_token"][stage]
        if self.use_cls_token:
            self.cls_token = nn.Parameter(torch.randn(1, 1, cfg["embed_dim"][-1]))
        self.embedding = CvtEmbeddings(
            patch_size=cfg["patch_sizes"][stage],
            num_channels=cfg["num_channels"] if stage == 0 else cfg["embed_dim"][stage - 1],
            embed_dim=cfg["embed_dim"][stage],
            stride=cfg["patch_stride"][stage],
            padding=cfg["patch_padding"][stage],
            dropout_rate=0.0,
        )
        self.layers = nn.Sequential(*[CvtLayer(cfg["num_heads"][stage], cfg["embed_dim"][stage],
                                               with_cls_token=self.use_cls_token)
                                      for _ in range(cfg["depth"][stage])])

    def forward(self, hidden_state):
        cls_token = None
        hidden_state = self.embedding(hidden_state)
        batch_size, num_channels, height, width = hidden_state.shape
        hidden_state = hidden_state.view(batch_size, num_channels, height * width).permute(0, 2, 1)
        if self.use_cls_token:
            cls_token = self.cls_token.expand(batch_size, -1, -1)
            hidden_state = torch.cat((cls_token, hidden_state), dim=1)

        for layer in self.layers:
            layer_outputs = layer(hidden_state, height, width)
            hidden_state = layer_outputs

        if self.use_cls_token:
            cls_token, hidden_state = torch.split(hidden_state, [1, height * width], 1)
        hidden_state = hidden_state.permute(0, 2, 1).view(batch_size, num_channels, height, width)
        return hidden_state, cls_token


class CvtEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.stages = nn.ModuleList([CvtStage(cfg, i) for i in range(len(cfg["depth"]))])

    def forward(self, pixel_values):
        hidden_state = pixel_values
        cls_token = None
        for _, stage_module in enumerate(self.stages):
            hidden_state, cls_token = stage_module(hidden_state)
        return hidden_state, cls_token


class CvtModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = CvtEncoder(cfg)

    def forward(self, pixel_values):
        sequence_output, cls_token = self.encoder(pixel_values)
        return sequence_output, cls_token


class CvtForImageClassification(nn.Module):
    def __init__(self, num_labels=10):
        super().__init__()
        cfg = dict(num_channels=3, patch_sizes=(7, 3, 3), patch_stride=(4, 2, 2), patch_padding=(2, 1, 1),
                   embed_dim=(16, 32, 48), num_heads=(1, 2, 3), depth=(1, 1, 2), cls_token=(False, False, True))
        self.cls_token_last = cfg["cls_token"][-1]
        self.cvt = CvtModel(cfg)
        self.layernorm = nn.LayerNorm(cfg["embed_dim"][-1])
        self.classifier = nn.Linear(cfg["embed_dim"][-1], num_labels)

    def forward(self, pixel_values):
        outputs = self.cvt(pixel_values)
        sequence_output = outputs[0]
        cls_token = outputs[1]
        if self.cls_token_last:
            sequence_output = self.layernorm(cls_token)
        else:
            batch_size, num_channels, height, width = sequence_output.shape
            sequence_output = sequence_output.view(batch_size, num_channels, height * width).permute(0, 2, 1)
            sequence_output = self.layernorm(sequence_output)
        sequence_output_mean = sequence_output.mean(dim=1)
        logits = self.classifier(sequence_output_mean)
        return logits


def b_cvt():
    return dict(model=CvtForImageClassification(), inputs=(randn(2, 3, 64, 64),), target=randint(10, 2, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# mBART as transformers writes it (MBartForConditionalGeneration, eager attention): model
# (MBartModel: shared, never called; encoder and decoder each with their own embed_tokens
# sharing its weight, embed_positions = MBartLearnedPositionalEmbedding (an nn.Embedding,
# offset 2), layernorm_embedding, layers, the final layer_norm), lm_head tied to the
# embeddings plus final_logits_bias. MBartAttention: q_proj (times scaling), k_proj, v_proj,
# bmm, the mask, softmax, F.dropout, bmm, out_proj. Decoder layer: self_attn_layer_norm,
# self_attn, F.dropout, the residual sum; encoder_attn_layer_norm, encoder_attn (keys and
# values from the encoder's output), F.dropout, the sum; final_layer_norm, fc1,
# activation_fn (ACT2FN["gelu"], a GELUActivation module), F.dropout, fc2, F.dropout, the sum.
# The layerdrop draw (torch.rand) per layer; weights initialised as _init_weights does.


class MBartLearnedPositionalEmbedding(nn.Embedding):
    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, input_ids, past_key_values_length=0):
        bsz, seq_len = input_ids.shape[:2]
        positions = torch.arange(past_key_values_length, past_key_values_length + seq_len, dtype=torch.long,
                                 device=self.weight.device).expand(bsz, -1)
        return super().forward(positions + self.offset)


class MBartAttention(WhisperAttention):
    """transformers' MBartAttention: Whisper's, op for op (its k_proj keeps its bias), returning
    the attention's output with no weights and no cache."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, is_decoder=False, bias=True):
        super().__init__(embed_dim, num_heads, dropout=dropout, is_decoder=is_decoder, bias=bias, k_bias=bias)

    def forward(self, hidden_states, key_value_states=None, attention_mask=None):
        return super().forward(hidden_states, key_value_states, attention_mask), None, None


class MBartEncoderLayer(nn.Module):
    def __init__(self, d_model, heads, ffn, dropout=0.1, attention_dropout=0.0, activation_dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.self_attn = MBartAttention(d_model, heads, dropout=attention_dropout)
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.dropout = dropout
        self.activation_fn = GELUActivation()
        self.activation_dropout = activation_dropout
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, attn_weights, _ = self.self_attn(hidden_states=hidden_states, attention_mask=attention_mask)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = F.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        return (hidden_states,)


class MBartDecoderLayer(nn.Module):
    def __init__(self, d_model, heads, ffn, dropout=0.1, attention_dropout=0.0, activation_dropout=0.0):
        super().__init__()
        self.embed_dim = d_model
        self.self_attn = MBartAttention(d_model, heads, dropout=attention_dropout, is_decoder=True)
        self.dropout = dropout
        self.activation_fn = GELUActivation()
        self.activation_dropout = activation_dropout
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.encoder_attn = MBartAttention(d_model, heads, dropout=attention_dropout, is_decoder=True)
        self.encoder_attn_layer_norm = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, self_attn_weights, present_key_value = self.self_attn(
            hidden_states=hidden_states, attention_mask=attention_mask)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states

        if encoder_hidden_states is not None:
            residual = hidden_states
            hidden_states = self.encoder_attn_layer_norm(hidden_states)
            hidden_states, cross_attn_weights, cross_attn_present_key_value = self.encoder_attn(
                hidden_states=hidden_states, key_value_states=encoder_hidden_states,
                attention_mask=encoder_attention_mask)
            hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
            hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = F.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        return (hidden_states,)


MBART_CFG = dict(vocab_size=500, d_model=64, heads=4, ffn=128, encoder_layers=2, decoder_layers=2,
                 max_position_embeddings=64, dropout=0.1, layerdrop=0.0, pad_token_id=1)


class MBartEncoder(nn.Module):
    def __init__(self, cfg, embed_tokens=None):
        super().__init__()
        self.dropout = cfg["dropout"]
        self.layerdrop = cfg["layerdrop"]
        self.embed_scale = 1.0  # scale_embedding False
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["d_model"], cfg["pad_token_id"])
        if embed_tokens is not None:
            self.embed_tokens.weight = embed_tokens.weight
        self.embed_positions = MBartLearnedPositionalEmbedding(cfg["max_position_embeddings"], cfg["d_model"])
        self.layers = nn.ModuleList([MBartEncoderLayer(cfg["d_model"], cfg["heads"], cfg["ffn"], cfg["dropout"])
                                     for _ in range(cfg["encoder_layers"])])
        self.layernorm_embedding = nn.LayerNorm(cfg["d_model"])
        self.layer_norm = nn.LayerNorm(cfg["d_model"])

    def forward(self, input_ids):
        input = input_ids
        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale
        embed_pos = self.embed_positions(input)
        hidden_states = inputs_embeds + embed_pos.to(inputs_embeds.device)
        hidden_states = self.layernorm_embedding(hidden_states)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        for encoder_layer in self.layers:
            to_drop = False
            if self.training:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    to_drop = True
            if not to_drop:
                layer_outputs = encoder_layer(hidden_states, None)
                hidden_states = layer_outputs[0]
        hidden_states = self.layer_norm(hidden_states)
        return (hidden_states,)


def _make_causal_mask(input_ids_shape, dtype):
    bsz, tgt_len = input_ids_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min)
    mask_cond = torch.arange(mask.size(-1))
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len)


class MBartDecoder(nn.Module):
    def __init__(self, cfg, embed_tokens=None):
        super().__init__()
        self.dropout = cfg["dropout"]
        self.layerdrop = cfg["layerdrop"]
        self.embed_scale = 1.0
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["d_model"], cfg["pad_token_id"])
        if embed_tokens is not None:
            self.embed_tokens.weight = embed_tokens.weight
        self.embed_positions = MBartLearnedPositionalEmbedding(cfg["max_position_embeddings"], cfg["d_model"])
        self.layers = nn.ModuleList([MBartDecoderLayer(cfg["d_model"], cfg["heads"], cfg["ffn"], cfg["dropout"])
                                     for _ in range(cfg["decoder_layers"])])
        self.layernorm_embedding = nn.LayerNorm(cfg["d_model"])
        self.layer_norm = nn.LayerNorm(cfg["d_model"])

    def forward(self, input_ids, encoder_hidden_states):
        input = input_ids
        input_shape = input.shape
        inputs_embeds = self.embed_tokens(input_ids) * self.embed_scale
        attention_mask = _make_causal_mask(input_shape, inputs_embeds.dtype)
        positions = self.embed_positions(input, 0)
        hidden_states = inputs_embeds + positions.to(inputs_embeds.device)
        hidden_states = self.layernorm_embedding(hidden_states)
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        for decoder_layer in self.layers:
            if self.training:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    continue
            layer_outputs = decoder_layer(hidden_states, attention_mask=attention_mask,
                                          encoder_hidden_states=encoder_hidden_states)
            hidden_states = layer_outputs[0]
        hidden_states = self.layer_norm(hidden_states)
        return (hidden_states,)


class MBartModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.shared = nn.Embedding(cfg["vocab_size"], cfg["d_model"], cfg["pad_token_id"])
        self.encoder = MBartEncoder(cfg, self.shared)
        self.decoder = MBartDecoder(cfg, self.shared)

    def forward(self, input_ids, decoder_input_ids):
        encoder_outputs = self.encoder(input_ids)
        decoder_outputs = self.decoder(decoder_input_ids, encoder_outputs[0])
        return decoder_outputs + encoder_outputs


class MBartForConditionalGeneration(nn.Module):
    def __init__(self, cfg=MBART_CFG):
        super().__init__()
        self.model = MBartModel(cfg)
        self.register_buffer("final_logits_bias", torch.zeros((1, self.model.shared.num_embeddings)))
        self.lm_head = nn.Linear(cfg["d_model"], self.model.shared.num_embeddings, bias=False)
        self.lm_head.weight = self.model.shared.weight  # tie_word_embeddings
        self.apply(self._init_weights)  # post_init

    def _init_weights(self, module, std=0.02):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()

    def forward(self, input_ids, decoder_input_ids):
        outputs = self.model(input_ids, decoder_input_ids)
        lm_logits = self.lm_head(outputs[0]) + self.final_logits_bias
        return lm_logits


def b_mbart():
    src, tgt = randint(500, 2, 12), randint(500, 2, 10, seed=3)
    return dict(model=MBartForConditionalGeneration(), inputs=(src, tgt), target=randint(500, 2, 10, seed=4),
                loss=ce_tokens)


# ---------------------------------------------------------------------------------------
# NARM as its PyTorch reference writes it (Wang Shuo's Neural-Attentive-Session-Based-
# Recommendation-PyTorch, narm.py): emb (padding_idx 0), emb_dropout, a packed nn.GRU, the
# last hidden state as the global encoding; a_1 over every GRU output and a_2 over the last
# (no biases), sigmoid of their masked sum, v_t to one weight a step, the weighted sum as the
# local encoding; cat(local, global), ct_dropout, b (no bias) applied to every item's
# embedding (emb called again) and the scores by matmul. sf (nn.Softmax) is registered and
# never called, as there.


class NARM(nn.Module):
    def __init__(self, n_items=300, hidden_size=32, embedding_dim=32, batch_size=16, n_layers=1):
        super().__init__()
        self.n_items = n_items
        self.hidden_size = hidden_size
        self.batch_size = batch_size
        self.n_layers = n_layers
        self.embedding_dim = embedding_dim
        self.emb = nn.Embedding(self.n_items, self.embedding_dim, padding_idx=0)
        self.emb_dropout = nn.Dropout(0.25)
        self.gru = nn.GRU(self.embedding_dim, self.hidden_size, self.n_layers)
        self.a_1 = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.a_2 = nn.Linear(self.hidden_size, self.hidden_size, bias=False)
        self.v_t = nn.Linear(self.hidden_size, 1, bias=False)
        self.ct_dropout = nn.Dropout(0.5)
        self.b = nn.Linear(self.embedding_dim, 2 * self.hidden_size, bias=False)
        self.sf = nn.Softmax(dim=1)
        self.device = torch.device("cpu")

    def forward(self, seq, lengths):
        hidden = self.init_hidden(seq.size(1))
        embs = self.emb_dropout(self.emb(seq))
        embs = pack_padded_sequence(embs, lengths)
        gru_out, hidden = self.gru(embs, hidden)
        gru_out, lengths = pad_packed_sequence(gru_out)

        ht = hidden[-1]
        gru_out = gru_out.permute(1, 0, 2)

        c_global = ht
        q1 = self.a_1(gru_out.contiguous().view(-1, self.hidden_size)).view(gru_out.size())
        q2 = self.a_2(ht)

        mask = torch.where(seq.permute(1, 0) > 0, torch.tensor([1.0], device=self.device),
                           torch.tensor([0.0], device=self.device))
        q2_expand = q2.unsqueeze(1).expand_as(q1)
        q2_masked = mask.unsqueeze(2).expand_as(q1) * q2_expand

        alpha = self.v_t(torch.sigmoid(q1 + q2_masked).view(-1, self.hidden_size)).view(mask.size())
        c_local = torch.sum(alpha.unsqueeze(2).expand_as(gru_out) * gru_out, 1)

        c_t = torch.cat([c_local, c_global], 1)
        c_t = self.ct_dropout(c_t)

        item_embs = self.emb(torch.arange(self.n_items).to(self.device))
        scores = torch.matmul(c_t, self.b(item_embs).permute(1, 0))
        return scores

    def init_hidden(self, batch_size):
        return torch.zeros((self.n_layers, batch_size, self.hidden_size), requires_grad=True).to(self.device)


def b_narm():
    batch, max_len, n_items = 16, 10, 300
    g = random.Random(5)
    lengths = sorted((g.randint(2, max_len) for _ in range(batch)), reverse=True)
    lengths[0] = max_len  # the padded length is the longest session's
    items = randint(n_items - 1, max_len, batch) + 1
    seq = torch.stack([torch.where(torch.arange(max_len) < n, items[:, i], torch.zeros((), dtype=torch.long))
                       for i, n in enumerate(lengths)], 1)  # time-major, 0-padded, sorted by length
    return dict(model=NARM(n_items), inputs=(seq, torch.tensor(lengths)), target=randint(n_items, batch, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# chemprop's D-MPNN (v1, chemprop/models/mpn.py and model.py): MoleculeModel = encoder (MPN:
# encoder = ModuleList of one MPNEncoder) and ffn. MPNEncoder: W_i on the bond features,
# act_func (a ReLU module); depth - 1 steps of the summed incoming messages gathered by
# index_select_ND over the padded a2b table, less the reverse bond's message, then the same
# W_h, act_func(input + message) and dropout_layer; the atoms' messages summed, W_o over
# cat(atom features, messages), act_func, dropout_layer; a mean readout per molecule by
# narrow. ffn: Sequential(dropout, Linear, activation, dropout, Linear) with the one dropout
# module twice, as create_ffn builds it.


class BatchMolGraph:
    """chemprop's BatchMolGraph for a random batch: row 0 of f_atoms and f_bonds is padding;
    a bond's features are its source atom's features and its own."""

    def __init__(self, sizes=(5, 6, 4, 5), atom_fdim=16, bond_only_fdim=6, seed=7):
        g = random.Random(seed)
        self.atom_fdim, self.bond_fdim = atom_fdim, atom_fdim + bond_only_fdim
        n_atoms = 1 + sum(sizes)
        f_atoms = (randn(n_atoms, atom_fdim, seed=seed) > 0.5).float()
        f_atoms[0] = 0
        f_bonds, a2b, b2a, b2revb = [[0.0] * self.bond_fdim], [[] for _ in range(n_atoms)], [0], [0]
        self.a_scope, start = [], 1
        for size in sizes:
            pairs = [(start + g.randrange(i), start + i) for i in range(1, size)]
            if size >= 5:
                pairs.append((start, start + size - 1))  # one ring
            for a1, a2 in pairs:
                fb = [float(g.random() < 0.3) for _ in range(bond_only_fdim)]
                b1 = len(b2a)
                f_bonds.append(f_atoms[a1].tolist() + fb)
                f_bonds.append(f_atoms[a2].tolist() + fb)
                a2b[a2].append(b1)  # b1 = a1 -> a2
                a2b[a1].append(b1 + 1)
                b2a.extend([a1, a2])
                b2revb.extend([b1 + 1, b1])
            self.a_scope.append((start, size))
            start += size
        max_bonds = max(len(b) for b in a2b)
        self.f_atoms = f_atoms
        self.f_bonds = torch.tensor(f_bonds)
        self.a2b = torch.tensor([b + [0] * (max_bonds - len(b)) for b in a2b], dtype=torch.long)
        self.b2a = torch.tensor(b2a, dtype=torch.long)
        self.b2revb = torch.tensor(b2revb, dtype=torch.long)

    def get_components(self):
        return self.f_atoms, self.f_bonds, self.a2b, self.b2a, self.b2revb, self.a_scope

    def __repr__(self):
        return (f"BatchMolGraph(molecules={len(self.a_scope)}, atoms={self.f_atoms.shape[0] - 1}, "
                f"bonds={self.f_bonds.shape[0] - 1}, atom_fdim={self.atom_fdim}, bond_fdim={self.bond_fdim})")


def index_select_ND(source, index):
    index_size = index.size()
    suffix_dim = source.size()[1:]
    final_size = index_size + suffix_dim
    target = source.index_select(dim=0, index=index.view(-1))
    target = target.view(final_size)
    return target


class MPNEncoder(nn.Module):
    def __init__(self, atom_fdim, bond_fdim, hidden_size=32, bias=False, depth=3, dropout=0.0):
        super().__init__()
        self.atom_fdim = atom_fdim
        self.bond_fdim = bond_fdim
        self.hidden_size = hidden_size
        self.bias = bias
        self.depth = depth
        self.dropout = dropout
        self.layers_per_message = 1
        self.undirected = False
        self.aggregation = "mean"
        self.dropout_layer = nn.Dropout(p=self.dropout)
        self.act_func = nn.ReLU()
        self.cached_zero_vector = nn.Parameter(torch.zeros(self.hidden_size), requires_grad=False)
        self.W_i = nn.Linear(self.bond_fdim, self.hidden_size, bias=self.bias)
        self.W_h = nn.Linear(self.hidden_size, self.hidden_size, bias=self.bias)
        self.W_o = nn.Linear(self.atom_fdim + self.hidden_size, self.hidden_size)

    def forward(self, mol_graph):
        f_atoms, f_bonds, a2b, b2a, b2revb, a_scope = mol_graph.get_components()
        input = self.W_i(f_bonds)
        message = self.act_func(input)

        for depth in range(self.depth - 1):
            if self.undirected:
                message = (message + message[b2revb]) / 2
            nei_a_message = index_select_ND(message, a2b)
            a_message = nei_a_message.sum(dim=1)
            rev_message = message[b2revb]
            message = a_message[b2a] - rev_message
            message = self.W_h(message)
            message = self.act_func(input + message)
            message = self.dropout_layer(message)

        nei_a_message = index_select_ND(message, a2b)
        a_message = nei_a_message.sum(dim=1)
        a_input = torch.cat([f_atoms, a_message], dim=1)
        atom_hiddens = self.act_func(self.W_o(a_input))
        atom_hiddens = self.dropout_layer(atom_hiddens)

        mol_vecs = []
        for i, (a_start, a_size) in enumerate(a_scope):
            if a_size == 0:
                mol_vecs.append(self.cached_zero_vector)
            else:
                cur_hiddens = atom_hiddens.narrow(0, a_start, a_size)
                mol_vec = cur_hiddens
                if self.aggregation == "mean":
                    mol_vec = mol_vec.sum(dim=0) / a_size
                mol_vecs.append(mol_vec)
        mol_vecs = torch.stack(mol_vecs, dim=0)
        return mol_vecs


class MPN(nn.Module):
    def __init__(self, atom_fdim, bond_fdim, number_of_molecules=1):
        super().__init__()
        self.encoder = nn.ModuleList([MPNEncoder(atom_fdim, bond_fdim) for _ in range(number_of_molecules)])

    def forward(self, batch):
        encodings = [enc(ba) for enc, ba in zip(self.encoder, batch)]
        output = reduce(lambda x, y: torch.cat((x, y), dim=1), encodings)
        return output


class MoleculeModel(nn.Module):
    def __init__(self, atom_fdim, bond_fdim, hidden_size=32, ffn_hidden_size=32, num_tasks=1):
        super().__init__()
        self.output_size = num_tasks
        self.encoder = MPN(atom_fdim, bond_fdim)
        dropout = nn.Dropout(0.0)
        activation = nn.ReLU()
        ffn = [dropout, nn.Linear(hidden_size, ffn_hidden_size)]
        ffn.extend([activation, dropout, nn.Linear(ffn_hidden_size, self.output_size)])
        self.ffn = nn.Sequential(*ffn)

    def forward(self, batch):
        return self.ffn(self.encoder(batch))


def b_dmpnn():
    graph = BatchMolGraph()
    return dict(model=MoleculeModel(graph.atom_fdim, graph.bond_fdim), inputs=([graph],),
                target=randn(len(graph.a_scope), 1, seed=3), loss=mse)


# ---------------------------------------------------------------------------------------
# Newell's stacked hourglass as pytorch-pose writes it (models/hourglass.py): HourglassNet =
# conv1, bn1, one shared relu, layer1 (Bottleneck with a downsample Sequential of one 1x1
# conv), maxpool, layer2, layer3; per stack hg (Hourglass: hg, a ModuleList per level of
# residual Sequentials: up1, F.max_pool2d then low1, the recursion or, at the lowest level, a
# fourth residual, low3, F.interpolate, up1 + up2), res, fc (Sequential conv, bn and the
# root's relu), score; between stacks fc_ and score_ 1x1 convs summed back into x.
# Bottleneck: bn1, relu, conv1 (1x1), bn2, relu, conv2 (3x3), bn3, relu, conv3 (1x1), the
# downsampled residual, out += residual.


class Bottleneck(nn.Module):
    expansion = 2

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(inplanes)
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, bias=True)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=True)
        self.bn3 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 2, kernel_size=1, bias=True)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        residual = x
        out = self.bn1(x)
        out = self.relu(out)
        out = self.conv1(out)
        out = self.bn2(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn3(out)
        out = self.relu(out)
        out = self.conv3(out)
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        return out


class Hourglass(nn.Module):
    def __init__(self, block, num_blocks, planes, depth):
        super().__init__()
        self.depth = depth
        self.block = block
        self.hg = self._make_hour_glass(block, num_blocks, planes, depth)

    def _make_residual(self, block, num_blocks, planes):
        layers = []
        for i in range(0, num_blocks):
            layers.append(block(planes * block.expansion, planes))
        return nn.Sequential(*layers)

    def _make_hour_glass(self, block, num_blocks, planes, depth):
        hg = []
        for i in range(depth):
            res = []
            for j in range(3):
                res.append(self._make_residual(block, num_blocks, planes))
            if i == 0:
                res.append(self._make_residual(block, num_blocks, planes))
            hg.append(nn.ModuleList(res))
        return nn.ModuleList(hg)

    def _hour_glass_forward(self, n, x):
        up1 = self.hg[n - 1][0](x)
        low1 = F.max_pool2d(x, 2, stride=2)
        low1 = self.hg[n - 1][1](low1)
        if n > 1:
            low2 = self._hour_glass_forward(n - 1, low1)
        else:
            low2 = self.hg[n - 1][3](low1)
        low3 = self.hg[n - 1][2](low2)
        up2 = F.interpolate(low3, scale_factor=2)
        out = up1 + up2
        return out

    def forward(self, x):
        return self._hour_glass_forward(self.depth, x)


class HourglassNet(nn.Module):
    def __init__(self, block=Bottleneck, num_stacks=2, num_blocks=1, num_classes=4, depth=2):
        super().__init__()
        self.inplanes = 8
        self.num_feats = 8
        self.num_stacks = num_stacks
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=True)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_residual(block, self.inplanes, 1)
        self.layer2 = self._make_residual(block, self.inplanes, 1)
        self.layer3 = self._make_residual(block, self.num_feats, 1)
        self.maxpool = nn.MaxPool2d(2, stride=2)

        ch = self.num_feats * block.expansion
        hg, res, fc, score, fc_, score_ = [], [], [], [], [], []
        for i in range(num_stacks):
            hg.append(Hourglass(block, num_blocks, self.num_feats, depth))
            res.append(self._make_residual(block, self.num_feats, num_blocks))
            fc.append(self._make_fc(ch, ch))
            score.append(nn.Conv2d(ch, num_classes, kernel_size=1, bias=True))
            if i < num_stacks - 1:
                fc_.append(nn.Conv2d(ch, ch, kernel_size=1, bias=True))
                score_.append(nn.Conv2d(num_classes, ch, kernel_size=1, bias=True))
        self.hg = nn.ModuleList(hg)
        self.res = nn.ModuleList(res)
        self.fc = nn.ModuleList(fc)
        self.score = nn.ModuleList(score)
        self.fc_ = nn.ModuleList(fc_)
        self.score_ = nn.ModuleList(score_)

    def _make_residual(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1, stride=stride, bias=True),
            )
        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample))
        self.inplanes = planes * block.expansion
        for i in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def _make_fc(self, inplanes, outplanes):
        bn = nn.BatchNorm2d(inplanes)
        conv = nn.Conv2d(inplanes, outplanes, kernel_size=1, bias=True)
        return nn.Sequential(conv, bn, self.relu)

    def forward(self, x):
        out = []
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.layer1(x)
        x = self.maxpool(x)
        x = self.layer2(x)
        x = self.layer3(x)
        for i in range(self.num_stacks):
            y = self.hg[i](x)
            y = self.res[i](y)
            y = self.fc[i](y)
            score = self.score[i](y)
            out.append(score)
            if i < self.num_stacks - 1:
                fc_ = self.fc_[i](y)
                score_ = self.score_[i](score)
                x = x + fc_ + score_
        return out


def heatmaps_mse(out, target):
    return sum(F.mse_loss(o, target) for o in out)  # every stack's heatmaps supervised


def b_hourglass():
    return dict(model=HourglassNet(), inputs=(randn(2, 3, 32, 32),), target=randn(2, 4, 8, 8, seed=3).abs(),
                loss=heatmaps_mse)


# ---------------------------------------------------------------------------------------
# The Neural Factorization Machine as its PyTorch reference writes it (guoyang9's
# NFM-pyorch, model.py): embeddings (one table over every field's features), biases (an
# embedding of width 1) and bias_; the embeddings scaled by the feature values, Bi-Interaction
# pooling by hand (0.5 * (square of the sum - sum of the squares)), FM_layers (Sequential of
# BatchNorm1d and Dropout), deep_layers (Sequential of Linear, BatchNorm1d, ReLU, Dropout per
# layer), prediction (no bias), then the linear part (biases times values, summed) and
# bias_ added.


class NFM(nn.Module):
    def __init__(self, num_features=400, num_factors=16, act_function="relu", layers=(32, 32), batch_norm=True,
                 drop_prob=(0.5, 0.2)):
        super().__init__()
        self.num_features = num_features
        self.num_factors = num_factors
        self.act_function = act_function
        self.layers = layers
        self.batch_norm = batch_norm
        self.drop_prob = drop_prob

        self.embeddings = nn.Embedding(num_features, num_factors)
        self.biases = nn.Embedding(num_features, 1)
        self.bias_ = nn.Parameter(torch.tensor([0.0]))

        FM_modules = []
        if self.batch_norm:
            FM_modules.append(nn.BatchNorm1d(num_factors))
        FM_modules.append(nn.Dropout(drop_prob[0]))
        self.FM_layers = nn.Sequential(*FM_modules)

        MLP_module = []
        in_dim = num_factors
        for dim in self.layers:
            out_dim = dim
            MLP_module.append(nn.Linear(in_dim, out_dim))
            in_dim = out_dim
            if self.batch_norm:
                MLP_module.append(nn.BatchNorm1d(out_dim))
            if self.act_function == "relu":
                MLP_module.append(nn.ReLU())
            MLP_module.append(nn.Dropout(drop_prob[-1]))
        self.deep_layers = nn.Sequential(*MLP_module)

        predict_size = layers[-1] if layers else num_factors
        self.prediction = nn.Linear(predict_size, 1, bias=False)

    def forward(self, features, feature_values):
        nonzero_embed = self.embeddings(features)
        feature_values = feature_values.unsqueeze(dim=-1)
        nonzero_embed = nonzero_embed * feature_values

        sum_square_embed = nonzero_embed.sum(dim=1).pow(2)
        square_sum_embed = (nonzero_embed.pow(2)).sum(dim=1)

        FM = 0.5 * (sum_square_embed - square_sum_embed)
        FM = self.FM_layers(FM)
        if self.layers:
            FM = self.deep_layers(FM)
        FM = self.prediction(FM)

        feature_bias = self.biases(features)
        feature_bias = (feature_bias * feature_values).sum(dim=1)
        FM = FM + feature_bias + self.bias_
        return FM.view(-1)


def b_nfm():
    fields, per_field, batch = 8, 50, 32
    features = randint(per_field, batch, fields) + torch.arange(fields) * per_field  # each field's own range
    values = torch.ones(batch, fields)
    return dict(model=NFM(fields * per_field), inputs=(features, values), target=randint(2, batch, seed=3).float(),
                loss=bce)


# ---------------------------------------------------------------------------------------
# StyleGAN2's discriminator as rosinality writes it (stylegan2-pytorch model.py, CPU paths):
# Discriminator = convs (Sequential of a 1x1 ConvLayer from RGB and ResBlocks: conv1, conv2
# downsampling, skip a 1x1 downsampling ConvLayer without activation or bias, (out + skip) /
# sqrt(2)), the minibatch standard deviation by hand, final_conv, final_linear (Sequential of
# EqualLinear with the fused leaky ReLU and EqualLinear). ConvLayer is a Sequential of Blur
# (upfirdn2d's native CPU path: pads, reshapes, one F.conv2d with a fixed kernel) when it
# downsamples, EqualConv2d (the weight scaled by hand, F.conv2d) and FusedLeakyReLU (the bias
# added, F.leaky_relu, times sqrt(2)).


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
    out = out[:, max(-pad_y0, 0): out.shape[1] - max(-pad_y1, 0), max(-pad_x0, 0): out.shape[2] - max(-pad_x1, 0), :]
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
    up, down = (up, up), (down, down)
    if len(pad) == 2:
        pad = (pad[0], pad[1], pad[0], pad[1])
    return upfirdn2d_native(input, kernel, *up, *down, *pad)


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


class Blur(nn.Module):
    def __init__(self, kernel, pad, upsample_factor=1):
        super().__init__()
        kernel = make_kernel(kernel)
        if upsample_factor > 1:
            kernel = kernel * (upsample_factor**2)
        self.register_buffer("kernel", kernel)
        self.pad = pad

    def forward(self, input):
        out = upfirdn2d(input, self.kernel, pad=self.pad)
        return out


class EqualConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, stride=1, padding=0, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channel, in_channel, kernel_size, kernel_size))
        self.scale = 1 / math.sqrt(in_channel * kernel_size**2)
        self.stride = stride
        self.padding = padding
        self.bias = nn.Parameter(torch.zeros(out_channel)) if bias else None

    def forward(self, input):
        out = F.conv2d(input, self.weight * self.scale, bias=self.bias, stride=self.stride, padding=self.padding)
        return out


class EqualLinear(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
        self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init)) if bias else None
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


class SG2ConvLayer(nn.Sequential):
    def __init__(self, in_channel, out_channel, kernel_size, downsample=False, blur_kernel=(1, 3, 3, 1), bias=True,
                 activate=True):
        layers = []
        if downsample:
            factor = 2
            p = (len(blur_kernel) - factor) + (kernel_size - 1)
            pad0 = (p + 1) // 2
            pad1 = p // 2
            layers.append(Blur(list(blur_kernel), pad=(pad0, pad1)))
            stride = 2
            padding = 0
        else:
            stride = 1
            padding = kernel_size // 2
        layers.append(EqualConv2d(in_channel, out_channel, kernel_size, padding=padding, stride=stride,
                                  bias=bias and not activate))
        if activate:
            layers.append(FusedLeakyReLU(out_channel, bias=bias))
        super().__init__(*layers)
        self.padding = padding


class ResBlock(nn.Module):
    def __init__(self, in_channel, out_channel, blur_kernel=(1, 3, 3, 1)):
        super().__init__()
        self.conv1 = SG2ConvLayer(in_channel, in_channel, 3)
        self.conv2 = SG2ConvLayer(in_channel, out_channel, 3, downsample=True)
        self.skip = SG2ConvLayer(in_channel, out_channel, 1, downsample=True, activate=False, bias=False)

    def forward(self, input):
        out = self.conv1(input)
        out = self.conv2(out)
        skip = self.skip(input)
        out = (out + skip) / math.sqrt(2)
        return out


class Discriminator(nn.Module):
    def __init__(self, size=32, blur_kernel=(1, 3, 3, 1)):
        super().__init__()
        channels = {4: 32, 8: 32, 16: 16, 32: 16}
        convs = [SG2ConvLayer(3, channels[size], 1)]
        log_size = int(math.log(size, 2))
        in_channel = channels[size]
        for i in range(log_size, 2, -1):
            out_channel = channels[2 ** (i - 1)]
            convs.append(ResBlock(in_channel, out_channel, blur_kernel))
            in_channel = out_channel
        self.convs = nn.Sequential(*convs)
        self.stddev_group = 4
        self.stddev_feat = 1
        self.final_conv = SG2ConvLayer(in_channel + 1, channels[4], 3)
        self.final_linear = nn.Sequential(
            EqualLinear(channels[4] * 4 * 4, channels[4], activation="fused_lrelu"),
            EqualLinear(channels[4], 1),
        )

    def forward(self, input):
        out = self.convs(input)
        batch, channel, height, width = out.shape
        group = min(batch, self.stddev_group)
        stddev = out.view(group, -1, self.stddev_feat, channel // self.stddev_feat, height, width)
        stddev = torch.sqrt(stddev.var(0, unbiased=False) + 1e-8)
        stddev = stddev.mean([2, 3, 4], keepdims=True).squeeze(2)
        stddev = stddev.repeat(group, 1, height, width)
        out = torch.cat([out, stddev], 1)
        out = self.final_conv(out)
        out = out.view(batch, -1)
        out = self.final_linear(out)
        return out


def d_logistic_loss(out, target):
    """The discriminator's non-saturating loss, softplus(-real_pred) + softplus(fake_pred),
    with target +1 for a real image and -1 for a fake one."""
    return F.softplus(-target * out.view(-1)).mean()


def b_stylegan2_disc():
    target = torch.tensor([1.0, 1.0, -1.0, -1.0])
    return dict(model=Discriminator(), inputs=(randn(4, 3, 32, 32),), target=target, loss=d_logistic_loss)


REGISTRY = [
    ("fast_style_transfer", "gan", "adam", b_fast_style),
    ("cvt_hf_style", "hybrid", "adamw", b_cvt),
    ("mbart_decoder_hf", "seq2seq", "adamw", b_mbart),
    ("narm_session", "recsys", "adam", b_narm),
    ("dmpnn_chem", "gnn", "adam", b_dmpnn),
    ("stacked_hourglass", "unet", "adam", b_hourglass),
    ("nfm_ctr", "recsys", "adam", b_nfm),
    ("stylegan2_disc", "gan", "adam", b_stylegan2_disc),
]

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS6 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants6.py",
    os.path.join(DATA, "corpus-cpu-variants6"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-modern", "corpus-cpu-families", "corpus-cpu-heldout",
                                      "corpus-cpu-variants", "corpus-cpu-variants2", "corpus-cpu-variants3",
                                      "corpus-cpu-variants4", "corpus-cpu-variants5", "corpus-cpu-objectives",
                                      "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS6)
