"""Strata's twelfth variants corpus, part seqgraph: a time-series transformer and a graph transformer,
each written the way its reference code writes it.

thuml's Autoformer (Autoformer-main: models/Autoformer.py Model; layers/Autoformer_EncDec.py
my_Layernorm, moving_avg, series_decomp, EncoderLayer, Encoder, DecoderLayer, Decoder;
layers/AutoCorrelation.py AutoCorrelation, AutoCorrelationLayer; layers/Embed.py TokenEmbedding,
TimeFeatureEmbedding, DataEmbedding_wo_pos) in training mode: the input series decomposed by
series_decomp (moving_avg: the ends padded by repeating the first and last steps, cat, AvgPool1d on
the permuted series; the seasonal part x - moving_mean) into the decoder's seasonal init (the last
label_len steps and zeros) and trend init (the last label_len steps and the series mean); encoder and
decoder inputs embedded by DataEmbedding_wo_pos (TokenEmbedding's circular Conv1d on the permuted
values plus TimeFeatureEmbedding's Linear on the time marks, dropout); Encoder layers of an
AutoCorrelationLayer (query, key and value projections viewed into heads, AutoCorrelation: rfft of
queries and keys, q_fft * conj(k_fft), irfft, time_delay_agg_training: the mean correlation, topk
delays, softmax weights, torch.roll of the values and the weighted sum; out_projection), the residual
with dropout, decomp1, the 1x1 conv1/conv2 feed-forward with gelu and dropout, decomp2; my_Layernorm
(LayerNorm minus its mean over time); a Decoder layer of self AutoCorrelation, cross AutoCorrelation
and the feed-forward, each followed by a decomp whose trends are summed and projected by the circular
Conv1d projection into the running trend; the final norm and Linear projection; trend + seasonal, the
prediction window. MSE against the future values.

Microsoft's Graphormer as transformers writes it (models/graphormer/modeling_graphormer.py:
GraphormerForGraphClassification of a GraphormerModel and a GraphormerDecoderHead): the padded
batch as GraphormerDataCollator builds it from preprocess_item (convert_to_single_emb offsets,
Floyd-Warshall shortest paths, gen_edge_input's per-hop edge features); GraphormerGraphEncoder: the
padding mask from the first node feature, GraphormerGraphAttnBias (attn_bias repeated per head,
spatial_pos_encoder permuted and added, graph_token_virtual_distance added to the graph token's row
and column, the multi-hop edge encoding: edge_encoder mean over the edge features, bmm per hop with
edge_dis_encoder's weight, summed over hops and divided by the path length), GraphormerGraphNodeFeature
(atom_encoder summed over the atom features plus in_degree_encoder and out_degree_encoder, the
graph_token tiled and concatenated in front), emb_layer_norm, dropout, the transpose to (node, graph,
dim) and GraphormerGraphEncoderLayers in pre-LN form (self_attn_layer_norm, GraphormerMultiheadAttention:
q_proj, k_proj, v_proj, q scaled in place, heads by view and transpose, bmm, the attention bias added in
place, the key padding mask by masked_fill, softmax, dropout_module, bmm, out_proj; dropout and the
residual; final_layer_norm, fc1, gelu, activation_dropout_module, fc2, dropout, residual); then
GraphormerModel's lm_head_transform_weight, gelu and layer_norm, and the head's classifier plus its
learned bias on the graph token. Cross entropy on the graph labels.
"""

import math, os, sys  # noqa: E401
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_cpu_heldout as rh  # noqa: E402,F401
from record_cpu_corpus import ce, mse, randint, randn  # noqa: E402,F401
import torch, torch.nn as nn, torch.nn.functional as F  # noqa: E401,E402
import dataclasses  # noqa: E402


# ---------------------------------------------------------------------------------------
# Autoformer as thuml writes it (github.com/thuml/Autoformer: models/Autoformer.py Model;
# layers/Autoformer_EncDec.py my_Layernorm, moving_avg, series_decomp, EncoderLayer, Encoder,
# DecoderLayer, Decoder; layers/AutoCorrelation.py AutoCorrelation, AutoCorrelationLayer;
# layers/Embed.py TokenEmbedding, TimeFeatureEmbedding, DataEmbedding_wo_pos). run.py's defaults
# (embed timeF, freq h: 4 time features, factor 1, dropout 0.05, gelu, features M) but the sizes:
# seq_len 16, label_len 8, pred_len 8, 3 channels, d_model 16, 4 heads, d_ff 32, moving_avg 5,
# 2 encoder layers, 1 decoder layer, batch 4. Encoder, EncoderLayer, Decoder, DecoderLayer and Model
# are renamed Autoformer* so they do not clash with other parts; attribute names are the
# reference's. Left out: the inference path (time_delay_agg_inference, never taken in train mode),
# output_attention, masks (all None in Autoformer). DataEmbedding_wo_pos's PositionalEmbedding and
# AutoCorrelation's dropout are built and never called, as in the reference.


@dataclasses.dataclass
class AutoformerConfigs:
    seq_len: int = 16
    label_len: int = 8
    pred_len: int = 8
    enc_in: int = 3
    dec_in: int = 3
    c_out: int = 3
    d_model: int = 16
    n_heads: int = 4
    e_layers: int = 2
    d_layers: int = 1
    d_ff: int = 32
    moving_avg: int = 5
    factor: int = 1
    dropout: float = 0.05
    embed: str = "timeF"
    freq: str = "h"
    activation: str = "gelu"
    output_attention: bool = False


