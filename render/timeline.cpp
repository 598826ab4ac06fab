#include "render/timeline.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

namespace strata::render {

void FrameLayout::clear() {
  rects.clear();
  texts.clear();
  text.clear();
  items.clear();
  rows.clear();
  gutter.clear();
  counter_rects.clear();
  folded_items = labels = 0;
}

namespace {

Hue hue_for_category(Cat c) {
  switch (c) {
    case Cat::CpuOp: return Hue::CpuOp;
    case Cat::UserAnnotation: return Hue::Annotation;
    case Cat::GpuUserAnnotation: return Hue::Annotation;
    case Cat::CudaRuntime:
    case Cat::CudaDriver:
    case Cat::CudaSync:
    case Cat::CudaEvent: return Hue::Runtime;
    case Cat::Kernel:
    case Cat::ProfilerRange: return Hue::Kernel;
    case Cat::GpuMemcpy: return Hue::Memcpy;
    case Cat::GpuMemset: return Hue::Memset;
    case Cat::PythonFunction: return Hue::Python;
    case Cat::None: return Hue::CpuOp;
    default: return Hue::Other;
  }
}

std::string process_title(const TraceModel& m, const Process& p) {
  std::string s;
  if (p.device >= 0) {
    s = "GPU " + std::to_string(p.device);
    for (const DeviceInfo& d : m.devices)
      if (d.id == p.device && !d.name.empty()) s += "  " + d.name;
    return s;
  }
  auto str = [&](StrId id) { return id != kNoStr ? std::string(m.strings.view(id)) : std::string(); };
  std::string labels = str(p.labels), pid = str(p.pid_label), name = str(p.name);
  if (!labels.empty()) s = labels + "  ";
  s += !pid.empty() ? pid : "Process " + std::to_string(p.pid);
  if (!name.empty()) s += " (" + name + ")";
  return s;
}

// `comm`: the stream runs communication (most of its kernels are collectives).
std::string track_title(const TraceModel& m, const Track& t, bool comm) {
  if (t.overflow_of != kNoTrack) return "\xE2\x86\xB3 overlapping";
  if (t.kind == TrackKind::GpuStream) {
    std::string s = t.stream >= 0 ? "Stream " + std::to_string(t.stream)
                    : t.tid_label != kNoStr ? std::string(m.strings.view(t.tid_label))
                                            : "Stream " + std::to_string(t.tid);
    return comm ? s + " \xC2\xB7 communication" : s;
  }
  if (t.name != kNoStr && !m.strings.view(t.name).empty()) return std::string(m.strings.view(t.name));
  if (t.tid_label != kNoStr && !m.strings.view(t.tid_label).empty()) return std::string(m.strings.view(t.tid_label));
  return "Thread " + std::to_string(shown_thread_id(t.tid));
}

}  // namespace

void Timeline::build(const TraceModel& m) {
  m_ = &m;
  sections.clear();
  lanes.clear();
  counters.clear();
  name_step_.assign(m.strings.size(), 0);
  comm_name_.assign(m.strings.size(), 0);
  // Communication kernels, by name, and the streams that mostly run them.
  comm_track_.assign(m.tracks.size(), 0);
  std::vector<uint8_t>& comm_track = comm_track_;
  for (uint32_t t = 0; t < m.tracks.size(); ++t) {
    const Track& tr = m.tracks[t];
    if (tr.kind != TrackKind::GpuStream) continue;
    uint64_t kernels = 0, comm = 0;
    for (EventId e = tr.events.begin; e < tr.events.end; ++e) {
      if (m.ev.category(e) != Cat::Kernel) continue;
      uint8_t& c = comm_name_[m.ev.name[e]];
      if (!c) c = is_communication_kernel(m.name_of(e)) ? 2 : 1;
      ++kernels;
      comm += c == 2;
    }
    comm_track[t] = kernels > 0 && comm * 2 > kernels;
  }
  for (uint32_t t = 0; t < m.tracks.size(); ++t)  // overflow rows of a communication stream are too
    if (m.tracks[t].overflow_of != kNoTrack) comm_track[t] = comm_track[m.tracks[t].overflow_of];
  short_.assign(m.strings.size(), 0);
  cat_hue_.resize(m.category_names.size());
  for (size_t c = 0; c < cat_hue_.size(); ++c)
    cat_hue_[c] = c < m.ev.kinds.size() ? hue_for_category(m.ev.kinds[c]) : Hue::Other;
  track_lane_.assign(m.tracks.size(), {UINT32_MAX, 0});

  sections.push_back({"Annotation", {}});  // section 0: tiers (set_annotation)

  // Processes: CPU ones first, then GPUs by device.
  std::vector<uint32_t> procs(m.processes.size());
  for (uint32_t i = 0; i < procs.size(); ++i) procs[i] = i;
  // Processes holding only a handful of events (Kineto's "Spans", "Traces") go last.
  std::vector<uint64_t> proc_events(m.processes.size(), 0);
  for (const Track& t : m.tracks) proc_events[t.process] += t.events.size();
  std::stable_sort(procs.begin(), procs.end(), [&](uint32_t a, uint32_t b) {
    const Process &pa = m.processes[a], &pb = m.processes[b];
    bool ma = proc_events[a] < 8, mb = proc_events[b] < 8;
    if (ma != mb) return !ma;
    bool ga = pa.device >= 0, gb = pb.device >= 0;
    if (ga != gb) return !ga;
    if (ga) return pa.device < pb.device;
    if (pa.sort_index != pb.sort_index) return pa.sort_index < pb.sort_index;
    return pa.pid < pb.pid;
  });
  std::vector<std::vector<uint32_t>> by_proc(m.processes.size());
  for (uint32_t t = 0; t < m.tracks.size(); ++t)
    if (m.tracks[t].overflow_of == kNoTrack && !m.tracks[t].events.empty()) by_proc[m.tracks[t].process].push_back(t);
  for (uint32_t p : procs) {
    auto& ts = by_proc[p];
    if (ts.empty()) continue;
    std::stable_sort(ts.begin(), ts.end(), [&](uint32_t a, uint32_t b) {
      const Track &x = m.tracks[a], &y = m.tracks[b];
      if (x.kind != y.kind) return x.kind < y.kind;
      if (x.sort_index != y.sort_index) return x.sort_index < y.sort_index;
      if (x.stream != y.stream) return x.stream < y.stream;
      return x.tid < y.tid;
    });
    Section s{process_title(m, m.processes[p]), {}};
    uint32_t sec = uint32_t(sections.size());
    auto add_track = [&](uint32_t t) {
      Lane l;
      l.kind = LaneKind::Track;
      l.index = t;
      l.section = sec;
      l.title = track_title(m, m.tracks[t], comm_track[t]);
      l.levels = uint16_t(std::max<size_t>(1, m.tracks[t].levels.size()));
      track_lane_[t] = {uint32_t(lanes.size()), 0};
      s.lanes.push_back(uint32_t(lanes.size()));
      lanes.push_back(std::move(l));
    };
    for (uint32_t t : ts) {
      add_track(t);
      for (uint32_t o = m.tracks[t].overflow; o != kNoTrack; o = m.tracks[o].overflow) add_track(o);
    }
    sections.push_back(std::move(s));
  }

  // Memory (allocator events, one series per device) and counters.
  std::map<std::pair<int, int>, uint32_t> series;
  for (size_t i = 0; i < m.memory.size(); ++i) {
    auto key = std::make_pair(int(m.memory.device_type[i]), int(m.memory.device_id[i]));
    auto it = series.find(key);
    if (it == series.end()) {
      CounterTrack c;
      c.title = "Memory " + memory_device_name(m.memory.device_type[i], m.memory.device_id[i]);
      c.bytes = true;
      c.device_type = m.memory.device_type[i];
      c.device_id = m.memory.device_id[i];
      for (const DeviceInfo& d : m.devices)
        if (c.device_type == 1 && d.id == c.device_id) c.capacity = double(d.total_global_mem);
      it = series.emplace(key, uint32_t(counters.size())).first;
      counters.push_back(std::move(c));
    }
    CounterTrack& c = counters[it->second];
    c.ts.push_back(m.memory.ts[i]);
    c.value.push_back(double(m.memory.total_allocated[i]));
    if (m.memory.reserved_recorded) c.reserved.push_back(double(m.memory.total_reserved[i]));
  }
  for (const CounterSeries& cs : m.counters) {
    CounterTrack c;
    c.title = std::string(m.strings.view(cs.name));
    c.ts = cs.ts;
    c.value = cs.value;
    counters.push_back(std::move(c));
  }
  if (!counters.empty()) {
    Section s{"Memory and counters", {}};
    for (uint32_t i = 0; i < counters.size(); ++i) {
      CounterTrack& c = counters[i];
      // Samples may come unsorted across threads.
      if (!std::is_sorted(c.ts.begin(), c.ts.end())) {
        std::vector<uint32_t> o(c.ts.size());
        for (uint32_t k = 0; k < o.size(); ++k) o[k] = k;
        std::stable_sort(o.begin(), o.end(), [&](uint32_t a, uint32_t b) { return c.ts[a] < c.ts[b]; });
        std::vector<Ns> ts(o.size());
        std::vector<double> v(o.size());
        for (size_t k = 0; k < o.size(); ++k) ts[k] = c.ts[o[k]], v[k] = c.value[o[k]];
        c.ts = std::move(ts);
        c.value = std::move(v);
      }
      for (size_t k = 0; k < c.value.size(); ++k)
        if (c.value[k] > c.max_value) c.max_value = c.value[k], c.max_at = c.ts[k];
      c.axis_max = c.max_value;
      for (double r : c.reserved) c.max_reserved = std::max(c.max_reserved, r);
      c.axis_max = std::max(c.axis_max, c.max_reserved);
      // A capacity not far above the values tops the lane, so its line shows the headroom.
      if (c.capacity > 0 && c.capacity < 1.5 * c.axis_max) c.axis_max = c.capacity;
      Lane l;
      l.kind = LaneKind::Counter;
      l.index = i;
      l.section = uint32_t(sections.size());
      l.title = c.title;
      s.lanes.push_back(uint32_t(lanes.size()));
      lanes.push_back(std::move(l));
    }
    sections.push_back(std::move(s));
  }
  rebuild_sections();
}

void Timeline::set_annotation(const Annotation* a) {
  a_ = a;
  tiers_ = a ? tiers_from_annotation(*a) : Tiers{};
  rebuild_sections();
}

NodeId Timeline::node_of(ItemRef r) const {
  if (r.kind != ItemRef::TierSpan || r.tier >= tiers_.tiers.size() || r.index >= tiers_.tiers[r.tier].size()) return kNoNode;
  return tiers_.tiers[r.tier].node[r.index];
}

std::string Timeline::section_key(uint32_t si) const { return si < sections.size() ? sections[si].title : std::string(); }

std::string Timeline::lane_key(uint32_t li) const {
  if (li >= lanes.size()) return {};
  const Lane& l = lanes[li];
  // Lanes of one section may share a title (threads with the same name): number them.
  uint32_t same = 0;
  for (uint32_t o : sections[l.section].lanes) {
    if (o == li) break;
    same += lanes[o].title == l.title;
  }
  return section_key(l.section) + '\x1f' + l.title + '\x1f' + std::to_string(same);
}

void RowState::resolve(const Timeline& tl) {
  section_closed.assign(tl.sections.size(), 0);
  lane_closed.assign(tl.lanes.size(), 0);
  lane_pinned.assign(tl.lanes.size(), 0);
  if (collapsed.empty() && pinned.empty()) return;
  for (uint32_t si = 0; si < tl.sections.size(); ++si) section_closed[si] = collapsed.count(tl.section_key(si)) > 0;
  for (uint32_t li = 0; li < tl.lanes.size(); ++li) {
    const std::string k = tl.lane_key(li);
    lane_closed[li] = collapsed.count(k) > 0;
    lane_pinned[li] = pinned.count(k) > 0;
  }
}

namespace {
void toggle(std::set<std::string>& keys, std::string k) {
  if (!keys.erase(k)) keys.insert(std::move(k));
}
}  // namespace

void RowState::toggle_section(const Timeline& tl, uint32_t si) {
  toggle(collapsed, tl.section_key(si));
  resolve(tl);
}

void RowState::toggle_lane(const Timeline& tl, uint32_t li) {
  toggle(collapsed, tl.lane_key(li));
  resolve(tl);
}

void RowState::toggle_pin(const Timeline& tl, uint32_t li) {
  toggle(pinned, tl.lane_key(li));
  resolve(tl);
}

void RowState::defaults(const Timeline& tl, float visible_h) {
  collapsed.clear();
  pinned.clear();
  if (!tl.sections.empty())
    for (uint32_t li : tl.sections[0].lanes) pinned.insert(tl.lane_key(li));
  resolve(tl);
  // Where the first GPU stream's row starts; deep CPU stacks go to one row, deepest first,
  // until it is in view.
  auto gpu_top = [&] {
    float y = 0;
    for (uint32_t si = 0; si < tl.sections.size(); ++si) {
      const Section& s = tl.sections[si];
      if (s.lanes.empty()) continue;
      y += tl.style.section_h;
      for (uint32_t li : s.lanes) {
        const Lane& l = tl.lanes[li];
        if (l.kind == LaneKind::Track && tl.model()->tracks[l.index].kind == TrackKind::GpuStream) return y;
        y += tl.lane_rows(li, *this) * tl.style.row_h + tl.style.lane_gap;
      }
    }
    return -1.0f;
  };
  std::vector<uint32_t> deep;
  for (uint32_t li = 0; li < tl.lanes.size(); ++li) {
    const Lane& l = tl.lanes[li];
    if (l.kind == LaneKind::Track && tl.model()->tracks[l.index].kind == TrackKind::CpuThread && l.levels > 3) deep.push_back(li);
  }
  std::sort(deep.begin(), deep.end(), [&](uint32_t a, uint32_t b) { return tl.lanes[a].levels > tl.lanes[b].levels; });
  for (uint32_t li : deep) {
    if (gpu_top() + tl.style.row_h * 2 <= visible_h) break;
    collapsed.insert(tl.lane_key(li));
    resolve(tl);
  }
}

void Timeline::rebuild_sections() {
  if (sections.empty()) return;
  // Drop the old tier lanes (they are last in `lanes` only if added after build; keep indices
  // stable by marking them unused instead).
  sections[0].lanes.clear();
  for (uint32_t i = 0; i < tiers_.tiers.size(); ++i) {
    Lane l;
    l.kind = LaneKind::Tier;
    l.index = i;
    l.section = 0;
    l.title = tiers_.tiers[i].title;
    l.levels = uint16_t(std::max<size_t>(1, tiers_.tiers[i].levels.size()));
    sections[0].lanes.push_back(uint32_t(lanes.size()));
    lanes.push_back(std::move(l));
  }
}

size_t Timeline::view_bytes() const {
  size_t b = name_step_.capacity() + comm_name_.capacity() + short_.capacity() * sizeof(uint32_t) + cat_hue_.capacity() +
             track_lane_.capacity() * sizeof(track_lane_[0]);
  for (const Lane& l : lanes) b += sizeof(Lane) + l.title.capacity();
  for (const Section& s : sections) b += sizeof(Section) + s.title.capacity() + s.lanes.capacity() * 4;
  for (const CounterTrack& c : counters) b += sizeof(CounterTrack) + c.ts.capacity() * 8 + c.value.capacity() * 8;
  return b;
}

float Timeline::lane_rows(uint32_t li, const RowState& c) const {
  const Lane& l = lanes[li];
  return l.kind == LaneKind::Counter ? style.counter_h / style.row_h : float(c.lane_collapsed(li) ? 1 : l.levels);
}

float Timeline::lane_height(uint32_t li, const RowState& c) const { return lane_rows(li, c) * style.row_h; }

float Timeline::pinned_height(const RowState& c) const {
  float h = 0;
  for (const Section& s : sections)
    for (uint32_t li : s.lanes)
      if (c.lane_is_pinned(li)) h += lane_height(li, c) + style.lane_gap;
  return h;
}

namespace {
bool has_unpinned(const Section& s, const RowState& c) {
  for (uint32_t li : s.lanes)
    if (!c.lane_is_pinned(li)) return true;
  return false;
}
}  // namespace

float Timeline::content_height(const RowState& c) const {
  float h = pinned_height(c);
  for (uint32_t si = 0; si < sections.size(); ++si) {
    const Section& s = sections[si];
    if (!has_unpinned(s, c)) continue;
    h += style.section_h;
    if (c.section_collapsed(si)) continue;
    for (uint32_t li : s.lanes)
      if (!c.lane_is_pinned(li)) h += lane_height(li, c) + style.lane_gap;
  }
  return h;
}

uint8_t Timeline::name_step(StrId s) {
  if (s >= name_step_.size()) return 3;
  uint8_t& v = name_step_[s];
  if (!v) v = uint8_t(name_hash(m_->strings.view(s)) % 5 + 1);
  return v;
}

Hue Timeline::hue_of_event(EventId e) const {
  uint8_t c = m_->ev.cat[e];
  Hue h = c < cat_hue_.size() ? cat_hue_[c] : Hue::Other;
  if (h == Hue::Kernel && m_->ev.name[e] < comm_name_.size() && comm_name_[m_->ev.name[e]] == 2) return Hue::Communication;
  if ((h == Hue::Annotation || h == Hue::CpuOp) && m_->ev.depth[e] == 0 && m_->is_profiler_step(e))
    h = Hue::Iteration;
  return h;
}

Rgba Timeline::colour_of(ItemRef r) {
  if (r.kind == ItemRef::TierSpan) return tiers_.tiers[r.tier].colour[r.index];
  if (r.kind != ItemRef::Event) return base_colour(Hue::Other);
  static constexpr float kSteps[] = {-0.28f, -0.14f, 0.0f, 0.14f, 0.28f};
  Hue h = hue_of_event(r.index);
  float s = kSteps[name_step(m_->ev.name[r.index]) - 1];
  Rgba b = base_colour(h);
  return s < 0 ? darken(b, -s) : lighten(b, s);
}

std::string_view Timeline::name_of(ItemRef r) const {
  if (r.kind == ItemRef::TierSpan) return tiers_.tiers[r.tier].name_of(r.index);
  if (r.kind == ItemRef::Event) return m_->name_of(r.index);
  return {};
}

Ns Timeline::start_of(ItemRef r) const {
  if (r.kind == ItemRef::TierSpan) return tiers_.tiers[r.tier].start[r.index];
  if (r.kind == ItemRef::Event) return m_->ev.start[r.index];
  return 0;
}

Ns Timeline::end_of(ItemRef r) const {
  if (r.kind == ItemRef::TierSpan) return tiers_.tiers[r.tier].start[r.index] + tiers_.tiers[r.tier].dur[r.index];
  if (r.kind == ItemRef::Event) return m_->ev.end(r.index);
  return 0;
}

std::string_view Timeline::label_text(EventId e, float room, const FontMetrics& f, FittedLabel& fit) {
  std::string_view full = m_->name_of(e);
  fit = fit_label(full, room, f, 1);
  if (!fit.ellipsis) return full;
  Cat c = m_->ev.category(e);
  if (c != Cat::Kernel && c != Cat::CpuOp && c != Cat::CudaRuntime && c != Cat::None) return full;
  StrId id = m_->ev.name[e];
  std::string_view sn = full;
  if (id < short_.size()) {
    uint32_t& cached = short_[id];
    if (!cached) {
      std::string_view s = short_name(full);
      size_t off = size_t(s.data() - full.data());
      cached = (s.size() != full.size() && off < 65536 && s.size() < 65536 && s.size() > 0)
                   ? uint32_t(off << 16 | s.size())
                   : UINT32_MAX;
    }
    if (cached != UINT32_MAX) sn = full.substr(cached >> 16, cached & 0xFFFF);
  }
  if (sn.size() == full.size()) return full;
  fit = fit_label(sn, room, f, 1);
  return sn;
}

void Timeline::mark_exposed(const std::vector<std::pair<Ns, Ns>>& exposed, const LayoutItem& it, const TimeView& v,
                            float x0, float x1, float y1, FrameLayout& out) const {
  EventId e = it.first;
  if (it.count == 1 && (m_->ev.name[e] >= comm_name_.size() || comm_name_[m_->ev.name[e]] != 2)) return;
  const Ns t0 = Ns(v.t_of(x0)), t1 = Ns(v.t_of(x1));
  // The intervals are merged and sorted, so their ends are sorted too. Intervals less than a
  // pixel apart make one strip, and the ones inside a strip are jumped over by binary search:
  // a zoomed-out folded run covers millions of them, the strips are at most one per pixel.
  auto i = std::upper_bound(exposed.begin(), exposed.end(), t0, [](Ns t, const std::pair<Ns, Ns>& x) { return t < x.second; });
  while (i != exposed.end() && i->first < t1) {
    const float a = std::max(x0, v.x_of(double(i->first)));
    float b = std::max(a + 1, std::min(x1, v.x_of(double(i->second))));
    for (;;) {  // grow the strip while the next interval starts within a pixel of its end
      const Ns joins = Ns(v.t_of(b + 1));
      auto next = std::lower_bound(i, exposed.end(), joins, [](const std::pair<Ns, Ns>& x, Ns t) { return x.first < t; });
      if (next <= i + 1) {  // none beyond i (at a zoom under a nanosecond a pixel, not even i)
        ++i;
        break;
      }
      i = next - 1;  // the last that joins: it ends last
      b = std::max(b, std::min(x1, v.x_of(double(i->second))));
    }
    out.rects.push_back({a, y1 - 4, b, y1, rgba(230, 60, 50), kExposed});
  }
}

void Timeline::layout_row(const SpanColumns& c, const TimeView& v, float y, const FontMetrics& f, const Highlight& hl,
                          LaneKind kind, uint32_t source, uint32_t lane, uint16_t depth, FrameLayout& out) {
  uint32_t ib = uint32_t(out.items.size());
  layout_level(c, v, out.items, {style.min_px});
  uint32_t ie = uint32_t(out.items.size());
  out.rows.push_back({y, y + style.row_h, kind, lane, source, depth, ib, ie});
  const float w = v.width_px;
  const float y0 = y + 1, y1 = y + style.row_h - 1;
  const float ty = y + (style.row_h - f.height) * 0.5f;
  const bool is_tier = kind == LaneKind::Tier;
  const Tier* tier = is_tier ? &tiers_.tiers[source] : nullptr;
  // Communication kernels get a strip along their bottom where no compute hides them.
  const auto* exposed = !is_tier && a_ && source < comm_track_.size() && comm_track_[source] &&
                                !a_->analyses.exposed_communication.empty()
                            ? &a_->analyses.exposed_communication
                            : nullptr;
  for (uint32_t k = ib; k < ie; ++k) {
    const LayoutItem& it = out.items[k];
    float x0 = std::max(it.x0, 0.0f), x1 = std::min(it.x1, w);
    if (x1 < x0 + 1) x1 = x0 + 1;
    ItemRef ref = is_tier ? ItemRef::span(source, it.first) : ItemRef::event(it.first);
    uint8_t flags = 0;
    Rgba fill;
    if (it.count > 1) {
      flags |= kFolded;
      ++out.folded_items;
      fill = darken(is_tier ? tier->colour[it.first] : base_colour(hue_of_event(it.first)), 0.35f);
    } else {
      fill = colour_of(ref);
      if (hl.selected == ref) flags |= kSelected;
      if (is_tier) {
        uint64_t key = uint64_t(source) << 32 | it.first;
        if (std::binary_search(hl.related_spans.begin(), hl.related_spans.end(), key)) flags |= kRelated;
      } else {
        if (std::binary_search(hl.related.begin(), hl.related.end(), it.first)) flags |= kRelated;
        if (hl.matches && std::binary_search(hl.matches->begin(), hl.matches->end(), it.first)) flags |= kMatch;
      }
    }
    out.rects.push_back({x0, y0, x1, y1, fill, flags});
    if (exposed) mark_exposed(*exposed, it, v, x0, x1, y1, out);
    float room = x1 - x0 - 2 * style.text_pad;
    if (room < f.advance[uint8_t('m')] + f.ellipsis * 0.5f) continue;
    FittedLabel fit;
    std::string_view text;
    char buf[32];
    if (it.count > 1) {
      // "407 ops" where it fits, else "407".
      const char* what = is_tier ? "" : is_gpu_cat(m_->ev.category(it.first)) ? " GPU ops" : " ops";
      int n = std::snprintf(buf, sizeof buf, "%u%s", it.count, what);
      text = std::string_view(buf, size_t(std::max(n, 0)));
      fit = fit_label(text, room, f, uint32_t(text.size()));
      if (!fit.bytes || fit.ellipsis) {
        n = std::snprintf(buf, sizeof buf, "%u", it.count);
        text = std::string_view(buf, size_t(std::max(n, 0)));
        fit = fit_label(text, room, f, uint32_t(text.size()));
      }
    } else if (is_tier) {
      text = tier->name_of(it.first);
      fit = fit_label(text, room, f, 1);
    } else {
      text = label_text(it.first, room, f, fit);
    }
    if (!fit.bytes) continue;
    float tx = it.count > 1 ? x0 + (x1 - x0 - fit.width) * 0.5f : x0 + style.text_pad;
    Rgba tc = text_on(fill);
    if (flags & kFolded) tc = with_alpha(tc, 200);
    out.texts.push_back({tx, ty, tc, uint32_t(out.text.size()), fit.bytes, fit.width - (fit.ellipsis ? f.ellipsis : 0.0f), fit.ellipsis});
    out.text.append(text.data(), fit.bytes);
    ++out.labels;
  }
}

void Timeline::layout_lane(uint32_t li, float y, float clip_top, float clip_bottom, const TimeView& v, const FontMetrics& f,
                           const Highlight& hl, const RowState& rs, FrameLayout& out) {
  const Lane& l = lanes[li];
  const bool l_collapsed = rs.lane_collapsed(li);
  const float lh = lane_height(li, rs), w = v.width_px;
  if (y + lh <= clip_top || y >= clip_bottom) return;
  out.gutter.push_back({std::max(y, clip_top), y + lh, false, li, l_collapsed, l.kind != LaneKind::Counter && l.levels > 1});
  const uint16_t nrows = l_collapsed ? 1 : l.levels;
  for (uint16_t d = 0; d < nrows && l.kind != LaneKind::Counter; ++d) {
    float ry = y + float(d) * style.row_h;
    if (ry < clip_top || ry >= clip_bottom) continue;  // under the pinned rows, or below the view
    SpanColumns c;
    if (l.kind == LaneKind::Tier) {
      const Tier& t = tiers_.tiers[l.index];
      if (d >= t.levels.size()) continue;
      c = {t.start.data(), t.dur.data(), t.levels[d].begin, t.levels[d].end};
    } else {
      const Track& t = m_->tracks[l.index];
      if (d >= t.levels.size()) continue;
      c = {m_->ev.start.data(), m_->ev.dur.data(), t.levels[d].begin, t.levels[d].end};
    }
    layout_row(c, v, ry, f, hl, l.kind, l.index, li, d, out);
  }
  if (l.kind != LaneKind::Counter || y < clip_top) return;
  const CounterTrack& c = counters[l.index];
  out.rows.push_back({y, y + lh, LaneKind::Counter, li, l.index, 0, 0, 0});
  if (c.axis_max <= 0 || c.ts.empty()) return;
  const float base = y + lh - 2, hmax = lh - 6;
  // One rect per run of columns of equal height; a column shows the highest value in it.
  auto series = [&](const std::vector<double>& values, Rgba colour) {
    float run_x = 0, run_h = -1;
    auto flush = [&](float x_end) {
      if (run_h > 0) out.counter_rects.push_back({run_x, base - run_h, x_end, base, colour, 0});
    };
    for (float x = 0; x < w; x += 1) {
      double ta = v.t_of(x), tb = v.t_of(x + 1);
      size_t lo = size_t(std::lower_bound(c.ts.begin(), c.ts.end(), Ns(ta)) - c.ts.begin());
      size_t hi = size_t(std::lower_bound(c.ts.begin() + lo, c.ts.end(), Ns(tb)) - c.ts.begin());
      double val = lo > 0 ? values[lo - 1] : 0;  // the value holding at the column's start
      if (lo >= c.ts.size() && ta > double(c.ts.back())) val = values.back();
      size_t n = hi - lo, stride = n > 32 ? n / 32 : 1;
      for (size_t k = lo; k < hi; k += stride) val = std::max(val, values[k]);
      float hpx = float(val / c.axis_max) * hmax;
      if (std::abs(hpx - run_h) >= 0.5f) {
        flush(x);
        run_x = x;
        run_h = hpx;
      }
    }
    flush(w);
  };
  if (!c.reserved.empty()) series(c.reserved, rgba(204, 121, 167, 70));  // reserved behind allocated
  series(c.value, rgba(204, 121, 167, 200));
}

void Timeline::layout(const TimeView& v, float scroll_y, float view_h, const FontMetrics& f, const Highlight& hl,
                      const RowState& rs, FrameLayout& out) {
  out.clear();
  if (!m_) return;
  const float pinned_h = std::min(pinned_height(rs), view_h);
  out.pinned_h = pinned_h;
  // The scrolled rows below the pinned ones; sections whose lanes are all pinned are left out.
  float y = pinned_h - scroll_y;
  for (uint32_t si = 0; si < sections.size(); ++si) {
    const Section& s = sections[si];
    if (!has_unpinned(s, rs)) continue;
    const bool s_collapsed = rs.section_collapsed(si);
    if (y >= pinned_h && y < view_h) out.gutter.push_back({y, y + style.section_h, true, si, s_collapsed, true});
    y += style.section_h;
    if (s_collapsed) continue;
    for (uint32_t li : s.lanes) {
      if (rs.lane_is_pinned(li)) continue;
      layout_lane(li, y, pinned_h, view_h, v, f, hl, rs, out);
      y += lane_height(li, rs) + style.lane_gap;
    }
  }
  // The pinned rows on top, in their sections' order.
  y = 0;
  for (const Section& s : sections)
    for (uint32_t li : s.lanes)
      if (rs.lane_is_pinned(li)) {
        layout_lane(li, y, 0, pinned_h, v, f, hl, rs, out);
        y += lane_height(li, rs) + style.lane_gap;
      }
}

ItemRef Timeline::hit(const FrameLayout& fl, float x, float y, uint32_t* fold_count) const {
  if (fold_count) *fold_count = 0;
  for (const RowHit& r : fl.rows) {
    if (y < r.y0 || y >= r.y1 || r.kind == LaneKind::Counter) continue;
    int k = hit_test(fl.items.data() + r.item_begin, r.item_end - r.item_begin, x);
    if (k < 0) return {};
    const LayoutItem& it = fl.items[r.item_begin + uint32_t(k)];
    if (fold_count) *fold_count = it.count;
    return r.kind == LaneKind::Tier ? ItemRef::span(r.source, it.first) : ItemRef::event(it.first);
  }
  return {};
}

float Timeline::row_y(ItemRef r, const RowState& c, float scroll_y, bool* pinned) const {
  uint32_t want_lane = UINT32_MAX;
  uint16_t depth = 0;
  if (r.kind == ItemRef::Event) {
    uint32_t t = m_->track_of(r.index);
    if (t >= track_lane_.size()) return -1;
    want_lane = track_lane_[t].first;
    depth = m_->ev.depth[r.index];
  } else if (r.kind == ItemRef::TierSpan) {
    const Tier& t = tiers_.tiers[r.tier];
    for (uint16_t d = 0; d < t.levels.size(); ++d)
      if (r.index >= t.levels[d].begin && r.index < t.levels[d].end) depth = d;
    for (uint32_t li : sections[0].lanes)
      if (lanes[li].index == r.tier) want_lane = li;
  } else {
    return -1;
  }
  return lane_row_y(want_lane, depth, c, scroll_y, pinned);
}

float Timeline::lane_row_y(uint32_t want_lane, uint16_t depth, const RowState& c, float scroll_y, bool* pinned) const {
  if (want_lane >= lanes.size()) return -1;
  if (c.lane_collapsed(want_lane)) depth = 0;
  const bool is_pinned = c.lane_is_pinned(want_lane);
  if (pinned) *pinned = is_pinned;
  float y = 0;
  if (is_pinned) {
    for (const Section& s : sections)
      for (uint32_t li : s.lanes) {
        if (li == want_lane) return y + (float(depth) + 0.5f) * style.row_h;
        if (c.lane_is_pinned(li)) y += lane_height(li, c) + style.lane_gap;
      }
    return -1;
  }
  y = pinned_height(c) - scroll_y;
  for (uint32_t si = 0; si < sections.size(); ++si) {
    const Section& s = sections[si];
    if (!has_unpinned(s, c)) continue;
    y += style.section_h;
    for (uint32_t li : s.lanes) {
      if (c.lane_is_pinned(li)) continue;
      if (li == want_lane) {
        if (c.section_collapsed(si)) return y - style.section_h * 0.5f;
        return y + (float(depth) + 0.5f) * style.row_h;
      }
      if (!c.section_collapsed(si)) y += lane_height(li, c) + style.lane_gap;
    }
  }
  return -1;
}

}  // namespace strata::render
