#!/usr/bin/env bash
# Runs the loader fuzzer for a bounded time; fails on a crash, leak, timeout or OOM.
#   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS
# BUILD_DIR was configured with -DSTRATA_FUZZ=ON and clang. Crash inputs are kept in
# BUILD_DIR/fuzz-artifacts/; reproduce one with BUILD_DIR/tests/fuzz/fuzz_loader FILE.
set -euo pipefail
BUILD=$(cd "${1:?usage: run_fuzz.sh BUILD_DIR SECONDS}" && pwd)
TIME=${2:-45}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FUZZER=$BUILD/tests/fuzz/fuzz_loader
[ -x "$FUZZER" ] || { echo "run_fuzz.sh: $FUZZER not built (configure with -DSTRATA_FUZZ=ON)" >&2; exit 1; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
shopt -s nullglob
# Seeds: the vendored real traces (tests/data/traces, the same files as ../shared/traces) and torch2.
python3 "$HERE/make_corpus.py" "$WORK/corpus" "$ROOT"/tests/data/traces/*.gz "$ROOT"/tests/data/torch2/*.gz
ARTIFACTS=$BUILD/fuzz-artifacts
mkdir -p "$ARTIFACTS"
echo "run_fuzz.sh: $(ls "$WORK/corpus" | wc -l) seeds, ${TIME}s"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$FUZZER" "$WORK/corpus" \
  -dict="$HERE/kineto.dict" -max_total_time="$TIME" -rss_limit_mb=4096 -timeout=10 -max_len=16384 \
  -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
