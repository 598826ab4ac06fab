// Building the replay graph from a trace model and its annotation, and calibrating its lags
// on the measured timeline (see graph.h).
#include "core/whatif/graph.h"

#include "core/event_args.h"
#include "core/intervals.h"
#include "core/job/job.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <unordered_map>

namespace strata::whatif {

const char* vertex_kind_name(VertexKind k) {
  switch (k) {
    case VertexKind::CpuWork: return "cpu";
    case VertexKind::Launch: return "launch";
    case VertexKind::HostWait: return "host wait";
    case VertexKind::Call: return "call";
    case VertexKind::GpuOp: return "gpu";
  }
  return "?";
}

const char* edge_kind_name(EdgeKind k) {
  switch (k) {
    case EdgeKind::Release: return "release";
    case EdgeKind::CpuOrder: return "cpu_order";
    case EdgeKind::StreamOrder: return "stream_order";
    case EdgeKind::Launch: return "launch";
    case EdgeKind::StreamWaitEvent: return "stream_wait_event";
    case EdgeKind::HostWait: return "host_wait";
    case EdgeKind::Collective: return "collective";
    case EdgeKind::Wake: return "wake";
    case EdgeKind::GpuDependency: return "gpu_dependency";
    case EdgeKind::Count: break;
  }
  return "?";
}

namespace {

// A GPU op that started this much later than every known predecessor allowed waited for
// something the trace does not show.
constexpr Ns kInferredMin = 5'000;
// A wait the measured timeline contradicts by less than this is clock skew between the host's
// and the GPU's timestamps, not a sign that there was no wait.
constexpr Ns kClockTolerance = 2'000;
// How soon after another stream's op a GPU op must start to be taken as waiting for it.
constexpr Ns kDependencyWindow = 50'000;
// How far along a thread's calls a cudaStreamWaitEvent's record and next launch are looked for.
constexpr ptrdiff_t kNearbyCalls = 64;
constexpr Ns kMinTime = std::numeric_limits<Ns>::min() / 4;
// A thread's stretch with no op this long is idle (shorter ones are the host's own overhead
// between ops), and it resumed because of another thread when a point of one that was busy
// for most of the stretch came at most this long before it resumed.
constexpr Ns kIdleMin = 50'000;
constexpr Ns kWakeLatency = 50'000;

// One trace's part of the graph while it is built. Times are the trace's own until they
// enter the graph, where the part's clock offset is added.
class TraceBuilder {
 public:
  TraceBuilder(Graph& g, const TraceModel& m, const Annotation& a, int64_t rank, Ns offset, IterationRange range = {})
      : g_(g), m_(m), a_(a), off_(offset), part_(uint32_t(g.parts.size())) {
    first_ = std::min(range.first, a.iterations.size());
    last_ = first_ + std::min(range.count, a.iterations.size() - first_);
    Part& p = g_.parts.emplace_back();
    p.model = &m;
    p.annotation = &a;
    p.rank = rank;
    p.clock_offset = offset;
    p.whole_trace = a.iterations.empty() || a.iteration_source == IterationSource::WholeTrace;
    w0_ = first_ == last_ ? m.time_begin : a.iterations[first_].begin;
    w1_ = first_ == last_ ? m.time_end : a.iterations[last_ - 1].end;
  }

  // False when `progress` was cancelled on the way (the graph is then incomplete).
  bool build(const Progress* progress = nullptr) {
    auto go_on = [&] { return !progress || !progress->cancelled(); };
    index_phases();
    call_vertex_.assign(m_.ev.size(), kNoVertex);
    for (uint32_t t = 0; t < m_.tracks.size() && go_on(); ++t) add_cpu_lane(t);
    if (!go_on()) return false;
    if (main_lane_ == UINT32_MAX) add_clock_lane();
    add_gpu_lanes();
    if (!go_on()) return false;
    add_host_waits();
    add_stream_waits();
    add_wakes();
    set_launch_latency();
    add_boundaries();
    return go_on();
  }

  // The vertex of a GPU op, or kNoVertex when it is outside the window.
  Vertex gpu_vertex(EventId e) const {
    auto it = std::lower_bound(gpu_vertex_.begin(), gpu_vertex_.end(), std::pair(e, Vertex(0)));
    return it != gpu_vertex_.end() && it->first == e ? it->second : kNoVertex;
  }

 private:
  struct Span { Ns b, e; NodeId n; };
  struct WaitCall { Vertex v; EventId e; HostWait kind; };

  Graph& g_;
  const TraceModel& m_;
  const Annotation& a_;
  Ns off_;
  uint32_t part_;
  Ns w0_ = 0, w1_ = 0;
  size_t first_ = 0, last_ = 0;  // the iterations [first_, last_) of the annotation it holds
  std::vector<Ns> cuts_;      // iteration and phase boundaries: CPU work is split there
  std::vector<Span> phases_;  // phase nodes by start
  std::vector<Vertex> call_vertex_;  // per event: the call vertex it is part of
  std::vector<WaitCall> host_calls_, stream_wait_calls_;
  uint32_t main_lane_ = UINT32_MAX;
  std::vector<uint32_t> gpu_lanes_;
  std::vector<std::vector<Ns>> lane_issue_;  // per GPU lane (index as in gpu_lanes_): its ops' issue times
  std::vector<std::pair<EventId, Vertex>> gpu_vertex_;  // sorted by event
  std::vector<Ns> issue_;  // per GPU vertex of this part, by gpu_by_issue order
  std::vector<size_t> launch_edges_;
  std::unordered_map<Vertex, Vertex> op_of_call_;  // a launch's (first) GPU op
  std::unordered_map<uint32_t, std::vector<Interval>> busy_;  // per CPU lane: where its thread runs ops or calls (graph clock)
  std::vector<Vertex> idle_;  // idle stretches of CPU lanes

