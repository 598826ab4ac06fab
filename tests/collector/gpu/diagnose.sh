#!/usr/bin/env bash
# GPU-machine experiments behind collector/README.md's Kineto and overhead sections:
#  1. Kineto on-demand: four PyTorch jobs (KINETO_USE_DAEMON=1, verbose Kineto logs), each on
#     its own ipcfabric socket dir, each sent a different config (strata attach --kineto, and
#     fake_dynolog.py with dynolog-style duration / iteration configs).
#  2. What each recorded kind costs: kinds_bench.py, interleaved inside one process.
#  3. The launch-bound MLP: no agent / dormant / recording, interleaved runs.
#  4. The job after a recording ends: 3 iterations recorded at the start, then the rest of the
#     loop with CUPTI released between recordings (the default) or kept (STRATA_TEARDOWN=0).
#  5. live: the file a 3 s attach writes, copied every 0.4 s while it grows (what the viewer's
#     live view reads), for loading with the full build elsewhere.
#  6. long: 4 s attaches with the agent's status, the file's size and the job's progress every
#     0.25 s, under several agent settings (collector/README "Long recordings").
#  Also launch (launch_cost.cu, per launch in C++) and kineto2 (strata attach --kineto alone).
# Writes summary.txt and results.tgz (logs, small traces) to $OUT. PHASES selects
# (default "build kineto kinds table after"); ROUNDS, REPS, ITERS and KINDS_VARIANTS size them.
set -uo pipefail
FINAL=${OUT:-$PWD/out}
OUT=/tmp/strata-diag
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
HERE=$(cd "$(dirname "$0")" && pwd)
B=/tmp/strata-gpu
S=$B/strata
PHASES=${PHASES:-build kineto kinds table after}
has() { [[ " $PHASES " == *" $1 "* ]]; }
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

if has build; then
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/summary.txt"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/summary.txt"
  cmake -G Ninja -S "$HERE" -B $B >$OUT/build.log 2>&1 && ninja -C $B -j16 >>$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
  nvcc -O2 -std=c++17 -o /tmp/launch_cost "$HERE/launch_cost.cu" >>$OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
fi
cd /tmp

if has kineto; then
  log "Kineto on demand: 4 jobs, 4 configs"
  printf 'ENABLE_IPC_FABRIC=true\n' > /tmp/kineto.conf
  cat > /tmp/cfg2.txt <<'CFG'
ACTIVITIES_LOG_FILE={log}
PROFILE_START_TIME=0
ACTIVITIES_DURATION_MSECS=500
CFG
  cat > /tmp/cfg3.txt <<'CFG'
ACTIVITIES_LOG_FILE={log}
PROFILE_START_ITERATION=0
PROFILE_START_ITERATION_ROUNDUP=1
ACTIVITIES_ITERATIONS=3
CFG
  cat > /tmp/cfg4.txt <<'CFG'
ACTIVITIES_LOG_FILE={log}
PROFILE_START_TIME={now_ms+3000}
ACTIVITIES_WARMUP_PERIOD_SECS=1
ACTIVITIES_DURATION_MSECS=500
CFG
  pids=()
  for i in 1 2 3 4; do
    mkdir -p /tmp/kdir$i; rm -f /tmp/kin$i*.json
    pre="import sys, torch"
    [ $i = 4 ] && pre="import sys, torch, torch.profiler"
    KINETO_USE_DAEMON=1 KINETO_CONFIG=/tmp/kineto.conf KINETO_LOG_LEVEL=0 KINETO_IPC_SOCKET_DIR=/tmp/kdir$i \
      python3 -c "$pre; print('torch.profiler loaded at start:', 'torch.profiler' in sys.modules, flush=True); import runpy; sys.argv=['train_mlp.py','--iters','25000','--warmup','0']; runpy.run_path('$HERE/train_mlp.py', run_name='__main__')" \
      > /tmp/kjob$i.log 2>&1 &
    pids+=($!)
  done
  sleep 2
  KINETO_IPC_SOCKET_DIR=/tmp/kdir1 timeout 70 $S attach --kineto ${pids[0]} --duration 0.5 -o /tmp/kin1.pt.trace.json --timeout 30 > /tmp/kd1.log 2>&1 &
  d1=$!
  for i in 2 3 4; do
    KINETO_IPC_SOCKET_DIR=/tmp/kdir$i timeout 40 python3 $HERE/fake_dynolog.py --pid ${pids[$((i-1))]} --config /tmp/cfg$i.txt \
      --log /tmp/kin$i.pt.trace.json --timeout 30 > /tmp/kd$i.log 2>&1 &
  done
  wait $d1
  for t in $(seq 1 30); do  # the fake daemons' traces
    n=$(ls /tmp/kin2*.json /tmp/kin3*.json /tmp/kin4*.json 2>/dev/null | grep -v tmp$ | wc -l)
    [ "$n" -ge 3 ] && break; sleep 1
  done
  sleep 2
  for p in "${pids[@]}"; do kill $p 2>/dev/null; done
  wait 2>/dev/null
  for i in 1 2 3 4; do
    log "kineto variant $i"
    cat /tmp/kd$i.log >> "$OUT/summary.txt"
    ls -la /tmp/kin$i* >> "$OUT/summary.txt" 2>&1
    python3 $HERE/kineto_check.py /tmp/kin$i*.json 2>&1 | tee -a "$OUT/summary.txt"
    grep -v '^{' /tmp/kjob$i.log | grep -iv "warn.*deprecat" | head -150 > "$OUT/kjob$i.log"
    for f in /tmp/kin$i*.json; do [ -f "$f" ] && gzip -9 -c "$f" > "$OUT/$(basename $f).gz"; done
  done
