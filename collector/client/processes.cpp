#include "processes.h"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "core/base/utf8.h"

namespace strata::collector {

namespace {
constexpr int kMaxDepth = 64;  // a process tree deeper than this is not a job's
}

pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const size_t paren = text.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return 0;
  char state = 0;
  long parent = 0;
  if (std::sscanf(text.c_str() + paren + 1, " %c %ld", &state, &parent) != 2 || parent < 0) return 0;
  return static_cast<pid_t>(parent);
}

bool descends_from(pid_t pid, pid_t ancestor) {
  for (int depth = 0; depth < kMaxDepth && pid > 1; ++depth) {
    if (pid == ancestor) return true;
    pid = parent_of(pid);
  }
  return pid == ancestor;
}

std::string process_command(pid_t pid, size_t max_bytes) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text;
  for (std::istreambuf_iterator<char> it(in), end; it != end && text.size() < max_bytes; ++it)
    text += *it == '\0' ? ' ' : *it;
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return printable_text(text);
}

}  // namespace strata::collector