  Part& part() { return g_.parts[part_]; }

  Vertex add(VertexKind k, Ns s, Ns d, EventId e, uint32_t lane, NodeId n, PhaseKind ph) {
    auto v = Vertex(g_.kind.size());
    g_.kind.push_back(k);
    g_.start.push_back(s + off_);
    g_.dur.push_back(d);
    g_.work.push_back(d);
    g_.event.push_back(e);
    g_.lane.push_back(lane);
    g_.node.push_back(n);
    g_.phase.push_back(ph);
    g_.lanes[lane].vertices.push_back(v);
    return v;
  }
  size_t edge(Point from, Point to, EdgeKind k, Ns lag = 0) {
    g_.edges.push_back({from, to, from == kNoPoint ? lag + off_ : lag, k, false});
    ++g_.stats.edges[size_t(k)];
    return g_.edges.size() - 1;
  }
  // Program or stream order: after the lane's last vertex, or released at its own time.
  void chain(uint32_t lane, Vertex v, EdgeKind k) {
    const auto& vs = g_.lanes[lane].vertices;
    if (vs.size() >= 2) edge(end_point(vs[vs.size() - 2]), start_point(v), k);
    else edge(kNoPoint, start_point(v), EdgeKind::Release, g_.start[v] - off_);
  }
  uint32_t new_lane(bool gpu, uint32_t track, int32_t device, int64_t id) {
    g_.lanes.push_back({gpu, part_, track, device, id, {}});
    return uint32_t(g_.lanes.size() - 1);
  }

  void index_phases() {
    const AnnotationTree& t = a_.tree;
    for (NodeId n = 0; n < t.size(); ++n) {
      if (t.kind[n] != NodeKind::Phase && t.kind[n] != NodeKind::Iteration) continue;
      for (Ns x : {t.begin[n], t.end[n]})
        if (x > w0_ && x < w1_) cuts_.push_back(x);
      if (t.kind[n] == NodeKind::Phase) phases_.push_back({t.begin[n], t.end[n], n});
    }
    for (size_t i = first_; i < last_; ++i)
      for (Ns x : {a_.iterations[i].begin, a_.iterations[i].end})
        if (x > w0_ && x < w1_) cuts_.push_back(x);
    std::sort(cuts_.begin(), cuts_.end());
    cuts_.erase(std::unique(cuts_.begin(), cuts_.end()), cuts_.end());
    std::sort(phases_.begin(), phases_.end(), [](const Span& x, const Span& y) { return x.b < y.b; });
  }
  NodeId phase_node_at(Ns ts) const {
    auto it = std::upper_bound(phases_.begin(), phases_.end(), ts, [](Ns v, const Span& s) { return v < s.b; });
    if (it == phases_.begin()) return kNoNode;
    --it;
    return ts < it->e ? it->n : kNoNode;
  }
  PhaseKind phase_of(NodeId n) const { return n == kNoNode ? PhaseKind::Other : a_.tree.phase[n]; }
  NodeId node_of(EventId e) const { return e < a_.node_of_event.size() ? a_.node_of_event[e] : kNoNode; }

  // CPU work [from, to) on a lane, one vertex per stretch between iteration and phase
  // boundaries and per idle stretch, each with the annotation node of what runs at its middle.
  void add_work(uint32_t lane, Ns from, Ns to) {
    auto b = busy_.find(lane);
    if (b == busy_.end()) return add_pieces(lane, from, to, false);
    // Idle stretches: gaps of at least kIdleMin between the thread's ops within [from, to).
    const std::vector<Interval>& busy = b->second;
    auto it = std::upper_bound(busy.begin(), busy.end(), Interval(from + off_, kMinTime));
    if (it != busy.begin()) --it;
    Ns done = from, cursor = from;  // emitted up to `done`; the thread ran ops up to `cursor`
    for (; it != busy.end() && it->first - off_ < to; ++it) {
      const Ns gap_end = std::min(to, it->first - off_);
      if (gap_end - cursor >= kIdleMin) {
        if (cursor > done) add_pieces(lane, done, cursor, false);
        add_pieces(lane, cursor, gap_end, true);
        done = gap_end;
      }
      cursor = std::max(cursor, std::min(to, it->second - off_));
    }
    if (to - cursor >= kIdleMin) {
      if (cursor > done) add_pieces(lane, done, cursor, false);
      add_pieces(lane, cursor, to, true);
    } else if (to > done) {
      add_pieces(lane, done, to, false);
    }
  }

