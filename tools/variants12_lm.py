"""Strata's twelfth variants corpus, part lm: a hybrid Mamba/attention MoE language model and a
multi-query-attention code model, each written the way Hugging Face transformers writes it.

AI21's Jamba as transformers writes it (models/jamba/modeling_jamba.py: JambaForCausalLM of a
JambaModel and an untied lm_head) on the torch path (use_mamba_kernels=False, eager attention):
embed_tokens; the 4D causal mask built by _update_causal_mask (torch.full, triu, the arange
comparison, expand, clone and the padding masked_fill from the 2D attention mask) and the Mamba mask
dropped by _update_mamba_mask when every token is attended; layers alternating JambaMambaDecoderLayer
and JambaAttentionDecoderLayer, each input_layernorm (JambaRMSNorm: float32, pow(2).mean, rsqrt,
weight *), the mixer or self-attention, the residual sum, pre_ff_layernorm, feed_forward (JambaMLP:
down_proj(act_fn(gate_proj(x)) * up_proj(x)), or on one layer JambaSparseMoeBlock: the router's
softmax and top-2, one_hot expert mask, per expert torch.where, the gathered tokens through the expert
JambaMLP times their routing weight, index_add_) and the second residual sum; final_layernorm; lm_head
on hidden_states[:, slice(0, None), :]. JambaMambaMixer.slow_forward: in_proj, transpose, chunk into
hidden states and gate; the depthwise causal conv1d cut to seq_len, act (SiLU); x_proj split into
time_step, B and C, each through its RMSNorm (dt_layernorm, b_layernorm, c_layernorm); dt_proj and
softplus; A = -exp(A_log); discrete_A and deltaB_u; the selective scan as a python loop over the
sequence (ssm_state update, matmul with C); stack; + hidden_states * D; * act(gate); out_proj.
JambaAttention: q_proj, k_proj, v_proj viewed per head, repeat_kv for the grouped key/value heads,
matmul / sqrt(head_dim), + the causal mask, float32 softmax, dropout, matmul, o_proj (Jamba has no
rotary embedding). The loss as ForCausalLMLoss computes it (labels padded with -100 and shifted).

BigCode's GPTBigCode (SantaCoder/StarCoder) as transformers writes it
(models/gpt_bigcode/modeling_gpt_bigcode.py, the eager release before SDPA: GPTBigCodeForCausalLM
of a GPTBigCodeModel and an lm_head tied to wte): wte + wpe on position ids from the attention mask's
cumsum, drop; the self-attention mask sliced from the bool tril buffer `bias`, combined with the
attention mask and unsqueezed for multi-query; h, GPTBigCodeBlocks: ln_1, attn (GPTBigCodeAttention
with multi_query: the fused c_attn nn.Linear split into the query and one shared key_value, split
into key and value; _attn: the query reshaped to (batch, q_len * heads, head_dim), baddbmm on zeros
with alpha = 1/sqrt(head_dim) as the CPU path does, viewed back, torch.where with the cached mask
value, softmax, attn_dropout, bmm with the single value head, viewed to the query's shape), c_proj,
resid_dropout, the residual sum; ln_2, mlp (GPTBigCodeMLP: c_fc, act GELUPytorchTanh, c_proj,
dropout), the residual sum; ln_f; lm_head. The loss is the model's own: logits shifted by one, cross
entropy.
"""

import math, os, sys  # noqa: E401
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_cpu_heldout as rh  # noqa: E402,F401
from record_cpu_corpus import ce, mse, randint, randn  # noqa: E402,F401
import torch, torch.nn as nn, torch.nn.functional as F  # noqa: E402,E401
# transformers' Llama RMSNorm and repeat_kv, which Jamba's modeling file copies
from record_cpu_variants2 import LlamaRMSNorm, repeat_kv  # noqa: E402


