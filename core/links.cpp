#include "core/links.h"
#include "core/parallel.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace strata {

namespace {

void link_pair(EventColumns& ev, EventId cpu, EventId gpu) {
  if (ev.link[gpu] == kNoEvent) ev.link[gpu] = cpu;
  // A launch keeps its earliest GPU op.
  if (ev.link[cpu] == kNoEvent || ev.start[gpu] < ev.start[ev.link[cpu]]) ev.link[cpu] = gpu;
}

// Whether launch l matches GPU op g better than `best`: the latest launch that starts before
// the op, else the earliest.
bool better_launch(const EventColumns& ev, EventId l, EventId best, EventId g) {
  if (best == kNoEvent) return true;
  bool l_before = ev.start[l] <= ev.start[g], best_before = ev.start[best] <= ev.start[g];
  if (l_before != best_before) return l_before;
  return l_before ? ev.start[l] > ev.start[best] : ev.start[l] < ev.start[best];
}

// Runtime/driver calls ↔ GPU ops through the correlation id. Ids can repeat (several
// ranks or devices in one file): take the latest launch that starts before the GPU op.
void link_by_correlation(TraceModel& m) {
  auto& ev = m.ev;
  std::vector<EventId> launches;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (EventId e = 0; e < ev.size(); ++e)
    if (ev.id[e] >= 0 && is_launch_cat(ev.category(e))) {
      launches.push_back(e);
      lo = std::min(lo, ev.id[e]);
      hi = std::max(hi, ev.id[e]);
    }
  if (launches.empty()) return;
  // Correlation ids are counters: when they are dense, index them directly (no sort).
  if (uint64_t(hi - lo) < 8 * uint64_t(launches.size()) + 4096) {
    std::vector<EventId> head(size_t(hi - lo) + 1, kNoEvent), next(launches.size(), kNoEvent);
    for (size_t i = 0; i < launches.size(); ++i) {
      EventId& h = head[size_t(ev.id[launches[i]] - lo)];
      next[i] = h;
      h = EventId(i);
    }
    for (EventId e = 0; e < ev.size(); ++e) {
      if (ev.id[e] < lo || ev.id[e] > hi || !is_gpu_op_cat(ev.category(e))) continue;
      EventId first = head[size_t(ev.id[e] - lo)];
      if (first == kNoEvent) continue;
      // Chains hold positions in `launches`; map them to events while walking.
      EventId best = kNoEvent;
      for (EventId i = first; i != kNoEvent; i = next[i]) {
        EventId l = launches[i];
        if (better_launch(ev, l, best, e)) best = l;
      }
      link_pair(ev, best, e);
    }
    return;
  }
  std::sort(launches.begin(), launches.end(), [&](EventId a, EventId b) { return ev.id[a] < ev.id[b]; });
  for (EventId e = 0; e < ev.size(); ++e) {
    if (ev.id[e] < 0 || !is_gpu_op_cat(ev.category(e))) continue;
    auto it = std::lower_bound(launches.begin(), launches.end(), ev.id[e],
                               [&](EventId l, int64_t id) { return ev.id[l] < id; });
    EventId best = kNoEvent;
    for (; it != launches.end() && ev.id[*it] == ev.id[e]; ++it)
      if (better_launch(ev, *it, best, e)) best = *it;
    if (best != kNoEvent) link_pair(ev, best, e);
  }
}

// gpu_user_annotation ranges ↔ the user_annotation they project, by External id.
void link_annotations(TraceModel& m) {
  auto& ev = m.ev;
  std::unordered_map<int64_t, EventId> cpu;
  for (EventId e = 0; e < ev.size(); ++e)
    if (ev.id[e] >= 0 && ev.category(e) == Cat::UserAnnotation) cpu.emplace(ev.id[e], e);
  for (EventId e = 0; e < ev.size(); ++e) {
    if (ev.id[e] < 0 || ev.category(e) != Cat::GpuUserAnnotation) continue;
    auto it = cpu.find(ev.id[e]);
    if (it == cpu.end()) continue;
    ev.link[e] = it->second;
    if (ev.link[it->second] == kNoEvent) ev.link[it->second] = e;
  }
}

// A call that launches a kernel (cudaLaunchKernel, cuLaunchKernelEx, cudaLaunchCooperativeKernel, …).
bool is_kernel_launch_name(std::string_view n) {
  return n.find("LaunchKernel") != std::string_view::npos || n.find("LaunchCooperativeKernel") != std::string_view::npos;
}

// A range-profiler range → the launch of its kernel, its host side (for layers). Strata's collector
// writes the launch's correlation id on each range: that launch, exactly (the latest one before
// the range when ids repeat, as for GPU ops). Kineto's ranges carry none, but CUPTI's range
// profiler makes one range per kernel launch, in launch order: when the launches with no GPU op
// are exactly as many as those ranges, the k-th range came from the k-th launch. Only the range
// points at its launch; the launch keeps its GPU op (or none: a Kineto range's time is made up).
void link_profiler_ranges(TraceModel& m) {
  auto& ev = m.ev;
  std::vector<EventId> ranges, correlated;
  for (EventId e = 0; e < ev.size(); ++e)
    if (ev.category(e) == Cat::ProfilerRange) (ev.id[e] >= 0 ? correlated : ranges).push_back(e);
  if (!correlated.empty()) {
    std::unordered_map<int64_t, std::vector<EventId>> launches;  // by correlation id
    for (EventId e : correlated) launches.emplace(ev.id[e], std::vector<EventId>{});
    for (EventId e = 0; e < ev.size(); ++e)
      if (is_launch_cat(ev.category(e)) && ev.id[e] >= 0)
        if (auto it = launches.find(ev.id[e]); it != launches.end()) it->second.push_back(e);
    for (EventId r : correlated) {
      EventId best = kNoEvent;
      for (EventId l : launches[ev.id[r]])
        if (better_launch(ev, l, best, r)) best = l;
      if (best != kNoEvent) ev.link[r] = best;
    }
  }
  if (ranges.empty()) return;
  std::vector<EventId> launches;
  for (EventId e = 0; e < ev.size(); ++e)
    if (is_launch_cat(ev.category(e)) && ev.link[e] == kNoEvent && is_kernel_launch_name(m.name_of(e))) launches.push_back(e);
  if (ranges.size() != launches.size()) return;
  auto by_start = [&](EventId a, EventId b) { return ev.start[a] != ev.start[b] ? ev.start[a] < ev.start[b] : a < b; };
  std::sort(ranges.begin(), ranges.end(), by_start);
  std::sort(launches.begin(), launches.end(), by_start);
  for (size_t k = 0; k < ranges.size(); ++k) ev.link[ranges[k]] = launches[k];
}

// Binds flow events to slices. Flows come sorted by id, and ids grow with time, so
// successive flows on a track land near each other: each level's search starts from
// where the last one on that level ended instead of bisecting the whole level (fewer
// cache misses).
class Binder {
 public:
  explicit Binder(const TraceModel& m) : m_(m), level_base_(m.tracks.size() + 1, 0) {
    for (size_t t = 0; t < m.tracks.size(); ++t) {
      const auto& levels = m.tracks[t].levels;
      level_base_[t + 1] = level_base_[t] + uint32_t(levels.size());
      for (const IndexRange& level : levels) hint_.push_back(level.begin);
    }
  }

