// Scenario specs and their per-vertex factors.
#include "core/whatif/scenarios.h"

#include "core/event_args.h"
#include "core/job/job.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fnmatch.h>
#include <limits>
#include <unordered_map>

namespace strata::whatif {

namespace {

// Letters and digits only, lower case: "Data loading", "data-loading" and "data_loading" agree.
std::string folded(std::string_view s) {
  std::string o;
  for (char c : s)
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) o += c;
    else if (c >= 'A' && c <= 'Z') o += char(c - 'A' + 'a');
  return o;
}

bool contains_folded(std::string_view name, std::string_view key) { return folded(name).find(key) != std::string::npos; }

// Kernels that tensor cores can run when their inputs are half precision: GEMMs and
// convolutions, by name.
bool is_matmul_or_conv(std::string_view name) {
  for (std::string_view k : {"gemm", "conv", "cutlass", "matmul", "dgrad", "wgrad"})
    if (contains_folded(name, k)) return true;
  return false;
}

bool is_peer_copy(std::string_view name) { return name.find("PtoP") != std::string_view::npos; }

// "2", "1.5", "inf" → a speed-up (> 0).
bool parse_factor(std::string_view t, double& f) {
  if (t == "inf") {
    f = std::numeric_limits<double>::infinity();
    return true;
  }
  std::string s(t);
  char* end = nullptr;
  f = std::strtod(s.c_str(), &end);
  return end && *end == 0 && !s.empty() && f > 0 && std::isfinite(f);
}

std::string factor_text(double f) {
  if (std::isinf(f)) return "no time";
  char b[32];
  std::snprintf(b, sizeof b, "%gx faster", f);
  return b;
}

Result<Effect> parse_effect(std::string_view spec, double amp_factor) {
  using K = Effect::Kind;
  Effect e;
  if (spec == "kernels-2x") e = {K::Kernels, 2, {}, {}};
  else if (spec == "no-launch-overhead" || spec == "cuda-graphs") e = {K::NoLaunchOverhead, 0, {}, {}};
  else if (spec == "no-data-loading") e = {K::NoDataLoading, 0, {}, {}};
  else if (spec == "comm-2x") e = {K::Communication, 2, {}, {}};
  else if (spec == "amp") e = {K::Amp, amp_factor, {}, {}};
  else if (spec == "fused-optimizer") e = {K::FusedOptimizer, 0, {}, {}};
  else {
    size_t colon = spec.find(':'), eq = spec.rfind('=');
    if (colon == std::string_view::npos || eq == std::string_view::npos || eq < colon)
      return Status::invalid("unknown scenario '" + std::string(spec) +
                             "' (kernels-2x, no-launch-overhead, no-data-loading, comm-2x, amp, fused-optimizer, kernel:GLOB=F, layer:PATH=F, phase:NAME=F)");
    std::string_view target = spec.substr(0, colon), what = spec.substr(colon + 1, eq - colon - 1);
    if (!parse_factor(spec.substr(eq + 1), e.value))
      return Status::invalid("'" + std::string(spec) + "': F must be a speed-up above 0 (2: twice as fast, 0.5: twice as slow, inf: no time)");
    if (what.empty()) return Status::invalid("'" + std::string(spec) + "': nothing to match");
    e.pattern = what;
    if (target == "kernel") {
      e.kind = K::Kernel;
    } else if (target == "layer") {
      e.kind = K::Layer;
    } else if (target == "phase") {
      e.kind = K::Phase;
      std::string want = folded(what);
      bool found = false;
      for (size_t p = 0; p < size_t(PhaseKind::Count) && !found; ++p)
        if (folded(phase_name(PhaseKind(p))) == want) e.phase = PhaseKind(p), found = true;
      if (!found)
        return Status::invalid("'" + std::string(spec) + "': no phase of that name (data-loading, forward, loss, zero-grad, backward, optimizer)");
    } else {
      return Status::invalid("'" + std::string(spec) + "': scale kernel:, layer: or phase:");
    }
  }
  return e;
}

// Layer nodes whose path (less the iteration) holds `path`'s '/'-separated names in a row.
std::vector<uint8_t> layers_matching(const AnnotationTree& t, std::string_view path) {
  std::vector<std::string_view> want;
  for (size_t b = 0; b <= path.size();) {
    size_t e = std::min(path.find('/', b), path.size());
    if (e > b) want.push_back(path.substr(b, e - b));
    b = e + 1;
  }
  std::vector<uint8_t> in(t.size(), 0);
  for (NodeId n = 0; n < t.size(); ++n) {
    if (t.kind[n] != NodeKind::Layer || in[n] || want.empty()) continue;
    // The names from the node up to (not including) its iteration, deepest last.
    std::vector<std::string_view> names;
    for (NodeId x = n; x != kNoNode && t.kind[x] != NodeKind::Iteration && t.kind[x] != NodeKind::Root; x = t.parent[x])
      names.push_back(t.name_of(x));
    std::reverse(names.begin(), names.end());
    if (names.size() < want.size() || !std::equal(want.begin(), want.end(), names.end() - ptrdiff_t(want.size()))) continue;
    for (NodeId d = n; d < t.subtree_end[n]; ++d) in[d] = 1;
  }
  return in;
}

}  // namespace

