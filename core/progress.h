// Progress and cancellation shared between a worker and whoever watches it (the UI, the CLI).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace strata {

// Every stage a trace goes through, from the file to what a front end shows, in order.
enum class Stage : uint8_t {
  Starting,
  Reading,      // the file into memory (done/total: bytes)
  Parsing,      // JSON into event chunks (bytes)
  Building,     // chunks into the model
  Structure,    // annotation passes (done/total: passes)
  Iterations,   // iterations and phases
  Layers,       // layers, backward mapping, the tree
  Metrics,      // per-node GPU time and what bounds it
  Reduction,    // noise reduction
  Analyses,     // whole-trace analyses
  View,         // the viewer's rows and tiers
  Done,
};
inline constexpr int kAnnotationPasses = int(Stage::Analyses) - int(Stage::Structure) + 1;
const char* stage_name(Stage s);  // "parsing", "annotating: layers", …

struct Progress {
  std::atomic<uint64_t> done{0};   // units of work finished in this stage (see Stage)
  std::atomic<uint64_t> total{0};
  std::atomic<Stage> stage{Stage::Starting};
  std::atomic<bool> cancel{false};
  // Called on the worker's thread as each stage begins (tests cancel at a chosen stage).
  std::function<void(Stage)> on_stage;
  const Progress* parent = nullptr;  // one part of a larger job: its cancel stops this too

  void enter(Stage s) {
    stage = s;
    if (on_stage) on_stage(s);
  }
  bool cancelled() const { return cancel.load(std::memory_order_relaxed) || (parent && parent->cancelled()); }
  double fraction() const {
    uint64_t t = total.load(std::memory_order_relaxed);
    return t ? double(done.load(std::memory_order_relaxed)) / double(t) : 0.0;
  }
};

}  // namespace strata
