// strata info FILE [--json]
#include "app/commands.h"
#include "core/loader.h"
#include "core/trace_info.h"

#include <cstdio>
#include <string>
#include <string_view>

int cmd_info(int argc, char** argv) {
  std::string path;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--json") json = true;
    else if (a.starts_with("-")) {
      std::fprintf(stderr, "strata info: unknown option '%s'\nusage: strata info FILE [--json]\n", argv[i]);
      return 2;
    } else if (path.empty()) path = a;
    else {
      std::fprintf(stderr, "strata info: one file at a time\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: strata info FILE [--json]\n");
    return 2;
  }
  strata::LoadResult r = strata::load_trace(path);
  if (!r.model) {
    std::fprintf(stderr, "strata: %s\n", r.error.c_str());
    return 1;
  }
  std::string out = json ? strata::info_json(*r.model) : strata::info_text(*r.model);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