  // The slice a flow event binds to: the deepest enclosing one, or with bind_next the next
  // one to start; between CPU threads, preferably the op starting at the flow's time.
  EventId bind(const FlowRec& f, bool cpu_to_cpu) {
    if (f.track >= m_.tracks.size()) return kNoEvent;
    if (cpu_to_cpu) {
      EventId op = op_starting_at(f.track, f.ts);
      if (op != kNoEvent) return op;
    }
    const auto& levels = m_.tracks[f.track].levels;
    const auto& ev = m_.ev;
    if (!f.bind_next) {  // the deepest slice whose [start, end] holds ts
      for (size_t d = levels.size(); d-- > 0;) {
        uint32_t it = search(f.track, d, [&](Ns s) { return s <= f.ts; });
        if (it != levels[d].begin && ev.end(it - 1) >= f.ts) return it - 1;
      }
      return kNoEvent;
    }
    EventId best = kNoEvent;
    for (size_t d = 0; d < levels.size(); ++d) {
      uint32_t it = search(f.track, d, [&](Ns s) { return s < f.ts; });
      if (it == levels[d].end) continue;
      if (best == kNoEvent || ev.start[it] < ev.start[best]) best = it;
    }
    return best;
  }

 private:
  // The outermost CPU op that starts exactly at t: flows between CPU ops (fwdbwd) start at
  // the op that carries the sequence number, and its first child often starts with it.
  EventId op_starting_at(uint32_t track, Ns t) {
    const auto& levels = m_.tracks[track].levels;
    for (size_t d = 0; d < levels.size(); ++d) {
      uint32_t it = search(track, d, [&](Ns s) { return s < t; });
      for (; it != levels[d].end && m_.ev.start[it] == t; ++it)
        if (m_.ev.category(it) == Cat::CpuOp) return it;
    }
    return kNoEvent;
  }

