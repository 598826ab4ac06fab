#!/usr/bin/env bash
# Strata's quick start.
#   ./build.sh run [FILE]   install what is missing, build, open FILE (default: the bundled sample)
#   ./build.sh test         install what is missing, build, run every test (release, ASan+UBSan, fuzz)
#   ./build.sh build        install what is missing and build the release tree only
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
JOBS=${JOBS:-$(nproc)}

PACKAGES=(cmake ninja-build g++ clang libclang-rt-14-dev pkg-config python3 zlib1g-dev
  libsimdjson-dev libcli11-dev doctest-dev libimgui-dev libglfw3-dev libgl-dev libstb-dev
  xvfb xauth libgl1-mesa-dri fonts-dejavu-core)

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "build.sh: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

configure_build() { # DIR [cmake args...]
  local dir=$1; shift
  cmake -S "$ROOT" -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$JOBS"
}

cmd=${1:-run}
case "$cmd" in
  build)
    install_deps
    configure_build build -DCMAKE_BUILD_TYPE=Release
    ;;
  run)
    install_deps
    configure_build build -DCMAKE_BUILD_TYPE=Release
    shift || true
    exec build/app/strata "${@:-assets/sample.pt.trace.json.gz}"
    ;;
  test)
    install_deps
    echo "== release build and tests"
    configure_build build -DCMAKE_BUILD_TYPE=Release
    (cd build && ctest --output-on-failure -j "$JOBS")
    echo "== ASan+UBSan build and tests"
    configure_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_SANITIZE=ON -DSTRATA_BUILD_BENCH=OFF
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$JOBS")
    echo "== loader fuzzing (bounded)"
    CC=clang CXX=clang++ configure_build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_FUZZ=ON \
      -DSTRATA_BUILD_APP=OFF -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_COLLECTOR=OFF
    tests/fuzz/run_fuzz.sh build-fuzz "${FUZZ_SECONDS:-45}"
    ;;
  *)
    echo "usage: ./build.sh run [FILE] | test | build" >&2
    exit 2
    ;;
esac
