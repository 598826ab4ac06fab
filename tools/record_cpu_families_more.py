"""More models for the families CPU tuning corpus (tests/data/corpus-cpu-families), recorded by
tools/record_cpu_families.py with the others; here to keep that file to its first families.

A timm-style Swin (the block partitions its map into windows and calls a WindowAttention whose
position bias is gathered with its scores), a MeshGraphNets-like processor (edge and node
updates, each an MLP ending in a LayerNorm, summed back into their inputs), an
nn.TransformerDecoder language model with GELU, a GRU encoder-decoder with additive (Bahdanau)
attention scored through torch.tanh, a CNN of conv-BatchNorm-ReLU Sequentials under a pre-norm
nn.TransformerEncoder, a hand-written transformer that keeps its sequence first (its attention
transposes in and back out, on baddbmm), a BERT classifier written as Hugging Face writes it
(its pooler's nn.Tanh), a GCN with its residuals in the model's loop, and a BoTNet-like ResNet
whose last stage's 3x3 convs are self-attention over the map.
"""

import math

import record_cpu_heldout as rh
from record_cpu_corpus import TMlp, ce, ce_tokens, image_cls, mse, randint, randn

import torch
import torch.nn as nn
import torch.nn.functional as F


# 1. timm-style Swin: partition in the block, WindowAttention with qkv/proj modules, bias gathered after q@k.
def window_partition(x, w):
    B, H, W, C = x.shape
    x = x.view(B, H // w, w, W // w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, C)


def window_reverse(x, w, H, W):
    C = x.shape[-1]
    x = x.view(-1, H // w, W // w, w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, H, W, C)


class WindowAttention(nn.Module):
    def __init__(self, d, h, w):
        super().__init__()
        self.h = h
        self.scale = (d // h) ** -0.5
        self.rpb = nn.Parameter(torch.zeros((2 * w - 1) ** 2, h))
        c = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
        r = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + (w - 1)
        self.register_buffer("idx", r[..., 0] * (2 * w - 1) + r[..., 1])
        self.qkv = nn.Linear(d, 3 * d)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(d, d)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = (q * self.scale) @ k.transpose(-2, -1)
        a = a + self.rpb[self.idx.view(-1)].view(N, N, -1).permute(2, 0, 1).unsqueeze(0)
        a = self.attn_drop(a.softmax(-1))
        return self.proj_drop(self.proj((a @ v).transpose(1, 2).reshape(B, N, C)))


class SwinBlock(nn.Module):
    def __init__(self, d, h, w, shift):
        super().__init__()
        self.w = w
        self.shift = shift
        self.norm1 = nn.LayerNorm(d)
        self.attn = WindowAttention(d, h, w)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = TMlp(d)

    def forward(self, x):
        B, H, W, C = x.shape
        s = self.norm1(x)
        if self.shift:
            s = torch.roll(s, (-self.shift, -self.shift), (1, 2))
        s = window_reverse(self.attn(window_partition(s, self.w)), self.w, H, W)
        if self.shift:
            s = torch.roll(s, (self.shift, self.shift), (1, 2))
        x = x + s
        return x + self.mlp(self.norm2(x))


class TimmSwin(nn.Module):
    def __init__(self, d=48, w=4):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 4, 4)
        self.norm0 = nn.LayerNorm(d)
        self.blocks = nn.Sequential(*[SwinBlock(d, 3, w, 0 if i % 2 == 0 else w // 2) for i in range(4)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        x = self.norm0(self.patch(x).permute(0, 2, 3, 1))
        return self.head(self.norm(self.blocks(x)).mean((1, 2)))


# 2. MeshGraphNet-like processor: edge and node MLPs (Sequential + LayerNorm), residual.
def mlp_ln(i, o):
    return nn.Sequential(nn.Linear(i, o), nn.ReLU(), nn.Linear(o, o), nn.LayerNorm(o))


class GNBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.edge = mlp_ln(3 * d, d)
        self.node = mlp_ln(2 * d, d)

    def forward(self, x, e, src, dst):
        e2 = self.edge(torch.cat([x[src], x[dst], e], -1))
        agg = torch.zeros_like(x).index_add_(0, dst, e2)
        x2 = self.node(torch.cat([x, agg], -1))
        return x + x2, e + e2


class MeshGN(nn.Module):
    def __init__(self, d=32, steps=4):
        super().__init__()
        self.enc_n = mlp_ln(8, d)
        self.enc_e = mlp_ln(4, d)
        self.blocks = nn.ModuleList([GNBlock(d) for _ in range(steps)])
        self.dec = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 3))

    def forward(self, x, e, src, dst):
        x = self.enc_n(x)
        e = self.enc_e(e)
        for b in self.blocks:
            x, e = b(x, e, src, dst)
        return self.dec(x)


def b_mesh():
    g = torch.Generator().manual_seed(4)
    n, m = 256, 1024
    src = torch.randint(0, n, (m,), generator=g)
    dst = torch.randint(0, n, (m,), generator=g)
    return dict(
        model=MeshGN(),
        inputs=(randn(n, 8), randn(m, 4, seed=5), src, dst),
        target=randn(n, 3, seed=6),
        loss=mse,
    )


# 3. nn.TransformerDecoder (post-norm, gelu) language model over a memory.
class TDec(nn.Module):
    def __init__(self, v=300, d=64):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.dec = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d, 4, 128, 0.1, activation="gelu", batch_first=True), 3
        )
        self.out = nn.Linear(d, v)

    def forward(self, t, mem):
        return self.out(self.dec(self.emb(t), mem))


def b_tdec():
    ids = randint(300, 4, 17)
    return dict(model=TDec(), inputs=(ids[:, :-1], randn(4, 10, 64)), target=ids[:, 1:], loss=ce_tokens)


# 4. GRU encoder-decoder with additive (Bahdanau) attention, torch.tanh scores.
class Bahdanau(nn.Module):
    def __init__(self, v=200, d=48):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.enc = nn.GRU(d, d, batch_first=True)
        self.Wq = nn.Linear(d, d)
        self.Wk = nn.Linear(d, d)
        self.v = nn.Linear(d, 1, bias=False)
        self.cell = nn.GRUCell(2 * d, d)
        self.out = nn.Linear(d, v)

    def forward(self, src, tgt):
        keys, h = self.enc(self.emb(src))
        h = h[0]
        k = self.Wk(keys)
        outs = []
        for t in range(tgt.size(1)):
            s = self.v(torch.tanh(k + self.Wq(h).unsqueeze(1))).squeeze(-1)
            ctx = (torch.softmax(s, -1).unsqueeze(-1) * keys).sum(1)
            h = self.cell(torch.cat([self.emb(tgt[:, t]), ctx], -1), h)
            outs.append(self.out(h))
        return torch.stack(outs, 1)


def b_bahdanau():
    return dict(
        model=Bahdanau(),
        inputs=(randint(200, 4, 12), randint(200, 4, 6, seed=3)),
        target=randint(200, 4, 6, seed=4),
        loss=ce_tokens,
    )


# 5. CNN trunk of conv-bn-relu Sequentials, then a pre-norm nn.TransformerEncoder over the map (a hybrid).
class Hybrid(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.stem = nn.Sequential(
            *[
                nn.Sequential(nn.Conv2d(c, o, 3, 2, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))
                for c, o in ((3, 32), (32, 48), (48, d))
            ]
        )
        self.enc = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d, 4, 128, 0.0, batch_first=True, norm_first=True), 3
        )
        self.head = nn.Sequential(nn.Linear(d, d), nn.Tanh(), nn.Linear(d, 10))

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.enc(x).mean(1))


