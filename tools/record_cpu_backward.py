#!/usr/bin/env python3
"""Record Strata's backward-order CPU corpus: models of the other corpora with the autograd
sequence numbers that tie each backward node to the forward op that made it.

Where a trace has no links between the backward and the forward (no fwdbwd flows, no sequence
numbers: the EventList export of a CPU-only PyTorch writes none), Strata matches backward
nodes to forward ops by reverse op order. This corpus is the truth to measure that matching
against: the same recording as the other corpora (record_cpu_corpus.record_one: forward-hook
hid= ranges, phase ranges, two profiled steps), with each op's "Sequence number" (and a
backward node's "Fwd thread id") written into its args as Kineto writes them. The accuracy
bench annotates each trace twice, once by the links and once with them stripped, and reports
the share of backward ops that the order matching puts under the same forward layer.

Models: from the tuned corpora (split "tune": the matching's rules may be tuned on them) and
every model of tests/data/corpus-cpu-fresh (split "heldout": the check, reported in aggregate).
Run with the interpreter that has torch:

    /usr/bin/python3 tools/record_cpu_backward.py [OUT_DIR] [--only NAME,NAME] [--list]

OUT_DIR defaults to tests/data/corpus-cpu-backward.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import record_cpu_corpus as rc  # noqa: E402  (1 thread, torch)
import record_cpu_families  # noqa: E402
import record_cpu_fresh  # noqa: E402
import record_cpu_modern  # noqa: E402
import record_cpu_objectives  # noqa: E402
import record_cpu_variants  # noqa: E402
import record_cpu_variants2  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "tests", "data", "corpus-cpu-backward")

# Tuned models across the families whose backward orders differ: CNNs, attention (fused and
# written out, q/k/v branches), recurrent cells on the CPU, mixtures of experts, graph
# networks, composed losses.
TUNE = [
    "resnet18", "encoder_prenorm", "seq2seq_transformer", "lstm_lm", "bigru_tagger", "moe_top1",
    "swin_t", "vit_torchvision_small", "dlrm", "gcn", "llama_tiny", "lstm_attn_seq2seq",
    "maxvit_small", "conformer_espnet", "gru_bahdanau", "ft_transformer", "bart_tiny",
    "t5_small_encdec", "mixtral_tiny", "deepspeech2", "timm_swin", "sam_encoder",
    "tacotron_like", "deberta_like", "qwen2_hf", "demucs_like", "pyg_gat", "focal_detector",
    "lm_label_smoothing", "vae_elbo",
]


def registry():
    """(name, family, optimizer, builder, split) for the tuned picks, then every fresh model."""
    tuned = {}
    for mod in (rc, record_cpu_modern, record_cpu_families, record_cpu_variants, record_cpu_variants2,
                record_cpu_objectives):
        for n, f, o, b in mod.REGISTRY:
            tuned.setdefault(n, (n, f, o, b, "tune"))
    missing = [n for n in TUNE if n not in tuned]
    assert not missing, f"not in the tuned corpora: {missing}"
    return [tuned[n] for n in TUNE] + [(n, f, o, b, "heldout") for n, f, o, b in record_cpu_fresh.REGISTRY]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?", default=DEFAULT_OUT)
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    a = ap.parse_args()
    reg = registry()
    if a.list:
        for n, f, o, _, split in reg:
            print(f"{n:30s} {f:13s} {o:6s} {split}")
        return
    only = {s for s in a.only.split(",") if s}
    unknown = only - {r[0] for r in reg}
    if unknown:
        sys.exit(f"unknown models: {sorted(unknown)}")
    os.makedirs(a.out_dir, exist_ok=True)
    man_path = os.path.join(a.out_dir, "manifest.json")
    old = {}
    if only and os.path.exists(man_path):
        old = {m["name"]: m for m in json.load(open(man_path))["models"]}
    kind = rc.profiler_kind()
    models, t0 = [], time.time()
    for name, family, opt_kind, builder, split in reg:
        if only and name not in only:
            if name in old:
                models.append(old[name])
            continue
        entry = dict(name=name, split=split)
        entry.update(rc.record_one(name, family, opt_kind, builder, a.out_dir, kind, sequence_numbers=True))
        models.append(entry)
    env = rc.environment(kind)
    env["split_rule"] = ("tune: models of the tuned corpora; heldout: every model of "
                         "tests/data/corpus-cpu-fresh, reported in aggregate")
    env["recorded_by"] = "tools/record_cpu_backward.py (recording code: tools/record_cpu_corpus.py, sequence_numbers=True)"
    manifest = dict(environment=env, count=len(models), total_bytes=sum(m["bytes"] for m in models), models=models)
    rc.write_manifest(man_path, manifest)
    print(f"{len(models)} models, {manifest['total_bytes']/1024/1024:.2f} MiB, {time.time()-t0:.0f} s")


if __name__ == "__main__":
    main()
