#!/usr/bin/env python3
"""Record Strata's seventh variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on the other variants corpora; this script records
tests/data/corpus-cpu-variants7, recorded after the rules, to measure them once on models they
were not written on, then to be tuned on as the other variants are: DeepCTR-Torch's PNN (field
embeddings, an InnerProductLayer and an OutterProductLayer of pairwise products by index
lists, a DNN of Linears, ReLU modules and dropout, a PredictionLayer), FuxiCTR's Deep Crossing
(a FeatureEmbedding of per-field tables stacked, residual blocks that call one activation
module twice, a scoring Linear, a Sigmoid output module), RecBole's Caser (a vertical conv and
a ModuleList of horizontal convs max-pooled functionally, fc1, the user embedding, fc2) and
GRU4Rec fed a PackedSequence (pack, a 2-layer GRU, unpack, dense, the last position
gathered), a ChebNet of PyG-style ChebConvs written by hand (one Linear per Chebyshev order,
the recursion over a scaled Laplacian by torch.sparse.mm), a JK-Net (hand-written GCN layers,
each output kept, PyG's JumpingKnowledge concatenation, a final Linear), dreamquark's TabNet
(ghost batch norm, shared and step-specific GLU blocks, attentive transformers with a
hand-written sparsemax, the mask entropy loss) and THU-MIG's RepViT (Conv2d_BN Sequentials,
RepVGGDW token mixers, timm SqueezeExcite, Residual channel mixers, BN_Linear head).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants7.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants7.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants7.
"""

import math
import os
import sys
from collections import OrderedDict
from functools import partial  # noqa: F401  (FuxiCTR eval()s the initializer string "partial(...)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, randint, randn  # noqa: E402
from record_cpu_fresh import (DeepCTRBase, DeepCTRLinear, bce_prob, combined_dnn_input, ctr_input,  # noqa: E402
                              gcn_norm_dense_to_sparse, nll, random_edges)
from record_cpu_variants import DNN  # noqa: E402  (DeepCTR-Torch's DNN: ReLU(inplace=True) modules)
from record_cpu_variants2 import SEModule  # noqa: E402  (timm's SEModule, alias SqueezeExcite)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.autograd import Function  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# PNN as DeepCTR-Torch writes it (deepctr_torch/models/pnn.py, use_inner and use_outter both
# on, kernel_type "mat"): the BaseModel parts (DeepCTRBase here: embedding_dict, an
# nn.ModuleDict of one nn.Embedding per sparse field looked up with X[:, i:i+1].long();
# linear_model, BaseModel's Linear over linear_feature_columns=[], so no tables and never
# called; out, the PredictionLayer: bias added in place, sigmoid), innerproduct
# (InnerProductLayer: row/col index lists, cat, mul, sum over the embedding), outterproduct
# (OutterProductLayer: the same cats, unsqueeze_, mul with the (k, pairs, k) kernel, sum,
# transpose, mul, sum), dnn (DNN: linears, activation_layers of ReLU(inplace=True), one
# dropout module called after each), dnn_linear (no bias). The linear signal is the flattened
# concat_fun of the embeddings; cat with both products, combined_dnn_input with the dense
# values. BCE on the sigmoid output.


def concat_fun(inputs, axis=-1):
    if len(inputs) == 1:
        return inputs[0]
    else:
        return torch.cat(inputs, dim=axis)


class InnerProductLayer(nn.Module):
    def __init__(self, reduce_sum=True):
        super().__init__()
        self.reduce_sum = reduce_sum

    def forward(self, inputs):
        embed_list = inputs
        row = []
        col = []
        num_inputs = len(embed_list)
        for i in range(num_inputs - 1):
            for j in range(i + 1, num_inputs):
                row.append(i)
                col.append(j)
        p = torch.cat([embed_list[idx] for idx in row], dim=1)  # batch num_pairs k
        q = torch.cat([embed_list[idx] for idx in col], dim=1)
        inner_product = p * q
        if self.reduce_sum:
            inner_product = torch.sum(inner_product, dim=2, keepdim=True)
        return inner_product


class OutterProductLayer(nn.Module):
    def __init__(self, field_size, embedding_size, kernel_type="mat"):
        super().__init__()
        self.kernel_type = kernel_type
        num_inputs = field_size
        num_pairs = int(num_inputs * (num_inputs - 1) / 2)
        embed_size = embedding_size
        if self.kernel_type == "mat":
            self.kernel = nn.Parameter(torch.Tensor(embed_size, num_pairs, embed_size))
        elif self.kernel_type == "vec":
            self.kernel = nn.Parameter(torch.Tensor(num_pairs, embed_size))
        elif self.kernel_type == "num":
            self.kernel = nn.Parameter(torch.Tensor(num_pairs, 1))
        nn.init.xavier_uniform_(self.kernel)

    def forward(self, inputs):
        embed_list = inputs
        row = []
        col = []
        num_inputs = len(embed_list)
        for i in range(num_inputs - 1):
            for j in range(i + 1, num_inputs):
                row.append(i)
                col.append(j)
        p = torch.cat([embed_list[idx] for idx in row], dim=1)  # batch num_pairs k
        q = torch.cat([embed_list[idx] for idx in col], dim=1)
        if self.kernel_type == "mat":
            p.unsqueeze_(dim=1)
            # batch * k * pair * k -> batch * k * pair -> batch * pair * k -> batch * pair
            kp = torch.sum(torch.mul(torch.transpose(torch.sum(torch.mul(p, self.kernel), dim=-1), 2, 1), q), dim=-1)
        else:
            k = torch.unsqueeze(self.kernel, 0)
            kp = torch.sum(p * q * k, dim=-1)
        return kp


class PNN(DeepCTRBase):
    def __init__(self, sparse_vocab=(50, 40, 30, 60, 20, 10), n_dense=2, embedding_size=8, dnn_hidden_units=(64, 32),
                 init_std=0.0001, dnn_dropout=0.0, use_inner=True, use_outter=True, kernel_type="mat"):
        super().__init__(sparse_vocab, n_dense, embedding_size, init_std)
        self.linear_model = DeepCTRLinear((), 0)  # Linear([], ...): an empty embedding_dict, no weight
        self.use_inner = use_inner
        self.use_outter = use_outter
        self.kernel_type = kernel_type
        product_out_dim = 0
        num_inputs = len(sparse_vocab)  # compute_input_dim(..., include_dense=False, feature_group=True)
        num_pairs = int(num_inputs * (num_inputs - 1) / 2)
        if self.use_inner:
            product_out_dim += num_pairs
            self.innerproduct = InnerProductLayer()
        if self.use_outter:
            product_out_dim += num_pairs
            self.outterproduct = OutterProductLayer(num_inputs, embedding_size, kernel_type=kernel_type)
        self.dnn = DNN(product_out_dim + num_inputs * embedding_size + n_dense, dnn_hidden_units,
                       dropout_rate=dnn_dropout)
        for name, tensor in self.dnn.linears.named_parameters():
            if "weight" in name:
                nn.init.normal_(tensor, mean=0, std=init_std)
        self.dnn_linear = nn.Linear(dnn_hidden_units[-1], 1, bias=False)

    def forward(self, X):
        sparse_embedding_list, dense_value_list = self.input_from_feature_columns(X)
        linear_signal = torch.flatten(concat_fun(sparse_embedding_list), start_dim=1)
        if self.use_inner:
            inner_product = torch.flatten(self.innerproduct(sparse_embedding_list), start_dim=1)
        if self.use_outter:
            outer_product = self.outterproduct(sparse_embedding_list)
        if self.use_outter and self.use_inner:
            product_layer = torch.cat([linear_signal, inner_product, outer_product], dim=1)
        elif self.use_outter:
            product_layer = torch.cat([linear_signal, outer_product], dim=1)
        elif self.use_inner:
            product_layer = torch.cat([linear_signal, inner_product], dim=1)
        else:
            product_layer = linear_signal
        dnn_input = combined_dnn_input([product_layer], dense_value_list)
        dnn_output = self.dnn(dnn_input)
        dnn_logit = self.dnn_linear(dnn_output)
        logit = dnn_logit
        y_pred = self.out(logit)
        return y_pred