class PositionalEmbedding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model).float()
        position = torch.arange(0, max_len).float().unsqueeze(1)
        div_term = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.pe[:, :x.size(1)]


class TokenEmbedding(nn.Module):
    def __init__(self, c_in, d_model):
        super().__init__()
        # the reference picks padding=1 for torch >= 1.5 (compared_version)
        self.tokenConv = nn.Conv1d(in_channels=c_in, out_channels=d_model, kernel_size=3, padding=1,
                                   padding_mode="circular", bias=False)
        for m in self.modules():
            if isinstance(m, nn.Conv1d):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="leaky_relu")

    def forward(self, x):
        return self.tokenConv(x.permute(0, 2, 1)).transpose(1, 2)


class TimeFeatureEmbedding(nn.Module):
    def __init__(self, d_model, embed_type="timeF", freq="h"):
        super().__init__()
        freq_map = {"h": 4, "t": 5, "s": 6, "m": 1, "a": 1, "w": 2, "d": 3, "b": 3}
        self.embed = nn.Linear(freq_map[freq], d_model, bias=False)

    def forward(self, x):
        return self.embed(x)


class DataEmbedding_wo_pos(nn.Module):
    def __init__(self, c_in, d_model, embed_type="timeF", freq="h", dropout=0.1):
        super().__init__()
        self.value_embedding = TokenEmbedding(c_in=c_in, d_model=d_model)
        self.position_embedding = PositionalEmbedding(d_model=d_model)
        self.temporal_embedding = TimeFeatureEmbedding(d_model=d_model, embed_type=embed_type, freq=freq)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, x_mark):
        x = self.value_embedding(x) + self.temporal_embedding(x_mark)
        return self.dropout(x)


class my_Layernorm(nn.Module):
    """Autoformer's layernorm for the seasonal part: LayerNorm, minus its mean over time."""

    def __init__(self, channels):
        super().__init__()
        self.layernorm = nn.LayerNorm(channels)

    def forward(self, x):
        x_hat = self.layernorm(x)
        bias = torch.mean(x_hat, dim=1).unsqueeze(1).repeat(1, x.shape[1], 1)
        return x_hat - bias


class moving_avg(nn.Module):
    def __init__(self, kernel_size, stride):
        super().__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=0)

    def forward(self, x):
        pad = (self.kernel_size - 1) // 2
        front = x[:, 0:1, :].repeat(1, pad, 1)
        end = x[:, -1:, :].repeat(1, pad, 1)
        x = torch.cat([front, x, end], dim=1)
        x = self.avg(x.permute(0, 2, 1))
        return x.permute(0, 2, 1)


class series_decomp(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.moving_avg = moving_avg(kernel_size, stride=1)

    def forward(self, x):
        moving_mean = self.moving_avg(x)
        res = x - moving_mean
        return res, moving_mean


class AutoCorrelation(nn.Module):
    """Period-based dependencies by FFT, then time delay aggregation (the training-phase version)."""

    def __init__(self, mask_flag=True, factor=1, scale=None, attention_dropout=0.1, output_attention=False):
        super().__init__()
        self.factor = factor
        self.scale = scale
        self.mask_flag = mask_flag
        self.output_attention = output_attention
        self.dropout = nn.Dropout(attention_dropout)  # built, never called, as in the reference

    def time_delay_agg_training(self, values, corr):
        head, channel, length = values.shape[1], values.shape[2], values.shape[3]
        top_k = int(self.factor * math.log(length))
        mean_value = torch.mean(torch.mean(corr, dim=1), dim=1)
        index = torch.topk(torch.mean(mean_value, dim=0), top_k, dim=-1)[1]
        weights = torch.stack([mean_value[:, index[i]] for i in range(top_k)], dim=-1)
        tmp_corr = torch.softmax(weights, dim=-1)
        tmp_values = values
        delays_agg = torch.zeros_like(values).float()
        for i in range(top_k):
            pattern = torch.roll(tmp_values, -int(index[i]), -1)
            w = tmp_corr[:, i].unsqueeze(1).unsqueeze(1).unsqueeze(1).repeat(1, head, channel, length)
            delays_agg = delays_agg + pattern * w
        return delays_agg

    def forward(self, queries, keys, values, attn_mask):
        B, L, H, E = queries.shape
        _, S, _, D = values.shape
        if L > S:
            zeros = torch.zeros_like(queries[:, :(L - S), :]).float()
            values = torch.cat([values, zeros], dim=1)
            keys = torch.cat([keys, zeros], dim=1)
        else:
            values = values[:, :L, :, :]
            keys = keys[:, :L, :, :]
        q_fft = torch.fft.rfft(queries.permute(0, 2, 3, 1).contiguous(), dim=-1)
        k_fft = torch.fft.rfft(keys.permute(0, 2, 3, 1).contiguous(), dim=-1)
        res = q_fft * torch.conj(k_fft)
        corr = torch.fft.irfft(res, n=L, dim=-1)
        V = self.time_delay_agg_training(values.permute(0, 2, 3, 1).contiguous(), corr).permute(0, 3, 1, 2)
        return V.contiguous(), None


class AutoCorrelationLayer(nn.Module):
    def __init__(self, correlation, d_model, n_heads, d_keys=None, d_values=None):
        super().__init__()
        d_keys = d_keys or (d_model // n_heads)
        d_values = d_values or (d_model // n_heads)
        self.inner_correlation = correlation
        self.query_projection = nn.Linear(d_model, d_keys * n_heads)
        self.key_projection = nn.Linear(d_model, d_keys * n_heads)
        self.value_projection = nn.Linear(d_model, d_values * n_heads)
        self.out_projection = nn.Linear(d_values * n_heads, d_model)
        self.n_heads = n_heads

    def forward(self, queries, keys, values, attn_mask):
        B, L, _ = queries.shape
        _, S, _ = keys.shape
        H = self.n_heads
        queries = self.query_projection(queries).view(B, L, H, -1)
        keys = self.key_projection(keys).view(B, S, H, -1)
        values = self.value_projection(values).view(B, S, H, -1)
        out, attn = self.inner_correlation(queries, keys, values, attn_mask)
        out = out.view(B, L, -1)
        return self.out_projection(out), attn


class AutoformerEncoderLayer(nn.Module):
    """Autoformer_EncDec.EncoderLayer: progressive decomposition around attention and the 1x1 FFN."""

    def __init__(self, attention, d_model, d_ff=None, moving_avg=25, dropout=0.1, activation="relu"):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.attention = attention
        self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1, bias=False)
        self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1, bias=False)
        self.decomp1 = series_decomp(moving_avg)
        self.decomp2 = series_decomp(moving_avg)
        self.dropout = nn.Dropout(dropout)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x, attn_mask=None):
        new_x, attn = self.attention(x, x, x, attn_mask=attn_mask)
        x = x + self.dropout(new_x)
        x, _ = self.decomp1(x)
        y = x
        y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))
        res, _ = self.decomp2(x + y)
        return res, attn