  void add_pieces(uint32_t lane, Ns from, Ns to, bool idle) {
    const uint32_t track = g_.lanes[lane].track;
    auto c = std::upper_bound(cuts_.begin(), cuts_.end(), from);
    while (from < to) {
      Ns piece_end = c != cuts_.end() && *c < to ? *c++ : to;
      Ns mid = from + (piece_end - from) / 2;
      EventId e = track != kNoTrack ? m_.event_at(track, mid) : kNoEvent;
      NodeId n = e != kNoEvent ? node_of(e) : kNoNode;
      if (n == kNoNode) n = phase_node_at(mid);
      Vertex v = add(VertexKind::CpuWork, from, piece_end - from, kNoEvent, lane, n, phase_of(n));
      chain(lane, v, EdgeKind::CpuOrder);
      if (idle) idle_.push_back(v);
      from = piece_end;
    }
  }
  // Where a thread runs ops or CUDA calls (frames and ranges are containers, not work).
  void index_busy(uint32_t lane, const Track& tr) {
    std::vector<Interval>& busy = busy_[lane];
    auto collect = [&](const Track& x) {
      for (EventId e = x.events.begin; e < x.events.end; ++e) {
        Cat k = m_.ev.category(e);
        if ((k == Cat::CpuOp || is_cuda_call_cat(k)) && m_.ev.end(e) > w0_ && m_.ev.start[e] < w1_)
          busy.push_back({m_.ev.start[e] + off_, m_.ev.end(e) + off_});
      }
    };
    collect(tr);
    if (tr.overflow != kNoTrack) collect(m_.tracks[tr.overflow]);
    merge_intervals(busy);
  }
  Ns busy_within(uint32_t lane, Ns from, Ns to) const {  // graph clock
    auto b = busy_.find(lane);
    if (b == busy_.end()) return to - from;
    const std::vector<Interval>& busy = b->second;
    auto i = std::upper_bound(busy.begin(), busy.end(), Interval(from, kMinTime));
    if (i != busy.begin()) --i;
    Ns sum = 0;
    for (; i != busy.end() && i->first < to; ++i) sum += std::max<Ns>(0, std::min(i->second, to) - std::max(i->first, from));
    return sum;
  }

  // A thread that idled while another worked, and resumed just after a point of the other
  // (a call, the end of its work), resumed because of it: an edge from that point to the end
  // of the idle stretch. Calibration turns the stretch into a wait for it.
  void add_wakes() {
    std::vector<std::pair<Ns, Point>> points;  // CPU lanes' points that are not idle stretches' own
    std::vector<uint8_t> is_idle(g_.size(), 0);
    for (Vertex v : idle_) is_idle[v] = 1;
    for (uint32_t l = 0; l < g_.lanes.size(); ++l) {
      if (g_.lanes[l].gpu || g_.lanes[l].part != part_) continue;
      for (Vertex v : g_.lanes[l].vertices)
        if (!is_idle[v]) points.push_back({g_.start[v], start_point(v)}), points.push_back({g_.start[v] + g_.dur[v], end_point(v)});
    }
    std::sort(points.begin(), points.end());
    g_.stats.idle_stretches += idle_.size();
    for (Vertex v : idle_) {
      const Ns resume = g_.start[v] + g_.dur[v];
      auto it = std::upper_bound(points.begin(), points.end(), std::pair(resume, kNoPoint));
      while (it != points.begin()) {
        --it;
        if (resume - it->first > kWakeLatency) break;
        const uint32_t other = g_.lane[vertex_of(it->second)];
        if (other == g_.lane[v]) continue;
        if (2 * busy_within(other, g_.start[v], resume) < g_.dur[v]) continue;
        edge(it->second, end_point(v), EdgeKind::Wake);
        ++g_.stats.wakes;
        break;
      }
    }
  }

  // A CPU thread: its CUDA calls in the window (calls that overlap, such as a runtime call
  // around its driver call, are one vertex) and the work between them. Threads that make no
  // call cannot affect the GPU and are left out, except the training loop's.
  void add_cpu_lane(uint32_t ti) {
    const Track& tr = m_.tracks[ti];
    if (tr.kind != TrackKind::CpuThread || tr.overflow_of != kNoTrack) return;
    const auto& ev = m_.ev;
    std::vector<EventId> calls;
    auto collect = [&](const Track& x) {
      for (EventId e = x.events.begin; e < x.events.end; ++e)
        if (is_launch_cat(ev.category(e)) && ev.start[e] >= w0_ && ev.start[e] < w1_) calls.push_back(e);
    };
    collect(tr);
    if (tr.overflow != kNoTrack) collect(m_.tracks[tr.overflow]);
    const bool is_main = ti == a_.main_track;
    if (calls.empty() && !is_main) return;
    std::sort(calls.begin(), calls.end(), [&](EventId x, EventId y) {
      return ev.start[x] != ev.start[y] ? ev.start[x] < ev.start[y] : ev.dur[x] > ev.dur[y];
    });
    const uint32_t lane = new_lane(false, ti, -1, tr.tid);
    if (is_main) main_lane_ = lane;
    index_busy(lane, tr);
    Ns cursor = w0_;
    for (size_t i = 0; i < calls.size();) {
      const Ns s = ev.start[calls[i]];
      Ns e = ev.end(calls[i]);
      size_t j = i + 1;
      while (j < calls.size() && ev.start[calls[j]] < e) e = std::max(e, ev.end(calls[j++]));
      if (s > cursor) add_work(lane, cursor, s);
      bool launch = false, waits = false;
      for (size_t q = i; q < j; ++q) {
        std::string_view name = m_.name_of(calls[q]);
        HostWait hw = host_wait_of(name);
        waits |= hw != HostWait::None && hw != HostWait::StreamWaitEvent;
        launch |= m_.gpu_op_of(calls[q]) != kNoEvent || name.find("Launch") != std::string_view::npos;
      }
      VertexKind k = waits ? VertexKind::HostWait : launch ? VertexKind::Launch : VertexKind::Call;
      NodeId n = node_of(calls[i]);
      if (n == kNoNode) n = phase_node_at(s);
      Vertex v = add(k, s, e - s, calls[i], lane, n, phase_of(n));
      chain(lane, v, EdgeKind::CpuOrder);
      for (size_t q = i; q < j; ++q) {
        call_vertex_[calls[q]] = v;
        HostWait hw = host_wait_of(m_.name_of(calls[q]));
        if (hw == HostWait::StreamWaitEvent) stream_wait_calls_.push_back({v, calls[q], hw});
        else if (hw != HostWait::None) host_calls_.push_back({v, calls[q], hw});
      }
      cursor = std::max(cursor, e);
      i = j;
    }
    if (w1_ > cursor) add_work(lane, cursor, w1_);
  }