  // The first event of the level that is not `before`, searched outward from the hint in
  // doubling steps, then bisected.
  template <class Before>
  uint32_t search(uint32_t track, size_t d, Before before) {
    const IndexRange& level = m_.tracks[track].levels[d];
    const Ns* s = m_.ev.start.data();
    uint32_t& hint = hint_[level_base_[track] + d];
    uint32_t lo = level.begin, hi = level.end;  // the answer lies in [lo, hi]
    if (hint < level.end && before(s[hint])) {
      lo = hint + 1;
      for (uint32_t step = 1; step <= level.end - lo; step *= 2) {
        if (!before(s[lo + step - 1])) {
          hi = lo + step - 1;
          break;
        }
        lo += step;
      }
    } else {
      hi = hint;
      for (uint32_t step = 1; step <= hi - level.begin; step *= 2) {
        if (before(s[hi - step])) {
          lo = hi - step + 1;
          break;
        }
        hi -= step;
      }
    }
    hint = uint32_t(std::partition_point(s + lo, s + hi, before) - s);
    return hint;
  }

  const TraceModel& m_;
  std::vector<uint32_t> level_base_;  // per track, index of its first level in hint_
  std::vector<uint32_t> hint_;        // per level, where its last search ended
};

void record_fwd_bwd(TraceModel& m, EventId fwd, EventId bwd) {
  if (!m.bwd_to_fwd.emplace(bwd, fwd).second) return;
  auto [it, added] = m.fwd_to_bwd.emplace(fwd, bwd);
  // The forward op keeps its outermost backward op.
  if (!added && m.ev.depth[bwd] < m.ev.depth[it->second]) it->second = bwd;
}

void sort_flows(std::vector<FlowRec>& flows) {
  std::sort(flows.begin(), flows.end(), [](const FlowRec& a, const FlowRec& b) {
    if (a.cat != b.cat) return a.cat < b.cat;
    if (a.id != b.id) return a.id < b.id;
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.phase < b.phase;  // s before f at the same time
  });
}

// A flow resolved to the slices at its two ends.
struct FlowPair {
  EventId src, dst;
  Ns ts;  // of the flow's start
  uint8_t cat;
};

// Resolving launch flows (ac2g, torch_npu's async_npu and HostToDevice: a host event → the GPU
// op it launched) to the launch call itself.
class LaunchResolver {
 public:
  LaunchResolver(TraceModel& m, const std::vector<FlowPair>& pairs, uint8_t fwdbwd_cat) : m_(m), pairs_(pairs) {
    const auto& ev = m.ev;
    // Task queues: a flow from a launch call to a span on another host thread hands that launch
    // to the span's thread (torch_npu's enqueue → dequeue, async_task_queue): the launch calls
    // made inside the span are the host side of the queued one.
    for (const FlowPair& p : pairs) {
      if (p.cat == fwdbwd_cat || !is_launch_cat(ev.category(p.src)) || is_gpu_cat(ev.category(p.dst))) continue;
      uint32_t ts = m.track_of(p.src), td = m.track_of(p.dst);
      if (ts != td && td != kNoTrack && m.tracks[td].kind == TrackKind::CpuThread) queued_by_.emplace(p.dst, p.src);
    }
  }

  void link(const FlowPair& p) {
    auto& ev = m_.ev;
    // The launch call itself when the flow starts inside the call (or an op under it) …
    EventId launch = p.src;
    while (launch != kNoEvent && !is_launch_cat(ev.category(launch))) launch = m_.parent_of(launch);
    // … else the call the op makes after the flow's start (torch_npu starts the flow at the op).
    if (launch == kNoEvent) launch = launch_made_by(p.src, p.ts);
    if (launch == kNoEvent) {
      link_pair(ev, p.src, p.dst);
      return;
    }
    // A call made on a task queue's thread: the launch is the one queued on the op's thread;
    // the call keeps its GPU op too.
    for (int hops = 0; hops < 8 && !queued_by_.empty(); ++hops) {
      EventId queued = kNoEvent;
      for (EventId a = m_.parent_of(launch); a != kNoEvent && queued == kNoEvent; a = m_.parent_of(a))
        if (auto it = queued_by_.find(a); it != queued_by_.end()) queued = it->second;
      if (queued == kNoEvent) break;
      if (ev.link[launch] == kNoEvent || ev.start[p.dst] < ev.start[ev.link[launch]]) ev.link[launch] = p.dst;
      launch = queued;
    }
    link_pair(ev, launch, p.dst);
  }

