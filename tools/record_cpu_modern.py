#!/usr/bin/env python3
"""Record Strata's modern CPU tuning corpus: today's architectures the first corpus lacks.

tests/data/corpus-cpu predates the decoder-only LLM, the shared-expert mixture of experts and
the feature-crossing recommenders that dominate training today. This script records a third
corpus, tests/data/corpus-cpu-modern, of such models written the way their reference code
writes them (Llama-style RMSNorm, rotary embeddings, grouped-query attention and SwiGLU; a
Qwen-MoE-style sparse block with a gated shared expert; GPT-NeoX parallel blocks; a Whisper
encoder; an ESPnet-style Conformer; a diffusion UNet; DCN-v2's cross network; DeepFM over
EmbeddingBags; a two-tower retrieval model; GIN and GATv2 message passing; a pre-activation
separable-conv network; a DenseNet concatenating in its loop; a Gemma-style decoder; the common
CIFAR ResNet; an LSTM encoder-decoder with attention; torchvision's EfficientNetV2-S, Swin
V2-T, MaxViT, the R(2+1)D and S3D video networks and Inception v3). Every model's
split is "tune": the layer inference may be tuned on it. tests/data/corpus-cpu-heldout stays
the check, and no model name is shared with either other corpus.

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_modern.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_modern.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-modern.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import b_graph, b_lm, bce, ce, ce_tokens, ctc, image_cls, mse, randint, randn, tv  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torchvision import models as tvm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# decoder-only LLM (Llama-style) and a Qwen-MoE-style sparse decoder

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (base ** (torch.arange(0, head_dim, 2).float()
                                                          / head_dim)))

    def forward(self, seq):
        freqs = torch.outer(torch.arange(seq).float(), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class GQAttention(nn.Module):
    """Bias-free q/k/v/o projections, rotary positions, grouped-query attention."""

    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x, cos, sin, mask):
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + mask
        att = F.softmax(att.float(), dim=-1).type_as(q)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, n, -1)
        return self.o_proj(y)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class SparseMoeBlock(nn.Module):
    """Softmax router, top-k experts gathered by index and summed back with index_add_, plus
    a shared expert scaled by a sigmoid gate."""

    def __init__(self, dim, hidden, experts=4, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(dim, hidden) for _ in range(experts))
        self.shared_expert = SwiGLU(dim, hidden)
        self.shared_expert_gate = nn.Linear(dim, 1, bias=False)

    def forward(self, x):
        b, n, c = x.shape
        h = x.view(-1, c)
        weights = F.softmax(self.gate(h), dim=1, dtype=torch.float)
        weights, chosen = torch.topk(weights, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(h)
        mask = F.one_hot(chosen, num_classes=len(self.experts)).permute(2, 1, 0)
        for e, expert in enumerate(self.experts):
            slot, token = torch.where(mask[e])
            y = expert(h[token]) * weights[token, slot, None]
            out.index_add_(0, token, y)
        shared = self.shared_expert(h) * torch.sigmoid(self.shared_expert_gate(h))
        return (out + shared).view(b, n, c)


class DecoderLayer(nn.Module):
    def __init__(self, dim, heads, kv_heads, mlp):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = GQAttention(dim, heads, kv_heads)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = mlp

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class DecoderLM(nn.Module):
    def __init__(self, make_mlp, vocab=600, dim=64, depth=4, heads=4, kv_heads=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.rotary_emb = RotaryEmbedding(dim // heads)
        self.layers = nn.ModuleList(DecoderLayer(dim, heads, kv_heads, make_mlp(dim))
                                    for _ in range(depth))
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        n = ids.shape[1]
        x = self.embed_tokens(ids)
        mask = torch.full((n, n), float("-inf")).triu(1)
        cos, sin = self.rotary_emb(n)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


class GemmaRMSNorm(nn.Module):
    """Gemma's RMSNorm: computed in float32, scaled by (1 + weight)."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * (1.0 + self.weight.float())).type_as(x)


class GeGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class GemmaLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.input_layernorm = GemmaRMSNorm(dim)
        self.self_attn = GQAttention(dim, heads, 1)
        self.post_attention_layernorm = GemmaRMSNorm(dim)
        self.mlp = GeGLU(dim, 3 * dim)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class GemmaLM(nn.Module):
    """Gemma-style: embeddings scaled by sqrt(dim), multi-query attention, GeGLU, tied head."""

    def __init__(self, vocab=600, dim=64, depth=3, heads=4):
        super().__init__()
        self.dim = dim
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.rotary_emb = RotaryEmbedding(dim // heads)
        self.layers = nn.ModuleList(GemmaLayer(dim, heads) for _ in range(depth))
        self.norm = GemmaRMSNorm(dim)

    def forward(self, ids):
        n = ids.shape[1]
        x = self.embed_tokens(ids) * math.sqrt(self.dim)
        mask = torch.full((n, n), float("-inf")).triu(1)
        cos, sin = self.rotary_emb(n)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return F.linear(self.norm(x), self.embed_tokens.weight)


# ---------------------------------------------------------------------------------------
# recommendation: DCN-v2 and DeepFM

class CrossLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, x0, x):
        return x0 * self.linear(x) + x


class DCNv2(nn.Module):
    def __init__(self, fields=8, vocab=100, emb=8, dense=13, cross=3):
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(vocab, emb) for _ in range(fields))
        self.dense_norm = nn.BatchNorm1d(dense)
        d = fields * emb + dense
        self.cross = nn.ModuleList(CrossLayer(d) for _ in range(cross))
        self.deep = nn.Sequential(nn.Linear(d, 128), nn.ReLU(), nn.Dropout(0.1),
                                  nn.Linear(128, 64), nn.ReLU())
        self.head = nn.Linear(d + 64, 1)

    def forward(self, sparse, dense):
        feats = [e(sparse[:, i]) for i, e in enumerate(self.embeddings)]
        x0 = torch.cat(feats + [self.dense_norm(dense)], dim=1)
        x = x0
        for layer in self.cross:
            x = layer(x0, x)
        return self.head(torch.cat([x, self.deep(x0)], dim=1)).squeeze(1)


class FMInteraction(nn.Module):
    def forward(self, e):
        s = e.sum(dim=1)
        return 0.5 * (s * s - (e * e).sum(dim=1)).sum(dim=1, keepdim=True)


class DeepFM(nn.Module):
    def __init__(self, fields=6, vocab=200, emb=8):
        super().__init__()
        self.first_order = nn.ModuleList(nn.EmbeddingBag(vocab, 1, mode="sum")
                                         for _ in range(fields))
        self.embeddings = nn.ModuleList(nn.EmbeddingBag(vocab, emb, mode="mean")
                                        for _ in range(fields))
        self.fm = FMInteraction()
        self.dnn = nn.Sequential(nn.Linear(fields * emb, 64), nn.ReLU(), nn.Dropout(0.1),
                                 nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, bags):
        first = sum(e(bags[:, i]) for i, e in enumerate(self.first_order))
        emb = torch.stack([e(bags[:, i]) for i, e in enumerate(self.embeddings)], dim=1)
        return (first + self.fm(emb) + self.dnn(emb.flatten(1))).squeeze(1)


# ---------------------------------------------------------------------------------------
# GIN message passing

class GINConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(nn.Linear(cin, cout), nn.BatchNorm1d(cout), nn.ReLU(),
                                 nn.Linear(cout, cout))

    def forward(self, x, src, dst):
        agg = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src))
        return self.mlp((1 + self.eps) * x + agg)


class GIN(nn.Module):
    def __init__(self, cin=32, hidden=48, classes=7, depth=3):
        super().__init__()
        self.convs = nn.ModuleList(GINConv(cin if i == 0 else hidden, hidden)
                                   for i in range(depth))
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(depth))
        self.act = nn.ReLU()
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, x, src, dst, deg_inv):
        for conv, norm in zip(self.convs, self.norms):
            x = self.act(norm(conv(x, src, dst)))
        return self.classifier(x)


# ---------------------------------------------------------------------------------------
# pre-activation separable-conv network

class SepConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.dw = nn.Conv2d(cin, cin, 3, 1, 1, groups=cin, bias=False)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x):
        return self.pw(self.dw(x))