  // A trace with no CPU thread of its own: a lane of the window's time, so that iterations
  // have a place (they move only where GPU work runs past them).
  void add_clock_lane() {
    main_lane_ = new_lane(false, kNoTrack, -1, -1);
    add_work(main_lane_, w0_, w1_);
    g_.notes.push_back("the trace has no training-loop thread: iterations are measured on the window's clock");
  }

  // GPU streams: the ops issued in the window (launched in it, or starting in it when their
  // launch is not in the trace), in stream order.
  void add_gpu_lanes() {
    const auto& ev = m_.ev;
    struct Op { int32_t device; int64_t stream; Ns issue; EventId e; };
    std::vector<Op> ops;
    for (const Track& tr : m_.tracks) {
      if (tr.kind != TrackKind::GpuStream) continue;
      const Track& base = tr.overflow_of != kNoTrack ? m_.tracks[tr.overflow_of] : tr;
      const int32_t device = m_.processes[base.process].device;
      const int64_t stream = base.stream >= 0 ? base.stream : base.tid;
      for (EventId e = tr.events.begin; e < tr.events.end; ++e) {
        if (!is_gpu_op_cat(ev.category(e))) continue;
        EventId l = m_.launch_of(e);
        Ns issue = l != kNoEvent ? ev.start[l] : ev.start[e];
        if (issue >= w0_ && issue < w1_) ops.push_back({device, stream, issue, e});
      }
    }
    std::sort(ops.begin(), ops.end(), [&](const Op& x, const Op& y) {
      if (x.device != y.device || x.stream != y.stream) return std::pair(x.device, x.stream) < std::pair(y.device, y.stream);
      return ev.start[x.e] != ev.start[y.e] ? ev.start[x.e] < ev.start[y.e] : x.e < y.e;
    });
    uint32_t lane = UINT32_MAX;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& o = ops[i];
      if (i == 0 || o.device != ops[i - 1].device || o.stream != ops[i - 1].stream) {
        lane = new_lane(true, m_.track_of(o.e), o.device, o.stream);
        gpu_lanes_.push_back(lane);
        lane_issue_.emplace_back();
      }
      EventId l = m_.launch_of(o.e);
      NodeId n = node_of(o.e);
      if (n == kNoNode && l != kNoEvent) n = node_of(l);
      if (n == kNoNode) n = phase_node_at(o.issue);
      Vertex v = add(VertexKind::GpuOp, ev.start[o.e], ev.dur[o.e], o.e, lane, n, phase_of(n));
      lane_issue_.back().push_back(o.issue);
      gpu_vertex_.push_back({o.e, v});
      const auto& vs = g_.lanes[lane].vertices;
      if (vs.size() >= 2) edge(end_point(vs[vs.size() - 2]), start_point(v), EdgeKind::StreamOrder);
      Vertex lv = l != kNoEvent ? call_vertex_[l] : kNoVertex;
      if (lv != kNoVertex) op_of_call_.emplace(lv, v);
      if (lv == kNoVertex) {
        // Its launch is not in the trace: it follows its stream, or starts when it did.
        if (vs.size() < 2) edge(kNoPoint, start_point(v), EdgeKind::Release, ev.start[o.e]);
      } else if (ev.start[o.e] + off_ + kClockTolerance < g_.start[lv] + g_.dur[lv]) {
        // The op ran while its call went on (a synchronous or staged copy): the call did not
        // have to end first, and may itself wait for the op.
        edge(start_point(lv), start_point(v), EdgeKind::Launch);
        if (g_.kind[lv] == VertexKind::Launch && m_.name_of(g_.event[lv]).find("Memcpy") != std::string_view::npos) {
          // A copy call that returned only once its copy ran (pageable memory) waits like a
          // synchronous copy: it is no launch that a CUDA graph would take off the host.
          g_.kind[lv] = VertexKind::HostWait;
          ++g_.stats.host_waits[size_t(HostWait::Copy)];
          edge(end_point(v), end_point(lv), EdgeKind::HostWait);
        }
      } else {
        launch_edges_.push_back(edge(end_point(lv), start_point(v), EdgeKind::Launch));
      }
    }
    std::sort(gpu_vertex_.begin(), gpu_vertex_.end());
    Part& p = part();
    p.has_gpu = !ops.empty();
    std::vector<std::pair<Ns, Vertex>> by_issue;
    for (size_t li = 0; li < gpu_lanes_.size(); ++li) {
      const auto& vs = g_.lanes[gpu_lanes_[li]].vertices;
      for (size_t k = 0; k < vs.size(); ++k) by_issue.push_back({lane_issue_[li][k], vs[k]});
    }
    std::sort(by_issue.begin(), by_issue.end());
    for (auto [t, v] : by_issue) {
      p.gpu_by_issue.push_back(v);
      issue_.push_back(t);
    }
  }

