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
stacked LSTM, a GCN on a sparse adjacency, and torchvision's MC3-18 and RAFT-small. Every
model's split is "tune": the layer inference may be tuned on it. tests/data/corpus-cpu-heldout
stays the check, and no model name is shared with any other corpus.

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_families.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_families.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-families.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, image_cls, mse, randint, randn  # noqa: E402

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
]

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