# ---------------------------------------------------------------------------------------
# Jamba: huggingface/transformers src/transformers/models/jamba/modeling_jamba.py (JambaRMSNorm,
# repeat_kv, JambaAttention (eager), JambaMambaMixer.slow_forward, JambaMLP, JambaSparseMoeBlock,
# JambaAttentionDecoderLayer, JambaMambaDecoderLayer, JambaModel, JambaForCausalLM) with
# configuration_jamba.py's JambaConfig defaults but the sizes: hidden 32, intermediate 64, 4 heads,
# 2 key/value heads, 4 layers (attn_layer_period 2, offset 1: mamba, attention, mamba, attention),
# 4 experts top-2 on layer 2 only (expert_layer_period 4, offset 2), mamba d_state 8 (16 in the
# reference), d_conv 4, expand 2, dt_rank ceil(32 / 16) = 2; vocab 128, batch 2, seq 8.
# Left out: the CUDA path (cuda_kernels_forward: mamba_ssm's selective_scan_fn and causal_conv1d),
# the flash and SDPA attention classes, HybridMambaAttentionDynamicCache (use_cache False, so the
# slow path's zero ssm_state and plain conv branch), the router auxiliary loss
# (output_router_logits False, the config default), gradient checkpointing, output dataclasses.
# Weights as _init_weights sets them.


@dataclass
class JambaLmConfig:
    vocab_size: int = 65536
    tie_word_embeddings: bool = False
    hidden_size: int = 4096
    intermediate_size: int = 14336
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int = 8
    hidden_act: str = "silu"
    initializer_range: float = 0.02
    rms_norm_eps: float = 1e-6
    pad_token_id: int = 0
    attention_dropout: float = 0.0
    num_experts_per_tok: int = 2
    num_experts: int = 16
    expert_layer_period: int = 2
    expert_layer_offset: int = 1
    attn_layer_period: int = 8
    attn_layer_offset: int = 4
    use_mamba_kernels: bool = False
    mamba_d_state: int = 16
    mamba_d_conv: int = 4
    mamba_expand: int = 2
    mamba_dt_rank: object = "auto"
    mamba_conv_bias: bool = True
    mamba_proj_bias: bool = False

    def __post_init__(self):
        if self.mamba_dt_rank == "auto":
            self.mamba_dt_rank = math.ceil(self.hidden_size / 16)

    @property
    def layers_block_type(self):
        return ["attention" if i % self.attn_layer_period == self.attn_layer_offset else "mamba"
                for i in range(self.num_hidden_layers)]

    @property
    def layers_num_experts(self):
        return [self.num_experts if i % self.expert_layer_period == self.expert_layer_offset else 1
                for i in range(self.num_hidden_layers)]


class JambaRMSNorm(LlamaRMSNorm):
    """Llama's RMSNorm under Jamba's name (T5LayerNorm), op for op."""


class JambaAttention(nn.Module):
    """Eager grouped-query attention, no rotary embedding."""

    def __init__(self, config, layer_idx=None):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.hidden_size = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.hidden_size // self.num_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.is_causal = True
        self.attention_dropout = config.attention_dropout
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, self.hidden_size, bias=False)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, use_cache=False, cache_position=None):
        bsz, q_len, _ = hidden_states.size()

        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)

        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)

        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = attn_weights + causal_mask

        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)

        attn_output = self.o_proj(attn_output)

        if not output_attentions:
            attn_weights = None
        return attn_output, attn_weights, past_key_value


