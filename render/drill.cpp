#include "render/drill.h"

#include <algorithm>

namespace strata::render {

namespace {

// Events of `level` (a IndexRange) on the event columns whose start lies in [a, b].
std::pair<uint32_t, uint32_t> within(const TraceModel& m, IndexRange level, Ns a, Ns b) {
  auto s = m.ev.start.begin();
  uint32_t lo = uint32_t(std::lower_bound(s + level.begin, s + level.end, a) - s);
  uint32_t hi = uint32_t(std::upper_bound(s + lo, s + level.end, b) - s);
  return {lo, hi};
}

std::pair<uint32_t, uint32_t> tier_within(const Tier& t, IndexRange level, Ns a, Ns b) {
  auto s = t.start.begin();
  uint32_t lo = uint32_t(std::lower_bound(s + level.begin, s + level.end, a) - s);
  uint32_t hi = uint32_t(std::upper_bound(s + lo, s + level.end, b) - s);
  return {lo, hi};
}

uint16_t tier_level(const Tier& t, uint32_t i) {
  for (uint16_t d = 0; d < t.levels.size(); ++d)
    if (i >= t.levels[d].begin && i < t.levels[d].end) return d;
  return 0;
}

bool is_gpu(const TraceModel& m, EventId e) { return is_gpu_cat(m.ev.category(e)); }

// The training loop's thread, as the annotation chose it.
uint32_t main_cpu_track(const Timeline& tl) {
  const Annotation* a = tl.annotation();
  uint32_t t = a ? a->main_track : kNoTrack;
  return t < tl.model()->tracks.size() && !tl.model()->tracks[t].levels.empty() ? t : kNoTrack;
}

const Annotation& annotation_or_empty(const Timeline& tl) {
  static const Annotation none;
  return tl.annotation() ? *tl.annotation() : none;
}

// Calls f(e) for e and every event nested in it on its track.
template <class F>
void for_descendants(const TraceModel& m, EventId e, F&& f) {
  f(e);
  uint32_t t = m.track_of(e);
  if (t == kNoTrack) return;
  const Track& tr = m.tracks[t];
  for (size_t d = size_t(m.ev.depth[e]) + 1; d < tr.levels.size(); ++d) {
    auto [lo, hi] = within(m, tr.levels[d], m.ev.start[e], m.ev.end(e));
    if (lo == hi) break;
    for (uint32_t k = lo; k < hi; ++k) f(k);
  }
}

}  // namespace

std::vector<ItemRef> focus_path(const Timeline& tl, ItemRef r) {
  std::vector<ItemRef> path;
  if (!r.valid()) return path;
  const TraceModel& m = *tl.model();
  const Tiers& tiers = tl.tiers();
  std::vector<ItemRef> chain;  // event chain, innermost first
  Ns t = tl.start_of(r);
  if (r.kind == ItemRef::Event) {
    EventId e = r.index;
    chain.push_back(r);
    if (is_gpu(m, e) && m.host_side_of(e) != kNoEvent) {
      e = m.host_side_of(e);
      t = m.ev.start[e];
      chain.push_back(ItemRef::event(e));
    }
    for (EventId p = m.parent_of(e); p != kNoEvent; p = m.parent_of(p)) chain.push_back(ItemRef::event(p));
  }
  // Tier spans containing t, coarse to fine (stopping at the item itself).
  for (uint32_t ti = 0; ti < tiers.tiers.size(); ++ti) {
    const Tier& tier = tiers.tiers[ti];
    for (uint16_t d = 0; d < tier.levels.size(); ++d) {
      uint32_t s = tier.span_at(d, t);
      if (s == UINT32_MAX) break;
      if (r.kind == ItemRef::TierSpan && r.tier == ti && s == r.index) {
        path.push_back(r);
        return path;
      }
      path.push_back(ItemRef::span(ti, s));
    }
  }
  if (r.kind == ItemRef::TierSpan) {
    path.push_back(r);
    return path;
  }
  for (size_t i = chain.size(); i-- > 0;) {
    // Skip events a tier span in the path already stands for (Iteration N = ProfilerStep#N).
    bool dup = false;
    for (const ItemRef& p : path)
      if (p.kind == ItemRef::TierSpan && tiers.tiers[p.tier].ref[p.index] == chain[i].index) dup = true;
    if (!dup) path.push_back(chain[i]);
  }
  return path;
}

std::vector<Block> level_roots(const Timeline& tl) {
  std::vector<Block> out;
  const Tiers& tiers = tl.tiers();
  if (!tiers.tiers.empty() && !tiers.tiers[0].levels.empty()) {
    const Tier& t = tiers.tiers[0];
    for (uint32_t i = t.levels[0].begin; i < t.levels[0].end; ++i)
      out.push_back({ItemRef::span(0, i), t.start[i], t.start[i] + t.dur[i], t.dur[i]});
    return out;
  }
  const TraceModel& m = *tl.model();
  uint32_t t = main_cpu_track(tl);
  if (t == kNoTrack) return out;
  IndexRange l = m.tracks[t].levels[0];
  for (uint32_t e = l.begin; e < l.end; ++e) out.push_back({ItemRef::event(e), m.ev.start[e], m.ev.end(e), m.ev.dur[e]});
  return out;
}

std::vector<Block> children_of(const Timeline& tl, ItemRef parent, const ReduceOptions* reduce) {
  std::vector<Block> kids;
  if (!parent.valid()) return kids;
  const TraceModel& m = *tl.model();
  const Tiers& tiers = tl.tiers();
  Ns a = tl.start_of(parent), b = tl.end_of(parent);
  auto add_events = [&](IndexRange level, Ns x, Ns y) {
    auto [lo, hi] = within(m, level, x, y);
    for (uint32_t e = lo; e < hi; ++e)
      if (m.ev.end(e) <= y) kids.push_back({ItemRef::event(e), m.ev.start[e], m.ev.end(e), m.ev.dur[e]});
  };
  if (parent.kind == ItemRef::TierSpan) {
    const Tier& t = tiers.tiers[parent.tier];
    uint16_t d = tier_level(t, parent.index);
    const Tier* next = nullptr;
    uint32_t next_tier = parent.tier;
    IndexRange level{};
    if (d + 1u < t.levels.size()) next = &t, level = t.levels[d + 1];
    else if (parent.tier + 1 < tiers.tiers.size() && !tiers.tiers[parent.tier + 1].levels.empty())
      next = &tiers.tiers[++next_tier], level = next->levels[0];
    if (next) {
      auto [lo, hi] = tier_within(*next, level, a, b);
      for (uint32_t i = lo; i < hi; ++i)
        kids.push_back({ItemRef::span(next_tier, i), next->start[i], next->start[i] + next->dur[i], next->dur[i]});
    }
    if (kids.empty()) {
      EventId ref = t.ref[parent.index];
      if (ref != kNoEvent) return children_of(tl, ItemRef::event(ref), reduce);
      uint32_t mt = main_cpu_track(tl);
      if (mt != kNoTrack && !m.tracks[mt].levels.empty()) add_events(m.tracks[mt].levels[0], a, b);
    }
  } else {
    EventId e = parent.index;
    uint32_t t = m.track_of(e);
    if (t != kNoTrack && size_t(m.ev.depth[e]) + 1 < m.tracks[t].levels.size())
      add_events(m.tracks[t].levels[m.ev.depth[e] + 1], a, b);
    Ns covered = 0;
    for (const Block& k : kids) covered += k.end - k.start;
    if (is_time_range(m, e) && covered < (b - a) / 2) {
      // The work is elsewhere (backward runs on autograd's thread): take the CPU thread that
      // is busiest at depth 0 within the annotation.
      uint32_t best = kNoTrack;
      Ns best_busy = covered;
      for (uint32_t ti = 0; ti < m.tracks.size(); ++ti) {
        const Track& tr = m.tracks[ti];
        if (ti == t || tr.kind != TrackKind::CpuThread || tr.levels.empty()) continue;
        auto [lo, hi] = within(m, tr.levels[0], a, b);
        Ns busy = 0;
        for (uint32_t k = lo; k < hi; ++k) busy += std::min(m.ev.end(k), b) - m.ev.start[k];
        if (busy > best_busy) best_busy = busy, best = ti;
      }
      if (best != kNoTrack) {
        kids.clear();
        add_events(m.tracks[best].levels[0], a, b);
      }
    }
    if (EventId g = m.gpu_op_of(e); kids.empty() && g != kNoEvent)
      kids.push_back({ItemRef::event(g), m.ev.start[g], m.ev.end(g), m.ev.dur[g]});
  }
  if (!reduce) return kids;
  std::vector<Sibling> sibs(kids.size());
  for (size_t i = 0; i < kids.size(); ++i) {
    const ItemRef& r = kids[i].ref;
    uint64_t name = r.kind == ItemRef::Event ? m.ev.name[r.index] : tiers.tiers[r.tier].name[r.index];
    TierKind tk = r.kind == ItemRef::TierSpan ? tiers.tiers[r.tier].kind : TierKind::Other;
    sibs[i] = {kids[i].start, kids[i].end, name << 2 | uint64_t(r.kind), tk == TierKind::Iteration || tk == TierKind::Phase};
  }
  std::vector<Block> out;
  for (const SiblingBlock& sb : reduce_siblings(sibs, b - a, *reduce)) {
    Block o = kids[sb.first];
    o.kind = sb.kind;
    o.merged = sb.count;
    for (uint32_t k = sb.first + 1; k < sb.first + sb.count; ++k) {
      o.end = std::max(o.end, kids[k].end);
      o.busy += kids[k].busy;
    }
    out.push_back(o);
  }
  return out;
}

void related_of(const Timeline& tl, ItemRef sel, const std::vector<EventId>& gpu_ops, Highlight& hl,
                std::vector<std::pair<EventId, EventId>>* flows, size_t cap) {
  hl.selected = sel;
  hl.related.clear();
  hl.related_spans.clear();
  if (flows) flows->clear();
  if (!sel.valid()) return;
  const TraceModel& m = *tl.model();
  for (const ItemRef& p : focus_path(tl, sel)) {
    if (p == sel) continue;
    if (p.kind == ItemRef::TierSpan) hl.related_spans.push_back(uint64_t(p.tier) << 32 | p.index);
    else hl.related.push_back(p.index);
  }
  auto add_launch = [&](EventId e) {
    if (hl.related.size() >= cap) return;
    if (EventId g = m.gpu_op_of(e); g != kNoEvent) {
      hl.related.push_back(g);
      if (flows && flows->size() < 512) flows->push_back({e, g});
    } else if (EventId p = m.paired_annotation_of(e); p != kNoEvent) {
      hl.related.push_back(p);
    }
  };
  if (sel.kind == ItemRef::Event) {
    EventId e = sel.index;
    if (is_gpu(m, e)) {
      EventId l = m.host_side_of(e);
      if (l != kNoEvent) {
        hl.related.push_back(l);
        if (flows) flows->push_back({l, e});
      }
    } else {
      for_descendants(m, e, [&](EventId d) {
        if (d != e && hl.related.size() < cap) hl.related.push_back(d);
        add_launch(d);
      });
    }
    if (!is_gpu(m, e) && is_time_range(m, e))
      for (size_t i = 0; i < gpu_ops.size() && i < cap; ++i) hl.related.push_back(gpu_ops[i]);
    auto fb = m.fwd_to_bwd.find(e);
    if (fb != m.fwd_to_bwd.end()) hl.related.push_back(fb->second);
    auto bf = m.bwd_to_fwd.find(e);
    if (bf != m.bwd_to_fwd.end()) hl.related.push_back(bf->second);
  } else {
    EventId ref = tl.tiers().tiers[sel.tier].ref[sel.index];
    if (ref != kNoEvent) hl.related.push_back(ref);
    for (size_t i = 0; i < gpu_ops.size() && i < cap; ++i) hl.related.push_back(gpu_ops[i]);
  }
  std::sort(hl.related.begin(), hl.related.end());
  hl.related.erase(std::unique(hl.related.begin(), hl.related.end()), hl.related.end());
  std::sort(hl.related_spans.begin(), hl.related_spans.end());
}

WorkFigures work_of(const Timeline& tl, ItemRef r) {
  const TraceModel& m = *tl.model();
  if (NodeId n = tl.node_of(r); n != kNoNode && tl.annotation()) return node_work(m, *tl.annotation(), n);
  if (r.kind == ItemRef::Event) return event_work(m, annotation_or_empty(tl), r.index);
  return {};
}

ItemRef resolve_focus(const Timeline& tl, std::string_view path) {
  ItemRef cur;
  std::vector<Block> level = level_roots(tl);
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (part.empty()) continue;
    ItemRef found;
    // Exact name first, then prefix, then substring.
    for (int pass = 0; pass < 3 && !found.valid(); ++pass)
      for (const Block& b : level) {
        std::string_view n = tl.name_of(b.ref);
        bool ok = pass == 0 ? n == part : pass == 1 ? n.starts_with(part) : n.find(part) != std::string_view::npos;
        if (ok) {
          found = b.ref;
          break;
        }
      }
    if (!found.valid()) return cur;
    cur = found;
    level = children_of(tl, cur, nullptr);
  }
  return cur;
}

ItemRef find_again(const Timeline& from, ItemRef r, const Timeline& to) {
  if (!r.valid() || to.model() == nullptr) return {};
  const Ns start = from.start_of(r);
  const std::string_view name = from.name_of(r);
  if (r.kind == ItemRef::Event) {
    const TraceModel& m = *to.model();
    for (size_t e = 0; e < m.ev.size(); ++e)
      if (m.ev.start[e] == start && m.name_of(EventId(e)) == name) return ItemRef::event(EventId(e));
    return {};
  }
  const std::vector<Tier>& tiers = to.tiers().tiers;
  if (r.tier >= tiers.size() || tiers[r.tier].title != from.tiers().tiers[r.tier].title) return {};
  const Tier& t = tiers[r.tier];
  for (uint32_t i = 0; i < t.size(); ++i)
    if (t.start[i] == start && t.name_of(i) == name) return ItemRef::span(r.tier, i);
  return {};
}

}  // namespace strata::render
