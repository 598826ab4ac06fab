#!/usr/bin/env python3
"""Record Strata's eighth variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on the other variants corpora; this script records
tests/data/corpus-cpu-variants8, recorded after the rules, to measure them once on models they
were not written on, then to be tuned on as the other variants are: Listen, Attend and Spell
(a BiLSTM and pyramidal BiLSTMs that fold pairs of frames, key and value Linears, a speller of
two LSTMCells stepped by hand with a bmm-softmax-bmm attention, a character Linear), ESPnet's
RNN transducer (an RNN encoder over a PackedSequence, an Embedding-and-LSTM prediction network,
the JointNetwork's lin_enc(enc) + lin_dec(dec) broadcast over the T x U lattice, tanh, lin_out;
the transducer loss's forward variable written by hand), zhouhaoyi's Informer (DataEmbedding
of a circular token conv, a positional buffer and fixed temporal tables; ProbAttention's sampled
query sparsity and top-u queries; distilling ConvLayers between encoder layers; a decoder of
masked ProbAttention and FullAttention cross attention), DeepCTR-Torch's PLE (two extraction
levels of task-specific and shared expert DNNs mixed by softmax gates, towers, two sigmoid
outputs), Chris Chute's Glow-style flow of RealNVP affine couplings (ActNorm by hand, an
invertible 1x1 conv by slogdet, tanh-scaled couplings, squeeze and split, the log-determinant
summed, the NLL), a PixelCNN (jzbontar's MaskedConv2d, a type A input conv, residual blocks of
type B masked convs, a 256-way output), PyG's GraphUNet written without PyG (improved GCNConvs on
a dense adjacency, TopKPooling, A^2 augmentation, scatter-back unpooling, residual sums) and
lucidrains' Linformer LM (LinformerSelfAttention's proj_k and proj_v over the sequence, PreNorm
wrappers, FeedForward, SequentialSequence's residual sums).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants8.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants8.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants8.
"""

import math
import os
import sys
from itertools import repeat

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
from record_cpu_corpus import ce, ce_tokens, mse, randint, randn  # noqa: E402
from record_cpu_fresh import (DeepCTRBase, DeepCTRLinear, PredictionLayer, combined_dnn_input, ctr_input,  # noqa: E402
                              random_edges)
from record_cpu_variants import DNN  # noqa: E402  (DeepCTR-Torch's DNN: ReLU(inplace=True) modules)
from record_cpu_variants7 import GCNConv, masked_nll  # noqa: E402  (PyG's GCNConv; NLL on the training nodes)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


# ---------------------------------------------------------------------------------------
# Listen, Attend and Spell (Chan et al.) as the usual PyTorch LAS code writes it: Seq2Seq =
# encoder (the listener: lstm, a BiLSTM over the frames; pBLSTMs, a Sequential of pBLSTM, each
# dropping an odd last frame, reshaping (B, T, D) to (B, T/2, 2D), which puts each pair of
# frames side by side, then its blstm, a bidirectional nn.LSTM; key_network and value_network,
# Linears) and decoder (the speller: embedding; lstm1 and lstm2, nn.LSTMCells stepped by hand
# over the transcript with teacher forcing, the previous context concatenated to the character
# embedding; attention, energy = bmm(key, query), the padded frames masked, softmax, context =
# bmm(attention, value); character_prob, a Linear over the query and the context). Cross
# entropy over the characters.


