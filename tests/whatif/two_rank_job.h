// A job of two ranks made from one rank's trace copied twice (the shared 2-rank NCCL trace holds
// both ranks' events in one file), loaded as the viewer and `strata whatif DIR` load a job.
#pragma once

#include "core/job/job.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

namespace strata::test {

inline Job two_rank_job(const std::filesystem::path& rank, const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("strata_whatif_" + tag + "_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  for (const char* name : {"rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"}) std::filesystem::copy_file(rank, dir / name);
  Result<std::vector<JobFile>> files = job_files({dir.string()});
  REQUIRE_MESSAGE(files.is_ok(), files.status().message());
  Job job = load_job(files.value(), {});
  std::filesystem::remove_all(dir);
  REQUIRE(job.data.size() == 2);
  return job;
}

}  // namespace strata::test
