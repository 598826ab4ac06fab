#!/usr/bin/env python3
"""Record Strata's CPU training-trace corpus: real PyTorch traces with module ground truth,
for scoring the automatic layer inference.

Needs only a CPU and PyTorch with torchvision (written against Debian's python3-torch 1.13
and python3-torchvision 0.14, which have no Kineto). No network: every model is randomly
initialised, every input is synthetic. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_corpus.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_corpus.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu. --only re-records some models and keeps the other
manifest entries; --verify checks recorded traces (see verify()) and records nothing.

Layout of OUT_DIR
=================

  NAME.json.gz    one training trace per model, from export_chrome_trace(), gzipped
                  reproducibly (GzipFile(filename='', mtime=0), level 9)
  manifest.json   environment (torch/torchvision versions, profiler kind) and per model:
                  file, bytes, sha256, family, split, optimizer, input/target shapes and
                  dtypes, parameter count, ProfilerStep names, event count, and the module
                  tree [{hid, path, class, parent, leaf, children, calls_per_step}]
  README.md       how the corpus was made (written by hand; keep it in step with this file)

Recording
=========

  * torch.set_num_threads(1); torch.manual_seed(0) before each model is built.
  * profile(activities=[ProfilerActivity.CPU], record_shapes=True,
            schedule=schedule(wait=1, warmup=1, active=2)) with prof.step() after each of
    4 training steps. On this build torch.autograd.kineto_available() is False, yet
    torch.profiler.profile still works: it records through the profiler's own (non-Kineto)
    event collection and export_chrome_trace() falls back to EventList.export_chrome_trace,
    a bare JSON *list* of {"name","ph":"X","ts","dur","tid","pid":"CPU functions","args":{}}
    events (integer microseconds, relative to the profiler start; no "cat", no shapes, no
    sequence numbers, no flows). The two active steps appear as "ProfilerStep#1" and
    "ProfilerStep#2" ranges (this build numbers them one lower than the iteration index).
    If torch.profiler.profile were unusable, the script falls back to the legacy
    torch.autograd.profiler.profile(use_kineto=False) with each active step wrapped in
    record_function(f"ProfilerStep#{i}"); the manifest's "profiler" says which ran.
  * One training step (inputs are made once, before profiling):
        record_function("zero_grad"):  optimizer.zero_grad()      (torch 1.13 default:
                                                                    grads zeroed, not None)
        record_function("forward"):    out = model(*inputs)
        record_function("loss"):       loss = loss_fn(out, target)
        record_function("backward"):   loss.backward()
        record_function("optimizer"):  optimizer.step()
    Optimizers: SGD(momentum 0.9), Adam or AdamW (CPU default, single-tensor updates), given
    per model in the manifest.

Ground truth
============

Every module of model.named_modules() (root and containers included) gets a forward
pre-hook that opens

    torch.autograd.profiler.record_function(f"hid={N} {path} ({ClassName})")

and a forward hook that closes it. N is the module's index in named_modules() order (root =
0), path its attribute path ("layer4.1.conv2"; the root's is "(root)"), ClassName
type(module).__name__. The ranges (and the phase ranges above) are opened with Range, a
subclass of record_function that uses torch.ops.profiler._record_function_enter_new as
record_function itself does from torch 1.14 on: 1.13's record_function adds aten::zeros,
aten::empty and aten::zero_ before each range and an aten::empty inside it, which would
mark every module boundary in the trace; Range adds no aten events. (The ProfilerStep#N
ranges are opened by the profiler itself and keep those artifacts.) The hooks keep a stack: a forward hook closes every range opened
above its own module's range first (a range whose closing hook was skipped), and ranges
still open when the forward phase ends are closed there, so ranges always nest as calls do.
A module never called through __call__ (e.g. nn.MultiheadAttention.out_proj, used
functionally; a ModuleList) has no range; a module called k times per step has k ranges
(calls_per_step in the manifest). Backward has no per-module ranges (only the "backward"
phase). named_modules() de-duplicates shared modules, so a module reachable by two paths
has one hid under its first path.

Split
=====

Exactly round(n/3) models are "heldout", the rest "tune". Rule: walk the models in registry
order, counting per family; the 2nd, 5th, 8th... model of a family is held out. If that
gives fewer than round(n/3), the models of single-model families are added, in registry
order, taking every other one (1st, 3rd, ...) and then the rest, until the count is
reached; if it gives more, the last-chosen are dropped. The manifest states the rule.
"""

import argparse
import gzip
import hashlib
import json
import math
import os
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:
    pass

import torchvision  # noqa: E402
from torchvision import models as tvm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "tests", "data", "corpus-cpu")
STEPS = 4
PHASES = ("zero_grad", "forward", "loss", "backward", "optimizer")


# ---------------------------------------------------------------------------------------
# helpers for synthetic data


def gen(seed=1):
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def randn(*shape, seed=1):
    return torch.randn(*shape, generator=gen(seed))


def randint(high, *shape, seed=2):
    return torch.randint(0, high, shape, generator=gen(seed))


def ce(out, target):
    return F.cross_entropy(out, target)


def ce_tokens(out, target):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))


def ce_seg(out, target):
    if isinstance(out, dict):
        out = out["out"]
    return F.cross_entropy(out, target)


def mse(out, target):
    return F.mse_loss(out, target)


def bce(out, target):
    return F.binary_cross_entropy_with_logits(out, target)


def image_cls(model, batch, hw, classes=10, chans=3):
    x = randn(batch, chans, hw, hw)
    return dict(model=model, inputs=(x,), target=randint(classes, batch), loss=ce)


# ---------------------------------------------------------------------------------------
# hand-written models


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 512)
        self.act1 = nn.ReLU()
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(512, 256)
        self.act2 = nn.ReLU()
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.act2(self.fc2(self.drop(self.act1(self.fc1(x))))))


def conv_bn_relu(cin, cout, k=3, s=1, p=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
    )


class YoloConv(nn.Module):
    """YOLO's Conv: a conv, BatchNorm and SiLU (the families corpus's YOLOv5- and YOLOv8-like models)."""

    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SPPF(nn.Module):
    """YOLO's spatial pyramid pooling, fast: three max-poolings of one map, concatenated."""

    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = YoloConv(c1, c_)
        self.cv2 = YoloConv(c_ * 4, c2)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = conv_bn_relu(3, 16)
        self.pool1 = nn.MaxPool2d(2)
        self.block2 = conv_bn_relu(16, 32)
        self.pool2 = nn.MaxPool2d(2)
        self.block3 = conv_bn_relu(32, 64)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool1(self.block1(x))
        x = self.pool2(self.block2(x))
        x = self.gap(self.block3(x))
        return self.fc(torch.flatten(x, 1))


