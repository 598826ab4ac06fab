// The efficiency figures on traces: a made-up one whose every figure is known, and the real
// traces with shapes, whose forward FLOPs per iteration are checked against counts made here
// from each model's published configuration (not from Strata's op model), and whose kernels
// must all stay under their device's roof.
#include "core/annotate/annotation.h"
#include "core/loader.h"
#include "test_data.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace strata;

namespace {

std::unique_ptr<TraceModel> load(const std::string& path) {
  LoadResult r = load_trace(path);
  INFO(path << ": " << r.error());
  REQUIRE(r.model);
  return std::move(r.model);
}

std::string x(const char* cat, const std::string& name, int pid, int tid, int ts, int dur, const std::string& args = "{}") {
  return R"({"ph": "X", "cat": ")" + std::string(cat) + R"(", "name": ")" + name + R"(", "pid": )" + std::to_string(pid) +
         R"(, "tid": )" + std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) +
         R"(, "args": )" + args + "},\n";
}
std::string corr(int c) { return R"({"correlation": )" + std::to_string(c) + "}"; }

// One step on an H100: aten::mm launching two kernels (30 and 10 µs), an op the model does not
// know, a kernel whose FLOPs the range profiler counted, and a TF32 product.
std::unique_ptr<TraceModel> made_up_trace() {
  const std::string mm_args = R"({"Input Dims": [[64, 512], [512, 1024]], "Input type": ["float", "float"], "Concrete Inputs": ["", ""]})";
  std::string s = R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85017493504}],)"
                  R"( "traceEvents": [)"
                  R"({"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},)";
  s += x("user_annotation", "ProfilerStep#1", 100, 1, 0, 1000);
  s += x("cpu_op", "aten::mm", 100, 1, 10, 100, mm_args);
  s += x("cuda_runtime", "cudaLaunchKernel", 100, 1, 20, 5, corr(1));
  s += x("cuda_runtime", "cudaLaunchKernel", 100, 1, 40, 5, corr(2));
  s += x("cpu_op", "vllm::moe_forward", 100, 1, 200, 100, R"({"Input Dims": [[888, 3072]], "Input type": ["c10::BFloat16"]})");
  s += x("cuda_runtime", "cudaLaunchKernel", 100, 1, 210, 5, corr(3));
  s += x("cpu_op", "aten::mm", 100, 1, 400, 50, mm_args);
  s += x("cuda_runtime", "cudaLaunchKernel", 100, 1, 410, 5, corr(4));
  s += x("cpu_op", "aten::mm", 100, 1, 600, 50, mm_args);
  s += x("cuda_runtime", "cudaLaunchKernel", 100, 1, 610, 5, corr(5));
  s += x("kernel", "gemm_a", 0, 7, 100, 30, corr(1));
  s += x("kernel", "gemm_b", 0, 7, 140, 10, corr(2));
  s += x("kernel", "moe_kernel", 0, 7, 300, 50, corr(3));
  s += x("kernel", "ampere_sgemm_128x64_nn", 0, 7, 500, 20, corr(4));
  s += x("kernel", "sm80_xmma_gemm_f32f32_tf32f32_f32", 0, 7, 700, 20, corr(5));
  // The range profiler's view of the last two: 1000 FFMA instructions each.
  const std::string ffma = R"("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1000})";
  s += x("cuda_profiler_range", "ampere_sgemm_128x64_nn", 0, 7, 2000, 100, R"({"correlation": 4, )" + ffma);
  s += x("cuda_profiler_range", "sm80_xmma_gemm_f32f32_tf32f32_f32", 0, 7, 2100, 100, R"({"correlation": 5, )" + ffma);
  s += R"({"ph": "i", "name": "end", "pid": 100, "tid": 1, "ts": 0, "s": "t"}]})";
  LoadResult r = load_trace_bytes("efficiency.json", s);
  INFO(r.error());
  REQUIRE(r.model);
  return std::move(r.model);
}

const KernelWork* kernel_named(const TraceModel& m, const Efficiency& e, std::string_view name) {
  for (const KernelWork& k : e.kernels)
    if (m.name_of(k.kernel) == name && m.ev.category(k.kernel) == Cat::Kernel) return &k;
  return nullptr;
}