fi

if has kineto2; then
  log "Kineto on demand with strata attach --kineto: --duration 0.5, --duration 0.1, --iterations 3"
  printf 'ENABLE_IPC_FABRIC=true\n' > /tmp/kineto.conf
  pids=()
  for i in 1 2 3; do
    mkdir -p /tmp/kdir$i; rm -f /tmp/kin$i*.json
    KINETO_USE_DAEMON=1 KINETO_CONFIG=/tmp/kineto.conf KINETO_LOG_LEVEL=0 KINETO_IPC_SOCKET_DIR=/tmp/kdir$i \
      python3 $HERE/train_mlp.py --iters 25000 --warmup 0 > /tmp/kjob$i.log 2>&1 &
    pids+=($!)
  done
  sleep 2
  args=("--duration 0.5" "--duration 0.1" "--iterations 3")
  daemons=()
  for i in 1 2 3; do
    KINETO_IPC_SOCKET_DIR=/tmp/kdir$i timeout 70 $S attach --kineto ${pids[$((i-1))]} ${args[$((i-1))]} \
      -o /tmp/kin$i.pt.trace.json --timeout 30 > /tmp/kd$i.log 2>&1 &
    daemons+=($!)
  done
  wait "${daemons[@]}"
  for p in "${pids[@]}"; do kill $p 2>/dev/null; done
  wait 2>/dev/null
  for i in 1 2 3; do
    log "strata attach --kineto ${args[$((i-1))]}"
    cat /tmp/kd$i.log >> "$OUT/summary.txt"
    python3 $HERE/kineto_check.py /tmp/kin$i.pt.trace.json 2>&1 | tee -a "$OUT/summary.txt"
    grep -v '^{' /tmp/kjob$i.log | grep -E "Received|Tracing|empty|Processed|Record counts|Warmup|Trace" | head -40 > "$OUT/kjob$i.log"
    [ -f /tmp/kin$i.pt.trace.json ] && gzip -9 -c /tmp/kin$i.pt.trace.json > "$OUT/kin$i.pt.trace.json.gz"
  done
  [ -f "$OUT/kin2.pt.trace.json.gz" ] && cp "$OUT/kin2.pt.trace.json.gz" "$FINAL/kineto_ondemand_100ms.pt.trace.json.gz"
fi

if has launch; then
  log "CPU cost of one launch (launch_cost.cu; min / median of 150 batches of 256), interleaved in-process"
  V="off;kernel;kernel,runtime;kernel,runtime-all;kernel,runtime,sync;kernel,runtime,nvtx;kernel,runtime,overhead;kernel,runtime,driver;kernel,runtime,memcpy,memset,external;default;all"
  export STRATA_SOCKET_DIR=/tmp/strata-bench
  for rep in 1 2 3; do
    taskset -c 2-7 /tmp/launch_cost 1 off none | tee -a "$OUT/launch.jsonl"
    taskset -c 2-7 $S record --dormant -- /tmp/launch_cost 3 "$V" agent 2>>$OUT/launch.err | tee -a "$OUT/launch.jsonl"
  done
  unset STRATA_SOCKET_DIR
  python3 - "$OUT/launch.jsonl" <<'PYEOF' | tee -a "$OUT/summary.txt"