class PreActSepBlock(nn.Module):
    """BN-ReLU-SepConv twice, a 1x1 projection on the shortcut when the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1, self.relu1, self.conv1 = nn.BatchNorm2d(cin), nn.ReLU(), SepConv(cin, cout)
        self.bn2, self.relu2, self.conv2 = nn.BatchNorm2d(cout), nn.ReLU(), SepConv(cout, cout)
        self.pool = nn.AvgPool2d(2) if stride > 1 else nn.Identity()
        self.shortcut = (nn.Conv2d(cin, cout, 1, stride, bias=False)
                         if stride > 1 or cin != cout else None)

    def forward(self, x):
        out = self.conv1(self.relu1(self.bn1(x)))
        out = self.pool(self.conv2(self.relu2(self.bn2(out))))
        return out + (x if self.shortcut is None else self.shortcut(x))


class PreActSepNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 3, 1, 1, bias=False)
        cfg = [(24, 24, 1), (24, 48, 2), (48, 48, 1), (48, 96, 2), (96, 96, 1)]
        self.blocks = nn.Sequential(*(PreActSepBlock(i, o, s) for i, o, s in cfg))
        self.bn = nn.BatchNorm2d(96)
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(96, classes)

    def forward(self, x):
        x = self.pool(self.relu(self.bn(self.blocks(self.stem(x)))))
        return self.fc(torch.flatten(x, 1))


# ---------------------------------------------------------------------------------------
# GPT-J / NeoX-style parallel block, Whisper-style encoder, diffusion UNet

class ParallelBlock(nn.Module):
    """One LayerNorm feeding attention and MLP side by side: x + attn(h) + mlp(h)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.attn = GQAttention(dim, heads, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, cos, sin, mask):
        h = self.ln(x)
        return x + self.attn(h, cos, sin, mask) + self.mlp(h)


class ParallelLM(nn.Module):
    def __init__(self, vocab=600, dim=64, depth=4, heads=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rotary = RotaryEmbedding(dim // heads)
        self.blocks = nn.ModuleList(ParallelBlock(dim, heads) for _ in range(depth))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        n = ids.shape[1]
        x = self.embed(ids)
        mask = torch.full((n, n), float("-inf")).triu(1)
        cos, sin = self.rotary(n)
        for block in self.blocks:
            x = block(x, cos, sin, mask)
        return self.head(self.ln_f(x))


class WhisperAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q = self.query(x).view(b, n, self.heads, -1).permute(0, 2, 1, 3)
        k = self.key(x).view(b, n, self.heads, -1).permute(0, 2, 3, 1)
        v = self.value(x).view(b, n, self.heads, -1).permute(0, 2, 1, 3)
        scale = (c // self.heads) ** -0.25
        w = F.softmax((q * scale) @ (k * scale), dim=-1)
        return self.out((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))


class WhisperBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn_ln = nn.LayerNorm(dim)
        self.attn = WhisperAttention(dim, heads)
        self.mlp_ln = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.attn_ln(x))
        return x + self.mlp(self.mlp_ln(x))


class WhisperEncoderClassifier(nn.Module):
    def __init__(self, mels=40, dim=64, heads=4, depth=3, frames=64, classes=10):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, dim, 3, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        pos = torch.arange(frames // 2).float()[:, None] * torch.exp(
            -math.log(10000) * torch.arange(dim // 2).float() / (dim // 2 - 1))[None]
        self.register_buffer("positional_embedding", torch.cat([pos.sin(), pos.cos()], dim=1))
        self.blocks = nn.ModuleList(WhisperBlock(dim, heads) for _ in range(depth))
        self.ln_post = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, mel):
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x)).permute(0, 2, 1)
        x = x + self.positional_embedding
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_post(x).mean(dim=1))


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half).float() / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time_emb = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(8, cout)
        self.dropout = nn.Dropout(0.1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.dropout(F.silu(self.norm2(h))))
        return self.skip(x) + h


class AttnBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.norm = nn.GroupNorm(8, ch)
        self.qkv = nn.Conv2d(ch, 3 * ch, 1)
        self.proj = nn.Conv2d(ch, ch, 1)

    def forward(self, x):
        b, c, hgt, wid = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, hgt * wid).unbind(1)
        w = torch.softmax(torch.bmm(q.transpose(1, 2), k) / math.sqrt(c), dim=-1)
        h = torch.bmm(v, w.transpose(1, 2)).reshape(b, c, hgt, wid)
        return x + self.proj(h)


