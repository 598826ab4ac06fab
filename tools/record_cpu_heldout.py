#!/usr/bin/env python3
"""Record Strata's held-out CPU corpus: models the layer inference was never tuned on.

tests/data/corpus-cpu (tools/record_cpu_corpus.py) is what the inference is tuned against.
This script records a second, disjoint corpus, tests/data/corpus-cpu-heldout, of models from
the same families and close cousins but with other architectures, sizes and coding styles
(no model name or model class of corpus-cpu is reused). Every model's split is "heldout".

The recording itself is record_cpu_corpus.py's, imported from it unchanged: same profiler
(torch.profiler.profile, CPU, record_shapes, schedule(wait=1, warmup=1, active=2), 4 steps),
same phase ranges (zero_grad, forward, loss, backward, optimizer), same hid=N PATH (Class)
forward-hook ranges, same gzip settings, same manifest layout (record_one, module_tree,
write_manifest); --verify runs record_cpu_corpus.verify_one on every trace and also requires
exactly ProfilerStep#1 and #2. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_heldout.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_heldout.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-heldout.
"""

import argparse
import dataclasses
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_corpus as rc  # noqa: E402  (sets 1 thread, imports torch/torchvision)
from record_cpu_corpus import (ce, ce_seg, ce_tokens, bce, ctc, gen, randn, randint,  # noqa: E402
                               image_cls, tv, conv_bn_relu)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torchvision import models as tvm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "tests", "data", "corpus-cpu-heldout")
TUNE_DIR = os.path.join(os.path.dirname(HERE), "tests", "data", "corpus-cpu")


# ---------------------------------------------------------------------------------------
# convolutional models written by hand

class SeparableConv2d(nn.Module):
    def __init__(self, cin, cout, k=3, s=1, p=1):
        super().__init__()
        self.depthwise = nn.Conv2d(cin, cin, k, s, p, groups=cin, bias=False)
        self.pointwise = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


class XceptionBlock(nn.Module):
    """Xception block: [ReLU, SeparableConv, BN] x reps (+ max-pool), plus a 1x1 skip."""

    def __init__(self, cin, cout, reps, stride=1, start_with_relu=True, grow_first=True):
        super().__init__()
        if cout != cin or stride != 1:
            self.skip = nn.Conv2d(cin, cout, 1, stride, bias=False)
            self.skipbn = nn.BatchNorm2d(cout)
        else:
            self.skip = None
        rep, c = [], cin
        outs = [cout] * reps if grow_first else [cin] * (reps - 1) + [cout]
        for i, out in enumerate(outs):
            # the first ReLU must not overwrite x, which the skip path still reads
            rep += [nn.ReLU(inplace=i > 0), SeparableConv2d(c, out), nn.BatchNorm2d(out)]
            c = out
        if not start_with_relu:
            rep = rep[1:]
        if stride != 1:
            rep.append(nn.MaxPool2d(3, stride, 1))
        self.rep = nn.Sequential(*rep)

    def forward(self, x):
        skip = x if self.skip is None else self.skipbn(self.skip(x))
        return self.rep(x) + skip


