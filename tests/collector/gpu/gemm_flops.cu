// A job with a known FLOP count, for --metrics on a GPU: each iteration (an NVTX range) runs a
// naive FP32 GEMM of M x N x K, where each thread does exactly K fused multiply-adds (2*M*N*K
// FLOPs in all, M*N*K thread FFMAs), and two other kernels that --kernels '*gemm*' leaves out.
// Prints {"tag": TAG, "median_ms": wall time per iteration, "m": M, "n": N, "k": K}.
//   gemm_flops [--iters N] [--size S] [--tag TAG]
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

__global__ void naive_sgemm(const float* a, const float* b, float* c, int m, int n, int k) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.f;
#pragma unroll 1
  for (int i = 0; i < k; ++i) acc = fmaf(a[row * k + i], b[i * n + col], acc);
  c[row * n + col] = acc;
}

__global__ void vec_add(const float* a, const float* b, float* c, int len) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < len) c[i] = a[i] + b[i];
}

__global__ void scale(float* c, float s, int len) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < len) c[i] *= s;
}

int main(int argc, char** argv) {
  int iters = 20, size = 512;
  std::string tag = "gemm";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--size")) size = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--tag")) tag = argv[i + 1];
  }
  const int m = size, n = size, k = size;
  float *a, *b, *c;
  cudaMalloc(&a, sizeof(float) * m * k);
  cudaMalloc(&b, sizeof(float) * k * n);
  cudaMalloc(&c, sizeof(float) * m * n);
  cudaMemset(a, 0, sizeof(float) * m * k);
  cudaMemset(b, 0, sizeof(float) * k * n);
  const dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  const int len = m * n;
  std::vector<double> ms;
  for (int it = 0; it < iters; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    nvtxRangePushA("iteration");
    naive_sgemm<<<grid, block>>>(a, b, c, m, n, k);
    vec_add<<<(len + 255) / 256, 256>>>(c, c, c, len);
    scale<<<(len + 255) / 256, 256>>>(c, 0.5f, len);
    cudaDeviceSynchronize();
    nvtxRangePop();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (cudaGetLastError() != cudaSuccess) return 1;
  std::sort(ms.begin(), ms.end());
  std::printf("{\"tag\": \"%s\", \"median_ms\": %.3f, \"m\": %d, \"n\": %d, \"k\": %d}\n", tag.c_str(), ms[ms.size() / 2],
              m, n, k);
  return 0;
}