import collections, json, statistics, sys
mn, md, evs = collections.defaultdict(list), collections.defaultdict(list), {}
for line in open(sys.argv[1]):
    if not line.startswith("{"): continue
    r = json.loads(line); k = r["tag"] + ":" + r["variant"]
    mn[k].append(r["min_us"]); md[k].append(r["med_us"]); evs[k] = r.get("events", "")
b = statistics.median(mn["none:off"]); bm = statistics.median(md["none:off"])
for k in mn:
    a, m = statistics.median(mn[k]), statistics.median(md[k])
    print(f"{k:42} min {a:6.3f} us ({a - b:+6.3f})  median {m:6.3f} us ({m - bm:+6.3f})  n={len(mn[k])} events={evs[k]}")
PYEOF
fi

if has kinds; then
  log "cost per recorded kind (kinds_bench.py, in-process, interleaved)"
  V=${KINDS_VARIANTS:-"off;kernel;kernel,runtime;kernel,runtime-all;kernel,runtime,sync;kernel,runtime,nvtx;kernel,runtime,overhead;kernel,runtime,driver;kernel,runtime,external;kernel,runtime,memcpy,memset;default;all"}
  export STRATA_SOCKET_DIR=/tmp/strata-bench
  for rep in $(seq 1 ${REPS:-2}); do
    python3 $HERE/kinds_bench.py --variants off --rounds 4 --iters ${ITERS:-60} --tag none 2>>$OUT/kinds.err | tee -a "$OUT/kinds.jsonl"
    $S record --dormant -- python3 $HERE/kinds_bench.py --variants "$V" --rounds ${ROUNDS:-4} --iters ${ITERS:-60} --tag agent 2>>$OUT/kinds.err | tee -a "$OUT/kinds.jsonl"
  done
  unset STRATA_SOCKET_DIR
  python3 - "$OUT/kinds.jsonl" <<'PYEOF' | tee -a "$OUT/summary.txt"
import collections, json, statistics, sys
us, ms = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    if not line.startswith("{"): continue
    r = json.loads(line); k = r["tag"] + ":" + r["variant"]
    us[k].append(r["us_per_launch"]); ms[k].append(r["mlp_ms"])
base_us, base_ms = statistics.median(us["agent:off"]), statistics.median(ms["agent:off"])
for k in us:
    u, m = statistics.median(us[k]), statistics.median(ms[k])
    print(f"{k:40} launch {u:7.3f} us ({u - base_us:+6.3f})   mlp {m:7.4f} ms ({(m / base_ms - 1) * 100:+5.1f}%)  n={len(us[k])}")
PYEOF
fi

if has table; then
  log "launch-bound MLP: median iteration ms, interleaved runs"
  T="taskset -c 2-7"
  for round in $(seq 1 ${ROUNDS:-4}); do
    for size in "small --hidden 2048 --batch 256 --iters 300" ${BIG:+"big --hidden 4096 --batch 2048 --iters 150"}; do
      set -- $size; name=$1; shift
      [ $name = big ] && [ $round -gt 3 ] && continue
      $T python3 $HERE/train_mlp.py "$@" --tag "$name/none" 2>/dev/null | tee -a "$OUT/overhead.jsonl"
      $T $S record --dormant -- python3 $HERE/train_mlp.py "$@" --tag "$name/dormant" 2>/dev/null | tee -a "$OUT/overhead.jsonl"
      $T $S record -o /tmp/full.json -- python3 $HERE/train_mlp.py "$@" --tag "$name/recording" 2>/dev/null | tee -a "$OUT/overhead.jsonl"
      [ $name = small ] && $T $S record --kinds kernel,runtime -o /tmp/floor.json -- python3 $HERE/train_mlp.py "$@" --tag "$name/kernel+runtime" 2>/dev/null | tee -a "$OUT/overhead.jsonl"
      [ $name = small ] && $T $S record --kinds all -o /tmp/full_all.json -- python3 $HERE/train_mlp.py "$@" --tag "$name/all" 2>/dev/null | tee -a "$OUT/overhead.jsonl"
      # Which kind makes the default cost more than the floor: the default less one kind at a time.
      if [ $name = small ]; then
        for k in -sync -nvtx -driver -overhead -sync,-nvtx; do
          $T $S record --kinds $k -o /tmp/less$k.json -- python3 $HERE/train_mlp.py "$@" --tag "$name/$k" 2>/dev/null | tee -a "$OUT/overhead.jsonl"
        done
      fi
    done
  done
  python3 $HERE/check_trace.py /tmp/full.json | tee -a "$OUT/summary.txt"
  python3 $HERE/check_trace.py /tmp/full_all.json | tee -a "$OUT/summary.txt"
  python3 $HERE/check_trace.py /tmp/floor.json | tee -a "$OUT/summary.txt"
  python3 - "$OUT/overhead.jsonl" <<'PYEOF' | tee -a "$OUT/summary.txt"
