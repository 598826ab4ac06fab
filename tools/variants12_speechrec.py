"""Variants12 models, part speechrec: a convolutional speech encoder and a recommendation model.

contextnet_lite: ContextNet as openspeech writes it (openspeech/encoders/contextnet_encoder.py,
openspeech/modules/contextnet_block.py, contextnet_module.py, swish.py). ContextNetEncoder
transposes the (batch, time, features) input to channels first and runs its `blocks`, a
ModuleList of ContextNetBlocks made by ContextNetBlock.make_conv_blocks, carrying the lengths
through every block. A ContextNetBlock runs its conv_layers (one ContextNetConvModule, or a
ModuleList of them whose last one carries the block's stride), its se_layer (ContextNetSEModule:
the sum over time divided by the lengths, a Sequential of Linear, Swish and Linear, sigmoid,
unsqueeze and repeat over time, times the input), adds its residual ContextNetConvModule (no
activation) in place, and ends with Swish. A ContextNetConvModule is a Conv1d (padded to keep
the length at stride 1, unpadded at stride 2), BatchNorm1d and, when it has activation, Swish
(inputs * inputs.sigmoid()), and computes its output lengths from the conv's geometry. With
joint_ctc_attention the encoder's fc (no bias) and log_softmax give the CTC log probabilities.

wukong_recsys: Meta's Wukong as clabrugere/wukong-recommendation's PyTorch model writes it
(model/pytorch/wukong.py, embedding.py, mlp.py). Wukong's embedding looks the sparse ids up in
one nn.Embedding and maps the dense features by a Linear to dim_input_dense embeddings,
concatenated; its interaction_layers, a Sequential of WukongLayers, each run a
LinearCompressBlock (permute, matmul by a weight over the embedding count, permute) and a
FactorizationMachineBlock (permute, matmul by a (num_emb, rank) weight, bmm with the input,
view, LayerNorm, an MLP of Linear, BatchNorm1d, ReLU, Dropout and a Linear to num_emb_out *
dim_emb, view), concatenate fmb and lcb, add the residual_projection (a ResidualProjection
where the embedding count changes, nn.Identity otherwise) and apply a LayerNorm; the flattened
embeddings go through the projection_head MLP to one logit.
"""

import math, os, sys  # noqa: E401,F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_cpu_heldout as rh  # noqa: E402,F401
from record_cpu_corpus import ce, mse, randint, randn  # noqa: E402,F401
import torch, torch.nn as nn, torch.nn.functional as F  # noqa: E401,E402


# ---------------------------------------------------------------------------------------
# ContextNet as openspeech writes it: openspeech/encoders/contextnet_encoder.py
# (ContextNetEncoder), openspeech/modules/contextnet_block.py (ContextNetBlock,
# make_conv_blocks), openspeech/modules/contextnet_module.py (ContextNetSEModule,
# ContextNetConvModule), openspeech/modules/swish.py (Swish). openspeech's convolutions are
# plain Conv1d (not depthwise-separable as NeMo's), and its SE module averages by sum / lengths
# without masking; both kept as openspeech has them. Scaled down: input_dim 80 -> 16,
# num_channels 256 -> 32, output_dim 640 -> 40, num_layers per block 5 -> 2, and 23 blocks ->
# 4 in make_conv_blocks' pattern (C0: one conv, no residual; a stride-1 residual block; a
# stride-2 residual block; the final one-conv block to output_dim, no residual). 20 frames,
# batch 2, vocab 10. The encoder's own joint_ctc_attention head (fc without bias,
# log_softmax(dim=2)) is the output; the loss is F.ctc_loss on the carried output lengths.
# The transducer decoder and joint network of openspeech's ContextNet model are left out.


class Swish(nn.Module):
    def forward(self, inputs):
        return inputs * inputs.sigmoid()


