// What the colours mean, for the legend (the key map's Colours) and for whatever draws them:
// the phases tier, the kinds of work on the tracks, and the causes of GPU idle time.
#pragma once

#include "core/annotate/annotation.h"
#include "render/palette.h"

#include <string>
#include <vector>

namespace strata::render {

Hue phase_hue(PhaseKind p);            // the Phases tier's colours
Rgba idle_cause_colour(IdleCause c);   // the Summary's idle-cause bar

struct LegendEntry {
  std::string what;
  Rgba colour;
};
std::vector<LegendEntry> phase_legend();       // the phase kinds the annotation names (one entry per colour)
std::vector<LegendEntry> track_legend();       // the kinds of work on CPU threads and GPU streams
std::vector<LegendEntry> idle_cause_legend();  // the idle causes, as the Summary names them

}  // namespace strata::render