def b_pnn():
    x = ctr_input(64, (50, 40, 30, 60, 20, 10), 2)
    return dict(model=PNN(), inputs=(x,), target=randint(2, 64, 1, seed=3).float(), loss=bce_prob)


# ---------------------------------------------------------------------------------------
# Deep Crossing as FuxiCTR writes it (model_zoo/DeepCrossing/src/DeepCrossing.py on its
# BaseModel): output_activation (BaseModel's nn.Sigmoid for binary_classification, set first),
# embedding_layer (FeatureEmbedding = embedding_layer, a FeatureEmbeddingDict of
# embedding_layers, an nn.ModuleDict of one nn.Embedding (padding_idx 0) per categorical field
# and one Linear(1, d, bias=False) per numeric field, and an empty feature_encoders
# ModuleDict; dict2tensor stacks the fields), crossing_layer (a Sequential of ResidualBlocks:
# activation_layer, one nn.ReLU set before layer = Sequential(Linear, that same ReLU, Linear),
# so called twice a block; X_out + X, the activation again) and the scoring Linear, flattened
# input. The input is FuxiCTR's batch dict of feature tensors (get_inputs). Weights as
# reset_parameters sets them; F.binary_cross_entropy on the sigmoid output (its
# "binary_crossentropy" loss).


class FeatureMap:
    """What FuxiCTR's FeatureMap holds that the model reads: features (name -> spec, in order),
    num_fields and labels."""

    def __init__(self, vocab=(50, 40, 30, 60, 20, 10), n_numeric=2):
        self.features = OrderedDict()
        for i, v in enumerate(vocab):
            self.features[f"C{i + 1}"] = {"source": "", "type": "categorical", "vocab_size": v, "padding_idx": 0}
        for i in range(n_numeric):
            self.features[f"I{i + 1}"] = {"source": "", "type": "numeric"}
        self.num_fields = len(self.features)
        self.labels = ["label"]


class BatchDict(dict):
    """A FuxiCTR batch: feature name -> tensor. Its repr names the fields (the manifest's
    inputs)."""

    def __repr__(self):
        return "BatchDict(" + ", ".join(f"{k}: {tuple(v.shape)} {str(v.dtype).replace('torch.', '')}"
                                        for k, v in self.items()) + ")"


def not_in_whitelist(element, whitelist=[]):
    if not whitelist:
        return False
    elif type(whitelist) == list:
        return element not in whitelist
    else:
        return element != whitelist


class FeatureEmbedding(nn.Module):
    def __init__(self, feature_map, embedding_dim, embedding_initializer="partial(nn.init.normal_, std=1e-4)",
                 required_feature_columns=None, not_required_feature_columns=None, use_pretrain=True,
                 use_sharing=True):
        super().__init__()
        self.embedding_layer = FeatureEmbeddingDict(feature_map, embedding_dim,
                                                    embedding_initializer=embedding_initializer,
                                                    required_feature_columns=required_feature_columns,
                                                    not_required_feature_columns=not_required_feature_columns,
                                                    use_pretrain=use_pretrain, use_sharing=use_sharing)

    def forward(self, X, feature_source=[], feature_type=[], flatten_emb=False):
        feature_emb_dict = self.embedding_layer(X, feature_source=feature_source, feature_type=feature_type)
        feature_emb = self.embedding_layer.dict2tensor(feature_emb_dict, flatten_emb=flatten_emb)
        return feature_emb


class FeatureEmbeddingDict(nn.Module):
    def __init__(self, feature_map, embedding_dim, embedding_initializer="partial(nn.init.normal_, std=1e-4)",
                 required_feature_columns=None, not_required_feature_columns=None, use_pretrain=True,
                 use_sharing=True):
        super().__init__()
        self._feature_map = feature_map
        self.required_feature_columns = required_feature_columns
        self.not_required_feature_columns = not_required_feature_columns
        self.use_pretrain = use_pretrain
        self.embedding_initializer = eval(embedding_initializer)  # get_initializer
        self.embedding_layers = nn.ModuleDict()
        self.feature_encoders = nn.ModuleDict()
        for feature, feature_spec in self._feature_map.features.items():
            if self.is_required(feature):
                feat_dim = feature_spec.get("embedding_dim", embedding_dim)
                if use_sharing and feature_spec.get("share_embedding") in self.embedding_layers:
                    self.embedding_layers[feature] = self.embedding_layers[feature_spec["share_embedding"]]
                    continue
                if feature_spec["type"] == "numeric":
                    self.embedding_layers[feature] = nn.Linear(1, feat_dim, bias=False)
                elif feature_spec["type"] in ["categorical", "sequence"]:
                    padding_idx = feature_spec.get("padding_idx", None)
                    self.embedding_layers[feature] = nn.Embedding(feature_spec["vocab_size"], feat_dim,
                                                                  padding_idx=padding_idx)
        self.init_weights()

    def init_weights(self):
        for k, v in self.embedding_layers.items():
            if "share_embedding" in self._feature_map.features[k]:
                continue
            if type(v) == nn.Embedding:
                if v.padding_idx is not None:
                    self.embedding_initializer(v.weight[1:, :])  # set padding_idx to zero
                else:
                    self.embedding_initializer(v.weight)

    def is_required(self, feature):
        feature_spec = self._feature_map.features[feature]
        if feature_spec["type"] == "meta":
            return False
        elif self.required_feature_columns and (feature not in self.required_feature_columns):
            return False
        elif self.not_required_feature_columns and (feature in self.not_required_feature_columns):
            return False
        else:
            return True

    def dict2tensor(self, embedding_dict, flatten_emb=False, feature_list=[], feature_source=[], feature_type=[]):
        feature_emb_list = []
        for feature, feature_spec in self._feature_map.features.items():
            if feature_list and not_in_whitelist(feature, feature_list):
                continue
            if feature_source and not_in_whitelist(feature_spec["source"], feature_source):
                continue
            if feature_type and not_in_whitelist(feature_spec["type"], feature_type):
                continue
            if feature in embedding_dict:
                feature_emb_list.append(embedding_dict[feature])
        if flatten_emb:
            feature_emb = torch.cat(feature_emb_list, dim=-1)
        else:
            feature_emb = torch.stack(feature_emb_list, dim=1)
        return feature_emb

    def forward(self, inputs, feature_source=[], feature_type=[]):
        feature_emb_dict = OrderedDict()
        for feature in inputs.keys():
            feature_spec = self._feature_map.features[feature]
            if feature_source and not_in_whitelist(feature_spec["source"], feature_source):
                continue
            if feature_type and not_in_whitelist(feature_spec["type"], feature_type):
                continue
            if feature in self.embedding_layers:
                if feature_spec["type"] == "numeric":
                    inp = inputs[feature].float().view(-1, 1)
                    embeddings = self.embedding_layers[feature](inp)
                elif feature_spec["type"] == "categorical":
                    inp = inputs[feature].long()
                    embeddings = self.embedding_layers[feature](inp)
                else:
                    raise NotImplementedError
                if feature in self.feature_encoders:
                    embeddings = self.feature_encoders[feature](embeddings)
                feature_emb_dict[feature] = embeddings
        return feature_emb_dict