class ContextNetSEModule(nn.Module):
    def __init__(self, dim):
        super().__init__()
        assert dim % 8 == 0, "Dimension should be divisible by 8."
        self.dim = dim
        self.sequential = nn.Sequential(
            nn.Linear(dim, dim // 8),
            Swish(),
            nn.Linear(dim // 8, dim),
        )

    def forward(self, inputs, input_lengths):
        residual = inputs
        seq_lengths = inputs.size(2)
        inputs = inputs.sum(dim=2) / input_lengths.unsqueeze(1)
        output = self.sequential(inputs)
        output = output.sigmoid().unsqueeze(2)
        output = output.repeat(1, 1, seq_lengths)
        return output * residual


class ContextNetConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=5, stride=1, padding=0, activation=True,
                 groups=1, bias=True):
        super().__init__()
        assert kernel_size == 5, "The convolution layer in the ContextNet model has 5 kernels."
        # stride 1 pads to keep the length, stride 2 uses the given padding (0)
        pad = (kernel_size - 1) // 2 if stride == 1 else padding
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, dilation=1,
                              padding=pad, groups=groups, bias=bias)
        self.batch_norm = nn.BatchNorm1d(num_features=out_channels)
        self.activation = activation
        if self.activation:
            self.swish = Swish()

    def forward(self, inputs, input_lengths):
        outputs, output_lengths = self.conv(inputs), self._get_sequence_lengths(input_lengths)
        outputs = self.batch_norm(outputs)
        if self.activation:
            outputs = self.swish(outputs)
        return outputs, output_lengths

    def _get_sequence_lengths(self, seq_lengths):
        c = self.conv
        return (seq_lengths + 2 * c.padding[0] - c.dilation[0] * (c.kernel_size[0] - 1) - 1) // c.stride[0] + 1


class ContextNetBlock(nn.Module):
    def __init__(self, in_channels, out_channels, num_layers=5, kernel_size=5, stride=1, padding=0, residual=True):
        super().__init__()
        self.num_layers = num_layers
        self.swish = Swish()
        self.se_layer = ContextNetSEModule(out_channels)
        self.residual = None
        if residual:
            self.residual = ContextNetConvModule(in_channels, out_channels, kernel_size, stride, padding,
                                                 activation=False)
        if self.num_layers == 1:
            self.conv_layers = ContextNetConvModule(in_channels, out_channels, kernel_size, stride, padding)
        else:
            strides = [1] * (num_layers - 1) + [stride]
            ins = [in_channels] + [out_channels] * (num_layers - 1)
            self.conv_layers = nn.ModuleList(
                [ContextNetConvModule(i, out_channels, kernel_size, s, padding) for i, s in zip(ins, strides)])

    def forward(self, inputs, input_lengths):
        output, output_lengths = inputs, input_lengths
        if self.num_layers == 1:
            output, output_lengths = self.conv_layers(output, output_lengths)
        else:
            for conv_layer in self.conv_layers:
                output, output_lengths = conv_layer(output, output_lengths)
        output = self.se_layer(output, output_lengths)
        if self.residual is not None:
            residual, _ = self.residual(inputs, input_lengths)
            output += residual
        return self.swish(output), output_lengths

    @staticmethod
    def make_conv_blocks(input_dim, num_layers, kernel_size, num_channels, output_dim):
        """make_conv_blocks' C0 / residual stride-1 / residual stride-2 / C22 pattern, one block of each."""
        blocks = nn.ModuleList()
        blocks.append(ContextNetBlock(input_dim, num_channels, 1, kernel_size, 1, 0, False))
        blocks.append(ContextNetBlock(num_channels, num_channels, num_layers, kernel_size, 1, 0, True))
        blocks.append(ContextNetBlock(num_channels, num_channels, num_layers, kernel_size, 2, 0, True))
        blocks.append(ContextNetBlock(num_channels, output_dim, 1, kernel_size, 1, 0, False))
        return blocks


class ContextNetEncoder(nn.Module):
    supported_models = {"small": 0.5, "medium": 1, "large": 2}

    def __init__(self, num_classes, model_size="medium", input_dim=80, num_layers=5, kernel_size=5,
                 num_channels=256, output_dim=640, joint_ctc_attention=False):
        super().__init__()
        alpha = self.supported_models[model_size]
        num_channels = int(num_channels * alpha)
        output_dim = int(output_dim * alpha)
        self.joint_ctc_attention = joint_ctc_attention
        self.blocks = ContextNetBlock.make_conv_blocks(input_dim, num_layers, kernel_size, num_channels, output_dim)
        if self.joint_ctc_attention:
            self.fc = nn.Linear(output_dim, num_classes, bias=False)

    def forward(self, inputs, input_lengths):
        encoder_logits = None
        output = inputs.transpose(1, 2)
        output_lengths = input_lengths
        for block in self.blocks:
            output, output_lengths = block(output, output_lengths)
        output = output.transpose(1, 2)
        if self.joint_ctc_attention:
            encoder_logits = self.fc(output).log_softmax(dim=2)
        return output, encoder_logits, output_lengths


def contextnet_ctc(out, targets):
    """openspeech's CTC criterion on the encoder's log probabilities: (T, B, C), blank 0."""
    _, encoder_logits, output_lengths = out
    target_lengths = torch.full((targets.shape[0],), targets.shape[1], dtype=torch.long)
    return F.ctc_loss(encoder_logits.transpose(0, 1), targets, output_lengths, target_lengths,
                      blank=0, reduction="mean", zero_infinity=True)