class VGGSmall(nn.Module):
    def __init__(self, cfg=(32, 32, "M", 64, 64, "M", 128, 128, "M")):
        super().__init__()
        layers, c = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU(inplace=True)]
                c = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(128 * 4 * 4, 256),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(256, 256),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(256, 10),
        )

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class AlexNetSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 5, stride=2, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2),
            nn.Conv2d(32, 64, 5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 96, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(96, 96, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(96, 64, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
        self.classifier = nn.Sequential(
            nn.Dropout(0.5),
            nn.Linear(64 * 4, 256),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(256, 256),
            nn.ReLU(inplace=True),
            nn.Linear(256, 10),
        )

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class Bottleneck(nn.Module):
    def __init__(self, cin, mid, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.shortcut is None else self.shortcut(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + idt)


class BottleneckNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn_relu(3, 32)
        self.stage1 = nn.Sequential(Bottleneck(32, 16, 64, 1), Bottleneck(64, 16, 64, 1))
        self.stage2 = nn.Sequential(Bottleneck(64, 32, 128, 2), Bottleneck(128, 32, 128, 1))
        self.stage3 = nn.Sequential(Bottleneck(128, 64, 256, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(256, 10)

    def forward(self, x):
        x = self.stage3(self.stage2(self.stage1(self.stem(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


class LayerNorm2d(nn.Module):
    """LayerNorm over channels of an NCHW tensor (permute, F.layer_norm, permute)."""

    def __init__(self, c):
        super().__init__()
        self.norm = nn.LayerNorm(c, eps=1e-6)

    def forward(self, x):
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class ConvNeXtSmall(nn.Module):
    def __init__(self, dims=(32, 64, 128), depths=(2, 2, 2)):
        super().__init__()
        self.downsample = nn.ModuleList()
        self.downsample.append(nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0])))
        for i in range(1, len(dims)):
            self.downsample.append(
                nn.Sequential(LayerNorm2d(dims[i - 1]), nn.Conv2d(dims[i - 1], dims[i], 2, 2))
            )
        self.stages = nn.ModuleList(
            nn.Sequential(*[ConvNeXtBlock(d) for _ in range(n)]) for d, n in zip(dims, depths)
        )
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], 10)

    def forward(self, x):
        for down, stage in zip(self.downsample, self.stages):
            x = stage(down(x))
        return self.head(self.norm(x.mean((-2, -1))))


class PatchEmbed(nn.Module):
    def __init__(self, patch, dim, chans=3):
        super().__init__()
        self.proj = nn.Conv2d(chans, dim, patch, patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class ViTEncoderLayer(nn.Module):
    """Tiny ViT built on nn.TransformerEncoderLayer (pre-norm, GELU, batch_first)."""

    def __init__(self, img=32, patch=8, dim=64, depth=3, heads=4):
        super().__init__()
        n = (img // patch) ** 2
        self.patch_embed = PatchEmbed(patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, n + 1, dim))
        layer = nn.TransformerEncoderLayer(
            dim, heads, 2 * dim, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        return self.head(self.norm(self.encoder(x))[:, 0])


class Attention(nn.Module):
    """Hand-written multi-head self-attention with a fused qkv Linear."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = (q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5
        a = self.attn_drop(a.softmax(-1))
        return self.proj((a @ v).transpose(1, 2).reshape(b, n, c))


class Mlp(nn.Module):
    def __init__(self, dim, hidden, act=nn.GELU):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = act()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


# timm's Mlp, dropouts and all (the families corpus's timm-style ViT and Swin).
class TMlp(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.drop1 = nn.Dropout(0.0)
        self.fc2 = nn.Linear(4 * d, d)
        self.drop2 = nn.Dropout(0.0)

    def forward(self, x):
        return self.drop2(self.fc2(self.drop1(self.act(self.fc1(x)))))


class ViTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, 2 * dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViTHandwritten(nn.Module):
    def __init__(self, img=32, patch=4, dim=64, depth=3, heads=4):
        super().__init__()
        n = (img // patch) ** 2
        self.patch_embed = PatchEmbed(patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, n + 1, dim))
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])


class TextEncoder(nn.Module):
    """Embedding + learned positions + nn.TransformerEncoder + mean-pool classifier."""

    def __init__(self, norm_first, vocab=1000, dim=64, depth=2, heads=4, seq=32, act="relu"):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        layer = nn.TransformerEncoderLayer(
            dim, heads, 4 * dim, dropout=0.1, activation=act, batch_first=True, norm_first=norm_first
        )
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.classifier = nn.Linear(dim, 5)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.classifier(self.encoder(self.tok(ids) + self.pos(pos)).mean(1))


class BertSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(0.1)

    def split(self, x):
        b, n, c = x.shape
        return x.view(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(x.shape)


class BertSelfOutput(nn.Module):
    def __init__(self, dim, hidden_in):
        super().__init__()
        self.dense = nn.Linear(hidden_in, dim)
        self.dropout = nn.Dropout(0.1)
        self.LayerNorm = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, h, resid):
        return self.LayerNorm(self.dropout(self.dense(h)) + resid)


class BertLayer(nn.Module):
    def __init__(self, dim, heads, ff):
        super().__init__()
        self.attention = BertSelfAttention(dim, heads)
        self.attention_output = BertSelfOutput(dim, dim)
        self.intermediate = nn.Linear(dim, ff)
        self.intermediate_act = nn.GELU()
        self.output = BertSelfOutput(dim, ff)

    def forward(self, x, mask):
        a = self.attention_output(self.attention(x, mask), x)
        return self.output(self.intermediate_act(self.intermediate(a)), a)


class BertTiny(nn.Module):
    def __init__(self, vocab=1000, dim=64, depth=2, heads=4, seq=32):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, dim)
        self.position_embeddings = nn.Embedding(seq, dim)
        self.token_type_embeddings = nn.Embedding(2, dim)
        self.emb_norm = nn.LayerNorm(dim, eps=1e-12)
        self.emb_dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList(BertLayer(dim, heads, 4 * dim) for _ in range(depth))
        self.mlm_dense = nn.Linear(dim, dim)
        self.mlm_act = nn.GELU()
        self.mlm_norm = nn.LayerNorm(dim, eps=1e-12)
        self.decoder = nn.Linear(dim, vocab)

    def forward(self, ids, attn_mask):
        b, n = ids.shape
        pos = torch.arange(n).unsqueeze(0)
        x = (
            self.word_embeddings(ids)
            + self.position_embeddings(pos)
            + self.token_type_embeddings(torch.zeros_like(ids))
        )
        x = self.emb_dropout(self.emb_norm(x))
        mask = (1.0 - attn_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return self.decoder(self.mlm_norm(self.mlm_act(self.mlm_dense(x))))


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, seq):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, n, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, n, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, n, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        att = att.masked_fill(self.bias[:, :, :n, :n] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, n, c)
        return self.resid_dropout(self.c_proj(y))


class GPTBlock(nn.Module):
    def __init__(self, dim, heads, seq):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, seq)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim), nn.Dropout(0.1))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPTTiny(nn.Module):
    def __init__(self, vocab=1000, dim=64, depth=3, heads=4, seq=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList(GPTBlock(dim, heads, seq) for _ in range(depth))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class Seq2SeqTransformer(nn.Module):
    def __init__(self, vocab=500, dim=64, heads=4):
        super().__init__()
        self.src_tok = nn.Embedding(vocab, dim)
        self.tgt_tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(64, dim)
        self.transformer = nn.Transformer(dim, heads, 2, 2, 128, dropout=0.1, batch_first=True)
        self.generator = nn.Linear(dim, vocab)

    def forward(self, src, tgt):
        ps = torch.arange(src.shape[1]).unsqueeze(0)
        pt = torch.arange(tgt.shape[1]).unsqueeze(0)
        mask = self.transformer.generate_square_subsequent_mask(tgt.shape[1])
        h = self.transformer(
            self.src_tok(src) + self.pos(ps), self.tgt_tok(tgt) + self.pos(pt), tgt_mask=mask
        )
        return self.generator(h)


class RNNLM(nn.Module):
    def __init__(self, cell, vocab=500, dim=64, hidden=96, layers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.rnn = cell(dim, hidden, num_layers=layers, batch_first=True, dropout=0.1)
        self.dropout = nn.Dropout(0.1)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, ids):
        out, _ = self.rnn(self.embedding(ids))
        return self.decoder(self.dropout(out))


class BiTagger(nn.Module):
    def __init__(self, cell, vocab=500, dim=48, hidden=64, tags=9):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.rnn = cell(dim, hidden, num_layers=1, batch_first=True, bidirectional=True)
        self.tagger = nn.Linear(2 * hidden, tags)

    def forward(self, ids):
        out, _ = self.rnn(self.embedding(ids))
        return self.tagger(out)


class LSTMCellLM(nn.Module):
    """An nn.LSTMCell unrolled in Python: the cell module is called once per time step."""

    def __init__(self, vocab=300, dim=32, hidden=64):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.cell = nn.LSTMCell(dim, hidden)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, ids):
        x = self.embedding(ids)
        h = x.new_zeros(ids.shape[0], self.cell.hidden_size)
        c = h
        outs = []
        for t in range(ids.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
            outs.append(h)
        return self.decoder(torch.stack(outs, 1))


class DLRM(nn.Module):
    def __init__(self, dense=13, tables=(1000, 500, 800, 300, 1200, 200), dim=16):
        super().__init__()
        self.bot_mlp = nn.Sequential(nn.Linear(dense, 64), nn.ReLU(), nn.Linear(64, dim), nn.ReLU())
        self.emb_l = nn.ModuleList(nn.EmbeddingBag(n, dim, mode="sum") for n in tables)
        f = len(tables) + 1
        self.register_buffer("tri", torch.tril_indices(f, f, -1))
        self.top_mlp = nn.Sequential(nn.Linear(dim + f * (f - 1) // 2, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, dense, ids, offsets):
        x = self.bot_mlp(dense)
        ly = [emb(ids[i], offsets[i]) for i, emb in enumerate(self.emb_l)]
        t = torch.cat([x] + ly, 1).view(x.shape[0], -1, x.shape[1])
        z = torch.bmm(t, t.transpose(1, 2))
        zflat = z[:, self.tri[0], self.tri[1]]
        return self.top_mlp(torch.cat([x, zflat], 1)).squeeze(1)


class NCF(nn.Module):
    """Neural collaborative filtering: GMF + MLP towers over nn.Embedding lookups."""

    def __init__(self, users=2000, items=3000, dim=16):
        super().__init__()
        self.user_gmf = nn.Embedding(users, dim)
        self.item_gmf = nn.Embedding(items, dim)
        self.user_mlp = nn.Embedding(users, dim)
        self.item_mlp = nn.Embedding(items, dim)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.predict = nn.Linear(dim + 32, 1)

    def forward(self, u, i):
        g = self.user_gmf(u) * self.item_gmf(i)
        m = self.mlp(torch.cat([self.user_mlp(u), self.item_mlp(i)], 1))
        return self.predict(torch.cat([g, m], 1)).squeeze(1)


class GCNLayer(nn.Module):
    """Message passing: gather source features (index_select), sum into targets (index_add_)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.lin = nn.Linear(cin, cout)
        self.act = nn.ReLU()

    def forward(self, x, src, dst, deg_inv):
        h = self.lin(x)
        msg = h.index_select(0, src)
        agg = torch.zeros_like(h).index_add_(0, dst, msg)
        return self.act(agg * deg_inv.unsqueeze(1) + h)


class GCN(nn.Module):
    def __init__(self, cin=32, hidden=64, classes=7):
        super().__init__()
        self.layers = nn.ModuleList([GCNLayer(cin, hidden), GCNLayer(hidden, hidden)])
        self.dropout = nn.Dropout(0.2)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, x, src, dst, deg_inv):
        for layer in self.layers:
            x = self.dropout(layer(x, src, dst, deg_inv))
        return self.classifier(x)


class SAGELayer(nn.Module):
    """GraphSAGE-mean: scatter_add_ of neighbour features, divide by degree, two Linears."""

    def __init__(self, cin, cout):
        super().__init__()
        self.lin_self = nn.Linear(cin, cout)
        self.lin_neigh = nn.Linear(cin, cout, bias=False)
        self.norm = nn.LayerNorm(cout)

    def forward(self, x, src, dst, deg_inv):
        msg = x[src]
        agg = torch.zeros_like(x).scatter_add_(0, dst.unsqueeze(1).expand_as(msg), msg)
        return F.relu(self.norm(self.lin_self(x) + self.lin_neigh(agg * deg_inv.unsqueeze(1))))


class GraphSAGE(nn.Module):
    def __init__(self, cin=32, hidden=64, classes=7):
        super().__init__()
        self.conv1 = SAGELayer(cin, hidden)
        self.conv2 = SAGELayer(hidden, hidden)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, x, src, dst, deg_inv):
        return self.classifier(self.conv2(self.conv1(x, src, dst, deg_inv), src, dst, deg_inv))


def random_graph(nodes=1024, edges=8192, feats=32, classes=7):
    src, dst = randint(nodes, edges, seed=3), randint(nodes, edges, seed=4)
    deg = torch.zeros(nodes).index_add_(0, dst, torch.ones(edges)).clamp(min=1)
    return (randn(nodes, feats), src, dst, 1.0 / deg), randint(classes, nodes, seed=5)


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )


class UNetSmall(nn.Module):
    def __init__(self, classes=3, c=16):
        super().__init__()
        self.inc = DoubleConv(3, c)
        self.down1 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(c, 2 * c))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(2 * c, 4 * c))
        self.up1 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.conv1 = DoubleConv(4 * c, 2 * c)
        self.up2 = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.conv2 = DoubleConv(2 * c, c)
        self.outc = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        y = self.conv1(torch.cat([x2, self.up1(x3)], 1))
        y = self.conv2(torch.cat([x1, self.up2(y)], 1))
        return self.outc(y)


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.w2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.w2(self.act(self.w1(x)))


class MoELayer(nn.Module):
    """Top-k gating over a few expert MLPs: router Linear, softmax, topk, per-expert
    selection (nonzero / index_select), expert MLP, weighted combine with index_add_."""

    def __init__(self, dim, hidden, experts, k):
        super().__init__()
        self.k = k
        self.router = nn.Linear(dim, experts, bias=False)
        self.experts = nn.ModuleList(Expert(dim, hidden) for _ in range(experts))

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        probs = F.softmax(self.router(x), dim=-1)
        w, idx = probs.topk(self.k, dim=-1)
        if self.k > 1:
            w = w / w.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            tok, slot = (idx == e).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            y = expert(x.index_select(0, tok)) * w[tok, slot].unsqueeze(1)
            out = out.index_add(0, tok, y)
        return out.reshape(shape)


class MoEBlock(nn.Module):
    def __init__(self, dim, experts, k):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, 4)
        self.norm2 = nn.LayerNorm(dim)
        self.moe = MoELayer(dim, 2 * dim, experts, k)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.moe(self.norm2(x))


class MoETransformer(nn.Module):
    def __init__(self, k, vocab=500, dim=64, depth=2, experts=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.Sequential(*[MoEBlock(dim, experts, k) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        return self.head(self.norm(self.blocks(self.embed(ids))))


class Conv2dSubsampling(nn.Module):
    def __init__(self, feats, dim):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, dim, 3, 2), nn.ReLU(), nn.Conv2d(dim, dim, 3, 2), nn.ReLU())
        self.out = nn.Linear(dim * (((feats - 1) // 2 - 1) // 2), dim)

    def forward(self, x):
        x = self.conv(x.unsqueeze(1))
        b, c, t, f = x.shape
        return self.out(x.transpose(1, 2).reshape(b, t, c * f))


class SpeechTransformerCTC(nn.Module):
    """Conv2d subsampling front end + post-norm encoder layers + CTC head."""

    def __init__(self, feats=40, dim=64, depth=2, vocab=30):
        super().__init__()
        self.subsample = Conv2dSubsampling(feats, dim)
        self.pos = nn.Parameter(0.02 * torch.randn(1, 64, dim))
        layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, 0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.ctc_head = nn.Linear(dim, vocab)

    def forward(self, x):
        h = self.subsample(x)
        h = self.encoder(h + self.pos[:, : h.shape[1]])
        return self.ctc_head(h).log_softmax(-1)


def ctc(out, target):
    b, t, _ = out.shape
    return F.ctc_loss(
        out.transpose(0, 1),
        target,
        torch.full((b,), t, dtype=torch.long),
        torch.full((b,), target.shape[1], dtype=torch.long),
    )


class ConvFeatureEncoder(nn.Module):
    """wav2vec2-style Conv1d feature extractor on raw audio (GroupNorm on the first layer)."""

    def __init__(self, dim=64):
        super().__init__()
        self.conv0 = nn.Conv1d(1, dim, 10, 5, bias=False)
        self.norm0 = nn.GroupNorm(dim, dim)
        self.act0 = nn.GELU()
        self.conv1 = nn.Conv1d(dim, dim, 3, 2, bias=False)
        self.act1 = nn.GELU()
        self.conv2 = nn.Conv1d(dim, dim, 3, 2, bias=False)
        self.act2 = nn.GELU()

    def forward(self, wav):
        x = self.act0(self.norm0(self.conv0(wav.unsqueeze(1))))
        return self.act2(self.conv2(self.act1(self.conv1(x))))


class Wav2VecTiny(nn.Module):
    def __init__(self, dim=64, classes=12):
        super().__init__()
        self.feature_extractor = ConvFeatureEncoder(dim)
        self.layer_norm = nn.LayerNorm(dim)
        self.pos_conv = nn.Conv1d(dim, dim, 15, padding=7, groups=8)
        layer = nn.TransformerEncoderLayer(
            dim, 4, 2 * dim, 0.1, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.classifier = nn.Linear(dim, classes)

    def forward(self, wav):
        f = self.feature_extractor(wav)
        x = self.layer_norm(f.transpose(1, 2))
        x = x + F.gelu(self.pos_conv(x.transpose(1, 2))).transpose(1, 2)
        return self.classifier(self.encoder(x).mean(1))


class C3DSmall(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv3d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm3d(16)
        self.pool1 = nn.MaxPool3d((1, 2, 2))
        self.conv2 = nn.Conv3d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm3d(32)
        self.pool2 = nn.MaxPool3d(2)
        self.conv3 = nn.Conv3d(32, 64, 3, padding=1)
        self.bn3 = nn.BatchNorm3d(64)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.pool1(self.relu(self.bn1(self.conv1(x))))
        x = self.pool2(self.relu(self.bn2(self.conv2(x))))
        x = self.relu(self.bn3(self.conv3(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


class ASPPLite(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.b0 = conv_bn_relu(cin, c, 1, 1, 0)
        self.b1 = nn.Sequential(
            nn.Conv2d(cin, c, 3, padding=2, dilation=2, bias=False), nn.BatchNorm2d(c), nn.ReLU(inplace=True)
        )
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(cin, c, 1), nn.ReLU())
        self.project = conv_bn_relu(3 * c, c, 1, 1, 0)

    def forward(self, x):
        p = F.interpolate(self.pool(x), size=x.shape[-2:], mode="bilinear", align_corners=False)
        return self.project(torch.cat([self.b0(x), self.b1(x), p], 1))


class SegNetSmall(nn.Module):
    """Hand-written segmentation: strided conv backbone, ASPP-like head, bilinear upsample."""

    def __init__(self, classes=5):
        super().__init__()
        self.backbone = nn.Sequential(
            conv_bn_relu(3, 16, s=2), conv_bn_relu(16, 32, s=2), conv_bn_relu(32, 64)
        )
        self.head = ASPPLite(64, 32)
        self.classifier = nn.Conv2d(32, classes, 1)

    def forward(self, x):
        y = self.classifier(self.head(self.backbone(x)))
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mlp = Mlp(tokens, 2 * tokens)
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mlp = Mlp(dim, 4 * dim)

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class MLPMixer(nn.Module):
    def __init__(self, img=32, patch=4, dim=64, depth=3):
        super().__init__()
        self.stem = PatchEmbed(patch, dim)
        self.blocks = nn.Sequential(*[MixerBlock((img // patch) ** 2, dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.stem(x))).mean(1))


class ConvAutoencoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 16, 3, 2, 1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, 2, 1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(32 * 8 * 8, 32),
        )
        self.decoder = nn.Sequential(
            nn.Linear(32, 32 * 8 * 8),
            nn.ReLU(),
            nn.Unflatten(1, (32, 8, 8)),
            nn.ConvTranspose2d(32, 16, 4, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(16, 1, 4, 2, 1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.decoder(self.encoder(x))


class TextCNN(nn.Module):
    def __init__(self, vocab=2000, dim=64, classes=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.convs = nn.ModuleList(nn.Conv1d(dim, 32, k) for k in (3, 4, 5))
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(96, classes)

    def forward(self, ids):
        x = self.embedding(ids).transpose(1, 2)
        x = torch.cat([F.relu(c(x)).max(-1).values for c in self.convs], 1)
        return self.fc(self.dropout(x))


class Siamese(nn.Module):
    """One encoder called twice per step (shared weights), cosine-similarity head."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            conv_bn_relu(1, 16),
            nn.MaxPool2d(2),
            conv_bn_relu(16, 32),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(32, 32),
        )
        self.scale = nn.Parameter(torch.tensor(5.0))

    def forward(self, a, b):
        return F.cosine_similarity(self.encoder(a), self.encoder(b)) * self.scale


# ---------------------------------------------------------------------------------------
# registry: name -> (family, optimizer, builder)


def tv(fn, **kw):
    return fn(weights=None, **kw)


def b_seq2seq():
    src, tgt = randint(500, 8, 24), randint(500, 8, 17, seed=3)
    return dict(model=Seq2SeqTransformer(), inputs=(src, tgt[:, :-1]), target=tgt[:, 1:], loss=ce_tokens)


def b_bert():
    ids = randint(1000, 8, 32)
    mask = torch.ones(8, 32, dtype=torch.long)
    mask[:, 28:] = 0
    return dict(model=BertTiny(), inputs=(ids, mask), target=randint(1000, 8, 32, seed=3), loss=ce_tokens)


def b_lm(model, vocab=500, batch=8, seq=20):
    ids = randint(vocab, batch, seq + 1)
    return dict(model=model, inputs=(ids[:, :-1],), target=ids[:, 1:], loss=ce_tokens)


def b_dlrm():
    batch, tables = 128, (1000, 500, 800, 300, 1200, 200)
    g = gen(7)
    ids, offs = [], []
    for n in tables:
        lengths = torch.randint(1, 5, (batch,), generator=g)
        ids.append(torch.randint(0, n, (int(lengths.sum()),), generator=g))
        offs.append(torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]]))
    return dict(
        model=DLRM(tables=tables),
        inputs=(randn(batch, 13), ids, offs),
        target=torch.randint(0, 2, (batch,), generator=g).float(),
        loss=bce,
    )


def b_ncf():
    return dict(
        model=NCF(),
        inputs=(randint(2000, 256), randint(3000, 256, seed=3)),
        target=(randn(256, seed=4) > 0).float(),
        loss=bce,
    )


def b_graph(model):
    inputs, target = random_graph()
    return dict(model=model, inputs=inputs, target=target, loss=ce)


def b_seg(model, batch=2, hw=64, classes=5):
    return dict(
        model=model, inputs=(randn(batch, 3, hw, hw),), target=randint(classes, batch, hw, hw), loss=ce_seg
    )


def b_speech():
    return dict(
        model=SpeechTransformerCTC(), inputs=(randn(4, 100, 40),), target=randint(29, 4, 12) + 1, loss=ctc
    )


def b_autoencoder():
    x = torch.rand(16, 1, 32, 32, generator=gen(1))
    return dict(model=ConvAutoencoder(), inputs=(x,), target=x, loss=mse)


def b_siamese():
    return dict(
        model=Siamese(),
        inputs=(randn(8, 1, 28, 28), randn(8, 1, 28, 28, seed=3)),
        target=randn(8, seed=4).tanh(),
        loss=mse,
    )


def b_swin_small():
    from torchvision.models.swin_transformer import SwinTransformer

    m = SwinTransformer(
        patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4], num_classes=10
    )
    return image_cls(m, 4, 32)


def b_vit_tv():
    from torchvision.models.vision_transformer import VisionTransformer

    m = VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10
    )
    return image_cls(m, 4, 32)


def b_densenet_small():
    from torchvision.models.densenet import DenseNet

    m = DenseNet(growth_rate=12, block_config=(3, 3, 3), num_init_features=24, num_classes=10)
    return image_cls(m, 4, 32)


REGISTRY = [
    # name, family, optimizer, builder
    (
        "mlp",
        "mlp",
        "sgd",
        lambda: dict(model=MLP(), inputs=(randn(64, 256),), target=randint(10, 64), loss=ce),
    ),
    ("small_cnn", "cnn", "sgd", lambda: image_cls(SmallCNN(), 16, 32)),
    ("vgg_small", "cnn", "sgd", lambda: image_cls(VGGSmall(), 8, 32)),
    ("alexnet_small", "cnn", "adam", lambda: image_cls(AlexNetSmall(), 8, 64)),
    ("squeezenet1_1", "cnn", "sgd", lambda: image_cls(tv(tvm.squeezenet1_1, num_classes=10), 2, 64)),
    ("resnet18", "residual", "sgd", lambda: image_cls(tv(tvm.resnet18, num_classes=10), 4, 64)),
    (
        "resnext50_32x4d",
        "residual",
        "adamw",
        lambda: image_cls(tv(tvm.resnext50_32x4d, num_classes=10), 2, 32),
    ),
    ("bottleneck_net", "residual", "adam", lambda: image_cls(BottleneckNet(), 4, 32)),
    ("densenet121", "dense", "sgd", lambda: image_cls(tv(tvm.densenet121, num_classes=10), 2, 32)),
    ("densenet_small", "dense", "adam", b_densenet_small),
    ("mobilenet_v2", "depthwise", "sgd", lambda: image_cls(tv(tvm.mobilenet_v2, num_classes=10), 2, 64)),
    (
        "mobilenet_v3_small",
        "depthwise",
        "adam",
        lambda: image_cls(tv(tvm.mobilenet_v3_small, num_classes=10), 2, 64),
    ),
    (
        "efficientnet_b0",
        "depthwise",
        "adamw",
        lambda: image_cls(tv(tvm.efficientnet_b0, num_classes=10), 2, 64),
    ),
    (
        "shufflenet_v2_x0_5",
        "depthwise",
        "sgd",
        lambda: image_cls(tv(tvm.shufflenet_v2_x0_5, num_classes=10), 2, 64),
    ),
    ("mnasnet0_5", "nas", "sgd", lambda: image_cls(tv(tvm.mnasnet0_5, num_classes=10), 2, 64)),
    ("regnet_x_400mf", "nas", "sgd", lambda: image_cls(tv(tvm.regnet_x_400mf, num_classes=10), 2, 64)),
    ("regnet_y_400mf", "nas", "adamw", lambda: image_cls(tv(tvm.regnet_y_400mf, num_classes=10), 2, 64)),
    (
        "googlenet",
        "inception",
        "sgd",
        lambda: image_cls(tv(tvm.googlenet, num_classes=10, aux_logits=False, init_weights=True), 2, 64),
    ),
    ("convnext_tiny", "convnext", "adamw", lambda: image_cls(tv(tvm.convnext_tiny, num_classes=10), 2, 32)),
    ("convnext_small_hw", "convnext", "adamw", lambda: image_cls(ConvNeXtSmall(), 4, 32)),
    ("vit_encoderlayer", "vit", "adamw", lambda: image_cls(ViTEncoderLayer(), 8, 32)),
    ("vit_handwritten", "vit", "adamw", lambda: image_cls(ViTHandwritten(), 4, 32)),
    ("vit_torchvision_small", "vit", "adam", b_vit_tv),
    ("swin_t", "swin", "adamw", lambda: image_cls(tv(tvm.swin_t, num_classes=10), 1, 64)),
    ("swin_small_config", "swin", "adamw", b_swin_small),
    ("mlp_mixer", "mixer", "adamw", lambda: image_cls(MLPMixer(), 4, 32)),
    (
        "encoder_prenorm",
        "encoder",
        "adamw",
        lambda: dict(
            model=TextEncoder(True, act="gelu"), inputs=(randint(1000, 8, 32),), target=randint(5, 8), loss=ce
        ),
    ),
    (
        "encoder_postnorm",
        "encoder",
        "adam",
        lambda: dict(model=TextEncoder(False), inputs=(randint(1000, 8, 32),), target=randint(5, 8), loss=ce),
    ),
    ("bert_tiny", "bert", "adamw", b_bert),
    ("gpt_tiny", "gpt", "adamw", lambda: b_lm(GPTTiny(), vocab=1000, batch=8, seq=32)),
    ("seq2seq_transformer", "seq2seq", "adam", b_seq2seq),
    ("lstm_lm", "rnn", "sgd", lambda: b_lm(RNNLM(nn.LSTM))),
    ("gru_lm", "rnn", "adam", lambda: b_lm(RNNLM(nn.GRU))),
    (
        "bigru_tagger",
        "rnn",
        "adam",
        lambda: dict(
            model=BiTagger(nn.GRU), inputs=(randint(500, 8, 16),), target=randint(9, 8, 16), loss=ce_tokens
        ),
    ),
    (
        "bilstm_tagger",
        "rnn",
        "sgd",
        lambda: dict(
            model=BiTagger(nn.LSTM), inputs=(randint(500, 8, 16),), target=randint(9, 8, 16), loss=ce_tokens
        ),
    ),
    ("lstmcell_lm", "rnn", "adam", lambda: b_lm(LSTMCellLM(), vocab=300, batch=8, seq=12)),
    (
        "textcnn",
        "cnn1d",
        "adam",
        lambda: dict(model=TextCNN(), inputs=(randint(2000, 16, 48),), target=randint(4, 16), loss=ce),
    ),
    ("dlrm", "recsys", "sgd", b_dlrm),
    ("ncf", "recsys", "adam", b_ncf),
    ("gcn", "gnn", "adam", lambda: b_graph(GCN())),
    ("graphsage", "gnn", "adamw", lambda: b_graph(GraphSAGE())),
    ("unet_small", "unet", "adam", lambda: b_seg(UNetSmall(classes=3), batch=2, hw=64, classes=3)),
    ("moe_top1", "moe", "adamw", lambda: b_lm(MoETransformer(1), batch=8, seq=24)),
    ("moe_top2", "moe", "adamw", lambda: b_lm(MoETransformer(2), batch=8, seq=24)),
    ("speech_conv_transformer_ctc", "speech", "adam", b_speech),
    (
        "wav2vec_tiny",
        "speech",
        "adamw",
        lambda: dict(model=Wav2VecTiny(), inputs=(randn(4, 1600),), target=randint(12, 4), loss=ce),
    ),
    (
        "c3d_small",
        "cnn3d",
        "sgd",
        lambda: dict(model=C3DSmall(), inputs=(randn(2, 3, 8, 32, 32),), target=randint(10, 2), loss=ce),
    ),
    (
        "r3d_18",
        "cnn3d",
        "sgd",
        lambda: dict(
            model=tv(tvm.video.r3d_18, num_classes=10),
            inputs=(randn(2, 3, 4, 32, 32),),
            target=randint(10, 2),
            loss=ce,
        ),
    ),
    ("segnet_small", "segmentation", "adam", lambda: b_seg(SegNetSmall())),
    (
        "lraspp_mobilenet_v3",
        "segmentation",
        "adam",
        lambda: b_seg(tv(tvm.segmentation.lraspp_mobilenet_v3_large, num_classes=5, weights_backbone=None)),
    ),
    (
        "deeplabv3_mobilenet_v3",
        "segmentation",
        "sgd",
        lambda: b_seg(
            tv(
                tvm.segmentation.deeplabv3_mobilenet_v3_large,
                num_classes=5,
                weights_backbone=None,
                aux_loss=False,
            )
        ),
    ),
    ("conv_autoencoder", "autoencoder", "adam", b_autoencoder),
    ("siamese_cnn", "siamese", "sgd", b_siamese),
]


def make_optimizer(kind, params):
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9)
    if kind == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
    raise ValueError(kind)


OPT_DESC = {
    "sgd": "SGD(lr=0.01, momentum=0.9)",
    "adam": "Adam(lr=1e-3)",
    "adamw": "AdamW(lr=1e-3, weight_decay=0.01)",
}


def assign_splits(entries):
    """entries: list of (name, family). Returns {name: "tune"|"heldout"} (see module doc)."""
    n = len(entries)
    want = int(math.floor(n / 3 + 0.5))
    fam_size, seen, held = {}, {}, []
    for _, fam in entries:
        fam_size[fam] = fam_size.get(fam, 0) + 1
    for name, fam in entries:
        r = seen.get(fam, 0)
        seen[fam] = r + 1
        if r % 3 == 1:
            held.append(name)
    singles = [name for name, fam in entries if fam_size[fam] == 1]
    extra = singles[0::2] + singles[1::2]
    for name in extra:
        if len(held) >= want:
            break
        held.append(name)
    held = held[:want]
    return {name: ("heldout" if name in held else "tune") for name, _ in entries}


SPLIT_RULE = (
    "exactly round(n/3) held out: walking the models in registry (manifest) order, "
    "the 2nd, 5th, 8th... model of each family is held out; then models of "
    "single-model families in registry order, every other one first (1st, 3rd, ...) "
    "then the rest, until round(n/3) are held out (the last-chosen dropped if over)"
)


# ---------------------------------------------------------------------------------------
# ground-truth hooks

_ENTER_NEW = getattr(torch.ops.profiler, "_record_function_enter_new", None)


class Range(torch.autograd.profiler.record_function):
    """torch.autograd.profiler.record_function without torch 1.13's allocation artifacts.

    In 1.13, record_function.__init__ runs torch.zeros(1) (aten::zeros, aten::empty,
    aten::zero_ just before the range) and __enter__ calls _record_function_enter, which
    allocates a handle tensor (an aten::empty as the range's first child). In a ground-truth
    corpus those ops would mark every module boundary in the stripped trace. This subclass
    does what record_function does from torch 1.14 on: _record_function_enter_new returns a
    _RecordFunction object and allocates no tensor, so the range adds no aten events. It falls
    back to the base class where _record_function_enter_new is missing.
    """

    def __init__(self, name, args=None):  # pylint: disable=super-init-not-called
        if _ENTER_NEW is None:
            super().__init__(name, args)
            return
        self.name, self.args, self.run_callbacks_on_exit = name, args, True
        self.handle = None

    def __enter__(self):
        if _ENTER_NEW is None:
            return super().__enter__()
        self.handle = _ENTER_NEW(self.name, self.args)
        return self

    def __exit__(self, *exc):
        if _ENTER_NEW is None:
            return super().__exit__(*exc)
        torch.ops.profiler._record_function_exit._RecordFunction(self.handle)
        return False


class HidRanges:
    def __init__(self, model):
        self.stack = []  # (module id, record_function)
        self.calls = {}
        self.handles = []
        self.mods = list(model.named_modules())
        for hid, (path, mod) in enumerate(self.mods):
            label = f"hid={hid} {path or '(root)'} ({type(mod).__name__})"
            self.handles.append(mod.register_forward_pre_hook(self._pre(hid, label)))
            self.handles.append(mod.register_forward_hook(self._post(hid)))

    def _pre(self, hid, label):
        def hook(mod, args):
            rf = Range(label)
            rf.__enter__()
            self.stack.append((hid, rf))
            self.calls[hid] = self.calls.get(hid, 0) + 1

        return hook

    def _post(self, hid):
        def hook(mod, args, out):
            if not any(h == hid for h, _ in self.stack):
                return
            while self.stack:
                h, rf = self.stack.pop()
                rf.__exit__(None, None, None)
                if h == hid:
                    break

        return hook

    def close_all(self):
        while self.stack:
            self.stack.pop()[1].__exit__(None, None, None)

    def remove(self):
        for h in self.handles:
            h.remove()


def module_tree(model, calls):
    mods = list(model.named_modules())
    hid_of = {id(m): i for i, (_, m) in enumerate(mods)}
    parent = {}
    for i, (_, m) in enumerate(mods):
        for c in m.children():
            parent.setdefault(id(c), i)
    out = []
    for i, (path, m) in enumerate(mods):
        kids = list(m.children())
        out.append(
            dict(
                hid=i,
                path=path or "(root)",
                **{"class": type(m).__name__},
                parent=parent.get(id(m)) if i else None,
                leaf=not kids,
                children=[type(c).__name__ for c in kids],
                calls_per_step=calls.get(i, 0),
            )
        )
        assert hid_of[id(m)] == i
    return out


def describe(x):
    if isinstance(x, torch.Tensor):
        return {"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}
    if isinstance(x, (list, tuple)):
        return [describe(v) for v in x]
    return repr(x)


# ---------------------------------------------------------------------------------------
# recording


def profiler_kind():
    from torch.profiler import ProfilerActivity, profile, schedule

    try:
        with profile(
            activities=[ProfilerActivity.CPU],
            record_shapes=True,
            schedule=schedule(wait=1, warmup=1, active=2),
        ) as p:
            for _ in range(4):
                torch.ones(2).add_(1)
                p.step()
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            p.export_chrome_trace(f.name)
            json.load(open(f.name))
        return "torch.profiler"
    except Exception as e:  # pragma: no cover - depends on the build
        print("torch.profiler.profile unusable, falling back to legacy:", repr(e))
        return "legacy"


def record_one(name, family, opt_kind, builder, out_dir, kind, sequence_numbers=False):
    """Records one model's training steps. With sequence_numbers, each op that has one gets
    the autograd sequence number the profiler kept ("Sequence number", and "Fwd thread id" on
    a backward node: the forward's thread), as Kineto writes them, which the EventList export
    leaves out: the link from each backward node to the forward op that made it."""
    from torch.profiler import ProfilerActivity, profile, schedule

    record_function = Range
    torch.manual_seed(0)
    spec = builder()
    model, inputs, target, loss_fn = spec["model"], spec["inputs"], spec["target"], spec["loss"]
    model.train()
    opt = make_optimizer(opt_kind, model.parameters())
    hooks = HidRanges(model)
    last_calls = {}

    def step():
        hooks.calls = {}
        with record_function("zero_grad"):
            opt.zero_grad()
        with record_function("forward"):
            try:
                out = model(*inputs)
            finally:
                hooks.close_all()
        with record_function("loss"):
            loss = loss_fn(out, target)
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step()
        last_calls.update(hooks.calls)
        return float(loss.detach())

    t0 = time.time()
    losses = []
    if kind == "torch.profiler":
        with profile(
            activities=[ProfilerActivity.CPU],
            record_shapes=True,
            schedule=schedule(wait=1, warmup=1, active=2),
        ) as prof:
            for _ in range(STEPS):
                losses.append(step())
                prof.step()
        events = prof.profiler.function_events
    else:
        for _ in range(2):
            losses.append(step())
        with torch.autograd.profiler.profile(record_shapes=True, use_kineto=False) as prof:
            for i in range(2, STEPS):
                with record_function(f"ProfilerStep#{i}"):
                    losses.append(step())
        events = prof.function_events
    secs = time.time() - t0
    hooks.remove()

    raw = os.path.join(out_dir, name + ".json.tmp")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as f:
        data = f.read()
    os.remove(raw)
    trace = json.loads(data)
    evs = trace["traceEvents"] if isinstance(trace, dict) else trace
    if sequence_numbers:
        data = with_sequence_numbers(trace, evs, events)
    path = os.path.join(out_dir, name + ".json.gz")
    with open(path, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as gz:
            gz.write(data)
    blob = open(path, "rb").read()
    entry = dict(
        file=name + ".json.gz",
        family=family,
        optimizer=OPT_DESC[opt_kind],
        bytes=len(blob),
        sha256=hashlib.sha256(blob).hexdigest(),
        json_bytes=len(data),
        events=len(evs),
        profiler_steps=sorted({e["name"] for e in evs if e["name"].startswith("ProfilerStep#")}),
        inputs=describe(list(inputs)),
        target=describe(target),
        parameters=sum(p.numel() for p in model.parameters()),
        losses=[round(v, 5) if math.isfinite(v) else None for v in losses],  # JSON has no NaN
        record_seconds=round(secs, 2),
        modules=module_tree(model, last_calls),
    )
    del events
    print(
        f"{name:30s} {family:13s} {len(blob)/1024:7.1f} KiB  {len(evs):6d} events  " f"{secs:5.1f} s",
        flush=True,
    )
    return entry


def with_sequence_numbers(trace, evs, events):
    """The export's bytes with each op's sequence number in its args; the export writes one
    complete event per profiler event, in their order."""
    xs = [e for e in evs if e.get("ph") == "X"]
    fe = list(events)
    def same(a, b):  # the export numbers the steps the profiler calls "ProfilerStep*"
        return a["name"] == b.name or (a["name"].startswith("ProfilerStep#") and b.name.startswith("ProfilerStep"))

    assert len(xs) == len(fe) and all(same(a, b) for a, b in zip(xs, fe)), "export order"
    linked = 0
    for e, f in zip(xs, fe):
        if f.sequence_nr >= 0:
            e.setdefault("args", {})["Sequence number"] = f.sequence_nr
            e["args"]["Fwd thread id"] = f.fwd_thread
            linked += f.fwd_thread > 0
    assert linked, "no backward node has a sequence number"
    return json.dumps(trace, separators=(",", ":")).encode()


def environment(kind):
    return dict(
        torch=torch.__version__,
        torchvision=torchvision.__version__,
        python=sys.version.split()[0],
        kineto_available=bool(torch.autograd.kineto_available()),
        profiler=kind,
        profiler_desc=(
            "torch.profiler.profile(activities=[ProfilerActivity.CPU], record_shapes=True, "
            "schedule=schedule(wait=1, warmup=1, active=2)), prof.step() after each of 4 "
            "steps; Kineto is not built in, so export_chrome_trace() writes the EventList "
            "format (a JSON list of complete 'X' events, pid 'CPU functions', empty args)"
            if kind == "torch.profiler"
            else "legacy torch.autograd.profiler.profile(use_kineto=False, record_shapes=True) "
            "around steps 2-3, each wrapped in record_function('ProfilerStep#i')"
        ),
        threads=torch.get_num_threads(),
        steps=STEPS,
        phases=list(PHASES),
        range_format="hid={hid} {path} ({class})",
        range_impl=(
            "record_function subclass using torch.ops.profiler._record_function_enter_new"
            " (no aten events per range)"
            if _ENTER_NEW is not None
            else "torch.autograd.profiler.record_function"
        ),
        split_rule=SPLIT_RULE,
    )


def write_manifest(path, manifest):
    """Indented JSON, except that each module-tree entry takes one line."""
    trees = []
    for m in manifest["models"]:
        trees.append(m["modules"])
        m["modules"] = f"@@MODULES{len(trees) - 1}@@"
    text = json.dumps(manifest, indent=1)
    for i, tree in enumerate(trees):
        manifest["models"][i]["modules"] = tree
        body = ",\n   ".join(json.dumps(t) for t in tree)
        text = text.replace(f'"@@MODULES{i}@@"', "[\n   " + body + "\n  ]")
    with open(path, "w") as f:
        f.write(text + "\n")


def record(out_dir, only):
    os.makedirs(out_dir, exist_ok=True)
    kind = profiler_kind()
    man_path = os.path.join(out_dir, "manifest.json")
    old = {}
    if only and os.path.exists(man_path):
        old = {m["name"]: m for m in json.load(open(man_path))["models"]}
    splits = assign_splits([(n, f) for n, f, _, _ in REGISTRY])
    models = []
    t0 = time.time()
    for name, family, opt_kind, builder in REGISTRY:
        if only and name not in only:
            if name in old:
                models.append(old[name])
            continue
        entry = dict(name=name, split=splits[name])
        entry.update(record_one(name, family, opt_kind, builder, out_dir, kind))
        models.append(entry)
    for m in models:
        m["split"] = splits[m["name"]]
    manifest = dict(
        environment=environment(kind),
        count=len(models),
        heldout=[m["name"] for m in models if m["split"] == "heldout"],
        total_bytes=sum(m["bytes"] for m in models),
        models=models,
    )
    write_manifest(man_path, manifest)
    print(f"{len(models)} models, {manifest['total_bytes']/1024/1024:.2f} MiB, " f"{time.time()-t0:.0f} s")


# ---------------------------------------------------------------------------------------
# verification


def load_trace(path):
    with gzip.open(path, "rt") as f:
        t = json.load(f)
    return t["traceEvents"] if isinstance(t, dict) else t


def verify_one(path, tree=None):
    """Checks one trace; returns a dict of findings (raises AssertionError on a failure).

    * ProfilerStep#N ranges exist, and each holds the five phase ranges in order;
    * every hid= range nests properly against every other range on its thread (with
      integer-microsecond timestamps an end may exceed its parent's by <= 1 us of
      rounding: counted separately, not a failure);
    * hid= ranges lie inside a "forward" phase, and hid=0 covers each forward phase's
      aten ops; in a module tree with parents, a range's enclosing hid range is its
      parent module (or an ancestor, when containers are bypassed);
    * counts aten ops in forward whose innermost hid range is a leaf module.
    """
    evs = [e for e in load_trace(path) if e.get("ph") == "X"]
    evs.sort(key=lambda e: (e["tid"], e["ts"], -e["dur"]))
    steps = [e for e in evs if e["name"].startswith("ProfilerStep#")]
    assert steps, "no ProfilerStep ranges"
    res = dict(
        steps=[s["name"] for s in steps],
        bad_nesting=0,
        rounding=0,
        hid_ranges=0,
        fwd_aten=0,
        fwd_aten_in_leaf=0,
        fwd_aten_outside_hid=0,
        parent_mismatch=0,
    )
    leaf = {m["hid"]: m["leaf"] for m in tree} if tree else {}
    parent = {m["hid"]: m["parent"] for m in tree} if tree else {}
    for s in steps:
        inside = [
            e
            for e in evs
            if e["tid"] == s["tid"] and s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1
        ]
        ph = [e["name"] for e in inside if e["name"] in PHASES]
        assert ph == list(PHASES), f"{s['name']}: phases {ph}"
    # stack walk per thread
    stack = []
    cur_tid = None
    for e in evs:
        if e["tid"] != cur_tid:
            stack, cur_tid = [], e["tid"]
        end = e["ts"] + e["dur"]
        while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
            stack.pop()
        if stack:
            p_end = stack[-1]["ts"] + stack[-1]["dur"]
            if end > p_end:
                is_hid = e["name"].startswith("hid=") or stack[-1]["name"].startswith("hid=")
                if end - p_end <= 1:
                    res["rounding"] += 1
                elif is_hid:
                    res["bad_nesting"] += 1
        names = [x["name"] for x in stack]
        in_fwd = "forward" in names
        hids = [x["name"] for x in stack if x["name"].startswith("hid=")]
        if e["name"].startswith("hid="):
            res["hid_ranges"] += 1
            assert in_fwd, f"hid range outside forward: {e['name']}"
            if hids and parent:
                me = int(e["name"][4:].split(" ", 1)[0])
                up = int(hids[-1][4:].split(" ", 1)[0])
                anc, ok = parent.get(me), False
                while anc is not None:
                    if anc == up:
                        ok = True
                        break
                    anc = parent.get(anc)
                if not ok:
                    res["parent_mismatch"] += 1
        elif e["name"].startswith("aten::") and in_fwd:
            res["fwd_aten"] += 1
            if not hids:
                res["fwd_aten_outside_hid"] += 1
            elif leaf.get(int(hids[-1][4:].split(" ", 1)[0])):
                res["fwd_aten_in_leaf"] += 1
        stack.append(e)
    assert res["bad_nesting"] == 0, res
    assert res["fwd_aten_outside_hid"] == 0, res
    return res


def verify(out_dir, names):
    man = json.load(open(os.path.join(out_dir, "manifest.json")))
    by = {m["name"]: m for m in man["models"]}
    for n in names or list(by):
        r = verify_one(os.path.join(out_dir, by[n]["file"]), by[n]["modules"])
        print(n, json.dumps(r))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?", default=DEFAULT_OUT)
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument(
        "--verify",
        action="store_true",
        help="verify recorded traces (all, or those given by --only) and exit",
    )
    a = ap.parse_args()
    if a.list:
        splits = assign_splits([(n, f) for n, f, _, _ in REGISTRY])
        for n, f, o, _ in REGISTRY:
            print(f"{n:30s} {f:13s} {o:6s} {splits[n]}")
        return
    only = {s for s in a.only.split(",") if s}
    if a.verify:
        verify(a.out_dir, sorted(only))
        return
    unknown = only - {n for n, _, _, _ in REGISTRY}
    if unknown:
        sys.exit(f"unknown models: {sorted(unknown)}")
    record(a.out_dir, only)


if __name__ == "__main__":
    main()