class pBLSTM(nn.Module):
    def __init__(self, input_dim, hidden_dim):
        super().__init__()
        self.blstm = nn.LSTM(input_size=input_dim * 2, hidden_size=hidden_dim, num_layers=1, bidirectional=True,
                             batch_first=True)

    def forward(self, x):
        x = x[:, :(x.shape[1] // 2) * 2, :]  # drop an odd last frame
        x = x.reshape(x.shape[0], x.shape[1] // 2, x.shape[2] * 2)
        out, _ = self.blstm(x)
        return out


class Encoder(nn.Module):
    def __init__(self, input_dim, encoder_hidden_dim, key_value_size=32):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, encoder_hidden_dim, num_layers=1, bidirectional=True, batch_first=True)
        self.pBLSTMs = nn.Sequential(
            pBLSTM(encoder_hidden_dim * 2, encoder_hidden_dim),
            pBLSTM(encoder_hidden_dim * 2, encoder_hidden_dim),
            pBLSTM(encoder_hidden_dim * 2, encoder_hidden_dim),
        )
        self.key_network = nn.Linear(encoder_hidden_dim * 2, key_value_size)
        self.value_network = nn.Linear(encoder_hidden_dim * 2, key_value_size)

    def forward(self, x, x_len):
        out, _ = self.lstm(x)
        out = self.pBLSTMs(out)
        key = self.key_network(out)
        value = self.value_network(out)
        encoder_len = x_len // 8  # three pyramidal layers, each halving the frames
        return key, value, encoder_len


class Attention(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, query, key, value, mask):
        energy = torch.bmm(key, query.unsqueeze(2)).squeeze(2)
        energy.masked_fill_(mask, -1e9)
        attention = F.softmax(energy, dim=1)
        context = torch.bmm(attention.unsqueeze(1), value).squeeze(1)
        return context, attention


class Decoder(nn.Module):
    def __init__(self, vocab_size, decoder_hidden_dim, embed_dim, key_value_size=32):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.lstm1 = nn.LSTMCell(input_size=embed_dim + key_value_size, hidden_size=decoder_hidden_dim)
        self.lstm2 = nn.LSTMCell(input_size=decoder_hidden_dim, hidden_size=key_value_size)
        self.attention = Attention()
        self.vocab_size = vocab_size
        self.character_prob = nn.Linear(key_value_size * 2, vocab_size)
        self.key_value_size = key_value_size

    def forward(self, key, value, encoder_len, y):
        B, key_seq_max_len, key_value_size = key.shape
        max_len = y.shape[1]
        char_embeddings = self.embedding(y)
        mask = torch.arange(key_seq_max_len).unsqueeze(0) >= encoder_len.unsqueeze(1)
        predictions = []
        prediction = torch.full((B,), fill_value=1, dtype=torch.long)  # <sos>
        hidden_states = [None, None]
        context = value[:, 0, :]
        for i in range(max_len):
            if i == 0:
                char_embed = self.embedding(prediction)
            else:
                char_embed = char_embeddings[:, i - 1, :]  # teacher forcing
            y_context = torch.cat([char_embed, context], dim=1)
            hidden_states[0] = self.lstm1(y_context, hidden_states[0])
            hidden_states[1] = self.lstm2(hidden_states[0][0], hidden_states[1])
            query = hidden_states[1][0]
            context, attention = self.attention(query, key, value, mask)
            output_context = torch.cat([query, context], dim=1)
            prediction = self.character_prob(output_context)
            predictions.append(prediction.unsqueeze(1))
        return torch.cat(predictions, dim=1)


class Seq2Seq(nn.Module):
    def __init__(self, input_dim=40, vocab_size=30, encoder_hidden_dim=32, decoder_hidden_dim=48, embed_dim=24,
                 key_value_size=32):
        super().__init__()
        self.encoder = Encoder(input_dim, encoder_hidden_dim, key_value_size=key_value_size)
        self.decoder = Decoder(vocab_size, decoder_hidden_dim, embed_dim, key_value_size=key_value_size)

    def forward(self, x, x_len, y):
        key, value, encoder_len = self.encoder(x, x_len)
        predictions = self.decoder(key, value, encoder_len, y)
        return predictions


def b_las():
    y = randint(28, 4, 5, seed=3) + 2  # characters 2..29 (0 pad, 1 <sos>)
    x_len = torch.tensor([24, 20, 16, 24])
    return dict(model=Seq2Seq(), inputs=(randn(4, 24, 40), x_len, y), target=y, loss=ce_tokens)


# ---------------------------------------------------------------------------------------
# An RNN transducer as ESPnet writes it (espnet/nets/pytorch_backend/e2e_asr_transducer.py's
# E2E with an RNN encoder and decoder): enc, the Encoder (enc, a ModuleList of one RNN:
# pack_padded_sequence, nbrnn, a 2-layer nn.LSTM, pad_packed_sequence, l_last a Linear under
# tanh; the padded frames zeroed by make_pad_mask); dec, the RNNDecoder (embed, an Embedding
# with the blank as padding, dropout_embed, decoder a ModuleList of one-layer nn.LSTMs stepped
# in rnn_forward with their states written into h_next and c_next by slices, dropout_dec, over
# the labels with the blank prepended); joint_network, the JointNetwork (lin_enc(enc_out) +
# lin_dec(dec_out) broadcast as enc[:, :, None] + dec[:, None], the Tanh joint_activation,
# lin_out). ESPnet's criterion is warp-transducer's loss; it is written here by hand as the
# transducer loss is defined: log_softmax, the blank and label log-probabilities gathered, the
# forward variable alpha(t, u) over the T x (U+1) lattice by logaddexp, minus its final value.


def make_pad_mask(lengths):
    """ESPnet's make_pad_mask (nets_utils.py) without xs or a length_dim."""
    if not isinstance(lengths, list):
        lengths = lengths.long().tolist()
    bs = int(len(lengths))
    maxlen = int(max(lengths))
    seq_range = torch.arange(0, maxlen, dtype=torch.int64)
    seq_range_expand = seq_range.unsqueeze(0).expand(bs, maxlen)
    seq_length_expand = seq_range_expand.new(lengths).unsqueeze(-1)
    mask = seq_range_expand >= seq_length_expand
    return mask


class RNN(nn.Module):
    def __init__(self, idim, elayers, cdim, hdim, dropout, typ="lstm"):
        super().__init__()
        bidir = typ[0] == "b"
        self.nbrnn = (
            nn.LSTM(idim, cdim, elayers, batch_first=True, dropout=dropout, bidirectional=bidir)
            if "lstm" in typ
            else nn.GRU(idim, cdim, elayers, batch_first=True, dropout=dropout, bidirectional=bidir)
        )
        if bidir:
            self.l_last = nn.Linear(cdim * 2, hdim)
        else:
            self.l_last = nn.Linear(cdim, hdim)
        self.typ = typ

    def forward(self, xs_pad, ilens, prev_state=None):
        xs_pack = pack_padded_sequence(xs_pad, ilens.cpu(), batch_first=True)
        self.nbrnn.flatten_parameters()
        ys, states = self.nbrnn(xs_pack, hx=prev_state)
        ys_pad, ilens = pad_packed_sequence(ys, batch_first=True)
        projected = torch.tanh(self.l_last(ys_pad.contiguous().view(-1, ys_pad.size(2))))
        xs_pad = projected.view(ys_pad.size(0), ys_pad.size(1), -1)
        return xs_pad, ilens, states


class TransducerEncoder(nn.Module):
    """ESPnet's Encoder (rnn/encoders.py) for etype "lstm": one RNN in a ModuleList."""

    def __init__(self, etype, idim, elayers, eunits, eprojs, dropout):
        super().__init__()
        typ = etype.lstrip("vgg").rstrip("p")
        self.enc = nn.ModuleList([RNN(idim, elayers, eunits, eprojs, dropout, typ=typ)])

    def forward(self, xs_pad, ilens, prev_states=None):
        if prev_states is None:
            prev_states = [None] * len(self.enc)
        current_states = []
        for module, prev_state in zip(self.enc, prev_states):
            xs_pad, ilens, states = module(xs_pad, ilens, prev_state=prev_state)
            current_states.append(states)
        mask = make_pad_mask(ilens).unsqueeze(-1)
        return xs_pad.masked_fill(mask, 0.0), ilens, current_states


class RNNDecoder(nn.Module):
    def __init__(self, odim, dtype, dlayers, dunits, embed_dim, dropout_rate=0.0, dropout_rate_embed=0.0, blank_id=0):
        super().__init__()
        self.embed = nn.Embedding(odim, embed_dim, padding_idx=blank_id)
        self.dropout_embed = nn.Dropout(p=dropout_rate_embed)
        dec_net = nn.LSTM if dtype == "lstm" else nn.GRU
        self.decoder = nn.ModuleList([dec_net(embed_dim, dunits, 1, batch_first=True)])
        self.dropout_dec = nn.Dropout(p=dropout_rate)
        for _ in range(1, dlayers):
            self.decoder += [dec_net(dunits, dunits, 1, batch_first=True)]
        self.dlayers = dlayers
        self.dunits = dunits
        self.dtype = dtype
        self.odim = odim
        self.blank_id = blank_id

    def init_state(self, batch_size):
        h_n = torch.zeros(self.dlayers, batch_size, self.dunits)
        if self.dtype == "lstm":
            c_n = torch.zeros(self.dlayers, batch_size, self.dunits)
            return (h_n, c_n)
        return (h_n, None)

    def rnn_forward(self, sequence, state):
        h_prev, c_prev = state
        h_next, c_next = self.init_state(h_prev.size(1))
        for layer in range(self.dlayers):
            if self.dtype == "lstm":
                (sequence, (h_next[layer:layer + 1], c_next[layer:layer + 1])) = self.decoder[layer](
                    sequence, hx=(h_prev[layer:layer + 1], c_prev[layer:layer + 1]))
            else:
                sequence, h_next[layer:layer + 1] = self.decoder[layer](sequence, hx=h_prev[layer:layer + 1])
            sequence = self.dropout_dec(sequence)
        return sequence, (h_next, c_next)

    def forward(self, labels):
        init_state = self.init_state(labels.size(0))
        dec_embed = self.dropout_embed(self.embed(labels))
        dec_out, _ = self.rnn_forward(dec_embed, init_state)
        return dec_out


class JointNetwork(nn.Module):
    def __init__(self, joint_output_size, encoder_output_size, decoder_output_size, joint_space_size,
                 joint_activation_type="tanh"):
        super().__init__()
        self.lin_enc = nn.Linear(encoder_output_size, joint_space_size)
        self.lin_dec = nn.Linear(decoder_output_size, joint_space_size, bias=False)
        self.lin_out = nn.Linear(joint_space_size, joint_output_size)
        self.joint_activation = {"tanh": nn.Tanh, "relu": nn.ReLU}[joint_activation_type]()

    def forward(self, enc_out, dec_out):
        joint_out = self.joint_activation(self.lin_enc(enc_out) + self.lin_dec(dec_out))
        joint_out = self.lin_out(joint_out)
        return joint_out


class E2E(nn.Module):
    def __init__(self, idim=40, odim=20, elayers=2, eunits=32, eprojs=32, dlayers=1, dunits=32, dec_embed_dim=16,
                 joint_dim=32, dropout_rate=0.1, blank_id=0):
        super().__init__()
        self.blank_id = blank_id
        self.enc = TransducerEncoder("lstm", idim, elayers, eunits, eprojs, dropout_rate)
        self.dec = RNNDecoder(odim, "lstm", dlayers, dunits, dec_embed_dim, dropout_rate=dropout_rate,
                              dropout_rate_embed=dropout_rate, blank_id=blank_id)
        self.joint_network = JointNetwork(odim, eprojs, dunits, joint_dim, "tanh")

    def forward(self, xs_pad, ilens, ys_pad):
        xs_pad = xs_pad[:, : max(ilens)]
        hs_pad, hlens, _ = self.enc(xs_pad, ilens)
        blank = ys_pad.new_full((ys_pad.size(0), 1), self.blank_id)
        ys_in_pad = torch.cat([blank, ys_pad], dim=1)  # prepare_loss_inputs: the blank first
        dec_out = self.dec(ys_in_pad)
        z = self.joint_network(hs_pad.unsqueeze(2), dec_out.unsqueeze(1))
        return z


def transducer_loss(z, ys, blank=0):
    log_probs = z.log_softmax(dim=-1)  # (B, T, U + 1, V)
    B, T, U1, _ = log_probs.shape
    blank_lp = log_probs[..., blank]
    emit_lp = log_probs[:, :, :-1].gather(3, ys[:, None, :, None].expand(B, T, U1 - 1, 1)).squeeze(3)
    alpha = [[None] * U1 for _ in range(T)]
    for t in range(T):
        for u in range(U1):
            if t == 0 and u == 0:
                a = log_probs.new_zeros(B)
            elif t == 0:
                a = alpha[0][u - 1] + emit_lp[:, 0, u - 1]
            elif u == 0:
                a = alpha[t - 1][0] + blank_lp[:, t - 1, 0]
            else:
                a = torch.logaddexp(alpha[t - 1][u] + blank_lp[:, t - 1, u], alpha[t][u - 1] + emit_lp[:, t, u - 1])
            alpha[t][u] = a
    return -(alpha[T - 1][U1 - 1] + blank_lp[:, T - 1, U1 - 1]).mean()


def b_rnnt():
    ys = randint(19, 4, 3, seed=3) + 1  # labels 1..19, 0 is the blank
    ilens = torch.full((4,), 8, dtype=torch.long)
    return dict(model=E2E(), inputs=(randn(4, 8, 40), ilens, ys), target=ys, loss=transducer_loss)


# ---------------------------------------------------------------------------------------
# Informer as zhouhaoyi/Informer2020 writes it (models/model.py, embed.py, attn.py, encoder.py,
# decoder.py), attn "prob", embed "fixed", freq "h", distil on, mix on: enc_embedding and
# dec_embedding (DataEmbedding: value_embedding a TokenEmbedding, a circular-padded Conv1d;
# position_embedding a PositionalEmbedding reading its sinusoid buffer; temporal_embedding a
# TemporalEmbedding of FixedEmbeddings (frozen sinusoid nn.Embeddings, detached) for hour,
# weekday, day and month; their sum, dropout); encoder (attn_layers, EncoderLayers of an
# AttentionLayer over a ProbAttention: query_projection, key_projection, value_projection, the
# inner attention, out_projection; the residual, norm1, conv1 and conv2 of kernel 1 with GELU,
# norm2; conv_layers, ConvLayers between them: downConv circular, norm a BatchNorm1d, ELU,
# maxPool stride 2; the final norm); decoder (DecoderLayers of a masked ProbAttention self
# attention, mixed, and a FullAttention cross attention; norm); projection. ProbAttention as
# attn.py writes it: keys sampled per query by torch.randint, the sparsity measure max - mean,
# the top-u queries by topk, their scores against all keys; the initial context the mean of V
# (or its cumsum under the mask, ProbMask's triangle gathered at the top queries, filled with
# -inf), the top queries' rows of it overwritten by index. The decoder input (the label part of
# the target then zeros) is made outside the model, as exp_informer does; MSE on the horizon.


def sinusoid_table(n, d_model):
    """The sinusoid encodings of positions 0..n-1, computed once in log space (PositionalEmbedding's
    buffer, FixedEmbedding's frozen table)."""
    table = torch.zeros(n, d_model).float()
    position = torch.arange(0, n).float().unsqueeze(1)
    div_term = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


class PositionalEmbedding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        self.register_buffer("pe", sinusoid_table(max_len, d_model).unsqueeze(0))

    def forward(self, x):
        return self.pe[:, :x.size(1)]


class TokenEmbedding(nn.Module):
    def __init__(self, c_in, d_model):
        super().__init__()
        padding = 1 if torch.__version__ >= "1.5.0" else 2
        self.tokenConv = nn.Conv1d(in_channels=c_in, out_channels=d_model, kernel_size=3, padding=padding,
                                   padding_mode="circular")
        for m in self.modules():
            if isinstance(m, nn.Conv1d):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="leaky_relu")

    def forward(self, x):
        x = self.tokenConv(x.permute(0, 2, 1)).transpose(1, 2)
        return x


class FixedEmbedding(nn.Module):
    def __init__(self, c_in, d_model):
        super().__init__()
        self.emb = nn.Embedding(c_in, d_model)
        self.emb.weight = nn.Parameter(sinusoid_table(c_in, d_model), requires_grad=False)

    def forward(self, x):
        return self.emb(x).detach()


class TemporalEmbedding(nn.Module):
    def __init__(self, d_model, embed_type="fixed", freq="h"):
        super().__init__()
        minute_size = 4
        hour_size = 24
        weekday_size = 7
        day_size = 32
        month_size = 13

        Embed = FixedEmbedding if embed_type == "fixed" else nn.Embedding
        if freq == "t":
            self.minute_embed = Embed(minute_size, d_model)
        self.hour_embed = Embed(hour_size, d_model)
        self.weekday_embed = Embed(weekday_size, d_model)
        self.day_embed = Embed(day_size, d_model)
        self.month_embed = Embed(month_size, d_model)

    def forward(self, x):
        x = x.long()

        minute_x = self.minute_embed(x[:, :, 4]) if hasattr(self, "minute_embed") else 0.
        hour_x = self.hour_embed(x[:, :, 3])
        weekday_x = self.weekday_embed(x[:, :, 2])
        day_x = self.day_embed(x[:, :, 1])
        month_x = self.month_embed(x[:, :, 0])

        return hour_x + weekday_x + day_x + month_x + minute_x


class DataEmbedding(nn.Module):
    def __init__(self, c_in, d_model, embed_type="fixed", freq="h", dropout=0.1):
        super().__init__()
        self.value_embedding = TokenEmbedding(c_in=c_in, d_model=d_model)
        self.position_embedding = PositionalEmbedding(d_model=d_model)
        self.temporal_embedding = TemporalEmbedding(d_model=d_model, embed_type=embed_type, freq=freq)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, x_mark):
        x = self.value_embedding(x) + self.position_embedding(x) + self.temporal_embedding(x_mark)
        return self.dropout(x)