def b_contextnet():
    vocab, batch, frames = 10, 2, 20
    model = ContextNetEncoder(num_classes=vocab, model_size="medium", input_dim=16, num_layers=2, kernel_size=5,
                              num_channels=32, output_dim=40, joint_ctc_attention=True)
    inputs = randn(batch, frames, 16, seed=3)
    input_lengths = torch.tensor([20, 17], dtype=torch.long)
    targets = randint(vocab - 1, batch, 3, seed=4) + 1
    return dict(model=model, inputs=(inputs, input_lengths), target=targets, loss=contextnet_ctc)


# ---------------------------------------------------------------------------------------
# Wukong as clabrugere/wukong-recommendation writes it in PyTorch: model/pytorch/wukong.py
# (LinearCompressBlock, FactorizationMachineBlock, ResidualProjection, WukongLayer, Wukong),
# model/pytorch/embedding.py (Embedding, renamed WukongEmbedding here so that its class name is
# not read as torch's nn.Embedding) and model/pytorch/mlp.py (MLP, an nn.Sequential). Kept as
# the reference has it: one shared nn.Embedding table for all sparse features; the weights as
# bare Parameters used by permute / @ / permute; concat order (fmb, lcb); and Wukong passing
# `dropout` positionally into MLP's batch_norm slot for the projection_head, so the head has no
# BatchNorm1d (dropout 0.0). Scaled down: batch 8, 6 sparse features over a 50-id table, 3
# dense features, dim_emb 8, 3 WukongLayers (the first 9 -> 8 embeddings with a
# ResidualProjection, the others nn.Identity), num_emb_lcb = num_emb_fmb = 4, rank 4, MLPs of
# 2 layers with 16 hidden. BCE with logits on the single logit.


class MLP(nn.Sequential):
    def __init__(self, dim_in, num_hidden, dim_hidden, dim_out=None, batch_norm=True, dropout=0.0):
        layers = []
        for _ in range(num_hidden - 1):
            layers.append(nn.Linear(dim_in, dim_hidden))
            if batch_norm:
                layers.append(nn.BatchNorm1d(dim_hidden))
            layers.append(nn.ReLU())
            layers.append(nn.Dropout(dropout))
            dim_in = dim_hidden
        layers.append(nn.Linear(dim_in, dim_out if dim_out else dim_hidden))
        super().__init__(*layers)


class WukongEmbedding(nn.Module):
    def __init__(self, num_sparse_emb, dim_emb, dim_input_dense, bias=True):
        super().__init__()
        self.dim_emb = dim_emb
        self.dim_input_dense = dim_input_dense
        self.sparse_embedding = nn.Embedding(num_sparse_emb, dim_emb)
        self.dense_embedding = nn.Linear(dim_input_dense, dim_input_dense * dim_emb, bias=bias)

    def forward(self, sparse_inputs, dense_inputs):
        sparse_outputs = self.sparse_embedding(sparse_inputs)
        dense_outputs = self.dense_embedding(dense_inputs).view(-1, self.dim_input_dense, self.dim_emb)
        return torch.cat([sparse_outputs, dense_outputs], dim=1)


class LinearCompressBlock(nn.Module):
    def __init__(self, num_emb_in, num_emb_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty((num_emb_in, num_emb_out)))
        nn.init.kaiming_uniform_(self.weight)

    def forward(self, inputs):
        outputs = inputs.permute(0, 2, 1)      # (bs, dim_emb, num_emb_in)
        outputs = outputs @ self.weight         # (bs, dim_emb, num_emb_out)
        return outputs.permute(0, 2, 1)         # (bs, num_emb_out, dim_emb)


class FactorizationMachineBlock(nn.Module):
    def __init__(self, num_emb_in, num_emb_out, dim_emb, rank, num_hidden, dim_hidden, dropout):
        super().__init__()
        self.num_emb_in = num_emb_in
        self.num_emb_out = num_emb_out
        self.dim_emb = dim_emb
        self.rank = rank
        self.weight = nn.Parameter(torch.empty((num_emb_in, rank)))
        self.norm = nn.LayerNorm(num_emb_in * rank)
        self.mlp = MLP(dim_in=num_emb_in * rank, num_hidden=num_hidden, dim_hidden=dim_hidden,
                       dim_out=num_emb_out * dim_emb, dropout=dropout)
        nn.init.kaiming_uniform_(self.weight)

    def forward(self, inputs):
        outputs = inputs.permute(0, 2, 1)                     # (bs, dim_emb, num_emb_in)
        outputs = outputs @ self.weight                        # (bs, dim_emb, rank)
        outputs = torch.bmm(inputs, outputs)                   # (bs, num_emb_in, rank): X X^T W
        outputs = outputs.view(-1, self.num_emb_in * self.rank)
        outputs = self.mlp(self.norm(outputs))
        return outputs.view(-1, self.num_emb_out, self.dim_emb)


