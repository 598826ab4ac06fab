// The dependency graph of a trace's iterations, for what-if replay (after Daydream, ATC'20).
//
// Vertices are what takes time: CPU work between CUDA calls on a thread (its idle stretches,
// where it runs no op, apart), the calls themselves (launches, host waits, other calls), and
// GPU ops on a stream. Each vertex has a
// start point and an end point; edges join points with a lag: "this point comes at least
// `lag` after that one". Edges are program order on a CPU thread, stream order on a GPU
// stream, launch → GPU op, a stream waiting for another stream's event, a host call waiting
// for GPU work, a thread resuming after another thread's work (inferred: an idle stretch that
// ends just after a point of a thread that was busy meanwhile, as the training loop waits for
// the autograd thread's backward and the autograd thread for the loop's call), and (jobs) a
// collective that cannot end on any rank before every rank has arrived.
//
// Every lag is calibrated on the measured timeline, so that replaying the graph unchanged
// gives back the measured times: the edge that bound a point (the last predecessor to allow
// it) keeps the measured delay, the others keep a floor. A GPU op that started later than
// every known predecessor allowed waited for something the trace does not show: that delay
// is kept as a fixed "inferred wait" on its binding edge and counted.
#pragma once

#include "core/annotate/annotation.h"
#include "core/base/status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace strata {
struct Job;
}