# 6. Hand-written pre-norm transformer on baddbmm with q/k/v Linear modules, output transposed back (seq-first), GELU MLP module.
class SeqFirstAttn(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):  # x: [S, B, D]
        S, B, D = x.shape
        hd = D // self.h
        x = x.transpose(0, 1)
        q = self.q(x).view(B, S, self.h, hd).transpose(1, 2).reshape(B * self.h, S, hd)
        k = self.k(x).view(B, S, self.h, hd).transpose(1, 2).reshape(B * self.h, S, hd)
        v = self.v(x).view(B, S, self.h, hd).transpose(1, 2).reshape(B * self.h, S, hd)
        a = self.drop(torch.softmax(torch.baddbmm(torch.zeros(1), q / math.sqrt(hd), k.transpose(1, 2)), -1))
        c = torch.bmm(a, v).view(B, self.h, S, hd).transpose(1, 2).reshape(B, S, D)
        return self.o(c).transpose(0, 1)


class FF(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.l1 = nn.Linear(d, 2 * d)
        self.act = nn.GELU()
        self.l2 = nn.Linear(2 * d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.l2(self.act(self.l1(x))))


class SFLayer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.n1 = nn.LayerNorm(d)
        self.attn = SeqFirstAttn(d, h)
        self.d1 = nn.Dropout(0.1)
        self.n2 = nn.LayerNorm(d)
        self.ff = FF(d)

    def forward(self, x):
        x = x + self.d1(self.attn(self.n1(x)))
        return x + self.ff(self.n2(x))


class SeqFirstLM(nn.Module):
    def __init__(self, v=300, d=64):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.layers = nn.ModuleList([SFLayer(d, 4) for _ in range(4)])
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, v)

    def forward(self, t):
        x = self.emb(t).transpose(0, 1)
        for l in self.layers:
            x = l(x)
        return self.out(self.norm(x)).transpose(0, 1)