def get_activation(activation):
    """fuxictr.pytorch.torch_utils.get_activation, the names used here."""
    if activation.lower() == "relu":
        return nn.ReLU()
    elif activation.lower() == "sigmoid":
        return nn.Sigmoid()
    elif activation.lower() == "tanh":
        return nn.Tanh()
    raise NotImplementedError(activation)


class ResidualBlock(nn.Module):
    def __init__(self, input_dim, hidden_dim, hidden_activation="ReLU", dropout_rate=0, use_residual=True,
                 batch_norm=False):
        super().__init__()
        self.activation_layer = get_activation(hidden_activation)
        self.layer = nn.Sequential(nn.Linear(input_dim, hidden_dim),
                                   self.activation_layer,
                                   nn.Linear(hidden_dim, input_dim))
        self.use_residual = use_residual
        self.batch_norm = nn.BatchNorm1d(input_dim) if batch_norm else None
        self.dropout = nn.Dropout(dropout_rate) if dropout_rate > 0 else None

    def forward(self, X):
        X_out = self.layer(X)
        if self.use_residual:
            X_out = X_out + X
        if self.batch_norm is not None:
            X_out = self.batch_norm(X_out)
        output = self.activation_layer(X_out)
        if self.dropout is not None:
            output = self.dropout(output)
        return output


class DeepCrossing(nn.Module):
    def __init__(self, feature_map, embedding_dim=8, residual_blocks=(32, 32, 32), hidden_activations="ReLU",
                 net_dropout=0, batch_norm=False, use_residual=True):
        super().__init__()
        self.device = torch.device("cpu")  # get_device(gpu=-1)
        self.feature_map = feature_map
        self.output_activation = nn.Sigmoid()  # BaseModel.get_output_activation("binary_classification")
        self.embedding_layer = FeatureEmbedding(feature_map, embedding_dim)
        if not isinstance(hidden_activations, list):
            hidden_activations = [hidden_activations] * len(residual_blocks)
        layers = []
        input_dim = feature_map.num_fields * embedding_dim
        for hidden_dim, hidden_activation in zip(residual_blocks, hidden_activations):
            layers.append(ResidualBlock(input_dim, hidden_dim, hidden_activation, net_dropout, use_residual,
                                        batch_norm))
        layers.append(nn.Linear(input_dim, 1))
        self.crossing_layer = nn.Sequential(*layers)  # * used to unpack list
        self.reset_parameters()

    def reset_parameters(self):
        def default_reset_params(m):
            if type(m) in [nn.Linear, nn.Conv1d]:
                nn.init.xavier_normal_(m.weight)
                if m.bias is not None:
                    m.bias.data.fill_(0)

        def custom_reset_params(m):
            if hasattr(m, "init_weights"):
                m.init_weights()

        self.apply(default_reset_params)
        self.apply(custom_reset_params)

    def get_inputs(self, inputs, feature_source=None):
        X_dict = dict()
        for feature in inputs.keys():
            if feature in self.feature_map.labels:
                continue
            spec = self.feature_map.features[feature]
            if spec["type"] == "meta":
                continue
            if feature_source and not_in_whitelist(spec["source"], feature_source):
                continue
            X_dict[feature] = inputs[feature].to(self.device)
        return X_dict

    def forward(self, inputs):
        X = self.get_inputs(inputs)
        feature_emb = self.embedding_layer(X)
        y_pred = self.crossing_layer(feature_emb.flatten(start_dim=1))
        y_pred = self.output_activation(y_pred)
        return_dict = {"y_pred": y_pred}
        return return_dict


def fuxictr_bce(return_dict, y_true):
    return F.binary_cross_entropy(return_dict["y_pred"], y_true, reduction="mean")


def fuxictr_inputs(fmap, batch):
    """A batch of FuxiCTR's feature dict: ids per categorical field (0 is the padding id), values per numeric one."""
    g = torch.Generator().manual_seed(1)
    X = BatchDict()
    for name, spec in fmap.features.items():
        if spec["type"] == "categorical":
            X[name] = torch.randint(1, spec["vocab_size"], (batch,), generator=g)
        else:
            X[name] = torch.rand(batch, generator=g)
    return X


def b_deep_crossing():
    fmap, batch = FeatureMap(), 64
    return dict(model=DeepCrossing(fmap), inputs=(fuxictr_inputs(fmap, batch),), target=randint(2, batch, 1, seed=3).float(),
                loss=fuxictr_bce)


# ---------------------------------------------------------------------------------------
# Caser as RecBole writes it (recbole/model/sequential_recommender/caser.py): user_embedding,
# item_embedding (padding_idx 0), conv_v (Conv2d over the whole sequence length, one column),
# conv_h (a ModuleList of Conv2d of heights 1..L over the full embedding width), fc1, fc2,
# dropout, ac_conv and ac_fc (ReLU modules; ac_fc called twice). forward: the item embeddings
# unsqueezed to one channel, conv_v viewed flat; per horizontal conv ac_conv, then
# F.max_pool1d over the whole length, squeeze; cat, dropout, ac_fc(fc1), cat with the user
# embedding, ac_fc(fc2). calculate_loss's CE branch, the loss here: scores against every item
# embedding (matmul with item_embedding.weight), cross entropy, plus reg_weight times the
# RegLoss sum of L2 norms and reg_loss_conv_h. Weights as _init_weights sets them.


class Caser(nn.Module):
    def __init__(self, n_users=60, n_items=200, embedding_size=16, max_seq_length=5, n_h=4, n_v=2, dropout_prob=0.4,
                 reg_weight=1e-4):
        super().__init__()
        self.embedding_size = embedding_size
        self.n_h = n_h
        self.n_v = n_v
        self.dropout_prob = dropout_prob
        self.reg_weight = reg_weight
        self.n_users = n_users
        self.n_items = n_items
        self.max_seq_length = max_seq_length

        self.user_embedding = nn.Embedding(self.n_users, self.embedding_size, padding_idx=0)
        self.item_embedding = nn.Embedding(self.n_items, self.embedding_size, padding_idx=0)

        # vertical conv layer
        self.conv_v = nn.Conv2d(in_channels=1, out_channels=self.n_v, kernel_size=(self.max_seq_length, 1))

        # horizontal conv layer
        lengths = [i + 1 for i in range(self.max_seq_length)]
        self.conv_h = nn.ModuleList([
            nn.Conv2d(in_channels=1, out_channels=self.n_h, kernel_size=(i, self.embedding_size)) for i in lengths
        ])

        # fully-connected layer
        self.fc1_dim_v = self.n_v * self.embedding_size
        self.fc1_dim_h = self.n_h * len(lengths)
        fc1_dim_in = self.fc1_dim_v + self.fc1_dim_h
        self.fc1 = nn.Linear(fc1_dim_in, self.embedding_size)
        self.fc2 = nn.Linear(self.embedding_size + self.embedding_size, self.embedding_size)

        self.dropout = nn.Dropout(self.dropout_prob)
        self.ac_conv = nn.ReLU()
        self.ac_fc = nn.ReLU()
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight.data, 0, 1.0 / module.embedding_dim)
        elif isinstance(module, nn.Linear):
            nn.init.xavier_normal_(module.weight.data)
            if module.bias is not None:
                nn.init.constant_(module.bias.data, 0)

    def forward(self, user, item_seq):
        # Embedding Look-up
        item_seq_emb = self.item_embedding(item_seq).unsqueeze(1)
        user_emb = self.user_embedding(user).squeeze(1)

        # Convolutional Layers
        out, out_h, out_v = None, None, None
        # vertical conv layer
        if self.n_v:
            out_v = self.conv_v(item_seq_emb)
            out_v = out_v.view(-1, self.fc1_dim_v)  # prepare for fully connect

        # horizontal conv layer
        out_hs = list()
        if self.n_h:
            for conv in self.conv_h:
                conv_out = self.ac_conv(conv(item_seq_emb).squeeze(3))
                pool_out = F.max_pool1d(conv_out, conv_out.size(2)).squeeze(2)
                out_hs.append(pool_out)
            out_h = torch.cat(out_hs, 1)  # prepare for fully connect

        # Fully-connected Layers
        out = torch.cat([out_v, out_h], 1)
        # apply dropout
        out = self.dropout(out)
        # fully-connected layer
        z = self.ac_fc(self.fc1(out))
        x = torch.cat([z, user_emb], 1)
        seq_output = self.ac_fc(self.fc2(x))
        # the hidden_state of the predicted item, size:(batch_size * hidden_size)
        return seq_output

    def reg_loss_conv_h(self):
        loss_conv_h = 0
        for name, parm in self.conv_h.named_parameters():
            if name.endswith("weight"):
                loss_conv_h = loss_conv_h + parm.norm(2)
        return self.reg_weight * loss_conv_h