class AutoformerEncoder(nn.Module):
    def __init__(self, attn_layers, conv_layers=None, norm_layer=None):
        super().__init__()
        self.attn_layers = nn.ModuleList(attn_layers)
        self.conv_layers = nn.ModuleList(conv_layers) if conv_layers is not None else None
        self.norm = norm_layer

    def forward(self, x, attn_mask=None):
        attns = []
        for attn_layer in self.attn_layers:
            x, attn = attn_layer(x, attn_mask=attn_mask)
            attns.append(attn)
        if self.norm is not None:
            x = self.norm(x)
        return x, attns


class AutoformerDecoderLayer(nn.Module):
    """Autoformer_EncDec.DecoderLayer: self and cross auto-correlation, FFN, three decomps, the trend projection."""

    def __init__(self, self_attention, cross_attention, d_model, c_out, d_ff=None, moving_avg=25, dropout=0.1,
                 activation="relu"):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.self_attention = self_attention
        self.cross_attention = cross_attention
        self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1, bias=False)
        self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1, bias=False)
        self.decomp1 = series_decomp(moving_avg)
        self.decomp2 = series_decomp(moving_avg)
        self.decomp3 = series_decomp(moving_avg)
        self.dropout = nn.Dropout(dropout)
        self.projection = nn.Conv1d(in_channels=d_model, out_channels=c_out, kernel_size=3, stride=1, padding=1,
                                    padding_mode="circular", bias=False)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x, cross, x_mask=None, cross_mask=None):
        x = x + self.dropout(self.self_attention(x, x, x, attn_mask=x_mask)[0])
        x, trend1 = self.decomp1(x)
        x = x + self.dropout(self.cross_attention(x, cross, cross, attn_mask=cross_mask)[0])
        x, trend2 = self.decomp2(x)
        y = x
        y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))
        x, trend3 = self.decomp3(x + y)
        residual_trend = trend1 + trend2 + trend3
        residual_trend = self.projection(residual_trend.permute(0, 2, 1)).transpose(1, 2)
        return x, residual_trend


class AutoformerDecoder(nn.Module):
    def __init__(self, layers, norm_layer=None, projection=None):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = norm_layer
        self.projection = projection

    def forward(self, x, cross, x_mask=None, cross_mask=None, trend=None):
        for layer in self.layers:
            x, residual_trend = layer(x, cross, x_mask=x_mask, cross_mask=cross_mask)
            trend = trend + residual_trend
        if self.norm is not None:
            x = self.norm(x)
        if self.projection is not None:
            x = self.projection(x)
        return x, trend


