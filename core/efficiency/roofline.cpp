// The device roofline table (roofline.h). Every figure is the vendor's dense peak at boost clock;
// where a datasheet gives only figures "with sparsity", they are halved (2:4 structured sparsity
// doubles the quoted rate). The last-level cache sizes come from the architecture whitepapers.
// A device with several dies seen by PyTorch as several devices (an
// MI250's two GCDs) gets one die's share.
#include "core/efficiency/roofline.h"

#include <algorithm>
#include <cctype>

namespace strata {

namespace {

constexpr double T = 1e12;  // TFLOP/s, TB/s

constexpr double MB = 1 << 20;

DevicePeaks peaks(const char* name, double fp32, double fp32_matrix, double tf32, double fp16, double bf16, double fp8,
                  double tb_per_s, double cache_mb, const char* source) {
  DevicePeaks p;
  p.name = name;
  p.fp32 = fp32 * T;
  p.fp32_matrix = fp32_matrix * T;
  p.tf32 = tf32 * T;
  p.fp16 = fp16 * T;
  p.bf16 = bf16 * T;
  p.fp8 = fp8 * T;
  p.bandwidth = tb_per_s * T;
  p.cache = cache_mb * MB;
  p.source = source;
  return p;
}

enum Entry : size_t {
  V100Sxm, V100Pcie, V100S, A100_40, A100_80Pcie, A100_80Sxm, A10, L4, Rtx3090, H100Sxm, H100Pcie, H100Nvl, H200Sxm,
  H200Nvl, B200, Mi250xGcd, Mi250Gcd, Mi300x, Mi325x, EntryCount
};

std::vector<DevicePeaks> make_table() {
  std::vector<DevicePeaks> t(EntryCount);
  // NVIDIA Tesla V100 datasheet (2020): SXM2 15.7 TF FP32, 125 TF tensor (FP16), 900 GB/s; PCIe
  // 14 / 112 TF. No TF32, BF16 or FP8. The DGX Station's V100-DGXS is the SXM2 part. Volta
  // whitepaper: 6 MB L2.
  t[V100Sxm] = peaks("NVIDIA V100 SXM2", 15.7, 15.7, 0, 125, 0, 0, 0.9, 6, "NVIDIA Tesla V100 datasheet");
  t[V100Pcie] = peaks("NVIDIA V100 PCIe", 14, 14, 0, 112, 0, 0, 0.9, 6, "NVIDIA Tesla V100 datasheet");
  // NVIDIA V100S datasheet: 16.4 TF FP32, 130 TF tensor, 1134 GB/s.
  t[V100S] = peaks("NVIDIA V100S PCIe", 16.4, 16.4, 0, 130, 0, 0, 1.134, 6, "NVIDIA V100S datasheet");
  // NVIDIA A100 datasheet (2021): 19.5 TF FP32, 156 TF TF32, 312 TF FP16/BF16 (dense); 40 GB
  // 1,555 GB/s, 80 GB PCIe 1,935 GB/s, 80 GB SXM 2,039 GB/s. A100 whitepaper: 40 MB L2.
  t[A100_40] = peaks("NVIDIA A100 40GB", 19.5, 19.5, 156, 312, 312, 0, 1.555, 40, "NVIDIA A100 datasheet");
  t[A100_80Pcie] = peaks("NVIDIA A100 80GB PCIe", 19.5, 19.5, 156, 312, 312, 0, 1.935, 40, "NVIDIA A100 datasheet");
  t[A100_80Sxm] = peaks("NVIDIA A100 80GB SXM", 19.5, 19.5, 156, 312, 312, 0, 2.039, 40, "NVIDIA A100 datasheet");
  // NVIDIA A10 datasheet: 31.2 TF FP32, 62.5 TF TF32, 125 TF FP16/BF16 (dense), 600 GB/s; GA102
  // whitepaper: 6 MB L2.
  t[A10] = peaks("NVIDIA A10", 31.2, 31.2, 62.5, 125, 125, 0, 0.6, 6, "NVIDIA A10 datasheet");
  // NVIDIA L4 datasheet: 30.3 TF FP32; TF32 120, FP16/BF16 242, FP8 485 TF with sparsity; 300 GB/s;
  // Ada whitepaper: 48 MB L2.
  t[L4] = peaks("NVIDIA L4", 30.3, 30.3, 60, 121, 121, 242.5, 0.3, 48, "NVIDIA L4 datasheet (sparse figures halved)");
  // NVIDIA Ampere GA102 whitepaper, GeForce RTX 3090: 35.6 TF FP32 and TF32 (dense), 71 TF
  // FP16/BF16 tensor with FP32 accumulate (what PyTorch's kernels use), 936 GB/s, 6 MB L2.
  t[Rtx3090] = peaks("NVIDIA GeForce RTX 3090", 35.6, 35.6, 35.6, 71, 71, 0, 0.936, 6, "NVIDIA GA102 whitepaper");
  // NVIDIA H100 datasheet: SXM 67 TF FP32; TF32 989, FP16/BF16 1,979, FP8 3,958 TF with
  // sparsity; 3.35 TB/s. PCIe: 51 TF; 756 / 1,513 / 3,026 sparse; 2 TB/s. NVL: 60 TF;
  // 835 / 1,671 / 3,341 sparse; 3.9 TB/s. H100 whitepaper: 50 MB L2 (the H200's die too).
  t[H100Sxm] = peaks("NVIDIA H100 SXM5", 67, 67, 494.5, 989.5, 989.5, 1979, 3.35, 50, "NVIDIA H100 datasheet (sparse figures halved)");
  t[H100Pcie] = peaks("NVIDIA H100 PCIe", 51, 51, 378, 756.5, 756.5, 1513, 2.0, 50, "NVIDIA H100 datasheet (sparse figures halved)");
  t[H100Nvl] = peaks("NVIDIA H100 NVL", 60, 60, 417.5, 835.5, 835.5, 1670.5, 3.9, 50, "NVIDIA H100 datasheet (sparse figures halved)");
  // NVIDIA H200 datasheet: SXM the H100 SXM's rates with 4.8 TB/s; NVL 60 TF FP32, 835 /
  // 1,671 / 3,341 TF sparse, 4.8 TB/s.
  t[H200Sxm] = peaks("NVIDIA H200 SXM", 67, 67, 494.5, 989.5, 989.5, 1979, 4.8, 50, "NVIDIA H200 datasheet (sparse figures halved)");
  t[H200Nvl] = peaks("NVIDIA H200 NVL", 60, 60, 417.5, 835.5, 835.5, 1670.5, 4.8, 50, "NVIDIA H200 datasheet (sparse figures halved)");
  // NVIDIA HGX B200 specifications, per GPU (an eighth of the 8-GPU board): 75 TF FP32; TF32
  // 2.25, FP16/BF16 4.5, FP8 9 PF with sparsity; 8 TB/s. No L2 size given.
  t[B200] = peaks("NVIDIA B200", 75, 75, 1125, 2250, 2250, 4500, 8.0, 0, "NVIDIA HGX B200 specifications (per GPU, sparse figures halved)");
  // AMD Instinct MI250X / MI250 data sheets, per package: FP32 vector 47.9 / 45.3 TF, FP32
  // matrix 95.7 / 90.5 TF, FP16/BF16 383 / 362.1 TF, 3.2768 TB/s; no TF32 or FP8. PyTorch sees
  // each of the two GCDs as a device: half each (an MI250 GCD is an MI210). CDNA 2 whitepaper:
  // 8 MB L2 per GCD.
  t[Mi250xGcd] = peaks("AMD Instinct MI250X (one GCD)", 23.95, 47.85, 0, 191.5, 191.5, 0, 1.6384, 8, "AMD Instinct MI250X data sheet (per GCD)");
  t[Mi250Gcd] = peaks("AMD Instinct MI250 (one GCD) / MI210", 22.65, 45.25, 0, 181.05, 181.05, 0, 1.6384, 8,
                      "AMD Instinct MI250 data sheet (per GCD)");
  // AMD Instinct MI300X data sheet: FP32 vector and matrix 163.4 TF, TF32 653.7, FP16/BF16
  // 1,307.4, FP8 2,614.9 TF (dense), 5.3 TB/s, 256 MB Infinity Cache. MI325X: the same rates, 6 TB/s.
  t[Mi300x] = peaks("AMD Instinct MI300X", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 5.3, 256, "AMD Instinct MI300X data sheet");
  t[Mi325x] = peaks("AMD Instinct MI325X", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 6.0, 256, "AMD Instinct MI325X data sheet");
  return t;
}

bool has(std::string_view s, std::string_view w) { return s.find(w) != std::string_view::npos; }

// The entry for a device, or EntryCount.
size_t match(std::string_view lower, int64_t memory, int64_t cus, int64_t arch_major) {
  const bool big = memory > 60'000'000'000 || has(lower, "80gb");
  if (has(lower, "b200")) return B200;
  if (has(lower, "h200")) return has(lower, "nvl") ? H200Nvl : H200Sxm;
  if (has(lower, "h100")) return has(lower, "pcie") ? H100Pcie : has(lower, "nvl") ? H100Nvl : H100Sxm;
  if (has(lower, "a100")) return !big ? A100_40 : has(lower, "pcie") ? A100_80Pcie : A100_80Sxm;
  if (has(lower, "v100s")) return V100S;
  if (has(lower, "v100")) return has(lower, "pcie") ? V100Pcie : V100Sxm;
  if (has(lower, "rtx 3090") && !has(lower, "ti")) return Rtx3090;
  if (lower.ends_with(" a10") || lower == "a10") return A10;
  if (lower.ends_with(" l4") || lower == "l4") return L4;
  if (has(lower, "mi325x")) return Mi325x;
  if (has(lower, "mi300x")) return Mi300x;
  if (has(lower, "mi250x")) return Mi250xGcd;
  if (has(lower, "mi250") || has(lower, "mi210")) return Mi250Gcd;
  // ROCm names an MI200 GCD "AMD Radeon Graphics": gfx90a (major 9) with 110 (MI250X) or 104
  // (MI250, MI210) compute units.
  if (has(lower, "amd") && arch_major == 9 && cus == 110) return Mi250xGcd;
  if (has(lower, "amd") && arch_major == 9 && cus == 104) return Mi250Gcd;
  return EntryCount;
}

}  // namespace

const std::vector<DevicePeaks>& roofline_table() {
  static const std::vector<DevicePeaks> t = make_table();
  return t;
}

DevicePeaks device_peaks(std::string_view name, int64_t memory, int64_t cus, int64_t arch_major) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const size_t i = match(lower, memory, cus, arch_major);
  return i < EntryCount ? roofline_table()[i] : DevicePeaks{};
}