namespace strata::whatif {

using Vertex = uint32_t;
inline constexpr Vertex kNoVertex = UINT32_MAX;
// A vertex's start (2v) or end (2v + 1).
using Point = uint32_t;
inline constexpr Point kNoPoint = UINT32_MAX;
inline Point start_point(Vertex v) { return 2 * v; }
inline Point end_point(Vertex v) { return 2 * v + 1; }
inline Vertex vertex_of(Point p) { return p / 2; }
inline bool is_end_point(Point p) { return p & 1; }

enum class VertexKind : uint8_t {
  CpuWork,   // a thread's time between CUDA calls (busy in ops or idle: both kept as measured)
  Launch,    // a call that puts work on a GPU stream (cudaLaunchKernel, cudaMemcpyAsync, …)
  HostWait,  // a call that blocks until GPU work is done (syncs, synchronous copies)
  Call,      // any other CUDA call (cudaMalloc, cudaEventRecord, cudaStreamWaitEvent, …)
  GpuOp,     // a kernel, copy or set on a stream
};
inline constexpr size_t kVertexKinds = 5;
const char* vertex_kind_name(VertexKind k);

enum class EdgeKind : uint8_t {
  Release,          // from a fixed time: the first vertex of a lane, a GPU op whose launch is not in the window
  CpuOrder,         // program order on a thread
  StreamOrder,      // order of ops on a GPU stream
  Launch,           // launch call's end → its GPU op's start
  StreamWaitEvent,  // the op an event recorded → the next op of the stream that waits for it
  HostWait,         // GPU op's end → the end of the host call that waits for it
  Collective,       // a member's arrival (start) → another member's end
  Wake,             // another thread's point → the end of a thread's idle stretch it resumed after
  GpuDependency,    // (inferred) another stream's op end → the start of a GPU op that waited for it
  Count
};
const char* edge_kind_name(EdgeKind k);

struct Edge {
  Point from = kNoPoint;  // kNoPoint: `lag` is a fixed time on the graph's clock
  Point to = 0;
  Ns lag = 0;
  EdgeKind kind = EdgeKind::Release;
  bool scales = false;  // the lag is the target's own work (a collective's transfer): it scales with it
};

struct Lane {
  bool gpu = false;
  uint32_t part = 0;
  uint32_t track = kNoTrack;  // the CPU thread's or GPU stream's track in its part's model
  int32_t device = -1;
  int64_t id = 0;  // thread id or stream id
  std::vector<Vertex> vertices;  // in program / stream order
};

// A place on the main thread's timeline: an iteration's start (or the window's end).
struct Boundary {
  Vertex vertex = kNoVertex;
  Ns offset = 0;          // into the vertex (0 unless a call straddles the boundary)
  uint32_t gpu_before = 0;  // GPU ops issued before it: a prefix of the part's `gpu_by_issue`
  Ns gpu_lead = 0;        // how far the GPU work issued before it ran past it, as measured
};

// One trace (one rank of a job). The graph points at its model and annotation: they must
// outlive it.
struct Part {
  const TraceModel* model = nullptr;
  const Annotation* annotation = nullptr;
  int64_t rank = -1;
  Ns clock_offset = 0;  // added to the trace's times (jobs: onto the reference clock)
  std::vector<Boundary> boundaries;  // each iteration's start and end, in turn (2i, 2i + 1)
  struct PhaseSpan { NodeId node; Boundary begin, end; };
  std::vector<PhaseSpan> phases;     // each phase node of the annotation, its start and end
  std::vector<uint8_t> partial;      // per iteration: cut by the trace's edge
  std::vector<Vertex> gpu_by_issue;  // GPU ops by the time they were issued (launched)
  Ns measured_median = 0;            // the annotation's median iteration
  Ns launch_latency = 0;             // shortest launch end → GPU start where the stream was free
  bool whole_trace = false;          // no iterations were found: the window is the whole trace
  bool has_gpu = false;
};

struct GraphStats {
  std::array<uint64_t, size_t(EdgeKind::Count)> edges{};
  uint64_t inferred_dependencies = 0;  // GPU ops found waiting for another stream's op (GpuDependency edges)
  uint64_t inferred_waits = 0;  // GPU ops that started later than every known predecessor allowed
  Ns inferred_wait_time = 0;
  uint64_t dropped_edges = 0;   // waits the measured timeline contradicts (the GPU op ended after the call returned)
  uint64_t host_waits[6] = {};  // HostWait calls by kind (index: HostWait value)
  // cudaStreamWaitEvent: placed by its cuda_sync record, by the calls around it, or not at all.
  uint64_t stream_waits_resolved = 0, stream_waits_guessed = 0, stream_waits_unresolved = 0;
  uint64_t collectives_coupled = 0;  // collective instances joined across ranks
  uint64_t idle_stretches = 0, wakes = 0;  // a thread's idle stretches, and those that resumed after another thread
  uint64_t cycles_broken = 0;   // edges dropped to keep the graph acyclic (none expected)
};

struct Graph {
  // Per vertex.
  std::vector<VertexKind> kind;
  std::vector<Ns> start, dur;  // measured, on the graph's clock
  std::vector<Ns> work;        // the part of `dur` that scales: less what a blocking call or a collective waited
  std::vector<EventId> event;  // the trace event (the first one for merged calls), kNoEvent for CPU work
  std::vector<uint32_t> lane;
  std::vector<NodeId> node;    // annotation node (layer, op), or kNoNode
  std::vector<PhaseKind> phase;
  // Per point: edges into it are in_edges[in_begin[p], in_begin[p + 1]).
  std::vector<Edge> edges;     // sorted by target point
  std::vector<uint32_t> in_begin;
  std::vector<Point> order;    // a topological order of the points
  std::vector<Lane> lanes;
  std::vector<Part> parts;
  GraphStats stats;
  std::vector<std::string> notes;
  Status status;  // Cancelled when the build was: the graph is then empty

  size_t size() const { return kind.size(); }
  uint32_t part_of(Vertex v) const { return lanes[lane[v]].part; }
  Ns measured(Point p) const { return is_end_point(p) ? start[vertex_of(p)] + dur[vertex_of(p)] : start[vertex_of(p)]; }
};

// Which of the annotation's iterations a graph holds: `count` from `first` (all by default).
struct IterationRange {
  size_t first = 0, count = SIZE_MAX;
};
// The graph of one trace's iterations (the whole trace when it has none).
// `progress` (optional) is checked as the build goes: a cancelled build returns an empty graph
// whose status is Cancelled.
Graph build_graph(const TraceModel& m, const Annotation& a, const Progress* progress = nullptr, IterationRange range = {});
// A job's: every rank's graph on the reference clock, collectives coupled across ranks. The
// job must keep its models (JobOptions::keep_models); ranks without one are left out.
Graph build_job_graph(const Job& job);

}  // namespace strata::whatif
