#include "render/tiers.h"

#include "render/legend.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace strata::render {

void Tier::add(uint16_t level, Ns s, Ns d, std::string_view n, Rgba c, NodeId nd, EventId r, bool bwd) {
  // Names repeat (layers in every iteration): intern them.
  auto [it, fresh] = intern_.try_emplace(std::string(n), uint32_t(names.size()));
  if (fresh) names.emplace_back(n);
  uint32_t id = it->second;
  start.push_back(s);
  dur.push_back(d);
  name.push_back(id);
  colour.push_back(c);
  ref.push_back(r);
  node.push_back(nd);
  backward.push_back(bwd ? 1 : 0);
  level_.push_back(level);
}

void Tier::finish() {
  intern_.clear();
  size_t n = start.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return level_[a] != level_[b] ? level_[a] < level_[b] : start[a] < start[b];
  });
  auto permute = [&](auto& v) {
    auto copy = v;
    for (size_t i = 0; i < n; ++i) v[i] = copy[order[i]];
  };
  permute(start);
  permute(dur);
  permute(name);
  permute(colour);
  permute(ref);
  permute(node);
  permute(backward);
  permute(level_);
  levels.clear();
  for (size_t i = 0; i < n; ++i) {
    uint16_t l = level_[i];
    if (levels.size() <= l) levels.resize(l + 1, IndexRange{uint32_t(i), uint32_t(i)});
    levels[l].end = uint32_t(i + 1);
  }
  // Clip overlaps within a level so layout can rely on non-overlapping spans.
  for (IndexRange r : levels)
    for (uint32_t i = r.begin; i + 1 < r.end; ++i)
      if (start[i] + dur[i] > start[i + 1]) dur[i] = std::max<Ns>(0, start[i + 1] - start[i]);
}

uint32_t Tier::span_at(uint16_t level, Ns t) const {
  if (level >= levels.size()) return UINT32_MAX;
  IndexRange r = levels[level];
  auto it = std::upper_bound(start.begin() + r.begin, start.begin() + r.end, t);
  if (it == start.begin() + r.begin) return UINT32_MAX;
  uint32_t i = uint32_t(it - start.begin()) - 1;
  return t <= start[i] + dur[i] ? i : UINT32_MAX;
}

size_t Tiers::bytes() const {
  size_t b = 0;
  for (const Tier& t : tiers) {
    b += t.size() * (sizeof(Ns) * 2 + sizeof(uint32_t) + sizeof(Rgba) + sizeof(EventId) + sizeof(NodeId) + 1 + 2);
    for (const auto& s : t.names) b += s.capacity() + sizeof(s);
  }
  return b;
}

Tiers tiers_from_annotation(const Annotation& a) {
  const AnnotationTree& t = a.tree;
  Tiers out;
  Tier iters, phases, layers;
  iters.title = "Iterations";
  iters.kind = TierKind::Iteration;
  phases.title = "Phases";
  phases.kind = TierKind::Phase;
  layers.title = "Layers";
  layers.kind = TierKind::Layer;
  std::vector<uint16_t> layer_depth(t.size(), 0);
  uint32_t iter_no = 0;
  for (NodeId n = 0; n < t.size(); ++n) {
    Ns b = t.begin[n], d = t.end[n] - t.begin[n];
    if (d < 0) continue;
    switch (t.kind[n]) {
      case NodeKind::Iteration: {
        Rgba c = (iter_no++ % 2) ? darken(base_colour(Hue::Iteration), 0.18f) : base_colour(Hue::Iteration);
        iters.add(0, b, d, t.name_of(n), c, n, t.event[n]);
        break;
      }
      case NodeKind::Phase:
        phases.add(0, b, d, t.name_of(n), base_colour(phase_hue(t.phase[n])), n, t.event[n]);
        break;
      case NodeKind::Layer: {
        NodeId p = t.parent[n];
        uint16_t depth = (p != kNoNode && t.kind[p] == NodeKind::Layer) ? uint16_t(layer_depth[p] + 1) : 0;
        layer_depth[n] = depth;
        bool bwd = t.phase[n] == PhaseKind::Backward;
        NodeId fwd = t.mirror[n] != kNoNode ? t.mirror[n] : n;
        layers.add(depth, b, d, t.name_of(n), layer_colour(name_hash(t.name_of(fwd)), bwd), n, t.event[n], bwd);
        break;
      }
      default: break;
    }
  }
  for (Tier* x : {&iters, &phases, &layers}) {
    if (x->size() == 0) continue;
    x->finish();
    out.tiers.push_back(std::move(*x));
  }
  return out;
}

}  // namespace strata::render