double forward_flops_per_iteration(const Annotation& a) {
  double f = 0;
  for (const PhaseEfficiency& p : a.analyses.efficiency.phases)
    if (p.kind == PhaseKind::Forward) f += p.stat.flops;
  return f / double(std::max<size_t>(1, a.iterations.size()));
}

// Every kernel whose work is known runs at or under its roof; the first few that do not are named.
void check_under_roof(const TraceModel& m, const Efficiency& e) {
  size_t over = 0;
  for (const KernelWork& k : e.kernels) {
    const double share = k.roofline_share();
    if (share <= 1.0) continue;
    if (++over <= 5)
      MESSAGE(m.path << ": " << m.name_of(k.kernel).substr(0, 90) << " (op " << (k.op == kNoEvent ? "-" : m.name_of(k.op)) << ", "
                     << kernel_class_name(k.cls) << ", " << precision_name(k.precision) << ") at " << 100 * share
                     << "% of its roof: " << k.flops << " FLOP, " << k.bytes << " B in " << k.time << " ns");
  }
  CHECK(over == 0);
}

// torchvision's resnet18 multiply-accumulates per image at a square input: the conv stem,
// max pool, four stages of two BasicBlocks (3×3 convs, a 1×1 stride-2 downsample at each
// stage's start but the first) and the 512×1000 classifier.
double resnet18_macs(int64_t side) {
  auto out = [](int64_t in, int64_t k, int64_t s, int64_t p) { return (in + 2 * p - k) / s + 1; };
  int64_t hw = out(side, 7, 2, 3);
  double macs = double(hw * hw) * 64 * 3 * 49;
  hw = out(hw, 3, 2, 1);  // max pool
  int64_t c = 64;
  for (int64_t width : {64, 128, 256, 512}) {
    const int64_t stride = width == 64 ? 1 : 2, o = out(hw, 3, stride, 1);
    macs += double(o * o) * double(width * c * 9) + double(o * o) * double(width * width * 9);  // first block
    if (stride == 2) macs += double(o * o) * double(width * c);                               // its downsample
    macs += 2 * double(o * o) * double(width * width * 9);                                     // second block
    hw = o;
    c = width;
  }
  return macs + 512 * 1000;
}

// A transformer layer's matrix products over T tokens (hidden h, feed-forward f): the four
// attention projections and the two (three when gated) feed-forward ones, 2 FLOPs per MAC.
double layer_gemm_flops(double tokens, double h, double f, int ff_matrices) { return 2 * tokens * (4 * h * h + ff_matrices * h * f); }

}  // namespace

