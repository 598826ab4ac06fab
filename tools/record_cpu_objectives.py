#!/usr/bin/env python3
"""Record Strata's objectives CPU corpus: models trained with the losses people write, a tuning set.

The phase inference tells the forward from the loss, the loss from the backward and the
backward from the optimizer step by what the ops are. The other corpora mostly train with one
library loss (cross entropy, MSE, CTC). This script records tests/data/corpus-cpu-objectives:
small models of common families trained with the objectives their reference code writes by
hand or composes: a detector's sigmoid focal loss and smooth-L1 box loss over the positive
anchors, SimCLR's NT-Xent, a VAE's reconstruction plus KL divergence, a segmentation model's
Dice plus cross entropy, a language model's label smoothing written with log_softmax and
gather, a triplet margin over pairwise distances, uncertainty-weighted multi-task losses,
knowledge distillation against a frozen teacher's logits, a contrastive image-text loss over
normalised embeddings, BPR for implicit-feedback recommendation and a masked-feature
reconstruction (MAE-style); then losses a forward computes itself (a VQ-VAE's commitment loss
before its decoder, a deeply supervised net's side head) and the networks a loss runs after a
loss op (a frozen feature network's perceptual loss after an L1, a no-grad teacher after the
student's cross entropy). Every model's split is "tune": the inference's rules may be tuned
on it. No model name is shared with any other corpus.

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged: the loss callable runs inside the "loss" range,
so whatever it computes (a teacher's forward under no_grad included) is the loss phase's.
Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_objectives.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_objectives.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-objectives.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import conv_bn_relu, randint, randn  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# a one-stage detector: focal loss and smooth L1 on the positive anchors (RetinaNet's)

class TinyDetector(nn.Module):
    def __init__(self, classes=4, anchors=3):
        super().__init__()
        self.backbone = nn.Sequential(conv_bn_relu(3, 16, s=2), conv_bn_relu(16, 32, s=2), conv_bn_relu(32, 32))
        self.cls_head = nn.Conv2d(32, anchors * classes, 3, padding=1)
        self.box_head = nn.Conv2d(32, anchors * 4, 3, padding=1)
        self.classes = classes

    def forward(self, x):
        f = self.backbone(x)
        n = x.shape[0]
        cls = self.cls_head(f).permute(0, 2, 3, 1).reshape(n, -1, self.classes)
        box = self.box_head(f).permute(0, 2, 3, 1).reshape(n, -1, 4)
        return cls, box


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0):
    """torchvision.ops.sigmoid_focal_loss, as it writes it."""
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    return (alpha_t * loss).sum()


def detection_loss(out, target):
    cls, box = out
    labels, boxes = target
    positive = labels >= 0
    onehot = torch.zeros_like(cls)
    onehot[positive] = F.one_hot(labels[positive], cls.shape[-1]).to(cls.dtype)
    num_pos = positive.sum().clamp(min=1)
    cls_loss = sigmoid_focal_loss(cls, onehot) / num_pos
    box_loss = F.smooth_l1_loss(box[positive], boxes[positive], beta=1.0 / 9, reduction="sum") / num_pos
    return cls_loss + box_loss


def b_detector():
    n, anchors = 2, 8 * 8 * 3
    labels = randint(5, n, anchors, seed=3) - 1  # -1: background
    return dict(model=TinyDetector(), inputs=(randn(n, 3, 32, 32),), target=(labels, randn(n, anchors, 4, seed=4)),
                loss=detection_loss)


# ---------------------------------------------------------------------------------------
# SimCLR: an encoder and projection head on two views, NT-Xent written by hand

class SimCLR(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(conv_bn_relu(3, 16, s=2), conv_bn_relu(16, 32, s=2), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.projector = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))

    def forward(self, x1, x2):
        return self.projector(self.encoder(x1)), self.projector(self.encoder(x2))


def nt_xent(out, temperature=0.5):
    z1, z2 = out
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.shape[0]
    sim = z @ z.t() / temperature
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, targets)


def b_simclr():
    x = randn(8, 3, 32, 32)
    return dict(model=SimCLR(), inputs=(x, x.flip(3) + 0.1 * randn(8, 3, 32, 32, seed=5)), target=None,
                loss=lambda out, _: nt_xent(out))


# ---------------------------------------------------------------------------------------
# a VAE: reconstruction and the KL divergence to the prior, as the PyTorch example writes it

class ExampleVAE(nn.Module):
    def __init__(self, d=64, h=48, z=8):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc21 = nn.Linear(h, z)
        self.fc22 = nn.Linear(h, z)
        self.fc3 = nn.Linear(z, h)
        self.fc4 = nn.Linear(h, d)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        mu, logvar = self.fc21(h), self.fc22(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar


def elbo(out, x):
    recon, mu, logvar = out
    bce = F.binary_cross_entropy(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (bce + kld) / x.shape[0]


def b_vae():
    x = torch.rand(16, 64, generator=torch.Generator().manual_seed(3))
    return dict(model=ExampleVAE(), inputs=(x,), target=x, loss=elbo)


# ---------------------------------------------------------------------------------------
# a small U-Net trained with Dice plus cross entropy (the segmentation libraries' DiceCE)

class SmallUNet(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.enc1 = nn.Sequential(conv_bn_relu(3, 16), conv_bn_relu(16, 16))
        self.enc2 = nn.Sequential(conv_bn_relu(16, 32), conv_bn_relu(32, 32))
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ConvTranspose2d(32, 16, 2, 2)
        self.dec = nn.Sequential(conv_bn_relu(32, 16), conv_bn_relu(16, 16))
        self.out = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        return self.out(self.dec(torch.cat([self.up(e2), e1], 1)))


def dice_ce(logits, target, eps=1e-5):
    probs = logits.softmax(1)
    onehot = F.one_hot(target, logits.shape[1]).permute(0, 3, 1, 2).to(probs.dtype)
    dims = (0, 2, 3)
    inter = (probs * onehot).sum(dims)
    union = probs.sum(dims) + onehot.sum(dims)
    dice = 1 - ((2 * inter + eps) / (union + eps)).mean()
    return dice + F.cross_entropy(logits, target)


def b_unet_dice():
    return dict(model=SmallUNet(), inputs=(randn(2, 3, 32, 32),), target=randint(3, 2, 32, 32, seed=3), loss=dice_ce)


# ---------------------------------------------------------------------------------------
# a decoder LM trained with label smoothing written by hand (fairseq's label_smoothed_nll_loss)

class TinyLM(nn.Module):
    def __init__(self, vocab=300, d=64, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(64, d)
        layer = nn.TransformerEncoderLayer(d, 4, 128, dropout=0.1, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf")), 1)
        h = self.embed(ids) + self.pos(torch.arange(t))
        return self.head(self.norm(self.blocks(h, mask=mask)))


def label_smoothed_nll(logits, target, eps=0.1):
    lprobs = F.log_softmax(logits, dim=-1).view(-1, logits.shape[-1])
    target = target.reshape(-1, 1)
    nll = -lprobs.gather(dim=-1, index=target)
    smooth = -lprobs.sum(dim=-1, keepdim=True)
    return ((1.0 - eps) * nll + eps / lprobs.shape[-1] * smooth).mean()


def b_lm_smoothing():
    ids = randint(300, 4, 24)
    return dict(model=TinyLM(), inputs=(ids,), target=randint(300, 4, 24, seed=3), loss=label_smoothed_nll)


# ---------------------------------------------------------------------------------------
# metric learning: an embedding network on anchors, positives and negatives, triplet margin

class EmbedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(conv_bn_relu(3, 16, s=2), conv_bn_relu(16, 32, s=2), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.embed = nn.Linear(32, 16)

    def forward(self, a, p, n):
        return tuple(F.normalize(self.embed(self.features(x)), dim=1) for x in (a, p, n))


def triplet(out, _, margin=0.2):
    a, p, n = out
    d_ap = (a - p).pow(2).sum(1)
    d_an = (a - n).pow(2).sum(1)
    return F.relu(d_ap - d_an + margin).mean()


def b_triplet():
    return dict(model=EmbedNet(), inputs=(randn(6, 3, 32, 32), randn(6, 3, 32, 32, seed=3), randn(6, 3, 32, 32, seed=4)),
                target=None, loss=triplet)


# ---------------------------------------------------------------------------------------
# multi-task learning: a shared trunk, a classification and a regression head, the losses
# weighted by learned uncertainties (Kendall et al.)

class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.cls = nn.Linear(64, 5)
        self.reg = nn.Linear(64, 1)
        self.log_vars = nn.Parameter(torch.zeros(2))

    def forward(self, x):
        h = self.trunk(x)
        return self.cls(h), self.reg(h).squeeze(-1), self.log_vars


def uncertainty_weighted(out, target):
    cls, reg, log_vars = out
    labels, values = target
    losses = torch.stack([F.cross_entropy(cls, labels), F.mse_loss(reg, values)])
    return (torch.exp(-log_vars) * losses + log_vars).sum()


def b_multitask():
    return dict(model=MultiTask(), inputs=(randn(32, 32),), target=(randint(5, 32, seed=3), randn(32, seed=4)),
                loss=uncertainty_weighted)


# ---------------------------------------------------------------------------------------
# knowledge distillation: the student trains on a frozen teacher's softened logits (Hinton's
# loss), the teacher run under no_grad inside the loss

class Student(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.features = nn.Sequential(conv_bn_relu(3, width, s=2), conv_bn_relu(width, 2 * width, s=2), nn.AdaptiveAvgPool2d(1),
                                      nn.Flatten())
        self.fc = nn.Linear(2 * width, 10)

    def forward(self, x):
        return self.fc(self.features(x))


def distillation(teacher, temperature=4.0, alpha=0.7):
    def loss(student_logits, target):
        x, labels = target
        with torch.no_grad():
            teacher_logits = teacher(x)
        soft = F.kl_div(F.log_softmax(student_logits / temperature, dim=1), F.softmax(teacher_logits / temperature, dim=1),
                        reduction="batchmean") * temperature * temperature
        return alpha * soft + (1 - alpha) * F.cross_entropy(student_logits, labels)
    return loss


def b_distill():
    teacher = Student(width=32).eval()
    x = randn(8, 3, 32, 32)
    return dict(model=Student(), inputs=(x,), target=(x, randint(10, 8, seed=3)), loss=distillation(teacher))


# ---------------------------------------------------------------------------------------
# CLIP-style contrastive image-text training: two towers, normalised embeddings, a learned
# temperature, symmetric cross entropy over the similarity matrix

class TwoTowers(nn.Module):
    def __init__(self, vocab=200, d=32):
        super().__init__()
        self.image = nn.Sequential(conv_bn_relu(3, 16, s=2), conv_bn_relu(16, 32, s=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                   nn.Linear(32, d))
        self.tokens = nn.EmbeddingBag(vocab, d, mode="mean")
        self.text = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        self.logit_scale = nn.Parameter(torch.tensor(2.659))

    def forward(self, images, ids):
        return self.image(images), self.text(self.tokens(ids)), self.logit_scale


def contrastive(out, _):
    img, txt, scale = out
    img = img / img.norm(dim=-1, keepdim=True)
    txt = txt / txt.norm(dim=-1, keepdim=True)
    logits = scale.exp() * img @ txt.t()
    labels = torch.arange(img.shape[0])
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


def b_contrastive():
    return dict(model=TwoTowers(), inputs=(randn(8, 3, 32, 32), randint(200, 8, 12, seed=3)), target=None, loss=contrastive)


# ---------------------------------------------------------------------------------------
# BPR for implicit feedback: user and item embeddings, a positive and a sampled negative item

class MatrixFactorization(nn.Module):
    def __init__(self, users=100, items=200, d=16):
        super().__init__()
        self.user = nn.Embedding(users, d)
        self.item = nn.Embedding(items, d)

    def forward(self, u, i, j):
        pu = self.user(u)
        return (pu * self.item(i)).sum(-1), (pu * self.item(j)).sum(-1), pu, self.item(i), self.item(j)


def bpr(out, _, reg=1e-4):
    pos, neg, pu, qi, qj = out
    loss = -F.logsigmoid(pos - neg).mean()
    return loss + reg * (pu.pow(2).sum() + qi.pow(2).sum() + qj.pow(2).sum()) / pu.shape[0]


def b_bpr():
    return dict(model=MatrixFactorization(), inputs=(randint(100, 64), randint(200, 64, seed=3), randint(200, 64, seed=4)),
                target=None, loss=bpr)


# ---------------------------------------------------------------------------------------
# masked autoencoding (MAE-style): a ViT encoder on the visible patches, a light decoder, the
# loss the normalised pixels' squared error on the masked patches only

class TinyMAE(nn.Module):
    def __init__(self, patch=8, d=48, depth=2):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(3 * patch * patch, d)
        self.pos = nn.Parameter(torch.zeros(1, 16, d))
        layer = nn.TransformerEncoderLayer(d, 4, 96, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, d))
        self.decoder = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, 3 * patch * patch))

    def patchify(self, x):
        n, c, h, w = x.shape
        p = self.patch
        x = x.reshape(n, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(n, (h // p) * (w // p), p * p * c)

    def forward(self, x, keep):
        patches = self.patchify(x)
        tokens = self.embed(patches) + self.pos
        n, t, d = tokens.shape
        visible = torch.gather(tokens, 1, keep.unsqueeze(-1).expand(-1, -1, d))
        latent = self.encoder(visible)
        full = self.mask_token.expand(n, t, d).clone()
        full.scatter_(1, keep.unsqueeze(-1).expand(-1, -1, d), latent)
        return self.decoder(full), patches


def mae_loss(out, masked):
    pred, patches = out
    mean = patches.mean(dim=-1, keepdim=True)
    var = patches.var(dim=-1, keepdim=True)
    target = (patches - mean) / (var + 1.0e-6) ** 0.5
    loss = ((pred - target) ** 2).mean(dim=-1)
    return (loss * masked).sum() / masked.sum()


def b_mae():
    n, t, keep_n = 4, 16, 4
    order = torch.argsort(torch.rand(n, t, generator=torch.Generator().manual_seed(3)), dim=1)
    keep = order[:, :keep_n]
    masked = torch.ones(n, t)
    masked.scatter_(1, keep, 0.0)
    return dict(model=TinyMAE(), inputs=(randn(n, 3, 32, 32), keep), target=masked, loss=mae_loss)


# ---------------------------------------------------------------------------------------
# a VQ-VAE: the quantizer's codebook and commitment losses are computed inside the forward
# (F.mse_loss in VectorQuantizer.forward), the decoder runs after them; the loss adds the
# reconstruction's

class VectorQuantizer(nn.Module):
    def __init__(self, codes=32, d=16, beta=0.25):
        super().__init__()
        self.codebook = nn.Embedding(codes, d)
        self.beta = beta

    def forward(self, z):
        n, d, h, w = z.shape
        flat = z.permute(0, 2, 3, 1).reshape(-1, d)
        distances = (flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.codebook.weight.t() +
                     self.codebook.weight.pow(2).sum(1))
        q = self.codebook(distances.argmin(1)).view(n, h, w, d).permute(0, 3, 1, 2)
        vq_loss = F.mse_loss(q, z.detach()) + self.beta * F.mse_loss(z, q.detach())
        return z + (q - z).detach(), vq_loss


class VQVAE(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, d, 4, 2, 1))
        self.quantizer = VectorQuantizer(d=d)
        self.decoder = nn.Sequential(nn.ConvTranspose2d(d, 32, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(32, 3, 4, 2, 1))

    def forward(self, x):
        q, vq_loss = self.quantizer(self.encoder(x))
        return self.decoder(q), vq_loss


def vq_objective(out, x):
    recon, vq_loss = out
    return F.mse_loss(recon, x) + vq_loss


def b_vqvae():
    x = randn(4, 3, 32, 32)
    return dict(model=VQVAE(), inputs=(x,), target=x, loss=vq_objective)


# ---------------------------------------------------------------------------------------
# deep supervision: an auxiliary classifier's cross entropy computed inside the forward at an
# intermediate stage (the labels passed in), the network going on after it

class DeeplySupervised(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stage1 = nn.Sequential(conv_bn_relu(3, 16, s=2), conv_bn_relu(16, 32, s=2))
        self.aux = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes))
        self.stage2 = nn.Sequential(conv_bn_relu(32, 64, s=2), conv_bn_relu(64, 64))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))

    def forward(self, x, labels):
        f = self.stage1(x)
        aux_loss = F.cross_entropy(self.aux(f), labels)
        return self.head(self.stage2(f)), aux_loss


def deep_supervision(out, labels):
    logits, aux_loss = out
    return F.cross_entropy(logits, labels) + 0.4 * aux_loss


def b_deep_supervision():
    labels = randint(10, 8, seed=3)
    return dict(model=DeeplySupervised(), inputs=(randn(8, 3, 32, 32), labels), target=labels, loss=deep_supervision)


# ---------------------------------------------------------------------------------------
# an autoencoder trained with L1 and a perceptual loss: a frozen feature network (its
# parameters need no gradient) run on the reconstruction and the input inside the loss

class FrozenFeatures(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                 nn.Conv2d(32, 32, 3, 1, 1), nn.ReLU())
        for q in self.parameters():
            q.requires_grad_(False)

    def forward(self, x):
        return self.net(x)


class PerceptualAutoencoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(conv_bn_relu(3, 16, s=2), conv_bn_relu(16, 32, s=2))
        self.decoder = nn.Sequential(nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(16, 3, 4, 2, 1))

    def forward(self, x):
        return self.decoder(self.encoder(x))


def perceptual(features):
    def loss(recon, x):
        return F.l1_loss(recon, x) + 0.1 * F.mse_loss(features(recon), features(x))
    return loss


def b_perceptual():
    x = randn(4, 3, 32, 32)
    return dict(model=PerceptualAutoencoder(), inputs=(x,), target=x, loss=perceptual(FrozenFeatures()))


# ---------------------------------------------------------------------------------------
# distillation written the other way round: the student's cross entropy first, then the
# teacher's forward under no_grad and the KL term, all inside the loss

def distillation_ce_first(teacher, t=4.0, alpha=0.7):
    def loss(student_logits, target):
        x, y = target
        hard = F.cross_entropy(student_logits, y)
        with torch.no_grad():
            teacher_logits = teacher(x)
        soft = F.kl_div(F.log_softmax(student_logits / t, -1), F.softmax(teacher_logits / t, -1), reduction="batchmean")
        return (1 - alpha) * hard + alpha * t * t * soft
    return loss


def b_distill_ce_first():
    torch.manual_seed(11)
    teacher = nn.Sequential(conv_bn_relu(3, 32, s=2), conv_bn_relu(32, 64, s=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                            nn.Linear(64, 10)).eval()
    student = nn.Sequential(conv_bn_relu(3, 16, s=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    x = randn(8, 3, 32, 32)
    return dict(model=student, inputs=(x,), target=(x, randint(10, 8, seed=3)), loss=distillation_ce_first(teacher))


REGISTRY = [
    ("focal_detector", "detection", "sgd", b_detector),
    ("simclr_ntxent", "contrastive", "sgd", b_simclr),
    ("vae_elbo", "generative", "adam", b_vae),
    ("unet_dice_ce", "unet", "adam", b_unet_dice),
    ("lm_label_smoothing", "decoder", "adamw", b_lm_smoothing),
    ("triplet_embedding", "metric", "sgd", b_triplet),
    ("uncertainty_multitask", "multitask", "adam", b_multitask),
    ("kd_student", "distillation", "sgd", b_distill),
    ("clip_contrastive", "multimodal", "adamw", b_contrastive),
    ("bpr_mf", "recsys", "adam", b_bpr),
    ("mae_pretrain", "vit", "adamw", b_mae),
    ("vqvae_commitment", "generative", "adam", b_vqvae),
    ("deep_supervision", "cnn", "sgd", b_deep_supervision),
    ("perceptual_autoencoder", "generative", "adam", b_perceptual),
    ("kd_ce_first", "distillation", "sgd", b_distill_ce_first),
]

SPLIT_RULE = (
    "every model is tune: a tuning set of training objectives written as their reference code "
    "writes them, recorded for the phase and layer inference's rules to be tuned on; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

OBJECTIVES = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_objectives.py",
    os.path.join(DATA, "corpus-cpu-objectives"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-modern", "corpus-cpu-families", "corpus-cpu-heldout",
                                      "corpus-cpu-variants", "corpus-cpu-variants2", "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(OBJECTIVES)
