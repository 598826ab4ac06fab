#!/usr/bin/env python3
"""Record Strata's fifth variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on the other variants corpora; this script records
tests/data/corpus-cpu-variants5, recorded after the rules, to measure them once on models they
were not written on, then to be tuned on as the other variants are: a Phi-3-style decoder (one
packed qkv projection, one gate-and-up projection chunked), Conv-TasNet's separator (temporal
conv blocks of a 1x1 conv, PReLU, global layer norm, a dilated depthwise conv, residual and
skip convs), MaskNet for CTR prediction (instance-guided masks over a layer-normed embedding),
DGCNN's EdgeConv on a point cloud (k nearest neighbours by top-k, edge features, a max over
them), StyleGAN2's synthesis blocks (modulated, demodulated convs written by hand, noise
injection, toRGB skips), an FCOS head (one tower module called on every pyramid level), an
nnU-Net-style U-Net (conv, instance norm, LeakyReLU twice per stage, strided convs down,
transposed convs up) and InceptionNeXt (a depthwise token mixer split four ways, concatenated).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants5.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants5.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants5.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import bce, ce, ce_tokens, mse, randint, randn  # noqa: E402
from record_cpu_heldout import RMSNorm  # noqa: E402
from record_cpu_variants4 import rotary  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# Phi-3 as transformers writes it: Phi3DecoderLayer = input_layernorm, self_attn (qkv_proj
# split into query, key and value, rotary, o_proj), resid_attn_dropout, the sum,
# post_attention_layernorm, mlp (gate_up_proj chunked: down_proj(up * silu(gate))),
# resid_mlp_dropout, the sum.


class Phi3Attention(nn.Module):
    def __init__(self, dim=64, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.kv, self.d = heads, kv_heads, dim // heads
        self.qkv_proj = nn.Linear(dim, (heads + 2 * kv_heads) * self.d, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        qkv = self.qkv_proj(x)
        q = qkv[..., : self.h * self.d].view(b, t, self.h, self.d).transpose(1, 2)
        k = qkv[..., self.h * self.d : (self.h + self.kv) * self.d].view(b, t, self.kv, self.d).transpose(1, 2)
        v = qkv[..., (self.h + self.kv) * self.d :].view(b, t, self.kv, self.d).transpose(1, 2)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        k = k.repeat_interleave(self.h // self.kv, dim=1)
        v = v.repeat_interleave(self.h // self.kv, dim=1)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.d) + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj(torch.matmul(w, v).transpose(1, 2).reshape(b, t, -1))


class Phi3MLP(nn.Module):
    def __init__(self, dim=64, hidden=128):
        super().__init__()
        self.gate_up_proj = nn.Linear(dim, 2 * hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self.activation_fn = nn.SiLU()

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(up * self.activation_fn(gate))


class Phi3DecoderLayer(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = Phi3Attention(dim)
        self.resid_attn_dropout = nn.Dropout(0.0)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = Phi3MLP(dim)
        self.resid_mlp_dropout = nn.Dropout(0.0)

    def forward(self, x, cos, sin, mask):
        x = x + self.resid_attn_dropout(self.self_attn(self.input_layernorm(x), cos, sin, mask))
        return x + self.resid_mlp_dropout(self.mlp(self.post_attention_layernorm(x)))


class Phi3LM(nn.Module):
    def __init__(self, vocab=500, dim=64, depth=3, heads=4):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.embed_dropout = nn.Dropout(0.0)
        self.layers = nn.ModuleList([Phi3DecoderLayer(dim) for _ in range(depth)])
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        d = dim // heads
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        freqs = torch.outer(torch.arange(t, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((t, t), float("-inf")).triu(1)
        x = self.embed_dropout(self.embed_tokens(ids))
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def b_phi3():
    return dict(model=Phi3LM(), inputs=(randint(500, 4, 16),), target=randint(500, 4, 16, seed=3), loss=ce_tokens)


# ---------------------------------------------------------------------------------------
# Conv-TasNet as Asteroid writes it: an encoder conv, the separator (a global layer norm, a
# 1x1 bottleneck, repeats of Conv1DBlocks: a 1x1 conv, PReLU, gLN, a dilated depthwise conv,
# PReLU, gLN, the residual conv and the skip conv; skips summed), PReLU, a 1x1 mask conv,
# sigmoid masks, a transposed-conv decoder.


class GlobLN(nn.Module):
    """Global layer norm: over channels and time, a scale and shift per channel."""

    def __init__(self, c):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(c))
        self.beta = nn.Parameter(torch.zeros(c))

    def forward(self, x):
        mean = x.mean(dim=(1, 2), keepdim=True)
        var = ((x - mean) ** 2).mean(dim=(1, 2), keepdim=True)
        return self.gamma[:, None] * (x - mean) / (var + 1e-8).sqrt() + self.beta[:, None]


class Conv1DBlock(nn.Module):
    def __init__(self, c=32, hid=64, dilation=1):
        super().__init__()
        self.shared_block = nn.Sequential(
            nn.Conv1d(c, hid, 1), nn.PReLU(), GlobLN(hid),
            nn.Conv1d(hid, hid, 3, padding=dilation, dilation=dilation, groups=hid), nn.PReLU(), GlobLN(hid))
        self.res_conv = nn.Conv1d(hid, c, 1)
        self.skip_conv = nn.Conv1d(hid, c, 1)

    def forward(self, x):
        h = self.shared_block(x)
        return self.res_conv(h), self.skip_conv(h)


class TDConvNet(nn.Module):
    def __init__(self, n=64, c=32, repeats=2, blocks=3, sources=2):
        super().__init__()
        self.bottleneck = nn.Sequential(GlobLN(n), nn.Conv1d(n, c, 1))
        self.TCN = nn.ModuleList([Conv1DBlock(c, 64, 2**b) for _ in range(repeats) for b in range(blocks)])
        self.mask_net = nn.Sequential(nn.PReLU(), nn.Conv1d(c, sources * n, 1))
        self.sources, self.n = sources, n

    def forward(self, w):
        x = self.bottleneck(w)
        skips = 0.0
        for block in self.TCN:
            res, skip = block(x)
            x = x + res
            skips = skips + skip
        m = self.mask_net(skips).view(w.shape[0], self.sources, self.n, -1)
        return torch.sigmoid(m)


class ConvTasNet(nn.Module):
    def __init__(self, n=64, k=16):
        super().__init__()
        self.encoder = nn.Conv1d(1, n, k, stride=k // 2, bias=False)
        self.masker = TDConvNet(n)
        self.decoder = nn.ConvTranspose1d(n, 1, k, stride=k // 2, bias=False)

    def forward(self, wav):
        tf = F.relu(self.encoder(wav))
        masked = self.masker(tf) * tf.unsqueeze(1)
        b, s, n, t = masked.shape
        return self.decoder(masked.view(b * s, n, t)).view(b, s, -1)


def b_convtasnet():
    wav = randn(2, 1, 1024)
    return dict(model=ConvTasNet(), inputs=(wav,), target=randn(2, 2, 1024, seed=3), loss=mse)


# ---------------------------------------------------------------------------------------
# MaskNet (serial) as FuxiCTR writes it: field embeddings concatenated, LayerNorm; MaskBlocks
# of an instance-guided mask (a Linear, ReLU, Linear from the flat embedding) multiplied into
# the block's input, a hidden Linear, LayerNorm, ReLU; an output Linear.


class MaskBlock(nn.Module):
    def __init__(self, emb_dim, in_dim, hidden=64, reduction=2):
        super().__init__()
        self.mask_layer = nn.Sequential(nn.Linear(emb_dim, emb_dim * reduction), nn.ReLU(), nn.Linear(emb_dim * reduction, in_dim))
        self.hidden_layer = nn.Linear(in_dim, hidden, bias=False)
        self.layer_norm = nn.LayerNorm(hidden)
        self.relu = nn.ReLU()

    def forward(self, v_emb, v_in):
        h = self.hidden_layer(self.mask_layer(v_emb) * v_in)
        return self.relu(self.layer_norm(h))


class MaskNet(nn.Module):
    def __init__(self, fields=8, vocab=200, dim=8, blocks=3, hidden=64):
        super().__init__()
        self.embedding = nn.ModuleList([nn.Embedding(vocab, dim) for _ in range(fields)])
        flat = fields * dim
        self.emb_norm = nn.LayerNorm(flat)
        self.blocks = nn.ModuleList([MaskBlock(flat, flat if i == 0 else hidden, hidden) for i in range(blocks)])
        self.fc = nn.Linear(hidden, 1)

    def forward(self, x):
        v = torch.cat([e(x[:, i]) for i, e in enumerate(self.embedding)], dim=1)
        v_in = self.emb_norm(v)
        h = v_in
        for block in self.blocks:
            h = block(v, h)
        return self.fc(h).squeeze(1)


def b_masknet():
    x = randint(200, 32, 8)
    return dict(model=MaskNet(), inputs=(x,), target=randint(2, 32, seed=3).float(), loss=bce)


# ---------------------------------------------------------------------------------------
# DGCNN as its reference code writes it: EdgeConv layers, each finding every point's k nearest
# neighbours in the current features (pairwise distances, top-k), gathering them, the edge
# feature cat(x_j - x_i, x_i), a Conv2d, BatchNorm2d, LeakyReLU, the max over neighbours; the
# layers' outputs concatenated into a Conv1d embedding, pooled, an MLP head.


def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x**2, dim=1, keepdim=True)
    return (-xx - inner - xx.transpose(2, 1)).topk(k=k, dim=-1)[1]


def graph_feature(x, k):
    b, c, n = x.shape
    idx = (knn(x, k) + torch.arange(b).view(-1, 1, 1) * n).view(-1)
    xt = x.transpose(2, 1).contiguous()
    nb = xt.view(b * n, -1)[idx, :].view(b, n, k, c)
    xt = xt.view(b, n, 1, c).repeat(1, 1, k, 1)
    return torch.cat((nb - xt, xt), dim=3).permute(0, 3, 1, 2).contiguous()


class EdgeConv(nn.Module):
    def __init__(self, cin, cout, k=8):
        super().__init__()
        self.k = k
        self.conv = nn.Sequential(nn.Conv2d(2 * cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.2))

    def forward(self, x):
        return self.conv(graph_feature(x, self.k)).max(dim=-1)[0]


class DGCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.edge_convs = nn.ModuleList([EdgeConv(3, 32), EdgeConv(32, 32), EdgeConv(32, 64)])
        self.embed = nn.Sequential(nn.Conv1d(128, 128, 1, bias=False), nn.BatchNorm1d(128), nn.LeakyReLU(0.2))
        self.head = nn.Sequential(nn.Linear(256, 64, bias=False), nn.BatchNorm1d(64), nn.LeakyReLU(0.2), nn.Dropout(0.5),
                                  nn.Linear(64, classes))

    def forward(self, x):
        outs = []
        for conv in self.edge_convs:
            x = conv(x)
            outs.append(x)
        x = self.embed(torch.cat(outs, dim=1))
        x = torch.cat((F.adaptive_max_pool1d(x, 1).flatten(1), F.adaptive_avg_pool1d(x, 1).flatten(1)), 1)
        return self.head(x)


def b_dgcnn():
    return dict(model=DGCNN(), inputs=(randn(4, 3, 128),), target=randint(10, 4, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# StyleGAN2's synthesis network as rosinality writes it: a mapping MLP, a learned constant,
# StyledConvs (ModulatedConv2d: the style's Linear, the weight modulated and demodulated,
# one grouped conv; NoiseInjection; a bias and LeakyReLU), upsampling between resolutions,
# ToRGB layers (a modulated 1x1 conv without demodulation) whose outputs are upsampled and
# summed.


class ModulatedConv2d(nn.Module):
    def __init__(self, cin, cout, k, style_dim, demodulate=True, upsample=False):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(1, cout, cin, k, k))
        self.modulation = nn.Linear(style_dim, cin)
        self.scale, self.pad, self.demod, self.up = 1 / math.sqrt(cin * k * k), k // 2, demodulate, upsample
        self.cout = cout

    def forward(self, x, style):
        b, cin, h, w = x.shape
        s = self.modulation(style).view(b, 1, cin, 1, 1)
        weight = self.scale * self.weight * s
        if self.demod:
            weight = weight * torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8).view(b, self.cout, 1, 1, 1)
        weight = weight.view(b * self.cout, cin, *weight.shape[3:])
        if self.up:
            x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
            h, w = h * 2, w * 2
        out = F.conv2d(x.reshape(1, b * cin, h, w), weight, padding=self.pad, groups=b)
        return out.view(b, self.cout, h, w)


class NoiseInjection(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        b, _, h, w = x.shape
        return x + self.weight * x.new_empty(b, 1, h, w).normal_()


class StyledConv(nn.Module):
    def __init__(self, cin, cout, style_dim, upsample=False):
        super().__init__()
        self.conv = ModulatedConv2d(cin, cout, 3, style_dim, upsample=upsample)
        self.noise = NoiseInjection()
        self.bias = nn.Parameter(torch.zeros(1, cout, 1, 1))
        self.activate = nn.LeakyReLU(0.2)

    def forward(self, x, style):
        return self.activate(self.noise(self.conv(x, style)) + self.bias)


class ToRGB(nn.Module):
    def __init__(self, cin, style_dim):
        super().__init__()
        self.conv = ModulatedConv2d(cin, 3, 1, style_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

    def forward(self, x, style, skip=None):
        out = self.conv(x, style) + self.bias
        if skip is not None:
            out = out + F.interpolate(skip, scale_factor=2, mode="bilinear", align_corners=False)
        return out


class StyleGAN2Generator(nn.Module):
    def __init__(self, style_dim=32, ch=16, levels=3):
        super().__init__()
        self.style = nn.Sequential(*[m for _ in range(3) for m in (nn.Linear(style_dim, style_dim), nn.LeakyReLU(0.2))])
        self.input = nn.Parameter(torch.randn(1, ch, 4, 4))
        self.conv1 = StyledConv(ch, ch, style_dim)
        self.to_rgb1 = ToRGB(ch, style_dim)
        self.convs = nn.ModuleList()
        self.to_rgbs = nn.ModuleList()
        for _ in range(levels):
            self.convs.append(StyledConv(ch, ch, style_dim, upsample=True))
            self.convs.append(StyledConv(ch, ch, style_dim))
            self.to_rgbs.append(ToRGB(ch, style_dim))

    def forward(self, z):
        w = self.style(z)
        x = self.conv1(self.input.repeat(z.shape[0], 1, 1, 1), w)
        skip = self.to_rgb1(x, w)
        for i, to_rgb in enumerate(self.to_rgbs):
            x = self.convs[2 * i + 1](self.convs[2 * i](x, w), w)
            skip = to_rgb(x, w, skip)
        return skip


def b_stylegan2():
    return dict(model=StyleGAN2Generator(), inputs=(randn(2, 32),), target=randn(2, 3, 32, 32, seed=3), loss=mse)


# ---------------------------------------------------------------------------------------
# An FCOS detector's head as torchvision writes it: a small backbone and FPN, then one
# classification tower and one regression tower (four Conv-GroupNorm-ReLU each, then their
# logits convs), each called on every pyramid level in turn.


class FCOSHeadLite(nn.Module):
    def __init__(self, ch=32, classes=5, convs=2):
        super().__init__()
        tower = lambda: nn.Sequential(*[m for _ in range(convs) for m in (nn.Conv2d(ch, ch, 3, padding=1), nn.GroupNorm(8, ch), nn.ReLU())])
        self.cls_tower = tower()
        self.bbox_tower = tower()
        self.cls_logits = nn.Conv2d(ch, classes, 3, padding=1)
        self.bbox_reg = nn.Conv2d(ch, 4, 3, padding=1)
        self.bbox_ctrness = nn.Conv2d(ch, 1, 3, padding=1)

    def forward(self, feats):
        cls, reg, ctr = [], [], []
        for f in feats:
            c = self.cls_tower(f)
            b = self.bbox_tower(f)
            cls.append(self.cls_logits(c).flatten(2))
            reg.append(F.relu(self.bbox_reg(b)).flatten(2))
            ctr.append(self.bbox_ctrness(b).flatten(2))
        return torch.cat(cls, 2), torch.cat(reg, 2), torch.cat(ctr, 2)


class FCOSLite(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        cbr = lambda i, o, s: nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))
        self.body = nn.ModuleList([cbr(3, 16, 2), cbr(16, 32, 2), cbr(32, 48, 2), cbr(48, 64, 2)])
        self.inner = nn.ModuleList([nn.Conv2d(c, ch, 1) for c in (32, 48, 64)])
        self.layer = nn.ModuleList([nn.Conv2d(ch, ch, 3, padding=1) for _ in range(3)])
        self.head = FCOSHeadLite(ch)

    def forward(self, x):
        cs = []
        for i, m in enumerate(self.body):
            x = m(x)
            if i > 0:
                cs.append(x)
        last = self.inner[2](cs[2])
        outs = [self.layer[2](last)]
        for i in (1, 0):
            last = self.inner[i](cs[i]) + F.interpolate(last, size=cs[i].shape[-2:], mode="nearest")
            outs.insert(0, self.layer[i](last))
        return self.head(outs)


def fcos_loss(out, target):
    cls, reg, ctr = out
    return F.binary_cross_entropy_with_logits(cls, target[0]) + F.l1_loss(reg, target[1]) + \
        F.binary_cross_entropy_with_logits(ctr, target[2])


def b_fcos():
    x = randn(2, 3, 64, 64)
    n = 16 * 16 + 8 * 8 + 4 * 4  # the three pyramid levels' positions
    target = ((randn(2, 5, n, seed=3) > 1).float(), randn(2, 4, n, seed=4).abs(), (randn(2, 1, n, seed=5) > 0).float())
    return dict(model=FCOSLite(), inputs=(x,), target=target, loss=fcos_loss)


# ---------------------------------------------------------------------------------------
# An nnU-Net-style U-Net (dynamic_network_architectures' PlainConvUNet): encoder stages of
# StackedConvBlocks (ConvDropoutNormReLU twice: conv, InstanceNorm, LeakyReLU; the first
# strided), a decoder of a transposed conv up, the skip's concatenation and a stacked block,
# a 1x1 segmentation conv.


class ConvDropoutNormReLU(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1)
        self.norm = nn.InstanceNorm2d(cout, affine=True)
        self.nonlin = nn.LeakyReLU(0.01, inplace=True)

    def forward(self, x):
        return self.nonlin(self.norm(self.conv(x)))


class StackedConvBlocks(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.convs = nn.Sequential(ConvDropoutNormReLU(cin, cout, stride), ConvDropoutNormReLU(cout, cout))

    def forward(self, x):
        return self.convs(x)


class PlainConvUNet(nn.Module):
    def __init__(self, chans=(8, 16, 32, 48), classes=3):
        super().__init__()
        self.stages = nn.ModuleList([StackedConvBlocks(1 if i == 0 else chans[i - 1], c, 1 if i == 0 else 2) for i, c in enumerate(chans)])
        self.transpconvs = nn.ModuleList([nn.ConvTranspose2d(chans[i], chans[i - 1], 2, 2) for i in range(len(chans) - 1, 0, -1)])
        self.dec_stages = nn.ModuleList([StackedConvBlocks(2 * chans[i - 1], chans[i - 1]) for i in range(len(chans) - 1, 0, -1)])
        self.seg = nn.Conv2d(chans[0], classes, 1)

    def forward(self, x):
        skips = []
        for s in self.stages:
            x = s(x)
            skips.append(x)
        x = skips.pop()
        for up, stage in zip(self.transpconvs, self.dec_stages):
            x = stage(torch.cat((up(x), skips.pop()), 1))
        return self.seg(x)


def b_nnunet():
    return dict(model=PlainConvUNet(), inputs=(randn(2, 1, 64, 64),), target=randint(3, 2, 64, 64, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# InceptionNeXt as timm writes it: a stem, stages of a downsampling (norm, strided conv) and
# MetaNeXtBlocks (InceptionDWConv2d: the channels split four ways, a square, a horizontal and a
# vertical band depthwise conv and an identity, concatenated; BatchNorm; ConvMlp of two 1x1
# convs around GELU; layer scale; the residual).


class InceptionDWConv2d(nn.Module):
    def __init__(self, c, band=11, ratio=0.25):
        super().__init__()
        g = int(c * ratio)
        self.dwconv_hw = nn.Conv2d(g, g, 3, padding=1, groups=g)
        self.dwconv_w = nn.Conv2d(g, g, (1, band), padding=(0, band // 2), groups=g)
        self.dwconv_h = nn.Conv2d(g, g, (band, 1), padding=(band // 2, 0), groups=g)
        self.split = (c - 3 * g, g, g, g)

    def forward(self, x):
        x_id, x_hw, x_w, x_h = torch.split(x, self.split, dim=1)
        return torch.cat((x_id, self.dwconv_hw(x_hw), self.dwconv_w(x_w), self.dwconv_h(x_h)), dim=1)


class ConvMlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1 = nn.Conv2d(c, 4 * c, 1)
        self.act = nn.GELU()
        self.fc2 = nn.Conv2d(4 * c, c, 1)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class MetaNeXtBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.token_mixer = InceptionDWConv2d(c)
        self.norm = nn.BatchNorm2d(c)
        self.mlp = ConvMlp(c)
        self.gamma = nn.Parameter(1e-6 * torch.ones(c))

    def forward(self, x):
        shortcut = x
        x = self.mlp(self.norm(self.token_mixer(x)))
        return x.mul(self.gamma.reshape(1, -1, 1, 1)) + shortcut


class MetaNeXtStage(nn.Module):
    def __init__(self, cin, cout, depth, down):
        super().__init__()
        self.downsample = nn.Sequential(nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 2, 2)) if down else nn.Identity()
        self.blocks = nn.Sequential(*[MetaNeXtBlock(cout) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(self.downsample(x))


class InceptionNeXtLite(nn.Module):
    def __init__(self, dims=(16, 32, 48), depths=(2, 2, 2), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), nn.BatchNorm2d(dims[0]))
        self.stages = nn.Sequential(*[MetaNeXtStage(dims[i - 1] if i else dims[0], d, depths[i], i > 0) for i, d in enumerate(dims)])
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(dims[-1], classes))

    def forward(self, x):
        return self.head(self.stages(self.stem(x)))


def b_inceptionnext():
    return dict(model=InceptionNeXtLite(), inputs=(randn(2, 3, 64, 64),), target=randint(10, 2, seed=3), loss=ce)


REGISTRY = [
    ("phi3_like", "llm", "adamw", b_phi3),
    ("conv_tasnet", "audio", "adam", b_convtasnet),
    ("masknet_ctr", "recsys", "adam", b_masknet),
    ("dgcnn_edgeconv", "point", "adam", b_dgcnn),
    ("stylegan2_synthesis", "gan", "adam", b_stylegan2),
    ("fcos_lite", "detection", "sgd", b_fcos),
    ("nnunet_plain", "unet", "sgd", b_nnunet),
    ("inceptionnext_lite", "convnext", "adamw", b_inceptionnext),
]

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS5 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants5.py",
    os.path.join(DATA, "corpus-cpu-variants5"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-modern", "corpus-cpu-families", "corpus-cpu-heldout",
                                      "corpus-cpu-variants", "corpus-cpu-variants2", "corpus-cpu-variants3",
                                      "corpus-cpu-variants4", "corpus-cpu-objectives", "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS5)