 private:
  // The launch call an op makes at or after t: among the launch calls under it that start a
  // launch or queue flow, the first; else its first launch call. A few events per level are
  // looked at, not the whole op.
  EventId launch_made_by(EventId op, Ns t) {
    const auto& ev = m_.ev;
    uint32_t tr = m_.track_of(op);
    if (tr == kNoTrack) return kNoEvent;
    if (!sources_known_) {  // rarely needed (a flow that starts in no launch call): made the first time
      sources_known_ = true;
      for (const FlowPair& p : pairs_)
        if (is_gpu_op_cat(ev.category(p.dst)) || queued_by_.count(p.dst)) flow_sources_.insert(p.src);
    }
    const auto& levels = m_.tracks[tr].levels;
    EventId first = kNoEvent, flowing = kNoEvent;
    auto earlier = [&](EventId e, EventId best) { return best == kNoEvent || ev.start[e] < ev.start[best]; };
    for (size_t d = size_t(ev.depth[op]) + 1; d < levels.size(); ++d) {
      auto b = ev.start.begin() + levels[d].begin, en = ev.start.begin() + levels[d].end;
      auto e = EventId(std::lower_bound(b, en, std::max(t, ev.start[op])) - ev.start.begin());
      for (int seen = 0; e < levels[d].end && ev.start[e] <= ev.end(op) && seen < 32; ++e, ++seen) {
        if (!is_launch_cat(ev.category(e))) continue;
        if (earlier(e, first)) first = e;
        if (flow_sources_.count(e) && earlier(e, flowing)) flowing = e;
      }
    }
    return flowing != kNoEvent ? flowing : first;
  }

  TraceModel& m_;
  const std::vector<FlowPair>& pairs_;
  std::unordered_map<EventId, EventId> queued_by_;  // a task queue's span → the launch queued there
  bool sources_known_ = false;
  std::unordered_set<EventId> flow_sources_;        // launch and queue flows start in these
};

// `flows` sorted by sort_flows().
void link_flows(TraceModel& m, const std::vector<FlowRec>& flows) {
  auto& ev = m.ev;
  auto& st = m.stats;
  uint8_t fwdbwd_cat = UINT8_MAX;
  for (size_t c = 0; c < m.category_names.size(); ++c)
    if (m.category_names[c] == "fwdbwd") fwdbwd_cat = uint8_t(c);
  // Binding is a search per flow event that changes nothing but its Binder's hints: do it
  // for all of them on two threads, each with its own Binder.
  std::vector<EventId> bound(flows.size());
  auto bind_range = [&](size_t b, size_t e) {
    Binder binder(m);
    for (size_t i = b; i < e; ++i) bound[i] = binder.bind(flows[i], flows[i].cat == fwdbwd_cat);
  };
  size_t half = flows.size() / 2;
  in_two_threads(flows.size() >= (1u << 16), [&] { bind_range(0, half); }, [&] { bind_range(half, flows.size()); });
  std::vector<size_t> open, early;
  std::vector<FlowPair> pairs;
  auto pair = [&](size_t s, size_t f) {
    EventId src = bound[s], dst = bound[f];
    ++st.flows_total;
    if (src == kNoEvent || dst == kNoEvent) {
      ++st.flow_events_unmatched;
      return;
    }
    ++st.flows_resolved;
    pairs.push_back({src, dst, flows[s].ts, flows[f].cat});
  };
  for (size_t i = 0; i < flows.size();) {
    size_t j = i;
    open.clear();
    early.clear();
    for (; j < flows.size() && flows[j].cat == flows[i].cat && flows[j].id == flows[i].id; ++j) {
      const FlowRec& f = flows[j];
      if (f.phase == EventPhase::FlowStart) {
        open.push_back(j);
        continue;
      }
      if (f.phase != EventPhase::FlowEnd) continue;  // steps carry no binding we use
      if (open.empty()) {
        early.push_back(j);
        continue;
      }
      pair(open.back(), j);
      open.pop_back();
    }
    // Ends before their starts: two clocks that disagree (torch_npu's HostToDevice flows start
    // at the host's call, end at the device's task, and the device's clock can run behind).
    // Left over in one id, they pair in time order.
    size_t k = 0;
    for (; k < early.size() && k < open.size(); ++k) pair(open[k], early[k]);
    st.flow_events_unmatched += open.size() + early.size() - 2 * k;
    i = j;
  }
  // Launches once every flow is bound: a queued launch is known only from its queue's flow.
  bool launches = false;
  for (const FlowPair& p : pairs) launches |= is_gpu_op_cat(ev.category(p.dst));
  std::optional<LaunchResolver> resolver;
  if (launches) resolver.emplace(m, pairs, fwdbwd_cat);
  for (const FlowPair& p : pairs) {
    if (is_gpu_op_cat(ev.category(p.dst))) resolver->link(p);
    else if (p.cat == fwdbwd_cat) record_fwd_bwd(m, p.src, p.dst);
  }
}

// Forward ↔ backward from Sequence number + Fwd thread id. `Fwd thread id` is PyTorch's
// own small thread number, not the OS tid: learn which CPU thread it names from the
// sequence numbers that only one thread has.
//
// An op is given the number the next autograd node will take, whether it makes one or not
// (a dropout that returns its input, an op on tensors needing no gradient): of the outermost
// ops with a number, the node's maker is the last; the number moves on once it has made it.
void link_sequence_numbers(TraceModel& m, std::vector<SeqRec>& seqs) {
  auto& ev = m.ev;
  std::map<std::pair<int64_t, uint32_t>, EventId> forward;  // (seq, track) → the node's op
  std::unordered_map<int64_t, std::vector<uint32_t>> threads_of_seq;
  for (const SeqRec& s : seqs) {
    if (s.fwd_tid > 0) continue;
    uint32_t t = m.track_of(s.event);
    auto [it, added] = forward.emplace(std::make_pair(s.seq, t), s.event);
    if (added) {
      threads_of_seq[s.seq].push_back(t);
      continue;
    }
    const EventId old = it->second, e = s.event;
    const bool encloses = ev.start[e] <= ev.start[old] && ev.end(e) >= ev.end(old) && ev.depth[e] < ev.depth[old];
    const bool inside = ev.start[old] <= ev.start[e] && ev.end(old) >= ev.end(e) && ev.depth[old] < ev.depth[e];
    if (encloses || (!inside && ev.start[e] > ev.start[old])) it->second = e;
  }
  std::map<int64_t, std::map<uint32_t, uint64_t>> votes;  // fwd thread number → track → count
  for (const SeqRec& s : seqs) {
    if (s.fwd_tid <= 0) continue;
    auto it = threads_of_seq.find(s.seq);
    if (it != threads_of_seq.end() && it->second.size() == 1) votes[s.fwd_tid][it->second[0]]++;
  }
  std::unordered_map<int64_t, uint32_t> thread_of;
  for (auto& [num, counts] : votes) {
    auto best = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) { return a.second < b.second; });
    thread_of[num] = best->first;
  }
  for (const SeqRec& s : seqs) {
    if (s.fwd_tid <= 0 || m.bwd_to_fwd.count(s.event)) continue;
    auto t = thread_of.find(s.fwd_tid);
    if (t == thread_of.end()) continue;
    auto f = forward.find({s.seq, t->second});
    if (f != forward.end()) record_fwd_bwd(m, f->second, s.event);
  }
}