class Autoformer(nn.Module):
    """models/Autoformer.py Model: series-wise connection by auto-correlation, progressive decomposition."""

    def __init__(self, configs):
        super().__init__()
        self.seq_len = configs.seq_len
        self.label_len = configs.label_len
        self.pred_len = configs.pred_len
        self.output_attention = configs.output_attention
        self.decomp = series_decomp(configs.moving_avg)
        self.enc_embedding = DataEmbedding_wo_pos(configs.enc_in, configs.d_model, configs.embed, configs.freq,
                                                  configs.dropout)
        self.dec_embedding = DataEmbedding_wo_pos(configs.dec_in, configs.d_model, configs.embed, configs.freq,
                                                  configs.dropout)
        self.encoder = AutoformerEncoder(
            [AutoformerEncoderLayer(
                AutoCorrelationLayer(AutoCorrelation(False, configs.factor, attention_dropout=configs.dropout,
                                                     output_attention=configs.output_attention),
                                     configs.d_model, configs.n_heads),
                configs.d_model, configs.d_ff, moving_avg=configs.moving_avg, dropout=configs.dropout,
                activation=configs.activation) for _ in range(configs.e_layers)],
            norm_layer=my_Layernorm(configs.d_model))
        self.decoder = AutoformerDecoder(
            [AutoformerDecoderLayer(
                AutoCorrelationLayer(AutoCorrelation(True, configs.factor, attention_dropout=configs.dropout,
                                                     output_attention=False), configs.d_model, configs.n_heads),
                AutoCorrelationLayer(AutoCorrelation(False, configs.factor, attention_dropout=configs.dropout,
                                                     output_attention=False), configs.d_model, configs.n_heads),
                configs.d_model, configs.c_out, configs.d_ff, moving_avg=configs.moving_avg,
                dropout=configs.dropout, activation=configs.activation) for _ in range(configs.d_layers)],
            norm_layer=my_Layernorm(configs.d_model),
            projection=nn.Linear(configs.d_model, configs.c_out, bias=True))

    def forward(self, x_enc, x_mark_enc, x_dec, x_mark_dec, enc_self_mask=None, dec_self_mask=None,
                dec_enc_mask=None):
        mean = torch.mean(x_enc, dim=1).unsqueeze(1).repeat(1, self.pred_len, 1)
        zeros = torch.zeros([x_dec.shape[0], self.pred_len, x_dec.shape[2]], device=x_enc.device)
        seasonal_init, trend_init = self.decomp(x_enc)
        trend_init = torch.cat([trend_init[:, -self.label_len:, :], mean], dim=1)
        seasonal_init = torch.cat([seasonal_init[:, -self.label_len:, :], zeros], dim=1)
        enc_out = self.enc_embedding(x_enc, x_mark_enc)
        enc_out, attns = self.encoder(enc_out, attn_mask=enc_self_mask)
        dec_out = self.dec_embedding(seasonal_init, x_mark_dec)
        seasonal_part, trend_part = self.decoder(dec_out, enc_out, x_mask=dec_self_mask, cross_mask=dec_enc_mask,
                                                 trend=trend_init)
        dec_out = trend_part + seasonal_part
        return dec_out[:, -self.pred_len:, :]


def b_autoformer():
    cfg = AutoformerConfigs()
    batch = 4
    series = randn(batch, cfg.seq_len + cfg.pred_len, cfg.enc_in, seed=21)
    marks = randn(batch, cfg.seq_len + cfg.pred_len, 4, seed=22) * 0.5  # time features in [-0.5, 0.5]-ish
    x_enc, x_mark_enc = series[:, :cfg.seq_len], marks[:, :cfg.seq_len]
    batch_y = series[:, cfg.seq_len - cfg.label_len:]
    x_mark_dec = marks[:, cfg.seq_len - cfg.label_len:]
    # exp_main.py: dec_inp = cat(batch_y[:, :label_len], zeros of pred_len)
    x_dec = torch.cat([batch_y[:, :cfg.label_len], torch.zeros_like(batch_y[:, -cfg.pred_len:])], dim=1)
    target = batch_y[:, -cfg.pred_len:].contiguous()
    return dict(model=Autoformer(cfg), inputs=(x_enc, x_mark_enc, x_dec, x_mark_dec), target=target, loss=mse)


# ---------------------------------------------------------------------------------------
# Graphormer as Hugging Face transformers writes it (models/graphormer/modeling_graphormer.py:
# GraphormerForGraphClassification, GraphormerModel, GraphormerGraphEncoder, GraphormerGraphNodeFeature,
# GraphormerGraphAttnBias, GraphormerGraphEncoderLayer, GraphormerMultiheadAttention,
# GraphormerDecoderHead; the batch as collating_graphormer.py's preprocess_item and
# GraphormerDataCollator build it, the Cython algos_graphormer floyd_warshall and gen_edge_input
# written in Python). GraphormerConfig's defaults (edge_type multi_hop, gelu, dropout 0.1,
# layerdrop 0, no q_noise, embed_scale None, apply_graphormer_init False) but pre_layernorm and
# encoder_normalize_before on, and the sizes: 3 atom and 2 edge features with offset 16
# (num_atoms 48, num_edges 32), num_in/out_degree 16, num_spatial 16, num_edge_dis 8,
# multi_hop_max_dist 5, embedding_dim 32, 4 heads, ffn 64, 2 layers, 3 classes; 3 connected random
# graphs of 5, 8 and 6 nodes padded to 8. Left out: quant_noise and LayerDropModuleList (identity
# and a plain ModuleList at these settings), the return_dict outputs and the in-model loss (the
# logits are returned and the harness applies cross entropy); the encoder's final_layer_norm is
# built as the reference builds it under pre_layernorm and, as there, never called.


