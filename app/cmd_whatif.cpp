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

struct WhatifArgs {
  std::vector<std::string> inputs, specs;  // specs: --scale, in order
  std::vector<double> bandwidths;          // --bandwidth GB/s, in order
  double amp_factor = 2;
  bool json = false;
};

// A CLI11 check: a number above 0 ("inf" too), else why not.
CLI::Validator above_zero(const char* wants) {
  return CLI::Validator(
      [wants](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end && end != text.c_str() && *end == 0 && v > 0) return {};
        return std::string(wants) + " above 0, not '" + text + "'";
      },
      "");
}

int run_whatif(const CLI::App& sub, const WhatifArgs& args) {
  const std::vector<std::string>& inputs = args.inputs;
  const bool json = args.json;
  std::vector<strata::whatif::Scenario> scenarios;
  for (const std::string& spec : args.specs) {
    strata::Result<strata::whatif::Scenario> s = strata::whatif::parse_scenario(spec, args.amp_factor);
    if (!s.is_ok()) return usage_error(sub, s.status().message());
    scenarios.push_back(std::move(s.value()));
  }
  for (double b : args.bandwidths) scenarios.push_back(strata::whatif::bandwidth_scenario(b));
  if (scenarios.empty()) scenarios = strata::whatif::default_scenarios();

  std::string out;
  if (single_file(inputs)) {
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

}  // namespace

Command add_whatif(CLI::App& strata) {
  auto args = std::make_shared<WhatifArgs>();
  CLI::App* sub = add_subcommand(
      strata, "whatif",
      "predict the iteration time with faster kernels, no launch overhead,\n"
      "hidden data loading, a faster network, ... (docs/whatif.md)",
      "strata whatif FILE | DIR | FILE1 FILE2 ... [--scale SPEC]... [--bandwidth GB/s]...\n"
      "              [--amp-factor F] [--json]\n"
      "  SPEC: kernels-2x | no-launch-overhead | no-data-loading | comm-2x | amp | fused-optimizer\n"
      "        | kernel:GLOB=F | layer:PATH=F | phase:NAME=F   (F: speed-up, 2 = twice as fast, inf = no time;\n"
      "        several joined by ',' make one scenario). Without --scale or --bandwidth: kernels-2x,\n"
      "        no-launch-overhead, no-data-loading, comm-2x");
  add_inputs(*sub, args->inputs);
  sub->add_option("--scale", args->specs, "a scenario (SPEC above); repeat for several")
      ->type_name("SPEC")
      ->allow_extra_args(false);
  sub->add_option("--bandwidth", args->bandwidths, "a scenario: the network at this many GB/s; repeat for several")
      ->type_name("GB/s")
      ->allow_extra_args(false)
      ->check(above_zero("wants GB/s"));
  sub->add_option("--amp-factor", args->amp_factor, "the speed-up amp gives the ops it makes faster (default 2)")
      ->type_name("F")
      ->check(above_zero("wants a speed-up"));
  sub->add_flag("--json", args->json, "JSON (docs/whatif.md) instead of text");
  return {sub, [sub, args] { return run_whatif(*sub, *args); }};
}