class XceptionSmall(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(16, 32, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.act2 = nn.ReLU(inplace=True)
        self.block1 = XceptionBlock(32, 64, 2, 2, start_with_relu=False)
        self.block2 = XceptionBlock(64, 128, 2, 2)
        self.block3 = XceptionBlock(128, 128, 3, 1)
        self.block4 = XceptionBlock(128, 128, 3, 1)
        self.block5 = XceptionBlock(128, 192, 2, 2, grow_first=False)
        self.conv3 = SeparableConv2d(192, 256)
        self.bn3 = nn.BatchNorm2d(256)
        self.act3 = nn.ReLU(inplace=True)
        self.global_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(256, classes)

    def forward(self, x):
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.act2(self.bn2(self.conv2(x)))
        x = self.block5(self.block4(self.block3(self.block2(self.block1(x)))))
        x = self.act3(self.bn3(self.conv3(x)))
        return self.fc(self.global_pool(x).flatten(1))


class DenseLayerBasic(nn.Module):
    """Plain DenseNet layer (no bottleneck): BN, ReLU, 3x3 conv producing `growth` maps."""

    def __init__(self, cin, growth, drop=0.1):
        super().__init__()
        self.bn = nn.BatchNorm2d(cin)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(cin, growth, 3, padding=1, bias=False)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.conv(self.relu(self.bn(x))))


class DenseBlockCat(nn.Module):
    def __init__(self, n, cin, growth, layer=None):
        super().__init__()
        layer = layer or DenseLayerBasic
        self.layers = nn.ModuleList(layer(cin + i * growth, growth) for i in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = torch.cat([x, layer(x)], 1)
        return x


class Transition(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.bn = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)
        self.pool = nn.AvgPool2d(2)

    def forward(self, x):
        return self.pool(self.conv(F.relu(self.bn(x))))


class DenseNetBasic(nn.Module):
    def __init__(self, growth=10, blocks=(4, 5, 6), init=20, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, init, 3, padding=1, bias=False)
        c, stages = init, []
        for i, n in enumerate(blocks):
            stages.append(DenseBlockCat(n, c, growth))
            c += n * growth
            if i < len(blocks) - 1:
                stages.append(Transition(c, c // 2))
                c //= 2
        self.features = nn.Sequential(*stages)
        self.norm = nn.BatchNorm2d(c)
        self.classifier = nn.Linear(c, classes)

    def forward(self, x):
        x = F.relu(self.norm(self.features(self.stem(x))))
        return self.classifier(F.adaptive_avg_pool2d(x, 1).flatten(1))


class LayerNormCF(nn.Module):
    """ConvNeXt's channels_first LayerNorm, written out (mean, var, normalise, affine)."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class DropPath(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        keep = 1 - self.p
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x * mask / keep


class ConvNeXtV1Block(nn.Module):
    def __init__(self, dim, drop_path):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))
        self.drop_path = DropPath(drop_path)

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.gamma * self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + self.drop_path(y.permute(0, 3, 1, 2))


class ConvNeXtDeep(nn.Module):
    """Four stages, depths (1, 1, 3, 1), stochastic depth, hand-written channels_first LN."""

    def __init__(self, dims=(16, 32, 64, 128), depths=(1, 1, 3, 1), classes=10):
        super().__init__()
        self.downsample_layers = nn.ModuleList()
        self.downsample_layers.append(nn.Sequential(nn.Conv2d(3, dims[0], 4, 4),
                                                    LayerNormCF(dims[0])))
        for i in range(3):
            self.downsample_layers.append(nn.Sequential(LayerNormCF(dims[i]),
                                                        nn.Conv2d(dims[i], dims[i + 1], 2, 2)))
        rates = torch.linspace(0, 0.1, sum(depths)).tolist()
        self.stages, k = nn.ModuleList(), 0
        for d, n in zip(dims, depths):
            self.stages.append(nn.Sequential(*[ConvNeXtV1Block(d, rates[k + j])
                                               for j in range(n)]))
            k += n
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        for i in range(4):
            x = self.stages[i](self.downsample_layers[i](x))
        return self.head(self.norm(x.mean([-2, -1])))


class ConvBlock2(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x))))))


class UpConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(cin, cout, 3, padding=1),
                                nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.up(x)


class AttentionGate(nn.Module):
    def __init__(self, f_g, f_l, f_int):
        super().__init__()
        self.W_g = nn.Sequential(nn.Conv2d(f_g, f_int, 1), nn.BatchNorm2d(f_int))
        self.W_x = nn.Sequential(nn.Conv2d(f_l, f_int, 1), nn.BatchNorm2d(f_int))
        self.psi = nn.Sequential(nn.Conv2d(f_int, 1, 1), nn.BatchNorm2d(1), nn.Sigmoid())
        self.relu = nn.ReLU(inplace=True)

    def forward(self, g, x):
        return x * self.psi(self.relu(self.W_g(g) + self.W_x(x)))


class AttentionUNet(nn.Module):
    def __init__(self, classes=2, c=(8, 16, 32, 64)):
        super().__init__()
        self.pool = nn.MaxPool2d(2, 2)
        self.enc1, self.enc2 = ConvBlock2(3, c[0]), ConvBlock2(c[0], c[1])
        self.enc3, self.enc4 = ConvBlock2(c[1], c[2]), ConvBlock2(c[2], c[3])
        self.up4, self.att4, self.dec4 = UpConv(c[3], c[2]), AttentionGate(c[2], c[2], c[1]), \
            ConvBlock2(2 * c[2], c[2])
        self.up3, self.att3, self.dec3 = UpConv(c[2], c[1]), AttentionGate(c[1], c[1], c[0]), \
            ConvBlock2(2 * c[1], c[1])
        self.up2, self.att2, self.dec2 = UpConv(c[1], c[0]), AttentionGate(c[0], c[0], c[0] // 2), \
            ConvBlock2(2 * c[0], c[0])
        self.final = nn.Conv2d(c[0], classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        e4 = self.enc4(self.pool(e3))
        d = self.up4(e4)
        d = self.dec4(torch.cat([self.att4(d, e3), d], 1))
        d = self.up3(d)
        d = self.dec3(torch.cat([self.att3(d, e2), d], 1))
        d = self.up2(d)
        d = self.dec2(torch.cat([self.att2(d, e1), d], 1))
        return self.final(d)


def vgg11_bn_small_head():
    """torchvision vgg11_bn with the classifier shrunk for 32x32 inputs (the common CIFAR
    adaptation: 1x1 average pool, 512-wide classifier of the same shape)."""
    m = tv(tvm.vgg11_bn, num_classes=10)
    m.avgpool = nn.AdaptiveAvgPool2d(1)
    m.classifier = nn.Sequential(nn.Linear(512, 512), nn.ReLU(True), nn.Dropout(0.5),
                                 nn.Linear(512, 512), nn.ReLU(True), nn.Dropout(0.5),
                                 nn.Linear(512, 10))
    return m


# ---------------------------------------------------------------------------------------
# transformers written by hand

class GPT2Attention(nn.Module):
    """Fused qkv Linear (no bias), heads split with unbind, causal mask made per call."""

    def __init__(self, dim, heads, drop=0.1):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim)
        self.attn_drop = nn.Dropout(drop)
        self.proj_drop = nn.Dropout(drop)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4) \
            .unbind(0)
        mask = torch.ones(n, n, dtype=torch.bool).triu(1)
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(c // self.heads)
        att = self.attn_drop(att.masked_fill(mask, float("-inf")).softmax(-1))
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, n, c)
        return self.proj_drop(self.out(y))


class GPT2MLP(nn.Module):
    def __init__(self, dim, hidden, drop=0.1):
        super().__init__()
        self.fc = nn.Linear(dim, hidden)
        self.act = nn.GELU(approximate="tanh")
        self.proj = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.proj(self.act(self.fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-5)
        self.attn = GPT2Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-5)
        self.mlp = GPT2MLP(dim, 4 * dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT2Small(nn.Module):
    def __init__(self, vocab=800, dim=48, depth=4, heads=4, ctx=64):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, dim)
        self.pos_emb = nn.Parameter(torch.zeros(1, ctx, dim))
        self.emb_drop = nn.Dropout(0.1)
        self.blocks = nn.Sequential(*[GPT2Block(dim, heads) for _ in range(depth)])
        self.norm_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.emb_drop(self.tok_emb(ids) + self.pos_emb[:, :ids.shape[1]])
        return self.head(self.norm_f(self.blocks(x)))


class CaptionDecoder(nn.Module):
    """Image captioner: a small CNN makes the memory, nn.TransformerDecoder decodes tokens."""

    def __init__(self, vocab=400, dim=64, heads=4, depth=2, seq=32):
        super().__init__()
        self.cnn = nn.Sequential(conv_bn_relu(3, 32, s=2), conv_bn_relu(32, 64, s=2),
                                 conv_bn_relu(64, dim, s=2))
        self.mem_pos = nn.Parameter(0.02 * torch.randn(1, 16, dim))
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        layer = nn.TransformerDecoderLayer(dim, heads, 2 * dim, dropout=0.1, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, depth, norm=nn.LayerNorm(dim))
        self.out = nn.Linear(dim, vocab)

    def forward(self, img, tokens):
        mem = self.cnn(img).flatten(2).transpose(1, 2) + self.mem_pos
        n = tokens.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf")), 1)
        x = self.embed(tokens) + self.pos(torch.arange(n).unsqueeze(0))
        return self.out(self.decoder(x, mem, tgt_mask=mask))


class T5LayerNorm(nn.Module):
    """RMSNorm as T5 writes it: no mean subtraction, no bias."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.variance_epsilon))


class T5Attention(nn.Module):
    def __init__(self, dim, heads, has_bias, buckets=32, max_distance=64):
        super().__init__()
        self.heads, self.dk = heads, dim // heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.buckets, self.max_distance = buckets, max_distance
        if has_bias:
            self.relative_attention_bias = nn.Embedding(buckets, heads)

    def bucket(self, rel):
        nb = self.buckets // 2
        ret = (rel > 0).long() * nb
        n = rel.abs()
        max_exact = nb // 2
        large = max_exact + (torch.log(n.float().clamp(min=1) / max_exact)
                             / math.log(self.max_distance / max_exact)
                             * (nb - max_exact)).long()
        large = large.clamp(max=nb - 1)
        return ret + torch.where(n < max_exact, n, large)

    def compute_bias(self, n):
        pos = torch.arange(n)
        rel = pos[None, :] - pos[:, None]
        return self.relative_attention_bias(self.bucket(rel)).permute(2, 0, 1).unsqueeze(0)

    def forward(self, x, position_bias=None):
        b, n, _ = x.shape

        def shape(t):
            return t.view(b, n, self.heads, self.dk).transpose(1, 2)

        q, k, v = shape(self.q(x)), shape(self.k(x)), shape(self.v(x))
        scores = torch.matmul(q, k.transpose(3, 2))
        if position_bias is None:
            position_bias = self.compute_bias(n)
        w = F.dropout(F.softmax(scores + position_bias, dim=-1), 0.1, self.training)
        y = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, n, -1)
        return self.o(y), position_bias


class T5LayerSelfAttention(nn.Module):
    def __init__(self, dim, heads, has_bias):
        super().__init__()
        self.SelfAttention = T5Attention(dim, heads, has_bias)
        self.layer_norm = T5LayerNorm(dim)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x, position_bias=None):
        y, position_bias = self.SelfAttention(self.layer_norm(x), position_bias)
        return x + self.dropout(y), position_bias


class T5DenseActDense(nn.Module):
    def __init__(self, dim, ff):
        super().__init__()
        self.wi = nn.Linear(dim, ff, bias=False)
        self.wo = nn.Linear(ff, dim, bias=False)
        self.dropout = nn.Dropout(0.1)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.wo(self.dropout(self.act(self.wi(x))))


class T5LayerFF(nn.Module):
    def __init__(self, dim, ff):
        super().__init__()
        self.DenseReluDense = T5DenseActDense(dim, ff)
        self.layer_norm = T5LayerNorm(dim)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.dropout(self.DenseReluDense(self.layer_norm(x)))


class T5Block(nn.Module):
    def __init__(self, dim, heads, ff, has_bias):
        super().__init__()
        self.layer = nn.ModuleList([T5LayerSelfAttention(dim, heads, has_bias),
                                    T5LayerFF(dim, ff)])

    def forward(self, x, position_bias=None):
        x, position_bias = self.layer[0](x, position_bias)
        return self.layer[1](x), position_bias


class T5EncoderClassifier(nn.Module):
    def __init__(self, vocab=1000, dim=64, heads=4, ff=128, depth=3, classes=3):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.block = nn.ModuleList(T5Block(dim, heads, ff, i == 0) for i in range(depth))
        self.final_layer_norm = T5LayerNorm(dim)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(dim, classes)

    def forward(self, ids):
        x = self.dropout(self.embed_tokens(ids))
        bias = None
        for blk in self.block:
            x, bias = blk(x, bias)
        x = self.dropout(self.final_layer_norm(x))
        return self.classifier(x.mean(1))


class VitLayers(nn.Module):
    """ViT with a class token and learned positions: a ModuleList of
    nn.TransformerEncoderLayer(norm_first=True, batch_first=True) called in a loop."""

    def __init__(self, img=32, patch=4, dim=48, depth=4, heads=3, classes=10):
        super().__init__()
        self.conv_proj = nn.Conv2d(3, dim, patch, patch)
        n = (img // patch) ** 2
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embedding = nn.Parameter(0.02 * torch.randn(1, n + 1, dim))
        self.pos_drop = nn.Dropout(0.1)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.1, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(depth))
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, classes))

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.pos_drop(x + self.pos_embedding)
        for layer in self.layers:
            x = layer(x)
        return self.head(x[:, 0])