@dataclasses.dataclass
class GraphormerConfig:
    num_classes: int = 3
    num_atoms: int = 3 * 16
    num_edges: int = 2 * 16
    num_in_degree: int = 16
    num_out_degree: int = 16
    num_spatial: int = 16
    num_edge_dis: int = 8
    multi_hop_max_dist: int = 5
    max_nodes: int = 64
    edge_type: str = "multi_hop"
    num_hidden_layers: int = 2
    embedding_dim: int = 32
    ffn_embedding_dim: int = 64
    num_attention_heads: int = 4
    dropout: float = 0.1
    attention_dropout: float = 0.1
    activation_dropout: float = 0.1
    layerdrop: float = 0.0
    encoder_normalize_before: bool = True
    pre_layernorm: bool = True
    apply_graphormer_init: bool = False
    activation_fn: str = "gelu"
    embed_scale: float = None
    traceable: bool = False
    q_noise: float = 0.0
    qn_block_size: int = 8
    kdim: int = None
    vdim: int = None
    bias: bool = True
    share_input_output_embed: bool = False
    pad_token_id: int = 0

    @property
    def hidden_size(self):
        return self.embedding_dim


class GraphormerGELU(nn.Module):
    """ACT2FN["gelu"] (transformers' GELUActivation: nn.functional.gelu)."""

    def forward(self, input):
        return F.gelu(input)


