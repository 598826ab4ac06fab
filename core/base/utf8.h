// UTF-8 checks shared by the JSON writers and by what is shown to a person.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace strata {

// Length of the valid UTF-8 sequence starting at s[i] (1 for ASCII), or 0 when the bytes
// there are not valid UTF-8 (overlong forms, surrogates and values past U+10FFFF included).
size_t utf8_sequence_length(std::string_view s, size_t i);

// `s` made safe to print on a terminal or draw: control characters (C0, DEL, C1) and invalid
// UTF-8 become U+FFFD, so text from another process cannot carry escape sequences.
std::string printable_text(std::string_view s);

}  // namespace strata