class ProbMask:
    def __init__(self, B, H, L, index, scores, device="cpu"):
        _mask = torch.ones(L, scores.shape[-1], dtype=torch.bool).to(device).triu(1)
        _mask_ex = _mask[None, None, :].expand(B, H, L, scores.shape[-1])
        indicator = _mask_ex[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :].to(device)
        self._mask = indicator.view(scores.shape).to(device)

    @property
    def mask(self):
        return self._mask


class FullAttention(nn.Module):
    def __init__(self, mask_flag=True, factor=5, scale=None, attention_dropout=0.1, output_attention=False):
        super().__init__()
        self.scale = scale
        self.mask_flag = mask_flag
        self.output_attention = output_attention
        self.dropout = nn.Dropout(attention_dropout)

    def forward(self, queries, keys, values, attn_mask):
        B, L, H, E = queries.shape
        _, S, _, D = values.shape
        scale = self.scale or 1. / math.sqrt(E)

        scores = torch.einsum("blhe,bshe->bhls", queries, keys)
        if self.mask_flag:
            raise NotImplementedError("TriangularCausalMask: not used here")

        A = self.dropout(torch.softmax(scale * scores, dim=-1))
        V = torch.einsum("bhls,bshd->blhd", A, values)

        if self.output_attention:
            return (V.contiguous(), A)
        else:
            return (V.contiguous(), None)


class ProbAttention(nn.Module):
    def __init__(self, mask_flag=True, factor=5, scale=None, attention_dropout=0.1, output_attention=False):
        super().__init__()
        self.factor = factor
        self.scale = scale
        self.mask_flag = mask_flag
        self.output_attention = output_attention
        self.dropout = nn.Dropout(attention_dropout)

    def _prob_QK(self, Q, K, sample_k, n_top):  # n_top: c*ln(L_q)
        # Q [B, H, L, D]
        B, H, L_K, E = K.shape
        _, _, L_Q, _ = Q.shape

        # calculate the sampled Q_K
        K_expand = K.unsqueeze(-3).expand(B, H, L_Q, L_K, E)
        index_sample = torch.randint(L_K, (L_Q, sample_k))  # real U = U_part(factor*ln(L_k))*L_q
        K_sample = K_expand[:, :, torch.arange(L_Q).unsqueeze(1), index_sample, :]
        Q_K_sample = torch.matmul(Q.unsqueeze(-2), K_sample.transpose(-2, -1)).squeeze(-2)

        # find the Top_k query with sparisty measurement
        M = Q_K_sample.max(-1)[0] - torch.div(Q_K_sample.sum(-1), L_K)
        M_top = M.topk(n_top, sorted=False)[1]

        # use the reduced Q to calculate Q_K
        Q_reduce = Q[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], M_top, :]  # factor*ln(L_q)
        Q_K = torch.matmul(Q_reduce, K.transpose(-2, -1))  # factor*ln(L_q)*L_k

        return Q_K, M_top

    def _get_initial_context(self, V, L_Q):
        B, H, L_V, D = V.shape
        if not self.mask_flag:
            # V_sum = V.sum(dim=-2)
            V_sum = V.mean(dim=-2)
            contex = V_sum.unsqueeze(-2).expand(B, H, L_Q, V_sum.shape[-1]).clone()
        else:  # use mask
            assert L_Q == L_V  # requires that L_Q == L_V, i.e. for self-attention only
            contex = V.cumsum(dim=-2)
        return contex

    def _update_context(self, context_in, V, scores, index, L_Q, attn_mask):
        B, H, L_V, D = V.shape

        if self.mask_flag:
            attn_mask = ProbMask(B, H, L_Q, index, scores, device=V.device)
            scores.masked_fill_(attn_mask.mask, -np.inf)

        attn = torch.softmax(scores, dim=-1)  # nn.Softmax(dim=-1)(scores)

        context_in[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :] = \
            torch.matmul(attn, V).type_as(context_in)
        if self.output_attention:
            attns = (torch.ones([B, H, L_V, L_V]) / L_V).type_as(attn).to(attn.device)
            attns[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :] = attn
            return (context_in, attns)
        else:
            return (context_in, None)

    def forward(self, queries, keys, values, attn_mask):
        B, L_Q, H, D = queries.shape
        _, L_K, _, _ = keys.shape

        queries = queries.transpose(2, 1)
        keys = keys.transpose(2, 1)
        values = values.transpose(2, 1)

        U_part = self.factor * np.ceil(np.log(L_K)).astype("int").item()  # c*ln(L_k)
        u = self.factor * np.ceil(np.log(L_Q)).astype("int").item()  # c*ln(L_q)

        U_part = U_part if U_part < L_K else L_K
        u = u if u < L_Q else L_Q

        scores_top, index = self._prob_QK(queries, keys, sample_k=U_part, n_top=u)

        # add scale factor
        scale = self.scale or 1. / math.sqrt(D)
        if scale is not None:
            scores_top = scores_top * scale
        # get the context
        context = self._get_initial_context(values, L_Q)
        # update the context with selected top_k queries
        context, attn = self._update_context(context, values, scores_top, index, L_Q, attn_mask)

        return context.transpose(2, 1).contiguous(), attn


class AttentionLayer(nn.Module):
    def __init__(self, attention, d_model, n_heads, d_keys=None, d_values=None, mix=False):
        super().__init__()

        d_keys = d_keys or (d_model // n_heads)
        d_values = d_values or (d_model // n_heads)

        self.inner_attention = attention
        self.query_projection = nn.Linear(d_model, d_keys * n_heads)
        self.key_projection = nn.Linear(d_model, d_keys * n_heads)
        self.value_projection = nn.Linear(d_model, d_values * n_heads)
        self.out_projection = nn.Linear(d_values * n_heads, d_model)
        self.n_heads = n_heads
        self.mix = mix

    def forward(self, queries, keys, values, attn_mask):
        B, L, _ = queries.shape
        _, S, _ = keys.shape
        H = self.n_heads

        queries = self.query_projection(queries).view(B, L, H, -1)
        keys = self.key_projection(keys).view(B, S, H, -1)
        values = self.value_projection(values).view(B, S, H, -1)

        out, attn = self.inner_attention(queries, keys, values, attn_mask)
        if self.mix:
            out = out.transpose(2, 1).contiguous()
        out = out.view(B, L, -1)

        return self.out_projection(out), attn


class ConvLayer(nn.Module):
    def __init__(self, c_in):
        super().__init__()
        padding = 1 if torch.__version__ >= "1.5.0" else 2
        self.downConv = nn.Conv1d(in_channels=c_in, out_channels=c_in, kernel_size=3, padding=padding,
                                  padding_mode="circular")
        self.norm = nn.BatchNorm1d(c_in)
        self.activation = nn.ELU()
        self.maxPool = nn.MaxPool1d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        x = self.downConv(x.permute(0, 2, 1))
        x = self.norm(x)
        x = self.activation(x)
        x = self.maxPool(x)
        x = x.transpose(1, 2)
        return x


class EncoderLayer(nn.Module):
    def __init__(self, attention, d_model, d_ff=None, dropout=0.1, activation="relu"):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.attention = attention
        self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1)
        self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x, attn_mask=None):
        # x [B, L, D]
        new_x, attn = self.attention(x, x, x, attn_mask=attn_mask)
        x = x + self.dropout(new_x)

        y = x = self.norm1(x)
        y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))

        return self.norm2(x + y), attn