Result<Scenario> parse_scenario(std::string_view spec, double amp_factor) {
  Scenario out;
  out.name = spec;
  for (size_t b = 0; b <= spec.size();) {
    size_t e = std::min(spec.find(',', b), spec.size());
    if (e > b) {
      Result<Effect> ef = parse_effect(spec.substr(b, e - b), amp_factor);
      if (!ef.is_ok()) return ef.status();
      out.effects.push_back(std::move(ef.value()));
    }
    b = e + 1;
  }
  if (out.effects.empty()) return Status::invalid("an empty scenario");
  return out;
}

Scenario bandwidth_scenario(double gb_per_s) {
  char name[64];
  std::snprintf(name, sizeof name, "bandwidth-%gGB/s", gb_per_s);
  return {name, {{Effect::Kind::Bandwidth, gb_per_s, {}, {}}}};
}

std::vector<Scenario> default_scenarios() {
  std::vector<Scenario> out;
  for (const char* s : {"kernels-2x", "no-launch-overhead", "no-data-loading", "comm-2x"}) out.push_back(parse_scenario(s, 2).value());
  return out;
}

std::string describe(const Scenario& s) {
  std::string out;
  for (const Effect& e : s.effects) {
    if (!out.empty()) out += "; ";
    char b[64];
    switch (e.kind) {
      case Effect::Kind::Kernels:
        out += "every compute kernel (not collectives, copies or sets) " + factor_text(e.value) + "; CPU time unchanged";
        break;
      case Effect::Kind::NoLaunchOverhead:
        out += "calls that put work on a stream (kernel launches, async copies and sets) take no CPU time, as when the "
               "iteration is replayed from a CUDA graph; GPU ops keep their time and the shortest launch-to-start latency seen";
        break;
      case Effect::Kind::NoDataLoading:
        out += "the data-loading phase's CPU time (its CUDA calls too) takes no time, as with a loader that keeps ahead; "
               "its copies to the GPU keep their time";
        break;
      case Effect::Kind::Communication:
        out += "collective kernels (NCCL/RCCL) and peer-to-peer copies " + factor_text(e.value) +
               " (in a single trace that includes the time a collective waited for other ranks)";
        break;
      case Effect::Kind::Bandwidth:
        std::snprintf(b, sizeof b, "%g GB/s", e.value);
        out += std::string("collectives and peer-to-peer copies take their message size over ") + b +
               " (algorithm bandwidth, as nccl-tests' algbw); ops whose size the trace does not record keep their time";
        break;
      case Effect::Kind::Amp:
        out += "GEMM and convolution kernels that do not already run on tensor cores " + factor_text(e.value) +
               " (mixed precision; the factor is an assumption: --amp-factor)";
        break;
      case Effect::Kind::FusedOptimizer:
        out += "the optimizer phase's launches cost one launch per iteration (a fused / multi-tensor optimizer); its "
               "kernels keep their time, and so does its CPU time between launches";
        break;
      case Effect::Kind::Kernel: out += "GPU ops named like '" + e.pattern + "' " + factor_text(e.value); break;
      case Effect::Kind::Layer: out += "layer '" + e.pattern + "' (its CPU time, calls and GPU ops) " + factor_text(e.value); break;
      case Effect::Kind::Phase:
        out += std::string("the ") + phase_name(e.phase) + " phase (its CPU time, calls and GPU ops) " + factor_text(e.value);
        break;
    }
  }
  return out;
}

std::string phrase(const Scenario& s) {
  if (s.effects.size() != 1) return s.name;
  const Effect& e = s.effects[0];
  char b[64];
  switch (e.kind) {
    case Effect::Kind::Kernels: std::snprintf(b, sizeof b, "%gx faster kernels", e.value); return b;
    case Effect::Kind::NoLaunchOverhead: return "CUDA graphs";
    case Effect::Kind::NoDataLoading: return "hiding data loading";
    case Effect::Kind::Communication: std::snprintf(b, sizeof b, "%gx faster communication", e.value); return b;
    case Effect::Kind::Bandwidth: std::snprintf(b, sizeof b, "a %g GB/s network", e.value); return b;
    case Effect::Kind::Amp: std::snprintf(b, sizeof b, "mixed precision (%gx GEMMs)", e.value); return b;
    case Effect::Kind::FusedOptimizer: return "a fused optimizer";
    default: return s.name;
  }
}

