// strata: a profiler for deep-learning training traces.
#include "app/commands.h"

#include <cstdio>
#include <cstring>
#include <string_view>

namespace {

void usage(FILE* out) {
  std::fputs(
      "usage: strata [FILE]                 open a trace in the viewer (prints its summary without a display)\n"
      "       strata view [FILE] [--screenshot OUT.png] [--size WxH] [--focus PATH] [--bench-frames N]\n"
      "                                     the viewer; headless: render, save a PNG (or time frames), exit\n"
      "       strata info FILE [--json]     what a trace holds: events, tracks, steps, devices, load figures\n"
      "       strata summary FILE [--json] [--item PATH | --range A:B | --memory-at T|peak] [--model MODEL.txt]\n"
      "                                     iterations, phases, top layers, GPU and CPU ops, utilization, idle causes,\n"
      "                                     memory; --item: one annotation item's figures; --memory-at: what is alive\n"
      "       strata annotate FILE -o OUT.json[.gz]  the trace plus iteration/phase/layer tiers (opens in Perfetto)\n"
      "       strata predict FILE... [--batch N,...] [--json]  memory and throughput against the batch size\n"
      "       strata whatif FILE|DIR [--scale SPEC]... [--json]  predicted iteration time with faster kernels, no launch\n"
      "                                     overhead (CUDA graphs), hidden data loading, faster communication, …\n",
      out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  if (cmd == "info") return cmd_info(argc - 1, argv + 1);
  if (cmd == "record") return cmd_record(argc - 1, argv + 1);
  if (cmd == "attach") return cmd_attach(argc - 1, argv + 1);
  if (cmd == "summary") return cmd_summary(argc - 1, argv + 1);
  if (cmd == "annotate") return cmd_annotate(argc - 1, argv + 1);
  if (cmd == "predict") return cmd_predict(argc - 1, argv + 1);
  if (cmd == "whatif") return cmd_whatif(argc - 1, argv + 1);
#ifdef STRATA_HAVE_VIEWER
  if (cmd == "view") return cmd_view(argc - 1, argv + 1);
  if (!cmd.empty() && cmd[0] != '-' && viewer_display_available()) return cmd_view(argc, argv);
#endif
  // A bare file argument opens it.
  if (!cmd.empty() && cmd[0] != '-') return cmd_info(argc, argv);
  std::fprintf(stderr, "strata: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