  // The GPU lane running `stream`, or UINT32_MAX (index into gpu_lanes_).
  uint32_t lane_of_stream(int64_t stream) const {
    for (uint32_t i = 0; i < gpu_lanes_.size(); ++i)
      if (g_.lanes[gpu_lanes_[i]].id == stream) return i;
    return UINT32_MAX;
  }
  // The last op of a GPU lane issued before `t`, or kNoVertex.
  Vertex last_issued_before(uint32_t li, Ns t) const {
    const auto& is = lane_issue_[li];
    size_t k = size_t(std::lower_bound(is.begin(), is.end(), t) - is.begin());
    return k ? g_.lanes[gpu_lanes_[li]].vertices[k - 1] : kNoVertex;
  }
  Vertex first_issued_from(uint32_t li, Ns t) const {
    const auto& is = lane_issue_[li];
    size_t k = size_t(std::lower_bound(is.begin(), is.end(), t) - is.begin());
    return k < is.size() ? g_.lanes[gpu_lanes_[li]].vertices[k] : kNoVertex;
  }

  // Kineto's cuda_sync records (same correlation as their call) say which stream and which
  // event a wait is for; cudaEventRecord calls by correlation say when the event was recorded.
  struct SyncRecord { int64_t stream = -1, wait_on_stream = -1; Ns recorded = -1; };
  std::unordered_map<int64_t, EventId> sync_events_, record_calls_;
  bool sync_indexed_ = false;
  void index_sync_records() {
    if (sync_indexed_) return;
    sync_indexed_ = true;
    const auto& ev = m_.ev;
    for (EventId e = 0; e < ev.size(); ++e) {
      Cat c = ev.category(e);
      if (c == Cat::CudaSync) sync_events_.emplace(ev.id[e], e);
      else if (is_launch_cat(c) && m_.name_of(e).ends_with("EventRecord")) record_calls_.emplace(ev.id[e], e);
    }
  }
  SyncRecord sync_record(EventId call) {
    index_sync_records();
    SyncRecord r;
    auto it = sync_events_.find(m_.ev.id[call]);
    if (it == sync_events_.end()) return r;
    const EventArgs& args = m_.args();
    r.stream = args.integer(it->second, Arg::Stream);
    r.wait_on_stream = args.integer(it->second, Arg::WaitOnStream);
    auto rec = record_calls_.find(args.integer(it->second, Arg::WaitOnEventRecordCorrelation));
    if (rec != record_calls_.end()) r.recorded = m_.ev.start[rec->second];
    return r;
  }

  // Host calls that block until GPU work is done: their end waits for the last op, on each
  // stream they wait for, issued before them (or before the event they wait for was recorded).
  void add_host_waits() {
    for (const WaitCall& w : host_calls_) {
      ++g_.stats.host_waits[size_t(w.kind)];
      const Ns t = m_.ev.start[w.e];
      if (w.kind == HostWait::Copy) {
        if (Vertex op = gpu_vertex(m_.gpu_op_of(w.e)); op != kNoVertex) edge(end_point(op), end_point(w.v), EdgeKind::HostWait);
        continue;
      }
      uint32_t only = UINT32_MAX;
      Ns cutoff = t;
      if (w.kind != HostWait::Device) {
        SyncRecord r = sync_record(w.e);
        if (w.kind == HostWait::Stream && r.stream >= 0) only = lane_of_stream(r.stream);
        if (w.kind == HostWait::Event && r.wait_on_stream >= 0 && r.recorded >= 0) {
          only = lane_of_stream(r.wait_on_stream);
          cutoff = r.recorded;
        }
      }
      // Without the record: every stream (edges the timeline contradicts are dropped later).
      for (uint32_t li = 0; li < gpu_lanes_.size(); ++li) {
        if (only != UINT32_MAX && li != only) continue;
        if (Vertex op = last_issued_before(li, cutoff); op != kNoVertex) edge(end_point(op), end_point(w.v), EdgeKind::HostWait);
      }
    }
  }

