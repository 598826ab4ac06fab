// A distributed job: one trace per rank, and what joins them (rank, clock offset, the
// collectives they share). Per-rank analysis is independent and its result small
// (`RankData`); the job's analyses (clock alignment, stragglers, communication per layer)
// run on those alone, so summaries made anywhere merge into the same answer.
#pragma once

#include "core/annotate/annotation.h"
#include "core/loader.h"

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace strata {

// How a collective was charged to layers (docs/jobs.md, "Communication per layer"):
//   Bucket     a gradient reduction in backward (a DDP bucket, an FSDP reduce-scatter): the
//              layers whose backward began since its group's previous one was launched (those
//              that finished in between, and the one whose gradient filled it), by gradient-
//              ready order; several share it by their backward GPU time (estimated)
//   Overlap    the innermost layer whose span holds its launch (the layer that issued it)
//   NextLayer  launched between layers: the next layer of its phase (an FSDP prefetch)
//   Phase      no layer: its phase
enum class CommAttribution : uint8_t { Bucket, Overlap, NextLayer, Phase, Count };
const char* comm_attribution_name(CommAttribution a);  // "bucket (gradient-ready order)", "overlap", …

// What one rank's trace holds that the job's analyses need.
struct RankData {
  int64_t rank = -1;
  int64_t world_size = -1;
  std::string file;
  std::vector<std::string> names;  // layer, kernel, collective and group names, by index below

  struct IterationTime {
    int64_t step = -1;  // ProfilerStep number, else the iteration's index
    Ns begin = 0, end = 0;
    bool partial = false;
  };
  std::vector<IterationTime> iterations;
  struct PhaseSpan {
    int64_t step = -1;
    PhaseKind phase = PhaseKind::Other;
    Ns begin = 0, end = 0;
  };
  std::vector<PhaseSpan> phases;  // each iteration's phases, in time order (the job's overview rows)

  // Where a rank's time went in a stretch of its timeline.
  struct Part {
    uint32_t name = 0;
    Ns cpu = 0, gpu = 0;  // CPU span within the stretch; GPU compute busy of its kernels within it
  };
  struct Breakdown {
    std::array<Ns, size_t(PhaseKind::Count)> phase_cpu{};  // CPU span of each phase
    std::array<Ns, size_t(PhaseKind::Count)> phase_gpu{};  // GPU compute busy of each phase's kernels
    std::array<Ns, size_t(IdleCause::Count)> idle{};       // GPU idle, by cause
    Ns gpu_compute = 0;                                     // GPU compute busy
    std::vector<Part> layers;                               // leaf layers, most time first (at most 8)
    std::vector<Part> kernels;                              // compute kernels by name (gpu only, at most 8)
  };

  struct Collective {
    uint32_t kind = 0;   // name index: "allreduce", "broadcast", "allgather", "reducescatter", "sendrecv", …
    uint32_t group = 0;  // name index: the process group ("default" when the trace does not say)
    uint32_t group_size = 0;
    int64_t step = -1;   // of the iteration it was launched in (-1: outside every iteration)
    uint32_t index = 0;  // its place among its group's collectives in that step (in the trace without steps)
    Ns launch = 0, start = 0, end = 0;  // host launch; the GPU kernel (the rank's own clock)
    int64_t bytes = -1;  // input bytes when the trace says
    PhaseKind phase = PhaseKind::Other;  // of its launch
    Ns exposed = 0;                      // kernel time not overlapped by compute on this rank
    Breakdown before;                    // from the previous collective's end to its start
    // The layers it is charged to, each with its share of the collective's time, bytes and
    // exposed time (the shares sum to 1); none: it is charged to its phase.
    struct LayerShare {
      uint32_t name = 0;  // name index: the forward layer's path ("ResNet_0/layer1/conv1")
      double share = 0;
      bool operator==(const LayerShare&) const = default;
    };
    std::vector<LayerShare> layers;
    CommAttribution attribution = CommAttribution::Phase;
    bool estimated = false;  // the shares are a guess (a bucket of several layers: by their backward GPU time)
  };
  std::vector<Collective> collectives;  // by start

  Ns iter_mean = 0, iter_median = 0;
  double utilization = 0;  // GPU busy share of the iterations' window (mean over devices)
  Ns window = 0, compute = 0, communication = 0, overlap = 0;

  uint32_t intern(std::string_view s);
};

// A trace's collective kernels (NCCL / RCCL), by start: `RankData::collectives` in order.
std::vector<EventId> collective_kernels(const TraceModel& m);
// A collective's input bytes (its input message's elements × the dtype's size), or -1.
int64_t collective_bytes(const TraceModel& m, EventId kernel);

// The rank's data from its model and annotation (`rank` is the job's rank number for it).
RankData rank_data(const TraceModel& m, const Annotation& a, int64_t rank);

// A leaf layer's stretch of a rank's timeline, what collectives are charged to.
struct LayerSpan {
  uint32_t name = 0;                  // name index: the forward layer's path (as in LayerShare)
  PhaseKind phase = PhaseKind::Other;
  Ns begin = 0, end = 0;              // host span
  Ns gpu = 0;                         // GPU time of its own kernels (not its nested layers')
  bool gradients = false;             // a backward layer differentiating a forward layer
};
// Charges each of `r.collectives` to layers (fills `layers`, `attribution`, `estimated`) from
// its kind, phase and launch, `r.phases` and the rank's leaf layers (rank_data calls it).
void attribute_collectives(RankData& r, std::vector<LayerSpan> spans);

// The job's analyses over its ranks' data (`ranks[i]` below is the i-th of that vector, which
// is in rank order).
struct JobAnalysis {
  std::vector<Ns> clock_offset;  // per rank: added to its timestamps to put it on the reference clock
  int64_t reference_rank = -1;
  uint64_t aligned_by = 0;  // collective instances the offsets were measured on

  // One collective as every member saw it, on the reference clock.
  struct Instance {
    std::string kind, group;
    int64_t step = -1;
    uint32_t index = 0;
    struct Member {
      uint32_t rank = 0;  // index into the ranks' data
      uint32_t collective = 0;  // index into that rank's collectives
      Ns arrival = 0, duration = 0, wait = 0;  // wait: its duration minus the group's shortest
    };
    std::vector<Member> members;
    uint32_t last = 0;  // index into members: the one that arrived last
    Ns delay = 0;       // how much later than the second to last it arrived
  };
  std::vector<Instance> instances;

  // Per rank and step: how long it waited for others in collectives, and how long it made
  // the others wait (the delay of the collectives it arrived at last).
  struct StepWait {
    uint32_t rank = 0;  // index into the ranks' data
    int64_t step = -1;
    Ns waited = 0, caused = 0;
  };
  std::vector<StepWait> step_waits;  // by rank, then step
  const StepWait* step_wait(uint32_t rank, int64_t step) const;

  struct Straggler {
    int64_t rank = -1;
    int64_t step = -1;
    Ns delay = 0;            // the others' wait that it caused in that step
    std::string phase;       // where its time went instead …
    std::string layer;
    std::string kernel;
    std::string cause;       // "kernels", "data loading", "CPU-side gap: launch overhead", …
    uint32_t instance = 0;   // the collective it held up most
  };
  std::vector<Straggler> stragglers;  // by delay, largest first

  struct Comm {
    std::string name;  // a layer path, a collective kind or a phase
    uint64_t count = 0;
    int64_t bytes = 0;
    Ns time = 0, exposed = 0;  // per rank (mean over ranks)
    // Layers: how their collectives were charged (a bit per CommAttribution) and whether a
    // share of one was estimated; a phase's row in `comm_layers` holds the uncharged ones.
    uint8_t attributions = 0;
    bool estimated = false;
  };
  std::vector<Comm> comm_layers, comm_kinds, comm_phases;
  std::vector<std::string> notes;
};

// Aligns the ranks' clocks by the collectives they share, matches every collective across its
// group, finds the stragglers and where their time went, and maps communication to layers.
// `ranks` must be in rank order.
JobAnalysis analyze_job(const std::vector<RankData>& ranks);

// The job's summary (schema: docs/summary-json.md, "Jobs").
std::string job_summary_json(const std::vector<RankData>& ranks, const JobAnalysis& j);
std::string job_summary_text(const std::vector<RankData>& ranks, const JobAnalysis& j);

// `strata summary FILE --json`: the trace's summary with its rank's data (`rank_data`), which
// `strata summary --merge` reads back.
std::string rank_summary_json(const TraceModel& m, const Annotation& a, const RankData& r);
// A rank's data as JSON (the `rank_data` of `strata summary FILE --json`) and back.
void write_rank_data(JsonWriter& w, const RankData& r);
// Reads the `rank_data` object of a summary file's JSON; fails when it has none or it is
// malformed.
Result<RankData> read_rank_data(std::string_view summary_json);

// Opening a job: every trace of it.
struct JobFile {
  std::string path;
  int64_t rank = -1;  // from distributedInfo, else the name (rank-3, rank3, worker3), else the order
  uint64_t bytes = 0;
};
// The trace files named (directories: the traces in them), in rank order once loaded.
Result<std::vector<JobFile>> job_files(const std::vector<std::string>& inputs);
// The rank a file's name gives ("rank-3", "rank3", "worker_3"), or -1.
int64_t rank_from_name(std::string_view path);

struct JobRank {
  JobFile file;
  std::unique_ptr<TraceModel> model;  // null when dropped to stay within the memory budget
  std::unique_ptr<Annotation> annotation;
  Status status;                      // not ok: the load failed (or was cancelled), left out of `data` and the analysis
};
struct Job {
  std::vector<JobRank> ranks;  // by rank, failed ones included
  std::vector<RankData> data;  // the loaded ranks', in rank order
  std::vector<uint32_t> data_rank;  // per entry of `data`: its index in `ranks`
  JobAnalysis analysis;
  uint64_t budget_bytes = 0;   // models kept in memory up to this much (see memory_budget)
  bool summaries_only = false; // the job did not fit: models were dropped after their summary
};
struct JobOptions {
  uint64_t budget_bytes = 0;  // 0: memory_budget()
  bool keep_models = true;    // keep models within the budget (the viewer); false: summaries only
  unsigned workers = 0;       // ranks loaded at once (0: one per core, fewer when the budget says)
  // Each rank's summary as soon as it is made (called from a loading thread, once per rank
  // that loads): a viewer shows the ranks as they arrive instead of waiting for the last.
  std::function<void(const RankData&)> on_rank;
};
// Models kept in memory at most: STRATA_MEMORY_BUDGET (bytes, or with a K/M/G suffix), else half
// of the machine's physical memory.
uint64_t memory_budget();
// Loads and annotates every rank (several at once), then analyses the job. Files that fail
// to load are reported in their JobRank's status and left out of the analysis.
Job load_job(const std::vector<JobFile>& files, const JobOptions& options, Progress* progress = nullptr);

}  // namespace strata
