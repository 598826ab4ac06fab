#include "test_data.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace strata::test {

namespace {

bool under_ctest() {
  const char* v = std::getenv("STRATA_CTEST_CASE");
  return v && *v && std::string_view(v) != "0";
}

// Files under `dir` (recursive or not), or none when it is not a folder.
std::vector<std::filesystem::path> files_under(const std::filesystem::path& dir, bool recursive) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  auto add = [&](const std::filesystem::directory_entry& e) {
    if (e.is_regular_file(ec)) out.push_back(e.path());
  };
  if (recursive)
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) add(e);
  else
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) add(e);
  std::sort(out.begin(), out.end());
  return out;
}

// Failed checks of the running test case: a skip after a failure must not hide it.
std::atomic<unsigned> g_failures_in_case{0};

// Under ctest each process must run exactly one test case: a --test-case filter that matched
// none would pass silently, one that matched several would run cases twice. It also counts the
// running case's failures for skip_test.
struct OneCasePerProcess : doctest::IReporter {
  explicit OneCasePerProcess(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& s) override {
    if (!under_ctest() || s.numTestCasesPassingFilters == 1) return;
    std::fprintf(stderr, "strata tests: this process ran %u test cases; under ctest (STRATA_CTEST_CASE) it must run one\n",
                 s.numTestCasesPassingFilters);
    std::fflush(nullptr);
    std::_Exit(3);
  }
  void test_case_start(const doctest::TestCaseData&) override { g_failures_in_case = 0; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& a) override {
    if (a.m_failed) ++g_failures_in_case;
  }
  void log_message(const doctest::MessageData& m) override {
    if (!(m.m_severity & doctest::assertType::is_warn)) ++g_failures_in_case;  // FAIL_CHECK, FAIL
  }
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

REGISTER_LISTENER("strata_one_case_per_process", 1, OneCasePerProcess);

void skip_test(std::string_view why) {
  if (g_failures_in_case > 0) {  // the case has failed already: it stays failed
    FAIL_CHECK("skipped after failing: " << std::string(why));
    return;
  }
  if (under_ctest()) {
    std::printf("SKIPPED: %.*s\n", int(why.size()), why.data());
    std::fflush(nullptr);
    std::_Exit(kSkipExitCode);
  }
  MESSAGE("SKIPPED: " << std::string(why));
}

std::filesystem::path vendored_traces_dir() { return STRATA_VENDORED_TRACES_DIR; }
std::filesystem::path shared_traces_dir() { return STRATA_TRACES_DIR; }
std::filesystem::path test_data_dir() { return STRATA_TEST_DATA_DIR; }

bool shared_traces_present() {
  std::error_code ec;
  return std::filesystem::is_directory(shared_traces_dir(), ec);
}

std::filesystem::path find_trace(std::string_view name) {
  std::error_code ec;
  for (const std::filesystem::path& dir : {vendored_traces_dir(), shared_traces_dir()})
    if (std::filesystem::path p = dir / name; std::filesystem::exists(p, ec)) return p;  // a file, or a job's folder
  return {};
}

std::vector<std::filesystem::path> shared_only_files(bool recursive) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const std::filesystem::path& p : files_under(shared_traces_dir(), recursive))
    if (!std::filesystem::exists(vendored_traces_dir() / p.lexically_relative(shared_traces_dir()), ec)) out.push_back(p);
  return out;
}

std::vector<std::filesystem::path> trace_folder_files(bool recursive) {
  std::vector<std::filesystem::path> out = files_under(vendored_traces_dir(), recursive);
  for (std::filesystem::path& p : shared_only_files(recursive)) out.push_back(std::move(p));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::filesystem::path> real_traces() {
  std::vector<std::filesystem::path> out;
  for (std::filesystem::path& p : trace_folder_files(false))
    if (p.extension() == ".gz") out.push_back(std::move(p));
  for (std::filesystem::path& p : files_under(test_data_dir() / "torch2", false))
    if (p.extension() == ".gz") out.push_back(std::move(p));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace strata::test
