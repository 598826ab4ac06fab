#!/usr/bin/env python3
"""Record Strata's families CPU tuning corpus: architectures none of the other corpora holds.

tests/data/corpus-cpu and corpus-cpu-modern cover the families the layer inference was first
written for. This script records a fourth corpus, tests/data/corpus-cpu-families, of models
from families they lack or write another way: a WaveNet (gated dilated convs, a residual and a
skip output per layer), a TCN (weight-normed causal convs, the projection shortcut after the
branch), QuartzNet and DeepSpeech2 (speech: separable 1-D conv blocks; convs, then
bidirectional GRUs), a CLIP-like dual encoder (a ResNet and a text transformer), AutoInt and
Wide & Deep (recommendation: attention over fields; a wide and a deep part), a Switch
Transformer (top-1 routing by max), MobileNet V1 (separable convs, no residuals), ConvNeXt V2
(GRN), a residual U-Net, PointNet, DCGAN, a VAE, a BERT on nn.TransformerEncoder with GELU, a
stacked LSTM, a GCN on a sparse adjacency, torchvision's MC3-18 and RAFT-small, GPT-2 as Hugging
Face writes it, a DenseNet of basic layers, a dense-adjacency GAT, GraphSAGE with mean
aggregation, a Mixtral-like MoE, a BiLSTM with attention pooling, a transformer-decoder image
captioner, a timm-style ViT, DIN, GhostNet, LeNet-5, the common bilinear U-Net, a
character-aware CNN-LSTM, an SE-ResNet and an EfficientNet written by hand, a YOLOv5-like
backbone (C3 and SPPF), a DiT (adaLN-modulated transformer) and a HiFi-GAN generator, and the
models of record_cpu_families_more.py (a timm-style Swin, a MeshGraphNets-like processor,
transformers with nn.MultiheadAttention, by hand and Hugging Face's way, an additive-attention
GRU, a residual GCN, a BoTNet-like ResNet), of record_cpu_families_vision.py (RepVGG,
PoolFormer, PVT, DETR, SK-Net, YOLOv8, a Stable-Diffusion-like UNet, SAM's encoder, ConvMixer,
Res2Net, HRNet, TimeSformer) and of record_cpu_families_sequence.py (ALBERT, Mamba, N-BEATS,
FT-Transformer, Perceiver, BART, PatchTST, SASRec, TFT, EGNN, MMoE, a graph transformer,
EnCodec, T5). Every
model's split is "tune": the layer inference may be tuned on it. tests/data/corpus-cpu-heldout
stays the check, and no model name is shared with any other corpus.

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_families.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_families.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-families.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
import record_cpu_families_more  # noqa: E402  (the corpus's later models)
import record_cpu_families_sequence  # noqa: E402
import record_cpu_families_vision  # noqa: E402
from record_cpu_corpus import SPPF, TMlp, YoloConv, ce, image_cls, mse, randint, randn  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torchvision import models as tvm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


class WaveBlock(nn.Module):
    def __init__(self, c, d):
        super().__init__()
        self.filt = nn.Conv1d(c, c, 2, dilation=d, padding=d)
        self.gate = nn.Conv1d(c, c, 2, dilation=d, padding=d)
        self.res = nn.Conv1d(c, c, 1)
        self.skip = nn.Conv1d(c, c, 1)

    def forward(self, x):
        n = x.shape[-1]
        h = torch.tanh(self.filt(x)[..., :n]) * torch.sigmoid(self.gate(x)[..., :n])
        return x + self.res(h), self.skip(h)


class WaveNet(nn.Module):
    def __init__(self, c=32, layers=8):
        super().__init__()
        self.inp = nn.Conv1d(1, c, 1)
        self.blocks = nn.ModuleList([WaveBlock(c, 2 ** (i % 4)) for i in range(layers)])
        self.out1 = nn.Conv1d(c, c, 1)
        self.out2 = nn.Conv1d(c, 16, 1)

    def forward(self, x):
        x = self.inp(x)
        s = 0
        for b in self.blocks:
            x, k = b(x)
            s = s + k
        return self.out2(F.relu(self.out1(F.relu(s)))).mean(-1)


class Gen(nn.Module):
    def __init__(self, z=32, c=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.ConvTranspose2d(z, c * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(c * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(c * 4, c * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(c * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(c * 2, c, 4, 2, 1, bias=False),
            nn.BatchNorm2d(c),
            nn.ReLU(True),
            nn.ConvTranspose2d(c, 3, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.net(z)


class Disc(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, c, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, True),
            nn.Conv2d(c, c * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(c * 2),
            nn.LeakyReLU(0.2, True),
            nn.Conv2d(c * 2, c * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(c * 4),
            nn.LeakyReLU(0.2, True),
            nn.Conv2d(c * 4, 1, 4, 1, 0, bias=False),
        )

    def forward(self, x):
        return self.net(x).flatten(1)


class GanStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.g = Gen()
        self.d = Disc()

    def forward(self, z):
        return self.d(self.g(z))


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(1, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 4, 2, 1), nn.ReLU(), nn.Flatten()
        )
        self.mu = nn.Linear(64 * 7 * 7, 16)
        self.logvar = nn.Linear(64 * 7 * 7, 16)
        self.dec_in = nn.Linear(16, 64 * 7 * 7)
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(64, 32, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(32, 1, 4, 2, 1), nn.Sigmoid()
        )

    def forward(self, x):
        h = self.enc(x)
        mu, lv = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * lv)
        return self.dec(self.dec_in(z).view(-1, 64, 7, 7))


class TextEnc(nn.Module):
    def __init__(self, vocab=500, d=64, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(16, d))
        self.layers = nn.ModuleList(
            [nn.TransformerEncoderLayer(d, 4, 128, batch_first=True, norm_first=True) for _ in range(layers)]
        )
        self.ln = nn.LayerNorm(d)
        self.proj = nn.Linear(d, 32, bias=False)

    def forward(self, t):
        x = self.tok(t) + self.pos
        for l in self.layers:
            x = l(x)
        return self.proj(self.ln(x)[:, 0])


class Clip(nn.Module):
    def __init__(self):
        super().__init__()
        self.img = tvm.resnet18(weights=None, num_classes=32)
        self.txt = TextEnc()
        self.scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, im, t):
        a = F.normalize(self.img(im), dim=-1)
        b = F.normalize(self.txt(t), dim=-1)
        return a @ b.t() * self.scale.exp()


class PointNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(3, 64, 1)
        self.b1 = nn.BatchNorm1d(64)
        self.c2 = nn.Conv1d(64, 128, 1)
        self.b2 = nn.BatchNorm1d(128)
        self.c3 = nn.Conv1d(128, 256, 1)
        self.b3 = nn.BatchNorm1d(256)
        self.f1 = nn.Linear(256, 128)
        self.bf = nn.BatchNorm1d(128)
        self.drop = nn.Dropout(0.3)
        self.f2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.b1(self.c1(x)))
        x = F.relu(self.b2(self.c2(x)))
        x = self.b3(self.c3(x))
        x = torch.max(x, 2)[0]
        return self.f2(self.drop(F.relu(self.bf(self.f1(x)))))


class TCNBlock(nn.Module):
    def __init__(self, cin, cout, d):
        super().__init__()
        self.c1 = nn.utils.weight_norm(nn.Conv1d(cin, cout, 3, padding=2 * d, dilation=d))
        self.c2 = nn.utils.weight_norm(nn.Conv1d(cout, cout, 3, padding=2 * d, dilation=d))
        self.drop = nn.Dropout(0.1)
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None
        self.pad = 2 * d

    def forward(self, x):
        h = self.drop(F.relu(self.c1(x)[..., : -self.pad]))
        h = self.drop(F.relu(self.c2(h)[..., : -self.pad]))
        return F.relu(h + (x if self.down is None else self.down(x)))


class TCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            TCNBlock(8, 32, 1), TCNBlock(32, 32, 2), TCNBlock(32, 32, 4), TCNBlock(32, 32, 8)
        )
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        return self.head(self.net(x)[..., -1])


def mlp(dims, act=nn.ReLU, drop=0.0):
    l = []
    for a, b in zip(dims[:-1], dims[1:]):
        l += [nn.Linear(a, b), act()] + ([nn.Dropout(drop)] if drop else [])
    return nn.Sequential(*l)


class WideDeep(nn.Module):
    def __init__(self, fields=6, vocab=100, d=16):
        super().__init__()
        self.embs = nn.ModuleList([nn.Embedding(vocab, d) for _ in range(fields)])
        self.wide = nn.Linear(fields * vocab // 10, 1)
        self.deep = mlp([fields * d, 64, 32], drop=0.1)
        self.out = nn.Linear(32, 1)

    def forward(self, ids, wide_x):
        e = torch.cat([m(ids[:, i]) for i, m in enumerate(self.embs)], 1)
        return (self.wide(wide_x) + self.out(self.deep(e))).squeeze(1)


class AutoIntLayer(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.res = nn.Linear(d, d)

    def forward(self, x):
        a, _ = self.attn(x, x, x)
        return F.relu(a + self.res(x))


class AutoInt(nn.Module):
    def __init__(self, fields=6, vocab=100, d=16):
        super().__init__()
        self.emb = nn.Embedding(fields * vocab, d)
        self.offsets = torch.arange(fields) * vocab
        self.layers = nn.ModuleList([AutoIntLayer(d) for _ in range(3)])
        self.out = nn.Linear(fields * d, 1)

    def forward(self, ids, wide_x):
        x = self.emb(ids + self.offsets)
        for l in self.layers:
            x = l(x)
        return self.out(x.flatten(1)).squeeze(1)


class QuartzBlock(nn.Module):
    def __init__(self, c, k, reps=3):
        super().__init__()
        layers = []
        for r in range(reps):
            layers += [nn.Conv1d(c, c, k, padding=k // 2, groups=c), nn.Conv1d(c, c, 1), nn.BatchNorm1d(c)]
            if r < reps - 1:
                layers += [nn.ReLU(), nn.Dropout(0.1)]
        self.body = nn.Sequential(*layers)
        self.res = nn.Sequential(nn.Conv1d(c, c, 1), nn.BatchNorm1d(c))
        self.act = nn.Sequential(nn.ReLU(), nn.Dropout(0.1))

    def forward(self, x):
        return self.act(self.body(x) + self.res(x))


class QuartzNet(nn.Module):
    def __init__(self, c=64, vocab=29):
        super().__init__()
        self.pre = nn.Sequential(nn.Conv1d(40, c, 11, stride=2, padding=5), nn.BatchNorm1d(c), nn.ReLU())
        self.blocks = nn.Sequential(*[QuartzBlock(c, k) for k in (13, 15, 17, 19)])
        self.post = nn.Sequential(nn.Conv1d(c, c, 1), nn.BatchNorm1d(c), nn.ReLU(), nn.Conv1d(c, vocab, 1))

    def forward(self, x):
        return self.post(self.blocks(self.pre(x))).mean(-1)


class DeepSpeech2(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 8, (11, 11), (2, 2), (5, 5)),
            nn.BatchNorm2d(8),
            nn.Hardtanh(0, 20, inplace=True),
            nn.Conv2d(8, 8, (11, 11), (2, 1), (5, 5)),
            nn.BatchNorm2d(8),
            nn.Hardtanh(0, 20, inplace=True),
        )
        self.rnns = nn.ModuleList(
            [nn.GRU(8 * 10 if i == 0 else 64, 32, bidirectional=True, batch_first=True) for i in range(3)]
        )
        self.norms = nn.ModuleList([nn.BatchNorm1d(64) for _ in range(2)])
        self.fc = nn.Linear(64, 29)

    def forward(self, x):
        x = self.conv(x)  # b, c, f, t
        b, c, f, t = x.shape
        x = x.view(b, c * f, t).transpose(1, 2)
        for i, r in enumerate(self.rnns):
            if i > 0:
                x = self.norms[i - 1](x.transpose(1, 2)).transpose(1, 2)
            x, _ = r(x)
        return self.fc(x).mean(1)


def dw(cin, cout, s):
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, s, 1, groups=cin, bias=False),
        nn.BatchNorm2d(cin),
        nn.ReLU(inplace=True),
        nn.Conv2d(cin, cout, 1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class MobileNetV1(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2)] + [
            (512, 512, 1)
        ] * 3
        self.stem = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True)
        )
        self.features = nn.Sequential(*[dw(a, b, s) for a, b, s in cfg])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        return self.fc(self.pool(self.features(self.stem(x))).flatten(1))


class GRN(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.g = nn.Parameter(torch.zeros(1, 1, 1, d))
        self.b = nn.Parameter(torch.zeros(1, 1, 1, d))

    def forward(self, x):
        gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.g * (x * nx) + self.b + x


class CNv2Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d)
        self.pw1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.grn = GRN(4 * d)
        self.pw2 = nn.Linear(4 * d, d)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.pw2(self.grn(self.act(self.pw1(self.norm(y))))).permute(0, 3, 1, 2)
        return x + y


class LN2d(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtV2(nn.Module):
    def __init__(self, dims=(32, 64, 128), depths=(2, 2, 4)):
        super().__init__()
        self.down = nn.ModuleList(
            [nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LN2d(dims[0]))]
            + [nn.Sequential(LN2d(dims[i]), nn.Conv2d(dims[i], dims[i + 1], 2, 2)) for i in range(2)]
        )
        self.stages = nn.ModuleList(
            [nn.Sequential(*[CNv2Block(dims[i]) for _ in range(depths[i])]) for i in range(3)]
        )
        self.norm = nn.LayerNorm(dims[-1])
        self.head = nn.Linear(dims[-1], 10)

    def forward(self, x):
        for d, s in zip(self.down, self.stages):
            x = s(d(x))
        return self.head(self.norm(x.mean([-2, -1])))


class ResConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, 1, 1)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1)
        self.b2 = nn.BatchNorm2d(cout)
        self.skip = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.skip(x))


class ResUNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.e1 = ResConv(3, c)
        self.e2 = ResConv(c, 2 * c)
        self.e3 = ResConv(2 * c, 4 * c)
        self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, 2)
        self.d2 = ResConv(4 * c, 2 * c)
        self.up1 = nn.ConvTranspose2d(2 * c, c, 2, 2)
        self.d1 = ResConv(2 * c, c)
        self.out = nn.Conv2d(c, 5, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool2d(a, 2))
        c = self.e3(F.max_pool2d(b, 2))
        d = self.d2(torch.cat([self.up2(c), b], 1))
        e = self.d1(torch.cat([self.up1(d), a], 1))
        return self.out(e)


class SwitchFF(nn.Module):
    def __init__(self, d=64, experts=4):
        super().__init__()
        self.router = nn.Linear(d, experts, bias=False)
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d)) for _ in range(experts)]
        )

    def forward(self, x):
        b, t, d = x.shape
        x = x.reshape(-1, d)
        p = F.softmax(self.router(x), -1)
        w, idx = p.max(-1)
        out = torch.zeros_like(x)
        for i, e in enumerate(self.experts):
            m = idx == i
            if m.any():
                out[m] = e(x[m]) * w[m, None]
        return out.view(b, t, d)


class SwitchLayer(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.ff = SwitchFF(d)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.ln2(x))


class SwitchLM(nn.Module):
    def __init__(self, vocab=500, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([SwitchLayer(d) for _ in range(3)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, t):
        x = self.emb(t)
        for l in self.layers:
            x = l(x)
        return self.head(self.ln(x))


class BertMHA(nn.Module):
    def __init__(self, vocab=500, d=64, layers=3):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(32, d)
        self.ln = nn.LayerNorm(d)
        self.drop = nn.Dropout(0.1)
        self.enc = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d, 4, 128, activation="gelu", batch_first=True), layers
        )
        self.pool = nn.Linear(d, d)
        self.cls = nn.Linear(d, 3)

    def forward(self, t):
        x = self.drop(self.ln(self.tok(t) + self.pos(torch.arange(t.shape[1]))))
        x = self.enc(x)
        return self.cls(torch.tanh(self.pool(x[:, 0])))


class StackedLSTM(nn.Module):
    def __init__(self, vocab=500):
        super().__init__()
        self.emb = nn.Embedding(vocab, 32)
        self.l1 = nn.LSTM(32, 64, batch_first=True)
        self.drop = nn.Dropout(0.2)
        self.l2 = nn.LSTM(64, 64, batch_first=True)
        self.fc = nn.Linear(64, 4)

    def forward(self, t):
        x, _ = self.l1(self.emb(t))
        x, (h, _) = self.l2(self.drop(x))
        return self.fc(h[-1])


class GCNSparse(nn.Module):
    def __init__(self, adj, cin=32, hid=64, out=7):
        super().__init__()
        self.adj = adj
        self.w = nn.ModuleList([nn.Linear(cin, hid), nn.Linear(hid, hid), nn.Linear(hid, out)])
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        for i, l in enumerate(self.w):
            x = torch.sparse.mm(self.adj, l(x))
            if i < 2:
                x = self.drop(F.relu(x))
        return x


def sparse_adj(n=512, e=4096):
    g = torch.Generator().manual_seed(3)
    src = torch.randint(0, n, (e,), generator=g)
    dst = torch.randint(0, n, (e,), generator=g)
    return torch.sparse_coo_tensor(torch.stack([src, dst]), torch.ones(e) / 8, (n, n)).coalesce()


class RaftLast(nn.Module):
    """torchvision's RAFT-small with 3 flow updates; the last flow is the output."""

    def __init__(self):
        super().__init__()
        self.m = tvm.optical_flow.raft_small(weights=None)

    def forward(self, a, b):
        return self.m(a, b, num_flow_updates=3)[-1]


