#!/usr/bin/env python3
"""Record Strata's third variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on tests/data/corpus-cpu-variants and corpus-cpu-variants2; this
script records tests/data/corpus-cpu-variants3, recorded after the rules, to measure them once
on models they were not written on, then to be tuned on as the other variants are: a BERT
decoder with cross-attention as transformers writes it (each BertAttention a self- or
cross-attention with its SelfOutput), an XLM-style post-norm encoder (a query scaled before
the scores, a TransformerFFN module), a PVT v2-style hierarchical transformer (overlapping
patch embeddings, spatial-reduction attention, a depthwise conv in the MLP, each stage's
tokens laid back out as a map), MAE with timm-style blocks in its encoder and decoder, SASRec
as RecBole writes it (a causal mask, attention and feed-forward modules that add and norm
inside), a Wide ResNet with dropout between its pre-activation convs, a bidirectional GRU
tagger and DeiT's distilled ViT (a class and a distillation token, two heads averaged).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants3.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants3.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants3.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ViTBlock, ce, ce_tokens, randint, randn  # noqa: E402
from record_cpu_variants2 import (  # noqa: E402
    BertEmbeddings,
    BertIntermediate,
    BertOutput,
    BertSelfOutput,
)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# a BERT encoder-decoder as transformers writes BertGeneration / EncoderDecoderModel's BERT
# decoder: BertLayer = attention (BertAttention: BertSelfAttention + BertSelfOutput), then
# crossattention (a BertAttention whose keys and values are the encoder's), intermediate and
# output.


class BertQKVAttention(nn.Module):
    """BertSelfAttention, keys and values from `memory` when it is given (cross-attention)."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.size = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(0.1)

    def split(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.size)).permute(0, 2, 1, 3)

    def forward(self, hidden, mask, memory=None):
        src = hidden if memory is None else memory
        q = self.split(self.query(hidden))
        k = self.split(self.key(src))
        v = self.split(self.value(src))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.size)
        if mask is not None:
            scores = scores + mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size()[:-2] + (self.heads * self.size,))


class BertGenAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.self = BertQKVAttention(hidden, heads)
        self.output = BertSelfOutput(hidden)

    def forward(self, hidden, mask, memory=None):
        return self.output(self.self(hidden, mask, memory), hidden)


class BertGenLayer(nn.Module):
    def __init__(self, hidden, heads, inter, cross):
        super().__init__()
        self.attention = BertGenAttention(hidden, heads)
        self.crossattention = BertGenAttention(hidden, heads) if cross else None
        self.intermediate = BertIntermediate(hidden, inter)
        self.output = BertOutput(hidden, inter)

    def forward(self, hidden, mask, memory=None):
        x = self.attention(hidden, mask)
        if self.crossattention is not None:
            x = self.crossattention(x, None, memory)
        return self.output(self.intermediate(x), x)


class BertEncoderDecoder(nn.Module):
    def __init__(self, vocab=500, hidden=64, heads=4, inter=128, layers=2):
        super().__init__()
        self.enc_embeddings = BertEmbeddings(vocab, hidden)
        self.encoder = nn.ModuleList([BertGenLayer(hidden, heads, inter, False) for _ in range(layers)])
        self.dec_embeddings = BertEmbeddings(vocab, hidden)
        self.decoder = nn.ModuleList([BertGenLayer(hidden, heads, inter, True) for _ in range(layers)])
        self.lm_head = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        memory = self.enc_embeddings(src)
        for layer in self.encoder:
            memory = layer(memory, None)
        n = tgt.shape[1]
        causal = torch.full((n, n), torch.finfo(torch.float32).min).triu(1)[None, None]
        x = self.dec_embeddings(tgt)
        for layer in self.decoder:
            x = layer(x, causal, memory)
        return self.lm_head(x)


def b_bert_encdec():
    src = randint(499, 4, 20) + 1
    tgt = randint(499, 4, 16, seed=4) + 1
    return dict(model=BertEncoderDecoder(), inputs=(src, tgt), target=randint(500, 4, 16, seed=3), loss=ce_tokens)


# ---------------------------------------------------------------------------------------
# XLM (transformers' XLMModel): post-norm layers of a MultiHeadAttention (q_lin, k_lin, v_lin,
# out_lin; the query scaled by 1/sqrt(d) before the scores, functional dropout), then a
# TransformerFFN (lin1, gelu, lin2, dropout); each half adds and norms in the layer.