void link_python_parents(TraceModel& m, const std::vector<PythonRec>& pythons) {
  std::unordered_map<int64_t, EventId> by_id;
  for (const PythonRec& p : pythons)
    if (p.id >= 0) by_id.emplace(p.id, p.event);
  for (const PythonRec& p : pythons) {
    if (p.parent < 0 || m.ev.link[p.event] != kNoEvent) continue;
    auto it = by_id.find(p.parent);
    if (it != by_id.end() && it->second != p.event) m.ev.link[p.event] = it->second;
  }
}

}  // namespace

void resolve_links(TraceModel& m, LinkInputs& in, const Progress* progress) {
  auto cancelled = [&] { return progress && progress->cancelled(); };
  // Sorting the flows needs nothing else: overlap it with the correlation pass.
  in_two_threads(in.flows.size() >= (1u << 16), [&] { sort_flows(in.flows); },
                 [&] {
                   link_by_correlation(m);
                   link_annotations(m);
                 });
  if (cancelled()) return;
  link_flows(m, in.flows);
  link_profiler_ranges(m);
  if (cancelled()) return;
  link_sequence_numbers(m, in.seqs);
  link_python_parents(m, in.pythons);
  auto& ev = m.ev;
  auto& st = m.stats;
  for (EventId e = 0; e < ev.size(); ++e) {
    Cat c = ev.category(e);
    if (is_gpu_op_cat(c)) {
      ++st.gpu_ops;
      if (ev.link[e] != kNoEvent) ++st.gpu_ops_linked;
    } else if (is_launch_cat(c) && ev.link[e] != kNoEvent) {
      ++st.launches_linked;
    }
  }
  st.fwdbwd_pairs = m.fwd_to_bwd.size();
}

}  // namespace strata