DevicePeaks device_peaks(const DeviceInfo& d) { return device_peaks(d.name, d.total_global_mem, d.num_sms, d.compute_major); }

DevicePeaks apply_override(DevicePeaks p, const RooflineOverride& o) {
  if (!o.device.empty()) p = device_peaks(o.device);
  if (o.flops > 0) {
    // One roof for every number format: what a person measured or knows of the part.
    p.fp32 = p.fp32_matrix = p.tf32 = p.fp16 = p.bf16 = p.fp8 = o.flops;
    if (p.name.empty()) p.name = "given";
  }
  if (o.bandwidth > 0) p.bandwidth = o.bandwidth;
  if (o.flops > 0 || o.bandwidth > 0) p.source = p.source.empty() ? "given" : p.source + ", figures given";
  return p;
}

double peak_flops(const DevicePeaks& p, KernelClass c, Precision pr, std::string_view kernel) {
  if (c != KernelClass::Gemm && c != KernelClass::Conv && c != KernelClass::Attention) return p.fp32;
  switch (pr) {
    case Precision::FP8: return p.fp8 > 0 ? p.fp8 : p.fp16;
    case Precision::FP16: return p.fp16;
    case Precision::BF16: return p.bf16 > 0 ? p.bf16 : p.fp32_matrix;
    case Precision::FP32:
      // cuBLAS, cuDNN and CUTLASS name their TF32 kernels so ("…_tf32f32_…", "tfloat32", the
      // m16n8k8 single-precision tensor op "s1688gemm").
      for (std::string_view key : {"tf32", "tfloat32", "s1688", "s16816"})
        if (p.tf32 > 0 && has(kernel, key)) return p.tf32;
      return p.fp32_matrix;
    default: return p.fp32_matrix;
  }
}

}  // namespace strata