def reg_loss(parameters):
    """RecBole's RegLoss: the sum of the parameters' L2 norms."""
    reg_loss = None
    for W in parameters:
        if reg_loss is None:
            reg_loss = W.norm(2)
        else:
            reg_loss = reg_loss + W.norm(2)
    return reg_loss


def caser_loss(model):
    def loss(seq_output, pos_items):
        test_item_emb = model.item_embedding.weight
        logits = torch.matmul(seq_output, test_item_emb.transpose(0, 1))
        loss = F.cross_entropy(logits, pos_items)
        reg = reg_loss([model.user_embedding.weight, model.item_embedding.weight, model.conv_v.weight,
                        model.fc1.weight, model.fc2.weight])
        return loss + model.reg_weight * reg + model.reg_loss_conv_h()

    return loss


def b_caser():
    batch, length = 16, 5
    item_seq = randint(199, batch, length) + 1
    item_seq[::4, :2] = 0  # RecBole pads a short history with item 0
    model = Caser(max_seq_length=length)
    return dict(model=model, inputs=(randint(59, batch, seed=4) + 1, item_seq), target=randint(199, batch, seed=3) + 1,
                loss=caser_loss(model))


# ---------------------------------------------------------------------------------------
# GRU4Rec as RecBole writes it (recbole/model/sequential_recommender/gru4rec.py), fed a
# PackedSequence: item_embedding (padding_idx 0), emb_dropout, gru_layers (nn.GRU, 2 layers,
# bias=False, batch_first), dense. forward: embed, emb_dropout, pack_padded_sequence by the
# history lengths (enforce_sorted=False), the GRU, pad_packed_sequence back to the padded
# length, dense, gather_indexes at length - 1 (SequentialRecommender's gather). The CE loss
# as calculate_loss computes it: scores against item_embedding.weight, cross entropy.


class GRU4Rec(nn.Module):
    def __init__(self, n_items=200, embedding_size=32, hidden_size=32, num_layers=2, dropout_prob=0.3):
        super().__init__()
        self.n_items = n_items
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.dropout_prob = dropout_prob

        self.item_embedding = nn.Embedding(self.n_items, self.embedding_size, padding_idx=0)
        self.emb_dropout = nn.Dropout(self.dropout_prob)
        self.gru_layers = nn.GRU(input_size=self.embedding_size, hidden_size=self.hidden_size,
                                 num_layers=self.num_layers, bias=False, batch_first=True)
        self.dense = nn.Linear(self.hidden_size, self.embedding_size)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Embedding):
            nn.init.xavier_normal_(module.weight)
        elif isinstance(module, nn.GRU):
            nn.init.xavier_uniform_(module.weight_hh_l0)
            nn.init.xavier_uniform_(module.weight_ih_l0)

    def gather_indexes(self, output, gather_index):
        """Gathers the vectors at the specific positions over a minibatch"""
        gather_index = gather_index.view(-1, 1, 1).expand(-1, -1, output.shape[-1])
        output_tensor = output.gather(dim=1, index=gather_index)
        return output_tensor.squeeze(1)

    def forward(self, item_seq, item_seq_len):
        item_seq_emb = self.item_embedding(item_seq)
        item_seq_emb_dropout = self.emb_dropout(item_seq_emb)
        packed = pack_padded_sequence(item_seq_emb_dropout, item_seq_len.cpu(), batch_first=True,
                                      enforce_sorted=False)
        gru_output, _ = self.gru_layers(packed)
        gru_output, _ = pad_packed_sequence(gru_output, batch_first=True, total_length=item_seq.size(1))
        gru_output = self.dense(gru_output)
        # the embedding of the predicted item, shape of (batch_size, embedding_size)
        seq_output = self.gather_indexes(gru_output, item_seq_len - 1)
        return seq_output


def gru4rec_loss(model):
    def loss(seq_output, pos_items):
        test_item_emb = model.item_embedding.weight
        logits = torch.matmul(seq_output, test_item_emb.transpose(0, 1))
        return F.cross_entropy(logits, pos_items)

    return loss


def b_gru4rec():
    batch, length = 16, 10
    item_seq_len = randint(length - 1, batch, seed=5) + 2  # 2..10
    item_seq = randint(199, batch, length) + 1
    item_seq[torch.arange(length)[None, :] >= item_seq_len[:, None]] = 0  # RecBole pads on the right
    model = GRU4Rec()
    return dict(model=model, inputs=(item_seq, item_seq_len), target=randint(199, batch, seed=3) + 1,
                loss=gru4rec_loss(model))


# ---------------------------------------------------------------------------------------
# ChebNet: PyG's benchmark/citation/cheb.py Net (conv1, F.relu, F.dropout, conv2, log_softmax;
# NLL on the training nodes) over ChebConv as PyG writes it, without PyG: lins, a ModuleList of
# K=3 bias-free Linears (glorot), and bias; Tx_0 = x, lins[0]; Tx_1 = L x, lins[1]; then for the
# rest Tx_2 = 2 L Tx_1 - Tx_0 and, as PyG does, lin.forward(Tx_2) (called directly, so the
# third Linear has no range of its own); the bias added. propagate (norm * x_j summed) is
# torch.sparse.mm with the scaled Laplacian 2L/lambda_max - I = -D^-1/2 A D^-1/2 (sym
# normalisation, lambda_max 2), made once before training instead of in every call.


class ChebConv(nn.Module):
    def __init__(self, in_channels, out_channels, K, bias=True):
        super().__init__()
        assert K > 0
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.lins = nn.ModuleList([nn.Linear(in_channels, out_channels, bias=False) for _ in range(K)])
        if bias:
            self.bias = nn.Parameter(torch.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        for lin in self.lins:
            nn.init.xavier_uniform_(lin.weight)  # PyG Linear(weight_initializer='glorot')
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x, lap):
        Tx_0 = x
        Tx_1 = x  # Dummy.
        out = self.lins[0](Tx_0)

        if len(self.lins) > 1:
            Tx_1 = torch.sparse.mm(lap, x)
            out = out + self.lins[1](Tx_1)

        for lin in self.lins[2:]:
            Tx_2 = torch.sparse.mm(lap, Tx_1)
            Tx_2 = 2. * Tx_2 - Tx_0
            out = out + lin.forward(Tx_2)
            Tx_0, Tx_1 = Tx_1, Tx_2

        if self.bias is not None:
            out = out + self.bias

        return out