TEST_CASE("made-up trace: an op's kernels share its work by time; unknown ops are named; counters win") {
  auto m = made_up_trace();
  Annotation a = annotate(*m);
  const Efficiency& e = a.analyses.efficiency;
  REQUIRE(e.devices.size() == 1);
  CHECK(e.devices[0].peaks.name == "NVIDIA H100 SXM5");
  const double flops = 2.0 * 64 * 1024 * 512, bytes = 4.0 * (64 * 512 + 512 * 1024 + 64 * 1024);
  const KernelWork* ka = kernel_named(*m, e, "gemm_a");
  const KernelWork* kb = kernel_named(*m, e, "gemm_b");
  REQUIRE(ka);
  REQUIRE(kb);
  CHECK(ka->source == WorkSource::Shapes);
  CHECK(m->name_of(ka->op) == "aten::mm");
  CHECK(ka->flops == doctest::Approx(0.75 * flops));  // 30 of the op's 40 µs
  CHECK(kb->flops == doctest::Approx(0.25 * flops));
  CHECK(kb->bytes == doctest::Approx(0.25 * bytes));
  CHECK(ka->cls == KernelClass::Gemm);
  CHECK(ka->peak == doctest::Approx(67e12));  // an FP32 product not named TF32
  CHECK(ka->roofline_share() == doctest::Approx(std::max(0.75 * flops / 67e12, 0.75 * bytes / 3.35e12) * 1e9 / 30000));
  CHECK(ka->compute_bound());
  // The range profiler counted 2000 FLOPs of the CUDA-core product; the tensor-core one keeps its shapes'.
  const KernelWork* counted = kernel_named(*m, e, "ampere_sgemm_128x64_nn");
  const KernelWork* tf32 = kernel_named(*m, e, "sm80_xmma_gemm_f32f32_tf32f32_f32");
  REQUIRE(counted);
  REQUIRE(tf32);
  CHECK(counted->source == WorkSource::Counters);
  CHECK(counted->flops == 2000);
  CHECK(counted->bytes == doctest::Approx(bytes));
  CHECK(tf32->source == WorkSource::Shapes);
  CHECK(tf32->flops == doctest::Approx(flops));
  CHECK(tf32->peak == doctest::Approx(494.5e12));
  CHECK(e.kernels_from_counters == 1);
  const KernelWork* moe = kernel_named(*m, e, "moe_kernel");
  REQUIRE(moe);
  CHECK(moe->source == WorkSource::None);
  REQUIRE(e.unmodelled.size() == 1);
  CHECK(e.unmodelled[0].name == "vllm::moe_forward");
  CHECK(e.unmodelled[0].why == WorkModel::Unknown);
  CHECK(e.unmodelled[0].kernels == 1);
  CHECK(e.unmodelled[0].time == 50'000);
  CHECK(e.total.kernels == 5);
  CHECK(e.total.modelled == 4);
  CHECK(e.total.flops == doctest::Approx(2 * flops + 2000));
  CHECK(e.ops_modelled == 3);
  REQUIRE(e.phases.size() == 1);
  CHECK(e.phases[0].sentence.find("of the roofline: ") != std::string::npos);
  CHECK(e.phases[0].sentence.find("-bound gemm kernels of mm") != std::string::npos);
  const std::string json = summary_json(*m, a);
  CHECK(json.find(R"("efficiency":{"work_split":"by time","devices":[{"device":0,"name":"NVIDIA H100 80GB HBM3","roofline":"NVIDIA H100 SXM5")") !=
        std::string::npos);
  CHECK(json.find(R"("unmodelled_ops":[{"name":"vllm::moe_forward","why":"no model","calls":1,"kernels":1,"time_ns":50000}])") !=
        std::string::npos);
  const std::string text = summary_text(*m, a);
  CHECK(text.find("hardware efficiency") != std::string::npos);
  CHECK(text.find("vllm::moe_forward (no model, 1 kernels") != std::string::npos);
}

TEST_CASE("made-up trace: a given roofline replaces the table's, and a device the table lacks has none") {
  auto m = made_up_trace();
  AnnotateOptions o;
  o.roofline.flops = 100e12;
  o.roofline.bandwidth = 1e12;
  Annotation a = annotate(*m, o);
  const KernelWork* k = kernel_named(*m, a.analyses.efficiency, "gemm_a");
  REQUIRE(k);
  CHECK(k->peak == 100e12);
  CHECK(k->bandwidth == 1e12);
  m->devices[0].name = "Some Accelerator";
  Annotation b = annotate(*m);
  CHECK(b.analyses.efficiency.total.roofline_share() < 0);
  CHECK(b.analyses.efficiency.total.flops > 0);
  REQUIRE_FALSE(b.analyses.efficiency.notes.empty());
  CHECK(b.analyses.efficiency.notes[0].find("not in the table") != std::string::npos);
  CHECK(b.analyses.efficiency.phases[0].sentence.find("roofline is unknown") != std::string::npos);
}

TEST_CASE("resnet18 (torch2, batch 16 at 112x112): forward FLOPs per iteration against the architecture's count") {
  // Checks the count against torchvision's published 1.814 GMACs at 224×224 first. At 112×112
  // the last stage is 4×4, not 3.5×3.5, so the count is not a quarter of that (it is 7% more).
  CHECK(resnet18_macs(224) == doctest::Approx(1.814e9).epsilon(0.005));
  const double expected = 2 * 16 * resnet18_macs(112);
  for (const char* name : {"resnet18-infer-h100.pt.trace.json.gz", "resnet18-train-h100.pt.trace.json.gz"}) {
    auto m = load(std::string(STRATA_TORCH2_DIR) + "/" + name);
    Annotation a = annotate(*m);
    INFO(name);
    CHECK(forward_flops_per_iteration(a) == doctest::Approx(expected).epsilon(0.05));
    check_under_roof(*m, a.analyses.efficiency);
  }
}

TEST_CASE("MLP and transformer (torch2): forward FLOPs per iteration against their configurations") {
  auto mlp = load(std::string(STRATA_TORCH2_DIR) + "/mlp-train-nosteps-h100.pt.trace.json.gz");
  Annotation a = annotate(*mlp);
  // 512-1024-1024-10 at batch 64.
  CHECK(forward_flops_per_iteration(a) == doctest::Approx(2.0 * 64 * (512 * 1024 + 1024 * 1024 + 1024 * 10)).epsilon(0.05));
  check_under_roof(*mlp, a.analyses.efficiency);
  auto tr = load(std::string(STRATA_TORCH2_DIR) + "/transformer-train-h100.pt.trace.json.gz");
  Annotation b = annotate(*tr);
  // 2 encoder layers (d 256, ff 1024) over 8×128 tokens, attention 4·B·S²·d, the 256×10 head.
  const double layer = layer_gemm_flops(8 * 128, 256, 1024, 2) + 4.0 * 8 * 128 * 128 * 256;
  CHECK(forward_flops_per_iteration(b) == doctest::Approx(2 * layer + 2.0 * 8 * 256 * 10).epsilon(0.05));
  check_under_roof(*tr, b.analyses.efficiency);
}

TEST_CASE("TraceLens BERT and Qwen (H100): forward FLOPs against their published configurations") {
  const std::string bert_path = test::find_trace("tracelens-bert-small-infer-h100.json.gz").string();
  const std::string qwen_path = test::find_trace("tracelens-qwen1.5-0.5b-infer-h100.json.gz").string();
  STRATA_SKIP_UNLESS(!bert_path.empty() && !qwen_path.empty(), "TraceLens traces not found");
  // gaunernst/bert-small-uncased (BertLMHeadModel): hidden 512, 4 layers, intermediate 2048,
  // vocabulary 30522; the trace's input is 1×141 tokens. The LM head: a 512×512 transform and
  // the 512×30522 decoder.
  const double s = 141, h = 512;
  const double bert = 4 * (layer_gemm_flops(s, h, 2048, 2) + 4 * s * s * h) + 2 * s * h * h + 2 * s * h * 30522;
  auto bm = load(bert_path);
  Annotation ba = annotate(*bm);
  CHECK(forward_flops_per_iteration(ba) == doctest::Approx(bert).epsilon(0.05));
  check_under_roof(*bm, ba.analyses.efficiency);
  // Qwen/Qwen1.5-0.5B (Qwen2Model, no LM head in the trace): hidden 1024, 24 layers, 16 heads
  // (no grouped keys), intermediate 2816 with a gated MLP; 16×559 tokens, causal attention
  // (half of 4·B·S²·h).
  const double b = 16, q = 559, qh = 1024;
  const double qwen = 24 * (layer_gemm_flops(b * q, qh, 2816, 3) + 2 * b * q * q * qh);
  auto qm = load(qwen_path);
  Annotation qa = annotate(*qm);
  CHECK(forward_flops_per_iteration(qa) == doctest::Approx(qwen).epsilon(0.05));
  check_under_roof(*qm, qa.analyses.efficiency);
}

TEST_CASE("every real trace with shapes: no kernel above its device's roof") {
  size_t with_work = 0;
  for (const auto& path : test::real_traces()) {
    auto m = load(path.string());
    Annotation a = annotate(*m);
    const Efficiency& e = a.analyses.efficiency;
    INFO(path.string());
    if (e.total.modelled == 0) continue;
    ++with_work;
    CHECK(e.total.flops > 0);
    check_under_roof(*m, e);
  }
  STRATA_SKIP_UNLESS(with_work > 0, "no real trace with shapes found");
}
