"""Sequence, tabular, graph and audio models for the families CPU tuning corpus
(tests/data/corpus-cpu-families), recorded by tools/record_cpu_families.py with the others.

An ALBERT-like encoder (one shared layer applied four times), a Mamba-like LM (its selective
scan in a Python loop), N-BEATS, an FT-Transformer, a Perceiver-like model (a latent array,
cross- and self-attention), a BART-like encoder-decoder (post-norm, q/k/v/out modules), a
PatchTST-like forecaster, SASRec (a recommender on nn.MultiheadAttention with point-wise conv
feed-forwards), a TFT-like model (gated residual networks, an LSTM), an EGNN, an MMoE, a graph
transformer (attention over edges by gathers and scatters), an EnCodec-like encoder (SEANet
residual units, an LSTM) and a T5-like encoder-decoder (relative position bias, cross-attention).
"""

import math

from record_cpu_corpus import ce, ce_tokens, mse, randint, randn

import torch
import torch.nn as nn
import torch.nn.functional as F


# ALBERT-like: factorised embedding, one shared post-norm layer applied four times.
class AlbertLayer(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.attention = nn.MultiheadAttention(d, h, batch_first=True)
        s.ln1 = nn.LayerNorm(d)
        s.ffn = nn.Linear(d, 4 * d)
        s.ffn_output = nn.Linear(4 * d, d)
        s.act = nn.GELU()
        s.ln2 = nn.LayerNorm(d)

    def forward(s, x):
        x = s.ln1(x + s.attention(x, x, x, need_weights=False)[0])
        return s.ln2(x + s.ffn_output(s.act(s.ffn(x))))


class Albert(nn.Module):
    def __init__(s, v=600, e=32, d=64):
        super().__init__()
        s.word = nn.Embedding(v, e)
        s.pos = nn.Embedding(32, e)
        s.ln = nn.LayerNorm(e)
        s.mapping = nn.Linear(e, d)
        s.layer = AlbertLayer(d, 4)
        s.n = 4
        s.pooler = nn.Linear(d, d)
        s.cls = nn.Linear(d, 2)

    def forward(s, ids):
        x = s.mapping(s.ln(s.word(ids) + s.pos(torch.arange(ids.size(1)))))
        for _ in range(s.n):
            x = s.layer(x)
        return s.cls(torch.tanh(s.pooler(x[:, 0])))


# Mamba-like: RMSNorm, in_proj, depthwise causal conv1d, SiLU, selective scan in a Python loop, gate, out_proj.
class RMSNorm(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.weight = nn.Parameter(torch.ones(d))

    def forward(s, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * s.weight


class MambaMixer(nn.Module):
    def __init__(s, d, n=8):
        super().__init__()
        di = 2 * d
        s.di = di
        s.n = n
        s.in_proj = nn.Linear(d, 2 * di, bias=False)
        s.conv1d = nn.Conv1d(di, di, 4, groups=di, padding=3)
        s.x_proj = nn.Linear(di, 4 + 2 * n, bias=False)
        s.dt_proj = nn.Linear(4, di)
        s.A_log = nn.Parameter(torch.log(torch.arange(1, n + 1).float()).repeat(di, 1))
        s.D = nn.Parameter(torch.ones(di))
        s.out_proj = nn.Linear(di, d, bias=False)

    def forward(s, x):
        L = x.shape[1]
        xz = s.in_proj(x)
        x, z = xz.chunk(2, -1)
        x = F.silu(s.conv1d(x.transpose(1, 2))[..., :L].transpose(1, 2))
        dbc = s.x_proj(x)
        dt, Bm, Cm = dbc.split([4, s.n, s.n], -1)
        dt = F.softplus(s.dt_proj(dt))
        A = -torch.exp(s.A_log)
        h = torch.zeros(x.shape[0], s.di, s.n)
        ys = []
        for t in range(L):
            h = (
                torch.exp(dt[:, t, :, None] * A) * h
                + dt[:, t, :, None] * Bm[:, t, None, :] * x[:, t, :, None]
            )
            ys.append((h * Cm[:, t, None, :]).sum(-1))
        y = torch.stack(ys, 1) + x * s.D
        return s.out_proj(y * F.silu(z))


class MambaBlock(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.norm = RMSNorm(d)
        s.mixer = MambaMixer(d)

    def forward(s, x):
        return x + s.mixer(s.norm(x))


class MambaLM(nn.Module):
    def __init__(s, v=300, d=32, n=3):
        super().__init__()
        s.embedding = nn.Embedding(v, d)
        s.layers = nn.ModuleList([MambaBlock(d) for _ in range(n)])
        s.norm_f = RMSNorm(d)
        s.lm_head = nn.Linear(d, v, bias=False)

    def forward(s, ids):
        x = s.embedding(ids)
        for l in s.layers:
            x = l(x)
        return s.lm_head(s.norm_f(x))


# N-BEATS: stacks of fully connected blocks, backcast and forecast.
class NBeatsBlock(nn.Module):
    def __init__(s, back, fore, h=64):
        super().__init__()
        s.layers = nn.ModuleList([nn.Linear(back, h)] + [nn.Linear(h, h) for _ in range(3)])
        s.theta = nn.Linear(h, back + fore)
        s.back = back

    def forward(s, x):
        for l in s.layers:
            x = torch.relu(l(x))
        t = s.theta(x)
        return t[:, : s.back], t[:, s.back :]


class NBeats(nn.Module):
    def __init__(s, back=40, fore=10, n=4):
        super().__init__()
        s.blocks = nn.ModuleList([NBeatsBlock(back, fore) for _ in range(n)])
        s.fore = fore

    def forward(s, x):
        f = 0
        for b in s.blocks:
            bc, fc = b(x)
            x = x - bc
            f = f + fc
        return f


# FT-Transformer: numeric tokenizer as parameters, CLS token, pre-norm encoder layers (nn.TransformerEncoderLayer).
class Tokenizer(nn.Module):
    def __init__(s, n, d):
        super().__init__()
        s.weight = nn.Parameter(torch.randn(n, d) * 0.1)
        s.bias = nn.Parameter(torch.zeros(n, d))

    def forward(s, x):
        return s.weight[None] * x[..., None] + s.bias[None]


class FTTransformer(nn.Module):
    def __init__(s, n=12, d=32):
        super().__init__()
        s.tokenizer = Tokenizer(n, d)
        s.cls = nn.Parameter(torch.zeros(1, 1, d))
        s.blocks = nn.ModuleList(
            [
                nn.TransformerEncoderLayer(
                    d, 4, 64, 0.1, activation="gelu", batch_first=True, norm_first=True
                )
                for _ in range(3)
            ]
        )
        s.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 2))

    def forward(s, x):
        t = s.tokenizer(x)
        t = torch.cat([s.cls.expand(t.shape[0], -1, -1), t], 1)
        for b in s.blocks:
            t = b(t)
        return s.head(t[:, 0])


# Perceiver-lite: latent array, cross-attention, latent self-attention blocks (nn.MultiheadAttention), FF modules.
class FF(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.net = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(s, x):
        return s.net(x)


class CrossBlock(nn.Module):
    def __init__(s, d, di):
        super().__init__()
        s.norm_q = nn.LayerNorm(d)
        s.norm_kv = nn.LayerNorm(di)
        s.proj = nn.Linear(di, d)
        s.attn = nn.MultiheadAttention(d, 1, batch_first=True)
        s.ff = FF(d)

    def forward(s, lat, x):
        kv = s.proj(s.norm_kv(x))
        lat = lat + s.attn(s.norm_q(lat), kv, kv, need_weights=False)[0]
        return lat + s.ff(lat)


class SelfBlock(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.norm = nn.LayerNorm(d)
        s.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        s.ff = FF(d)

    def forward(s, x):
        h = s.norm(x)
        x = x + s.attn(h, h, h, need_weights=False)[0]
        return x + s.ff(x)


class Perceiver(nn.Module):
    def __init__(s, di=24, d=48, nl=16):
        super().__init__()
        s.latents = nn.Parameter(torch.randn(nl, d) * 0.02)
        s.cross = CrossBlock(d, di)
        s.selfs = nn.ModuleList([SelfBlock(d) for _ in range(3)])
        s.out = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 10))

    def forward(s, x):
        lat = s.cross(s.latents.expand(x.shape[0], -1, -1), x)
        for b in s.selfs:
            lat = b(lat)
        return s.out(lat.mean(1))


# BART-like encoder-decoder: learned positions, post-norm, q/k/v/out_proj modules, cross-attention, GELU FF modules.
class BartAttention(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.h = h
        s.q_proj = nn.Linear(d, d)
        s.k_proj = nn.Linear(d, d)
        s.v_proj = nn.Linear(d, d)
        s.out_proj = nn.Linear(d, d)

    def forward(s, x, kv=None, causal=False):
        kv = x if kv is None else kv
        B, T, C = x.shape
        q = s.q_proj(x) * (C // s.h) ** -0.5
        k, v = s.k_proj(kv), s.v_proj(kv)
        q, k, v = (t.view(B, -1, s.h, C // s.h).transpose(1, 2) for t in (q, k, v))
        w = q @ k.transpose(-1, -2)
        if causal:
            w = w.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        o = F.dropout(w.softmax(-1), 0.1, s.training) @ v
        return s.out_proj(o.transpose(1, 2).reshape(B, T, C))


class BartEncLayer(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.self_attn = BartAttention(d, h)
        s.self_attn_layer_norm = nn.LayerNorm(d)
        s.fc1 = nn.Linear(d, 4 * d)
        s.fc2 = nn.Linear(4 * d, d)
        s.final_layer_norm = nn.LayerNorm(d)

    def forward(s, x):
        x = s.self_attn_layer_norm(x + F.dropout(s.self_attn(x), 0.1, s.training))
        return s.final_layer_norm(x + F.dropout(s.fc2(F.gelu(s.fc1(x))), 0.1, s.training))


class BartDecLayer(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.self_attn = BartAttention(d, h)
        s.self_attn_layer_norm = nn.LayerNorm(d)
        s.encoder_attn = BartAttention(d, h)
        s.encoder_attn_layer_norm = nn.LayerNorm(d)
        s.fc1 = nn.Linear(d, 4 * d)
        s.fc2 = nn.Linear(4 * d, d)
        s.final_layer_norm = nn.LayerNorm(d)

    def forward(s, x, mem):
        x = s.self_attn_layer_norm(x + F.dropout(s.self_attn(x, causal=True), 0.1, s.training))
        x = s.encoder_attn_layer_norm(x + F.dropout(s.encoder_attn(x, mem), 0.1, s.training))
        return s.final_layer_norm(x + F.dropout(s.fc2(F.gelu(s.fc1(x))), 0.1, s.training))


class Bart(nn.Module):
    def __init__(s, v=400, d=48, h=4):
        super().__init__()
        s.shared = nn.Embedding(v, d)
        s.enc_pos = nn.Embedding(40, d)
        s.dec_pos = nn.Embedding(40, d)
        s.enc_ln = nn.LayerNorm(d)
        s.dec_ln = nn.LayerNorm(d)
        s.encoder = nn.ModuleList(BartEncLayer(d, h) for _ in range(2))
        s.decoder = nn.ModuleList(BartDecLayer(d, h) for _ in range(2))
        s.lm_head = nn.Linear(d, v, bias=False)

    def forward(s, src, tgt):
        x = F.dropout(s.enc_ln(s.shared(src) + s.enc_pos(torch.arange(src.size(1)))), 0.1, s.training)
        for l in s.encoder:
            x = l(x)
        y = F.dropout(s.dec_ln(s.shared(tgt) + s.dec_pos(torch.arange(tgt.size(1)))), 0.1, s.training)
        for l in s.decoder:
            y = l(y, x)
        return s.lm_head(y)


# PatchTST-like: instance norm (RevIN inline), patching with unfold, linear embedding, nn.TransformerEncoder (batch-norm-free), flatten head.
class PatchTST(nn.Module):
    def __init__(s, L=64, P=8, d=32, fore=16):
        super().__init__()
        s.P = P
        n = L // P
        s.W_P = nn.Linear(P, d)
        s.W_pos = nn.Parameter(torch.randn(n, d) * 0.02)
        s.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 64, 0.1, batch_first=True), 2)
        s.head = nn.Sequential(nn.Flatten(-2), nn.Linear(n * d, fore))

    def forward(s, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True) + 1e-5
        x = (x - mean) / std
        B, C, L = x.shape
        p = x.unfold(-1, s.P, s.P).reshape(B * C, -1, s.P)
        z = s.encoder(s.W_P(p) + s.W_pos)
        return s.head(z.reshape(B, C, *z.shape[1:])) * std + mean


# SASRec: item and position embeddings, causal self-attention blocks (nn.MultiheadAttention), point-wise Conv1d FF.
class PointWiseFF(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.conv1 = nn.Conv1d(d, d, 1)
        s.drop1 = nn.Dropout(0.2)
        s.relu = nn.ReLU()
        s.conv2 = nn.Conv1d(d, d, 1)
        s.drop2 = nn.Dropout(0.2)

    def forward(s, x):
        o = s.drop2(s.conv2(s.relu(s.drop1(s.conv1(x.transpose(-1, -2))))))
        return o.transpose(-1, -2) + x


class SASRec(nn.Module):
    def __init__(s, items=500, d=32, L=20, n=2):
        super().__init__()
        s.item_emb = nn.Embedding(items, d)
        s.pos_emb = nn.Embedding(L, d)
        s.emb_dropout = nn.Dropout(0.2)
        s.attention_layernorms = nn.ModuleList(nn.LayerNorm(d) for _ in range(n))
        s.attention_layers = nn.ModuleList(
            nn.MultiheadAttention(d, 2, 0.2, batch_first=True) for _ in range(n)
        )
        s.forward_layernorms = nn.ModuleList(nn.LayerNorm(d) for _ in range(n))
        s.forward_layers = nn.ModuleList(PointWiseFF(d) for _ in range(n))
        s.last_layernorm = nn.LayerNorm(d)

    def forward(s, seq, pos, neg):
        x = s.emb_dropout(
            s.item_emb(seq) * s.item_emb.embedding_dim**0.5 + s.pos_emb(torch.arange(seq.size(1)))
        )
        mask = torch.ones(seq.size(1), seq.size(1), dtype=torch.bool).triu(1)
        for i in range(len(s.attention_layers)):
            q = s.attention_layernorms[i](x)
            x = q + s.attention_layers[i](q, x, x, attn_mask=mask, need_weights=False)[0]
            x = s.forward_layers[i](s.forward_layernorms[i](x))
        h = s.last_layernorm(x)
        return (h * s.item_emb(pos)).sum(-1) - (h * s.item_emb(neg)).sum(-1)


def sas_loss(out, target):
    return -F.logsigmoid(out).mean()


# TFT-like gated residual networks: linear, ELU, linear, dropout, GLU (linear + sigmoid gate), add and norm; variable selection.
class GLU(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.fc = nn.Linear(d, 2 * d)

    def forward(s, x):
        return F.glu(s.fc(x), -1)


class GRN(nn.Module):
    def __init__(s, di, d, do=None):
        super().__init__()
        do = do or d
        s.skip = nn.Linear(di, do) if di != do else None
        s.fc1 = nn.Linear(di, d)
        s.elu = nn.ELU()
        s.fc2 = nn.Linear(d, do)
        s.drop = nn.Dropout(0.1)
        s.glu = GLU(do)
        s.norm = nn.LayerNorm(do)

    def forward(s, x):
        r = x if s.skip is None else s.skip(x)
        return s.norm(s.glu(s.drop(s.fc2(s.elu(s.fc1(x))))) + r)


class TFTish(nn.Module):
    def __init__(s, nv=5, d=32):
        super().__init__()
        s.embed = nn.ModuleList(nn.Linear(1, d) for _ in range(nv))
        s.select = GRN(nv * d, d, nv)
        s.var_grns = nn.ModuleList(GRN(d, d) for _ in range(nv))
        s.lstm = nn.LSTM(d, d, batch_first=True)
        s.post = GRN(d, d)
        s.head = nn.Linear(d, 1)

    def forward(s, x):
        e = [m(x[..., i : i + 1]) for i, m in enumerate(s.embed)]
        w = s.select(torch.cat(e, -1)).softmax(-1)
        v = torch.stack([g(t) for g, t in zip(s.var_grns, e)], -1)
        h, _ = s.lstm((v * w.unsqueeze(-2)).sum(-1))
        return s.head(s.post(h)).squeeze(-1)


# EGNN: edge MLP on node pairs and squared distances, coordinate update, node MLP with residual.
class EGCL(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.edge_mlp = nn.Sequential(nn.Linear(2 * d + 1, d), nn.SiLU(), nn.Linear(d, d), nn.SiLU())
        s.node_mlp = nn.Sequential(nn.Linear(2 * d, d), nn.SiLU(), nn.Linear(d, d))
        s.coord_mlp = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, 1, bias=False))

    def forward(s, h, x, src, dst):
        diff = x[src] - x[dst]
        rad = (diff**2).sum(-1, keepdim=True)
        m = s.edge_mlp(torch.cat([h[src], h[dst], rad], 1))
        x = x + torch.zeros_like(x).index_add_(0, src, diff * s.coord_mlp(m))
        agg = torch.zeros_like(h).index_add_(0, src, m)
        return h + s.node_mlp(torch.cat([h, agg], 1)), x


class EGNN(nn.Module):
    def __init__(s, di=8, d=32, n=3):
        super().__init__()
        s.embedding_in = nn.Linear(di, d)
        s.layers = nn.ModuleList(EGCL(d) for _ in range(n))
        s.embedding_out = nn.Linear(d, 1)

    def forward(s, h, x, src, dst):
        h = s.embedding_in(h)
        for l in s.layers:
            h, x = l(h, x, src, dst)
        return s.embedding_out(h).sum() + x.sum() * 0


def b_egnn():
    g = torch.Generator().manual_seed(5)
    n, m = 60, 300
    return dict(
        model=EGNN(),
        inputs=(
            randn(n, 8),
            randn(n, 3, seed=3),
            torch.randint(0, n, (m,), generator=g),
            torch.randint(0, n, (m,), generator=g),
        ),
        target=torch.zeros(()),
        loss=lambda o, t: (o - t) ** 2 * 1e-4,
    )


# MMoE: shared experts (MLPs), one softmax gate per task, towers.
class Expert(nn.Module):
    def __init__(s, di, d):
        super().__init__()
        s.net = nn.Sequential(nn.Linear(di, d), nn.ReLU(), nn.Dropout(0.1), nn.Linear(d, d), nn.ReLU())

    def forward(s, x):
        return s.net(x)


class MMoE(nn.Module):
    def __init__(s, di=20, d=32, ne=4, tasks=2):
        super().__init__()
        s.experts = nn.ModuleList(Expert(di, d) for _ in range(ne))
        s.gates = nn.ModuleList(nn.Linear(di, ne) for _ in range(tasks))
        s.towers = nn.ModuleList(
            nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, 1)) for _ in range(tasks)
        )

    def forward(s, x):
        e = torch.stack([m(x) for m in s.experts], 1)
        outs = [t((g(x).softmax(-1).unsqueeze(-1) * e).sum(1)) for g, t in zip(s.gates, s.towers)]
        return torch.cat(outs, 1)


# Graph transformer (TransformerConv-like): q, k, v, skip linears, per-edge scores gathered, softmax by scatter, messages summed.
class TransformerConv(nn.Module):
    def __init__(s, d, h=2):
        super().__init__()
        s.h = h
        s.lin_query = nn.Linear(d, d)
        s.lin_key = nn.Linear(d, d)
        s.lin_value = nn.Linear(d, d)
        s.lin_skip = nn.Linear(d, d)

    def forward(s, x, src, dst):
        n, d = x.shape
        h = s.h
        q = s.lin_query(x).view(n, h, -1)
        k = s.lin_key(x).view(n, h, -1)
        v = s.lin_value(x).view(n, h, -1)
        a = (q[dst] * k[src]).sum(-1) / math.sqrt(d // h)
        a = (a - a.max()).exp()
        den = torch.zeros(n, h).index_add_(0, dst, a)
        a = a / den[dst]
        out = torch.zeros(n, h, d // h).index_add_(0, dst, v[src] * a.unsqueeze(-1))
        return out.reshape(n, d) + s.lin_skip(x)


class GraphTransformer(nn.Module):
    def __init__(s, di=12, d=32, n=3):
        super().__init__()
        s.inp = nn.Linear(di, d)
        s.convs = nn.ModuleList(TransformerConv(d) for _ in range(n))
        s.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(n))
        s.out = nn.Linear(d, 4)

    def forward(s, x, src, dst):
        x = s.inp(x)
        for c, nm in zip(s.convs, s.norms):
            x = nm(F.relu(c(x, src, dst)) + x)
        return s.out(x)


def b_gt():
    g = torch.Generator().manual_seed(9)
    n, m = 80, 400
    return dict(
        model=GraphTransformer(),
        inputs=(randn(n, 12), torch.randint(0, n, (m,), generator=g), torch.randint(0, n, (m,), generator=g)),
        target=randint(4, n, seed=5),
        loss=ce,
    )


# EnCodec-lite encoder: conv, SEANet residual units (ELU, dilated conv, ELU, 1x1 conv, add), strided downsampling, LSTM, conv.
class SEANetResnetBlock(nn.Module):
    def __init__(s, c, dil):
        super().__init__()
        s.block = nn.Sequential(
            nn.ELU(), nn.Conv1d(c, c // 2, 3, dilation=dil, padding=dil), nn.ELU(), nn.Conv1d(c // 2, c, 1)
        )
        s.shortcut = nn.Identity()

    def forward(s, x):
        return s.shortcut(x) + s.block(x)


class EncodecLite(nn.Module):
    def __init__(s):
        super().__init__()
        layers = [nn.Conv1d(1, 16, 7, padding=3)]
        c = 16
        for _ in range(2):
            layers += [
                SEANetResnetBlock(c, 1),
                SEANetResnetBlock(c, 3),
                nn.ELU(),
                nn.Conv1d(c, 2 * c, 4, 2, 1),
            ]
            c *= 2
        s.model = nn.Sequential(*layers)
        s.lstm = nn.LSTM(c, c, 2, batch_first=True)
        s.final = nn.Sequential(nn.ELU(), nn.Conv1d(c, 8, 7, padding=3))

    def forward(s, x):
        y = s.model(x).transpose(1, 2)
        y = s.lstm(y)[0] + y
        return s.final(y.transpose(1, 2))


# T5 encoder-decoder: RMS-like norms written by hand (T5LayerNorm), q/k/v/o linears without bias, relative bias in the first layers, cross-attention, ReLU FF.
class T5Norm(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.weight = nn.Parameter(torch.ones(d))

    def forward(s, x):
        return s.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class T5Attention(nn.Module):
    def __init__(s, d, h, bias=False):
        super().__init__()
        s.h = h
        s.q = nn.Linear(d, d, bias=False)
        s.k = nn.Linear(d, d, bias=False)
        s.v = nn.Linear(d, d, bias=False)
        s.o = nn.Linear(d, d, bias=False)
        s.relative_attention_bias = nn.Embedding(32, h) if bias else None

    def forward(s, x, kv=None, pos_bias=None):
        kv = x if kv is None else kv
        B, T, C = x.shape
        S = kv.shape[1]
        q = s.q(x).view(B, T, s.h, -1).transpose(1, 2)
        k = s.k(kv).view(B, S, s.h, -1).transpose(1, 2)
        v = s.v(kv).view(B, S, s.h, -1).transpose(1, 2)
        scores = q @ k.transpose(-1, -2)
        if s.relative_attention_bias is not None:
            rel = (torch.arange(S)[None, :] - torch.arange(T)[:, None]).clamp(-15, 16) + 15
            pos_bias = s.relative_attention_bias(rel).permute(2, 0, 1).unsqueeze(0)
        if pos_bias is not None:
            scores = scores + pos_bias
        a = F.dropout(scores.softmax(-1), 0.1, s.training)
        return s.o((a @ v).transpose(1, 2).reshape(B, T, C)), pos_bias


class T5FF(nn.Module):
    def __init__(s, d):
        super().__init__()
        s.layer_norm = T5Norm(d)
        s.wi = nn.Linear(d, 4 * d, bias=False)
        s.wo = nn.Linear(4 * d, d, bias=False)
        s.dropout = nn.Dropout(0.1)

    def forward(s, x):
        return x + s.dropout(s.wo(s.dropout(F.relu(s.wi(s.layer_norm(x))))))


class T5SelfLayer(nn.Module):
    def __init__(s, d, h, bias):
        super().__init__()
        s.layer_norm = T5Norm(d)
        s.SelfAttention = T5Attention(d, h, bias)
        s.dropout = nn.Dropout(0.1)

    def forward(s, x, pb=None):
        y, pb = s.SelfAttention(s.layer_norm(x), pos_bias=pb)
        return x + s.dropout(y), pb


class T5CrossLayer(nn.Module):
    def __init__(s, d, h):
        super().__init__()
        s.layer_norm = T5Norm(d)
        s.EncDecAttention = T5Attention(d, h)
        s.dropout = nn.Dropout(0.1)

    def forward(s, x, mem):
        return x + s.dropout(s.EncDecAttention(s.layer_norm(x), mem)[0])


class T5Block(nn.Module):
    def __init__(s, d, h, bias, dec):
        super().__init__()
        s.self_layer = T5SelfLayer(d, h, bias)
        s.cross = T5CrossLayer(d, h) if dec else None
        s.ff = T5FF(d)

    def forward(s, x, pb=None, mem=None):
        x, pb = s.self_layer(x, pb)
        if s.cross is not None:
            x = s.cross(x, mem)
        return s.ff(x), pb


class T5Small(nn.Module):
    def __init__(s, v=300, d=48, h=4):
        super().__init__()
        s.shared = nn.Embedding(v, d)
        s.encoder = nn.ModuleList(T5Block(d, h, i == 0, False) for i in range(2))
        s.enc_norm = T5Norm(d)
        s.decoder = nn.ModuleList(T5Block(d, h, i == 0, True) for i in range(2))
        s.dec_norm = T5Norm(d)
        s.lm_head = nn.Linear(d, v, bias=False)
        s.dropout = nn.Dropout(0.1)

    def forward(s, src, tgt):
        x = s.dropout(s.shared(src))
        pb = None
        for b in s.encoder:
            x, pb = b(x, pb)
        mem = s.dropout(s.enc_norm(x))
        y = s.dropout(s.shared(tgt))
        pb = None
        for b in s.decoder:
            y, pb = b(y, pb, mem)
        return s.lm_head(s.dropout(s.dec_norm(y)))


REGISTRY = [
    (
        "albert_shared",
        "bert",
        "adamw",
        lambda: dict(model=Albert(), inputs=(randint(600, 4, 16),), target=randint(2, 4, seed=3), loss=ce),
    ),
    (
        "mamba_tiny",
        "ssm",
        "adamw",
        lambda: dict(
            model=MambaLM(), inputs=(randint(300, 2, 12),), target=randint(300, 2, 12, seed=3), loss=ce_tokens
        ),
    ),
    (
        "nbeats",
        "timeseries",
        "adam",
        lambda: dict(model=NBeats(), inputs=(randn(8, 40),), target=randn(8, 10, seed=4), loss=mse),
    ),
    (
        "ft_transformer",
        "tabular",
        "adamw",
        lambda: dict(model=FTTransformer(), inputs=(randn(8, 12),), target=randint(2, 8, seed=3), loss=ce),
    ),
    (
        "perceiver",
        "multimodal",
        "adam",
        lambda: dict(model=Perceiver(), inputs=(randn(2, 50, 24),), target=randint(10, 2, seed=3), loss=ce),
    ),
    (
        "bart_tiny",
        "seq2seq",
        "adamw",
        lambda: dict(
            model=Bart(),
            inputs=(randint(400, 2, 12), randint(400, 2, 10, seed=3)),
            target=randint(400, 2, 10, seed=4),
            loss=ce_tokens,
        ),
    ),
    (
        "patchtst",
        "timeseries",
        "adam",
        lambda: dict(model=PatchTST(), inputs=(randn(4, 3, 64),), target=randn(4, 3, 16, seed=4), loss=mse),
    ),
    (
        "sasrec",
        "recsys",
        "adam",
        lambda: dict(
            model=SASRec(),
            inputs=(randint(500, 4, 20), randint(500, 4, 20, seed=3), randint(500, 4, 20, seed=4)),
            target=None,
            loss=sas_loss,
        ),
    ),
    (
        "tft_ish",
        "timeseries",
        "adam",
        lambda: dict(model=TFTish(), inputs=(randn(4, 12, 5),), target=randn(4, 12, seed=4), loss=mse),
    ),
    ("egnn", "gnn", "adam", b_egnn),
    (
        "mmoe",
        "recsys",
        "adam",
        lambda: dict(model=MMoE(), inputs=(randn(16, 20),), target=randn(16, 2, seed=4), loss=mse),
    ),
    ("graph_transformer", "gnn", "adam", b_gt),
    (
        "encodec_lite",
        "audio",
        "adam",
        lambda: dict(
            model=EncodecLite(), inputs=(randn(2, 1, 256),), target=randn(2, 8, 64, seed=4), loss=mse
        ),
    ),
    (
        "t5_small_encdec",
        "seq2seq",
        "adamw",
        lambda: dict(
            model=T5Small(),
            inputs=(randint(300, 2, 12), randint(300, 2, 10, seed=3)),
            target=randint(300, 2, 10, seed=4),
            loss=ce_tokens,
        ),
    ),
]
