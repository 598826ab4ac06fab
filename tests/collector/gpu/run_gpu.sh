#!/usr/bin/env bash
# Everything the collector needs a GPU for, in one go (figures: collector/README.md):
# build, record a CUDA program and a PyTorch loop, attach mid-run, Kineto on-demand,
# the overhead figures, and hardware metrics (--metrics: FLOPs of a known GEMM, their cost). Writes logs and traces to $OUT (default ./out).
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
B=/tmp/strata-gpu
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/summary.txt"
ls /usr/local/cuda/lib64 | grep -i cupti; ls /usr/local/cuda/extras/CUPTI/lib64 2>/dev/null | head -3
cmake -G Ninja -S "$HERE" -B $B >$OUT/build.log 2>&1 && ninja -C $B >>$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
S=$B/strata
nvcc -O2 -o /tmp/vector_add "$HERE/vector_add.cu" >>$OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
nvcc -O2 -o /tmp/gemm_flops "$HERE/gemm_flops.cu" >>$OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
PY="python3 $HERE/train_mlp.py"
cd /tmp

log "plain CUDA program, whole run"
$S record -o $OUT/vector_add.pt.trace.json -- /tmp/vector_add 2>&1 | tee -a "$OUT/summary.txt"
python3 "$HERE/check_trace.py" $OUT/vector_add.pt.trace.json | tee -a "$OUT/summary.txt"

log "plain CUDA program, cudaProfilerStart/Stop window of 1 iteration"
$S record --iterations 1 --profiler-range -o /tmp/vadd_prof.json -- /tmp/vector_add 2>&1 | tee -a "$OUT/summary.txt"
python3 "$HERE/check_trace.py" /tmp/vadd_prof.json | tee -a "$OUT/summary.txt"

log "PyTorch MLP, 5 NVTX iterations"
$S record --iterations 5 -o $OUT/mlp_5iter.pt.trace.json -- $PY --iters 60 --warmup 5 2>&1 | tee -a "$OUT/summary.txt"
python3 "$HERE/check_trace.py" $OUT/mlp_5iter.pt.trace.json | tee -a "$OUT/summary.txt"

log "attach to a dormant job mid-run"
$S record --dormant -- $PY --iters 4000 --warmup 0 > /tmp/dormant.log 2>&1 &
sleep 12
$S attach | tee -a "$OUT/summary.txt"
PID=$($S attach | awk 'NR>1 && /python3/ {print $1; exit}')
$S attach $PID --duration 0.2 -o $OUT/attach.pt.trace.json 2>&1 | tee -a "$OUT/summary.txt"
python3 "$HERE/check_trace.py" $OUT/attach.pt.trace.json | tee -a "$OUT/summary.txt"
$S attach $PID --iterations 3 -o /tmp/attach_iter.json 2>&1 | tee -a "$OUT/summary.txt"
python3 "$HERE/check_trace.py" /tmp/attach_iter.json | tee -a "$OUT/summary.txt"
$S attach $PID --detach 2>&1 | tee -a "$OUT/summary.txt"
wait
tail -2 /tmp/dormant.log | tee -a "$OUT/summary.txt"

log "overhead: median iteration time (ms), 3 rounds, launch-bound (small) and GPU-bound (big) MLP"
for round in 1 2 3; do
  for size in "small --hidden 2048 --batch 256 --iters 300" "big --hidden 4096 --batch 2048 --iters 150"; do
    set -- $size; name=$1; shift
    $PY "$@" --tag "$name/none" 2>/dev/null | tee -a "$OUT/overhead.jsonl"
    $S record --dormant -- $PY "$@" --tag "$name/dormant" 2>/dev/null | tee -a "$OUT/overhead.jsonl"
    $S record -o /tmp/full.json -- $PY "$@" --tag "$name/recording" 2>/dev/null | tee -a "$OUT/overhead.jsonl"
  done
done
python3 "$HERE/check_trace.py" /tmp/full.json | tee -a "$OUT/summary.txt"
python3 - "$OUT/overhead.jsonl" <<'PYEOF' | tee -a "$OUT/summary.txt"
import collections, json, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); runs[r["tag"]].append(r["median_ms"])
for size in ("small", "big"):
    base = statistics.median(runs[size + "/none"])
    for mode in ("none", "dormant", "recording"):
        m = statistics.median(runs[size + "/" + mode])
        print(f"{size:5} {mode:9} median of 3 run medians {m:.3f} ms  ({(m / base - 1) * 100:+.1f}%)  runs {runs[size + '/' + mode]}")
PYEOF

# The FLOP-counting set Strata's summary reads (core/annotate/flops.cpp), and the measured duration.
FLOPS=gpu__time_duration.sum
for p in d f h; do for op in add mul fma; do FLOPS+=",smsp__sass_thread_inst_executed_op_${p}${op}_pred_on.sum"; done; done