import collections, json, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("{"): r = json.loads(line); runs[r["tag"]].append(r["median_ms"])
for size in ("small", "big"):
    if size + "/none" not in runs: continue
    base = statistics.median(runs[size + "/none"])
    for mode in ("none", "dormant", "recording", "kernel+runtime", "all", "-sync", "-nvtx", "-driver", "-overhead", "-sync,-nvtx"):
        if size + "/" + mode not in runs: continue
        m = statistics.median(runs[size + "/" + mode])
        print(f"{size:5} {mode:13} median of run medians {m:.3f} ms ({(m / base - 1) * 100:+.1f}%)  runs {runs[size + '/' + mode]}")
PYEOF
fi
if has after; then
  log "after a recording: launch-bound MLP, 3 iterations recorded first, median iteration ms of the run"
  T="taskset -c 2-7"
  A="--hidden 2048 --batch 256 --iters 400"
  for round in $(seq 1 ${ROUNDS:-4}); do
    $T python3 $HERE/train_mlp.py $A --tag "none" 2>/dev/null | tee -a "$OUT/after.jsonl"
    $T $S record --dormant -- python3 $HERE/train_mlp.py $A --tag "dormant" 2>/dev/null | tee -a "$OUT/after.jsonl"
    $T $S record --iterations 3 -o /tmp/after_released.json -- python3 $HERE/train_mlp.py $A --tag "released" 2>>$OUT/after.err | tee -a "$OUT/after.jsonl"
    STRATA_TEARDOWN=0 $T $S record --iterations 3 -o /tmp/after_kept.json -- python3 $HERE/train_mlp.py $A --tag "kept" 2>>$OUT/after.err | tee -a "$OUT/after.jsonl"
  done
  python3 $HERE/check_trace.py /tmp/after_released.json | tee -a "$OUT/summary.txt"
  log "record twice in one job: a second recording after CUPTI was released (attach, status, attach by iterations)"
  export STRATA_SOCKET_DIR=/tmp/strata-after
  $S record --dormant -- python3 $HERE/train_mlp.py --iters 3000 --warmup 0 > /tmp/after_job.log 2>&1 &
  sleep 10
  APID=$($S attach | awk 'NR>1 && /python3/ {print $1; exit}')
  $S attach $APID --duration 0.2 -o /tmp/after1.json 2>&1 | tee -a "$OUT/summary.txt"
  sleep 1; $S attach $APID --status 2>&1 | tee -a "$OUT/summary.txt"
  $S attach $APID --iterations 3 -o /tmp/after2.json 2>&1 | tee -a "$OUT/summary.txt"
  $S attach $APID --duration 0.2 -o /tmp/after3.json 2>&1 | tee -a "$OUT/summary.txt"
  for f in /tmp/after1.json /tmp/after2.json /tmp/after3.json; do python3 $HERE/check_trace.py $f | tee -a "$OUT/summary.txt"; done
  $S attach $APID --detach 2>&1 | tee -a "$OUT/summary.txt"
  wait; tail -2 /tmp/after_job.log | tee -a "$OUT/summary.txt"
  unset STRATA_SOCKET_DIR
  python3 - "$OUT/after.jsonl" <<'PYEOF' | tee -a "$OUT/summary.txt"
import collections, json, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("{"): r = json.loads(line); runs[r["tag"]].append(r["median_ms"])
base = statistics.median(runs["none"])
for mode in ("none", "dormant", "released", "kept"):
    m = statistics.median(runs[mode])
    print(f"{mode:9} median of run medians {m:.3f} ms ({(m / base - 1) * 100:+.1f}%)  runs {runs[mode]}")