class JambaMambaMixer(nn.Module):
    """The selective state-space mixer; forward is the reference's slow_forward (no kernels, no cache)."""

    def __init__(self, config, layer_idx):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.hidden_size = config.hidden_size
        self.ssm_state_size = config.mamba_d_state
        self.conv_kernel_size = config.mamba_d_conv
        self.intermediate_size = config.mamba_expand * config.hidden_size
        self.time_step_rank = config.mamba_dt_rank
        self.use_conv_bias = config.mamba_conv_bias
        self.use_bias = config.mamba_proj_bias
        self.conv1d = nn.Conv1d(
            in_channels=self.intermediate_size,
            out_channels=self.intermediate_size,
            bias=self.use_conv_bias,
            kernel_size=self.conv_kernel_size,
            groups=self.intermediate_size,
            padding=self.conv_kernel_size - 1,
        )
        self.activation = config.hidden_act
        self.act = nn.SiLU()  # ACT2FN["silu"]
        self.use_fast_kernels = config.use_mamba_kernels

        self.in_proj = nn.Linear(self.hidden_size, self.intermediate_size * 2, bias=self.use_bias)
        self.x_proj = nn.Linear(self.intermediate_size, self.time_step_rank + self.ssm_state_size * 2, bias=False)
        self.dt_proj = nn.Linear(self.time_step_rank, self.intermediate_size, bias=True)

        # S4D real initialization
        A = torch.arange(1, self.ssm_state_size + 1)[None, :]
        A = A.expand(self.intermediate_size, -1).contiguous()
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(self.intermediate_size))
        self.out_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=self.use_bias)

        self.dt_layernorm = JambaRMSNorm(self.time_step_rank, eps=config.rms_norm_eps)
        self.b_layernorm = JambaRMSNorm(self.ssm_state_size, eps=config.rms_norm_eps)
        self.c_layernorm = JambaRMSNorm(self.ssm_state_size, eps=config.rms_norm_eps)

    def slow_forward(self, input_states, cache_params=None, attention_mask=None):
        batch_size, seq_len, _ = input_states.shape
        dtype = input_states.dtype
        # 1. gated projection: [batch, 2 * intermediate, seq]
        projected_states = self.in_proj(input_states).transpose(1, 2)
        hidden_states, gate = projected_states.chunk(2, dim=1)

        if attention_mask is not None:
            hidden_states = hidden_states * attention_mask.unsqueeze(1)

        # 2. convolution (no cache: zero state, plain causal conv)
        ssm_state = torch.zeros(
            (batch_size, self.intermediate_size, self.ssm_state_size), device=hidden_states.device, dtype=dtype
        )
        hidden_states = self.act(self.conv1d(hidden_states)[..., :seq_len])

        if attention_mask is not None:
            hidden_states = hidden_states * attention_mask.unsqueeze(1)

        # 3.a selection
        ssm_parameters = self.x_proj(hidden_states.transpose(1, 2))
        time_step, B, C = torch.split(
            ssm_parameters, [self.time_step_rank, self.ssm_state_size, self.ssm_state_size], dim=-1
        )
        time_step = self.dt_layernorm(time_step)
        B = self.b_layernorm(B)
        C = self.c_layernorm(C)

        discrete_time_step = self.dt_proj(time_step)
        discrete_time_step = nn.functional.softplus(discrete_time_step).transpose(1, 2)

        # 3.b discretization
        A = -torch.exp(self.A_log.float())
        discrete_A = torch.exp(A[None, :, None, :] * discrete_time_step[:, :, :, None])
        discrete_B = discrete_time_step[:, :, :, None] * B[:, None, :, :].float()
        deltaB_u = discrete_B * hidden_states[:, :, :, None].float()

        # 3.c the recurrence, a python loop over the sequence
        scan_outputs = []
        for i in range(seq_len):
            ssm_state = discrete_A[:, :, i, :] * ssm_state + deltaB_u[:, :, i, :]
            scan_output = torch.matmul(ssm_state.to(dtype), C[:, i, :].unsqueeze(-1))
            scan_outputs.append(scan_output[:, :, 0])
        scan_output = torch.stack(scan_outputs, dim=-1)
        scan_output = scan_output + (hidden_states * self.D[None, :, None])
        scan_output = (scan_output * self.act(gate))

        # 4. output projection
        contextualized_states = self.out_proj(scan_output.transpose(1, 2))
        return contextualized_states

    def forward(self, hidden_states, cache_params=None, attention_mask=None):
        return self.slow_forward(hidden_states, cache_params, attention_mask)


class JambaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.hidden_size = config.hidden_size
        self.intermediate_size = config.intermediate_size
        self.gate_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.up_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=False)
        self.act_fn = nn.SiLU()  # ACT2FN["silu"]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class JambaSparseMoeBlock(nn.Module):
    """Mixtral's sparse MoE block with Jamba's `router` name."""

    def __init__(self, config):
        super().__init__()
        self.hidden_dim = config.hidden_size
        self.ffn_dim = config.intermediate_size
        self.num_experts = config.num_experts
        self.top_k = config.num_experts_per_tok
        self.router = nn.Linear(self.hidden_dim, self.num_experts, bias=False)
        self.experts = nn.ModuleList([JambaMLP(config) for _ in range(self.num_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.router(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = torch.zeros(
            (batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype, device=hidden_states.device
        )
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)

        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            if top_x.shape[0] == 0:
                continue
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


class JambaAttentionDecoderLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        num_experts = config.layers_num_experts[layer_idx]
        self.self_attn = JambaAttention(config, layer_idx)
        ffn_layer_class = JambaSparseMoeBlock if num_experts > 1 else JambaMLP
        self.feed_forward = ffn_layer_class(config)
        self.input_layernorm = JambaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.pre_ff_layernorm = JambaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, output_router_logits=False, use_cache=False, cache_position=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, self_attn_weights, present_key_value = self.self_attn(
            hidden_states=hidden_states, attention_mask=attention_mask, position_ids=position_ids,
            past_key_value=past_key_value, output_attentions=output_attentions, use_cache=use_cache,
            cache_position=cache_position,
        )
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.pre_ff_layernorm(hidden_states)
        ff_outputs = self.feed_forward(hidden_states)
        if isinstance(ff_outputs, tuple):
            hidden_states, router_logits = ff_outputs
        else:
            hidden_states, router_logits = ff_outputs, None
        hidden_states = residual + hidden_states

        outputs = (hidden_states,)
        if output_router_logits:
            outputs += (router_logits,)
        return outputs


class JambaMambaDecoderLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        num_experts = config.layers_num_experts[layer_idx]
        self.mamba = JambaMambaMixer(config=config, layer_idx=layer_idx)
        ffn_layer_class = JambaSparseMoeBlock if num_experts > 1 else JambaMLP
        self.feed_forward = ffn_layer_class(config)
        self.input_layernorm = JambaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.pre_ff_layernorm = JambaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, output_router_logits=False, use_cache=False, cache_position=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.mamba(hidden_states=hidden_states, cache_params=past_key_value,
                                   attention_mask=attention_mask)
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.pre_ff_layernorm(hidden_states)
        ff_outputs = self.feed_forward(hidden_states)
        if isinstance(ff_outputs, tuple):
            hidden_states, router_logits = ff_outputs
        else:
            hidden_states, router_logits = ff_outputs, None
        hidden_states = residual + hidden_states

        outputs = (hidden_states,)
        if output_router_logits:
            outputs += (router_logits,)
        return outputs


JAMBA_DECODER_LAYER_TYPES = {"attention": JambaAttentionDecoderLayer, "mamba": JambaMambaDecoderLayer}


def jamba_init_weights(model, config):
    """JambaPreTrainedModel._init_weights over every module."""
    std = config.initializer_range
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv1d)):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=std)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, JambaRMSNorm):
            module.weight.data.fill_(1.0)
        elif isinstance(module, JambaMambaMixer):
            A = torch.arange(1, module.ssm_state_size + 1)[None, :]
            A = A.expand(module.intermediate_size, -1).contiguous()
            module.A_log.data.copy_(torch.log(A))
            module.D.data.fill_(1.0)


class JambaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.padding_idx = config.pad_token_id
        self.vocab_size = config.vocab_size
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        decoder_layers = []
        for i in range(config.num_hidden_layers):
            layer_class = JAMBA_DECODER_LAYER_TYPES[config.layers_block_type[i]]
            decoder_layers.append(layer_class(config, layer_idx=i))
        self.layers = nn.ModuleList(decoder_layers)
        self.final_layernorm = JambaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, input_ids=None, attention_mask=None, output_router_logits=False):
        inputs_embeds = self.embed_tokens(input_ids)
        hidden_states = inputs_embeds

        cache_position = torch.arange(hidden_states.shape[1], device=hidden_states.device)
        position_ids = cache_position.unsqueeze(0)

        causal_mask = self._update_causal_mask(attention_mask, inputs_embeds, cache_position)
        mamba_mask = self._update_mamba_mask(attention_mask, cache_position)

        all_router_logits = () if output_router_logits else None
        for decoder_layer in self.layers:
            layer_mask = mamba_mask if isinstance(decoder_layer, JambaMambaDecoderLayer) else causal_mask
            layer_outputs = decoder_layer(
                hidden_states, attention_mask=layer_mask, position_ids=position_ids, past_key_value=None,
                output_attentions=False, output_router_logits=output_router_logits, use_cache=False,
                cache_position=cache_position,
            )
            hidden_states = layer_outputs[0]
            if output_router_logits and layer_outputs[-1] is not None:
                all_router_logits += (layer_outputs[-1],)

        hidden_states = self.final_layernorm(hidden_states)
        return hidden_states, all_router_logits

    def _update_causal_mask(self, attention_mask, input_tensor, cache_position):
        dtype, device = input_tensor.dtype, input_tensor.device
        min_dtype = torch.finfo(dtype).min
        sequence_length = input_tensor.shape[1]
        target_length = cache_position[-1] + 1

        causal_mask = torch.full((sequence_length, target_length), fill_value=min_dtype, dtype=dtype, device=device)
        if sequence_length != 1:
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(target_length, device=device) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(input_tensor.shape[0], 1, -1, -1)
        if attention_mask is not None:
            causal_mask = causal_mask.clone()
            if attention_mask.dim() == 2:
                mask_length = attention_mask.shape[-1]
                padding_mask = causal_mask[..., :mask_length].eq(0.0) * attention_mask[:, None, None, :].eq(0.0)
                causal_mask[..., :mask_length] = causal_mask[..., :mask_length].masked_fill(padding_mask, min_dtype)
        return causal_mask

    def _update_mamba_mask(self, attention_mask, cache_position):
        mamba_mask = attention_mask
        if cache_position[0] > 0 or (attention_mask is not None and torch.all(attention_mask == 1)):
            mamba_mask = None
        return mamba_mask


class JambaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = JambaModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.num_experts = config.num_experts
        self.num_experts_per_tok = config.num_experts_per_tok
        jamba_init_weights(self, config)  # post_init (tie_word_embeddings False: nothing tied)

    def forward(self, input_ids=None, attention_mask=None, logits_to_keep=0):
        hidden_states, _ = self.model(input_ids=input_ids, attention_mask=attention_mask)
        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden_states[:, slice_indices, :])
        return logits


def jamba_causal_lm_loss(logits, labels, ignore_index=-100):
    """transformers.loss.loss_utils.ForCausalLMLoss: upcast, pad the labels by one ignored token,
    shift, flatten, cross entropy (mean)."""
    logits = logits.float()
    vocab_size = logits.shape[-1]
    labels = nn.functional.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    return nn.functional.cross_entropy(logits, shift_labels, ignore_index=ignore_index, reduction="mean")


def b_jamba():
    vocab, batch, seq = 128, 2, 8
    config = JambaLmConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                           num_attention_heads=4, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                           expert_layer_period=4, expert_layer_offset=2, attn_layer_period=2, attn_layer_offset=1,
                           mamba_d_state=8, mamba_d_conv=4, mamba_expand=2)
    ids = randint(vocab - 1, batch, seq, seed=3) + 1
    attention_mask = torch.ones(batch, seq, dtype=torch.long)
    return dict(model=JambaForCausalLM(config), inputs=(ids, attention_mask), target=ids, loss=jamba_causal_lm_loss)


