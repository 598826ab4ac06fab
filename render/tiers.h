// Annotation tiers drawn above the tracks: Iterations, Phases, Layers. Each tier is columnar,
// sorted by (level, start), each level non-overlapping, so it is laid out like a track. Every
// span is a node of the annotation tree (core/annotate), whose figures the panels read.
#pragma once

#include "core/annotate/annotation.h"
#include "render/palette.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace strata::render {

enum class TierKind : uint8_t { Iteration, Phase, Layer, Other };

struct Tier {
  std::string title;   // "Iterations"
  TierKind kind = TierKind::Other;
  std::vector<Ns> start, dur;
  std::vector<uint32_t> name;    // index into `names`
  std::vector<Rgba> colour;
  std::vector<EventId> ref;      // the trace event a span stands for (a ProfilerStep, a module), or kNoEvent
  std::vector<NodeId> node;      // the annotation tree's node
  std::vector<uint8_t> backward; // layer spans: 1 when this is backward work of the layer
  std::vector<IndexRange> levels;     // by nesting depth
  std::vector<std::string> names;

  size_t size() const { return start.size(); }
  std::string_view name_of(uint32_t i) const { return names[name[i]]; }
  // Appends a span; callers add spans level by level in start order, then call finish().
  void add(uint16_t level, Ns s, Ns d, std::string_view n, Rgba c, NodeId nd, EventId r = kNoEvent, bool bwd = false);
  void finish();  // sorts by (level, start) and fills `levels`
  // The span at `level` containing t, or UINT32_MAX.
  uint32_t span_at(uint16_t level, Ns t) const;

 private:
  std::vector<uint16_t> level_;
  std::unordered_map<std::string, uint32_t> intern_;  // while adding
};

struct Tiers {
  std::vector<Tier> tiers;
  size_t bytes() const;
};

// The annotation's tiers: Iterations, Phases (coloured by phase) and Layers (nested by depth;
// a backward layer takes its forward layer's hue, one step darker).
Tiers tiers_from_annotation(const Annotation& a);

}  // namespace strata::render
