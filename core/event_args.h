// Reading an event's arguments from its JSON (TraceModel::source_of): the few an analysis
// needs that the model does not keep as columns.
#pragma once

#include <cstdint>
#include <string_view>

namespace strata {

// The value of "key" in an event's JSON, as text (strings unquoted), or empty.
std::string_view arg_text(std::string_view event_json, std::string_view key);
// The same as an integer, or -1 when absent or not an integer.
int64_t arg_int(std::string_view event_json, std::string_view key);

}  // namespace strata
