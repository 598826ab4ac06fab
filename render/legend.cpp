#include "render/legend.h"

#include <algorithm>

namespace strata::render {

Hue phase_hue(PhaseKind p) {
  switch (p) {
    case PhaseKind::DataLoading: return Hue::DataLoading;
    case PhaseKind::Forward: return Hue::Forward;
    case PhaseKind::Loss: return Hue::Loss;
    case PhaseKind::Backward: return Hue::Backward;
    case PhaseKind::Optimizer: return Hue::Optimizer;
    default: return Hue::Other;
  }
}

Rgba idle_cause_colour(IdleCause c) {
  switch (c) {
    case IdleCause::Launch: return base_colour(Hue::Backward);
    case IdleCause::DataLoading: return base_colour(Hue::DataLoading);
    case IdleCause::HostBlocked: return base_colour(Hue::Optimizer);
    case IdleCause::Communication: return base_colour(Hue::Communication);
    case IdleCause::CpuCompute: return base_colour(Hue::Forward);
    default: return base_colour(Hue::Python);
  }
}

std::vector<LegendEntry> phase_legend() {
  std::vector<LegendEntry> out;
  for (uint8_t p = 0; p < uint8_t(PhaseKind::Count); ++p) {
    const Rgba c = base_colour(phase_hue(PhaseKind(p)));
    auto same = std::find_if(out.begin(), out.end(), [&](const LegendEntry& e) { return e.colour == c; });
    if (same == out.end()) out.push_back({phase_name(PhaseKind(p)), c});
    else same->what += std::string(", ") + phase_name(PhaseKind(p));
  }
  return out;
}

std::vector<LegendEntry> track_legend() {
  return {{"CPU op", base_colour(Hue::CpuOp)},
          {"CUDA runtime or driver call", base_colour(Hue::Runtime)},
          {"user annotation (record_function, NVTX)", base_colour(Hue::Annotation)},
          {"Python frame", base_colour(Hue::Python)},
          {"ProfilerStep", base_colour(Hue::Iteration)},
          {"kernel", base_colour(Hue::Kernel)},
          {"communication kernel (NCCL, RCCL)", base_colour(Hue::Communication)},
          {"memory copy", base_colour(Hue::Memcpy)},
          {"memory set", base_colour(Hue::Memset)}};
}

std::vector<LegendEntry> idle_cause_legend() {
  // The Summary's words for each cause.
  std::vector<LegendEntry> out;
  for (uint8_t c = 0; c < uint8_t(IdleCause::Count); ++c) out.push_back({idle_cause_name(IdleCause(c)), idle_cause_colour(IdleCause(c))});
  return out;
}

}  // namespace strata::render
