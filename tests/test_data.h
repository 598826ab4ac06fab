// Where the tests find their data, and how a test whose data is absent says so.
//
// Real traces live in two folders: tests/data/traces (vendored: in every clone, see its
// README.md) and ../shared/traces beside the clone (when present: CI has it). A trace is
// looked up by name in the first, then in the second; tests that iterate over every real
// trace take each name once, the vendored copy first.
//
// A test whose data is absent is skipped, never passed: STRATA_SKIP ends the test case. Under
// ctest every doctest case runs as its own process (tests/testing.cmake sets
// STRATA_CTEST_CASE=1 in its environment) and a skip ends that process with kSkipExitCode,
// which ctest reports as "Skipped". Run by hand (the whole executable), a skip prints
// "SKIPPED: why", returns from the case and the run goes on.
// No dependency but the standard library and doctest: every test executable links it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace strata::test {

inline constexpr int kSkipExitCode = 77;

// Reports a skip of the running test case (see above). Under ctest it does not return.
void skip_test(std::string_view why);

// tests/data/traces, ../shared/traces (which may be absent), tests/data.
std::filesystem::path vendored_traces_dir();
std::filesystem::path shared_traces_dir();
std::filesystem::path test_data_dir();
bool shared_traces_present();

// The real trace `name` (a file name, a path inside a trace folder such as
// "param-dlrm-torchrec-v100-8ranks/rank-0.json.gz", or a job's folder): tests/data/traces's copy, else
// ../shared/traces's; empty when neither folder has it.
std::filesystem::path find_trace(std::string_view name);

// Every file of the real-trace folders (at any depth when `recursive`), each path inside a
// folder once, tests/data/traces's copy first; sorted.
std::vector<std::filesystem::path> trace_folder_files(bool recursive);
// The files only ../shared/traces has (none when it is absent); sorted.
std::vector<std::filesystem::path> shared_only_files(bool recursive);

// Every gzipped real trace at the top of the trace folders, each name once, and those of
// tests/data/torch2; sorted.
std::vector<std::filesystem::path> real_traces();

}  // namespace strata::test

// Ends the current test case as skipped (see above): use it in the TEST_CASE's own body.
#define STRATA_SKIP(why)                \
  do {                                  \
    ::strata::test::skip_test(why);     \
    return;                             \
  } while (0)
#define STRATA_SKIP_UNLESS(cond, why) \
  do {                                \
    if (!(cond)) STRATA_SKIP(why);    \
  } while (0)
// `const std::string var` = the path of the real trace `name`; the test case is skipped when
// neither trace folder has it.
#define STRATA_REQUIRE_TRACE(var, name)                                         \
  const std::string var = ::strata::test::find_trace(name).string();            \
  STRATA_SKIP_UNLESS(!var.empty(), std::string("real trace not found: ") + (name))
