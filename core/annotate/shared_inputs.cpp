// Data flow from the backward pass: which forward ops take an input that another op takes too.
//
// The autograd engine sums the gradients a tensor gets from each op that consumed it: the first
// consumer's backward node to run writes the tensor's gradient, each later one adds to it, an
// aten::add (or add_) right after the node's own function, inside its evaluate_function. The
// engine runs the nodes last forward op first, so the ops that add are every consumer of a
// shared tensor but the last in forward order: a residual block's first op beside its
// shortcut, an Inception module's branches but the last, a query's projection beside its key's.
// A trace without links matches the nodes to forward ops by reverse order (ReverseOrderMatch).
#include "core/annotate/internal.h"

#include <optional>
#include <unordered_map>

namespace strata::annot {

namespace {

// Whether a backward root (autograd::engine::evaluate_function: X) adds its input gradient to
// one another node wrote: a direct child aten::add after its first child (the node's function).
bool adds_gradient(const Context& c, EventId r) {
  const std::vector<EventId> kids = child_ops(c, r);
  for (size_t k = 1; k < kids.size(); ++k)
    if (const std::string_view n = c.name(kids[k]); n == "aten::add" || n == "aten::add_") return true;
  return false;
}

}  // namespace

void find_shared_inputs(Context& c, const std::vector<IterWork>& iters) {
  const TraceModel& m = c.m;
  std::unordered_map<EventId, EventId> linked;  // backward root → forward op root, from the trace's links
  for (auto& [bwd, fwd] : m.bwd_to_fwd) {
    const EventId r = c.op_root(bwd) != kNoEvent ? c.op_root(bwd) : bwd;
    const EventId f = c.op_root(fwd) != kNoEvent ? c.op_root(fwd) : fwd;
    linked.try_emplace(r, f);
  }
  for (const IterWork& w : iters) {
    if (c.cancelled()) return;
    std::optional<ReverseOrderMatch> order;  // only where the trace has no links
    if (linked.empty()) order.emplace(c, w);
    for (const Segment& s : w.segments) {
      if (s.phase != PhaseKind::Backward) continue;
      for (EventId r : s.items) {
        if (!c.is_root(r) || !has_forward_op(c.name(r))) continue;
        auto it = linked.find(r);
        const EventId f = it != linked.end() ? it->second : order ? order->next(r) : kNoEvent;
        if (f != kNoEvent && adds_gradient(c, r)) c.flags[f] |= Context::kSharesInput;
      }
    }
  }
}

}  // namespace strata::annot