class ResidualProjection(nn.Module):
    def __init__(self, num_emb_in, num_emb_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty((num_emb_in, num_emb_out)))
        nn.init.kaiming_uniform_(self.weight)

    def forward(self, inputs):
        outputs = inputs.permute(0, 2, 1)
        outputs = outputs @ self.weight
        return outputs.permute(0, 2, 1)


class WukongLayer(nn.Module):
    def __init__(self, num_emb_in, dim_emb, num_emb_lcb, num_emb_fmb, rank_fmb, num_hidden, dim_hidden, dropout):
        super().__init__()
        self.lcb = LinearCompressBlock(num_emb_in, num_emb_lcb)
        self.fmb = FactorizationMachineBlock(num_emb_in, num_emb_fmb, dim_emb, rank_fmb, num_hidden, dim_hidden,
                                             dropout)
        self.norm = nn.LayerNorm(dim_emb)
        if num_emb_in != num_emb_lcb + num_emb_fmb:
            self.residual_projection = ResidualProjection(num_emb_in, num_emb_lcb + num_emb_fmb)
        else:
            self.residual_projection = nn.Identity()

    def forward(self, inputs):
        lcb = self.lcb(inputs)
        fmb = self.fmb(inputs)
        outputs = torch.concat((fmb, lcb), dim=1)
        return self.norm(outputs + self.residual_projection(inputs))


class Wukong(nn.Module):
    def __init__(self, num_layers, num_sparse_emb, dim_emb, dim_input_sparse, dim_input_dense, num_emb_lcb,
                 num_emb_fmb, rank_fmb, num_hidden_wukong, dim_hidden_wukong, num_hidden_head, dim_hidden_head,
                 dim_output, dropout=0.0):
        super().__init__()
        self.dim_emb = dim_emb
        self.num_emb_lcb = num_emb_lcb
        self.num_emb_fmb = num_emb_fmb
        self.embedding = WukongEmbedding(num_sparse_emb, dim_emb, dim_input_dense)
        num_emb_in = dim_input_sparse + dim_input_dense
        self.interaction_layers = nn.Sequential()
        for _ in range(num_layers):
            self.interaction_layers.append(
                WukongLayer(num_emb_in, dim_emb, num_emb_lcb, num_emb_fmb, rank_fmb, num_hidden_wukong,
                            dim_hidden_wukong, dropout))
            num_emb_in = num_emb_lcb + num_emb_fmb
        # as the reference calls it: dropout lands in MLP's batch_norm argument
        self.projection_head = MLP((num_emb_lcb + num_emb_fmb) * dim_emb, num_hidden_head, dim_hidden_head,
                                   dim_output, dropout)

    def forward(self, sparse_inputs, dense_inputs):
        outputs = self.embedding(sparse_inputs, dense_inputs)
        outputs = self.interaction_layers(outputs)
        outputs = outputs.view(-1, (self.num_emb_lcb + self.num_emb_fmb) * self.dim_emb)
        return self.projection_head(outputs)


def bce_logits(out, target):
    return F.binary_cross_entropy_with_logits(out, target)


def b_wukong():
    batch, n_sparse, vocab, n_dense = 8, 6, 50, 3
    model = Wukong(num_layers=3, num_sparse_emb=vocab, dim_emb=8, dim_input_sparse=n_sparse,
                   dim_input_dense=n_dense, num_emb_lcb=4, num_emb_fmb=4, rank_fmb=4, num_hidden_wukong=2,
                   dim_hidden_wukong=16, num_hidden_head=2, dim_hidden_head=16, dim_output=1, dropout=0.0)
    sparse = randint(vocab, batch, n_sparse, seed=3)
    dense = torch.rand(batch, n_dense, generator=torch.Generator().manual_seed(5))
    target = (torch.rand(batch, 1, generator=torch.Generator().manual_seed(6)) > 0.5).float()
    return dict(model=model, inputs=(sparse, dense), target=target, loss=bce_logits)


REGISTRY = [
    ("contextnet_lite", "speech", "adam", b_contextnet),
    ("wukong_recsys", "recsys", "adam", b_wukong),
]