# ---------------------------------------------------------------------------------------
# GPTBigCode: huggingface/transformers src/transformers/models/gpt_bigcode/modeling_gpt_bigcode.py
# as released before its SDPA/flash classes (GPTBigCodeAttention, GPTBigCodeMLP, GPTBigCodeBlock,
# GPTBigCodeModel, GPTBigCodeForCausalLM), GPTBigCodeConfig's defaults (multi_query True,
# gelu_pytorch_tanh, dropouts 0.1, scale_attn_weights, attention_softmax_in_fp32,
# tie_word_embeddings) but the sizes: n_embd 32, 4 heads, 3 layers, n_positions 64, vocab 256,
# batch 2, seq 12. In float32 softmax_dtype equals the dtype, so the reference's non-upcast branch
# runs (torch.where, softmax) and its torch.jit.script fused softmax helpers are never called; they
# are left out, as are the cross-attention variant (add_cross_attention False), the KV cache
# (use_cache off: present None), head_mask (get_head_mask gives None per layer), gradient
# checkpointing and the output dataclasses. nn.Linear throughout as the reference. Weights as
# _init_weights sets them (c_proj.weight scaled by 1/sqrt(2 * n_layer)), lm_head tied to wte.


@dataclass
class GPTBigCodeLmConfig:
    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: object = None
    activation_function: str = "gelu_pytorch_tanh"
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    scale_attn_weights: bool = True
    attention_softmax_in_fp32: bool = True
    scale_attention_softmax_in_fp32: bool = True
    multi_query: bool = True
    add_cross_attention: bool = False
    tie_word_embeddings: bool = True

    @property
    def hidden_size(self):
        return self.n_embd

    @property
    def num_attention_heads(self):
        return self.n_head

    @property
    def num_hidden_layers(self):
        return self.n_layer

    @property
    def max_position_embeddings(self):
        return self.n_positions


class GELUPytorchTanh(nn.Module):
    """transformers.activations.PytorchGELUTanh (ACT2FN["gelu_pytorch_tanh"])."""

    def forward(self, input):
        return nn.functional.gelu(input, approximate="tanh")