log "hardware metrics: a naive 512^3 GEMM's FLOPs against 2*M*N*K; wall time per iteration without and with --metrics"
for round in 1 2 3; do
  /tmp/gemm_flops --tag gemm/none | tee -a "$OUT/metrics.jsonl"
  $S record -o /tmp/gemm_plain.json -- /tmp/gemm_flops --tag gemm/recording 2>>$OUT/metrics.log | tee -a "$OUT/metrics.jsonl"
  $S record --metrics $FLOPS --kernels '*gemm*' -o $OUT/gemm_metrics.pt.trace.json -- /tmp/gemm_flops --tag gemm/metrics-gemm \
    2>>$OUT/metrics.log | tee -a "$OUT/metrics.jsonl"
  $S record --metrics $FLOPS -o /tmp/gemm_metrics_all.json -- /tmp/gemm_flops --tag gemm/metrics-all \
    2>>$OUT/metrics.log | tee -a "$OUT/metrics.jsonl"
done
python3 "$HERE/check_metrics.py" $OUT/gemm_metrics.pt.trace.json 512 512 512 | tee -a "$OUT/summary.txt"
python3 "$HERE/check_metrics.py" /tmp/gemm_metrics_all.json 512 512 512 | tee -a "$OUT/summary.txt"
python3 "$HERE/check_trace.py" /tmp/gemm_metrics_all.json | tee -a "$OUT/summary.txt"

log "hardware metrics: the launch-bound PyTorch MLP without and with --metrics (gemm kernels, every kernel)"
for round in 1 2 3; do
  small="--hidden 2048 --batch 256 --iters 40 --warmup 5"
  $PY $small --tag mlp/none 2>/dev/null | tee -a "$OUT/metrics.jsonl"
  $S record -o /tmp/mlp_plain.json -- $PY $small --tag mlp/recording 2>>$OUT/metrics.log | tee -a "$OUT/metrics.jsonl"
  $S record --metrics $FLOPS --kernels '*gemm*' -o $OUT/mlp_metrics.pt.trace.json -- $PY $small --tag mlp/metrics-gemm \
    2>>$OUT/metrics.log | tee -a "$OUT/metrics.jsonl"
  $S record --metrics $FLOPS -o /tmp/mlp_metrics_all.json -- $PY $small --tag mlp/metrics-all \
    2>>$OUT/metrics.log | tee -a "$OUT/metrics.jsonl"
done
python3 "$HERE/check_metrics.py" $OUT/mlp_metrics.pt.trace.json | tee -a "$OUT/summary.txt"
python3 "$HERE/check_metrics.py" /tmp/mlp_metrics_all.json | tee -a "$OUT/summary.txt"
grep -i "strata agent" $OUT/metrics.log | sort | uniq -c | tee -a "$OUT/summary.txt"
python3 - "$OUT/metrics.jsonl" <<'PYEOF' | tee -a "$OUT/summary.txt"
import collections, json, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line); runs[r["tag"]].append(r["median_ms"])
for job in ("gemm", "mlp"):
    base = statistics.median(runs[job + "/none"])
    for mode in ("none", "recording", "metrics-gemm", "metrics-all"):
        m = statistics.median(runs[job + "/" + mode])
        print(f"{job:4} {mode:12} median of 3 run medians {m:.3f} ms per iteration  ({m / base:.1f}x)  runs {runs[job + '/' + mode]}")
PYEOF

log "hardware metrics on attach: --status while collecting, then the trace"
$S record --dormant -- /tmp/gemm_flops --iters 3000 > /tmp/gemm_dormant.log 2>&1 &
sleep 3
GPID=$($S attach | awk 'NR>1 && /gemm_flops/ {print $1; exit}')
$S attach $GPID --duration 2 --metrics $FLOPS --kernels '*gemm*' -o $OUT/attach_metrics.pt.trace.json >>"$OUT/summary.txt" 2>&1 &
APID=$!
sleep 1
$S attach $GPID --status | grep -E "state|metric|kernels" | tee -a "$OUT/summary.txt"
wait $APID
$S attach $GPID --detach 2>&1 | tee -a "$OUT/summary.txt"
wait
python3 "$HERE/check_metrics.py" $OUT/attach_metrics.pt.trace.json 512 512 512 | tee -a "$OUT/summary.txt"

log "Kineto on-demand through the ipcfabric"
printf 'ENABLE_IPC_FABRIC=true\n' > /tmp/kineto.conf  # Kineto talks ipcfabric only when its config says so
KINETO_USE_DAEMON=1 KINETO_CONFIG=/tmp/kineto.conf $PY --iters 30000 --warmup 0 > /tmp/kineto_job.log 2>&1 &
KPID=$!
sleep 3
timeout 60 $S attach --kineto $KPID --duration 0.5 -o /tmp/kineto.pt.trace.json --timeout 40 2>&1 | tee -a "$OUT/summary.txt"
[ -f /tmp/kineto.pt.trace.json ] && python3 "$HERE/check_trace.py" /tmp/kineto.pt.trace.json | tee -a "$OUT/summary.txt"
kill $KPID 2>/dev/null; wait
ls -la /tmp/*kineto* >> "$OUT/summary.txt" 2>&1
grep -v '^{' /tmp/kineto_job.log | tail -30 >> "$OUT/summary.txt"
gzip -9 -k $OUT/*.json 2>/dev/null; rm -f $OUT/*.json
ls -la $OUT
