// Distributed jobs as this machine sees them: the agents under one launcher process (torchrun,
// mpirun, srun, a shell), listed together and recorded together into one directory, one file per
// rank, which Strata then opens as one job (docs/jobs.md). Used by `strata attach --job` and the
// viewer's Attach dialog; nothing here waits on a window.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "client/agents.h"

namespace strata::collector {

struct JobInfo {
  pid_t launcher = 0;             // the process `--job` names: see group_jobs
  std::string command;            // its command line, printable, at most 512 bytes
  std::vector<AgentInfo> agents;  // by rank (agents without one last), then by pid
};

// Agents grouped into jobs: an agent's launcher is its nearest ancestor that is not an agent
// (an agent that starts another does not make a job of its own); agents with one launcher are
// one job. When no ancestor can be read the topmost agent is its own launcher. Jobs by launcher pid.
std::vector<JobInfo> group_jobs(std::vector<AgentInfo> agents);
// list_agents, grouped: what the Attach dialog and `strata attach` list (ask it off the UI thread).
Status list_jobs(std::vector<JobInfo>& out);
// The agents that are `pid` or its descendants, as one job launched by `pid`.
JobInfo job_under(pid_t pid, const std::vector<AgentInfo>& agents);

// Creates `dir` (and its parents) when missing and removes the rank files an earlier recording
// left in it (protocol/job_rank.h's names, nothing else), so that it holds one recording's ranks
// only. Returns how many were removed.
Result<int> prepare_job_dir(const std::string& dir);
// The rank files in `dir`, rank-2 before rank-10.
std::vector<std::string> rank_files(const std::string& dir);
// "open them as one job: strata DIR   (or: strata summary DIR)"
std::string open_job_hint(const std::string& dir);

// Records every agent of `job` into `opt.output_dir` (an absolute directory, prepared as above):
// record_agents, each agent writing DIR/rank-R.pt.trace.json (.gz with opt.gzip). `progress` gets
// every agent's state (file, state, records so far) after the start and five times a second; the
// result says how each ended. Fails when nothing could start (no agents, no directory).
Result<MultiRecording> record_job(const JobInfo& job, const RecordOptions& opt, const std::atomic<bool>* cancel,
                                  const std::function<void(const MultiRecording&)>& progress);

}  // namespace strata::collector
