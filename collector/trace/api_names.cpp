#include "api_names.h"

#include <algorithm>
#include <array>

namespace strata::collector {

std::string_view strip_api_version(std::string_view name) {
  const size_t pos = name.rfind("_v");
  if (pos == std::string_view::npos || pos + 2 == name.size()) return name;
  const std::string_view digits = name.substr(pos + 2);
  const bool all_digits = std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  return all_digits ? name.substr(0, pos) : name;
}

bool is_noisy_api(std::string_view name) {
  static constexpr std::array<std::string_view, 28> kNoisy = {
      "cudaGetDevice", "cudaSetDevice", "cudaGetDeviceCount", "cudaGetLastError", "cudaPeekAtLastError",
      "cudaDeviceGetAttribute", "cudaGetDeviceProperties", "cudaFuncGetAttributes", "cudaPointerGetAttributes",
      "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo", "cudaDriverGetVersion", "cudaRuntimeGetVersion",
      "cudaGetFuncBySymbol", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion",
      "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
      "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cudaEventQuery", "cudaStreamQuery",
      "cudaGetSymbolAddress", "cudaThreadExchangeStreamCaptureMode", "cudaDeviceCanAccessPeer",
      "cudaStreamGetPriority", "cudaCtxResetPersistingL2Cache", "cudaDeviceGetStreamPriorityRange",
      "cudaFuncSetAttribute", "cudaGetErrorString"};
  return std::find(kNoisy.begin(), kNoisy.end(), name) != kNoisy.end();
}

bool is_recorded_driver_api(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kPrefixes = {
      "cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset", "cuStreamSynchronize", "cuCtxSynchronize",
      "cuEventSynchronize", "cuStreamWaitEvent"};
  return std::any_of(kPrefixes.begin(), kPrefixes.end(),
                     [&](std::string_view p) { return name.substr(0, p.size()) == p; });
}

bool is_recorded_runtime_api(std::string_view name) {
  static constexpr std::array<std::string_view, 19> kPrefixes = {
      "cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset", "cudaMalloc", "cudaFree", "cudaHostAlloc",
      "cudaHostRegister", "cudaHostUnregister", "cudaMemPrefetchAsync", "cudaStreamSynchronize",
      "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent", "cudaEventRecord",
      "cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphInstantiate", "cudaDeviceReset"};
  return std::any_of(kPrefixes.begin(), kPrefixes.end(),
                     [&](std::string_view p) { return name.substr(0, p.size()) == p; });
}

}  // namespace strata::collector
