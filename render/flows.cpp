#include "render/flows.h"

namespace strata::render {

const char* flow_kind_name(FlowKind k) {
  switch (k) {
    case FlowKind::Launch: return "launch";
    case FlowKind::GpuOp: return "GPU op";
    case FlowKind::ForwardOp: return "forward op";
    case FlowKind::BackwardOp: return "backward op";
    case FlowKind::CpuRange: return "CPU range";
    case FlowKind::GpuRange: return "GPU range";
  }
  return "";
}

std::vector<Flow> flows_of(const TraceModel& m, EventId e) {
  std::vector<Flow> out;
  if (e >= m.ev.size()) return out;
  auto add = [&](FlowKind k, bool preceding, EventId other) {
    if (other != kNoEvent) out.push_back({k, preceding, other});
  };
  auto find = [](const std::unordered_map<EventId, EventId>& map, EventId key) {
    auto it = map.find(key);
    return it == map.end() ? kNoEvent : it->second;
  };
  const Cat c = m.ev.category(e);
  const EventId paired = m.paired_annotation_of(e);
  add(FlowKind::Launch, true, m.launch_of(e));
  add(FlowKind::ForwardOp, true, find(m.bwd_to_fwd, e));
  if (c == Cat::GpuUserAnnotation) add(FlowKind::CpuRange, true, paired);
  add(FlowKind::GpuOp, false, m.gpu_op_of(e));
  add(FlowKind::BackwardOp, false, find(m.fwd_to_bwd, e));
  if (c == Cat::UserAnnotation) add(FlowKind::GpuRange, false, paired);
  return out;
}

}  // namespace strata::render