class DiffusionUNet(nn.Module):
    """A small DDPM-style UNet: time embedding MLP, ResBlocks with GroupNorm and SiLU, self
    attention at the lowest resolution, skips concatenated on the way up."""

    def __init__(self, ch=32, tdim=64):
        super().__init__()
        self.tdim = tdim
        self.time_mlp = nn.Sequential(nn.Linear(tdim, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.inc = nn.Conv2d(3, ch, 3, padding=1)
        self.down1 = ResBlock(ch, ch, tdim)
        self.pool1 = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
        self.down2 = ResBlock(ch, 2 * ch, tdim)
        self.pool2 = nn.Conv2d(2 * ch, 2 * ch, 3, stride=2, padding=1)
        self.mid1 = ResBlock(2 * ch, 2 * ch, tdim)
        self.mid_attn = AttnBlock(2 * ch)
        self.mid2 = ResBlock(2 * ch, 2 * ch, tdim)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec2 = ResBlock(4 * ch, 2 * ch, tdim)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec1 = ResBlock(3 * ch, ch, tdim)
        self.out_norm = nn.GroupNorm(8, ch)
        self.out = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, x, t):
        temb = self.time_mlp(timestep_embedding(t, self.tdim))
        h0 = self.inc(x)
        h1 = self.down1(h0, temb)
        h2 = self.down2(self.pool1(h1), temb)
        h = self.mid2(self.mid_attn(self.mid1(self.pool2(h2), temb)), temb)
        h = self.dec2(torch.cat([self.up2(h), h2], dim=1), temb)
        h = self.dec1(torch.cat([self.up1(h), h1], dim=1), temb)
        return self.out(F.silu(self.out_norm(h)))


def b_whisper():
    return dict(model=WhisperEncoderClassifier(), inputs=(randn(4, 40, 64),),
                target=randint(10, 4), loss=ce)


def b_maxvit():
    # torchvision's MaxViT at a small configuration: 64x64 inputs, windows and grids of 4x4.
    from torchvision.models.maxvit import MaxVit
    model = MaxVit(input_size=(64, 64), stem_channels=16, partition_size=4, block_channels=[16, 32],
                   block_layers=[1, 2], head_dim=8, stochastic_depth_prob=0.0, num_classes=10)
    return image_cls(model, 2, 64)


def b_diffusion():
    return dict(model=DiffusionUNet(), inputs=(randn(2, 3, 32, 32), randint(1000, 2)),
                target=randn(2, 3, 32, 32, seed=9), loss=mse)


# ---------------------------------------------------------------------------------------
# Conformer (ESPnet-style block: macaron feed-forwards, self-attention, convolution module)

class FeedForwardModule(nn.Module):
    def __init__(self, dim, mult=4):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.w_1 = nn.Linear(dim, mult * dim)
        self.act = nn.SiLU()
        self.dropout1 = nn.Dropout(0.1)
        self.w_2 = nn.Linear(mult * dim, dim)
        self.dropout2 = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout2(self.w_2(self.dropout1(self.act(self.w_1(self.norm(x))))))


class ConvolutionModule(nn.Module):
    def __init__(self, dim, kernel=15):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.pointwise_conv1 = nn.Conv1d(dim, 2 * dim, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise_conv = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.batch_norm = nn.BatchNorm1d(dim)
        self.act = nn.SiLU()
        self.pointwise_conv2 = nn.Conv1d(dim, dim, 1)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = self.glu(self.pointwise_conv1(self.norm(x).transpose(1, 2)))
        x = self.pointwise_conv2(self.act(self.batch_norm(self.depthwise_conv(x))))
        return self.dropout(x).transpose(1, 2)


class ConformerLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ffn1 = FeedForwardModule(dim)
        self.attn_norm = nn.LayerNorm(dim)
        self.self_attn = nn.MultiheadAttention(dim, heads, dropout=0.1, batch_first=True)
        self.attn_dropout = nn.Dropout(0.1)
        self.conv = ConvolutionModule(dim)
        self.ffn2 = FeedForwardModule(dim)
        self.final_norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = x + 0.5 * self.ffn1(x)
        h = self.attn_norm(x)
        x = x + self.attn_dropout(self.self_attn(h, h, h, need_weights=False)[0])
        x = x + self.conv(x)
        x = x + 0.5 * self.ffn2(x)
        return self.final_norm(x)


class ConformerEncoderCTC(nn.Module):
    def __init__(self, mels=40, dim=64, heads=4, depth=3, vocab=20):
        super().__init__()
        self.subsample = nn.Sequential(nn.Conv2d(1, dim, 3, 2), nn.ReLU(), nn.Conv2d(dim, dim, 3, 2), nn.ReLU())
        self.proj = nn.Linear(dim * (((mels - 1) // 2 - 1) // 2), dim)
        self.layers = nn.ModuleList(ConformerLayer(dim, heads) for _ in range(depth))
        self.head = nn.Linear(dim, vocab)

    def forward(self, feats):
        x = self.subsample(feats.unsqueeze(1))
        b, c, t, f = x.shape
        x = self.proj(x.transpose(1, 2).reshape(b, t, c * f))
        for layer in self.layers:
            x = layer(x)
        return self.head(x).log_softmax(-1)


def b_conformer_espnet():
    return dict(model=ConformerEncoderCTC(), inputs=(randn(4, 80, 40),),
                target=randint(19, 4, 10, seed=5) + 1, loss=ctc)


# ---------------------------------------------------------------------------------------
# two-tower retrieval, GATv2-style attention over edges, DenseNet concatenating after each layer

class Tower(nn.Module):
    def __init__(self, ids, bag_vocab, dim=32, out=32, bag_mode="mean"):
        super().__init__()
        self.id_embedding = nn.Embedding(ids, dim)
        self.bag = nn.EmbeddingBag(bag_vocab, dim, mode=bag_mode)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 64), nn.ReLU(), nn.Linear(64, out))

    def forward(self, ids, bag_ids, offsets):
        x = torch.cat([self.id_embedding(ids), self.bag(bag_ids, offsets)], dim=1)
        return F.normalize(self.mlp(x), dim=-1)


class TwoTowerRetrieval(nn.Module):
    def __init__(self):
        super().__init__()
        self.query_tower = Tower(300, 500)
        self.candidate_tower = Tower(400, 60, bag_mode="sum")
        self.temperature = 0.05

    def forward(self, user, history, history_offsets, item, tags, tag_offsets):
        q = self.query_tower(user, history, history_offsets)
        c = self.candidate_tower(item, tags, tag_offsets)
        return q @ c.t() / self.temperature


class GATv2Layer(nn.Module):
    """GATv2: scores from the sum of both ends' projections, a softmax over each node's incoming
    edges by scatter_add_, messages summed with index_add_; heads concatenated."""

    def __init__(self, cin, cout, heads=4):
        super().__init__()
        self.heads, self.cout = heads, cout
        self.lin_src = nn.Linear(cin, heads * cout)
        self.lin_dst = nn.Linear(cin, heads * cout)
        self.att = nn.Parameter(torch.randn(heads, cout) * 0.1)
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x, src, dst):
        n = x.shape[0]
        xs = self.lin_src(x).view(n, self.heads, self.cout)
        xd = self.lin_dst(x).view(n, self.heads, self.cout)
        e = (self.act(xs[src] + xd[dst]) * self.att).sum(-1)
        e = (e - e.max()).exp()
        denom = torch.zeros(n, self.heads).scatter_add_(0, dst.unsqueeze(1).expand_as(e), e)
        alpha = e / denom[dst].clamp(min=1e-9)
        out = torch.zeros(n, self.heads, self.cout).index_add_(0, dst, xs[src] * alpha.unsqueeze(-1))
        return out.reshape(n, self.heads * self.cout)


class GATv2(nn.Module):
    def __init__(self, cin=32, hidden=16, heads=4, classes=7):
        super().__init__()
        self.conv1 = GATv2Layer(cin, hidden, heads)
        self.conv2 = GATv2Layer(hidden * heads, hidden, heads)
        self.dropout = nn.Dropout(0.2)
        self.classifier = nn.Linear(hidden * heads, classes)

    def forward(self, x, src, dst, deg_inv):
        x = self.dropout(F.elu(self.conv1(x, src, dst)))
        x = self.dropout(F.elu(self.conv2(x, src, dst)))
        return self.classifier(x)


class DenseBottleneck(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.net = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, 4 * growth, 1, bias=False),
                                 nn.BatchNorm2d(4 * growth), nn.ReLU(),
                                 nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False))

    def forward(self, x):
        return self.net(x)


