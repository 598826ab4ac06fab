#include "core/progress.h"

namespace strata {

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::Starting: return "starting";
    case Stage::Reading: return "reading";
    case Stage::Parsing: return "parsing";
    case Stage::Building: return "building the model";
    case Stage::Structure: return "annotating: structure";
    case Stage::Iterations: return "annotating: iterations and phases";
    case Stage::Layers: return "annotating: layers";
    case Stage::Metrics: return "annotating: metrics";
    case Stage::Reduction: return "annotating: noise reduction";
    case Stage::Analyses: return "annotating: analyses";
    case Stage::View: return "preparing the view";
    case Stage::Done: return "done";
  }
  return "?";
}

}  // namespace strata