class MixerLayer(nn.Module):
    def __init__(self, tokens, dim, token_hidden, channel_hidden, drop=0.0):
        super().__init__()
        self.ln_token = nn.LayerNorm(dim)
        self.token_mixing = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(),
                                          nn.Dropout(drop), nn.Linear(token_hidden, tokens))
        self.ln_channel = nn.LayerNorm(dim)
        self.channel_mixing = nn.Sequential(nn.Linear(dim, channel_hidden), nn.GELU(),
                                            nn.Dropout(drop), nn.Linear(channel_hidden, dim))

    def forward(self, x):
        y = self.ln_token(x).transpose(1, 2)
        x = x + self.token_mixing(y).transpose(1, 2)
        return x + self.channel_mixing(self.ln_channel(x))


class MixerWide(nn.Module):
    """Mixer with 16 tokens (8x8 patches) and 96 channels: token MLP 16->64, channel 96->192."""

    def __init__(self, img=32, patch=8, dim=96, depth=4, classes=10):
        super().__init__()
        tokens = (img // patch) ** 2
        self.stem = nn.Conv2d(3, dim, patch, patch)
        self.flatten = nn.Flatten(2)
        self.layers = nn.Sequential(*[MixerLayer(tokens, dim, 64, 192) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.flatten(self.stem(x)).transpose(1, 2)
        return self.fc(self.ln(self.layers(x)).mean(1))


class SwiGLUExpert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SharedExpertMoE(nn.Module):
    """Top-2 routing over routed experts plus one always-on shared expert (with a sigmoid
    gate), dispatch with torch.where and index_add_."""

    def __init__(self, dim, hidden, experts=4, k=2):
        super().__init__()
        self.k = k
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(SwiGLUExpert(dim, hidden) for _ in range(experts))
        self.shared_expert = SwiGLUExpert(dim, hidden)
        self.shared_gate = nn.Linear(dim, 1, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        h = x.view(-1, d)
        weights, sel = torch.topk(F.softmax(self.gate(h), dim=1, dtype=torch.float), self.k,
                                  dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(sel == e)
            if rows.numel() == 0:
                continue
            out.index_add_(0, rows, expert(h[rows]) * weights[rows, slot, None])
        out = out + torch.sigmoid(self.shared_gate(h)) * self.shared_expert(h)
        return out.view(b, n, d)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MoESharedBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = nn.MultiheadAttention(dim, heads, dropout=0.0, bias=False,
                                               batch_first=True)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = SharedExpertMoE(dim, dim)

    def forward(self, x, mask):
        h = self.input_layernorm(x)
        x = x + self.self_attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.post_attention_layernorm(x))


class MoESharedLM(nn.Module):
    def __init__(self, vocab=400, dim=48, heads=4, depth=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(MoESharedBlock(dim, heads) for _ in range(depth))
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        n = ids.shape[1]
        mask = torch.ones(n, n, dtype=torch.bool).triu(1)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, mask)
        return self.lm_head(self.norm(x))


# ---------------------------------------------------------------------------------------
# speech, recurrent, graph, tabular, recommendation

class ConformerFeedForward(nn.Module):
    def __init__(self, dim, mult=4, drop=0.1):
        super().__init__()
        self.layer_norm = nn.LayerNorm(dim)
        self.linear1 = nn.Linear(dim, mult * dim)
        self.activation = nn.SiLU()
        self.dropout1 = nn.Dropout(drop)
        self.linear2 = nn.Linear(mult * dim, dim)
        self.dropout2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.dropout1(self.activation(self.linear1(self.layer_norm(x))))
        return self.dropout2(self.linear2(x))


class ConformerConvModule(nn.Module):
    def __init__(self, dim, kernel=15, drop=0.1):
        super().__init__()
        self.layer_norm = nn.LayerNorm(dim)
        self.pointwise_conv1 = nn.Conv1d(dim, 2 * dim, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise_conv = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.batch_norm = nn.BatchNorm1d(dim)
        self.activation = nn.SiLU()
        self.pointwise_conv2 = nn.Conv1d(dim, dim, 1)
        self.dropout = nn.Dropout(drop)

    def forward(self, x):
        x = self.glu(self.pointwise_conv1(self.layer_norm(x).transpose(1, 2)))
        x = self.activation(self.batch_norm(self.depthwise_conv(x)))
        return self.dropout(self.pointwise_conv2(x)).transpose(1, 2)


class ConformerBlock(nn.Module):
    """Macaron FFN (half-step), MHSA, conv module, FFN (half-step), final LayerNorm."""

    def __init__(self, dim, heads):
        super().__init__()
        self.ffn1 = ConformerFeedForward(dim)
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.self_attn = nn.MultiheadAttention(dim, heads, dropout=0.1, batch_first=True)
        self.self_attn_dropout = nn.Dropout(0.1)
        self.conv_module = ConformerConvModule(dim)
        self.ffn2 = ConformerFeedForward(dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = x + 0.5 * self.ffn1(x)
        h = self.self_attn_layer_norm(x)
        h, _ = self.self_attn(h, h, h, need_weights=False)
        x = x + self.self_attn_dropout(h)
        x = x + self.conv_module(x)
        x = x + 0.5 * self.ffn2(x)
        return self.final_layer_norm(x)


class Conv1dSubsampler(nn.Module):
    def __init__(self, feats, dim):
        super().__init__()
        self.conv_layers = nn.ModuleList([nn.Conv1d(feats, dim, 3, 2, 1),
                                          nn.Conv1d(dim // 2, 2 * dim, 3, 2, 1)])

    def forward(self, x):
        x = x.transpose(1, 2)
        for conv in self.conv_layers:
            x = F.glu(conv(x), dim=1)
        return x.transpose(1, 2)


class ConformerCTC(nn.Module):
    def __init__(self, feats=40, dim=64, heads=4, depth=2, vocab=30):
        super().__init__()
        self.subsample = Conv1dSubsampler(feats, dim)
        self.input_projection = nn.Linear(dim, dim)
        self.input_dropout = nn.Dropout(0.1)
        self.conformer_layers = nn.ModuleList(ConformerBlock(dim, heads) for _ in range(depth))
        self.ctc_proj = nn.Linear(dim, vocab)

    def forward(self, x):
        x = self.input_dropout(self.input_projection(self.subsample(x)))
        for layer in self.conformer_layers:
            x = layer(x)
        return F.log_softmax(self.ctc_proj(x), dim=-1)


class AttentionPooling(nn.Module):
    def __init__(self, dim, att):
        super().__init__()
        self.proj = nn.Linear(dim, att)
        self.context = nn.Linear(att, 1, bias=False)

    def forward(self, h, mask):
        s = self.context(torch.tanh(self.proj(h))).squeeze(-1)
        s = s.masked_fill(~mask, float("-inf"))
        a = F.softmax(s, dim=1)
        return torch.bmm(a.unsqueeze(1), h).squeeze(1)


class BiLSTMAttnClassifier(nn.Module):
    def __init__(self, vocab=1500, dim=48, hidden=48, classes=5):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.emb_dropout = nn.Dropout(0.2)
        self.encoder = nn.LSTM(dim, hidden, num_layers=2, batch_first=True, bidirectional=True,
                               dropout=0.2)
        self.pool = AttentionPooling(2 * hidden, 32)
        self.fc = nn.Sequential(nn.Linear(2 * hidden, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, ids):
        h, _ = self.encoder(self.emb_dropout(self.embedding(ids)))
        return self.fc(self.pool(h, ids != 0))


class GRUCellLM(nn.Module):
    """nn.GRUCell unrolled in Python, with the output projection applied at every step."""

    def __init__(self, vocab=200, dim=32, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.cell = nn.GRUCell(dim, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, ids):
        x = self.embed(ids)
        h = torch.zeros(ids.shape[0], self.cell.hidden_size)
        logits = []
        for t in range(ids.shape[1]):
            h = self.cell(x[:, t], h)
            logits.append(self.proj(self.norm(h)))
        return torch.stack(logits, 1)


class GATLayer(nn.Module):
    """Graph attention: per-edge scores gathered with index_select, softmax over each node's
    incoming edges with scatter_add_, messages summed with index_add_."""

    def __init__(self, cin, cout, heads, concat=True):
        super().__init__()
        self.heads, self.cout, self.concat = heads, cout, concat
        self.lin = nn.Linear(cin, heads * cout, bias=False)
        self.att_src = nn.Parameter(0.1 * torch.randn(1, heads, cout))
        self.att_dst = nn.Parameter(0.1 * torch.randn(1, heads, cout))
        self.bias = nn.Parameter(torch.zeros(heads * cout if concat else cout))
        self.leaky_relu = nn.LeakyReLU(0.2)
        self.attn_drop = nn.Dropout(0.1)

    def forward(self, x, src, dst):
        n = x.shape[0]
        h = self.lin(x).view(n, self.heads, self.cout)
        a_src, a_dst = (h * self.att_src).sum(-1), (h * self.att_dst).sum(-1)
        e = self.leaky_relu(a_src.index_select(0, src) + a_dst.index_select(0, dst))
        e = (e - e.max(0, keepdim=True).values).exp()
        denom = torch.zeros(n, self.heads).scatter_add_(0, dst.unsqueeze(1).expand_as(e), e)
        alpha = self.attn_drop(e / denom.index_select(0, dst).clamp(min=1e-16))
        msg = h.index_select(0, src) * alpha.unsqueeze(-1)
        out = torch.zeros_like(h).index_add_(0, dst, msg)
        out = out.reshape(n, -1) if self.concat else out.mean(1)
        return out + self.bias


class GAT(nn.Module):
    def __init__(self, cin=32, hidden=16, heads=4, classes=7):
        super().__init__()
        self.dropout = nn.Dropout(0.3)
        self.conv1 = GATLayer(cin, hidden, heads)
        self.act = nn.ELU()
        self.conv2 = GATLayer(hidden * heads, classes, 1, concat=False)

    def forward(self, x, src, dst):
        x = self.act(self.conv1(self.dropout(x), src, dst))
        return self.conv2(self.dropout(x), src, dst)


class TabTransformer(nn.Module):
    """Per-column embeddings, a column embedding, nn.TransformerEncoder over the categorical
    columns, LayerNorm on the continuous features, MLP head."""

    def __init__(self, cards=(12, 30, 7, 50, 4, 100), n_cont=5, dim=32, heads=4, depth=2):
        super().__init__()
        self.cat_embeds = nn.ModuleList(nn.Embedding(c, dim) for c in cards)
        self.column_embed = nn.Embedding(len(cards), dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.1, batch_first=True)
        self.transformer = nn.TransformerEncoder(layer, depth)
        self.cont_norm = nn.LayerNorm(n_cont)
        d = len(cards) * dim + n_cont
        self.mlp = nn.Sequential(nn.Linear(d, 4 * len(cards) * 8), nn.ReLU(), nn.Dropout(0.1),
                                 nn.Linear(4 * len(cards) * 8, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, cat, cont):
        x = torch.stack([emb(cat[:, i]) for i, emb in enumerate(self.cat_embeds)], 1)
        x = x + self.column_embed.weight.unsqueeze(0)
        x = self.transformer(x).flatten(1)
        return self.mlp(torch.cat([x, self.cont_norm(cont)], 1)).squeeze(1)


class Tower(nn.Module):
    def __init__(self, dim, hidden, out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, out))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


class TwoTower(nn.Module):
    """Retrieval model: user tower (id embedding + EmbeddingBag mean over the history) and
    item tower (id embedding + EmbeddingBag sum over tags); in-batch softmax on dot products."""

    def __init__(self, users=3000, items=5000, tags=300, dim=32, out=32):
        super().__init__()
        self.user_id = nn.Embedding(users, dim)
        self.user_history = nn.EmbeddingBag(items, dim, mode="mean")
        self.user_tower = Tower(2 * dim, 64, out)
        self.item_id = nn.Embedding(items, dim)
        self.item_tags = nn.EmbeddingBag(tags, dim, mode="sum")
        self.item_tower = Tower(2 * dim, 64, out)
        self.log_temp = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, uid, hist, hist_off, iid, tag, tag_off):
        u = self.user_tower(torch.cat([self.user_id(uid), self.user_history(hist, hist_off)], 1))
        i = self.item_tower(torch.cat([self.item_id(iid), self.item_tags(tag, tag_off)], 1))
        return u @ i.t() * self.log_temp.exp()


# ---------------------------------------------------------------------------------------
# builders

def bags(n, batch, lo, hi, g):
    lengths = torch.randint(lo, hi, (batch,), generator=g)
    ids = torch.randint(0, n, (int(lengths.sum()),), generator=g)
    return ids, torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])


def b_two_tower():
    g, batch = gen(11), 128
    hist, hist_off = bags(5000, batch, 2, 12, g)
    tag, tag_off = bags(300, batch, 1, 5, g)
    uid = torch.randint(0, 3000, (batch,), generator=g)
    iid = torch.randint(0, 5000, (batch,), generator=g)
    return dict(model=TwoTower(), inputs=(uid, hist, hist_off, iid, tag, tag_off),
                target=torch.arange(batch), loss=ce)


def b_tab():
    g, cards = gen(12), (12, 30, 7, 50, 4, 100)
    cat = torch.stack([torch.randint(0, c, (128,), generator=g) for c in cards], 1)
    return dict(model=TabTransformer(cards), inputs=(cat, randn(128, 5, seed=13)),
                target=torch.randint(0, 2, (128,), generator=g).float(), loss=bce)


def b_gat():
    x, src, dst, _ = rc.random_graph(nodes=512, edges=4096)[0]
    return dict(model=GAT(), inputs=(x, src, dst), target=randint(7, 512, seed=5), loss=ce)


def b_caption():
    tok = randint(400, 4, 17, seed=3)
    return dict(model=CaptionDecoder(), inputs=(randn(4, 3, 32, 32), tok[:, :-1]),
                target=tok[:, 1:], loss=ce_tokens)


def b_bilstm_attn():
    ids = randint(1499, 8, 24) + 1
    ids[:4, 18:] = 0  # padding at the end of half the batch
    return dict(model=BiLSTMAttnClassifier(), inputs=(ids,), target=randint(5, 8, seed=3),
                loss=ce)


def b_conformer():
    return dict(model=ConformerCTC(), inputs=(randn(4, 64, 40),),
                target=randint(29, 4, 8) + 1, loss=ctc)


def b_lm(model, vocab, batch, seq):
    ids = randint(vocab, batch, seq + 1)
    return dict(model=model, inputs=(ids[:, :-1],), target=ids[:, 1:], loss=ce_tokens)


REGISTRY = [
    # name, family, optimizer, builder
    ("resnet34", "residual", "sgd", lambda: image_cls(tv(tvm.resnet34, num_classes=10), 2, 32)),
    ("wide_resnet50_2", "residual", "sgd",
     lambda: image_cls(tv(tvm.wide_resnet50_2, num_classes=10), 2, 32)),
    ("vgg11_bn", "cnn", "sgd", lambda: image_cls(vgg11_bn_small_head(), 4, 32)),
    ("xception_small", "depthwise", "adam", lambda: image_cls(XceptionSmall(), 2, 64)),
    ("mobilenet_v3_large", "depthwise", "adamw",
     lambda: image_cls(tv(tvm.mobilenet_v3_large, num_classes=10), 2, 64)),
    ("efficientnet_b1", "depthwise", "adamw",
     lambda: image_cls(tv(tvm.efficientnet_b1, num_classes=10), 2, 64)),
    ("shufflenet_v2_x1_0", "depthwise", "sgd",
     lambda: image_cls(tv(tvm.shufflenet_v2_x1_0, num_classes=10), 2, 64)),
    ("regnet_y_800mf", "nas", "sgd",
     lambda: image_cls(tv(tvm.regnet_y_800mf, num_classes=10), 2, 64)),
    ("densenet_basic_hw", "dense", "sgd", lambda: image_cls(DenseNetBasic(), 4, 32)),
    ("convnext_deep_hw", "convnext", "adamw", lambda: image_cls(ConvNeXtDeep(), 2, 64)),
    ("vit_layers_loop", "vit", "adamw", lambda: image_cls(VitLayers(), 4, 32)),
    ("mixer_wide", "mixer", "adam", lambda: image_cls(MixerWide(), 4, 32)),
    ("attention_unet", "unet", "adam",
     lambda: dict(model=AttentionUNet(), inputs=(randn(2, 3, 32, 32),),
                  target=randint(2, 2, 32, 32), loss=ce_seg)),
    ("t5_encoder", "encoder", "adamw",
     lambda: dict(model=T5EncoderClassifier(), inputs=(randint(1000, 8, 24),),
                  target=randint(3, 8), loss=ce)),
    ("gpt2_prenorm", "gpt", "adamw", lambda: b_lm(GPT2Small(), 800, 4, 32)),
    ("caption_transformer_decoder", "seq2seq", "adam", b_caption),
    ("moe_top2_shared", "moe", "adamw", lambda: b_lm(MoESharedLM(), 400, 8, 16)),
    ("conformer_ctc", "speech", "adam", b_conformer),
    ("bilstm_attn", "rnn", "adam", b_bilstm_attn),
    ("grucell_lm", "rnn", "sgd", lambda: b_lm(GRUCellLM(), 200, 8, 10)),
    ("gat", "gnn", "adam", b_gat),
    ("two_tower", "recsys", "adam", b_two_tower),
    ("tab_transformer", "tabular", "adamw", b_tab),
]

SPLIT_RULE = ("every model is heldout: this corpus is disjoint from tests/data/corpus-cpu "
              "(no model name or hand-written model class is shared) and is never used for "
              "tuning")


# ---------------------------------------------------------------------------------------

def check_disjoint(registry, other_dirs):
    """Asserts no model name of `registry` is in the corpora at `other_dirs`; returns their
    root module classes."""
    classes = set()
    for d in other_dirs:
        path = os.path.join(d, "manifest.json")
        if not os.path.exists(path):
            continue
        others = json.load(open(path))["models"]
        clash = {m["name"] for m in others} & {n for n, _, _, _ in registry}
        assert not clash, f"models also in {d}: {sorted(clash)}"
        classes |= {m["modules"][0]["class"] for m in others}
    return classes


@dataclasses.dataclass
class Corpus:
    """One recorded corpus: its models, the split they all have, and where it is written.
    `disjoint_from` lists the corpora whose model names it must not reuse."""
    registry: list
    split: str
    split_rule: str
    script: str
    default_out: str
    disjoint_from: list
    doc: str


def record(corpus, out_dir, only):
    os.makedirs(out_dir, exist_ok=True)
    other_classes = check_disjoint(corpus.registry, corpus.disjoint_from)
    kind = rc.profiler_kind()
    man_path = os.path.join(out_dir, "manifest.json")
    old = {}
    if only and os.path.exists(man_path):
        old = {m["name"]: m for m in json.load(open(man_path))["models"]}
    models, t0 = [], time.time()
    for name, family, opt_kind, builder in corpus.registry:
        if only and name not in only:
            if name in old:
                models.append(old[name])
            continue
        entry = dict(name=name, split=corpus.split)
        entry.update(rc.record_one(name, family, opt_kind, builder, out_dir, kind))
        root = entry["modules"][0]["class"]
        if root in other_classes and root not in ("ResNet", "VGG", "MobileNetV3",
                                                  "EfficientNet", "ShuffleNetV2", "RegNet"):
            print(f"warning: {name}'s root class {root} is also another corpus's root class")
        models.append(entry)
    env = rc.environment(kind)
    env["split_rule"] = corpus.split_rule
    env["recorded_by"] = f"{corpus.script} (recording code: tools/record_cpu_corpus.py)"
    manifest = dict(environment=env, count=len(models),
                    total_bytes=sum(m["bytes"] for m in models), models=models)
    manifest[corpus.split] = [m["name"] for m in models]
    rc.write_manifest(man_path, manifest)
    print(f"{len(models)} models, {manifest['total_bytes']/1024/1024:.2f} MiB, "
          f"{time.time()-t0:.0f} s")


def verify(corpus, out_dir, names):
    man = json.load(open(os.path.join(out_dir, "manifest.json")))
    by = {m["name"]: m for m in man["models"]}
    bad = 0
    for n in names or list(by):
        m = by[n]
        try:
            assert m["split"] == corpus.split, f"split {m['split']}"
            r = rc.verify_one(os.path.join(out_dir, m["file"]), m["modules"])
            assert r["steps"] == ["ProfilerStep#1", "ProfilerStep#2"], r["steps"]
            assert r["hid_ranges"] > 0 and r["fwd_aten"] > 0, r
            print(n, json.dumps(r))
        except AssertionError as e:
            bad += 1
            print(n, "FAILED", e)
    if bad:
        sys.exit(f"{bad} trace(s) failed verification")


def main(corpus):
    ap = argparse.ArgumentParser(description=corpus.doc.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?", default=corpus.default_out)
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("--verify", action="store_true",
                    help="verify recorded traces (all, or those given by --only) and exit")
    a = ap.parse_args()
    if a.list:
        for n, f, o, _ in corpus.registry:
            print(f"{n:30s} {f:13s} {o:6s} {corpus.split}")
        return
    only = {s for s in a.only.split(",") if s}
    if a.verify:
        verify(corpus, a.out_dir, sorted(only))
        return
    unknown = only - {n for n, _, _, _ in corpus.registry}
    if unknown:
        sys.exit(f"unknown models: {sorted(unknown)}")
    record(corpus, a.out_dir, only)


HELDOUT = Corpus(REGISTRY, "heldout", SPLIT_RULE, "tools/record_cpu_heldout.py", DEFAULT_OUT,
                 [TUNE_DIR], __doc__)


if __name__ == "__main__":
    main(HELDOUT)