PYEOF
fi
if has live; then
  log "live: snapshots of the growing file during a 3 s attach"
  export STRATA_SOCKET_DIR=/tmp/strata-live
  $S record --dormant -- python3 $HERE/train_mlp.py --iters 20000 --warmup 0 > /tmp/live_job.log 2>&1 &
  sleep 14  # torch's import and CUDA's start take up to ~12 s on a fresh machine
  LPID=$($S attach | awk 'NR>1 && /python3/ {print $1; exit}')
  mkdir -p "$OUT/live"
  $S attach $LPID --duration 3 -o /tmp/live.pt.trace.json > /tmp/live_attach.log 2>&1 &
  at=$!
  for i in $(seq -w 1 12); do sleep 0.4; [ -f /tmp/live.pt.trace.json ] && cp /tmp/live.pt.trace.json "$OUT/live/snap$i.json"; done
  wait $at; cat /tmp/live_attach.log | tee -a "$OUT/summary.txt"
  ls -la "$OUT/live" | tee -a "$OUT/summary.txt"
  python3 $HERE/check_trace.py /tmp/live.pt.trace.json | tee -a "$OUT/summary.txt"
  gzip -9 -c /tmp/live.pt.trace.json > "$OUT/live/final.json.gz"; gzip -9 "$OUT"/live/snap*.json
  $S attach $LPID --detach 2>&1 | tee -a "$OUT/summary.txt"
  pkill -f "train_mlp.py --iters 20000"; wait; unset STRATA_SOCKET_DIR
fi
if has long; then
  # A 4 s attach, with the agent's status, the file's size and the job's progress every 0.25 s,
  # under several agent settings (each its own job: the settings are read from its environment).
  log "long: a 4 s attach under several settings"
  export STRATA_SOCKET_DIR=/tmp/strata-long
  for v in "default" "KINDS=all" "STRATA_BUFFER_MB=8" "default"; do
    kinds=(); envs=()
    case $v in KINDS=*) kinds=(--kinds ${v#KINDS=});; STRATA*) envs=("$v");; esac
    env "${envs[@]}" $S record --dormant -- python3 $HERE/train_mlp.py --iters 20000 --warmup 0 --progress 100 > /tmp/long_job.log 2>&1 &
    sleep 14
    LPID=$($S attach | awk 'NR>1 && /python3/ {print $1; exit}')
    t0=$(date +%s.%N)
    $S attach $LPID --duration 4 "${kinds[@]}" -o /tmp/long.json > /tmp/long_attach.log 2>&1 &
    at=$!
    echo "-- $v: attach started at $t0" >> "$OUT/long.log"
    while kill -0 $at 2>/dev/null; do
      st=$($S attach $LPID --status 2>&1 | awk -F': ' '/^(state|records|buffers_refused|events|dropped)/ {printf "%s=%s ", $1, $2}')
      sz=$(stat -c %s /tmp/long.json 2>/dev/null || echo -)
      echo "$(date +%s.%N | awk -v t=$t0 '{printf "%.2f", $1 - t}') size=$sz $st" >> "$OUT/long.log"
      sleep 0.25
    done
    cat /tmp/long_attach.log >> "$OUT/long.log"
    $S attach $LPID --status 2>&1 | grep -E "buffers_refused|events|dropped" | tr '\n' ' ' >> "$OUT/long.log"; echo >> "$OUT/long.log"
    grep progress /tmp/long_job.log | awk -v t=$t0 '$2 > t - 1 && $2 < t + 6 {printf "job %.2f it %d\n", $2 - t, $3}' >> "$OUT/long.log"
    log "long $v"
    python3 $HERE/check_trace.py /tmp/long.json | tee -a "$OUT/summary.txt"
    python3 - /tmp/long.json $t0 <<'PYEOF' | tee -a "$OUT/summary.txt"
import collections, json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
xs = [e for e in ev if e.get("ph") == "X"]
t0 = min(float(e["ts"]) for e in xs)
base = t["baseTimeNanoseconds"] / 1e9 - float(sys.argv[2])
print(f"events from {base + t0 / 1e6:.3f} s to {base + max(float(e['ts']) for e in xs) / 1e6:.3f} s after the attach began")
for cat in ("kernel", "cuda_runtime"):
    b = collections.Counter(int((float(e["ts"]) - t0) / 2.5e5) for e in xs if e.get("cat") == cat)
    print(cat, "per 250 ms:", [b[i] for i in range(20)])
PYEOF
    $S attach $LPID --detach > /dev/null 2>&1
    pkill -f "train_mlp.py --iters 20000"; wait
  done
  unset STRATA_SOCKET_DIR
  cat "$OUT/long.log" >> "$OUT/summary.txt"
fi
cp "$OUT/summary.txt" "$FINAL/"
tar czf "$FINAL/results.tgz" -C "$OUT" .
ls -la "$OUT" "$FINAL"
