// The roofline of the devices in the traces people have: peak FLOP/s per number format (tensor
// or matrix units and not) and memory bandwidth, from vendors' datasheets (dense figures, at
// boost clock: the most a kernel can reach, never the sparse "up to" figures). A device is found
// by its deviceProperties name; a person can name another or give the figures
// (`strata summary --roofline-device`, `--peak-tflops`, `--peak-bandwidth`).
#pragma once

#include "core/efficiency/op_work.h"
#include "core/trace_model.h"

#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct DevicePeaks {
  std::string name;        // the table's name ("NVIDIA H100 SXM5"); empty when no entry matched
  double fp32 = 0;         // FP32 on the vector units, FLOP/s
  double fp32_matrix = 0;  // FP32 on matrix units (AMD's MFMA); the vector rate where there are none
  double tf32 = 0;         // TF32 tensor cores; 0: none
  double fp16 = 0;         // FP16 tensor / matrix units
  double bf16 = 0;         // BF16 tensor / matrix units; 0: none (V100)
  double fp8 = 0;          // FP8 tensor / matrix units; 0: none
  double bandwidth = 0;    // device memory, bytes/s
  double cache = 0;        // the last-level cache, bytes (0: not published): data that fits may never reach memory
  std::string source;      // where the figures come from (a datasheet, or "--peak-tflops")
  bool known() const { return fp32 > 0 && bandwidth > 0; }
};

// What a person gives instead of the table: a device by name ("H100 SXM", "MI300X"), and/or a
// peak (FLOP/s, every number format) and a bandwidth (bytes/s). Zero / empty: the table's.
struct RooflineOverride {
  std::string device;
  double flops = 0;
  double bandwidth = 0;
  bool empty() const { return device.empty() && flops <= 0 && bandwidth <= 0; }
};

// The table's entry for a device name as deviceProperties write it ("NVIDIA H100 80GB HBM3",
// "Tesla V100-SXM2-32GB", "AMD Instinct MI300X"); memory size and compute units tell variants
// apart (A100 40/80 GB, an MI250's "AMD Radeon Graphics" GCD). Empty name when unmatched.
DevicePeaks device_peaks(std::string_view name, int64_t memory_bytes = 0, int64_t compute_units = 0, int64_t arch_major = 0);
DevicePeaks device_peaks(const DeviceInfo& d);
// The peaks with a person's figures applied (a named device first, then the numbers).
DevicePeaks apply_override(DevicePeaks p, const RooflineOverride& o);

// The FLOP/s a kernel can reach: matrix classes (gemm, conv, attention) on the tensor / matrix
// units of their number format (FP32 products on TF32 tensor cores when the kernel's name says
// tf32, else the FP32 rate; FP64 at the FP32 rate, which is no lower on the data-centre parts
// listed), everything else on the FP32 vector units. 0 when unknown.
double peak_flops(const DevicePeaks& p, KernelClass c, Precision pr, std::string_view kernel_name);

// Every entry of the table, for the docs and the tests.
const std::vector<DevicePeaks>& roofline_table();

}  // namespace strata
