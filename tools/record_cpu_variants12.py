#!/usr/bin/env python3
"""Record Strata's twelfth variants CPU corpus: more models as their reference code writes them, a check.

The layer inference is tuned on the other variants corpora; this script records
tests/data/corpus-cpu-variants12, recorded after the rules, to measure them once on models they
were not written on, then to be tuned on as the other variants are. The models live in the
variants12_*.py modules beside this script, one module per pair, each with a docstring saying
what its models are as their reference code writes them:

- variants12_speechrec.py: openspeech's ContextNet (ContextNetBlocks of Conv1d-BN-Swish modules,
  squeeze-excite over time by the lengths, a residual conv module; CTC) and the Wukong
  recommendation model (embeddings, stacked factorization-machine and linear-compression blocks
  with residual projections and layer norms, an MLP head).
- variants12_seqgraph.py: thuml's Autoformer (series decomposition by moving averages,
  AutoCorrelation attention by FFT, encoder and decoder layers with the trend accumulated) and
  Hugging Face's Graphormer (the node and attention-bias features of degrees, spatial positions
  and edge encodings, pre-norm graph transformer layers, a decoder head).
- variants12_moevit.py: Hugging Face's DBRX (fused Wqkv clipped, rotary, grouped key and value
  heads, norm_attn_norm, a router and experts whose weights are one nn.Parameter viewed per
  expert) and timm's XCiT (a convolutional patch embedding, Fourier positions, cross-covariance
  attention, local patch interaction by depthwise convs, class-attention blocks).
- variants12_lm.py: Hugging Face's Jamba (Mamba mixers by their torch path, a selective scan
  looped in Python, alternating with grouped-query attention layers; a sparse MoE block with a
  router) and GPTBigCode (multi-query attention: one fused c_attn split into the query and one
  shared key and value, baddbmm onto zeros, a cached mask value).

The recording, manifest and checks are record_cpu_heldout.py's (and through it
record_cpu_corpus.py's), imported unchanged. Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_variants12.py [OUT_DIR] [--only NAME,NAME] [--list]
    /usr/bin/python3 tools/record_cpu_variants12.py --verify [OUT_DIR] [--only NAME,NAME]

OUT_DIR defaults to tests/data/corpus-cpu-variants12.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import record_cpu_heldout as rh  # noqa: E402  (imports record_cpu_corpus: 1 thread, torch)
import variants12_lm  # noqa: E402
import variants12_moevit  # noqa: E402
import variants12_seqgraph  # noqa: E402
import variants12_speechrec  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "tests", "data")

REGISTRY = (variants12_speechrec.REGISTRY + variants12_seqgraph.REGISTRY + variants12_moevit.REGISTRY + variants12_lm.REGISTRY)

SPLIT_RULE = (
    "every model is tune: recorded after the layer inference's rules and measured once as a "
    "check on models they were not written on, then a tuning set as the other variants are; "
    "tests/data/corpus-cpu-fresh is the check. It shares no model name with the other corpora"
)

VARIANTS12 = rh.Corpus(
    REGISTRY,
    "tune",
    SPLIT_RULE,
    "tools/record_cpu_variants12.py",
    os.path.join(DATA, "corpus-cpu-variants12"),
    [os.path.join(DATA, d) for d in ("corpus-cpu", "corpus-cpu-backward", "corpus-cpu-modern", "corpus-cpu-families",
                                      "corpus-cpu-heldout", "corpus-cpu-variants", "corpus-cpu-variants2",
                                      "corpus-cpu-variants3", "corpus-cpu-variants4", "corpus-cpu-variants5",
                                      "corpus-cpu-variants6", "corpus-cpu-variants7", "corpus-cpu-variants8",
                                      "corpus-cpu-variants9", "corpus-cpu-variants10", "corpus-cpu-variants11",
                                      "corpus-cpu-objectives", "corpus-cpu-fresh")],
    __doc__,
)

if __name__ == "__main__":
    rh.main(VARIANTS12)