# 1. HF-style BERT classifier: q/k/v modules, SelfOutput (dense, dropout, LayerNorm), Intermediate (GELU module), Output, Pooler (Tanh).
class SelfAttn(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.h = h
        s.query = nn.Linear(d, d)
        s.key = nn.Linear(d, d)
        s.value = nn.Linear(d, d)
        s.dropout = nn.Dropout(0.1)

    def t(s, x):
        return x.view(x.size(0), x.size(1), s.h, -1).permute(0, 2, 1, 3)

    def forward(s, x):
        q, k, v = s.t(s.query(x)), s.t(s.key(x)), s.t(s.value(x))
        a = s.dropout(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.size(-1)), -1))
        c = (a @ v).permute(0, 2, 1, 3).contiguous()
        return c.view(c.size(0), c.size(1), -1)


class SelfOutput(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.dense = nn.Linear(d, d)
        s.LayerNorm = nn.LayerNorm(d)
        s.dropout = nn.Dropout(0.1)

    def forward(s, h, x):
        return s.LayerNorm(s.dropout(s.dense(h)) + x)


class Intermediate(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.dense = nn.Linear(d, 4 * d)
        s.act = nn.GELU()

    def forward(s, x):
        return s.act(s.dense(x))


class Output(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.dense = nn.Linear(4 * d, d)
        s.LayerNorm = nn.LayerNorm(d)
        s.dropout = nn.Dropout(0.1)

    def forward(s, h, x):
        return s.LayerNorm(s.dropout(s.dense(h)) + x)


class BertLayer(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.attention = SelfAttn(d, h)
        s.attn_out = SelfOutput(d)
        s.intermediate = Intermediate(d)
        s.output = Output(d)

    def forward(s, x):
        a = s.attn_out(s.attention(x), x)
        return s.output(s.intermediate(a), a)


class Pooler(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.dense = nn.Linear(d, d)
        s.activation = nn.Tanh()

    def forward(s, x):
        return s.activation(s.dense(x[:, 0]))


class BertCls(nn.Module):
    def __init__(s, v=500, d=64):
        super().__init__()
        s.word = nn.Embedding(v, d)
        s.pos = nn.Embedding(32, d)
        s.ln = nn.LayerNorm(d)
        s.drop = nn.Dropout(0.1)
        s.layers = nn.ModuleList([BertLayer(d, 4) for _ in range(3)])
        s.pooler = Pooler(d)
        s.dropout = nn.Dropout(0.1)
        s.classifier = nn.Linear(d, 3)

    def forward(s, ids):
        x = s.drop(s.ln(s.word(ids) + s.pos(torch.arange(ids.size(1)))))
        for l in s.layers:
            x = l(x)
        return s.classifier(s.dropout(s.pooler(x)))


# 2. GCN with residual connections in the model's loop, layers as modules (index_add_ aggregation).
class GCNLayer(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.lin = nn.Linear(d, d)

    def forward(s, x, src, dst, norm):
        h = s.lin(x)
        return torch.zeros_like(h).index_add_(0, dst, h[src] * norm.unsqueeze(-1))


class ResGCN(nn.Module):
    def __init__(s, d=32, n=4):
        super().__init__()
        s.inp = nn.Linear(16, d)
        s.layers = nn.ModuleList([GCNLayer(d) for _ in range(n)])
        s.out = nn.Linear(d, 5)

    def forward(s, x, src, dst, norm):
        x = s.inp(x)
        for l in s.layers:
            x = x + F.relu(l(x, src, dst, norm))
        return s.out(x)


def b_resgcn():
    g = torch.Generator().manual_seed(7)
    n, m = 300, 1200
    src = torch.randint(0, n, (m,), generator=g)
    dst = torch.randint(0, n, (m,), generator=g)
    return dict(
        model=ResGCN(),
        inputs=(randn(n, 16), src, dst, torch.rand(m, generator=g)),
        target=randint(5, n, seed=8),
        loss=ce,
    )


# 3. BoTNet-like: ResNet bottlenecks, the last stage's 3x3 conv replaced by MHSA on the map.
class MHSA(nn.Module):
    def __init__(s, c, h=4):
        super().__init__()
        s.h = h
        s.qkv = nn.Conv2d(c, 3 * c, 1)

    def forward(s, x):
        B, C, H, W = x.shape
        q, k, v = s.qkv(x).reshape(B, 3, s.h, C // s.h, H * W).unbind(1)
        a = torch.softmax(q.transpose(-1, -2) @ k / math.sqrt(C // s.h), -1)
        return (v @ a.transpose(-1, -2)).reshape(B, C, H, W)


class Bottle(nn.Module):
    def __init__(s, cin, mid, attn=False):
        super().__init__()
        cout = mid * 4
        s.conv1 = nn.Conv2d(cin, mid, 1, bias=False)
        s.bn1 = nn.BatchNorm2d(mid)
        s.conv2 = MHSA(mid) if attn else nn.Conv2d(mid, mid, 3, 1, 1, bias=False)
        s.bn2 = nn.BatchNorm2d(mid)
        s.conv3 = nn.Conv2d(mid, cout, 1, bias=False)
        s.bn3 = nn.BatchNorm2d(cout)
        s.relu = nn.ReLU(inplace=True)
        s.down = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout)) if cin != cout else None
        )

    def forward(s, x):
        o = s.relu(s.bn1(s.conv1(x)))
        o = s.relu(s.bn2(s.conv2(o)))
        o = s.bn3(s.conv3(o))
        return s.relu(o + (s.down(x) if s.down is not None else x))


class BoT(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True)
        )
        s.l1 = nn.Sequential(Bottle(32, 16), Bottle(64, 16))
        s.l2 = nn.Sequential(Bottle(64, 32, True), Bottle(128, 32, True))
        s.pool = nn.AdaptiveAvgPool2d(1)
        s.fc = nn.Linear(128, 10)

    def forward(s, x):
        return s.fc(torch.flatten(s.pool(s.l2(s.l1(s.stem(x)))), 1))


REGISTRY = [
    ("timm_swin", "swin", "adamw", lambda: image_cls(TimmSwin(), 2, 32)),
    ("mesh_gn", "gnn", "adam", b_mesh),
    ("tdecoder_gelu", "seq2seq", "adamw", b_tdec),
    ("gru_bahdanau", "rnn", "adam", b_bahdanau),
    ("cnn_transformer", "hybrid", "adamw", lambda: image_cls(Hybrid(), 4, 32)),
    ("seqfirst_lm", "decoder", "adamw", lambda: rh.b_lm(SeqFirstLM(), 300, 4, 16)),
    (
        "hf_bert_cls",
        "encoder",
        "adamw",
        lambda: dict(model=BertCls(), inputs=(randint(500, 4, 16),), target=randint(3, 4, seed=3), loss=ce),
    ),
    ("res_gcn", "gnn", "adam", b_resgcn),
    ("botnet_small", "hybrid", "sgd", lambda: image_cls(BoT(), 2, 32)),
]
