// Annotation tiers drawn above the tracks: Iterations, Phases, Layers. Each tier is columnar,
// sorted by (level, start), each level non-overlapping, so it is laid out like a track.
//
// The annotation (core/annotate) feeds these; until a trace has been annotated, the
// Iterations tier comes from ProfilerStep#N ranges (`provisional_tiers`).
#pragma once

#include "core/trace_model.h"
#include "render/palette.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace strata {
struct Annotation;
}

namespace strata::render {

enum class TierKind : uint8_t { Iteration, Phase, Layer, Other };

struct Tier {
  std::string title;   // "Iterations"
  TierKind kind = TierKind::Other;
  std::vector<Ns> start, dur;
  std::vector<uint32_t> name;    // index into `names`
  std::vector<Rgba> colour;
  std::vector<EventId> ref;      // the trace event a span stands for (a ProfilerStep, a module), or kNoEvent
  std::vector<uint8_t> backward; // layer spans: 1 when this is backward work of the layer
  std::vector<IndexRange> levels;     // by nesting depth
  std::vector<std::string> names;

  size_t size() const { return start.size(); }
  std::string_view name_of(uint32_t i) const { return names[name[i]]; }
  // Appends a span; callers add spans level by level in start order, then call finish().
  void add(uint16_t level, Ns s, Ns d, std::string_view n, Rgba c, EventId r = kNoEvent, bool bwd = false);
  void finish();  // sorts by (level, start) and fills `levels`
  // The span at `level` containing t, or UINT32_MAX.
  uint32_t span_at(uint16_t level, Ns t) const;

 private:
  std::vector<uint16_t> level_;
  std::unordered_map<std::string, uint32_t> intern_;  // while adding
};

struct Tiers {
  std::vector<Tier> tiers;
  bool annotated = false;  // from the annotation, not the provisional ProfilerStep tier
  size_t bytes() const;
};

// Iterations from the trace's ProfilerStep#N ranges ("Iteration N").
Tiers provisional_tiers(const TraceModel& m);

// The annotation's tiers (core/annotate): Iterations, Phases (coloured by phase) and Layers
// (nested by depth; a backward layer takes its forward layer's hue, one step darker).
// Falls back to the provisional tiers when the annotation found no iterations.
Tiers tiers_from_annotation(const TraceModel& m, const Annotation& a);

}  // namespace strata::render
