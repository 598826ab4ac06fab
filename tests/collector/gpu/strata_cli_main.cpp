// `strata record` / `strata attach` alone, for the standalone GPU test build.
#include <cstdio>
#include <string_view>

#include "app/commands.h"

int main(int argc, char** argv) {
  const std::string_view cmd = argc > 1 ? argv[1] : "";
  if (cmd == "record") return cmd_record(argc - 1, argv + 1);
  if (cmd == "attach") return cmd_attach(argc - 1, argv + 1);
  std::fputs("usage: strata record|attach ...\n", stderr);
  return 2;
}