class XLMMultiHeadAttention(nn.Module):
    def __init__(self, heads, dim, dropout=0.1):
        super().__init__()
        self.heads, self.dim, self.dropout = heads, dim, dropout
        self.q_lin = nn.Linear(dim, dim)
        self.k_lin = nn.Linear(dim, dim)
        self.v_lin = nn.Linear(dim, dim)
        self.out_lin = nn.Linear(dim, dim)

    def forward(self, x, mask):
        bs, qlen, dim = x.size()
        dh = dim // self.heads

        def shape(t):
            return t.view(bs, -1, self.heads, dh).transpose(1, 2)

        q = shape(self.q_lin(x)) / math.sqrt(dh)
        k = shape(self.k_lin(x))
        v = shape(self.v_lin(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        scores = scores.masked_fill((mask == 0).view(bs, 1, 1, qlen).expand_as(scores), torch.finfo(scores.dtype).min)
        weights = F.dropout(F.softmax(scores.float(), dim=-1).type_as(scores), p=self.dropout, training=self.training)
        ctx = torch.matmul(weights, v).transpose(1, 2).contiguous().view(bs, -1, self.heads * dh)
        return self.out_lin(ctx)


class TransformerFFN(nn.Module):
    def __init__(self, dim, hidden, dropout=0.1):
        super().__init__()
        self.lin1 = nn.Linear(dim, hidden)
        self.lin2 = nn.Linear(hidden, dim)
        self.dropout = dropout

    def forward(self, x):
        x = self.lin2(F.gelu(self.lin1(x)))
        return F.dropout(x, p=self.dropout, training=self.training)


class XLMEncoder(nn.Module):
    def __init__(self, vocab=500, dim=64, heads=4, layers=3, classes=3, max_pos=64):
        super().__init__()
        self.position_embeddings = nn.Embedding(max_pos, dim)
        self.embeddings = nn.Embedding(vocab, dim, padding_idx=0)
        self.layer_norm_emb = nn.LayerNorm(dim, eps=1e-12)
        self.attentions = nn.ModuleList([XLMMultiHeadAttention(heads, dim) for _ in range(layers)])
        self.layer_norm1 = nn.ModuleList([nn.LayerNorm(dim, eps=1e-12) for _ in range(layers)])
        self.ffns = nn.ModuleList([TransformerFFN(dim, 4 * dim) for _ in range(layers)])
        self.layer_norm2 = nn.ModuleList([nn.LayerNorm(dim, eps=1e-12) for _ in range(layers)])
        self.proj = nn.Linear(dim, classes)

    def forward(self, ids, mask):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.embeddings(ids) + self.position_embeddings(positions).expand_as(self.embeddings(ids))
        x = F.dropout(self.layer_norm_emb(x), p=0.1, training=self.training)
        x = x * mask.unsqueeze(-1).to(x.dtype)
        for i in range(len(self.attentions)):
            a = F.dropout(self.attentions[i](x, mask), p=0.1, training=self.training)
            x = self.layer_norm1[i](x + a)
            x = self.layer_norm2[i](x + self.ffns[i](x))
            x = x * mask.unsqueeze(-1).to(x.dtype)
        return self.proj(x[:, 0])


def b_xlm():
    ids = randint(499, 8, 20) + 1
    mask = torch.ones(8, 20, dtype=torch.long)
    mask[::2, 15:] = 0
    return dict(model=XLMEncoder(), inputs=(ids, mask), target=randint(3, 8, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# PVT v2 (its reference code): OverlapPatchEmbed (a strided conv, flatten, transpose, norm),
# blocks of spatial-reduction attention (q; a strided conv over the map, a norm, then kv) and
# an Mlp with a depthwise conv between its linears (DWConv: tokens to a map and back), each
# stage's norm and its tokens reshaped, permuted and laid out as a map for the next stage.


class OverlapPatchEmbed(nn.Module):
    def __init__(self, cin, dim, patch, stride):
        super().__init__()
        self.proj = nn.Conv2d(cin, dim, patch, stride, patch // 2)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = self.proj(x)
        _, _, h, w = x.shape
        return self.norm(x.flatten(2).transpose(1, 2)), h, w


class SRAttention(nn.Module):
    """PVT v2's Attention: record_cpu_families_vision.py's SRAttention (PVT v1's, shrunk) with
    the reference's attn_drop and proj_drop modules, whose dropout ops the traces show."""

    def __init__(self, dim, heads, sr):
        super().__init__()
        self.heads, self.scale, self.sr_ratio = heads, (dim // heads) ** -0.5, sr
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)
        if sr > 1:
            self.sr = nn.Conv2d(dim, dim, sr, sr)
            self.norm = nn.LayerNorm(dim)

    def forward(self, x, h, w):
        b, n, c = x.shape
        q = self.q(x).reshape(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3)
        if self.sr_ratio > 1:
            x_ = x.permute(0, 2, 1).reshape(b, c, h, w)
            x_ = self.norm(self.sr(x_).reshape(b, c, -1).permute(0, 2, 1))
        else:
            x_ = x
        kv = self.kv(x_).reshape(b, -1, 2, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        attn = self.attn_drop(((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1))
        x = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj_drop(self.proj(x))


class DWConv(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)

    def forward(self, x, h, w):
        b, n, c = x.shape
        x = x.transpose(1, 2).view(b, c, h, w)
        return self.dwconv(x).flatten(2).transpose(1, 2)


class PVTMlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.dwconv = DWConv(hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(0.0)

    def forward(self, x, h, w):
        x = self.drop(self.act(self.dwconv(self.fc1(x), h, w)))
        return self.drop(self.fc2(x))


class PVTBlock(nn.Module):
    def __init__(self, dim, heads, sr):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SRAttention(dim, heads, sr)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = PVTMlp(dim, 4 * dim)

    def forward(self, x, h, w):
        x = x + self.attn(self.norm1(x), h, w)
        return x + self.mlp(self.norm2(x), h, w)


class PVTv2(nn.Module):
    def __init__(self, dims=(16, 32, 64), heads=(1, 2, 4), srs=(4, 2, 1), depth=2, classes=10):
        super().__init__()
        self.embeds, self.stages, self.norms = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        cin = 3
        for i, (d, hd, sr) in enumerate(zip(dims, heads, srs)):
            self.embeds.append(OverlapPatchEmbed(cin, d, 7 if i == 0 else 3, 4 if i == 0 else 2))
            self.stages.append(nn.ModuleList([PVTBlock(d, hd, sr) for _ in range(depth)]))
            self.norms.append(nn.LayerNorm(d))
            cin = d
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        b = x.shape[0]
        for i, (embed, blocks, norm) in enumerate(zip(self.embeds, self.stages, self.norms)):
            x, h, w = embed(x)
            for blk in blocks:
                x = blk(x, h, w)
            x = norm(x)
            if i + 1 < len(self.stages):
                x = x.reshape(b, h, w, -1).permute(0, 3, 1, 2).contiguous()
        return self.head(x.mean(dim=1))


# ---------------------------------------------------------------------------------------
# MAE (its reference models_mae.py, shrunk): a patch embedding, random masking by argsort and
# gather, a class token, timm-style blocks, a norm; the decoder's embedding, mask tokens put
# back in order, its blocks, norm and pixel prediction. The loss normalises each target patch.


class TinyMAEBlocks(nn.Module):
    def __init__(self, img=32, patch=4, dim=48, depth=2, dec_dim=32, dec_depth=1, heads=4, mask_ratio=0.75):
        super().__init__()
        self.patch, self.mask_ratio = patch, mask_ratio
        n = (img // patch) ** 2
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, n + 1, dim))
        self.blocks = nn.ModuleList([ViTBlock(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.decoder_embed = nn.Linear(dim, dec_dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dec_dim))
        self.decoder_pos_embed = nn.Parameter(0.02 * torch.randn(1, n + 1, dec_dim))
        self.decoder_blocks = nn.ModuleList([ViTBlock(dec_dim, heads) for _ in range(dec_depth)])
        self.decoder_norm = nn.LayerNorm(dec_dim)
        self.decoder_pred = nn.Linear(dec_dim, patch * patch * 3)

    def forward(self, imgs):
        x = self.patch_embed(imgs).flatten(2).transpose(1, 2) + self.pos_embed[:, 1:, :]
        b, n, d = x.shape
        keep = int(n * (1 - self.mask_ratio))
        noise = torch.rand(b, n, generator=torch.Generator().manual_seed(7))
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        x = torch.gather(x, 1, ids_shuffle[:, :keep].unsqueeze(-1).repeat(1, 1, d))
        cls = (self.cls_token + self.pos_embed[:, :1, :]).expand(b, -1, -1)
        x = torch.cat((cls, x), dim=1)
        for blk in self.blocks:
            x = blk(x)
        x = self.decoder_embed(self.norm(x))
        mask_tokens = self.mask_token.repeat(b, n + 1 - x.shape[1], 1)
        x_ = torch.cat([x[:, 1:, :], mask_tokens], dim=1)
        x_ = torch.gather(x_, 1, ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))
        x = torch.cat([x[:, :1, :], x_], dim=1) + self.decoder_pos_embed
        for blk in self.decoder_blocks:
            x = blk(x)
        return self.decoder_pred(self.decoder_norm(x))[:, 1:, :]


def mae_pixel_loss(pred, imgs, p=4):
    b, c, hh, ww = imgs.shape
    target = imgs.reshape(b, c, hh // p, p, ww // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, -1, p * p * c)
    mean = target.mean(dim=-1, keepdim=True)
    var = target.var(dim=-1, keepdim=True)
    target = (target - mean) / (var + 1.0e-6) ** 0.5
    return ((pred - target) ** 2).mean()


def b_mae_blocks():
    x = randn(4, 3, 32, 32)
    return dict(model=TinyMAEBlocks(), inputs=(x,), target=x, loss=mae_pixel_loss)


# ---------------------------------------------------------------------------------------
# SASRec as RecBole writes it: item and position embeddings, LayerNorm, dropout; each
# TransformerLayer a MultiHeadAttention (query, key, value, dense, dropout and the LayerNorm
# of the sum inside) and a FeedForward (dense_1, relu, dense_2, dropout, LayerNorm of the sum);
# a causal mask; the last position's output scored against every item's embedding.


class RecBoleMHA(nn.Module):
    def __init__(self, heads, hidden):
        super().__init__()
        self.heads, self.size = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.softmax = nn.Softmax(dim=-1)
        self.attn_dropout = nn.Dropout(0.2)
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.out_dropout = nn.Dropout(0.2)

    def split(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.size)).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.size) + mask
        probs = self.attn_dropout(self.softmax(scores))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.heads * self.size,))
        return self.LayerNorm(self.out_dropout(self.dense(ctx)) + x)


class RecBoleFFN(nn.Module):
    def __init__(self, hidden, inner):
        super().__init__()
        self.dense_1 = nn.Linear(hidden, inner)
        self.dense_2 = nn.Linear(inner, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        h = self.dropout(self.dense_2(F.relu(self.dense_1(x))))
        return self.LayerNorm(h + x)


class RecBoleLayer(nn.Module):
    def __init__(self, heads, hidden, inner):
        super().__init__()
        self.multi_head_attention = RecBoleMHA(heads, hidden)
        self.feed_forward = RecBoleFFN(hidden, inner)

    def forward(self, x, mask):
        return self.feed_forward(self.multi_head_attention(x, mask))


class SASRecRecBole(nn.Module):
    def __init__(self, items=300, hidden=48, heads=2, inner=96, layers=2, max_len=20):
        super().__init__()
        self.item_embedding = nn.Embedding(items + 1, hidden, padding_idx=0)
        self.position_embedding = nn.Embedding(max_len, hidden)
        self.layers = nn.ModuleList([RecBoleLayer(heads, hidden, inner) for _ in range(layers)])
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.2)

    def forward(self, seq):
        n = seq.shape[1]
        pos = torch.arange(n, dtype=torch.long).unsqueeze(0).expand_as(seq)
        x = self.dropout(self.LayerNorm(self.item_embedding(seq) + self.position_embedding(pos)))
        pad = (seq > 0).long().unsqueeze(1).unsqueeze(2)
        causal = torch.tril(torch.ones((n, n))).unsqueeze(0).unsqueeze(1).long()
        mask = (1.0 - (pad * causal).float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return torch.matmul(x[:, -1, :], self.item_embedding.weight.transpose(0, 1))


def b_sasrec_recbole():
    seq = randint(300, 8, 20) + 1
    seq[::3, :5] = 0
    return dict(model=SASRecRecBole(), inputs=(seq,), target=randint(301, 8, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# Wide ResNet 16-2 (its reference code): pre-activation BasicBlocks, bn-relu-conv, dropout,
# bn-relu-conv, a 1x1 conv shortcut where the width or stride changes.


class WideBasic(nn.Module):
    def __init__(self, cin, cout, stride, drop=0.3):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.dropout = nn.Dropout(drop)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride, bias=False) if stride != 1 or cin != cout else None

    def forward(self, x):
        o = F.relu(self.bn1(x))
        y = self.conv1(o)
        y = self.conv2(F.relu(self.bn2(self.dropout(y))))
        return y + (x if self.shortcut is None else self.shortcut(o))


class WideResNet(nn.Module):
    def __init__(self, depth=16, k=2, classes=10):
        super().__init__()
        n = (depth - 4) // 6
        widths = [16, 16 * k, 32 * k, 64 * k]
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        layers, cin = [], widths[0]
        for i, w in enumerate(widths[1:]):
            for j in range(n):
                layers.append(WideBasic(cin, w, 1 if i == 0 or j > 0 else 2))
                cin = w
        self.blocks = nn.Sequential(*layers)
        self.bn = nn.BatchNorm2d(cin)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.relu(self.bn(self.blocks(self.conv1(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def b_wrn():
    return dict(model=WideResNet(), inputs=(randn(4, 3, 32, 32),), target=randint(10, 4, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# a sequence tagger: embeddings, dropout, a two-layer bidirectional GRU, dropout, a Linear
# per token (an NER tagger without its CRF).


class BiGRUTagger(nn.Module):
    def __init__(self, vocab=400, dim=32, hidden=48, tags=9):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.dropout = nn.Dropout(0.3)
        self.rnn = nn.GRU(dim, hidden, num_layers=2, batch_first=True, bidirectional=True, dropout=0.2)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, ids):
        h, _ = self.rnn(self.dropout(self.embedding(ids)))
        return self.out(self.dropout(h))


def b_gru_tagger():
    return dict(model=BiGRUTagger(), inputs=(randint(399, 8, 16) + 1,), target=randint(9, 8, 16, seed=3), loss=ce_tokens)


# ---------------------------------------------------------------------------------------
# DeiT's distilled ViT (timm's VisionTransformerDistilled): a class and a distillation token
# before the patches, timm-style blocks, a norm, a head on each token, the two averaged.


class DeiTDistilled(nn.Module):
    def __init__(self, img=32, patch=4, dim=48, depth=3, heads=4, classes=10):
        super().__init__()
        n = (img // patch) ** 2
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.dist_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, n + 2, dim))
        self.pos_drop = nn.Dropout(0.0)
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        self.head_dist = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        b = x.shape[0]
        x = torch.cat((self.cls_token.expand(b, -1, -1), self.dist_token.expand(b, -1, -1), x), dim=1)
        x = self.norm(self.blocks(self.pos_drop(x + self.pos_embed)))
        return (self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2


def b_deit_distilled():
    return dict(model=DeiTDistilled(), inputs=(randn(4, 3, 32, 32),), target=randint(10, 4, seed=3), loss=ce)


def b_pvt():
    return dict(model=PVTv2(), inputs=(randn(2, 3, 64, 64),), target=randint(10, 2, seed=3), loss=ce)


REGISTRY = [
    ("bert_encdec_hf", "bert", "adamw", b_bert_encdec),
    ("xlm_postnorm", "bert", "adamw", b_xlm),
    ("pvt_v2_lite", "vit", "adamw", b_pvt),
    ("mae_blocks", "vit", "adamw", b_mae_blocks),
    ("sasrec_recbole", "recsys", "adam", b_sasrec_recbole),
    ("wide_resnet_16_2", "residual", "sgd", b_wrn),
    ("gru_ner_tagger", "rnn", "adam", b_gru_tagger),
    ("deit_distilled", "vit", "adamw", b_deit_distilled),
]

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS3 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants3.py",
    os.path.join(DATA, "corpus-cpu-variants3"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-modern", "corpus-cpu-families", "corpus-cpu-heldout",
                                      "corpus-cpu-variants", "corpus-cpu-variants2", "corpus-cpu-objectives",
                                      "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS3)
