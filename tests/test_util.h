// Helpers shared by the loader tests.
#pragma once

#include "core/loader.h"
#include "test_data.h"

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strata::test {

// load_trace_bytes under the name "test.json" with a fixed thread count.
LoadResult load_json(std::string_view json, unsigned threads = 1);
// The same, failing the test (with the error) when it does not load.
std::unique_ptr<TraceModel> must_load(std::string_view json, unsigned threads = 1);

// The first event with this name, or kNoEvent.
EventId find_event(const TraceModel& m, std::string_view name);
// The track holding (pid, tid), numeric ids only, or kNoTrack.
uint32_t find_track(const TraceModel& m, int64_t pid, int64_t tid);

std::string read_file(const std::filesystem::path& p);

// Checks that two loads of the same bytes produced the same model, column by column.
void check_same_model(const TraceModel& a, const TraceModel& b);

}  // namespace strata::test