  // cudaStreamWaitEvent: the waiting stream's next op starts after the op the event recorded.
  void add_stream_waits() {
    for (const WaitCall& w : stream_wait_calls_) {
      SyncRecord r = sync_record(w.e);
      uint32_t from = r.wait_on_stream >= 0 ? lane_of_stream(r.wait_on_stream) : UINT32_MAX;
      uint32_t to = r.stream >= 0 ? lane_of_stream(r.stream) : UINT32_MAX;
      Vertex a = from != UINT32_MAX && r.recorded >= 0 ? last_issued_before(from, r.recorded) : kNoVertex;
      Vertex b = to != UINT32_MAX ? first_issued_from(to, m_.ev.start[w.e]) : kNoVertex;
      if (a != kNoVertex && b != kNoVertex) {
        ++g_.stats.stream_waits_resolved;
      } else {
        // Without the record, the usual pattern: the event was recorded after the thread's
        // last launch before the cudaEventRecord that precedes the wait (or before the wait,
        // when the record call is not named), and the waiting stream is that of the thread's
        // next launch.
        const auto& vs = g_.lanes[g_.lane[w.v]].vertices;
        const auto at = std::lower_bound(vs.begin(), vs.end(), w.v);
        const auto lo = at - std::min<ptrdiff_t>(at - vs.begin(), kNearbyCalls);
        auto before = at;
        for (auto it = at; it != lo;)
          if (--it; g_.kind[*it] == VertexKind::Call && m_.name_of(g_.event[*it]).ends_with("EventRecord")) {
            before = it;
            break;
          }
        a = b = kNoVertex;
        for (auto it = before; it != lo && a == kNoVertex;)
          if (auto op = op_of_call_.find(*--it); op != op_of_call_.end()) a = op->second;
        for (auto it = at + 1, hi = at + std::min<ptrdiff_t>(vs.end() - at, kNearbyCalls); it < hi && b == kNoVertex; ++it)
          if (auto op = op_of_call_.find(*it); op != op_of_call_.end()) b = op->second;
        if (a == kNoVertex || b == kNoVertex || g_.lane[a] == g_.lane[b]) {
          ++g_.stats.stream_waits_unresolved;
          continue;
        }
        ++g_.stats.stream_waits_guessed;
      }
      edge(end_point(a), start_point(b), EdgeKind::StreamWaitEvent);
    }
  }

  // The launch → GPU op lag where the launch did not bind the op (it binds when a scenario
  // lets the GPU catch up): the shortest delay from a launch's end to its op's start seen
  // where the stream was free, at least 0.
  void set_launch_latency() {
    Ns latency = -1;
    for (size_t k : launch_edges_) {
      const Edge& e = g_.edges[k];
      Vertex v = vertex_of(e.to);
      Ns launch_end = g_.measured(e.from), prev_end = kMinTime;
      const auto& vs = g_.lanes[g_.lane[v]].vertices;
      auto it = std::lower_bound(vs.begin(), vs.end(), v);  // a lane's vertices are added in order
      if (it != vs.begin()) prev_end = g_.measured(end_point(*(it - 1)));
      if (prev_end <= launch_end) {
        Ns sample = std::max<Ns>(0, g_.start[v] - launch_end);
        latency = latency < 0 ? sample : std::min(latency, sample);
      }
    }
    latency = std::max<Ns>(latency, 0);
    part().launch_latency = latency;
    for (size_t k : launch_edges_) g_.edges[k].lag = latency;
  }