ScenarioScale scenario_scale(const Graph& g, const Scenario& s) {
  ScenarioScale out;
  out.scale.assign(g.size(), 1.0);
  for (const Effect& e : s.effects) {
    const double f = std::isinf(e.value) ? 0.0 : 1.0 / e.value;
    // Per part, computed once: the layer nodes a rule matches; per name, a glob's answer.
    std::vector<std::vector<uint8_t>> layer_in(g.parts.size());
    if (e.kind == Effect::Kind::Layer)
      for (size_t p = 0; p < g.parts.size(); ++p) layer_in[p] = layers_matching(g.parts[p].annotation->tree, e.pattern);
    std::vector<std::unordered_map<StrId, bool>> glob(g.parts.size());
    std::vector<std::unordered_map<NodeId, Vertex>> first_launch(g.parts.size());  // per optimizer phase node
    uint64_t unsized = 0, sized = 0;
    for (Vertex v = 0; v < g.size(); ++v) {
      const uint32_t pi = g.part_of(v);
      const TraceModel& m = *g.parts[pi].model;
      const VertexKind k = g.kind[v];
      const EventId ev = g.event[v];
      const bool gpu = k == VertexKind::GpuOp;
      const Cat cat = ev != kNoEvent ? m.ev.category(ev) : Cat::Other;
      auto name = [&] { return m.name_of(ev); };
      auto comm = [&] { return gpu && ((cat == Cat::Kernel && is_communication_kernel(name())) || (cat == Cat::GpuMemcpy && is_peer_copy(name()))); };
      double x = 1.0;
      switch (e.kind) {
        case Effect::Kind::Kernels:
          if (gpu && cat == Cat::Kernel && !is_communication_kernel(name())) x = f;
          break;
        case Effect::Kind::NoLaunchOverhead:
          if (k == VertexKind::Launch) x = 0;
          break;
        case Effect::Kind::NoDataLoading:
          if (!gpu && g.phase[v] == PhaseKind::DataLoading) x = 0;
          break;
        case Effect::Kind::Communication:
          if (comm()) x = f;
          break;
        case Effect::Kind::Bandwidth:
          if (comm()) {
            int64_t bytes = cat == Cat::Kernel ? collective_bytes(m, ev) : m.args().integer(ev, Arg::Bytes);
            if (bytes <= 0 || g.work[v] <= 0) {
              ++unsized;
            } else {
              ++sized;
              x = double(bytes) / e.value / double(g.work[v]);  // bytes / (GB/s) is in ns
            }
          }
          break;
        case Effect::Kind::Amp:
          if (gpu && cat == Cat::Kernel && is_matmul_or_conv(name()) && !is_tensor_core_kernel(name())) x = f;
          break;
        case Effect::Kind::FusedOptimizer:
          if (k == VertexKind::Launch && g.phase[v] == PhaseKind::Optimizer) {
            NodeId ph = g.node[v] != kNoNode ? g.parts[pi].annotation->tree.ancestor(g.node[v], NodeKind::Phase) : kNoNode;
            if (!first_launch[pi].emplace(ph, v).second) x = 0;
          }
          break;
        case Effect::Kind::Kernel:
          if (gpu) {
            auto [it, fresh] = glob[pi].emplace(m.ev.name[ev], false);
            if (fresh) it->second = fnmatch(e.pattern.c_str(), std::string(name()).c_str(), 0) == 0;
            if (it->second) x = f;
          }
          break;
        case Effect::Kind::Layer:
          if (g.node[v] != kNoNode && layer_in[pi][g.node[v]]) x = f;
          break;
        case Effect::Kind::Phase:
          if (g.phase[v] == e.phase) x = f;
          break;
      }
      out.scale[v] *= x;
    }
    if (e.kind == Effect::Kind::Bandwidth && unsized)
      out.notes.push_back(sized ? std::to_string(unsized) + " collectives or peer copies have no recorded size and keep their time"
                                : "the trace records no message sizes: the bandwidth cannot be applied and nothing changes");
    if (e.kind == Effect::Kind::Layer) {
      bool any = false;
      for (const auto& in : layer_in)
        for (uint8_t b : in) any |= b != 0;
      if (!any) out.notes.push_back("no layer matches '" + e.pattern + "'");
    }
  }
  for (Vertex v = 0; v < g.size(); ++v) out.changed += out.scale[v] != 1.0;
  if (out.changed == 0) out.notes.push_back("the scenario changes nothing in this trace");
  return out;
}

}  // namespace strata::whatif
