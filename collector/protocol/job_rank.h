// A process's place in a distributed job, read from the variables its launcher sets (torchrun,
// mpirun, srun), and the name of the file its recording gets in the job's directory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace strata::collector {

struct JobRank {
  int64_t rank = -1;        // -1: the environment names none
  int64_t world_size = -1;  // -1: unknown (or not larger than the rank)
};

// `get` reads one environment variable (std::getenv; a table in tests). The first of these pairs
// whose rank variable holds a whole number gives the rank, and its size variable the world size:
// RANK / WORLD_SIZE (torchrun, torch.distributed), OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE
// (Open MPI), PMI_RANK / PMI_SIZE (MPICH, Intel MPI), SLURM_PROCID / SLURM_NTASKS (srun),
// LOCAL_RANK / LOCAL_WORLD_SIZE (one machine's share of a job).
JobRank job_rank(const std::function<const char*(const char*)>& get);

// "rank-R.pt.trace.json", or "pid-P.pt.trace.json" when the rank is unknown; ".gz" after it with
// `gzip`. A second process of one rank inserts ".PID" before ".pt.trace.json".
std::string rank_file_name(int64_t rank, int64_t pid, bool gzip);
// Whether `name` (no directory) is such a name: the files a job's recording leaves in its directory.
bool is_rank_file_name(std::string_view name);
// DIR/NAME for an absolute `dir` (trailing slashes or not), and whether `path` is such a file.
std::string rank_file_path(std::string_view dir, int64_t rank, int64_t pid, bool gzip);
bool is_rank_file_in(std::string_view path, std::string_view dir);

}  // namespace strata::collector