  // Each iteration's start and end on the training loop's thread.
  void add_boundaries() {
    Part& p = part();
    const auto& vs = g_.lanes[main_lane_].vertices;
    std::vector<Ns> gpu_end(p.gpu_by_issue.size());  // running max of the ops' measured ends
    for (size_t i = 0; i < gpu_end.size(); ++i)
      gpu_end[i] = std::max(i ? gpu_end[i - 1] : kMinTime, g_.measured(end_point(p.gpu_by_issue[i])));
    auto boundary = [&](Ns t) {
      Boundary b;
      auto it = std::upper_bound(vs.begin(), vs.end(), t + off_, [&](Ns x, Vertex v) { return x < g_.start[v]; });
      b.vertex = it == vs.begin() ? (vs.empty() ? kNoVertex : vs.front()) : *(it - 1);
      b.offset = b.vertex == kNoVertex ? 0 : std::max<Ns>(0, t + off_ - g_.start[b.vertex]);
      b.gpu_before = uint32_t(std::lower_bound(issue_.begin(), issue_.end(), t) - issue_.begin());
      b.gpu_lead = b.gpu_before ? std::max<Ns>(0, gpu_end[b.gpu_before - 1] - (t + off_)) : 0;
      return b;
    };
    if (first_ == last_) {
      p.boundaries.push_back(boundary(w0_));
      p.boundaries.push_back(boundary(w1_));
      p.partial.push_back(0);
    } else {
      for (size_t i = first_; i < last_; ++i) {
        const Iteration& it = a_.iterations[i];
        p.boundaries.push_back(boundary(it.begin));
        p.boundaries.push_back(boundary(it.end));
        p.partial.push_back(it.partial);
      }
    }
    const AnnotationTree& t = a_.tree;
    for (NodeId n = 0; n < t.size(); ++n)
      if (t.kind[n] == NodeKind::Phase && t.begin[n] >= w0_ && t.end[n] <= w1_)
        p.phases.push_back({n, boundary(t.begin[n]), boundary(t.end[n])});
    p.measured_median = a_.analyses.iter_median ? a_.analyses.iter_median : w1_ - w0_;
  }
};

// Sorts the edges by target and indexes them per point.
void index_edges(Graph& g) {
  std::stable_sort(g.edges.begin(), g.edges.end(), [](const Edge& x, const Edge& y) { return x.to < y.to; });
  g.in_begin.assign(2 * g.size() + 1, 0);
  for (const Edge& e : g.edges) ++g.in_begin[e.to + 1];
  for (size_t p = 0; p < 2 * g.size(); ++p) g.in_begin[p + 1] += g.in_begin[p];
}

// Sets every lag so that the measured timeline replays exactly (graph.h). Returns per edge
// whether it is kept.
std::vector<uint8_t> calibrate(Graph& g) {
  std::vector<uint8_t> keep(g.edges.size(), 1);
  for (Point q = 0; q < 2 * g.size(); ++q) {
    const Vertex v = vertex_of(q);
    const Ns tq = g.measured(q);
    Ns bound = kMinTime;
    size_t binding = SIZE_MAX;
    for (size_t k = g.in_begin[q]; k < g.in_begin[q + 1]; ++k) {
      Edge& e = g.edges[k];
      const Ns from = e.from == kNoPoint ? 0 : g.measured(e.from);
      if (from + e.lag > tq) {
        // A wait the timeline contradicts was no wait; order and launches contradicted by
        // a little are clock skew and keep the measured lag.
        const bool wait = e.kind == EdgeKind::StreamWaitEvent || e.kind == EdgeKind::HostWait || e.kind == EdgeKind::Collective;
        if (wait && from + e.lag - tq > kClockTolerance) {
          keep[k] = 0;
          ++g.stats.dropped_edges;
          continue;
        }
        e.lag = tq - from;
      }
      if (from + e.lag > bound) bound = from + e.lag, binding = k;
    }
    if (!is_end_point(q)) {
      if (binding == SIZE_MAX) continue;  // every start has an edge; kept for safety
      const Ns slack = tq - bound;
      g.edges[binding].lag += slack;
      if (g.kind[v] == VertexKind::GpuOp && slack > kInferredMin && g.edges[binding].kind != EdgeKind::Release) {
        ++g.stats.inferred_waits;
        g.stats.inferred_wait_time += slack;
      }
      continue;
    }
    // An end: the vertex's own work after its start, or (a blocking call, a collective) the
    // waits into it, then what it does after the last of them allowed it to finish.
    const Ns s = g.start[v];
    const bool blocked = binding != SIZE_MAX && bound > s;
    const Ns after = blocked ? tq - bound : g.dur[v];
    g.work[v] = after;
    for (size_t k = g.in_begin[q]; k < g.in_begin[q + 1]; ++k) {
      Edge& e = g.edges[k];
      if (!keep[k]) continue;
      if (e.kind == EdgeKind::Collective) {
        e.lag = std::min(after, tq - g.measured(e.from));
        e.scales = true;
      } else if (k == binding && blocked) {
        e.lag += after;
      }
    }
  }
  return keep;
}

// A topological order of the points (Kahn). Should a cycle remain (none is expected: every
// edge goes forward in measured time within the clock tolerance), the earliest stuck point's
// edges from unplaced points are dropped.
void order_points(Graph& g, std::vector<uint8_t>& keep) {
  const size_t np = 2 * g.size();
  std::vector<uint32_t> indeg(np, 0), out_begin(np + 1, 0), out;
  for (size_t k = 0; k < g.edges.size(); ++k)
    if (keep[k] && g.edges[k].from != kNoPoint) ++indeg[g.edges[k].to], ++out_begin[g.edges[k].from + 1];
  for (size_t p = 0; p < np; ++p) out_begin[p + 1] += out_begin[p];
  out.resize(out_begin[np]);
  {
    std::vector<uint32_t> fill(out_begin.begin(), out_begin.end() - 1);
    for (size_t k = 0; k < g.edges.size(); ++k)
      if (keep[k] && g.edges[k].from != kNoPoint) out[fill[g.edges[k].from]++] = uint32_t(k);
  }
  for (Vertex v = 0; v < g.size(); ++v) ++indeg[end_point(v)];
  g.order.clear();
  g.order.reserve(np);
  std::vector<uint8_t> placed(np, 0);
  auto release = [&](Point p) {
    for (uint32_t i = out_begin[p]; i < out_begin[p + 1]; ++i)
      if (keep[out[i]] && --indeg[g.edges[out[i]].to] == 0) g.order.push_back(g.edges[out[i]].to);
    if (!is_end_point(p) && --indeg[p + 1] == 0) g.order.push_back(p + 1);
  };
  for (Point p = 0; p < np; ++p)
    if (indeg[p] == 0) g.order.push_back(p);
  size_t head = 0;
  while (g.order.size() < np) {
    for (; head < g.order.size(); ++head) {
      placed[g.order[head]] = 1;
      release(g.order[head]);
    }
    if (g.order.size() == np) break;
    Point stuck = kNoPoint;
    for (Point p = 0; p < np; ++p)
      if (!placed[p] && indeg[p] > 0 && (stuck == kNoPoint || g.measured(p) < g.measured(stuck))) stuck = p;
    if (stuck == kNoPoint) break;  // cannot happen: every unplaced point waits for one
    for (size_t k = g.in_begin[stuck]; k < g.in_begin[stuck + 1]; ++k)
      if (keep[k] && g.edges[k].from != kNoPoint && !placed[g.edges[k].from]) {
        keep[k] = 0;
        ++g.stats.cycles_broken;
      }
    indeg[stuck] = is_end_point(stuck) && !placed[stuck - 1] ? 1 : 0;
    if (indeg[stuck] == 0) g.order.push_back(stuck);
    else {  // its own start is stuck too: free that first
      indeg[stuck - 1] = 0;
      for (size_t k = g.in_begin[stuck - 1]; k < g.in_begin[stuck]; ++k)
        if (keep[k] && g.edges[k].from != kNoPoint && !placed[g.edges[k].from]) keep[k] = 0, ++g.stats.cycles_broken;
      g.order.push_back(stuck - 1);
    }
  }
}

// A GPU op that started later than all it is known to wait for, just after an op of another
// stream of its device ended, waited for that op (an event the trace did not record): that
// wait becomes an edge, so that the op moves when the one it waited for does.
void infer_gpu_dependencies(Graph& g) {
  struct End { Ns t; Vertex v; };
  std::unordered_map<uint64_t, std::vector<End>> by_device;  // (part, device) → GPU ops by end
  auto device_key = [&](Vertex v) { return uint64_t(g.part_of(v)) << 32 | uint32_t(g.lanes[g.lane[v]].device); };
  for (Vertex v = 0; v < g.size(); ++v)
    if (g.kind[v] == VertexKind::GpuOp) by_device[device_key(v)].push_back({g.start[v] + g.dur[v], v});
  for (auto& [k, ends] : by_device) std::sort(ends.begin(), ends.end(), [](const End& a, const End& b) { return a.t < b.t; });
  size_t added = 0;
  for (Vertex v = 0; v < g.size(); ++v) {
    if (g.kind[v] != VertexKind::GpuOp) continue;
    const Point q = start_point(v);
    const Ns tq = g.measured(q);
    Ns bound = kMinTime;
    for (size_t k = g.in_begin[q]; k < g.in_begin[q + 1]; ++k) {
      const Edge& e = g.edges[k];
      bound = std::max(bound, (e.from == kNoPoint ? 0 : g.measured(e.from)) + e.lag);
    }
    if (tq - bound <= kInferredMin) continue;
    const auto& ends = by_device[device_key(v)];
    auto it = std::upper_bound(ends.begin(), ends.end(), tq + kClockTolerance, [](Ns t, const End& x) { return t < x.t; });
    while (it != ends.begin() && g.lane[(it - 1)->v] == g.lane[v]) --it;
    if (it == ends.begin()) continue;
    const End& u = *(it - 1);
    if (u.t <= bound || tq - u.t > kDependencyWindow) continue;
    g.edges.push_back({end_point(u.v), q, 0, EdgeKind::GpuDependency});
    ++g.stats.edges[size_t(EdgeKind::GpuDependency)];
    ++added;
  }
  g.stats.inferred_dependencies = added;
  if (added) index_edges(g);
}

void finish(Graph& g) {
  index_edges(g);
  infer_gpu_dependencies(g);
  std::vector<uint8_t> keep = calibrate(g);
  order_points(g, keep);
  // Drop what calibration and ordering rejected, and index again.
  size_t w = 0;
  for (size_t k = 0; k < g.edges.size(); ++k)
    if (keep[k]) g.edges[w++] = g.edges[k];
    else --g.stats.edges[size_t(g.edges[k].kind)];
  g.edges.resize(w);
  index_edges(g);
  if (g.stats.inferred_waits)
    g.notes.push_back(std::to_string(g.stats.inferred_waits) +
                      " GPU ops started later than anything in the trace explains: the delay is kept as an inferred wait");
  if (g.stats.stream_waits_guessed)
    g.notes.push_back(std::to_string(g.stats.stream_waits_guessed) +
                      " cudaStreamWaitEvent calls have no cuda_sync record naming their streams: each is taken to wait for the op "
                      "launched before the thread's previous cudaEventRecord, on the stream of its next launch");
  if (g.stats.stream_waits_unresolved)
    g.notes.push_back(std::to_string(g.stats.stream_waits_unresolved) +
                      " cudaStreamWaitEvent calls could not be placed: what they made a stream wait for is an inferred wait");
}

}  // namespace

