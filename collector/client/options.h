// Command-line options shared by `strata record` and `strata attach`.
#pragma once

#include <string>

#include "client/agents.h"
#include "core/base/status.h"

namespace strata::collector {

// Consumes the recording option at argv[i] (and its value), advancing i.
// False when argv[i] is not a recording option; Invalid when it is one but its value is
// missing or invalid.
//   --duration S   --iterations N   --delay S   --pattern GLOB   --profiler-range   --kinds LIST   -o FILE
//   --metrics LIST   --kernels GLOB   --gzip
Result<bool> parse_record_option(int argc, char** argv, int& i, RecordOptions& opt);

// What no single option can say (--kernels without --metrics): Invalid unless the options go together.
Status check_record_options(const RecordOptions& opt);

// Seconds as typed ("2", "0.5") to milliseconds; false when not a non-negative number.
bool parse_seconds(const std::string& text, uint64_t& ms);

// PREFIX-YYYYmmdd-HHMMSSSUFFIX in the current directory, absolute.
std::string timestamped_name(const std::string& prefix, const std::string& suffix);

// Whether -o names a directory (one that exists, or any path ending in '/'): the job's files go
// there, one per rank.
bool names_directory(const std::string& path);

}  // namespace strata::collector