class ChebNet(nn.Module):
    def __init__(self, num_features=16, hidden=16, num_classes=4, num_hops=3, dropout=0.5):
        super().__init__()
        self.dropout = dropout
        self.conv1 = ChebConv(num_features, hidden, num_hops)
        self.conv2 = ChebConv(hidden, num_classes, num_hops)

    def forward(self, x, lap):
        x = F.relu(self.conv1(x, lap))
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.conv2(x, lap)
        return F.log_softmax(x, dim=1)


def scaled_laplacian(edge_index, num_nodes):
    """PyG ChebConv.__norm__ with normalization 'sym' and lambda_max 2: 2(I - D^-1/2 A D^-1/2)/2 - I,
    i.e. -D^-1/2 A D^-1/2 off the diagonal, a zero diagonal."""
    row, col = edge_index
    w = torch.ones(row.numel())
    deg = torch.zeros(num_nodes).index_add_(0, row, w)
    dinv = deg.pow(-0.5)
    dinv.masked_fill_(dinv == float("inf"), 0)
    val = -dinv[row] * w * dinv[col]
    return torch.sparse_coo_tensor(torch.stack([col, row]), val, (num_nodes, num_nodes)).coalesce()


def masked_nll(out, target):
    y, train_mask = target
    return nll(out[train_mask], y[train_mask])


def b_chebnet():
    n = 30
    lap = scaled_laplacian(random_edges(n, 60, seed=4), n)
    train_mask = torch.arange(n) % 3 != 2
    return dict(model=ChebNet(), inputs=(randn(n, 16), lap), target=(randint(4, n, seed=3), train_mask),
                loss=masked_nll)


# ---------------------------------------------------------------------------------------
# A node-classification JK-Net (Xu et al.) as PyG code writes it, without PyG: convs, a
# ModuleList of GCNConv (lin, a bias-free Linear, then propagate over the cached
# D^-1/2 (A + I) D^-1/2, torch.sparse.mm here, then the bias); in the model's forward F.relu and
# F.dropout after each conv, every layer's output kept in xs (as GCNWithJK in PyG's
# benchmark/kernel/gcn.py keeps them); jump, PyG's JumpingKnowledge in 'cat' mode (torch.cat,
# no submodules), then the final lin. Cross entropy on the logits.


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels, bias=True):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        if bias:
            self.bias = nn.Parameter(torch.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.xavier_uniform_(self.lin.weight)  # PyG Linear(weight_initializer='glorot')
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x, adj_t):
        x = self.lin(x)
        out = torch.sparse.mm(adj_t, x)  # message_and_aggregate(adj_t, x)
        if self.bias is not None:
            out = out + self.bias
        return out


class JumpingKnowledge(nn.Module):
    def __init__(self, mode, channels=None, num_layers=None):
        super().__init__()
        self.mode = mode.lower()
        assert self.mode in ["cat", "max"]  # the 'lstm' mode (an LSTM and an att Linear) is not used here
        self.lstm = None
        self.att = None
        self.channels = None
        self.num_layers = None

    def forward(self, xs):
        if self.mode == "cat":
            return torch.cat(xs, dim=-1)
        else:  # self.mode == 'max'
            return torch.stack(xs, dim=-1).max(dim=-1)[0]


class JKNet(nn.Module):
    def __init__(self, in_channels=16, hidden=16, num_classes=4, num_layers=3, mode="cat", dropout=0.5):
        super().__init__()
        self.dropout = dropout
        self.convs = nn.ModuleList()
        for i in range(num_layers):
            self.convs.append(GCNConv(in_channels if i == 0 else hidden, hidden))
        self.jump = JumpingKnowledge(mode)
        if mode == "cat":
            self.lin = nn.Linear(num_layers * hidden, num_classes)
        else:
            self.lin = nn.Linear(hidden, num_classes)

    def forward(self, x, adj_t):
        xs = []
        for conv in self.convs:
            x = F.relu(conv(x, adj_t))
            x = F.dropout(x, p=self.dropout, training=self.training)
            xs += [x]
        x = self.jump(xs)
        return self.lin(x)


def b_jknet():
    n = 40
    adj_t = gcn_norm_dense_to_sparse(random_edges(n, 80, seed=6), n)
    return dict(model=JKNet(), inputs=(randn(n, 16), adj_t), target=randint(4, n, seed=3), loss=ce)


# ---------------------------------------------------------------------------------------
# TabNet as dreamquark's pytorch-tabnet writes it (pytorch_tabnet/tab_network.py and
# sparsemax.py, TabNetClassifier's network): TabNet = embedder (EmbeddingGenerator: an
# nn.Embedding per categorical column in a ModuleList, cat with the continuous columns) and
# tabnet (TabNetNoEmbeddings: initial_bn, registered but never called; encoder; final_mapping,
# a bias-free Linear; the steps' outputs summed by torch.sum(torch.stack)). TabNetEncoder:
# initial_bn (BatchNorm1d, called), initial_splitter and per step feat_transformers[step]
# (FeatTransformer: shared, a GLU_Block over the encoder's shared Linears, which it registers
# as shared_layers, and specifics, a GLU_Block of its own), att_transformers[step]
# (AttentiveTransformer: fc, bn a GBN, the prior multiplied in, selector a Sparsemax module
# whose SparsemaxFunction is a hand-written autograd Function). GLU_Layer: fc (shared or own,
# no bias), bn (GBN: x.chunk into virtual batches, one BatchNorm1d over each, cat), the gate
# x[:, :d] * sigmoid(x[:, d:]) by hand; GLU_Block sums each layer into its input, times
# sqrt(0.5). The mask entropy M_loss is returned with the logits; the loss is cross entropy
# minus lambda_sparse (1e-3) times M_loss, as TabModel.train_batch computes it.


def initialize_non_glu(module, input_dim, output_dim):
    gain_value = math.sqrt((input_dim + output_dim) / math.sqrt(4 * input_dim))
    torch.nn.init.xavier_normal_(module.weight, gain=gain_value)
    return


def initialize_glu(module, input_dim, output_dim):
    gain_value = math.sqrt((input_dim + output_dim) / math.sqrt(input_dim))
    torch.nn.init.xavier_normal_(module.weight, gain=gain_value)
    return


def _make_ix_like(input, dim=0):
    d = input.size(dim)
    rho = torch.arange(1, d + 1, device=input.device, dtype=input.dtype)
    view = [1] * input.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)


