// The device table: names as deviceProperties write them, variants, overrides, and which peak a
// kernel runs against.
#include "core/efficiency/roofline.h"

#include <doctest/doctest.h>

using namespace strata;

TEST_CASE("devices are found by their deviceProperties names") {
  CHECK(device_peaks("NVIDIA H100 80GB HBM3").name == "NVIDIA H100 SXM5");
  CHECK(device_peaks("NVIDIA H100 PCIe").name == "NVIDIA H100 PCIe");
  CHECK(device_peaks("NVIDIA H200").name == "NVIDIA H200 SXM");
  CHECK(device_peaks("NVIDIA B200").name == "NVIDIA B200");
  CHECK(device_peaks("Tesla V100-SXM2-32GB").name == "NVIDIA V100 SXM2");
  CHECK(device_peaks("Tesla V100-DGXS-32GB").name == "NVIDIA V100 SXM2");
  CHECK(device_peaks("Tesla V100-PCIE-16GB").name == "NVIDIA V100 PCIe");
  CHECK(device_peaks("NVIDIA GeForce RTX 3090").name == "NVIDIA GeForce RTX 3090");
  CHECK(device_peaks("NVIDIA GeForce RTX 3090 Ti").name.empty());  // another part
  CHECK(device_peaks("NVIDIA A10").name == "NVIDIA A10");
  CHECK(device_peaks("NVIDIA L4").name == "NVIDIA L4");
  CHECK(device_peaks("AMD Instinct MI300X").name == "AMD Instinct MI300X");
  CHECK(device_peaks("Some Accelerator").name.empty());
  CHECK_FALSE(device_peaks("Some Accelerator").known());
  // Memory size tells the A100s apart (Meta's "A100-PG509-200" has 40 GB); the name, PCIe.
  CHECK(device_peaks("NVIDIA A100-PG509-200", 42'505'273'344).bandwidth == doctest::Approx(1.555e12));
  CHECK(device_peaks("NVIDIA A100-SXM4-80GB", 85'000'000'000).bandwidth == doctest::Approx(2.039e12));
  CHECK(device_peaks("NVIDIA A100 80GB PCIe", 84'987'740'160).bandwidth == doctest::Approx(1.935e12));
  // ROCm names an MI250's GCD "AMD Radeon Graphics": gfx90a (9) with 104 compute units.
  DevicePeaks gcd = device_peaks("AMD Radeon Graphics", 68'702'699'520, 104, 9);
  CHECK(gcd.name.find("MI250") != std::string::npos);
  CHECK(gcd.fp16 == doctest::Approx(181.05e12));  // half of the package's 362.1
  CHECK(device_peaks("AMD Radeon Graphics", 17'000'000'000, 60, 10).name.empty());
}

TEST_CASE("every entry has a source and dense peaks in order") {
  for (const DevicePeaks& p : roofline_table()) {
    INFO(p.name);
    CHECK_FALSE(p.source.empty());
    CHECK(p.known());
    CHECK(p.fp32_matrix >= p.fp32);
    CHECK(p.fp16 > p.fp32);
    CHECK((p.tf32 == 0 || p.tf32 <= p.fp16));
    CHECK((p.fp8 == 0 || p.fp8 >= p.fp16));
  }
}

TEST_CASE("a kernel's peak: its class, its number format, TF32 by name") {
  const DevicePeaks h100 = device_peaks("NVIDIA H100 80GB HBM3");
  CHECK(peak_flops(h100, KernelClass::Gemm, Precision::BF16, "nvjet_tst_128x256") == doctest::Approx(989.5e12));
  CHECK(peak_flops(h100, KernelClass::Attention, Precision::FP8, "x") == doctest::Approx(1979e12));
  CHECK(peak_flops(h100, KernelClass::Conv, Precision::FP32, "sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32_f32") ==
        doctest::Approx(494.5e12));
  CHECK(peak_flops(h100, KernelClass::Gemm, Precision::FP32, "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_ffma") == doctest::Approx(67e12));
  CHECK(peak_flops(h100, KernelClass::Elementwise, Precision::BF16, "vectorized_elementwise_kernel") == doctest::Approx(67e12));
  // No BF16 tensor cores on a V100: the FP32 rate.
  const DevicePeaks v100 = device_peaks("Tesla V100-SXM2-32GB");
  CHECK(peak_flops(v100, KernelClass::Gemm, Precision::BF16, "x") == doctest::Approx(15.7e12));
  CHECK(peak_flops(v100, KernelClass::Gemm, Precision::FP16, "volta_h884gemm") == doctest::Approx(125e12));
  // MI250: FP32 products on its matrix cores.
  const DevicePeaks mi250 = device_peaks("AMD Instinct MI250");
  CHECK(peak_flops(mi250, KernelClass::Gemm, Precision::FP32, "Cijk_Ailk_Bljk_SB_MT64x64x16") == doctest::Approx(45.25e12));
}

TEST_CASE("a person's figures replace the table's") {
  RooflineOverride o;
  CHECK(o.empty());
  o.device = "H100 SXM";
  DevicePeaks p = apply_override(device_peaks("NVIDIA A100-PG509-200"), o);
  CHECK(p.name == "NVIDIA H100 SXM5");
  o = {};
  o.flops = 100e12;
  o.bandwidth = 1e12;
  p = apply_override({}, o);
  CHECK(p.known());
  CHECK(p.fp16 == 100e12);
  CHECK(p.fp32 == 100e12);
  CHECK(p.bandwidth == 1e12);
  CHECK(p.source == "given");
  o.flops = 0;
  p = apply_override(device_peaks("NVIDIA H100 80GB HBM3"), o);
  CHECK(p.fp16 == doctest::Approx(989.5e12));
  CHECK(p.bandwidth == 1e12);
}