class InformerEncoder(nn.Module):
    """Informer2020's Encoder (models/encoder.py)."""

    def __init__(self, attn_layers, conv_layers=None, norm_layer=None):
        super().__init__()
        self.attn_layers = nn.ModuleList(attn_layers)
        self.conv_layers = nn.ModuleList(conv_layers) if conv_layers is not None else None
        self.norm = norm_layer

    def forward(self, x, attn_mask=None):
        # x [B, L, D]
        attns = []
        if self.conv_layers is not None:
            for attn_layer, conv_layer in zip(self.attn_layers, self.conv_layers):
                x, attn = attn_layer(x, attn_mask=attn_mask)
                x = conv_layer(x)
                attns.append(attn)
            x, attn = self.attn_layers[-1](x, attn_mask=attn_mask)
            attns.append(attn)
        else:
            for attn_layer in self.attn_layers:
                x, attn = attn_layer(x, attn_mask=attn_mask)
                attns.append(attn)

        if self.norm is not None:
            x = self.norm(x)

        return x, attns


class DecoderLayer(nn.Module):
    def __init__(self, self_attention, cross_attention, d_model, d_ff=None, dropout=0.1, activation="relu"):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.self_attention = self_attention
        self.cross_attention = cross_attention
        self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1)
        self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x, cross, x_mask=None, cross_mask=None):
        x = x + self.dropout(self.self_attention(x, x, x, attn_mask=x_mask)[0])
        x = self.norm1(x)

        x = x + self.dropout(self.cross_attention(x, cross, cross, attn_mask=cross_mask)[0])

        y = x = self.norm2(x)
        y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))

        return self.norm3(x + y)


class InformerDecoder(nn.Module):
    """Informer2020's Decoder (models/decoder.py)."""

    def __init__(self, layers, norm_layer=None):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = norm_layer

    def forward(self, x, cross, x_mask=None, cross_mask=None):
        for layer in self.layers:
            x = layer(x, cross, x_mask=x_mask, cross_mask=cross_mask)

        if self.norm is not None:
            x = self.norm(x)

        return x


class Informer(nn.Module):
    def __init__(self, enc_in, dec_in, c_out, seq_len, label_len, out_len, factor=5, d_model=512, n_heads=8,
                 e_layers=3, d_layers=2, d_ff=512, dropout=0.0, attn="prob", embed="fixed", freq="h",
                 activation="gelu", output_attention=False, distil=True, mix=True):
        super().__init__()
        self.pred_len = out_len
        self.attn = attn
        self.output_attention = output_attention

        # Encoding
        self.enc_embedding = DataEmbedding(enc_in, d_model, embed, freq, dropout)
        self.dec_embedding = DataEmbedding(dec_in, d_model, embed, freq, dropout)
        # Attention
        Attn = ProbAttention if attn == "prob" else FullAttention
        # Encoder
        self.encoder = InformerEncoder(
            [
                EncoderLayer(
                    AttentionLayer(Attn(False, factor, attention_dropout=dropout, output_attention=output_attention),
                                   d_model, n_heads, mix=False),
                    d_model,
                    d_ff,
                    dropout=dropout,
                    activation=activation,
                ) for _ in range(e_layers)
            ],
            [ConvLayer(d_model) for _ in range(e_layers - 1)] if distil else None,
            norm_layer=torch.nn.LayerNorm(d_model),
        )
        # Decoder
        self.decoder = InformerDecoder(
            [
                DecoderLayer(
                    AttentionLayer(Attn(True, factor, attention_dropout=dropout, output_attention=False),
                                   d_model, n_heads, mix=mix),
                    AttentionLayer(FullAttention(False, factor, attention_dropout=dropout, output_attention=False),
                                   d_model, n_heads, mix=False),
                    d_model,
                    d_ff,
                    dropout=dropout,
                    activation=activation,
                ) for _ in range(d_layers)
            ],
            norm_layer=torch.nn.LayerNorm(d_model),
        )
        self.projection = nn.Linear(d_model, c_out, bias=True)

    def forward(self, x_enc, x_mark_enc, x_dec, x_mark_dec, enc_self_mask=None, dec_self_mask=None,
                dec_enc_mask=None):
        enc_out = self.enc_embedding(x_enc, x_mark_enc)
        enc_out, attns = self.encoder(enc_out, attn_mask=enc_self_mask)

        dec_out = self.dec_embedding(x_dec, x_mark_dec)
        dec_out = self.decoder(dec_out, enc_out, x_mask=dec_self_mask, cross_mask=dec_enc_mask)
        dec_out = self.projection(dec_out)

        if self.output_attention:
            return dec_out[:, -self.pred_len:, :], attns
        else:
            return dec_out[:, -self.pred_len:, :]  # [B, L, D]


