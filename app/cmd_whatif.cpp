// strata whatif FILE | DIR [--scale SPEC]... [--bandwidth GB/s] [--amp-factor F] [--json]
// Replays the trace's dependency graph unchanged and with durations changed, and predicts
// the iteration time of each scenario (docs/whatif.md).
#include "app/cli.h"
#include "app/commands.h"
#include "core/whatif/whatif.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

const char* kUsage =
    "strata whatif FILE | DIR | FILE1 FILE2 ... [--scale SPEC]... [--bandwidth GB/s] [--amp-factor F] [--json]\n"
    "  SPEC: kernels-2x | no-launch-overhead | no-data-loading | comm-2x | amp | fused-optimizer\n"
    "        | kernel:GLOB=F | layer:PATH=F | phase:NAME=F   (F: speed-up, 2 = twice as fast, inf = no time;\n"
    "        several joined by ',' make one scenario). Without --scale or --bandwidth: kernels-2x,\n"
    "        no-launch-overhead, no-data-loading, comm-2x";

bool positive(const char* s, double& v) {
  char* end = nullptr;
  v = std::strtod(s, &end);
  return end && end != s && *end == 0 && v > 0;
}

}  // namespace

int cmd_whatif(int argc, char** argv) {
  std::vector<std::string> inputs, specs;
  std::vector<double> bandwidths;
  double amp_factor = 2;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    double v = 0;
    if (a == "--json") {
      json = true;
    } else if (a == "--scale" && i + 1 < argc) {
      specs.emplace_back(argv[++i]);
    } else if (a == "--bandwidth" && i + 1 < argc) {
      if (!positive(argv[++i], v)) {
        std::fprintf(stderr, "strata whatif: --bandwidth wants GB/s above 0, not '%s'\n", argv[i]);
        return 2;
      }
      bandwidths.push_back(v);
    } else if (a == "--amp-factor" && i + 1 < argc) {
      if (!positive(argv[++i], amp_factor)) {
        std::fprintf(stderr, "strata whatif: --amp-factor wants a speed-up above 0, not '%s'\n", argv[i]);
        return 2;
      }
    } else if (a.starts_with("-")) {
      std::fprintf(stderr, "strata whatif: unknown option '%s'\nusage: %s\n", argv[i], kUsage);
      return 2;
    } else {
      inputs.emplace_back(a);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s\n", kUsage);
    return 2;
  }
  std::vector<strata::whatif::Scenario> scenarios;
  for (const std::string& spec : specs) {
    strata::whatif::Scenario s;
    std::string error;
    if (!strata::whatif::parse_scenario(spec, amp_factor, s, error)) {
      std::fprintf(stderr, "strata whatif: %s\n", error.c_str());
      return 2;
    }
    scenarios.push_back(std::move(s));
  }
  for (double b : bandwidths) scenarios.push_back(strata::whatif::bandwidth_scenario(b));
  if (scenarios.empty()) scenarios = strata::whatif::default_scenarios();

  FileArgs files;
  files.inputs = inputs;
  std::string out;
  if (files.single_file()) {
    const strata::AnnotateOptions options;
    LoadedTrace r = load_for_cli(inputs[0], "whatif", &options);
    if (!r.model) {
      std::fprintf(stderr, "strata: %s\n", r.error.c_str());
      return 1;
    }
    strata::whatif::Graph g = strata::whatif::build_graph(*r.model, r.annotation);
    strata::whatif::Report rep = strata::whatif::what_if(g, scenarios, inputs[0]);
    out = json ? strata::whatif::report_json(g, rep) : strata::whatif::report_text(g, rep);
  } else {
    strata::Job job;
    if (!load_job_for_cli(inputs, "whatif", true, job)) return 1;
    if (job.summaries_only) {
      std::fprintf(stderr, "strata whatif: the job's traces do not fit in memory together (STRATA_MEMORY_BUDGET): the replay needs every rank's events\n");
      return 1;
    }
    strata::whatif::Graph g = strata::whatif::build_job_graph(job);
    strata::whatif::Report rep = strata::whatif::what_if(g, scenarios, inputs.size() == 1 ? inputs[0] : inputs[0] + " …");
    out = json ? strata::whatif::report_json(g, rep) : strata::whatif::report_text(g, rep);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