class SparsemaxFunction(Function):
    @staticmethod
    def forward(ctx, input, dim=-1):
        ctx.dim = dim
        max_val, _ = input.max(dim=dim, keepdim=True)
        input -= max_val  # same numerical stability trick as for softmax
        tau, supp_size = SparsemaxFunction._threshold_and_support(input, dim=dim)
        output = torch.clamp(input - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0

        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze()
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None

    @staticmethod
    def _threshold_and_support(input, dim=-1):
        input_srt, _ = torch.sort(input, descending=True, dim=dim)
        input_cumsum = input_srt.cumsum(dim) - 1
        rhos = _make_ix_like(input, dim)
        support = rhos * input_srt > input_cumsum

        support_size = support.sum(dim=dim).unsqueeze(dim)
        tau = input_cumsum.gather(dim, support_size - 1)
        tau /= support_size.to(input.dtype)
        return tau, support_size


sparsemax = SparsemaxFunction.apply


class Sparsemax(nn.Module):
    def __init__(self, dim=-1):
        self.dim = dim
        super().__init__()

    def forward(self, input):
        return sparsemax(input, self.dim)


class GBN(nn.Module):
    """Ghost Batch Normalization https://arxiv.org/abs/1705.08741"""

    def __init__(self, input_dim, virtual_batch_size=128, momentum=0.01):
        super().__init__()
        self.input_dim = input_dim
        self.virtual_batch_size = virtual_batch_size
        self.bn = nn.BatchNorm1d(self.input_dim, momentum=momentum)

    def forward(self, x):
        chunks = x.chunk(int(math.ceil(x.shape[0] / self.virtual_batch_size)), 0)
        res = [self.bn(x_) for x_ in chunks]
        return torch.cat(res, dim=0)


class TabNetEncoder(nn.Module):
    def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3, n_independent=2, n_shared=2,
                 epsilon=1e-15, virtual_batch_size=128, momentum=0.02, mask_type="sparsemax",
                 group_attention_matrix=None):
        super().__init__()
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.is_multi_task = isinstance(output_dim, list)
        self.n_d = n_d
        self.n_a = n_a
        self.n_steps = n_steps
        self.gamma = gamma
        self.epsilon = epsilon
        self.n_independent = n_independent
        self.n_shared = n_shared
        self.virtual_batch_size = virtual_batch_size
        self.mask_type = mask_type
        self.initial_bn = nn.BatchNorm1d(self.input_dim, momentum=0.01)
        self.group_attention_matrix = group_attention_matrix

        if self.group_attention_matrix is None:
            # no groups
            self.group_attention_matrix = torch.eye(self.input_dim)
            self.attention_dim = self.input_dim
        else:
            self.attention_dim = self.group_attention_matrix.shape[0]

        if self.n_shared > 0:
            shared_feat_transform = nn.ModuleList()
            for i in range(self.n_shared):
                if i == 0:
                    shared_feat_transform.append(nn.Linear(self.input_dim, 2 * (n_d + n_a), bias=False))
                else:
                    shared_feat_transform.append(nn.Linear(n_d + n_a, 2 * (n_d + n_a), bias=False))
        else:
            shared_feat_transform = None

        self.initial_splitter = FeatTransformer(self.input_dim, n_d + n_a, shared_feat_transform,
                                                n_glu_independent=self.n_independent,
                                                virtual_batch_size=self.virtual_batch_size, momentum=momentum)

        self.feat_transformers = nn.ModuleList()
        self.att_transformers = nn.ModuleList()

        for step in range(n_steps):
            transformer = FeatTransformer(self.input_dim, n_d + n_a, shared_feat_transform,
                                          n_glu_independent=self.n_independent,
                                          virtual_batch_size=self.virtual_batch_size, momentum=momentum)
            attention = AttentiveTransformer(n_a, self.attention_dim, group_matrix=group_attention_matrix,
                                             virtual_batch_size=self.virtual_batch_size, momentum=momentum,
                                             mask_type=self.mask_type)
            self.feat_transformers.append(transformer)
            self.att_transformers.append(attention)

    def forward(self, x, prior=None):
        x = self.initial_bn(x)

        bs = x.shape[0]  # batch size
        if prior is None:
            prior = torch.ones((bs, self.attention_dim)).to(x.device)

        M_loss = 0
        att = self.initial_splitter(x)[:, self.n_d:]
        steps_output = []
        for step in range(self.n_steps):
            M = self.att_transformers[step](prior, att)
            M_loss += torch.mean(torch.sum(torch.mul(M, torch.log(M + self.epsilon)), dim=1))
            # update prior
            prior = torch.mul(self.gamma - M, prior)
            # output
            M_feature_level = torch.matmul(M, self.group_attention_matrix)
            masked_x = torch.mul(M_feature_level, x)
            out = self.feat_transformers[step](masked_x)
            d = nn.ReLU()(out[:, : self.n_d])
            steps_output.append(d)
            # update attention
            att = out[:, self.n_d:]

        M_loss /= self.n_steps
        return steps_output, M_loss


class TabNetNoEmbeddings(nn.Module):
    def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3, n_independent=2, n_shared=2,
                 epsilon=1e-15, virtual_batch_size=128, momentum=0.02, mask_type="sparsemax",
                 group_attention_matrix=None):
        super().__init__()
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.is_multi_task = isinstance(output_dim, list)
        self.n_d = n_d
        self.n_a = n_a
        self.n_steps = n_steps
        self.gamma = gamma
        self.epsilon = epsilon
        self.n_independent = n_independent
        self.n_shared = n_shared
        self.virtual_batch_size = virtual_batch_size
        self.mask_type = mask_type
        self.initial_bn = nn.BatchNorm1d(self.input_dim, momentum=0.01)

        self.encoder = TabNetEncoder(input_dim=input_dim, output_dim=output_dim, n_d=n_d, n_a=n_a, n_steps=n_steps,
                                     gamma=gamma, n_independent=n_independent, n_shared=n_shared, epsilon=epsilon,
                                     virtual_batch_size=virtual_batch_size, momentum=momentum, mask_type=mask_type,
                                     group_attention_matrix=group_attention_matrix)

        if self.is_multi_task:
            self.multi_task_mappings = nn.ModuleList()
            for task_dim in output_dim:
                task_mapping = nn.Linear(n_d, task_dim, bias=False)
                initialize_non_glu(task_mapping, n_d, task_dim)
                self.multi_task_mappings.append(task_mapping)
        else:
            self.final_mapping = nn.Linear(n_d, output_dim, bias=False)
            initialize_non_glu(self.final_mapping, n_d, output_dim)

    def forward(self, x):
        res = 0
        steps_output, M_loss = self.encoder(x)
        res = torch.sum(torch.stack(steps_output, dim=0), dim=0)

        if self.is_multi_task:
            # Result will be in list format
            out = []
            for task_mapping in self.multi_task_mappings:
                out.append(task_mapping(res))
        else:
            out = self.final_mapping(res)
        return out, M_loss


class TabNet(nn.Module):
    def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3, cat_idxs=[], cat_dims=[],
                 cat_emb_dim=1, n_independent=2, n_shared=2, epsilon=1e-15, virtual_batch_size=128, momentum=0.02,
                 mask_type="sparsemax", group_attention_matrix=[]):
        super().__init__()
        self.cat_idxs = cat_idxs or []
        self.cat_dims = cat_dims or []
        self.cat_emb_dim = cat_emb_dim

        self.input_dim = input_dim
        self.output_dim = output_dim
        self.n_d = n_d
        self.n_a = n_a
        self.n_steps = n_steps
        self.gamma = gamma
        self.epsilon = epsilon
        self.n_independent = n_independent
        self.n_shared = n_shared
        self.mask_type = mask_type

        if self.n_steps <= 0:
            raise ValueError("n_steps should be a positive integer.")
        if self.n_independent == 0 and self.n_shared == 0:
            raise ValueError("n_shared and n_independent can't be both zero.")

        self.virtual_batch_size = virtual_batch_size
        self.embedder = EmbeddingGenerator(input_dim, cat_dims, cat_idxs, cat_emb_dim, group_attention_matrix)
        self.post_embed_dim = self.embedder.post_embed_dim

        self.tabnet = TabNetNoEmbeddings(self.post_embed_dim, output_dim, n_d, n_a, n_steps, gamma, n_independent,
                                         n_shared, epsilon, virtual_batch_size, momentum, mask_type,
                                         self.embedder.embedding_group_matrix)

    def forward(self, x):
        x = self.embedder(x)
        return self.tabnet(x)