Graph build_graph(const TraceModel& m, const Annotation& a, const Progress* progress, IterationRange range) {
  Graph g;
  if (!TraceBuilder(g, m, a, m.distributed.rank, 0, range).build(progress)) {
    Graph none;
    none.status = Status::cancelled();
    return none;
  }
  finish(g);
  return g;
}

Graph build_job_graph(const Job& job) {
  Graph g;
  std::vector<std::unique_ptr<TraceBuilder>> builders(job.data.size());
  std::vector<std::vector<EventId>> collectives(job.data.size());
  for (size_t d = 0; d < job.data.size(); ++d) {
    const JobRank& r = job.ranks[job.data_rank[d]];
    if (!r.model || !r.annotation) {
      g.notes.push_back("rank " + std::to_string(r.file.rank) + " left out: its trace was not kept in memory");
      continue;
    }
    const Ns offset = d < job.analysis.clock_offset.size() ? job.analysis.clock_offset[d] : 0;
    builders[d] = std::make_unique<TraceBuilder>(g, *r.model, *r.annotation, r.file.rank, offset);
    builders[d]->build();
    collectives[d] = collective_kernels(*r.model);
  }
  // A collective ends on no rank before every member has arrived.
  for (const JobAnalysis::Instance& in : job.analysis.instances) {
    std::vector<Vertex> members;
    for (const JobAnalysis::Instance::Member& mb : in.members) {
      if (mb.rank >= builders.size() || !builders[mb.rank] || mb.collective >= collectives[mb.rank].size()) continue;
      Vertex v = builders[mb.rank]->gpu_vertex(collectives[mb.rank][mb.collective]);
      if (v != kNoVertex) members.push_back(v);
    }
    if (members.size() < 2) continue;
    ++g.stats.collectives_coupled;
    for (Vertex x : members)
      for (Vertex y : members)
        if (x != y) {
          g.edges.push_back({start_point(x), end_point(y), 0, EdgeKind::Collective, true});
          ++g.stats.edges[size_t(EdgeKind::Collective)];
        }
  }
  finish(g);
  return g;
}

}  // namespace strata::whatif
