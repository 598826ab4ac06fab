// JSON string contents, written the same way by every writer in Strata.
#pragma once

#include <string>
#include <string_view>

namespace strata {

// Appends `s` as the contents of a JSON string (without the quotes): '"' and '\' escaped,
// control characters as \n, \t, ... or \u00XX, invalid UTF-8 replaced with U+FFFD, so the
// result is always valid JSON text.
void append_json_escaped(std::string& out, std::string_view s);

}  // namespace strata
