// strata info FILE|DIR ... [--json]: what each trace holds (a JSON array for several)
#include "app/cli.h"
#include "app/commands.h"
#include "core/trace_info.h"

#include <cstdio>

namespace {

struct InfoArgs {
  std::vector<std::string> inputs;
  bool json = false;
};

int run_info(const InfoArgs& args) {
  const strata::Result<std::vector<strata::JobFile>> found = strata::job_files(args.inputs);
  if (!found.is_ok()) {
    std::fprintf(stderr, "strata info: %s\n", found.status().message().c_str());
    return 1;
  }
  const std::vector<strata::JobFile>& files = found.value();
  const bool several = files.size() > 1;
  int rc = 0;
  if (several && args.json) std::fputs("[\n", stdout);
  for (size_t i = 0; i < files.size(); ++i) {
    LoadedTrace r = load_for_cli(files[i].path, "info", nullptr);
    if (!r.model) {
      std::fprintf(stderr, "strata: %s\n", r.error.c_str());
      rc = 1;
      continue;
    }
    std::string out = args.json ? strata::info_json(*r.model) : strata::info_text(*r.model);
    if (several && args.json && i + 1 < files.size()) out += ",";
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  if (several && args.json) std::fputs("]\n", stdout);
  return rc;
}

}  // namespace

Command add_info(CLI::App& strata) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* sub = add_subcommand(strata, "info",
                                 "what a trace holds: events per category and phase, tracks, steps,\n"
                                 "devices, rank, flows, warnings, load figures (docs/info-json.md)",
                                 "strata info FILE|DIR ... [--json]   (several: a JSON array, one object per trace)");
  add_inputs(*sub, args->inputs);
  sub->add_flag("--json", args->json, "JSON (docs/info-json.md) instead of text");
  return {sub, [args] { return run_info(*args); }};
}
