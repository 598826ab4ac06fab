#!/usr/bin/env python3
"""Record Strata's fourth variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on the other variants corpora; this script records
tests/data/corpus-cpu-variants4, recorded after the rules, to measure them once on models they
were not written on, then to be tuned on as the other variants are: a DeepSeek-V2-style decoder
(multi-head latent attention: low-rank query and key-value projections with their own RMSNorms,
a rotary part split off), an HSTU generative recommender (one projection split four ways, SiLU
attention without softmax, a norm gating the output), ECAPA-TDNN for speaker embeddings (SE-Res2
blocks, multi-layer aggregation, attentive statistics pooling), ESRGAN's RRDB generator (dense
blocks inside residual-in-residual blocks, two upsamplings), a GraphGPS layer (a local message
passing and a global attention side by side, each normed, then a feed-forward), CAFormer-style
MetaFormer stages (separable-conv token mixers, then attention; StarReLU), an iTransformer for
time series as the Time-Series-Library writes it (each variate one token, post-norm layers whose
feed-forward is two 1x1 Conv1d), and an EfficientViT-style hybrid (MBConv stages, then blocks of
a ReLU linear attention with a multi-scale aggregation and an MBConv).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants4.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants4.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants4.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, ce_tokens, mse, randint, randn, random_graph  # noqa: E402
from record_cpu_heldout import RMSNorm  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


# ---------------------------------------------------------------------------------------
# DeepSeek-V2 as transformers writes it: DeepseekV2DecoderLayer = input_layernorm, self_attn
# (MLA: q_a_proj -> q_a_layernorm -> q_b_proj; kv_a_proj_with_mqa split into the latent and a
# shared rotary key, kv_a_layernorm -> kv_b_proj), post_attention_layernorm, a SwiGLU mlp.


class MLAttention(nn.Module):
    def __init__(self, dim=64, heads=4, q_rank=32, kv_rank=24, nope=16, rope=8, v=16):
        super().__init__()
        self.h, self.nope, self.rope, self.v = heads, nope, rope, v
        self.q_a_proj = nn.Linear(dim, q_rank, bias=False)
        self.q_a_layernorm = RMSNorm(q_rank)
        self.q_b_proj = nn.Linear(q_rank, heads * (nope + rope), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(dim, kv_rank + rope, bias=False)
        self.kv_a_layernorm = RMSNorm(kv_rank)
        self.kv_b_proj = nn.Linear(kv_rank, heads * (nope + v), bias=False)
        self.o_proj = nn.Linear(heads * v, dim, bias=False)
        self.kv_rank = kv_rank

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).view(b, t, self.h, -1).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.nope, self.rope], dim=-1)
        ckv = self.kv_a_proj_with_mqa(x)
        ckv, k_pe = torch.split(ckv, [self.kv_rank, self.rope], dim=-1)
        k_pe = k_pe.view(b, t, 1, self.rope).transpose(1, 2)
        kv = self.kv_b_proj(self.kv_a_layernorm(ckv)).view(b, t, self.h, -1).transpose(1, 2)
        k_nope, v = torch.split(kv, [self.nope, self.v], dim=-1)
        q_pe, k_pe = rotary(q_pe, cos, sin), rotary(k_pe, cos, sin)
        q = torch.cat((q_nope, q_pe), dim=-1)
        k = torch.cat((k_nope, k_pe.expand(-1, self.h, -1, -1)), dim=-1)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.nope + self.rope) + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, v).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(o)


class DeepseekMLP(nn.Module):
    def __init__(self, dim=64, hidden=128):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DeepseekDecoderLayer(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = MLAttention(dim)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = DeepseekMLP(dim)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class DeepseekLM(nn.Module):
    def __init__(self, vocab=500, dim=64, depth=3, rope=8):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([DeepseekDecoderLayer(dim) for _ in range(depth)])
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, rope, 2).float() / rope)), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        freqs = torch.outer(torch.arange(t, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((t, t), float("-inf")).triu(1)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def b_deepseek():
    return dict(model=DeepseekLM(), inputs=(randint(500, 4, 16),), target=randint(500, 4, 16, seed=3), loss=ce_tokens)


# ---------------------------------------------------------------------------------------
# HSTU (generative recommenders): an item embedding with a learned position, layers of one
# projection split into u, v, q, k under SiLU, a pointwise SiLU attention (no softmax, a causal
# mask multiplied in), a LayerNorm of the attention output gated by u, an output projection and
# the residual; logits against the item table.


class HSTULayer(nn.Module):
    def __init__(self, dim=48, heads=2, attn_dim=16):
        super().__init__()
        self.h, self.a = heads, attn_dim
        self.uvqk = nn.Linear(dim, heads * (2 * dim // heads + 2 * attn_dim))
        self.input_norm = nn.LayerNorm(dim)
        self.output_norm = nn.LayerNorm(dim)
        self.o = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.1)
        self.dim = dim

    def forward(self, x, mask):
        b, t, _ = x.shape
        h = F.silu(self.uvqk(self.input_norm(x)))
        u, v, q, k = torch.split(h, [self.dim, self.dim, self.h * self.a, self.h * self.a], dim=-1)
        q = q.view(b, t, self.h, self.a).transpose(1, 2)
        k = k.view(b, t, self.h, self.a).transpose(1, 2)
        v = v.view(b, t, self.h, -1).transpose(1, 2)
        w = F.silu(torch.matmul(q, k.transpose(-1, -2))) / t * mask
        o = torch.matmul(w, v).transpose(1, 2).reshape(b, t, self.dim)
        return x + self.o(self.dropout(u * self.output_norm(o)))


class HSTU(nn.Module):
    def __init__(self, items=600, dim=48, depth=3, max_len=20):
        super().__init__()
        self.item_emb = nn.Embedding(items, dim, padding_idx=0)
        self.pos_emb = nn.Embedding(max_len, dim)
        self.emb_dropout = nn.Dropout(0.2)
        self.layers = nn.ModuleList([HSTULayer(dim) for _ in range(depth)])

    def forward(self, seq):
        t = seq.shape[1]
        x = self.item_emb(seq) * math.sqrt(self.item_emb.embedding_dim) + self.pos_emb(torch.arange(t))
        x = self.emb_dropout(x)
        mask = torch.tril(torch.ones(t, t))
        for layer in self.layers:
            x = layer(x, mask)
        x = F.normalize(x, dim=-1)
        return torch.matmul(x, F.normalize(self.item_emb.weight, dim=-1).t())


def b_hstu():
    return dict(model=HSTU(), inputs=(randint(599, 8, 20) + 1,), target=randint(600, 8, 20, seed=3), loss=ce_tokens)


# ---------------------------------------------------------------------------------------
# ECAPA-TDNN as SpeechBrain writes it: TDNNBlock (Conv1d, ReLU, BatchNorm1d), SERes2NetBlocks
# (a TDNN, a Res2Net of TDNNs over channel splits, a TDNN, squeeze-excitation, the residual),
# the blocks' outputs concatenated into one TDNN, attentive statistics pooling, a BatchNorm and
# the embedding's Conv1d, then a classifier.


class TDNNBlock(nn.Module):
    def __init__(self, cin, cout, k=1, d=1):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, k, dilation=d, padding=d * (k - 1) // 2)
        self.activation = nn.ReLU()
        self.norm = nn.BatchNorm1d(cout)

    def forward(self, x):
        return self.norm(self.activation(self.conv(x)))


class Res2NetBlock(nn.Module):
    def __init__(self, c, scale=4, k=3, d=2):
        super().__init__()
        self.scale = scale
        self.blocks = nn.ModuleList([TDNNBlock(c // scale, c // scale, k, d) for _ in range(scale - 1)])

    def forward(self, x):
        ys, y = [], None
        for i, xi in enumerate(torch.chunk(x, self.scale, dim=1)):
            if i == 0:
                y = xi
            elif i == 1:
                y = self.blocks[i - 1](xi)
            else:
                y = self.blocks[i - 1](xi + y)
            ys.append(y)
        return torch.cat(ys, dim=1)


class SEBlock(nn.Module):
    def __init__(self, c, se=16):
        super().__init__()
        self.conv1 = nn.Conv1d(c, se, 1)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv1d(se, c, 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        s = x.mean(dim=2, keepdim=True)
        return self.sigmoid(self.conv2(self.relu(self.conv1(s)))) * x


class SERes2NetBlock(nn.Module):
    def __init__(self, c, d):
        super().__init__()
        self.tdnn1 = TDNNBlock(c, c)
        self.res2net_block = Res2NetBlock(c, d=d)
        self.tdnn2 = TDNNBlock(c, c)
        self.se_block = SEBlock(c)

    def forward(self, x):
        return self.se_block(self.tdnn2(self.res2net_block(self.tdnn1(x)))) + x


class AttentiveStatisticsPooling(nn.Module):
    def __init__(self, c, att=32):
        super().__init__()
        self.tdnn = TDNNBlock(3 * c, att)
        self.tanh = nn.Tanh()
        self.conv = nn.Conv1d(att, c, 1)

    def forward(self, x):
        t = x.shape[-1]
        mean = x.mean(dim=2, keepdim=True).repeat(1, 1, t)
        std = x.std(dim=2, keepdim=True).clamp(min=1e-5).repeat(1, 1, t)
        a = F.softmax(self.conv(self.tanh(self.tdnn(torch.cat([x, mean, std], dim=1)))), dim=2)
        mu = (a * x).sum(dim=2)
        sg = torch.sqrt(((a * (x - mu.unsqueeze(2)).pow(2)).sum(dim=2)).clamp(min=1e-5))
        return torch.cat((mu, sg), dim=1).unsqueeze(2)


class ECAPATDNN(nn.Module):
    def __init__(self, feats=24, c=64, emb=48, speakers=20):
        super().__init__()
        self.blocks = nn.ModuleList([TDNNBlock(feats, c, 5)] + [SERes2NetBlock(c, d) for d in (2, 3, 4)])
        self.mfa = TDNNBlock(3 * c, 3 * c)
        self.asp = AttentiveStatisticsPooling(3 * c)
        self.asp_bn = nn.BatchNorm1d(6 * c)
        self.fc = nn.Conv1d(6 * c, emb, 1)
        self.classifier = nn.Linear(emb, speakers)

    def forward(self, x):
        x = x.transpose(1, 2)
        xl = []
        for layer in self.blocks:
            x = layer(x)
            xl.append(x)
        x = self.mfa(torch.cat(xl[1:], dim=1))
        x = self.fc(self.asp_bn(self.asp(x)))
        return self.classifier(x.squeeze(2))


def b_ecapa():
    return dict(model=ECAPATDNN(), inputs=(randn(4, 48, 24),), target=randint(20, 4, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# ESRGAN's RRDBNet as BasicSR writes it: conv_first, RRDBs (three ResidualDenseBlocks of five
# convs over the growing concatenation, LeakyReLU, a 0.2-scaled residual; the RRDB's own 0.2
# residual), conv_body and the trunk's residual, two nearest upsamplings each a conv and a
# LeakyReLU, conv_hr, conv_last.


class ResidualDenseBlock(nn.Module):
    def __init__(self, f=16, g=8):
        super().__init__()
        self.conv1 = nn.Conv2d(f, g, 3, 1, 1)
        self.conv2 = nn.Conv2d(f + g, g, 3, 1, 1)
        self.conv3 = nn.Conv2d(f + 2 * g, g, 3, 1, 1)
        self.conv4 = nn.Conv2d(f + 3 * g, g, 3, 1, 1)
        self.conv5 = nn.Conv2d(f + 4 * g, f, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(0.2, inplace=True)

    def forward(self, x):
        x1 = self.lrelu(self.conv1(x))
        x2 = self.lrelu(self.conv2(torch.cat((x, x1), 1)))
        x3 = self.lrelu(self.conv3(torch.cat((x, x1, x2), 1)))
        x4 = self.lrelu(self.conv4(torch.cat((x, x1, x2, x3), 1)))
        x5 = self.conv5(torch.cat((x, x1, x2, x3, x4), 1))
        return x5 * 0.2 + x


class RRDB(nn.Module):
    def __init__(self, f=16):
        super().__init__()
        self.rdb1 = ResidualDenseBlock(f)
        self.rdb2 = ResidualDenseBlock(f)
        self.rdb3 = ResidualDenseBlock(f)

    def forward(self, x):
        return self.rdb3(self.rdb2(self.rdb1(x))) * 0.2 + x


class RRDBNet(nn.Module):
    def __init__(self, f=16, blocks=2):
        super().__init__()
        self.conv_first = nn.Conv2d(3, f, 3, 1, 1)
        self.body = nn.Sequential(*[RRDB(f) for _ in range(blocks)])
        self.conv_body = nn.Conv2d(f, f, 3, 1, 1)
        self.conv_up1 = nn.Conv2d(f, f, 3, 1, 1)
        self.conv_up2 = nn.Conv2d(f, f, 3, 1, 1)
        self.conv_hr = nn.Conv2d(f, f, 3, 1, 1)
        self.conv_last = nn.Conv2d(f, 3, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(0.2, inplace=True)

    def forward(self, x):
        feat = self.conv_first(x)
        feat = feat + self.conv_body(self.body(feat))
        feat = self.lrelu(self.conv_up1(F.interpolate(feat, scale_factor=2, mode="nearest")))
        feat = self.lrelu(self.conv_up2(F.interpolate(feat, scale_factor=2, mode="nearest")))
        return self.conv_last(self.lrelu(self.conv_hr(feat)))


def b_rrdb():
    return dict(model=RRDBNet(), inputs=(randn(2, 3, 12, 12),), target=randn(2, 3, 48, 48, seed=3), loss=mse)


# ---------------------------------------------------------------------------------------
# GraphGPS: each layer a local message passing (a GIN-style sum over edges and an MLP) and a
# global attention (nn.MultiheadAttention over all nodes) side by side, each with its dropout,
# residual and BatchNorm; their sum then a feed-forward with its residual and BatchNorm.


class LocalGIN(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.nn = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.eps = nn.Parameter(torch.zeros(1))

    def forward(self, x, src, dst):
        agg = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src))
        return self.nn((1 + self.eps) * x + agg)


class GPSLayer(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.local_model = LocalGIN(dim)
        self.self_attn = nn.MultiheadAttention(dim, heads, dropout=0.0, batch_first=True)
        self.norm1_local = nn.BatchNorm1d(dim)
        self.norm1_attn = nn.BatchNorm1d(dim)
        self.dropout_local = nn.Dropout(0.1)
        self.dropout_attn = nn.Dropout(0.1)
        self.ff_linear1 = nn.Linear(dim, 2 * dim)
        self.ff_linear2 = nn.Linear(2 * dim, dim)
        self.act_fn_ff = nn.ReLU()
        self.norm2 = nn.BatchNorm1d(dim)
        self.ff_dropout1 = nn.Dropout(0.1)
        self.ff_dropout2 = nn.Dropout(0.1)

    def forward(self, x, src, dst):
        h_local = self.norm1_local(x + self.dropout_local(self.local_model(x, src, dst)))
        xb = x.unsqueeze(0)
        h_attn = self.self_attn(xb, xb, xb, need_weights=False)[0].squeeze(0)
        h_attn = self.norm1_attn(x + self.dropout_attn(h_attn))
        h = h_local + h_attn
        ff = self.ff_dropout2(self.ff_linear2(self.ff_dropout1(self.act_fn_ff(self.ff_linear1(h)))))
        return self.norm2(h + ff)


class GraphGPS(nn.Module):
    def __init__(self, feats=32, dim=32, depth=3, classes=7):
        super().__init__()
        self.encoder = nn.Linear(feats, dim)
        self.layers = nn.ModuleList([GPSLayer(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)

    def forward(self, x, src, dst, norm):
        h = self.encoder(x)
        for layer in self.layers:
            h = layer(h, src, dst)
        return self.head(h)


def b_graphgps():
    inputs, target = random_graph(nodes=256, edges=1024)
    return dict(model=GraphGPS(), inputs=inputs, target=target, loss=ce)


# ---------------------------------------------------------------------------------------
# CAFormer as timm's MetaFormer writes it: stages of a downsampling (a conv and a norm), then
# MetaFormerBlocks (norm1, a token mixer, res_scale1 or layer_scale1, norm2, an MLP of two
# Linears around StarReLU); the first two stages mix tokens with SepConv (pwconv1, StarReLU, a
# depthwise conv, pwconv2; channels last), the last two with attention.


class StarReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return self.scale * F.relu(x) ** 2 + self.bias


class SepConv(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.pwconv1 = nn.Linear(dim, 2 * dim, bias=False)
        self.act1 = StarReLU()
        self.dwconv = nn.Conv2d(2 * dim, 2 * dim, 7, padding=3, groups=2 * dim, bias=False)
        self.pwconv2 = nn.Linear(2 * dim, dim, bias=False)

    def forward(self, x):
        x = self.act1(self.pwconv1(x)).permute(0, 3, 1, 2)
        return self.pwconv2(self.dwconv(x).permute(0, 2, 3, 1))


class MFAttention(nn.Module):
    def __init__(self, dim, head_dim=16):
        super().__init__()
        self.heads, self.hd = dim // head_dim, head_dim
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, h, w, c = x.shape
        n = h * w
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = ((q @ k.transpose(-2, -1)) * self.hd**-0.5).softmax(dim=-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, h, w, c))


class MFMlp(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim, bias=False)
        self.act = StarReLU()
        self.fc2 = nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Scale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.scale


class MetaFormerBlock(nn.Module):
    def __init__(self, dim, mixer):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mixer = mixer(dim)
        self.res_scale1 = Scale(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MFMlp(dim)
        self.res_scale2 = Scale(dim)

    def forward(self, x):
        x = self.res_scale1(x) + self.token_mixer(self.norm1(x))
        return self.res_scale2(x) + self.mlp(self.norm2(x))


class Downsampling(nn.Module):
    def __init__(self, cin, cout, k, s, p, pre_norm):
        super().__init__()
        self.pre_norm = nn.LayerNorm(cin) if pre_norm else nn.Identity()
        self.conv = nn.Conv2d(cin, cout, k, s, p)

    def forward(self, x):  # channels last in and out
        x = self.pre_norm(x).permute(0, 3, 1, 2)
        return self.conv(x).permute(0, 2, 3, 1)


class CAFormer(nn.Module):
    def __init__(self, dims=(16, 32, 48, 64), depths=(1, 2, 2, 1), classes=10):
        super().__init__()
        self.stem = Downsampling(3, dims[0], 7, 4, 2, False)
        stages = []
        for i, (d, n) in enumerate(zip(dims, depths)):
            mixer = SepConv if i < 2 else MFAttention
            down = [] if i == 0 else [Downsampling(dims[i - 1], d, 3, 2, 1, True)]
            stages.append(nn.Sequential(*down, *[MetaFormerBlock(d, mixer) for _ in range(n)]))
        self.stages = nn.Sequential(*stages)
        self.norm = nn.LayerNorm(dims[-1])
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        x = self.stages(self.stem(x.permute(0, 2, 3, 1)))
        return self.head(self.norm(x.mean((1, 2))))


def b_caformer():
    return dict(model=CAFormer(), inputs=(randn(2, 3, 64, 64),), target=randint(10, 2, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# iTransformer as the Time-Series-Library writes it: each variate's whole series one token
# (DataEmbedding_inverted: a Linear over time, dropout), EncoderLayers (an AttentionLayer of
# query, key and value projections around a FullAttention, dropout, the residual, norm1, a
# feed-forward of two kernel-1 Conv1d over the transposed tokens with a GELU and dropouts, norm2),
# the encoder's final norm, a projector back to the horizon; the series normalised first.


class FullAttention(nn.Module):
    def __init__(self, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v):
        e = q.shape[-1]
        scores = torch.einsum("blhe,bshe->bhls", q, k)
        a = self.dropout(torch.softmax(scores / math.sqrt(e), dim=-1))
        return torch.einsum("bhls,bshd->blhd", a, v).contiguous()


class AttentionLayer(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.inner_attention = FullAttention()
        self.query_projection = nn.Linear(d_model, d_model)
        self.key_projection = nn.Linear(d_model, d_model)
        self.value_projection = nn.Linear(d_model, d_model)
        self.out_projection = nn.Linear(d_model, d_model)
        self.h = heads

    def forward(self, q, k, v):
        b, l, _ = q.shape
        s = k.shape[1]
        q = self.query_projection(q).view(b, l, self.h, -1)
        k = self.key_projection(k).view(b, s, self.h, -1)
        v = self.value_projection(v).view(b, s, self.h, -1)
        return self.out_projection(self.inner_attention(q, k, v).view(b, l, -1))


class TSEncoderLayer(nn.Module):
    def __init__(self, d_model, heads, d_ff):
        super().__init__()
        self.attention = AttentionLayer(d_model, heads)
        self.conv1 = nn.Conv1d(d_model, d_ff, 1)
        self.conv2 = nn.Conv1d(d_ff, d_model, 1)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = self.norm1(x + self.dropout(self.attention(x, x, x)))
        y = self.dropout(F.gelu(self.conv1(x.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))
        return self.norm2(x + y)


class ITransformer(nn.Module):
    def __init__(self, seq_len=48, pred_len=12, d_model=32, heads=4, d_ff=64, depth=2):
        super().__init__()
        self.value_embedding = nn.Linear(seq_len, d_model)
        self.emb_dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList([TSEncoderLayer(d_model, heads, d_ff) for _ in range(depth)])
        self.norm = nn.LayerNorm(d_model)
        self.projector = nn.Linear(d_model, pred_len)
        self.pred_len = pred_len

    def forward(self, x):
        means = x.mean(1, keepdim=True).detach()
        x = x - means
        stdev = torch.sqrt(torch.var(x, dim=1, keepdim=True, unbiased=False) + 1e-5)
        x = x / stdev
        h = self.emb_dropout(self.value_embedding(x.permute(0, 2, 1)))
        for layer in self.layers:
            h = layer(h)
        out = self.projector(self.norm(h)).permute(0, 2, 1)
        return out * stdev[:, 0, :].unsqueeze(1) + means[:, 0, :].unsqueeze(1)


def b_itransformer():
    return dict(model=ITransformer(), inputs=(randn(8, 48, 7),), target=randn(8, 12, 7, seed=3), loss=mse)


# ---------------------------------------------------------------------------------------
# EfficientViT (MIT's) as its reference code writes it: a stem, MBConv stages (a 1x1 expansion
# conv, a depthwise conv, a 1x1 projection, BatchNorms and Hardswish, the residual), then
# EfficientViTBlocks: a context module (LiteMLA: a 1x1 qkv conv, a 5x5 depthwise-and-grouped
# aggregation concatenated with it, a ReLU linear attention, a projection with its norm; the
# residual) and a local module (an MBConv with its residual).


class ConvLayer(nn.Module):
    def __init__(self, cin, cout, k=3, s=1, groups=1, norm=True, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=not norm)
        self.norm = nn.BatchNorm2d(cout) if norm else None
        self.act = nn.Hardswish() if act else None

    def forward(self, x):
        x = self.conv(x)
        if self.norm is not None:
            x = self.norm(x)
        if self.act is not None:
            x = self.act(x)
        return x


class MBConv(nn.Module):
    def __init__(self, cin, cout, s=1, expand=4):
        super().__init__()
        mid = cin * expand
        self.inverted_conv = ConvLayer(cin, mid, 1)
        self.depth_conv = ConvLayer(mid, mid, 3, s, groups=mid)
        self.point_conv = ConvLayer(mid, cout, 1, act=False)
        self.residual = s == 1 and cin == cout

    def forward(self, x):
        y = self.point_conv(self.depth_conv(self.inverted_conv(x)))
        return x + y if self.residual else y


class LiteMLA(nn.Module):
    def __init__(self, dim, head_dim=8):
        super().__init__()
        self.heads = dim // head_dim
        self.hd = head_dim
        self.qkv = ConvLayer(dim, 3 * dim, 1, norm=False, act=False)
        self.aggreg = nn.Sequential(
            nn.Conv2d(3 * dim, 3 * dim, 5, padding=2, groups=3 * dim, bias=False),
            nn.Conv2d(3 * dim, 3 * dim, 1, groups=3 * self.heads, bias=False),
        )
        self.proj = ConvLayer(2 * dim, dim, 1, act=False)

    def forward(self, x):
        b, _, h, w = x.shape
        qkv = self.qkv(x)
        qkv = torch.cat([qkv, self.aggreg(qkv)], dim=1)
        qkv = qkv.reshape(b, -1, 3 * self.hd, h * w).transpose(-1, -2)
        q, k, v = qkv[..., : self.hd], qkv[..., self.hd : 2 * self.hd], qkv[..., 2 * self.hd :]
        q, k = F.relu(q), F.relu(k)
        v = F.pad(v, (0, 1), mode="constant", value=1.0)
        kv = torch.matmul(k.transpose(-1, -2), v)
        out = torch.matmul(q, kv)
        out = out[..., :-1] / (out[..., -1:] + 1e-15)
        out = out.transpose(-1, -2).reshape(b, -1, h, w)
        return self.proj(out)


class EfficientViTBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.context_module = LiteMLA(dim)
        self.local_module = MBConv(dim, dim)

    def forward(self, x):
        x = x + self.context_module(x)
        return self.local_module(x)


class EfficientViTLite(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = ConvLayer(3, 16, 3, 2)
        self.stage1 = nn.Sequential(MBConv(16, 24, 2), MBConv(24, 24))
        self.stage2 = nn.Sequential(MBConv(24, 32, 2), EfficientViTBlock(32), EfficientViTBlock(32))
        self.stage3 = nn.Sequential(MBConv(32, 48, 2), EfficientViTBlock(48), EfficientViTBlock(48))
        self.head = nn.Sequential(ConvLayer(48, 96, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(96, classes))

    def forward(self, x):
        return self.head(self.stage3(self.stage2(self.stage1(self.stem(x)))))


def b_efficientvit():
    return dict(model=EfficientViTLite(), inputs=(randn(2, 3, 64, 64),), target=randint(10, 2, seed=3), loss=ce)


REGISTRY = [
    ("deepseek_mla", "llm", "adamw", b_deepseek),
    ("hstu_recsys", "recsys", "adam", b_hstu),
    ("ecapa_tdnn", "speech", "adam", b_ecapa),
    ("esrgan_rrdb", "superres", "adam", b_rrdb),
    ("graphgps", "gnn", "adam", b_graphgps),
    ("caformer_lite", "hybrid", "adamw", b_caformer),
    ("itransformer", "timeseries", "adam", b_itransformer),
    ("efficientvit_lite", "hybrid", "adamw", b_efficientvit),
]

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS4 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants4.py",
    os.path.join(DATA, "corpus-cpu-variants4"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-modern", "corpus-cpu-families", "corpus-cpu-heldout",
                                      "corpus-cpu-variants", "corpus-cpu-variants2", "corpus-cpu-variants3",
                                      "corpus-cpu-objectives", "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS4)