def hourly_marks(batch, length, start):
    """Dataset_ETT_hour's time features for timeenc 0: month, day, weekday, hour per step."""
    hours = start[:, None] + torch.arange(length)[None, :]
    hour = hours % 24
    days = hours // 24
    weekday = days % 7
    day = days % 28 + 1
    month = (days // 28) % 12 + 1
    return torch.stack([month, day, weekday, hour], dim=-1).float()


def b_informer():
    batch, seq_len, label_len, pred_len, c = 4, 24, 12, 12, 7
    series = randn(batch, seq_len + pred_len, c)
    marks = hourly_marks(batch, seq_len + pred_len, randint(500, batch, seed=5))
    batch_x, batch_x_mark = series[:, :seq_len], marks[:, :seq_len]
    batch_y, batch_y_mark = series[:, seq_len - label_len:], marks[:, seq_len - label_len:]
    dec_inp = torch.zeros([batch_y.shape[0], pred_len, batch_y.shape[-1]]).float()
    dec_inp = torch.cat([batch_y[:, :label_len, :], dec_inp], dim=1).float()
    model = Informer(c, c, c, seq_len, label_len, pred_len, factor=3, d_model=32, n_heads=4, e_layers=2, d_layers=1,
                     d_ff=32, dropout=0.05, attn="prob", embed="fixed", freq="h", activation="gelu")
    return dict(model=model, inputs=(batch_x, batch_x_mark, dec_inp, batch_y_mark), target=batch_y[:, -pred_len:, :],
                loss=mse)


# ---------------------------------------------------------------------------------------
# PLE as DeepCTR-Torch writes it (deepctr_torch/models/multitask/ple.py), on its BaseModel
# (DeepCTRBase here: embedding_dict, one Embedding per sparse field looked up with
# X[:, i:i+1].long(); linear_model over no columns, never called) with out replaced by a
# ModuleList of PredictionLayers: specific_experts and shared_experts (per level, per task, per
# expert a DNN: linears, ReLU(inplace=True) activation_layers, one dropout), specific_gate_dnn
# (a DNN per level and task) with specific_gate_dnn_final_layer (bias-free Linears),
# shared_gate_dnn with shared_gate_dnn_final_layer, tower_dnn and tower_dnn_final_layer. cgc_net
# per level: every expert on its task's input (the shared ones on the shared input), per task a
# stack of its experts and the shared ones weighted by matmul with the gate's softmax, squeeze;
# the shared gate over every expert (its output unused after the last level, as in DeepCTR);
# towers, PredictionLayer sigmoids, cat. The loss as BaseModel.fit sums it: one
# binary_crossentropy per task, reduction "sum".


def deepctr_dnn(inputs_dim, hidden_units, dropout_rate=0.0, init_std=0.0001):
    dnn = DNN(inputs_dim, hidden_units, dropout_rate=dropout_rate)
    for name, tensor in dnn.linears.named_parameters():
        if "weight" in name:
            nn.init.normal_(tensor, mean=0, std=init_std)
    return dnn


class PLE(DeepCTRBase):
    def __init__(self, sparse_vocab=(50, 40, 30, 60, 20, 10), n_dense=2, embedding_size=8, shared_expert_num=2,
                 specific_expert_num=2, num_levels=2, expert_dnn_hidden_units=(32, 16), gate_dnn_hidden_units=(16,),
                 tower_dnn_hidden_units=(16,), init_std=0.0001, dnn_dropout=0, task_types=("binary", "binary"),
                 task_names=("ctr", "ctcvr")):
        super().__init__(sparse_vocab, n_dense, embedding_size, init_std)
        self.linear_model = DeepCTRLinear((), 0)  # BaseModel(linear_feature_columns=[])
        self.num_tasks = len(task_names)
        self.specific_expert_num = specific_expert_num
        self.shared_expert_num = shared_expert_num
        self.num_levels = num_levels
        self.task_names = task_names
        self.input_dim = len(sparse_vocab) * embedding_size + n_dense  # compute_input_dim(dnn_feature_columns)
        self.expert_dnn_hidden_units = expert_dnn_hidden_units
        self.gate_dnn_hidden_units = gate_dnn_hidden_units
        self.tower_dnn_hidden_units = tower_dnn_hidden_units

        def multi_module_list(num_level, num_tasks, expert_num, inputs_dim_level0, inputs_dim_not_level0,
                              hidden_units):
            return nn.ModuleList(
                [nn.ModuleList([nn.ModuleList([deepctr_dnn(inputs_dim_level0 if level_num == 0 else
                                                           inputs_dim_not_level0, hidden_units,
                                                           dropout_rate=dnn_dropout, init_std=init_std)
                                               for _ in range(expert_num)])
                                for _ in range(num_tasks)]) for level_num in range(num_level)])

        # 1. experts
        # task-specific experts
        self.specific_experts = multi_module_list(self.num_levels, self.num_tasks, self.specific_expert_num,
                                                  self.input_dim, expert_dnn_hidden_units[-1],
                                                  expert_dnn_hidden_units)

        # shared experts
        self.shared_experts = multi_module_list(self.num_levels, 1, self.specific_expert_num, self.input_dim,
                                                expert_dnn_hidden_units[-1], expert_dnn_hidden_units)

        # 2. gates
        # gates for task-specific experts
        specific_gate_output_dim = self.specific_expert_num + self.shared_expert_num
        if len(gate_dnn_hidden_units) > 0:
            self.specific_gate_dnn = multi_module_list(self.num_levels, self.num_tasks, 1, self.input_dim,
                                                       expert_dnn_hidden_units[-1], gate_dnn_hidden_units)
        self.specific_gate_dnn_final_layer = nn.ModuleList(
            [nn.ModuleList([nn.Linear(
                gate_dnn_hidden_units[-1] if len(gate_dnn_hidden_units) > 0 else self.input_dim if level_num == 0
                else expert_dnn_hidden_units[-1], specific_gate_output_dim, bias=False)
                for _ in range(self.num_tasks)]) for level_num in range(self.num_levels)])

        # gates for shared experts
        shared_gate_output_dim = self.num_tasks * self.specific_expert_num + self.shared_expert_num
        if len(gate_dnn_hidden_units) > 0:
            self.shared_gate_dnn = nn.ModuleList([deepctr_dnn(self.input_dim if level_num == 0 else
                                                              expert_dnn_hidden_units[-1], gate_dnn_hidden_units,
                                                              dropout_rate=dnn_dropout, init_std=init_std)
                                                  for level_num in range(self.num_levels)])
        self.shared_gate_dnn_final_layer = nn.ModuleList(
            [nn.Linear(
                gate_dnn_hidden_units[-1] if len(gate_dnn_hidden_units) > 0 else self.input_dim if level_num == 0
                else expert_dnn_hidden_units[-1], shared_gate_output_dim, bias=False)
                for level_num in range(self.num_levels)])

        # 3. tower dnn (task-specific)
        if len(tower_dnn_hidden_units) > 0:
            self.tower_dnn = nn.ModuleList(
                [deepctr_dnn(expert_dnn_hidden_units[-1], tower_dnn_hidden_units, dropout_rate=dnn_dropout,
                             init_std=init_std) for _ in range(self.num_tasks)])
        self.tower_dnn_final_layer = nn.ModuleList([nn.Linear(
            tower_dnn_hidden_units[-1] if len(tower_dnn_hidden_units) > 0 else expert_dnn_hidden_units[-1], 1,
            bias=False) for _ in range(self.num_tasks)])

        self.out = nn.ModuleList([PredictionLayer(task) for task in task_types])

    # a single cgc Layer
    def cgc_net(self, inputs, level_num):
        # inputs: [task1, task2, ... taskn, shared task]

        # 1. experts
        # task-specific experts
        specific_expert_outputs = []
        for i in range(self.num_tasks):
            for j in range(self.specific_expert_num):
                specific_expert_output = self.specific_experts[level_num][i][j](inputs[i])
                specific_expert_outputs.append(specific_expert_output)

        # shared experts
        shared_expert_outputs = []
        for k in range(self.shared_expert_num):
            shared_expert_output = self.shared_experts[level_num][0][k](inputs[-1])
            shared_expert_outputs.append(shared_expert_output)

        # 2. gates
        # gates for task-specific experts
        cgc_outs = []
        for i in range(self.num_tasks):
            # concat task-specific expert and task-shared expert
            cur_experts_outputs = specific_expert_outputs[
                i * self.specific_expert_num:(i + 1) * self.specific_expert_num] + shared_expert_outputs
            cur_experts_outputs = torch.stack(cur_experts_outputs, 1)

            # gate dnn
            if len(self.gate_dnn_hidden_units) > 0:
                gate_dnn_out = self.specific_gate_dnn[level_num][i][0](inputs[i])
                gate_dnn_out = self.specific_gate_dnn_final_layer[level_num][i](gate_dnn_out)
            else:
                gate_dnn_out = self.specific_gate_dnn_final_layer[level_num][i](inputs[i])
            gate_mul_expert = torch.matmul(gate_dnn_out.softmax(1).unsqueeze(1), cur_experts_outputs)  # (bs, 1, dim)
            cgc_outs.append(gate_mul_expert.squeeze())

        # gates for shared experts
        cur_experts_outputs = specific_expert_outputs + shared_expert_outputs
        cur_experts_outputs = torch.stack(cur_experts_outputs, 1)

        if len(self.gate_dnn_hidden_units) > 0:
            gate_dnn_out = self.shared_gate_dnn[level_num](inputs[-1])
            gate_dnn_out = self.shared_gate_dnn_final_layer[level_num](gate_dnn_out)
        else:
            gate_dnn_out = self.shared_gate_dnn_final_layer[level_num](inputs[-1])
        gate_mul_expert = torch.matmul(gate_dnn_out.softmax(1).unsqueeze(1), cur_experts_outputs)  # (bs, 1, dim)
        cgc_outs.append(gate_mul_expert.squeeze())

        return cgc_outs

    def forward(self, X):
        sparse_embedding_list, dense_value_list = self.input_from_feature_columns(X)
        dnn_input = combined_dnn_input(sparse_embedding_list, dense_value_list)

        # repeat `dnn_input` for several times to generate cgc input
        ple_inputs = [dnn_input] * (self.num_tasks + 1)  # [task1, task2, ... taskn, shared task]
        ple_outputs = []
        for i in range(self.num_levels):
            ple_outputs = self.cgc_net(inputs=ple_inputs, level_num=i)
            ple_inputs = ple_outputs

        # tower dnn (task-specific)
        task_outs = []
        for i in range(self.num_tasks):
            if len(self.tower_dnn_hidden_units) > 0:
                tower_dnn_out = self.tower_dnn[i](ple_outputs[i])
                tower_dnn_logit = self.tower_dnn_final_layer[i](tower_dnn_out)
            else:
                tower_dnn_logit = self.tower_dnn_final_layer[i](ple_outputs[i])
            output = self.out[i](tower_dnn_logit)
            task_outs.append(output)
        task_outs = torch.cat(task_outs, -1)
        return task_outs


def ple_loss(y_pred, y):
    return sum([F.binary_cross_entropy(y_pred[:, i], y[:, i], reduction="sum") for i in range(y_pred.shape[1])])


def b_ple():
    x = ctr_input(64, (50, 40, 30, 60, 20, 10), 2)
    return dict(model=PLE(), inputs=(x,), target=randint(2, 64, 2, seed=3).float(), loss=ple_loss)


# ---------------------------------------------------------------------------------------
# A normalizing flow of RealNVP affine couplings in Glow's multi-scale form, as Chris Chute's
# glow (models/glow/glow.py, act_norm.py, inv_conv.py, coupling.py; util's NLLLoss) writes it:
# Glow (bounds, a buffer; _pre_process dequantises and takes logits, with that transform's
# log-determinant; squeeze; flows; squeeze back) over _Glow (steps, a ModuleList of _FlowStep:
# norm, an ActNorm written by hand (data-dependent initialisation on the first batch, then
# x + bias, times exp(logs), logs.sum() * h * w added to the log-determinant); conv, InvConv, a
# 1x1 conv by F.conv2d with its weight's slogdet; coup, Coupling: the channels chunked, nn (NN:
# in_norm, F.relu, in_conv 3x3, mid_conv1 3x3, mid_norm, F.relu, mid_conv2 1x1, out_norm, F.relu,
# out_conv 3x3 zero-initialised; BatchNorm2d norms) on the kept half, s and t interleaved,
# s = scale * tanh(s), (x + t) * exp(s), the cat), then next, another _Glow on half of the
# squeezed channels, split off and concatenated back). The
# loss is NLLLoss: the standard-normal prior's log-probability plus the summed log-determinant,
# minus log(256) a dimension, negated and averaged.


def squeeze(x, reverse=False):
    b, c, h, w = x.size()
    if reverse:
        # Unsqueeze
        x = x.view(b, c // 4, 2, 2, h, w)
        x = x.permute(0, 1, 4, 2, 5, 3).contiguous()
        x = x.view(b, c // 4, h * 2, w * 2)
    else:
        # Squeeze
        x = x.view(b, c, h // 2, 2, w // 2, 2)
        x = x.permute(0, 1, 3, 5, 2, 4).contiguous()
        x = x.view(b, c * 2 * 2, h // 2, w // 2)
    return x


def mean_dim(tensor, dim=None, keepdims=False):
    if dim is None:
        return tensor.mean()
    else:
        if isinstance(dim, int):
            dim = [dim]
        dim = sorted(dim)
        for d in dim:
            tensor = tensor.mean(dim=d, keepdim=True)
        if not keepdims:
            for i, d in enumerate(dim):
                tensor.squeeze_(d - i)
        return tensor


class ActNorm(nn.Module):
    def __init__(self, num_features, scale=1., return_ldj=False):
        super().__init__()
        self.register_buffer("is_initialized", torch.zeros(1))
        self.bias = nn.Parameter(torch.zeros(1, num_features, 1, 1))
        self.logs = nn.Parameter(torch.zeros(1, num_features, 1, 1))

        self.num_features = num_features
        self.scale = float(scale)
        self.eps = 1e-6
        self.return_ldj = return_ldj

    def initialize_parameters(self, x):
        if not self.training:
            return

        with torch.no_grad():
            bias = -mean_dim(x.clone(), dim=[0, 2, 3], keepdims=True)
            v = mean_dim((x.clone() + bias) ** 2, dim=[0, 2, 3], keepdims=True)
            logs = (self.scale / (v.sqrt() + self.eps)).log()
            self.bias.data.copy_(bias.data)
            self.logs.data.copy_(logs.data)
            self.is_initialized += 1.

    def _center(self, x, reverse=False):
        if reverse:
            return x - self.bias
        else:
            return x + self.bias

    def _scale(self, x, sldj, reverse=False):
        logs = self.logs
        if reverse:
            x = x * logs.mul(-1).exp()
        else:
            x = x * logs.exp()

        if sldj is not None:
            ldj = logs.sum() * x.size(2) * x.size(3)
            if reverse:
                sldj = sldj - ldj
            else:
                sldj = sldj + ldj

        return x, sldj

    def forward(self, x, ldj=None, reverse=False):
        if not self.is_initialized:
            self.initialize_parameters(x)

        if reverse:
            x, ldj = self._scale(x, ldj, reverse)
            x = self._center(x, reverse)
        else:
            x = self._center(x, reverse)
            x, ldj = self._scale(x, ldj, reverse)

        if self.return_ldj:
            return x, ldj

        return x


class InvConv(nn.Module):
    def __init__(self, num_channels):
        super().__init__()
        self.num_channels = num_channels

        # Initialize with a random orthogonal matrix
        w_init = np.random.randn(num_channels, num_channels)
        w_init = np.linalg.qr(w_init)[0].astype(np.float32)
        self.weight = nn.Parameter(torch.from_numpy(w_init))

    def forward(self, x, sldj, reverse=False):
        ldj = torch.slogdet(self.weight)[1] * x.size(2) * x.size(3)

        if reverse:
            weight = torch.inverse(self.weight.double()).float()
            sldj = sldj - ldj
        else:
            weight = self.weight
            sldj = sldj + ldj

        weight = weight.view(self.num_channels, self.num_channels, 1, 1)
        z = F.conv2d(x, weight)

        return z, sldj


class NN(nn.Module):
    def __init__(self, in_channels, mid_channels, out_channels, use_act_norm=False):
        super().__init__()
        norm_fn = ActNorm if use_act_norm else nn.BatchNorm2d

        self.in_norm = norm_fn(in_channels)
        self.in_conv = nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False)
        nn.init.normal_(self.in_conv.weight, 0., 0.05)

        self.mid_conv1 = nn.Conv2d(mid_channels, mid_channels, kernel_size=3, padding=1, bias=False)
        nn.init.normal_(self.mid_conv1.weight, 0., 0.05)

        self.mid_norm = norm_fn(mid_channels)
        self.mid_conv2 = nn.Conv2d(mid_channels, mid_channels, kernel_size=1, padding=0, bias=False)
        nn.init.normal_(self.mid_conv2.weight, 0., 0.05)

        self.out_norm = norm_fn(mid_channels)
        self.out_conv = nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=True)
        nn.init.zeros_(self.out_conv.weight)
        nn.init.zeros_(self.out_conv.bias)

    def forward(self, x):
        x = self.in_norm(x)
        x = F.relu(x)
        x = self.in_conv(x)

        x = self.mid_conv1(x)
        x = self.mid_norm(x)
        x = F.relu(x)
        x = self.mid_conv2(x)

        x = self.out_norm(x)
        x = F.relu(x)
        x = self.out_conv(x)

        return x


class Coupling(nn.Module):
    def __init__(self, in_channels, mid_channels):
        super().__init__()
        self.nn = NN(in_channels, mid_channels, 2 * in_channels)
        self.scale = nn.Parameter(torch.ones(in_channels, 1, 1))

    def forward(self, x, ldj, reverse=False):
        x_change, x_id = x.chunk(2, dim=1)

        st = self.nn(x_id)
        s, t = st[:, 0::2, ...], st[:, 1::2, ...]
        s = self.scale * torch.tanh(s)

        # Scale and translate
        if reverse:
            x_change = x_change * s.mul(-1).exp() - t
            ldj = ldj - s.flatten(1).sum(-1)
        else:
            x_change = (x_change + t) * s.exp()
            ldj = ldj + s.flatten(1).sum(-1)

        x = torch.cat((x_change, x_id), dim=1)

        return x, ldj


class _FlowStep(nn.Module):
    def __init__(self, in_channels, mid_channels):
        super().__init__()

        # Activation normalization, invertible 1x1 convolution, affine coupling
        self.norm = ActNorm(in_channels, return_ldj=True)
        self.conv = InvConv(in_channels)
        self.coup = Coupling(in_channels // 2, mid_channels)

    def forward(self, x, sldj=None, reverse=False):
        if reverse:
            x, sldj = self.coup(x, sldj, reverse)
            x, sldj = self.conv(x, sldj, reverse)
            x, sldj = self.norm(x, sldj, reverse)
        else:
            x, sldj = self.norm(x, sldj, reverse)
            x, sldj = self.conv(x, sldj, reverse)
            x, sldj = self.coup(x, sldj, reverse)

        return x, sldj


class _Glow(nn.Module):
    def __init__(self, in_channels, mid_channels, num_levels, num_steps):
        super().__init__()
        self.steps = nn.ModuleList([_FlowStep(in_channels=in_channels, mid_channels=mid_channels)
                                    for _ in range(num_steps)])

        if num_levels > 1:
            self.next = _Glow(in_channels=2 * in_channels, mid_channels=mid_channels, num_levels=num_levels - 1,
                              num_steps=num_steps)
        else:
            self.next = None

    def forward(self, x, sldj, reverse=False):
        if not reverse:
            for step in self.steps:
                x, sldj = step(x, sldj, reverse)

        if self.next is not None:
            x = squeeze(x)
            x, x_split = x.chunk(2, dim=1)
            x, sldj = self.next(x, sldj, reverse)
            x = torch.cat((x, x_split), dim=1)
            x = squeeze(x, reverse=True)

        if reverse:
            for step in reversed(self.steps):
                x, sldj = step(x, sldj, reverse)

        return x, sldj


class Glow(nn.Module):
    def __init__(self, num_channels, num_levels, num_steps):
        super().__init__()

        # Use bounds to rescale images before converting to logits, not learned
        self.register_buffer("bounds", torch.tensor([0.9], dtype=torch.float32))
        self.flows = _Glow(in_channels=4 * 3,  # RGB image after squeeze
                           mid_channels=num_channels, num_levels=num_levels, num_steps=num_steps)

    def forward(self, x, reverse=False):
        if reverse:
            sldj = torch.zeros(x.size(0), device=x.device)
        else:
            # Expect inputs in [0, 1]
            if x.min() < 0 or x.max() > 1:
                raise ValueError("Expected x in [0, 1], got min/max {}/{}".format(x.min(), x.max()))

            # De-quantize and convert to logits
            x, sldj = self._pre_process(x)

        x = squeeze(x)
        x, sldj = self.flows(x, sldj, reverse)
        x = squeeze(x, reverse=True)

        return x, sldj

    def _pre_process(self, x):
        y = (x * 255. + torch.rand_like(x)) / 256.
        y = (2 * y - 1) * self.bounds
        y = (y + 1) / 2
        y = y.log() - (1. - y).log()

        # Save log-determinant of Jacobian of initial transform
        ldj = F.softplus(y) + F.softplus(-y) - F.softplus((1. - self.bounds).log() - self.bounds.log())
        sldj = ldj.flatten(1).sum(-1)

        return y, sldj


def glow_nll(out, target, k=256):
    """util/optim_util.py's NLLLoss; the target (the images) is not read."""
    z, sldj = out
    prior_ll = -0.5 * (z ** 2 + np.log(2 * np.pi))
    prior_ll = prior_ll.flatten(1).sum(-1) - np.log(k) * np.prod(z.size()[1:])
    ll = prior_ll + sldj
    nll = -ll.mean()
    return nll


def b_flow():
    np.random.seed(0)  # InvConv draws its orthogonal initialisation from NumPy
    x = randint(256, 4, 3, 16, 16, seed=3).float() / 255.
    return dict(model=Glow(num_channels=16, num_levels=2, num_steps=2), inputs=(x,), target=x, loss=glow_nll)


# ---------------------------------------------------------------------------------------
# PixelCNN (van den Oord et al., "Pixel Recurrent Neural Networks") with jzbontar's
# pixelcnn-pytorch MaskedConv2d: an nn.Conv2d subclass whose mask buffer (ones, the centre row
# zeroed from the centre, type A, or right of it, type B, and every row below) multiplies its
# weight in place in forward before Conv2d's forward. The paper's residual layout: a 7x7 type A
# input conv to 2h maps, residual blocks (a Sequential of ReLU, 1x1 conv to h, ReLU, 3x3 type B
# masked conv, ReLU, 1x1 conv back to 2h; x + block(x)), an output Sequential of ReLU, 1x1 conv,
# ReLU, 1x1 conv to 256 logits per pixel. Cross entropy against the pixels' 256 intensities.


class MaskedConv2d(nn.Conv2d):
    def __init__(self, mask_type, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert mask_type in {"A", "B"}
        self.register_buffer("mask", self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == "B"):] = 0
        self.mask[:, :, kH // 2 + 1:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super().forward(x)


class PixelCNNResidualBlock(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.net = nn.Sequential(
            nn.ReLU(),
            nn.Conv2d(2 * h, h, kernel_size=1),
            nn.ReLU(),
            MaskedConv2d("B", h, h, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(h, 2 * h, kernel_size=1),
        )

    def forward(self, x):
        return x + self.net(x)


class PixelCNN(nn.Module):
    def __init__(self, in_channels=1, h=16, n_residual=3, head_channels=32, levels=256):
        super().__init__()
        self.input_conv = MaskedConv2d("A", in_channels, 2 * h, kernel_size=7, padding=3)
        self.residual_blocks = nn.ModuleList([PixelCNNResidualBlock(h) for _ in range(n_residual)])
        self.output = nn.Sequential(
            nn.ReLU(),
            nn.Conv2d(2 * h, head_channels, kernel_size=1),
            nn.ReLU(),
            nn.Conv2d(head_channels, levels * in_channels, kernel_size=1),
        )

    def forward(self, x):
        x = self.input_conv(x)
        for block in self.residual_blocks:
            x = block(x)
        return self.output(x)


def b_pixelcnn():
    pixels = randint(256, 2, 1, 12, 12, seed=3)
    x = pixels.float() / 255.
    return dict(model=PixelCNN(), inputs=(x,), target=pixels[:, 0], loss=ce)


# ---------------------------------------------------------------------------------------
# Graph U-Net (Gao & Ji) as PyTorch Geometric's GraphUNet writes it (nn/models/graph_unet.py,
# examples/graph_unet.py's Net), without PyG, the graph a dense weighted adjacency: down_convs
# and up_convs, ModuleLists of GCNConv(improved=True) (gcn_norm in every call: the remaining
# self-loops filled with 2, D^-1/2 A D^-1/2; lin, a bias-free Linear; the propagation a matmul;
# bias); pools, TopKPooling (score = (x * weight).sum(-1) / ||weight||, tanh; PyG's topk: the
# scores scattered into a dense per-graph row, sorted, the first ceil(ratio n) kept; x[perm]
# gated by its score; filter_adj, the adjacency's rows and columns at perm); act, a ReLU module
# (activation_resolver). augment_adj before each pool: self-loops removed, added, A @ A, removed
# again. Up the U: zeros, up[perm] = x, res + up (sum_res), the up conv. Net: dropout_edge
# (undirected, on the dense adjacency), F.dropout of the features, unet, log_softmax; NLL on
# the training nodes.


def gcn_norm(adj, improved=False):
    fill_value = 2. if improved else 1.
    num_nodes = adj.size(0)
    eye = torch.eye(num_nodes, dtype=torch.bool)
    # add_remaining_self_loops: a self-loop's weight kept where there is one, fill_value elsewhere
    diag = adj.diagonal()
    loop_weight = torch.where(diag > 0, diag, torch.full_like(diag, fill_value))
    adj = adj.masked_fill(eye, 0.) + torch.diag(loop_weight)
    deg = adj.sum(0)
    deg_inv_sqrt = deg.pow_(-0.5)
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float("inf"), 0)
    return deg_inv_sqrt.view(-1, 1) * adj * deg_inv_sqrt.view(1, -1)


class UNetGCNConv(GCNConv):
    """PyG's GCNConv (not cached: gcn_norm in every call) over a dense adjacency."""

    def __init__(self, in_channels, out_channels, improved=False, bias=True):
        super().__init__(in_channels, out_channels, bias)
        self.improved = improved

    def forward(self, x, adj):
        adj = gcn_norm(adj, self.improved)
        x = self.lin(x)
        out = adj.t() @ x  # propagate: out[col] += norm * x[row]
        if self.bias is not None:
            out = out + self.bias
        return out


def topk(x, ratio, batch, min_score=None, tol=1e-7):
    num_nodes = torch.zeros(int(batch.max()) + 1, dtype=torch.long).scatter_add_(0, batch, torch.ones_like(batch))
    batch_size, max_num_nodes = num_nodes.size(0), int(num_nodes.max())

    cum_num_nodes = torch.cat([num_nodes.new_zeros(1), num_nodes.cumsum(dim=0)[:-1]], dim=0)

    index = torch.arange(batch.size(0), dtype=torch.long, device=x.device)
    index = (index - cum_num_nodes[batch]) + (batch * max_num_nodes)

    dense_x = x.new_full((batch_size * max_num_nodes,), -60000.0)
    dense_x[index] = x
    dense_x = dense_x.view(batch_size, max_num_nodes)

    _, perm = dense_x.sort(dim=-1, descending=True)

    perm = perm + cum_num_nodes.view(-1, 1)
    perm = perm.view(-1)

    k = (float(ratio) * num_nodes.to(x.dtype)).ceil().to(torch.long)
    mask = [torch.arange(k[i], dtype=torch.long, device=x.device) + i * max_num_nodes for i in range(batch_size)]
    mask = torch.cat(mask, dim=0)

    perm = perm[mask]
    return perm


def filter_adj(adj, perm):
    return adj[perm][:, perm]


class TopKPooling(nn.Module):
    def __init__(self, in_channels, ratio=0.5, min_score=None, multiplier=1., nonlinearity=torch.tanh):
        super().__init__()
        self.in_channels = in_channels
        self.ratio = ratio
        self.min_score = min_score
        self.multiplier = multiplier
        self.nonlinearity = nonlinearity
        self.weight = nn.Parameter(torch.empty(1, in_channels))
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.in_channels)  # torch_geometric.nn.inits.uniform
        nn.init.uniform_(self.weight, -bound, bound)

    def forward(self, x, adj, batch=None, attn=None):
        if batch is None:
            batch = x.new_zeros(x.size(0), dtype=torch.long)

        attn = x if attn is None else attn
        attn = attn.unsqueeze(-1) if attn.dim() == 1 else attn
        score = (attn * self.weight).sum(dim=-1)

        if self.min_score is None:
            score = self.nonlinearity(score / self.weight.norm(p=2, dim=-1))
        else:
            raise NotImplementedError("softmax scores: not used here")

        perm = topk(score, self.ratio, batch, self.min_score)
        x = x[perm] * score[perm].view(-1, 1)
        x = self.multiplier * x if self.multiplier != 1 else x

        batch = batch[perm]
        adj = filter_adj(adj, perm)

        return x, adj, batch, perm, score[perm]


class GraphUNet(nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, depth, pool_ratios=0.5, sum_res=True):
        super().__init__()
        assert depth >= 1
        self.in_channels = in_channels
        self.hidden_channels = hidden_channels
        self.out_channels = out_channels
        self.depth = depth
        if not isinstance(pool_ratios, (list, tuple)):
            pool_ratios = [pool_ratios]
        self.pool_ratios = list(pool_ratios) + list(repeat(pool_ratios[-1], depth - len(pool_ratios)))
        self.act = nn.ReLU()  # activation_resolver("relu")
        self.sum_res = sum_res

        channels = hidden_channels

        self.down_convs = nn.ModuleList()
        self.pools = nn.ModuleList()
        self.down_convs.append(UNetGCNConv(in_channels, channels, improved=True))
        for i in range(depth):
            self.pools.append(TopKPooling(channels, self.pool_ratios[i]))
            self.down_convs.append(UNetGCNConv(channels, channels, improved=True))

        in_channels = channels if sum_res else 2 * channels

        self.up_convs = nn.ModuleList()
        for i in range(depth - 1):
            self.up_convs.append(UNetGCNConv(in_channels, channels, improved=True))
        self.up_convs.append(UNetGCNConv(in_channels, out_channels, improved=True))

    def forward(self, x, adj, batch=None):
        if batch is None:
            batch = x.new_zeros(x.size(0), dtype=torch.long)

        x = self.down_convs[0](x, adj)
        x = self.act(x)

        xs = [x]
        adjs = [adj]
        perms = []

        for i in range(1, self.depth + 1):
            adj = self.augment_adj(adj)
            x, adj, batch, perm, _ = self.pools[i - 1](x, adj, batch)

            x = self.down_convs[i](x, adj)
            x = self.act(x)

            if i < self.depth:
                xs += [x]
                adjs += [adj]
            perms += [perm]

        for i in range(self.depth):
            j = self.depth - 1 - i

            res = xs[j]
            adj = adjs[j]
            perm = perms[j]

            up = torch.zeros_like(res)
            up[perm] = x
            x = res + up if self.sum_res else torch.cat((res, up), dim=-1)

            x = self.up_convs[i](x, adj)
            x = self.act(x) if i < self.depth - 1 else x

        return x

    def augment_adj(self, adj):
        num_nodes = adj.size(0)
        eye = torch.eye(num_nodes, dtype=adj.dtype)
        adj = adj * (1 - eye)  # remove_self_loops
        adj = adj + eye  # add_self_loops
        adj = adj @ adj  # (adj @ adj), the sparse product
        adj = adj * (1 - eye)  # remove_self_loops
        return adj


class GraphUNetNet(nn.Module):
    """examples/graph_unet.py's Net."""

    def __init__(self, num_features=16, num_classes=4, hidden=16, depth=3, pool_ratios=(0.5, 0.5)):
        super().__init__()
        self.unet = GraphUNet(num_features, hidden, num_classes, depth=depth, pool_ratios=list(pool_ratios))

    def forward(self, x, adj):
        # dropout_edge(p=0.2, force_undirected=True) on the dense adjacency
        keep = (torch.rand(adj.shape) >= 0.2).triu(1)
        adj = adj * (keep | keep.t())
        x = F.dropout(x, p=0.92, training=self.training)

        x = self.unet(x, adj)
        return F.log_softmax(x, dim=1)


def b_graph_unet():
    n = 40
    edge_index = random_edges(n, 80, seed=6)
    adj = torch.zeros(n, n)
    adj[edge_index[0], edge_index[1]] = 1.
    train_mask = torch.arange(n) % 3 != 2
    return dict(model=GraphUNetNet(), inputs=(randn(n, 16), adj), target=(randint(4, n, seed=3), train_mask),
                loss=masked_nll)


# ---------------------------------------------------------------------------------------
# Linformer as lucidrains' linformer writes it (linformer/linformer.py, reversible.py): LinformerLM
# = token_emb, pos_emb (nn.Embeddings; pos_emb(arange) + x), linformer (Linformer: net, a
# SequentialSequence over layers, a ModuleList of ModuleList(PreNorm(LinformerSelfAttention),
# PreNorm(FeedForward)); x = x + f(x), x = x + g(x) in its loop, route_args routing none), to_logits.
# PreNorm: norm, a LayerNorm, then fn. LinformerSelfAttention: to_q, to_k, to_v bias-free Linears;
# proj_k and proj_v, (seq_len, k) Parameters that project the keys and values along the sequence
# by einsum 'bnd,nk->bkd'; heads by reshape and transpose, expanded keys and values, einsum dots
# times d_h^-0.5, softmax, dropout, einsum, to_out. FeedForward: w1, act (nn.GELU), dropout, w2.
# Trained as a masked LM (Linformer's attention sees the whole sequence): 15% of the tokens
# replaced by a mask id, cross entropy on those.


def default(val, default_val):
    return val if val is not None else default_val


def init_(tensor):
    dim = tensor.shape[-1]
    std = 1 / math.sqrt(dim)
    tensor.uniform_(-std, std)
    return tensor


def route_args(router, args, depth):
    routed_args = [(dict(), dict()) for _ in range(depth)]
    matched_keys = [key for key in args.keys() if key in router]

    for key in matched_keys:
        val = args[key]
        for depth, ((f_args, g_args), routes) in enumerate(zip(routed_args, router[key])):
            new_f_args, new_g_args = map(lambda route: ({key: val} if route else {}), routes)
            routed_args[depth] = ({**f_args, **new_f_args}, {**g_args, **new_g_args})
    return routed_args


class SequentialSequence(nn.Module):
    def __init__(self, layers, args_route={}):
        super().__init__()
        assert all(len(route) == len(layers) for route in args_route.values()), \
            "each argument route map must have the same depth as the number of sequential layers"
        self.layers = layers
        self.args_route = args_route

    def forward(self, x, **kwargs):
        args = route_args(self.args_route, kwargs, len(self.layers))
        layers_and_args = list(zip(self.layers, args))

        for (f, g), (f_args, g_args) in layers_and_args:
            x = x + f(x, **f_args)
            x = x + g(x, **g_args)
        return x


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, **kwargs):
        x = self.norm(x)
        return self.fn(x, **kwargs)


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4, dropout=0., activation=None, glu=False):
        super().__init__()
        activation = default(activation, nn.GELU)

        self.glu = glu
        self.w1 = nn.Linear(dim, dim * mult * (2 if glu else 1))
        self.act = activation()
        self.dropout = nn.Dropout(dropout)
        self.w2 = nn.Linear(dim * mult, dim)

    def forward(self, x, **kwargs):
        if not self.glu:
            x = self.w1(x)
            x = self.act(x)
        else:
            x, v = self.w1(x).chunk(2, dim=-1)
            x = self.act(x) * v

        x = self.dropout(x)
        x = self.w2(x)
        return x


class LinformerSelfAttention(nn.Module):
    def __init__(self, dim, seq_len, k=256, heads=8, dim_head=None, one_kv_head=False, share_kv=False, dropout=0.):
        super().__init__()
        assert (dim % heads) == 0, "dimension must be divisible by the number of heads"

        self.seq_len = seq_len
        self.k = k

        self.heads = heads

        dim_head = default(dim_head, dim // heads)
        self.dim_head = dim_head

        self.to_q = nn.Linear(dim, dim_head * heads, bias=False)

        kv_dim = dim_head if one_kv_head else (dim_head * heads)
        self.to_k = nn.Linear(dim, kv_dim, bias=False)
        self.proj_k = nn.Parameter(init_(torch.zeros(seq_len, k)))

        self.share_kv = share_kv
        if not share_kv:
            self.to_v = nn.Linear(dim, kv_dim, bias=False)
            self.proj_v = nn.Parameter(init_(torch.zeros(seq_len, k)))

        self.dropout = nn.Dropout(dropout)
        self.to_out = nn.Linear(dim_head * heads, dim)

    def forward(self, x, context=None, **kwargs):
        b, n, d, d_h, h, k = *x.shape, self.dim_head, self.heads, self.k

        kv_len = n if context is None else context.shape[1]
        assert kv_len <= self.seq_len, \
            f"the sequence length of the key / values must be {self.seq_len} - {kv_len} given"

        queries = self.to_q(x)

        def proj_seq_len(args):
            return torch.einsum("bnd,nk->bkd", *args)

        kv_input = x if context is None else context

        keys = self.to_k(kv_input)
        values = self.to_v(kv_input) if not self.share_kv else keys

        kv_projs = (self.proj_k, self.proj_v if not self.share_kv else self.proj_k)

        # allow for variable sequence lengths (less than maximum sequence length) by slicing projections

        if kv_len < self.seq_len:
            kv_projs = map(lambda t: t[:kv_len], kv_projs)

        # project keys and values along the sequence length dimension to k

        keys, values = map(proj_seq_len, zip((keys, values), kv_projs))

        # merge head into batch for queries and key / values

        queries = queries.reshape(b, n, h, -1).transpose(1, 2)

        def merge_key_values(t):
            return t.reshape(b, k, -1, d_h).transpose(1, 2).expand(-1, h, -1, -1)

        keys, values = map(merge_key_values, (keys, values))

        # attention

        dots = torch.einsum("bhnd,bhkd->bhnk", queries, keys) * (d_h ** -0.5)
        attn = dots.softmax(dim=-1)
        attn = self.dropout(attn)
        out = torch.einsum("bhnk,bhkd->bhnd", attn, values)

        # split heads
        out = out.transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


class Linformer(nn.Module):
    def __init__(self, dim, seq_len, depth, k=256, heads=8, dim_head=None, one_kv_head=False, share_kv=False,
                 reversible=False, dropout=0.):
        super().__init__()
        layers = nn.ModuleList([])
        for _ in range(depth):
            attn = LinformerSelfAttention(dim, seq_len, k=k, heads=heads, dim_head=dim_head, one_kv_head=one_kv_head,
                                          share_kv=share_kv, dropout=dropout)
            ff = FeedForward(dim, dropout=dropout)

            layers.append(nn.ModuleList([
                PreNorm(dim, attn),
                PreNorm(dim, ff)
            ]))

        assert not reversible, "ReversibleSequence: not used here"
        execute_type = SequentialSequence
        self.net = execute_type(layers)

    def forward(self, x):
        return self.net(x)


class LinformerLM(nn.Module):
    def __init__(self, num_tokens, dim, seq_len, depth, k=256, heads=8, dim_head=None, one_kv_head=False,
                 share_kv=False, reversible=False, dropout=0.):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(seq_len, dim)
        self.linformer = Linformer(dim, seq_len, depth, k=k, heads=heads, dim_head=dim_head,
                                   one_kv_head=one_kv_head, share_kv=share_kv, reversible=reversible, dropout=dropout)
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward(self, x):
        x = self.token_emb(x)
        x = self.pos_emb(torch.arange(x.shape[1], device=x.device)) + x
        x = self.linformer(x)
        out = self.to_logits(x)
        return out


def b_linformer():
    vocab, batch, seq_len, mask_id = 256, 4, 32, 255
    ids = randint(mask_id, batch, seq_len, seed=3)
    masked = torch.rand(batch, seq_len, generator=torch.Generator().manual_seed(4)) < 0.15
    inp = ids.masked_fill(masked, mask_id)
    target = ids.masked_fill(~masked, -100)  # cross entropy's ignore_index
    model = LinformerLM(num_tokens=vocab, dim=32, seq_len=seq_len, depth=2, k=8, heads=4, dropout=0.1)
    return dict(model=model, inputs=(inp,), target=target, loss=ce_tokens)


REGISTRY = [
    ("las_pyramidal", "speech", "adam", b_las),
    ("rnnt_transducer", "speech", "adam", b_rnnt),
    ("informer_lite", "timeseries", "adam", b_informer),
    ("ple_multitask", "recsys", "adam", b_ple),
    ("realnvp_flow", "generative", "adam", b_flow),
    ("pixelcnn_masked", "generative", "adam", b_pixelcnn),
    ("graph_unet_topk", "gnn", "adam", b_graph_unet),
    ("linformer_lm", "encoder", "adamw", b_linformer),
]

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS8 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants8.py",
    os.path.join(DATA, "corpus-cpu-variants8"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-backward", "corpus-cpu-modern", "corpus-cpu-families",
                                      "corpus-cpu-heldout", "corpus-cpu-variants", "corpus-cpu-variants2",
                                      "corpus-cpu-variants3", "corpus-cpu-variants4", "corpus-cpu-variants5",
                                      "corpus-cpu-variants6", "corpus-cpu-variants7", "corpus-cpu-objectives",
                                      "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS8)