class AttentiveTransformer(nn.Module):
    def __init__(self, input_dim, group_dim, group_matrix, virtual_batch_size=128, momentum=0.02,
                 mask_type="sparsemax"):
        super().__init__()
        self.fc = nn.Linear(input_dim, group_dim, bias=False)
        initialize_non_glu(self.fc, input_dim, group_dim)
        self.bn = GBN(group_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)

        if mask_type == "sparsemax":
            # Sparsemax
            self.selector = Sparsemax(dim=-1)
        else:
            raise NotImplementedError("Please choose either sparsemax" + "or entmax as masktype")

    def forward(self, priors, processed_feat):
        x = self.fc(processed_feat)
        x = self.bn(x)
        x = torch.mul(x, priors)
        x = self.selector(x)
        return x


class FeatTransformer(nn.Module):
    def __init__(self, input_dim, output_dim, shared_layers, n_glu_independent, virtual_batch_size=128,
                 momentum=0.02):
        super().__init__()
        params = {"n_glu": n_glu_independent, "virtual_batch_size": virtual_batch_size, "momentum": momentum}

        if shared_layers is None:
            # no shared layers
            self.shared = nn.Identity()
            is_first = True
        else:
            self.shared = GLU_Block(input_dim, output_dim, first=True, shared_layers=shared_layers,
                                    n_glu=len(shared_layers), virtual_batch_size=virtual_batch_size,
                                    momentum=momentum)
            is_first = False

        if n_glu_independent == 0:
            # no independent layers
            self.specifics = nn.Identity()
        else:
            spec_input_dim = input_dim if is_first else output_dim
            self.specifics = GLU_Block(spec_input_dim, output_dim, first=is_first, **params)

    def forward(self, x):
        x = self.shared(x)
        x = self.specifics(x)
        return x


class GLU_Block(nn.Module):
    """Independent GLU block, specific to each step"""

    def __init__(self, input_dim, output_dim, n_glu=2, first=False, shared_layers=None, virtual_batch_size=128,
                 momentum=0.02):
        super().__init__()
        self.first = first
        self.shared_layers = shared_layers
        self.n_glu = n_glu
        self.glu_layers = nn.ModuleList()

        params = {"virtual_batch_size": virtual_batch_size, "momentum": momentum}

        fc = shared_layers[0] if shared_layers else None
        self.glu_layers.append(GLU_Layer(input_dim, output_dim, fc=fc, **params))
        for glu_id in range(1, self.n_glu):
            fc = shared_layers[glu_id] if shared_layers else None
            self.glu_layers.append(GLU_Layer(output_dim, output_dim, fc=fc, **params))

    def forward(self, x):
        scale = torch.sqrt(torch.FloatTensor([0.5]).to(x.device))
        if self.first:  # the first layer of the block has no scale multiplication
            x = self.glu_layers[0](x)
            layers_left = range(1, self.n_glu)
        else:
            layers_left = range(self.n_glu)

        for glu_id in layers_left:
            x = torch.add(x, self.glu_layers[glu_id](x))
            x = x * scale
        return x


class GLU_Layer(nn.Module):
    def __init__(self, input_dim, output_dim, fc=None, virtual_batch_size=128, momentum=0.02):
        super().__init__()
        self.output_dim = output_dim
        if fc:
            self.fc = fc
        else:
            self.fc = nn.Linear(input_dim, 2 * output_dim, bias=False)
        initialize_glu(self.fc, input_dim, 2 * output_dim)

        self.bn = GBN(2 * output_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)

    def forward(self, x):
        x = self.fc(x)
        x = self.bn(x)
        out = torch.mul(x[:, : self.output_dim], torch.sigmoid(x[:, self.output_dim:]))
        return out


class EmbeddingGenerator(nn.Module):
    """Classical embeddings generator"""

    def __init__(self, input_dim, cat_dims, cat_idxs, cat_emb_dims, group_matrix):
        super().__init__()

        if cat_dims == [] and cat_idxs == []:
            self.skip_embedding = True
            self.post_embed_dim = input_dim
            self.embedding_group_matrix = group_matrix.to(group_matrix.device)
            return
        else:
            self.skip_embedding = False

        self.post_embed_dim = int(input_dim + sum(cat_emb_dims) - len(cat_emb_dims))

        self.embeddings = nn.ModuleList()

        for cat_dim, emb_dim in zip(cat_dims, cat_emb_dims):
            self.embeddings.append(nn.Embedding(cat_dim, emb_dim))

        # record continuous indices
        self.continuous_idx = torch.ones(input_dim, dtype=torch.bool)
        self.continuous_idx[cat_idxs] = 0

        # update group matrix
        n_groups = group_matrix.shape[0]
        self.embedding_group_matrix = torch.empty((n_groups, self.post_embed_dim), device=group_matrix.device)
        for group_idx in range(n_groups):
            post_emb_idx = 0
            cat_feat_counter = 0
            for init_feat_idx in range(input_dim):
                if self.continuous_idx[init_feat_idx] == 1:
                    # this means that no embedding is applied to this column
                    self.embedding_group_matrix[group_idx, post_emb_idx] = group_matrix[group_idx, init_feat_idx]
                    post_emb_idx += 1
                else:
                    # this is a categorical feature which creates multiple embeddings
                    n_embeddings = cat_emb_dims[cat_feat_counter]
                    self.embedding_group_matrix[group_idx, post_emb_idx:post_emb_idx + n_embeddings] = \
                        group_matrix[group_idx, init_feat_idx] / n_embeddings
                    post_emb_idx += n_embeddings
                    cat_feat_counter += 1

    def forward(self, x):
        if self.skip_embedding:
            # no embeddings required
            return x

        cols = []
        cat_feat_counter = 0
        for feat_init_idx, is_continuous in enumerate(self.continuous_idx):
            # Enumerate through continuous idx boolean mask to apply embeddings
            if is_continuous:
                cols.append(x[:, feat_init_idx].float().view(-1, 1))
            else:
                cols.append(self.embeddings[cat_feat_counter](x[:, feat_init_idx].long()))
                cat_feat_counter += 1
        # concat
        post_embeddings = torch.cat(cols, dim=1)
        return post_embeddings


def tabnet_loss(out, target, lambda_sparse=1e-3):
    output, M_loss = out
    loss = F.cross_entropy(output, target)  # TabNetClassifier.compute_loss
    loss = loss - lambda_sparse * M_loss
    return loss


def b_tabnet():
    batch, input_dim, cat_idxs, cat_dims = 64, 10, [2, 6], [5, 7]
    x = randn(batch, input_dim)
    for i, d in zip(cat_idxs, cat_dims):
        x[:, i] = randint(d, batch, seed=10 + i).float()  # label-encoded categories, as TabNet takes them
    model = TabNet(input_dim, 3, n_d=8, n_a=8, n_steps=3, cat_idxs=cat_idxs, cat_dims=cat_dims,
                   cat_emb_dim=[2, 2], virtual_batch_size=16,
                   group_attention_matrix=torch.eye(input_dim))  # create_group_matrix([], input_dim)
    return dict(model=model, inputs=(x,), target=randint(3, batch, seed=3), loss=tabnet_loss)