class GraphormerGraphNodeFeature(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.num_atoms = config.num_atoms
        self.atom_encoder = nn.Embedding(config.num_atoms + 1, config.hidden_size, padding_idx=config.pad_token_id)
        self.in_degree_encoder = nn.Embedding(config.num_in_degree, config.hidden_size,
                                              padding_idx=config.pad_token_id)
        self.out_degree_encoder = nn.Embedding(config.num_out_degree, config.hidden_size,
                                               padding_idx=config.pad_token_id)
        self.graph_token = nn.Embedding(1, config.hidden_size)

    def forward(self, input_nodes, in_degree, out_degree):
        n_graph, n_node = input_nodes.size()[:2]
        node_feature = (self.atom_encoder(input_nodes).sum(dim=-2) + self.in_degree_encoder(in_degree)
                        + self.out_degree_encoder(out_degree))
        graph_token_feature = self.graph_token.weight.unsqueeze(0).repeat(n_graph, 1, 1)
        return torch.cat([graph_token_feature, node_feature], dim=1)


class GraphormerGraphAttnBias(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.multi_hop_max_dist = config.multi_hop_max_dist
        self.edge_encoder = nn.Embedding(config.num_edges + 1, config.num_attention_heads, padding_idx=0)
        self.edge_type = config.edge_type
        if self.edge_type == "multi_hop":
            self.edge_dis_encoder = nn.Embedding(
                config.num_edge_dis * config.num_attention_heads * config.num_attention_heads, 1)
        self.spatial_pos_encoder = nn.Embedding(config.num_spatial, config.num_attention_heads, padding_idx=0)
        self.graph_token_virtual_distance = nn.Embedding(1, config.num_attention_heads)

    def forward(self, input_nodes, attn_bias, spatial_pos, input_edges, attn_edge_type):
        n_graph, n_node = input_nodes.size()[:2]
        graph_attn_bias = attn_bias.clone()
        graph_attn_bias = graph_attn_bias.unsqueeze(1).repeat(1, self.num_heads, 1, 1)
        # [n_graph, n_node, n_node, n_head] -> [n_graph, n_head, n_node, n_node]
        spatial_pos_bias = self.spatial_pos_encoder(spatial_pos).permute(0, 3, 1, 2)
        graph_attn_bias[:, :, 1:, 1:] = graph_attn_bias[:, :, 1:, 1:] + spatial_pos_bias
        t = self.graph_token_virtual_distance.weight.view(1, self.num_heads, 1)
        graph_attn_bias[:, :, 1:, 0] = graph_attn_bias[:, :, 1:, 0] + t
        graph_attn_bias[:, :, 0, :] = graph_attn_bias[:, :, 0, :] + t
        if self.edge_type == "multi_hop":
            spatial_pos_ = spatial_pos.clone()
            spatial_pos_[spatial_pos_ == 0] = 1  # pad to 1
            spatial_pos_ = torch.where(spatial_pos_ > 1, spatial_pos_ - 1, spatial_pos_)
            if self.multi_hop_max_dist > 0:
                spatial_pos_ = spatial_pos_.clamp(0, self.multi_hop_max_dist)
                input_edges = input_edges[:, :, :, :self.multi_hop_max_dist, :]
            input_edges = self.edge_encoder(input_edges).mean(-2)
            max_dist = input_edges.size(-2)
            edge_input_flat = input_edges.permute(3, 0, 1, 2, 4).reshape(max_dist, -1, self.num_heads)
            edge_input_flat = torch.bmm(
                edge_input_flat,
                self.edge_dis_encoder.weight.reshape(-1, self.num_heads, self.num_heads)[:max_dist, :, :])
            input_edges = edge_input_flat.reshape(max_dist, n_graph, n_node, n_node, self.num_heads).permute(
                1, 2, 3, 0, 4)
            input_edges = (input_edges.sum(-2) / (spatial_pos_.float().unsqueeze(-1))).permute(0, 3, 1, 2)
        else:
            input_edges = self.edge_encoder(attn_edge_type).mean(-2).permute(0, 3, 1, 2)
        graph_attn_bias[:, :, 1:, 1:] = graph_attn_bias[:, :, 1:, 1:] + input_edges
        graph_attn_bias = graph_attn_bias + attn_bias.unsqueeze(1)  # reset
        return graph_attn_bias


class GraphormerMultiheadAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embedding_dim = config.embedding_dim
        self.kdim = config.kdim if config.kdim is not None else config.embedding_dim
        self.vdim = config.vdim if config.vdim is not None else config.embedding_dim
        self.qkv_same_dim = self.kdim == config.embedding_dim and self.vdim == config.embedding_dim
        self.num_heads = config.num_attention_heads
        self.dropout_module = nn.Dropout(p=config.dropout, inplace=False)
        self.head_dim = config.embedding_dim // config.num_attention_heads
        self.scaling = self.head_dim ** -0.5
        self.self_attention = True
        self.k_proj = nn.Linear(self.kdim, config.embedding_dim, bias=config.bias)
        self.v_proj = nn.Linear(self.vdim, config.embedding_dim, bias=config.bias)
        self.q_proj = nn.Linear(config.embedding_dim, config.embedding_dim, bias=config.bias)
        self.out_proj = nn.Linear(config.embedding_dim, config.embedding_dim, bias=config.bias)
        self.onnx_trace = False

    def reset_parameters(self):
        gain = 1 / math.sqrt(2) if self.qkv_same_dim else 1.0
        nn.init.xavier_uniform_(self.k_proj.weight, gain=gain)
        nn.init.xavier_uniform_(self.v_proj.weight, gain=gain)
        nn.init.xavier_uniform_(self.q_proj.weight, gain=gain)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if self.out_proj.bias is not None:
            nn.init.constant_(self.out_proj.bias, 0.0)

    def forward(self, query, key, value, attn_bias, key_padding_mask=None, need_weights=True, attn_mask=None,
                before_softmax=False, need_head_weights=False):
        if need_head_weights:
            need_weights = True
        tgt_len, bsz, embedding_dim = query.size()
        src_len = tgt_len
        q = self.q_proj(query)
        k = self.k_proj(query)
        v = self.v_proj(query)
        q *= self.scaling
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        attn_weights = self.apply_sparse_mask(attn_weights, tgt_len, src_len, bsz)
        if attn_bias is not None:
            attn_weights += attn_bias.view(bsz * self.num_heads, tgt_len, src_len)
        if attn_mask is not None:
            attn_weights += attn_mask.unsqueeze(0)
        if key_padding_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(key_padding_mask.unsqueeze(1).unsqueeze(2).to(torch.bool),
                                                    float("-inf"))
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        if before_softmax:
            return attn_weights, v
        attn_weights_float = F.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights_float.type_as(attn_weights)
        attn_probs = self.dropout_module(attn_weights)
        attn = torch.bmm(attn_probs, v)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embedding_dim)
        attn = self.out_proj(attn)
        attn_weights = None
        if need_weights:
            attn_weights = attn_weights_float.contiguous().view(bsz, self.num_heads, tgt_len, src_len).transpose(1, 0)
            if not need_head_weights:
                attn_weights = attn_weights.mean(dim=0)
        return attn, attn_weights

    def apply_sparse_mask(self, attn_weights, tgt_len, src_len, bsz):
        return attn_weights


class GraphormerGraphEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embedding_dim = config.embedding_dim
        self.num_attention_heads = config.num_attention_heads
        self.attention_dropout = config.attention_dropout
        self.pre_layernorm = config.pre_layernorm
        self.dropout_module = nn.Dropout(p=config.dropout, inplace=False)
        self.activation_dropout_module = nn.Dropout(p=config.dropout, inplace=False)
        self.activation_fn = GraphormerGELU()
        self.self_attn = GraphormerMultiheadAttention(config)
        self.self_attn_layer_norm = nn.LayerNorm(self.embedding_dim)
        self.fc1 = nn.Linear(self.embedding_dim, config.ffn_embedding_dim)
        self.fc2 = nn.Linear(config.ffn_embedding_dim, self.embedding_dim)
        self.final_layer_norm = nn.LayerNorm(self.embedding_dim)

    def forward(self, input_nodes, self_attn_bias=None, self_attn_mask=None, self_attn_padding_mask=None):
        residual = input_nodes
        if self.pre_layernorm:
            input_nodes = self.self_attn_layer_norm(input_nodes)
        input_nodes, attn = self.self_attn(query=input_nodes, key=input_nodes, value=input_nodes,
                                           attn_bias=self_attn_bias, key_padding_mask=self_attn_padding_mask,
                                           need_weights=False, attn_mask=self_attn_mask)
        input_nodes = self.dropout_module(input_nodes)
        input_nodes = residual + input_nodes
        if not self.pre_layernorm:
            input_nodes = self.self_attn_layer_norm(input_nodes)
        residual = input_nodes
        if self.pre_layernorm:
            input_nodes = self.final_layer_norm(input_nodes)
        input_nodes = self.activation_fn(self.fc1(input_nodes))
        input_nodes = self.activation_dropout_module(input_nodes)
        input_nodes = self.fc2(input_nodes)
        input_nodes = self.dropout_module(input_nodes)
        input_nodes = residual + input_nodes
        if not self.pre_layernorm:
            input_nodes = self.final_layer_norm(input_nodes)
        return input_nodes, attn


class GraphormerGraphEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dropout_module = nn.Dropout(p=config.dropout, inplace=False)
        self.layerdrop = config.layerdrop
        self.embedding_dim = config.embedding_dim
        self.apply_graphormer_init = config.apply_graphormer_init
        self.traceable = config.traceable
        self.graph_node_feature = GraphormerGraphNodeFeature(config)
        self.graph_attn_bias = GraphormerGraphAttnBias(config)
        self.embed_scale = config.embed_scale
        self.quant_noise = None  # q_noise 0
        self.emb_layer_norm = nn.LayerNorm(self.embedding_dim) if config.encoder_normalize_before else None
        if config.pre_layernorm:
            self.final_layer_norm = nn.LayerNorm(self.embedding_dim)
        self.layers = nn.ModuleList([])  # layerdrop 0: a plain ModuleList
        self.layers.extend([GraphormerGraphEncoderLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, input_nodes, input_edges, attn_bias, in_degree, out_degree, spatial_pos, attn_edge_type,
                perturb=None, last_state_only=False, token_embeddings=None, attn_mask=None):
        data_x = input_nodes
        n_graph, n_node = data_x.size()[:2]
        padding_mask = (data_x[:, :, 0]).eq(0)
        padding_mask_cls = torch.zeros(n_graph, 1, device=padding_mask.device, dtype=padding_mask.dtype)
        padding_mask = torch.cat((padding_mask_cls, padding_mask), dim=1)
        attn_bias = self.graph_attn_bias(input_nodes, attn_bias, spatial_pos, input_edges, attn_edge_type)
        if token_embeddings is not None:
            input_nodes = token_embeddings
        else:
            input_nodes = self.graph_node_feature(input_nodes, in_degree, out_degree)
        if perturb is not None:
            input_nodes[:, 1:, :] += perturb
        if self.embed_scale is not None:
            input_nodes = input_nodes * self.embed_scale
        if self.emb_layer_norm is not None:
            input_nodes = self.emb_layer_norm(input_nodes)
        input_nodes = self.dropout_module(input_nodes)
        input_nodes = input_nodes.transpose(0, 1)
        inner_states = []
        if not last_state_only:
            inner_states.append(input_nodes)
        for layer in self.layers:
            input_nodes, _ = layer(input_nodes, self_attn_padding_mask=padding_mask, self_attn_mask=attn_mask,
                                   self_attn_bias=attn_bias)
            if not last_state_only:
                inner_states.append(input_nodes)
        graph_rep = input_nodes[0, :, :]
        if last_state_only:
            inner_states = [input_nodes]
        return inner_states, graph_rep


class GraphormerDecoderHead(nn.Module):
    def __init__(self, embedding_dim, num_classes):
        super().__init__()
        self.lm_output_learned_bias = nn.Parameter(torch.zeros(1))
        self.classifier = nn.Linear(embedding_dim, num_classes, bias=False)
        self.num_classes = num_classes

    def forward(self, input_nodes, **unused):
        input_nodes = self.classifier(input_nodes)
        return input_nodes + self.lm_output_learned_bias


def graphormer_init_weights(module):
    """GraphormerPreTrainedModel._init_weights (applied by post_init)."""
    if isinstance(module, nn.Linear):
        module.weight.data.normal_(mean=0.0, std=0.02)
        if module.bias is not None:
            module.bias.data.zero_()
    elif isinstance(module, nn.Embedding):
        module.weight.data.normal_(mean=0.0, std=0.02)
        if module.padding_idx is not None:
            module.weight.data[module.padding_idx].zero_()
    elif isinstance(module, GraphormerMultiheadAttention):
        module.q_proj.weight.data.normal_(mean=0.0, std=0.02)
        module.k_proj.weight.data.normal_(mean=0.0, std=0.02)
        module.v_proj.weight.data.normal_(mean=0.0, std=0.02)
        module.reset_parameters()
    elif isinstance(module, nn.LayerNorm):
        module.bias.data.zero_()
        module.weight.data.fill_(1.0)


class GraphormerModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.max_nodes = config.max_nodes
        self.graph_encoder = GraphormerGraphEncoder(config)
        self.share_input_output_embed = config.share_input_output_embed
        self.lm_output_learned_bias = None
        self.load_softmax = True
        self.lm_head_transform_weight = nn.Linear(config.embedding_dim, config.embedding_dim)
        self.activation_fn = GraphormerGELU()
        self.layer_norm = nn.LayerNorm(config.embedding_dim)

    def forward(self, input_nodes, input_edges, attn_bias, in_degree, out_degree, spatial_pos, attn_edge_type,
                perturb=None, masked_tokens=None):
        inner_states, graph_rep = self.graph_encoder(input_nodes, input_edges, attn_bias, in_degree, out_degree,
                                                     spatial_pos, attn_edge_type, perturb=perturb)
        input_nodes = inner_states[-1].transpose(0, 1)  # last inner state, back to (graph, node, dim)
        input_nodes = self.layer_norm(self.activation_fn(self.lm_head_transform_weight(input_nodes)))
        return input_nodes, inner_states


class GraphormerForGraphClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.encoder = GraphormerModel(config)
        self.embedding_dim = config.embedding_dim
        self.num_classes = config.num_classes
        self.classifier = GraphormerDecoderHead(self.embedding_dim, self.num_classes)
        self.is_encoder_decoder = True
        self.apply(graphormer_init_weights)

    def forward(self, input_nodes, input_edges, attn_bias, in_degree, out_degree, spatial_pos, attn_edge_type):
        outputs, hidden_states = self.encoder(input_nodes, input_edges, attn_bias, in_degree, out_degree,
                                              spatial_pos, attn_edge_type)
        head_outputs = self.classifier(outputs)
        return head_outputs[:, 0, :].contiguous()


UNREACHABLE_NODE_DISTANCE = 510


def graphormer_floyd_warshall(adj):
    """algos_graphormer.floyd_warshall in Python: distances and the intermediate node of each path."""
    n = len(adj)
    M = [[0 if i == j else (1 if adj[i][j] else UNREACHABLE_NODE_DISTANCE) for j in range(n)] for i in range(n)]
    path = [[-1] * n for _ in range(n)]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                if M[i][j] > M[i][k] + M[k][j]:
                    M[i][j] = M[i][k] + M[k][j]
                    path[i][j] = k
    for i in range(n):
        for j in range(n):
            if M[i][j] >= UNREACHABLE_NODE_DISTANCE:
                path[i][j] = M[i][j] = UNREACHABLE_NODE_DISTANCE
    return M, path


def graphormer_all_edges(path, i, j):
    k = path[i][j]
    return [] if k == -1 else graphormer_all_edges(path, i, k) + [k] + graphormer_all_edges(path, k, j)


def graphormer_preprocess(num_nodes, edges, node_feat, edge_attr, offset=16):
    """collating_graphormer.preprocess_item for one undirected graph (edges listed both ways)."""
    n = num_nodes
    x = node_feat + 1 + torch.arange(0, node_feat.shape[1] * offset, offset) + 1  # convert_to_single_emb + 1
    e_single = edge_attr + 1 + torch.arange(0, edge_attr.shape[1] * offset, offset)
    attn_edge_type = torch.zeros(n, n, edge_attr.shape[1], dtype=torch.long)
    adj = [[False] * n for _ in range(n)]
    for (s, d), ea in zip(edges, e_single):
        attn_edge_type[s, d] = ea + 1
        adj[s][d] = True
    dist, path = graphormer_floyd_warshall(adj)
    max_dist = max(max(r) for r in dist)
    edge_input = -torch.ones(n, n, max_dist, edge_attr.shape[1], dtype=torch.long)
    for i in range(n):
        for j in range(n):
            if i == j or path[i][j] == UNREACHABLE_NODE_DISTANCE:
                continue
            p = [i] + graphormer_all_edges(path, i, j) + [j]
            for k in range(len(p) - 1):
                edge_input[i, j, k] = attn_edge_type[p[k], p[k + 1]]
    deg = torch.tensor([sum(r) for r in adj]) + 1
    return dict(x=x + 1, attn_bias=torch.zeros(n + 1, n + 1), attn_edge_type=attn_edge_type,
                spatial_pos=torch.tensor(dist) + 1, in_degree=deg, edge_input=edge_input + 1)


def b_graphormer():
    cfg = GraphormerConfig()
    g = torch.Generator().manual_seed(31)
    feats = []
    for n in (5, 8, 6):
        und = {(i, int(torch.randint(0, i, (1,), generator=g))) for i in range(1, n)}  # a random tree
        for _ in range(2):  # and a couple of extra edges
            a, b = torch.randint(0, n, (2,), generator=g).tolist()
            if a != b:
                und.add((max(a, b), min(a, b)))
        edges = sorted(und) + sorted((d, s) for s, d in und)
        attr = torch.randint(0, 4, (len(und), 2), generator=g)
        feats.append(graphormer_preprocess(n, edges, torch.randint(0, 8, (n, 3), generator=g),
                                           torch.cat([attr, attr]), offset=16))
    # GraphormerDataCollator: pad to the largest graph and the longest path
    B, N = len(feats), max(f["x"].shape[0] for f in feats)
    D = max(f["edge_input"].shape[2] for f in feats)
    attn_bias = torch.zeros(B, N + 1, N + 1)
    attn_edge_type = torch.zeros(B, N, N, 2, dtype=torch.long)
    spatial_pos = torch.zeros(B, N, N, dtype=torch.long)
    in_degree = torch.zeros(B, N, dtype=torch.long)
    x = torch.zeros(B, N, 3, dtype=torch.long)
    edge_input = torch.zeros(B, N, N, D, 2, dtype=torch.long)
    for ix, f in enumerate(feats):
        n, d = f["x"].shape[0], f["edge_input"].shape[2]
        attn_bias[ix, :n + 1, :n + 1] = f["attn_bias"]
        attn_edge_type[ix, :n, :n] = f["attn_edge_type"]
        spatial_pos[ix, :n, :n] = f["spatial_pos"]
        in_degree[ix, :n] = f["in_degree"]
        x[ix, :n] = f["x"]
        edge_input[ix, :n, :n, :d] = f["edge_input"]
    out_degree = in_degree
    labels = torch.randint(0, cfg.num_classes, (B,), generator=g)
    return dict(model=GraphormerForGraphClassification(cfg),
                inputs=(x, edge_input, attn_bias, in_degree, out_degree, spatial_pos, attn_edge_type),
                target=labels, loss=ce)


REGISTRY = [
    ("autoformer_lite", "timeseries", "adam", b_autoformer),
    ("graphormer_lite", "gnn", "adamw", b_graphormer),
]