class DenseStage(nn.Module):
    def __init__(self, cin, growth, layers):
        super().__init__()
        self.layers = nn.ModuleList(DenseBottleneck(cin + i * growth, growth) for i in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = torch.cat([x, layer(x)], dim=1)
        return x


class Transition(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, cout, 1, bias=False), nn.AvgPool2d(2))


class DenseNetCatAfter(nn.Module):
    def __init__(self, growth=8, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        c, stages = 16, []
        for i, n in enumerate((3, 4, 3)):
            stages.append(DenseStage(c, growth, n))
            c += n * growth
            if i < 2:
                stages.append(Transition(c, c // 2))
                c //= 2
        self.features = nn.Sequential(*stages)
        self.norm = nn.BatchNorm2d(c)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = F.relu(self.norm(self.features(self.stem(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def b_two_tower_retrieval():
    b = 32
    hist_len, tag_len = randint(6, b, seed=11) + 1, randint(3, b, seed=12) + 1
    hist_off = torch.cat([torch.zeros(1, dtype=torch.long), hist_len.cumsum(0)[:-1]])
    tag_off = torch.cat([torch.zeros(1, dtype=torch.long), tag_len.cumsum(0)[:-1]])
    inputs = (randint(300, b, seed=13), randint(500, int(hist_len.sum()), seed=14), hist_off,
              randint(400, b, seed=15), randint(60, int(tag_len.sum()), seed=16), tag_off)
    return dict(model=TwoTowerRetrieval(), inputs=inputs, target=torch.arange(b), loss=ce)


# ---------------------------------------------------------------------------------------
# a CIFAR ResNet written the common way, and an LSTM encoder-decoder with attention

class BasicBlockF(nn.Module):
    """F.relu, the shortcut a Sequential (empty, or a 1x1 conv and BN) run after the branch."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


class CifarResNet(nn.Module):
    def __init__(self, blocks=(2, 2, 2), classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers, c = [], 16
        for i, n in enumerate(blocks):
            out = 16 * 2 ** i
            layers.append(nn.Sequential(*(BasicBlockF(c if j == 0 else out, out, 2 if (i and j == 0) else 1)
                                          for j in range(n))))
            c = out
        self.layer1, self.layer2, self.layer3 = layers
        self.linear = nn.Linear(c, classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.avg_pool2d(out, out.shape[3]).flatten(1)
        return self.linear(out)


class AttnSeq2Seq(nn.Module):
    """Bi-LSTM encoder; LSTMCell decoder with additive attention over the encoder states, fed
    its previous target (teacher forcing)."""

    def __init__(self, vocab=300, emb=32, hidden=48):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, emb)
        self.encoder = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, hidden)
        self.tgt_embed = nn.Embedding(vocab, emb)
        self.cell = nn.LSTMCell(emb + 2 * hidden, hidden)
        self.attn_query = nn.Linear(hidden, hidden, bias=False)
        self.attn_key = nn.Linear(2 * hidden, hidden)
        self.attn_v = nn.Linear(hidden, 1, bias=False)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, src, tgt_in):
        enc, _ = self.encoder(self.src_embed(src))
        keys = self.attn_key(enc)
        h = torch.tanh(self.bridge(enc.mean(1)))
        c = torch.zeros_like(h)
        emb = self.tgt_embed(tgt_in)
        logits = []
        for t in range(tgt_in.shape[1]):
            scores = self.attn_v(torch.tanh(keys + self.attn_query(h).unsqueeze(1))).squeeze(-1)
            ctx = (scores.softmax(-1).unsqueeze(-1) * enc).sum(1)
            h, c = self.cell(torch.cat([emb[:, t], ctx], -1), (h, c))
            logits.append(self.out(h))
        return torch.stack(logits, 1)


def b_attn_seq2seq():
    src, tgt = randint(300, 8, 12, seed=21), randint(300, 8, 7, seed=22)
    return dict(model=AttnSeq2Seq(), inputs=(src, tgt[:, :-1]), target=tgt[:, 1:], loss=ce_tokens)


def b_dcn():
    return dict(model=DCNv2(), inputs=(randint(100, 64, 8), randn(64, 13)),
                target=randint(2, 64, seed=7).float(), loss=bce)


def b_deepfm():
    return dict(model=DeepFM(), inputs=(randint(200, 64, 6, 3),),
                target=randint(2, 64, seed=7).float(), loss=bce)


REGISTRY = [
    # name, family, optimizer, builder
    ("llama_tiny", "llm", "adamw",
     lambda: b_lm(DecoderLM(lambda d: SwiGLU(d, 172)), 600, 4, 32)),
    ("qwen_moe_tiny", "moe", "adamw",
     lambda: b_lm(DecoderLM(lambda d: SparseMoeBlock(d, 96), depth=3), 600, 4, 24)),
    ("dcn_v2", "recsys", "adam", b_dcn),
    ("deepfm", "recsys", "adam", b_deepfm),
    ("gin", "gnn", "adam", lambda: b_graph(GIN())),
    ("preact_sepnet", "depthwise", "sgd", lambda: image_cls(PreActSepNet(), 2, 32)),
    ("neox_parallel", "gpt", "adamw", lambda: b_lm(ParallelLM(), 600, 4, 32)),
    ("whisper_encoder", "speech", "adamw", b_whisper),
    ("diffusion_unet", "unet", "adamw", b_diffusion),
    ("efficientnet_v2_s", "depthwise", "adamw",
     lambda: image_cls(tv(tvm.efficientnet_v2_s, num_classes=10), 2, 64)),
    ("swin_v2_t", "swin", "adamw", lambda: image_cls(tv(tvm.swin_v2_t, num_classes=10), 1, 64)),
    ("conformer_espnet", "speech", "adam", b_conformer_espnet),
    ("two_tower_retrieval", "recsys", "adam", b_two_tower_retrieval),
    ("gatv2", "gnn", "adam", lambda: b_graph(GATv2())),
    ("densenet_cat_after", "dense", "sgd", lambda: image_cls(DenseNetCatAfter(), 4, 32)),
    ("gemma_tiny", "llm", "adamw", lambda: b_lm(GemmaLM(), 600, 4, 32)),
    ("cifar_resnet_f", "residual", "sgd", lambda: image_cls(CifarResNet(), 4, 32)),
    ("lstm_attn_seq2seq", "rnn", "adam", b_attn_seq2seq),
    ("maxvit_small", "vit", "adamw", b_maxvit),
    ("r2plus1d_18", "cnn3d", "sgd",
     lambda: dict(model=tv(tvm.video.r2plus1d_18, num_classes=10), inputs=(randn(2, 3, 4, 32, 32),),
                  target=randint(10, 2), loss=ce)),
    ("s3d", "cnn3d", "sgd",
     lambda: dict(model=tv(tvm.video.s3d, num_classes=10), inputs=(randn(1, 3, 16, 224, 224),),
                  target=randint(10, 1), loss=ce)),
    ("inception_v3", "inception", "sgd",
     lambda: image_cls(tv(tvm.inception_v3, num_classes=10, aux_logits=False, init_weights=False), 2, 80)),
]

SPLIT_RULE = ("every model is tune: this corpus adds today's architectures to "
              "tests/data/corpus-cpu's tuning set and shares no model name with it or with "
              "tests/data/corpus-cpu-heldout")

MODERN = rh.Corpus(REGISTRY, "tune", SPLIT_RULE, "tools/record_cpu_modern.py",
                   os.path.join(DATA, "corpus-cpu-modern"),
                   [os.path.join(DATA, "corpus-cpu"), os.path.join(DATA, "corpus-cpu-heldout")],
                   __doc__)

if __name__ == "__main__":
    rh.main(MODERN)