class GPTBigCodeAttention(nn.Module):
    def __init__(self, config, is_cross_attention=False, layer_idx=None):
        super().__init__()
        self.mask_value = None
        self.multi_query = config.multi_query
        self.embed_dim = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.embed_dim // self.num_heads
        self.kv_heads = 1 if self.multi_query else self.num_heads
        self.kv_dim = self.kv_heads * self.head_dim
        self.split_size = self.embed_dim
        self.scale_attn_weights = config.scale_attn_weights
        self.is_cross_attention = is_cross_attention
        self.layer_idx = layer_idx
        self.attention_softmax_in_fp32 = config.attention_softmax_in_fp32
        self.scale_attention_softmax_in_fp32 = (
            config.scale_attention_softmax_in_fp32 and config.attention_softmax_in_fp32
        )
        self.c_attn = nn.Linear(self.embed_dim, self.embed_dim + 2 * self.kv_dim)
        self.c_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def _get_mask_value(self, device, dtype):
        # a cached 0-dim tensor for torch.where
        if self.mask_value is None or self.mask_value.dtype != dtype or self.mask_value.device != device:
            self.mask_value = torch.full([], torch.finfo(dtype).min, dtype=dtype, device=device)
        return self.mask_value

    def _attn(self, query, key, value, attention_mask=None, head_mask=None):
        dtype = query.dtype
        softmax_dtype = torch.float32 if self.attention_softmax_in_fp32 else dtype
        upcast = dtype != softmax_dtype

        unscale = self.layer_idx + 1 if self.scale_attention_softmax_in_fp32 and upcast else 1
        scale_factor = unscale ** -1
        if self.scale_attn_weights:
            scale_factor /= self.head_dim ** 0.5

        query_shape = query.shape
        batch_size = query_shape[0]
        key_length = key.size(-1)
        if self.multi_query:
            # (batch, q_len, heads, head_dim) x (batch, head_dim, k_len) -> (batch, q_len, heads, k_len)
            query_length = query_shape[1]
            attn_shape = (batch_size, query_length, self.num_heads, key_length)
            attn_view = (batch_size, query_length * self.num_heads, key_length)
            query = query.reshape(batch_size, query_length * self.num_heads, self.head_dim)
        else:
            query_length = query_shape[2]
            attn_shape = (batch_size, self.num_heads, query_length, key_length)
            attn_view = (batch_size * self.num_heads, query_length, key_length)
            query = query.reshape(batch_size * self.num_heads, query_length, self.head_dim)
            key = key.reshape(batch_size * self.num_heads, self.head_dim, key_length)

        if query.device == torch.device("cpu"):
            # the reference's CPU branch: baddbmm onto explicit zeros
            zeros = torch.zeros(attn_view, dtype=query.dtype, device=query.device)
            attn_weights = torch.baddbmm(zeros, query, key, beta=1, alpha=scale_factor).view(attn_shape)
        else:
            attn_weights = torch.baddbmm(torch.empty(attn_view), query, key, beta=0, alpha=scale_factor).view(
                attn_shape
            )

        if upcast:
            raise NotImplementedError("the fused upcast softmax (half precision) is left out")
        if attention_mask is not None:
            mask_value = self._get_mask_value(attn_weights.device, softmax_dtype)
            attn_weights = torch.where(attention_mask, attn_weights, mask_value)
        attn_weights = torch.nn.functional.softmax(attn_weights, dim=-1)

        attn_weights = self.attn_dropout(attn_weights)

        if head_mask is not None:
            if self.multi_query:
                head_mask = head_mask.permute(0, 2, 1, 3)
            attn_weights = attn_weights * head_mask

        if self.multi_query:
            attn_output = torch.bmm(attn_weights.view(attn_view), value).view(query_shape)
        else:
            attn_output = torch.matmul(attn_weights, value)
        return attn_output, attn_weights

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None,
                use_cache=False, output_attentions=False):
        if self.multi_query:
            query, key_value = self.c_attn(hidden_states).split((self.embed_dim, 2 * self.kv_dim), dim=2)
        else:
            query, key_value = (
                self.c_attn(hidden_states)
                .view(*hidden_states.shape[:2], self.num_heads, 3 * self.head_dim)
                .transpose(1, 2)
                .split((self.head_dim, 2 * self.head_dim), dim=3)
            )
        if layer_past is not None:
            key_value = torch.cat((layer_past, key_value), dim=-2)
        present = key_value if use_cache else None

        key, value = key_value.split((self.head_dim, self.head_dim), dim=-1)

        attn_output, attn_weights = self._attn(query, key.transpose(-1, -2), value, attention_mask, head_mask)

        if not self.multi_query:
            attn_output = attn_output.transpose(1, 2).reshape(hidden_states.shape)
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)

        outputs = (attn_output, present)
        if output_attentions:
            outputs += (attn_weights,)
        return outputs


class GPTBigCodeMLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        embed_dim = config.hidden_size
        self.c_fc = nn.Linear(embed_dim, intermediate_size)
        self.c_proj = nn.Linear(intermediate_size, embed_dim)
        self.act = GELUPytorchTanh()
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class GPTBigCodeBlock(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        hidden_size = config.hidden_size
        self.inner_dim = config.n_inner if config.n_inner is not None else 4 * hidden_size
        self.ln_1 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.attn = GPTBigCodeAttention(config, layer_idx=layer_idx)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.mlp = GPTBigCodeMLP(self.inner_dim, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None,
                use_cache=False, output_attentions=False):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_outputs = self.attn(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                                 head_mask=head_mask, use_cache=use_cache, output_attentions=output_attentions)
        attn_output = attn_outputs[0]
        outputs = attn_outputs[1:]
        hidden_states = attn_output + residual

        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = residual + feed_forward_hidden_states

        if use_cache:
            outputs = (hidden_states,) + outputs
        else:
            outputs = (hidden_states,) + outputs[1:]
        return outputs


def gpt_bigcode_init_weights(model, config):
    """GPTBigCodePreTrainedModel._init_weights applied to every module, as post_init does."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)
        for name, p in module.named_parameters():
            if name == "c_proj.weight":
                p.data.normal_(mean=0.0, std=(config.initializer_range / math.sqrt(2 * config.n_layer)))


class GPTBigCodeModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.multi_query = config.multi_query
        self.embed_dim = config.hidden_size
        self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
        self.wpe = nn.Embedding(config.max_position_embeddings, self.embed_dim)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPTBigCodeBlock(config, layer_idx=i) for i in range(config.num_hidden_layers)])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)
        max_positions = config.max_position_embeddings
        self.register_buffer(
            "bias", torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)), persistent=False
        )

    def forward(self, input_ids=None, attention_mask=None, position_ids=None):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        device = input_ids.device

        past_length = 0
        past_key_values = tuple([None] * len(self.h))

        if attention_mask is not None and len(attention_mask.shape) == 2 and position_ids is None:
            # position ids from the mask, as for batched generation
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
        elif position_ids is None:
            position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long, device=device)
            position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])

        query_length = input_shape[-1]
        key_length = past_length + query_length
        self_attention_mask = self.bias[None, key_length - query_length: key_length, :key_length]
        if attention_mask is not None:
            self_attention_mask = self_attention_mask * attention_mask.view(batch_size, 1, -1).to(
                dtype=torch.bool, device=self_attention_mask.device
            )
        # MQA: (batch, q_len, heads, k_len)
        attention_mask = self_attention_mask.unsqueeze(2 if self.multi_query else 1)

        head_mask = [None] * self.config.n_layer  # get_head_mask(None, n_layer)

        inputs_embeds = self.wte(input_ids)
        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds
        hidden_states = self.drop(hidden_states)

        output_shape = input_shape + (hidden_states.size(-1),)
        for i, (block, layer_past) in enumerate(zip(self.h, past_key_values)):
            outputs = block(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                            head_mask=head_mask[i], use_cache=False, output_attentions=False)
            hidden_states = outputs[0]

        hidden_states = self.ln_f(hidden_states)
        hidden_states = hidden_states.view(output_shape)
        return (hidden_states,)


class GPTBigCodeForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = GPTBigCodeModel(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        gpt_bigcode_init_weights(self, config)  # post_init: init, then tie
        if config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, input_ids=None, attention_mask=None):
        transformer_outputs = self.transformer(input_ids, attention_mask=attention_mask)
        hidden_states = transformer_outputs[0]
        lm_logits = self.lm_head(hidden_states)
        return lm_logits


def gpt_bigcode_shifted_ce(lm_logits, labels):
    """GPTBigCodeForCausalLM's loss with labels = input_ids: shift so that tokens < n predict n."""
    shift_logits = lm_logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    loss_fct = nn.CrossEntropyLoss()
    return loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))


def b_gpt_bigcode():
    vocab, batch, seq = 256, 2, 12
    config = GPTBigCodeLmConfig(vocab_size=vocab, n_positions=64, n_embd=32, n_layer=3, n_head=4)
    ids = randint(vocab, batch, seq, seed=3)
    attention_mask = torch.ones(batch, seq, dtype=torch.long)
    return dict(model=GPTBigCodeForCausalLM(config), inputs=(ids, attention_mask), target=ids,
                loss=gpt_bigcode_shifted_ce)


REGISTRY = [
    ("jamba_hybrid_hf_style", "lm", "adamw", b_jamba),
    ("gpt_bigcode_mqa", "lm", "adamw", b_gpt_bigcode),
]