# ---------------------------------------------------------------------------------------
# RepViT as its reference code writes it (THU-MIG/RepViT model/repvit.py, which timm's
# repvit.py ports with ConvNorm, NormLinear, RepVitMlp): features, a ModuleList of the
# patch_embed Sequential (Conv2d_BN, GELU, Conv2d_BN: each Conv2d_BN a Sequential of c, a
# bias-free Conv2d, and bn) and RepViTBlocks; a block is token_mixer then channel_mixer. Stride
# 1: token_mixer = Sequential(RepVGGDW: conv, a depthwise 3x3 Conv2d_BN, conv1, a depthwise
# 1x1 Conv2d with bias, bn over their sum plus the input; SqueezeExcite (timm's SEModule:
# mean, fc1, bn Identity, act ReLU, fc2, gate Sigmoid) or Identity). Stride 2 (the downsample
# between stages): token_mixer = Sequential(depthwise strided Conv2d_BN, SqueezeExcite or
# Identity, 1x1 Conv2d_BN to the new width). channel_mixer = Residual(Sequential(Conv2d_BN,
# GELU, Conv2d_BN with bn_weight_init 0)): x + m(x). Then F.adaptive_avg_pool2d, flatten and
# classifier (Classfier: classifier a BN_Linear, bn then l; no distillation head). Three
# stages of widths 16, 32, 64 at 64x64 input: a block with SE, a downsample, a block with SE,
# a downsample.


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    # Make sure that round down does not go down by more than 10%.
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def SqueezeExcite(channels, rd_ratio=1.0 / 16):
    """timm's SqueezeExcite (an alias of SEModule): rd_channels = make_divisible(channels * rd_ratio,
    8, round_limit=0.)."""
    rd_channels = max(8, int(channels * rd_ratio + 8 / 2) // 8 * 8)
    return SEModule(channels, rd_ratio=rd_channels / channels)


class Conv2d_BN(nn.Sequential):
    def __init__(self, a, b, ks=1, stride=1, pad=0, dilation=1, groups=1, bn_weight_init=1, resolution=-10000):
        super().__init__()
        self.add_module("c", nn.Conv2d(a, b, ks, stride, pad, dilation, groups, bias=False))
        self.add_module("bn", nn.BatchNorm2d(b))
        nn.init.constant_(self.bn.weight, bn_weight_init)
        nn.init.constant_(self.bn.bias, 0)


class Residual(nn.Module):
    def __init__(self, m, drop=0.0):
        super().__init__()
        self.m = m
        self.drop = drop

    def forward(self, x):
        if self.training and self.drop > 0:
            return x + self.m(x) * torch.rand(x.size(0), 1, 1, 1, device=x.device).ge_(self.drop).div(
                1 - self.drop).detach()
        else:
            return x + self.m(x)


class RepVGGDW(nn.Module):
    def __init__(self, ed) -> None:
        super().__init__()
        self.conv = Conv2d_BN(ed, ed, 3, 1, 1, groups=ed)
        self.conv1 = nn.Conv2d(ed, ed, 1, 1, 0, groups=ed)
        self.dim = ed
        self.bn = nn.BatchNorm2d(ed)

    def forward(self, x):
        return self.bn((self.conv(x) + self.conv1(x)) + x)


class RepViTBlock(nn.Module):
    def __init__(self, inp, hidden_dim, oup, kernel_size, stride, use_se, use_hs):
        super().__init__()
        assert stride in [1, 2]

        self.identity = stride == 1 and inp == oup
        assert hidden_dim == 2 * inp

        if stride == 2:
            self.token_mixer = nn.Sequential(
                Conv2d_BN(inp, inp, kernel_size, stride, (kernel_size - 1) // 2, groups=inp),
                SqueezeExcite(inp, 0.25) if use_se else nn.Identity(),
                Conv2d_BN(inp, oup, ks=1, stride=1, pad=0),
            )
            self.channel_mixer = Residual(nn.Sequential(
                # pw
                Conv2d_BN(oup, 2 * oup, 1, 1, 0),
                nn.GELU() if use_hs else nn.GELU(),
                # pw-linear
                Conv2d_BN(2 * oup, oup, 1, 1, 0, bn_weight_init=0),
            ))
        else:
            assert self.identity
            self.token_mixer = nn.Sequential(
                RepVGGDW(inp),
                SqueezeExcite(inp, 0.25) if use_se else nn.Identity(),
            )
            self.channel_mixer = Residual(nn.Sequential(
                # pw
                Conv2d_BN(inp, hidden_dim, 1, 1, 0),
                nn.GELU() if use_hs else nn.GELU(),
                # pw-linear
                Conv2d_BN(hidden_dim, oup, 1, 1, 0, bn_weight_init=0),
            ))

    def forward(self, x):
        return self.channel_mixer(self.token_mixer(x))


class BN_Linear(nn.Sequential):
    def __init__(self, a, b, bias=True, std=0.02):
        super().__init__()
        self.add_module("bn", nn.BatchNorm1d(a))
        self.add_module("l", nn.Linear(a, b, bias=bias))
        nn.init.trunc_normal_(self.l.weight, std=std)
        if bias:
            nn.init.constant_(self.l.bias, 0)


class Classfier(nn.Module):
    def __init__(self, dim, num_classes, distillation=True):
        super().__init__()
        self.classifier = BN_Linear(dim, num_classes) if num_classes > 0 else nn.Identity()
        self.distillation = distillation
        if distillation:
            self.classifier_dist = BN_Linear(dim, num_classes) if num_classes > 0 else nn.Identity()

    def forward(self, x):
        if self.distillation:
            x = self.classifier(x), self.classifier_dist(x)
            if not self.training:
                x = (x[0] + x[1]) / 2
        else:
            x = self.classifier(x)
        return x


class RepViT(nn.Module):
    def __init__(self, cfgs, num_classes=1000, distillation=False):
        super().__init__()
        # setting of inverted residual blocks
        self.cfgs = cfgs

        # building first layer
        input_channel = self.cfgs[0][2]
        patch_embed = nn.Sequential(Conv2d_BN(3, input_channel // 2, 3, 2, 1), nn.GELU(),
                                    Conv2d_BN(input_channel // 2, input_channel, 3, 2, 1))
        layers = [patch_embed]
        # building inverted residual blocks
        block = RepViTBlock
        for k, t, c, use_se, use_hs, s in self.cfgs:
            output_channel = _make_divisible(c, 8)
            exp_size = _make_divisible(input_channel * t, 8)
            layers.append(block(input_channel, exp_size, output_channel, k, s, use_se, use_hs))
            input_channel = output_channel
        self.features = nn.ModuleList(layers)
        self.classifier = Classfier(output_channel, num_classes, distillation)

    def forward(self, x):
        for f in self.features:
            x = f(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        x = self.classifier(x)
        return x


REPVIT_LITE_CFGS = [
    # k, t, c, SE, HS, s
    [3, 2, 16, 1, 0, 1],
    [3, 2, 32, 0, 0, 2],
    [3, 2, 32, 1, 0, 1],
    [3, 2, 64, 0, 1, 2],
]


def b_repvit():
    return dict(model=RepViT(REPVIT_LITE_CFGS, num_classes=10), inputs=(randn(2, 3, 64, 64),),
                target=randint(10, 2, seed=3), loss=ce)


REGISTRY = [
    ("pnn_ctr", "recsys", "adam", b_pnn),
    ("deep_crossing", "recsys", "adam", b_deep_crossing),
    ("caser_seq", "recsys", "adam", b_caser),
    ("gru4rec_packed", "recsys", "adam", b_gru4rec),
    ("chebnet", "gnn", "adam", b_chebnet),
    ("jknet", "gnn", "adam", b_jknet),
    ("tabnet_lite", "tabular", "adam", b_tabnet),
    ("repvit_lite", "hybrid", "adamw", b_repvit),
]

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS7 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants7.py",
    os.path.join(DATA, "corpus-cpu-variants7"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-modern", "corpus-cpu-families", "corpus-cpu-heldout",
                                      "corpus-cpu-variants", "corpus-cpu-variants2", "corpus-cpu-variants3",
                                      "corpus-cpu-variants4", "corpus-cpu-variants5", "corpus-cpu-variants6",
                                      "corpus-cpu-objectives", "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS7)