def gan():
    return dict(
        model=GanStep(),
        inputs=(randn(4, 32, 1, 1),),
        target=torch.ones(4, 1),
        loss=lambda o, t: F.binary_cross_entropy_with_logits(o, t),
    )


def rec(model):
    return dict(
        model=model,
        inputs=(randint(100, 16, 6, seed=3), torch.rand(16, 60)),
        target=torch.rand(16),
        loss=lambda o, t: F.binary_cross_entropy_with_logits(o, t),
    )


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))
        self.nf = nf

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, d=64, h=4, n=32):
        super().__init__()
        self.h = h
        self.d = d
        self.register_buffer("bias", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n))
        self.c_attn = Conv1D(3 * d, d)
        self.c_proj = Conv1D(d, d)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)

    def _split(self, x):
        return x.view(x.size()[:-1] + (self.h, self.d // self.h)).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.d, dim=2)
        q, k, v = self._split(q), self._split(k), self._split(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / (v.size(-1) ** 0.5)
        t = q.size(-2)
        mask = self.bias[:, :, :t, :t]
        w = torch.where(mask, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        w = self.attn_dropout(nn.functional.softmax(w, dim=-1))
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous()
        a = a.view(a.size()[:-2] + (self.d,))
        return self.resid_dropout(self.c_proj(a))


class GPT2MLP(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.c_fc = Conv1D(4 * d, d)
        self.c_proj = Conv1D(d, 4 * d)
        self.act = NewGELU()
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = GPT2Attention(d)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = GPT2MLP(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, vocab=500, d=64, n=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(32, d)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([GPT2Block(d) for _ in range(n)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, t):
        pos = torch.arange(0, t.size(-1), dtype=torch.long).unsqueeze(0)
        x = self.drop(self.wte(t) + self.wpe(pos))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


class DenseLayer(nn.Module):
    def __init__(self, cin, g):
        super().__init__()
        self.bn = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, g, 3, padding=1, bias=False)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        return self.drop(self.conv(F.relu(self.bn(x))))


class Transition(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.bn = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNetF(nn.Module):
    def __init__(self, g=12):
        super().__init__()
        c = 2 * g
        self.conv1 = nn.Conv2d(3, c, 3, padding=1, bias=False)
        self.b1 = rh.DenseBlockCat(4, c, g, layer=DenseLayer)
        c += 4 * g
        self.t1 = Transition(c, c // 2)
        c //= 2
        self.b2 = rh.DenseBlockCat(4, c, g, layer=DenseLayer)
        c += 4 * g
        self.t2 = Transition(c, c // 2)
        c //= 2
        self.b3 = rh.DenseBlockCat(4, c, g, layer=DenseLayer)
        c += 4 * g
        self.bn = nn.BatchNorm2d(c)
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        x = self.t2(self.b2(self.t1(self.b1(self.conv1(x)))))
        x = F.relu(self.bn(self.b3(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class GATLayer(nn.Module):
    def __init__(self, cin, cout, heads=4, concat=True):
        super().__init__()
        self.W = nn.Linear(cin, cout * heads, bias=False)
        self.a_src = nn.Parameter(torch.randn(1, heads, cout) * 0.1)
        self.a_dst = nn.Parameter(torch.randn(1, heads, cout) * 0.1)
        self.h = heads
        self.c = cout
        self.concat = concat
        self.drop = nn.Dropout(0.1)

    def forward(self, x, adj):
        n = x.size(0)
        h = self.W(x).view(n, self.h, self.c)
        s = (h * self.a_src).sum(-1)
        d = (h * self.a_dst).sum(-1)
        e = F.leaky_relu(s.unsqueeze(1) + d.unsqueeze(0), 0.2)  # n, n, heads
        e = e.masked_fill(~adj.unsqueeze(-1), float("-inf"))
        att = self.drop(torch.softmax(e, dim=1))
        out = torch.einsum("ijh,jhc->ihc", att, h)
        return out.reshape(n, -1) if self.concat else out.mean(1)


class GATDense(nn.Module):
    def __init__(self, adj):
        super().__init__()
        self.adj = adj
        self.l1 = GATLayer(32, 16)
        self.l2 = GATLayer(64, 7, heads=1, concat=False)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        x = F.elu(self.l1(self.drop(x), self.adj))
        return self.l2(self.drop(x), self.adj)


class SAGELayer(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.lin_l = nn.Linear(cin, cout)
        self.lin_r = nn.Linear(cin, cout, bias=False)

    def forward(self, x, src, dst):
        agg = torch.zeros_like(x).index_add_(0, dst, x[src])
        deg = torch.zeros(x.size(0)).index_add_(0, dst, torch.ones(dst.size(0))).clamp(min=1)
        return self.lin_l(agg / deg.unsqueeze(1)) + self.lin_r(x)


class SAGE(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([SAGELayer(32, 64), SAGELayer(64, 64), SAGELayer(64, 7)])

    def forward(self, x, src, dst, *rest):
        for i, c in enumerate(self.convs):
            x = c(x, src, dst)
            if i < 2:
                x = F.dropout(F.relu(x), 0.5, self.training)
        return x


class MixtralMoE(nn.Module):
    def __init__(self, d=64, e=4):
        super().__init__()
        self.gate = nn.Linear(d, e, bias=False)
        self.experts = nn.ModuleList([rh.SwiGLUExpert(d, 96) for _ in range(e)])
        self.e = e

    def forward(self, x):
        b, t, d = x.shape
        x = x.view(-1, d)
        logits = self.gate(x)
        w, sel = torch.topk(logits, 2, dim=-1)
        w = F.softmax(w, dim=-1)
        out = torch.zeros_like(x)
        mask = F.one_hot(sel, self.e).permute(2, 1, 0)
        for i in range(self.e):
            idx, top = torch.where(mask[i])
            if top.numel() == 0:
                continue
            out.index_add_(0, top, self.experts[i](x[top]) * w[top, idx, None])
        self.aux = (
            F.one_hot(sel[:, 0], self.e).float().mean(0) * F.softmax(logits, -1).mean(0)
        ).sum() * self.e
        return out.view(b, t, d)


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class MixtralAttn(nn.Module):
    def __init__(self, d=64, h=4):
        super().__init__()
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.h = h

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = [m(x).view(b, t, self.h, -1).transpose(1, 2) for m in (self.q, self.k, self.v)]
        s = q @ k.transpose(-1, -2) / math.sqrt(d // self.h)
        s = s.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        return self.o((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))


class MixtralLayer(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.n1 = RMSNorm(d)
        self.attn = MixtralAttn(d)
        self.n2 = RMSNorm(d)
        self.moe = MixtralMoE(d)

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.moe(self.n2(x))


class MixtralLM(nn.Module):
    def __init__(self, vocab=600, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([MixtralLayer(d) for _ in range(3)])
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, t):
        x = self.emb(t)
        for l in self.layers:
            x = l(x)
        return self.head(self.norm(x))


class BiLSTMAttnPool(nn.Module):
    def __init__(self, vocab=500):
        super().__init__()
        self.emb = nn.Embedding(vocab, 32)
        self.lstm = nn.LSTM(32, 32, batch_first=True, bidirectional=True)
        self.att = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 1))
        self.fc = nn.Linear(64, 4)

    def forward(self, t):
        h, _ = self.lstm(self.emb(t))
        a = torch.softmax(self.att(h).squeeze(-1), dim=1)
        return self.fc((h * a.unsqueeze(-1)).sum(1))


class Captioner(nn.Module):
    def __init__(self, vocab=300, d=64):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, d, 3, 2, 1),
            nn.BatchNorm2d(d),
            nn.ReLU(),
        )
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, 16, d))
        self.dec = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d, 4, 128, batch_first=True, norm_first=True), 2
        )
        self.out = nn.Linear(d, vocab)

    def forward(self, img, t):
        mem = self.cnn(img).flatten(2).transpose(1, 2)
        x = self.emb(t) + self.pos[:, : t.size(1)]
        mask = torch.triu(torch.full((t.size(1), t.size(1)), float("-inf")), 1)
        return self.out(self.dec(x, mem, tgt_mask=mask))


def graph_inputs(n=512, e=4096):
    g = torch.Generator().manual_seed(3)
    src = torch.randint(0, n, (e,), generator=g)
    dst = torch.randint(0, n, (e,), generator=g)
    return src, dst


def adj_dense(n=256, e=2048):
    src, dst = graph_inputs(n, e)
    a = torch.zeros(n, n, dtype=torch.bool)
    a[dst, src] = True
    a |= torch.eye(n, dtype=torch.bool)
    return a


def ce_tok(o, t):
    return F.cross_entropy(o.reshape(-1, o.shape[-1]), t.reshape(-1))


class DropPath(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if self.p == 0.0 or not self.training:
            return x
        keep = 1 - self.p
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x * mask.div_(keep)


class LayerScale(nn.Module):
    def __init__(self, d, v=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(v * torch.ones(d))

    def forward(self, x):
        return x * self.gamma


class TAttn(nn.Module):
    def __init__(self, d, h=4):
        super().__init__()
        self.h = h
        self.scale = (d // h) ** -0.5
        self.qkv = nn.Linear(d, 3 * d)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(d, d)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = (q @ k.transpose(-2, -1)) * self.scale
        a = self.attn_drop(a.softmax(dim=-1))
        x = (a @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class TBlock(nn.Module):
    def __init__(self, d, dp):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = TAttn(d)
        self.ls1 = LayerScale(d)
        self.drop_path1 = DropPath(dp)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = TMlp(d)
        self.ls2 = LayerScale(d)
        self.drop_path2 = DropPath(dp)

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        return x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))


class PatchEmbed(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Conv2d(3, d, 8, 8)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class ViTTimm(nn.Module):
    def __init__(self, d=64, depth=4):
        super().__init__()
        self.patch_embed = PatchEmbed(d)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.zeros(1, 17, d))
        self.pos_drop = nn.Dropout(0.1)
        self.blocks = nn.Sequential(*[TBlock(d, 0.1 * i / depth) for i in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = self.pos_drop(x + self.pos_embed)
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


class DIN(nn.Module):
    def __init__(self, items=500, d=16):
        super().__init__()
        self.item = nn.Embedding(items, d)
        self.user = nn.Embedding(100, d)
        self.att = nn.Sequential(
            nn.Linear(4 * d, 32), nn.Sigmoid(), nn.Linear(32, 16), nn.Sigmoid(), nn.Linear(16, 1)
        )
        self.mlp = nn.Sequential(
            nn.Linear(3 * d, 64), nn.PReLU(), nn.Linear(64, 32), nn.PReLU(), nn.Linear(32, 1)
        )

    def forward(self, user, hist, target):
        h = self.item(hist)
        t = self.item(target).unsqueeze(1).expand_as(h)
        w = self.att(torch.cat([t, h, t - h, t * h], -1)).squeeze(-1)
        w = torch.softmax(w.masked_fill(hist == 0, -1e9), dim=1)
        pooled = (w.unsqueeze(-1) * h).sum(1)
        return self.mlp(torch.cat([self.user(user), pooled, self.item(target)], -1)).squeeze(-1)


class GhostModule(nn.Module):
    def __init__(self, cin, cout, relu=True):
        super().__init__()
        init = cout // 2
        self.primary = nn.Sequential(
            nn.Conv2d(cin, init, 1, bias=False),
            nn.BatchNorm2d(init),
            nn.ReLU(inplace=True) if relu else nn.Sequential(),
        )
        self.cheap = nn.Sequential(
            nn.Conv2d(init, init, 3, 1, 1, groups=init, bias=False),
            nn.BatchNorm2d(init),
            nn.ReLU(inplace=True) if relu else nn.Sequential(),
        )
        self.cout = cout

    def forward(self, x):
        a = self.primary(x)
        b = self.cheap(a)
        return torch.cat([a, b], 1)[:, : self.cout]


class GhostBottleneck(nn.Module):
    def __init__(self, cin, mid, cout, stride):
        super().__init__()
        self.g1 = GhostModule(cin, mid)
        self.stride = stride
        self.dw = (
            nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid))
            if stride > 1
            else None
        )
        self.g2 = GhostModule(mid, cout, relu=False)
        self.short = (
            nn.Sequential()
            if (cin == cout and stride == 1)
            else nn.Sequential(
                nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
                nn.BatchNorm2d(cin),
                nn.Conv2d(cin, cout, 1, bias=False),
                nn.BatchNorm2d(cout),
            )
        )

    def forward(self, x):
        r = x
        x = self.g1(x)
        if self.dw is not None:
            x = self.dw(x)
        return self.g2(x) + self.short(r)


class GhostNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True)
        )
        cfg = [
            (16, 16, 16, 1),
            (16, 48, 24, 2),
            (24, 72, 24, 1),
            (24, 72, 40, 2),
            (40, 120, 40, 1),
            (40, 240, 80, 2),
            (80, 200, 80, 1),
            (80, 184, 80, 1),
        ]
        self.blocks = nn.Sequential(*[GhostBottleneck(*c) for c in cfg])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(80, 10)

    def forward(self, x):
        return self.fc(self.pool(self.blocks(self.stem(x))).flatten(1))


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 6, 5, padding=2)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.f1 = nn.Linear(400, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.tanh(self.c1(x)), 2)
        x = F.max_pool2d(torch.tanh(self.c2(x)), 2)
        return self.f3(torch.tanh(self.f2(torch.tanh(self.f1(x.flatten(1))))))


class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(cin, cout))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        dy, dx = x2.size(2) - x1.size(2), x2.size(3) - x1.size(3)
        x1 = F.pad(x1, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNetBilinear(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.inc = DoubleConv(3, c)
        self.down1 = Down(c, 2 * c)
        self.down2 = Down(2 * c, 4 * c)
        self.down3 = Down(4 * c, 4 * c)
        self.up1 = Up(8 * c, 2 * c)
        self.up2 = Up(4 * c, c)
        self.up3 = Up(2 * c, c)
        self.outc = nn.Conv2d(c, 5, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x = self.up1(x4, x3)
        x = self.up2(x, x2)
        x = self.up3(x, x1)
        return self.outc(x)


class CharCNNLSTM(nn.Module):
    def __init__(self, chars=60, vocab=300):
        super().__init__()
        self.cemb = nn.Embedding(chars, 16)
        self.convs = nn.ModuleList([nn.Conv1d(16, 32, k) for k in (2, 3, 4)])
        self.hw = nn.Linear(96, 192)
        self.lstm = nn.LSTM(96, 64, num_layers=2, batch_first=True, dropout=0.2)
        self.out = nn.Linear(64, vocab)

    def forward(self, c):
        b, t, w = c.shape
        x = self.cemb(c.view(b * t, w)).transpose(1, 2)
        x = torch.cat([F.relu(conv(x)).max(-1)[0] for conv in self.convs], 1)
        g, h = self.hw(x).chunk(2, -1)
        x = torch.sigmoid(g) * F.relu(h) + (1 - torch.sigmoid(g)) * x
        y, _ = self.lstm(x.view(b, t, -1))
        return self.out(y)


class SELayer(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Linear(c, c // r, bias=False),
            nn.ReLU(inplace=True),
            nn.Linear(c // r, c, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        b, c, _, _ = x.size()
        y = self.avg(x).view(b, c)
        y = self.fc(y).view(b, c, 1, 1)
        return x * y.expand_as(x)


class SEBasic(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.se = SELayer(cout)
        self.downsample = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else None
        )

    def forward(self, x):
        r = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.se(self.bn2(self.conv2(out)))
        if self.downsample is not None:
            r = self.downsample(x)
        return self.relu(out + r)


class SEResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True)
        )
        self.layer1 = nn.Sequential(SEBasic(16, 16), SEBasic(16, 16))
        self.layer2 = nn.Sequential(SEBasic(16, 32, 2), SEBasic(32, 32))
        self.layer3 = nn.Sequential(SEBasic(32, 64, 2), SEBasic(64, 64))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.pool(self.layer3(self.layer2(self.layer1(self.stem(x))))).flatten(1))


class MBConv(nn.Module):
    def __init__(self, cin, cout, expand, stride):
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.expand = (
            nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU())
            if expand != 1
            else nn.Identity()
        )
        self.dw = nn.Sequential(
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid), nn.SiLU()
        )
        self.se_reduce = nn.Conv2d(mid, max(1, cin // 4), 1)
        self.se_expand = nn.Conv2d(max(1, cin // 4), mid, 1)
        self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = self.dw(self.expand(x))
        s = F.adaptive_avg_pool2d(h, 1)
        s = torch.sigmoid(self.se_expand(F.silu(self.se_reduce(s))))
        h = self.project(h * s)
        return x + h if self.use_res else h


class EffNetHW(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU())
        cfg = [
            (16, 16, 1, 1),
            (16, 24, 4, 2),
            (24, 24, 4, 1),
            (24, 40, 4, 2),
            (40, 40, 4, 1),
            (40, 80, 4, 2),
            (80, 80, 4, 1),
        ]
        self.blocks = nn.Sequential(*[MBConv(*c) for c in cfg])
        self.head = nn.Sequential(nn.Conv2d(80, 128, 1, bias=False), nn.BatchNorm2d(128), nn.SiLU())
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.head(self.blocks(self.stem(x))), 1).flatten(1))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = YoloConv(c, c, 1)
        self.cv2 = YoloConv(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C3(nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=True):
        super().__init__()
        c_ = c2 // 2
        self.cv1 = YoloConv(c1, c_)
        self.cv2 = YoloConv(c1, c_)
        self.cv3 = YoloConv(2 * c_, c2)
        self.m = nn.Sequential(*(Bottleneck(c_, shortcut) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class YoloLite(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            YoloConv(3, 16, 6, 2),
            YoloConv(16, 32, 3, 2),
            C3(32, 32, 1),
            YoloConv(32, 64, 3, 2),
            C3(64, 64, 2),
            YoloConv(64, 128, 3, 2),
            C3(128, 128, 1),
            SPPF(128, 128),
        )
        self.head = nn.Conv2d(128, 3 * 9, 1)

    def forward(self, x):
        return self.head(self.backbone(x)).mean((2, 3))


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class DiTBlock(nn.Module):
    def __init__(self, d, h=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.norm2 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d))

    def forward(self, x, c):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(
            6, dim=1
        )
        h = modulate(self.norm1(x), shift_msa, scale_msa)
        x = x + gate_msa.unsqueeze(1) * self.attn(h, h, h, need_weights=False)[0]
        return x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))


class TimestepEmbedder(nn.Module):
    def __init__(self, d, f=64):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(f, d), nn.SiLU(), nn.Linear(d, d))
        self.f = f

    def forward(self, t):
        half = self.f // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(0, half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], dim=-1))


class DiT(nn.Module):
    def __init__(self, d=64, depth=4):
        super().__init__()
        self.x_embedder = nn.Conv2d(4, d, 2, 2)
        self.t_embedder = TimestepEmbedder(d)
        self.y_embedder = nn.Embedding(10, d)
        self.pos = nn.Parameter(torch.zeros(1, 64, d))
        self.blocks = nn.ModuleList([DiTBlock(d) for _ in range(depth)])
        self.norm_final = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.adaLN_final = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        self.linear = nn.Linear(d, 2 * 2 * 4)

    def forward(self, x, t, y):
        x = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos
        c = self.t_embedder(t) + self.y_embedder(y)
        for b in self.blocks:
            x = b(x, c)
        shift, scale = self.adaLN_final(c).chunk(2, dim=1)
        return self.linear(modulate(self.norm_final(x), shift, scale))


class ResBlock1(nn.Module):
    def __init__(self, c, k=3, d=(1, 3, 5)):
        super().__init__()
        self.convs1 = nn.ModuleList([nn.Conv1d(c, c, k, 1, dilation=x, padding=x * (k - 1) // 2) for x in d])
        self.convs2 = nn.ModuleList([nn.Conv1d(c, c, k, 1, padding=(k - 1) // 2) for _ in d])

    def forward(self, x):
        for c1, c2 in zip(self.convs1, self.convs2):
            xt = c2(F.leaky_relu(c1(F.leaky_relu(x, 0.1)), 0.1))
            x = xt + x
        return x


class HiFiGen(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_pre = nn.Conv1d(40, 64, 7, 1, 3)
        self.ups = nn.ModuleList([nn.ConvTranspose1d(64, 32, 8, 4, 2), nn.ConvTranspose1d(32, 16, 8, 4, 2)])
        self.resblocks = nn.ModuleList([ResBlock1(32), ResBlock1(16)])
        self.conv_post = nn.Conv1d(16, 1, 7, 1, 3)

    def forward(self, x):
        x = self.conv_pre(x)
        for up, rb in zip(self.ups, self.resblocks):
            x = rb(up(F.leaky_relu(x, 0.1)))
        return torch.tanh(self.conv_post(F.leaky_relu(x)))


REGISTRY = [
    # name, family, optimizer, builder
    (
        "wavenet",
        "audio",
        "adam",
        lambda: dict(model=WaveNet(), inputs=(randn(4, 1, 256),), target=randint(16, 4, seed=3), loss=ce),
    ),
    ("dcgan", "gan", "adam", gan),
    (
        "vae",
        "autoencoder",
        "adam",
        lambda: dict(
            model=VAE(),
            inputs=(torch.rand(4, 1, 28, 28),),
            target=torch.rand(4, 1, 28, 28),
            loss=lambda o, t: F.binary_cross_entropy(o, t),
        ),
    ),
    (
        "clip_tiny",
        "multimodal",
        "adamw",
        lambda: dict(
            model=Clip(),
            inputs=(randn(4, 3, 32, 32), randint(500, 4, 16, seed=4)),
            target=torch.arange(4),
            loss=ce,
        ),
    ),
    (
        "pointnet",
        "point",
        "adam",
        lambda: dict(model=PointNet(), inputs=(randn(4, 3, 128),), target=randint(10, 4, seed=3), loss=ce),
    ),
    (
        "tcn",
        "tcn",
        "adam",
        lambda: dict(model=TCN(), inputs=(randn(4, 8, 64),), target=randint(5, 4, seed=3), loss=ce),
    ),
    (
        "mc3_18",
        "cnn3d",
        "sgd",
        lambda: dict(
            model=tvm.video.mc3_18(weights=None, num_classes=5),
            inputs=(randn(1, 3, 4, 32, 32),),
            target=randint(5, 1, seed=3),
            loss=ce,
        ),
    ),
    ("wide_deep", "recsys", "adam", lambda: rec(WideDeep())),
    ("autoint", "recsys", "adam", lambda: rec(AutoInt())),
    (
        "quartznet",
        "speech",
        "adam",
        lambda: dict(model=QuartzNet(), inputs=(randn(2, 40, 128),), target=randint(29, 2, seed=3), loss=ce),
    ),
    (
        "deepspeech2",
        "speech",
        "adam",
        lambda: dict(
            model=DeepSpeech2(), inputs=(randn(2, 1, 40, 64),), target=randint(29, 2, seed=3), loss=ce
        ),
    ),
    ("mobilenet_v1", "depthwise", "sgd", lambda: image_cls(MobileNetV1(), 2, 64)),
    ("convnext_v2_hw", "convnext", "adamw", lambda: image_cls(ConvNeXtV2(), 2, 64)),
    (
        "resunet",
        "unet",
        "adam",
        lambda: dict(
            model=ResUNet(), inputs=(randn(2, 3, 32, 32),), target=randint(5, 2, 32, 32, seed=3), loss=ce
        ),
    ),
    (
        "switch_lm",
        "moe",
        "adamw",
        lambda: dict(
            model=SwitchLM(),
            inputs=(randint(500, 4, 16, seed=3),),
            target=randint(500, 4, 16, seed=4),
            loss=lambda o, t: F.cross_entropy(o.reshape(-1, o.shape[-1]), t.reshape(-1)),
        ),
    ),
    (
        "bert_mha_gelu",
        "bert",
        "adamw",
        lambda: dict(
            model=BertMHA(), inputs=(randint(500, 4, 16, seed=3),), target=randint(3, 4, seed=4), loss=ce
        ),
    ),
    (
        "stacked_lstm",
        "rnn",
        "adam",
        lambda: dict(
            model=StackedLSTM(), inputs=(randint(500, 4, 16, seed=3),), target=randint(4, 4, seed=4), loss=ce
        ),
    ),
    (
        "gcn_sparse",
        "gnn",
        "adam",
        lambda: dict(
            model=GCNSparse(sparse_adj()), inputs=(randn(512, 32),), target=randint(7, 512, seed=4), loss=ce
        ),
    ),
    (
        "raft_small",
        "flow",
        "adamw",
        lambda: dict(
            model=RaftLast(),
            inputs=(randn(1, 3, 64, 64), randn(1, 3, 64, 64, seed=2)),
            target=randn(1, 2, 64, 64, seed=3),
            loss=mse,
        ),
    ),
    (
        "gpt2_hf",
        "gpt",
        "adamw",
        lambda: dict(
            model=GPT2(),
            inputs=(randint(500, 4, 32, seed=3),),
            target=randint(500, 4, 32, seed=4),
            loss=ce_tok,
        ),
    ),
    ("densenet_f", "dense", "sgd", lambda: image_cls(DenseNetF(), 4, 32)),
    (
        "gat_dense",
        "gnn",
        "adam",
        lambda: dict(
            model=GATDense(adj_dense()), inputs=(randn(256, 32),), target=randint(7, 256, seed=4), loss=ce
        ),
    ),
    (
        "sage_mean",
        "gnn",
        "adam",
        lambda: dict(
            model=SAGE(), inputs=(randn(512, 32), *graph_inputs()), target=randint(7, 512, seed=4), loss=ce
        ),
    ),
    (
        "mixtral_tiny",
        "moe",
        "adamw",
        lambda: dict(
            model=MixtralLM(),
            inputs=(randint(600, 4, 24, seed=3),),
            target=randint(600, 4, 24, seed=4),
            loss=ce_tok,
        ),
    ),
    (
        "bilstm_attn_pool",
        "rnn",
        "adam",
        lambda: dict(
            model=BiLSTMAttnPool(),
            inputs=(randint(500, 4, 16, seed=3),),
            target=randint(4, 4, seed=4),
            loss=ce,
        ),
    ),
    (
        "captioner",
        "seq2seq",
        "adamw",
        lambda: dict(
            model=Captioner(),
            inputs=(randn(4, 3, 32, 32), randint(300, 4, 12, seed=3)),
            target=randint(300, 4, 12, seed=4),
            loss=ce_tok,
        ),
    ),
    ("vit_timm", "vit", "adamw", lambda: image_cls(ViTTimm(), 4, 32)),
    (
        "din",
        "recsys",
        "adam",
        lambda: dict(
            model=DIN(),
            inputs=(randint(100, 32, seed=3), randint(500, 32, 10, seed=4), randint(500, 32, seed=5)),
            target=torch.rand(32),
            loss=lambda o, t: F.binary_cross_entropy_with_logits(o, t),
        ),
    ),
    ("ghostnet_small", "depthwise", "sgd", lambda: image_cls(GhostNet(), 2, 64)),
    (
        "lenet5",
        "cnn",
        "sgd",
        lambda: dict(model=LeNet5(), inputs=(randn(8, 1, 28, 28),), target=randint(10, 8, seed=3), loss=ce),
    ),
    (
        "unet_bilinear",
        "unet",
        "adam",
        lambda: dict(
            model=UNetBilinear(), inputs=(randn(2, 3, 32, 32),), target=randint(5, 2, 32, 32, seed=3), loss=ce
        ),
    ),
    (
        "char_cnn_lstm",
        "rnn",
        "adam",
        lambda: dict(
            model=CharCNNLSTM(),
            inputs=(randint(60, 4, 8, 6, seed=3),),
            target=randint(300, 4, 8, seed=4),
            loss=ce_tok,
        ),
    ),
    ("se_resnet_small", "residual", "sgd", lambda: image_cls(SEResNet(), 2, 32)),
    ("effnet_hw", "depthwise", "sgd", lambda: image_cls(EffNetHW(), 2, 64)),
    (
        "yolo_lite",
        "detection",
        "sgd",
        lambda: dict(model=YoloLite(), inputs=(randn(2, 3, 64, 64),), target=randn(2, 27, seed=3), loss=mse),
    ),
    (
        "dit_tiny",
        "diffusion",
        "adamw",
        lambda: dict(
            model=DiT(),
            inputs=(randn(2, 4, 16, 16), randint(1000, 2, seed=3), randint(10, 2, seed=4)),
            target=randn(2, 64, 16, seed=5),
            loss=mse,
        ),
    ),
    (
        "hifigan_lite",
        "audio",
        "adam",
        lambda: dict(model=HiFiGen(), inputs=(randn(2, 40, 16),), target=randn(2, 1, 256, seed=5), loss=mse),
    ),
]

REGISTRY += record_cpu_families_more.REGISTRY
REGISTRY += record_cpu_families_vision.REGISTRY
REGISTRY += record_cpu_families_sequence.REGISTRY

SPLIT_RULE = (
    "every model is tune: this corpus adds families the other corpora lack to the "
    "tuning set and shares no model name with tests/data/corpus-cpu, "
    "corpus-cpu-modern or corpus-cpu-heldout"
)

FAMILIES = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_families.py",
    os.path.join(DATA, "corpus-cpu-families"),
    [
        os.path.join(DATA, "corpus-cpu"),
        os.path.join(DATA, "corpus-cpu-modern"),
        os.path.join(DATA, "corpus-cpu-heldout"),
    ],
    __doc__,
)

if __name__ == "__main__":
    rh.main(FAMILIES)
