// How well the hardware is used: the work of every kernel (FLOPs and bytes, from the shapes of
// the op that launched it, or from the range profiler's counters) against its device's roofline,
// per kernel, kernel class, layer and phase (docs/efficiency.md).
//
// A kernel's work comes from the innermost CPU op around its launch that the model knows
// (op_work.h): `aten::addmm` rather than the `aten::linear` around it. An op's kernels share its
// work in proportion to their time, so they show one achieved rate; an op that launches kernels
// itself and through inner ops the model knows keeps its work less theirs. Kernels of ops the
// model does not know, or whose shapes were not recorded, have no work: they are counted and
// named, never guessed.
#pragma once

#include "core/efficiency/op_work.h"
#include "core/efficiency/roofline.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace strata {

struct Annotation;
class JsonWriter;
enum class PhaseKind : uint8_t;

enum class WorkSource : uint8_t { None, Shapes, Counters };
const char* work_source_name(WorkSource s);  // "none", "shapes", "counters"

// Why a kernel ran faster than its roof allows, where the trace shows it: two identical inputs
// were one tensor (its bytes then count it once), its data fitted in the last-level cache (no
// memory roof applies), or a fast algorithm (Winograd, FFT) did fewer operations than the
// direct count. The last two leave its share of the roofline unknown.
enum class RoofNote : uint8_t { None, SameInput, Cached, FastAlgorithm };

// One kernel (or a range-profiler range standing for a kernel the trace does not hold).
struct KernelWork {
  EventId kernel = kNoEvent;
  EventId op = kNoEvent;      // the op whose work it carries (kNoEvent: none known)
  int32_t device = -1;
  KernelClass cls = KernelClass::Other;
  WorkSource source = WorkSource::None;
  Precision precision = Precision::Unknown;
  bool estimated = false;     // part of the op's work was assumed (OpWork::assumption)
  RoofNote note = RoofNote::None;
  Ns time = 0;                // its duration (a range: the measured duration counter)
  double flops = 0, bytes = 0;
  double peak = 0;            // the FLOP/s it runs against (0: no roofline)
  double bandwidth = 0;       // bytes/s
  // Its time at the roofline, max(flops / peak, bytes / bandwidth), in ns; -1 unknown (no
  // work, no roofline, or a roof that does not apply: RoofNote).
  double roofline_ns() const;
  bool compute_bound() const { return peak > 0 && bandwidth > 0 && flops / peak >= bytes / bandwidth; }
  double roofline_share() const;  // roofline_ns / time; -1 unknown
};

// Kernels grouped (a class, a kernel name, a layer, a phase).
struct EfficiencyStat {
  std::string name;
  uint64_t kernels = 0, modelled = 0;  // all, and those with work
  Ns time = 0, modelled_time = 0;      // summed durations
  double flops = 0, bytes = 0;         // of the modelled ones
  Ns roofline_time = 0;                // time of modelled kernels with a roofline
  double roofline_ns = 0;              // their time at the roofline
  double compute_ns = 0, memory_ns = 0;  // their Σ flops / peak and Σ bytes / bandwidth
  Ns compute_bound_time = 0;           // time of those bound by compute
  void add(const KernelWork& k);
  double flop_per_s() const { return modelled_time > 0 ? flops * 1e9 / double(modelled_time) : 0; }
  double bytes_per_s() const { return modelled_time > 0 ? bytes * 1e9 / double(modelled_time) : 0; }
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOP per byte
  // Share of the roofline: the time its modelled kernels would take at the roofline over the
  // time they took (1: every kernel at its roof); -1 without a roofline.
  double roofline_share() const { return roofline_time > 0 ? roofline_ns / double(roofline_time) : -1; }
  bool compute_bound() const { return compute_ns >= memory_ns; }
};

struct PhaseEfficiency {
  EfficiencyStat stat;  // stat.name: the phase's name
  PhaseKind kind{};
  std::string sentence;  // "Backward is GPU-bound at 31% of the roofline: 58% of its time …"
};

// An op whose kernels have no work: the model does not know it, or it recorded no shapes.
struct UnmodelledOp {
  std::string name;
  WorkModel why = WorkModel::Unknown;
  uint64_t calls = 0, kernels = 0;
  Ns time = 0;
};

struct DeviceRoofline {
  int32_t device = -1;
  std::string trace_name;  // as deviceProperties name it
  DevicePeaks peaks;       // empty name: not in the table (and no figures given)
};

struct Efficiency {
  std::vector<DeviceRoofline> devices;
  std::vector<KernelWork> kernels;  // every kernel, by event
  EfficiencyStat total;
  std::vector<EfficiencyStat> classes;  // by KernelClass, those with kernels
  std::vector<EfficiencyStat> kernel_names, layers;  // by time, descending
  std::vector<PhaseEfficiency> phases;               // as the summary orders phases
  std::vector<UnmodelledOp> unmodelled;              // by kernel time, descending
  uint64_t ops_modelled = 0, ops_estimated = 0;      // distinct ops whose work is known; of them assumed in part
  uint64_t kernels_without_op = 0;                   // no launch or no CPU op around it
  uint64_t kernels_from_counters = 0;
  uint64_t same_input = 0, cached = 0, fast_algorithm = 0;  // kernels with that RoofNote
  std::vector<std::string> assumptions;  // what was assumed, each once
  std::vector<std::string> notes;
};

// The figures of a trace (annotate() runs it with AnnotateOptions::roofline). `parents`: per
// event, the event around it on its track (the annotator's column; TraceModel::parent_of's
// answers, looked up once).
Efficiency hardware_efficiency(const TraceModel& m, const Annotation& a, const RooflineOverride& roofline,
                               std::span<const EventId> parents, unsigned threads);

// The summary's block: text lines, and the fields of its `efficiency` JSON object.
std::string efficiency_text(const Efficiency& e);
void write_efficiency_fields(JsonWriter& w, const Efficiency& e);

}  // namespace strata
