// A plain CUDA program for recording tests: copies, a memset, kernels on two streams,
// a stream wait, NVTX ranges and a marker, and a cudaProfilerStart/Stop window.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <vector>

__global__ void add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void scale(float* c, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] *= s;
}

#define CHECK(x)                                                         \
  do {                                                                   \
    cudaError_t e = (x);                                                 \
    if (e != cudaSuccess) {                                              \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));       \
      return 1;                                                          \
    }                                                                    \
  } while (0)

int main() {
  const int n = 1 << 20;
  std::vector<float> h(n, 1.0f);
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&c, n * sizeof(float)));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  cudaEvent_t ev;
  CHECK(cudaEventCreate(&ev));
  CHECK(cudaProfilerStart());
  for (int it = 0; it < 5; ++it) {
    nvtxRangePushA("iteration");
    CHECK(cudaMemcpyAsync(a, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, s1));
    CHECK(cudaMemcpyAsync(b, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, s2));
    CHECK(cudaMemsetAsync(c, 0, n * sizeof(float), s1));
    CHECK(cudaEventRecord(ev, s2));
    CHECK(cudaStreamWaitEvent(s1, ev, 0));
    add<<<(n + 255) / 256, 256, 0, s1>>>(a, b, c, n);
    scale<<<(n + 255) / 256, 256, 0, s2>>>(a, 0.5f, n);
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaMemcpy(h.data(), c, n * sizeof(float), cudaMemcpyDeviceToHost));
    nvtxMarkA("copied back");
    nvtxRangePop();
  }
  CHECK(cudaProfilerStop());
  CHECK(cudaDeviceSynchronize());
  std::printf("c[0] = %.2f\n", h[0]);
  return 0;
}
