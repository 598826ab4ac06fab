"""Vision models for the families CPU tuning corpus (tests/data/corpus-cpu-families), recorded by
tools/record_cpu_families.py with the others.

RepVGG at training (three branches summed, the identity's BatchNorm first), PoolFormer (a
pooling token mixer, layer scales), a PVT (spatial-reduction attention), a DETR-like detector
(a CNN, nn.Transformer, learned queries), an SK-Net (selective kernels), a YOLOv8-like backbone
(C2f: a split, bottlenecks, a concatenation; SPPF), a Stable-Diffusion-like UNet (residual
blocks and spatial transformers: self- and cross-attention, GEGLU), a SAM-like image encoder
(windowed and global attention blocks, a LayerNorm2d neck), ConvMixer, a Res2Net, an
HRNet-like two-branch network and a TimeSformer-like video transformer (divided space-time
attention).
"""

import record_cpu_corpus as rc
from record_cpu_corpus import ce, image_cls, mse, randint, randn

import torch
import torch.nn as nn
import torch.nn.functional as F


# RepVGG (train-time branches): 3x3 conv+bn, 1x1 conv+bn, identity bn, summed, ReLU.
def conv_bn(ci, co, k, s):
    m = nn.Sequential()
    m.add_module("conv", nn.Conv2d(ci, co, k, s, k // 2, bias=False))
    m.add_module("bn", nn.BatchNorm2d(co))
    return m


class RepVGGBlock(nn.Module):
    def __init__(s, ci, co, st):
        super().__init__()
        s.nonlinearity = nn.ReLU()
        s.rbr_identity = nn.BatchNorm2d(ci) if ci == co and st == 1 else None
        s.rbr_dense = conv_bn(ci, co, 3, st)
        s.rbr_1x1 = conv_bn(ci, co, 1, st)

    def forward(s, x):
        ido = 0 if s.rbr_identity is None else s.rbr_identity(x)
        return s.nonlinearity(s.rbr_dense(x) + s.rbr_1x1(x) + ido)


class RepVGG(nn.Module):
    def __init__(s):
        super().__init__()
        s.stage0 = RepVGGBlock(3, 16, 2)
        s.stage1 = nn.Sequential(RepVGGBlock(16, 32, 2), RepVGGBlock(32, 32, 1))
        s.stage2 = nn.Sequential(RepVGGBlock(32, 64, 2), RepVGGBlock(64, 64, 1), RepVGGBlock(64, 64, 1))
        s.gap = nn.AdaptiveAvgPool2d(1)
        s.linear = nn.Linear(64, 10)

    def forward(s, x):
        return s.linear(s.gap(s.stage2(s.stage1(s.stage0(x)))).flatten(1))


# PoolFormer (MetaFormer): GroupNorm, pooling token mixer, layer scale params, conv MLP.
class Pooling(nn.Module):
    def __init__(s):
        super().__init__()
        s.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)

    def forward(s, x):
        return s.pool(x) - x


class ConvMlp(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.fc1 = nn.Conv2d(d, 4 * d, 1)
        s.act = nn.GELU()
        s.fc2 = nn.Conv2d(4 * d, d, 1)
        s.drop = nn.Dropout(0.0)

    def forward(s, x):
        return s.drop(s.fc2(s.drop(s.act(s.fc1(x)))))


class PoolFormerBlock(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.norm1 = nn.GroupNorm(1, d)
        s.token_mixer = Pooling()
        s.norm2 = nn.GroupNorm(1, d)
        s.mlp = ConvMlp(d)
        s.layer_scale_1 = nn.Parameter(1e-5 * torch.ones(d))
        s.layer_scale_2 = nn.Parameter(1e-5 * torch.ones(d))

    def forward(s, x):
        x = x + s.layer_scale_1.unsqueeze(-1).unsqueeze(-1) * s.token_mixer(s.norm1(x))
        return x + s.layer_scale_2.unsqueeze(-1).unsqueeze(-1) * s.mlp(s.norm2(x))


class PoolFormer(nn.Module):
    def __init__(s):
        super().__init__()
        s.patch_embed = nn.Conv2d(3, 32, 4, 4)
        s.network = nn.ModuleList(
            [
                nn.Sequential(*[PoolFormerBlock(32) for _ in range(2)]),
                nn.Conv2d(32, 64, 3, 2, 1),
                nn.Sequential(*[PoolFormerBlock(64) for _ in range(2)]),
            ]
        )
        s.norm = nn.GroupNorm(1, 64)
        s.head = nn.Linear(64, 10)

    def forward(s, x):
        x = s.patch_embed(x)
        for m in s.network:
            x = m(x)
        return s.head(s.norm(x).mean([-2, -1]))


# PVT: spatial-reduction attention.
class SRAttention(nn.Module):
    def __init__(s, d, h, sr):
        super().__init__()
        s.h = h
        s.q = nn.Linear(d, d)
        s.kv = nn.Linear(d, 2 * d)
        s.proj = nn.Linear(d, d)
        s.sr_ratio = sr
        if sr > 1:
            s.sr = nn.Conv2d(d, d, sr, sr)
            s.norm = nn.LayerNorm(d)

    def forward(s, x, H, W):
        B, N, C = x.shape
        q = s.q(x).reshape(B, N, s.h, C // s.h).permute(0, 2, 1, 3)
        if s.sr_ratio > 1:
            x_ = s.norm(s.sr(x.permute(0, 2, 1).reshape(B, C, H, W)).reshape(B, C, -1).permute(0, 2, 1))
        else:
            x_ = x
        kv = s.kv(x_).reshape(B, -1, 2, s.h, C // s.h).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        a = (q @ k.transpose(-2, -1) * (C // s.h) ** -0.5).softmax(-1)
        return s.proj((a @ v).transpose(1, 2).reshape(B, N, C))


class PVTBlock(nn.Module):
    def __init__(s, d, h, sr):
        super().__init__()
        s.norm1 = nn.LayerNorm(d)
        s.attn = SRAttention(d, h, sr)
        s.norm2 = nn.LayerNorm(d)
        s.mlp = rc.Mlp(d, 4 * d)

    def forward(s, x, H, W):
        x = x + s.attn(s.norm1(x), H, W)
        return x + s.mlp(s.norm2(x))


class PVT(nn.Module):
    def __init__(s):
        super().__init__()
        s.patch_embed1 = nn.Conv2d(3, 32, 4, 4)
        s.norm_pe1 = nn.LayerNorm(32)
        s.block1 = nn.ModuleList([PVTBlock(32, 1, 4) for _ in range(2)])
        s.patch_embed2 = nn.Conv2d(32, 64, 2, 2)
        s.norm_pe2 = nn.LayerNorm(64)
        s.block2 = nn.ModuleList([PVTBlock(64, 2, 2) for _ in range(2)])
        s.norm = nn.LayerNorm(64)
        s.head = nn.Linear(64, 10)

    def forward(s, x):
        B = x.shape[0]
        x = s.patch_embed1(x)
        H, W = x.shape[2:]
        x = s.norm_pe1(x.flatten(2).transpose(1, 2))
        for b in s.block1:
            x = b(x, H, W)
        x = x.reshape(B, H, W, -1).permute(0, 3, 1, 2)
        x = s.patch_embed2(x)
        H, W = x.shape[2:]
        x = s.norm_pe2(x.flatten(2).transpose(1, 2))
        for b in s.block2:
            x = b(x, H, W)
        return s.head(s.norm(x).mean(1))


# DETR-like: small CNN backbone, input projection, nn.Transformer, learned queries, class and box heads.
class MLPHead(nn.Module):
    def __init__(s, i, h, o, n):
        super().__init__()
        hs = [h] * (n - 1)
        s.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip([i] + hs, hs + [o]))

    def forward(s, x):
        for i, l in enumerate(s.layers):
            x = F.relu(l(x)) if i < len(s.layers) - 1 else l(x)
        return x


class DETR(nn.Module):
    def __init__(s, d=64, q=10):
        super().__init__()
        s.backbone = nn.Sequential(
            rc.conv_bn_relu(3, 32, 3, 2, 1),
            rc.conv_bn_relu(32, 64, 3, 2, 1),
            rc.conv_bn_relu(64, 128, 3, 2, 1),
        )
        s.input_proj = nn.Conv2d(128, d, 1)
        s.transformer = nn.Transformer(d, 4, 2, 2, 128, 0.1, batch_first=True)
        s.query_embed = nn.Embedding(q, d)
        s.class_embed = nn.Linear(d, 6)
        s.bbox_embed = MLPHead(d, d, 4, 3)

    def forward(s, x):
        h = s.input_proj(s.backbone(x)).flatten(2).transpose(1, 2)
        hs = s.transformer(h, s.query_embed.weight.unsqueeze(0).repeat(x.shape[0], 1, 1))
        return s.class_embed(hs).sum() + s.bbox_embed(hs).sigmoid().sum()


def detr_loss(out, target):
    return out * 0.01


# SK-style selective kernel conv in ResNet blocks.
class SKConv(nn.Module):
    def __init__(s, c, M=2, r=4):
        super().__init__()
        s.M = M
        s.convs = nn.ModuleList(
            [
                nn.Sequential(
                    nn.Conv2d(c, c, 3, 1, 1 + i, dilation=1 + i, groups=4, bias=False),
                    nn.BatchNorm2d(c),
                    nn.ReLU(inplace=True),
                )
                for i in range(M)
            ]
        )
        s.fc = nn.Sequential(
            nn.Conv2d(c, c // r, 1, bias=False), nn.BatchNorm2d(c // r), nn.ReLU(inplace=True)
        )
        s.fcs = nn.Conv2d(c // r, c * M, 1)

    def forward(s, x):
        feats = torch.stack([cv(x) for cv in s.convs], 1)
        z = s.fc(feats.sum(1).mean([2, 3], keepdim=True))
        a = s.fcs(z).view(x.shape[0], s.M, -1, 1, 1).softmax(1)
        return (feats * a).sum(1)


class SKUnit(nn.Module):
    def __init__(s, cin, mid, cout):
        super().__init__()
        s.conv1 = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True)
        )
        s.conv2 = SKConv(mid)
        s.conv3 = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        s.relu = nn.ReLU(inplace=True)
        s.shortcut = (
            nn.Sequential()
            if cin == cout
            else nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))
        )

    def forward(s, x):
        return s.relu(s.conv3(s.conv2(s.conv1(x))) + s.shortcut(x))


class SKNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(
            nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True)
        )
        s.stage = nn.Sequential(SKUnit(32, 16, 64), SKUnit(64, 16, 64), SKUnit(64, 16, 64))
        s.fc = nn.Linear(64, 10)

    def forward(s, x):
        return s.fc(s.stage(s.stem(x)).mean([2, 3]))


# YOLOv8-like: Conv (conv, BN, SiLU) modules, C2f blocks (split, bottlenecks, concat), SPPF.
class YBottleneck(nn.Module):
    def __init__(s, c, sc=True):
        super().__init__()
        s.cv1 = rc.YoloConv(c, c, 3)
        s.cv2 = rc.YoloConv(c, c, 3)
        s.add = sc

    def forward(s, x):
        return x + s.cv2(s.cv1(x)) if s.add else s.cv2(s.cv1(x))


class C2f(nn.Module):
    def __init__(s, ci, co, n=1):
        super().__init__()
        s.c = co // 2
        s.cv1 = rc.YoloConv(ci, 2 * s.c)
        s.cv2 = rc.YoloConv((2 + n) * s.c, co)
        s.m = nn.ModuleList(YBottleneck(s.c) for _ in range(n))

    def forward(s, x):
        y = list(s.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in s.m)
        return s.cv2(torch.cat(y, 1))


class YoloV8ish(nn.Module):
    def __init__(s):
        super().__init__()
        s.model = nn.Sequential(
            rc.YoloConv(3, 16, 3, 2),
            rc.YoloConv(16, 32, 3, 2),
            C2f(32, 32, 1),
            rc.YoloConv(32, 64, 3, 2),
            C2f(64, 64, 2),
            rc.SPPF(64, 64),
        )
        s.head = nn.Conv2d(64, 10, 1)

    def forward(s, x):
        return s.head(s.model(x)).mean([2, 3])


# Stable-Diffusion-like transformer block: norm, self-attn, norm, cross-attn, norm, GEGLU FF; in a spatial transformer.
class CrossAttention(nn.Module):
    def __init__(s, d, dc, h):
        super().__init__()
        s.h = h
        s.to_q = nn.Linear(d, d, bias=False)
        s.to_k = nn.Linear(dc, d, bias=False)
        s.to_v = nn.Linear(dc, d, bias=False)
        s.to_out = nn.Sequential(nn.Linear(d, d), nn.Dropout(0.0))

    def forward(s, x, ctx=None):
        ctx = x if ctx is None else ctx
        q, k, v = s.to_q(x), s.to_k(ctx), s.to_v(ctx)
        B, N, C = q.shape
        q, k, v = (t.reshape(B, -1, s.h, C // s.h).transpose(1, 2) for t in (q, k, v))
        a = (q @ k.transpose(-1, -2) * (C // s.h) ** -0.5).softmax(-1)
        return s.to_out((a @ v).transpose(1, 2).reshape(B, N, C))


class GEGLU(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.proj = nn.Linear(d, 2 * h)

    def forward(s, x):
        x, g = s.proj(x).chunk(2, -1)
        return x * F.gelu(g)


class FeedForward(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.net = nn.Sequential(GEGLU(d, 4 * d), nn.Dropout(0.0), nn.Linear(4 * d, d))

    def forward(s, x):
        return s.net(x)


class BasicTransformerBlock(nn.Module):
    def __init__(s, d, dc, h):
        super().__init__()
        s.attn1 = CrossAttention(d, d, h)
        s.ff = FeedForward(d)
        s.attn2 = CrossAttention(d, dc, h)
        s.norm1 = nn.LayerNorm(d)
        s.norm2 = nn.LayerNorm(d)
        s.norm3 = nn.LayerNorm(d)

    def forward(s, x, ctx):
        x = s.attn1(s.norm1(x)) + x
        x = s.attn2(s.norm2(x), ctx) + x
        return s.ff(s.norm3(x)) + x


class SpatialTransformer(nn.Module):
    def __init__(s, c, dc, h=4, depth=1):
        super().__init__()
        s.norm = nn.GroupNorm(8, c)
        s.proj_in = nn.Conv2d(c, c, 1)
        s.transformer_blocks = nn.ModuleList(BasicTransformerBlock(c, dc, h) for _ in range(depth))
        s.proj_out = nn.Conv2d(c, c, 1)

    def forward(s, x, ctx):
        B, C, H, W = x.shape
        x_in = x
        x = s.proj_in(s.norm(x)).permute(0, 2, 3, 1).reshape(B, H * W, C)
        for b in s.transformer_blocks:
            x = b(x, ctx)
        return s.proj_out(x.reshape(B, H, W, C).permute(0, 3, 1, 2)) + x_in


class SDResBlock(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.in_layers = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, c, 3, 1, 1))
        s.out_layers = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Dropout(0.0), nn.Conv2d(c, c, 3, 1, 1))

    def forward(s, x):
        return x + s.out_layers(s.in_layers(x))


class SDMini(nn.Module):
    def __init__(s, c=32, dc=24):
        super().__init__()
        s.conv_in = nn.Conv2d(4, c, 3, 1, 1)
        s.blocks = nn.ModuleList(
            [SDResBlock(c), SpatialTransformer(c, dc), SDResBlock(c), SpatialTransformer(c, dc)]
        )
        s.out = nn.Sequential(nn.GroupNorm(8, c), nn.SiLU(), nn.Conv2d(c, 4, 3, 1, 1))

    def forward(s, x, ctx):
        x = s.conv_in(x)
        for b in s.blocks:
            x = b(x, ctx) if isinstance(b, SpatialTransformer) else b(x)
        return s.out(x)


# SAM-like image encoder: ViT blocks with windowed attention (pad, partition, unpartition) and a neck of convs with LayerNorm2d.
class SamAttention(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.h = h
        s.qkv = nn.Linear(d, 3 * d)
        s.proj = nn.Linear(d, d)

    def forward(s, x):
        B, H, W, C = x.shape
        q, k, v = (
            s.qkv(x)
            .reshape(B, H * W, 3, s.h, -1)
            .permute(2, 0, 3, 1, 4)
            .reshape(3, B * s.h, H * W, -1)
            .unbind(0)
        )
        a = ((q * (C // s.h) ** -0.5) @ k.transpose(-2, -1)).softmax(-1)
        return s.proj((a @ v).view(B, s.h, H, W, -1).permute(0, 2, 3, 1, 4).reshape(B, H, W, -1))


class SamBlock(nn.Module):
    def __init__(s, d, h, win):
        super().__init__()
        s.norm1 = nn.LayerNorm(d)
        s.attn = SamAttention(d, h)
        s.norm2 = nn.LayerNorm(d)
        s.mlp = rc.Mlp(d, 4 * d)
        s.win = win

    def forward(s, x):
        sc = x
        x = s.norm1(x)
        if s.win > 0:
            B, H, W, C = x.shape
            w = s.win
            x = x.view(B, H // w, w, W // w, w, C).permute(0, 1, 3, 2, 4, 5).reshape(-1, w, w, C)
        x = s.attn(x)
        if s.win > 0:
            x = x.view(B, H // w, W // w, w, w, -1).permute(0, 1, 3, 2, 4, 5).reshape(B, H, W, -1)
        x = sc + x
        return x + s.mlp(s.norm2(x))


class LayerNorm2d(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.weight = nn.Parameter(torch.ones(c))
        s.bias = nn.Parameter(torch.zeros(c))

    def forward(s, x):
        u = x.mean(1, keepdim=True)
        v = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(v + 1e-6)
        return s.weight[:, None, None] * x + s.bias[:, None, None]


class SamEncoder(nn.Module):
    def __init__(s, d=48):
        super().__init__()
        s.patch_embed = nn.Conv2d(3, d, 4, 4)
        s.pos_embed = nn.Parameter(torch.zeros(1, 8, 8, d))
        s.blocks = nn.ModuleList([SamBlock(d, 4, 4), SamBlock(d, 4, 0), SamBlock(d, 4, 4), SamBlock(d, 4, 0)])
        s.neck = nn.Sequential(
            nn.Conv2d(d, 32, 1, bias=False),
            LayerNorm2d(32),
            nn.Conv2d(32, 32, 3, padding=1, bias=False),
            LayerNorm2d(32),
        )
        s.head = nn.Linear(32, 10)

    def forward(s, x):
        x = s.patch_embed(x).permute(0, 2, 3, 1) + s.pos_embed
        for b in s.blocks:
            x = b(x)
        return s.head(s.neck(x.permute(0, 3, 1, 2)).mean([2, 3]))


# ConvMixer: patch conv+GELU+BN, blocks of Residual(depthwise conv, GELU, BN) then pointwise conv, GELU, BN.
class Residual(nn.Module):
    def __init__(s, fn):
        super().__init__()
        s.fn = fn

    def forward(s, x):
        return s.fn(x) + x


class ConvMixer(nn.Sequential):
    """The paper's nn.Sequential, as a class of its own so that its root module is named."""

    def __init__(s, dim=48, depth=4, k=5, p=4, n=10):
        super().__init__(
            nn.Conv2d(3, dim, p, p),
            nn.GELU(),
            nn.BatchNorm2d(dim),
            *[
                nn.Sequential(
                    Residual(
                        nn.Sequential(
                            nn.Conv2d(dim, dim, k, groups=dim, padding="same"), nn.GELU(), nn.BatchNorm2d(dim)
                        )
                    ),
                    nn.Conv2d(dim, dim, 1),
                    nn.GELU(),
                    nn.BatchNorm2d(dim),
                )
                for _ in range(depth)
            ],
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(dim, n),
        )


# Res2Net bottleneck: 1x1 conv, split into scales, hierarchical 3x3 convs, cat, 1x1 conv, residual.
class Bottle2neck(nn.Module):
    def __init__(s, cin, w, scale=4):
        super().__init__()
        s.scale = scale
        s.w = w
        s.conv1 = nn.Conv2d(cin, w * scale, 1, bias=False)
        s.bn1 = nn.BatchNorm2d(w * scale)
        s.convs = nn.ModuleList(nn.Conv2d(w, w, 3, 1, 1, bias=False) for _ in range(scale - 1))
        s.bns = nn.ModuleList(nn.BatchNorm2d(w) for _ in range(scale - 1))
        s.conv3 = nn.Conv2d(w * scale, cin, 1, bias=False)
        s.bn3 = nn.BatchNorm2d(cin)
        s.relu = nn.ReLU(inplace=True)

    def forward(s, x):
        out = s.relu(s.bn1(s.conv1(x)))
        spx = torch.split(out, s.w, 1)
        for i in range(s.scale - 1):
            sp = spx[i] if i == 0 else sp + spx[i]
            sp = s.relu(s.bns[i](s.convs[i](sp)))
            out = sp if i == 0 else torch.cat((out, sp), 1)
        out = torch.cat((out, spx[s.scale - 1]), 1)
        return s.relu(s.bn3(s.conv3(out)) + x)


class Res2NetSmall(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(
            nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True)
        )
        s.layer = nn.Sequential(*[Bottle2neck(32, 8) for _ in range(3)])
        s.fc = nn.Linear(32, 10)

    def forward(s, x):
        return s.fc(s.layer(s.stem(x)).mean([2, 3]))


# HRNet-lite: two parallel branches of basic blocks, fused by upsampling and strided conv.
class BasicBlock(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.conv1 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        s.bn1 = nn.BatchNorm2d(c)
        s.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        s.bn2 = nn.BatchNorm2d(c)
        s.relu = nn.ReLU(inplace=True)

    def forward(s, x):
        return s.relu(s.bn2(s.conv2(s.relu(s.bn1(s.conv1(x))))) + x)


class HRModule(nn.Module):
    def __init__(s, c1, c2):
        super().__init__()
        s.branch1 = nn.Sequential(BasicBlock(c1), BasicBlock(c1))
        s.branch2 = nn.Sequential(BasicBlock(c2), BasicBlock(c2))
        s.up = nn.Sequential(
            nn.Conv2d(c2, c1, 1, bias=False), nn.BatchNorm2d(c1), nn.Upsample(scale_factor=2)
        )
        s.down = nn.Sequential(nn.Conv2d(c1, c2, 3, 2, 1, bias=False), nn.BatchNorm2d(c2))
        s.relu = nn.ReLU()

    def forward(s, x1, x2):
        y1, y2 = s.branch1(x1), s.branch2(x2)
        return s.relu(y1 + s.up(y2)), s.relu(y2 + s.down(y1))


class HRNetLite(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        s.transition = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        s.stage = nn.ModuleList([HRModule(16, 32), HRModule(16, 32)])
        s.head = nn.Linear(48, 10)

    def forward(s, x):
        x1 = s.stem(x)
        x2 = s.transition(x1)
        for m in s.stage:
            x1, x2 = m(x1, x2)
        return s.head(torch.cat([x1.mean([2, 3]), x2.mean([2, 3])], 1))


# TimeSformer-lite: divided space-time attention: temporal attention, spatial attention, MLP, each pre-norm.
class TAttention(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.h = h
        s.qkv = nn.Linear(d, 3 * d)
        s.proj = nn.Linear(d, d)

    def forward(s, x):
        B, N, C = x.shape
        q, k, v = s.qkv(x).reshape(B, N, 3, s.h, C // s.h).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-2, -1) * (C // s.h) ** -0.5).softmax(-1)
        return s.proj((a @ v).transpose(1, 2).reshape(B, N, C))


class DividedBlock(nn.Module):
    def __init__(s, d, h, T):
        super().__init__()
        s.T = T
        s.temporal_norm1 = nn.LayerNorm(d)
        s.temporal_attn = TAttention(d, h)
        s.temporal_fc = nn.Linear(d, d)
        s.norm1 = nn.LayerNorm(d)
        s.attn = TAttention(d, h)
        s.norm2 = nn.LayerNorm(d)
        s.mlp = rc.Mlp(d, 4 * d)

    def forward(s, x):
        B, TN, C = x.shape
        T = s.T
        N = TN // T
        xt = x.reshape(B, T, N, C).permute(0, 2, 1, 3).reshape(B * N, T, C)
        res_t = s.temporal_fc(s.temporal_attn(s.temporal_norm1(xt)))
        x = x + res_t.reshape(B, N, T, C).permute(0, 2, 1, 3).reshape(B, TN, C)
        xs = x.reshape(B * T, N, C)
        x = x + s.attn(s.norm1(xs)).reshape(B, TN, C)
        return x + s.mlp(s.norm2(x))


class TimeSformerLite(nn.Module):
    def __init__(s, d=48, T=4):
        super().__init__()
        s.T = T
        s.patch = nn.Conv2d(3, d, 8, 8)
        s.pos = nn.Parameter(torch.zeros(1, 16, d))
        s.time = nn.Parameter(torch.zeros(1, T, 1, d))
        s.blocks = nn.ModuleList(DividedBlock(d, 4, T) for _ in range(3))
        s.norm = nn.LayerNorm(d)
        s.head = nn.Linear(d, 5)

    def forward(s, v):
        B, T = v.shape[:2]
        x = s.patch(v.flatten(0, 1)).flatten(2).transpose(1, 2) + s.pos
        x = (x.reshape(B, T, 16, -1) + s.time).reshape(B, T * 16, -1)
        for b in s.blocks:
            x = b(x)
        return s.head(s.norm(x).mean(1))


REGISTRY = [
    ("repvgg_train", "residual", "sgd", lambda: image_cls(RepVGG(), 2, 32)),
    ("poolformer", "convnext", "adamw", lambda: image_cls(PoolFormer(), 2, 32)),
    ("pvt_tiny", "vit", "adamw", lambda: image_cls(PVT(), 2, 32)),
    (
        "detr_tiny",
        "detection",
        "adamw",
        lambda: dict(model=DETR(), inputs=(randn(2, 3, 64, 64),), target=None, loss=detr_loss),
    ),
    ("sknet_small", "residual", "sgd", lambda: image_cls(SKNet(), 2, 32)),
    ("yolov8_ish", "detection", "sgd", lambda: image_cls(YoloV8ish(), 2, 64)),
    (
        "sd_mini",
        "diffusion",
        "adamw",
        lambda: dict(
            model=SDMini(),
            inputs=(randn(2, 4, 8, 8), randn(2, 6, 24, seed=3)),
            target=randn(2, 4, 8, 8, seed=4),
            loss=mse,
        ),
    ),
    ("sam_encoder", "vit", "adamw", lambda: image_cls(SamEncoder(), 2, 32)),
    ("convmixer", "convnext", "adamw", lambda: image_cls(ConvMixer(), 2, 32)),
    ("res2net_small", "residual", "sgd", lambda: image_cls(Res2NetSmall(), 2, 32)),
    ("hrnet_lite", "residual", "sgd", lambda: image_cls(HRNetLite(), 2, 32)),
    (
        "timesformer_lite",
        "video",
        "adamw",
        lambda: dict(
            model=TimeSformerLite(), inputs=(randn(2, 4, 3, 32, 32),), target=randint(5, 2, seed=3), loss=ce
        ),
    ),
]
