// Annotation accuracy against Hotline's hand-made hid= annotations.
//
//   strata_bench_annotate_accuracy [TRACE.json.gz ...]   (default: ../shared/traces/hotline-*)
//
// For each trace: strips the hid= events, annotates what is left and scores it (phase
// agreement over the iteration's time, kernel-time phase agreement, pairwise F1 of forward
// kernels grouped by leaf layer), then the same with the hid= annotations visible.
#include "core/annotate/accuracy.h"
#include "core/loader.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#ifndef STRATA_TRACES_DIR
#define STRATA_TRACES_DIR "../shared/traces"
#endif

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) files.push_back(argv[i]);
  if (files.empty())
    for (const char* n : {"hotline-resnet50-rtx3090.pt.trace.json.gz", "hotline-transformer-rtx3090.pt.trace.json.gz",
                          "hotline-gnn-rtx3090.pt.trace.json.gz"})
      files.push_back(std::string(STRATA_TRACES_DIR) + "/" + n);
  std::printf("%-44s %-8s %8s %8s %8s %8s %8s %7s\n", "trace", "hid", "phase%", "kphase%", "layerF1%", "prec%", "recall%",
              "fwd-k");
  int rc = 0;
  for (const std::string& f : files) {
    strata::LoadResult full = strata::load_trace(f);
    if (!full.model) {
      std::fprintf(stderr, "%s\n", full.error.c_str());
      rc = 1;
      continue;
    }
    strata::GroundTruth truth = strata::hid_ground_truth(*full.model);
    if (!truth.present()) {
      std::printf("%-44s no hid= annotations\n", std::filesystem::path(f).filename().c_str());
      continue;
    }
    std::string stripped = strata::strip_hid_events(*full.model);
    strata::LoadResult bare = strata::load_trace_bytes(f + " (hid stripped)", stripped);
    if (!bare.model) {
      std::fprintf(stderr, "%s\n", bare.error.c_str());
      rc = 1;
      continue;
    }
    for (int visible = 0; visible < 2; ++visible) {
      const strata::TraceModel& m = visible ? *full.model : *bare.model;
      strata::Annotation a = strata::annotate(m);
      strata::AccuracyScore s = strata::score_against(m, a, truth);
      std::printf("%-44s %-8s %8.2f %8.2f %8.2f %8.2f %8.2f %7llu\n", std::filesystem::path(f).filename().c_str(),
                  visible ? "visible" : "stripped", 100 * s.phase_agreement, 100 * s.kernel_phase_agreement,
                  100 * s.layer_f1, 100 * s.layer_precision, 100 * s.layer_recall,
                  static_cast<unsigned long long>(s.forward_kernels));
    }
  }
  return rc;
}
