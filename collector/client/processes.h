// Processes as /proc shows them: who started whom, and what they run. Used to find the agents
// of one job (every process under its launcher) and whom --kineto answers.
#pragma once

#include <sys/types.h>

#include <string>

namespace strata::collector {

// The parent of `pid`, or 0 when it cannot be read (gone, or another namespace's).
pid_t parent_of(pid_t pid);
// Whether `pid` is `ancestor` or one of its descendants.
bool descends_from(pid_t pid, pid_t ancestor);
// Its command line, arguments joined by spaces, cut to `max_bytes` and made printable; "" when
// it cannot be read.
std::string process_command(pid_t pid, size_t max_bytes = 512);

}  // namespace strata::collector
