// Annotation accuracy against the ground truth a trace itself holds: hid= ranges (Hotline's
// traces, Strata's corpus) or, without them, its nn.Module frames.
//
//   strata_bench_annotate_accuracy [TRACE.json.gz ...]   (default: ../shared/traces/hotline-*
//                                                         and tests/data/torch2's training traces)
//
// For each trace, annotated three ways: "bare" (the truth's ranges, the nn.Module frames and
// every Python frame stripped: what is inferred), "modules" (the truth's ranges stripped, the
// nn.Module frames kept) and "visible" (nothing stripped). Prints phase agreement over the
// iterations' time (- when the truth has no phases), kernel-time phase agreement, the
// pairwise F1 of forward kernels grouped by their innermost layer (precision, recall), and
// the F1 of the trivial grouping "every top-level op is its own layer" beside it.
#include "core/annotate/accuracy.h"
#include "core/loader.h"
#include "core/text_format.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#ifndef STRATA_TRACES_DIR
#define STRATA_TRACES_DIR "../shared/traces"
#endif
#ifndef STRATA_TORCH2_DIR
#define STRATA_TORCH2_DIR "tests/data/torch2"
#endif

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) files.push_back(argv[i]);
  if (files.empty()) {
    for (const char* n : {"hotline-resnet50-rtx3090.pt.trace.json.gz", "hotline-transformer-rtx3090.pt.trace.json.gz",
                          "hotline-gnn-rtx3090.pt.trace.json.gz"})
      files.push_back(std::string(STRATA_TRACES_DIR) + "/" + n);
    for (const char* n : {"resnet18-train-h100.pt.trace.json.gz", "transformer-train-h100.pt.trace.json.gz"})
      files.push_back(std::string(STRATA_TORCH2_DIR) + "/" + n);
  }
  std::printf("%-44s %-8s %8s %8s %8s %8s %8s %9s %7s\n", "trace", "stripped", "phase%", "kphase%", "layerF1%", "prec%",
              "recall%", "trivial%", "fwd-k");
  int rc = 0;
  for (const std::string& f : files) {
    strata::LoadResult full = strata::load_trace(f);
    if (!full.model) {
      std::fprintf(stderr, "%s\n", full.error.c_str());
      rc = 1;
      continue;
    }
    const strata::GroundTruth truth = strata::ground_truth(*full.model);
    if (!truth.present()) {
      std::printf("%-44s no ground truth (hid= ranges or nn.Module frames)\n", std::filesystem::path(f).filename().c_str());
      continue;
    }
    struct Way { const char* name; unsigned strip; };
    for (Way way : {Way{"bare", strata::kStripTruthRanges | strata::kStripModules | strata::kStripStacks},
                    Way{"modules", strata::kStripTruthRanges}, Way{"visible", 0u}}) {
      if (truth.source == strata::GroundTruth::Source::Modules && way.strip == strata::kStripTruthRanges) continue;  // = visible
      strata::LoadResult stripped;
      if (way.strip) {
        stripped = strata::load_trace_bytes(f + " (stripped)", strata::strip_events(*full.model, way.strip));
        if (!stripped.model) {
          std::fprintf(stderr, "%s\n", stripped.error.c_str());
          rc = 1;
          continue;
        }
      }
      const strata::TraceModel& m = way.strip ? *stripped.model : *full.model;
      strata::Annotation a = strata::annotate(m);
      strata::AccuracyScore s = strata::score_against(m, a, truth);
      const std::string phase = s.phase_agreement < 0 ? "-" : strata::strprintf("%.2f", 100 * s.phase_agreement);
      std::printf("%-44s %-8s %8s %8.2f %8.2f %8.2f %8.2f %9.2f %7llu\n", std::filesystem::path(f).filename().c_str(), way.name,
                  phase.c_str(), 100 * s.kernel_phase_agreement, 100 * s.layer_f1, 100 * s.layer_precision,
                  100 * s.layer_recall, 100 * s.baseline_f1, static_cast<unsigned long long>(s.forward_kernels));
    }
  }
  return rc;
}
