// Unit tests of core/json_scan.h: the hand-written scanning around simdjson.
#include "core/json_scan.h"
#include "core/json_writer.h"

#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>

using namespace strata::json;

namespace {

std::optional<int64_t> ns(std::string_view token) {
  int64_t v = 0;
  if (!micros_to_ns(token, v)) return std::nullopt;
  return v;
}

std::optional<int64_t> integer(std::string_view token) {
  int64_t v = 0;
  if (!parse_int(token, v)) return std::nullopt;
  return v;
}

// value_end over the whole string from `i`; -1 truncated, -2 malformed.
long long end_of(std::string_view s, size_t i = 0) {
  size_t end = 0;
  switch (value_end(s.data(), i, s.size(), end)) {
    case ScanError::None: return (long long)end;
    case ScanError::Truncated: return -1;
    case ScanError::Malformed: return -2;
  }
  return -3;
}

std::optional<std::string> unesc(std::string_view raw) {
  std::string out;
  if (!unescape(raw, out)) return std::nullopt;
  return out;
}

std::pair<std::string, size_t> repaired(std::string s) {
  size_t fixed = repair_utf8(s.data(), s.size());
  return {s, fixed};
}

}  // namespace

TEST_CASE("micros_to_ns: integers and up to three fractional digits are exact") {
  CHECK(ns("0") == 0);
  CHECK(ns("12") == 12000);
  CHECK(ns("1.5") == 1500);
  CHECK(ns("1.05") == 1050);
  CHECK(ns("1.005") == 1005);
  CHECK(ns("4458676962674.623") == 4458676962674623);
  CHECK(ns("1623142623460016") == 1623142623460016000);
  CHECK(ns("12 \n") == 12000);  // trailing whitespace of a raw token
}

TEST_CASE("micros_to_ns: more fractional digits round half up at the fourth") {
  CHECK(ns("1.2344") == 1234);
  CHECK(ns("1.2345") == 1235);
  CHECK(ns("1.23449999") == 1234);
  CHECK(ns("1.9995") == 2000);  // carries into the whole part
  CHECK(ns("0.0005") == 1);
  CHECK(ns("1.000000000000000000000000001") == 1000);
}

TEST_CASE("micros_to_ns: negative values") {
  CHECK(ns("-1.5") == -1500);
  CHECK(ns("-2.0005") == -2001);  // rounds away from zero
  CHECK(ns("-0.0004") == 0);
  CHECK(ns("-7") == -7000);
}

TEST_CASE("micros_to_ns: exponent notation") {
  CHECK(ns("1e3") == 1000000);
  CHECK(ns("1.5E2") == 150000);
  CHECK(ns("-1e-3") == -1);
  CHECK(ns("2.5e-1") == 250);
  CHECK_FALSE(ns("1e"));
  CHECK_FALSE(ns("1e400"));
  CHECK_FALSE(ns("-1e30"));
  CHECK_FALSE(ns("1e16"));  // beyond the int64 ns range
}

TEST_CASE("micros_to_ns: the int64 nanosecond range is the limit") {
  CHECK(ns("9223372036854774") == 9223372036854774000);
  CHECK(ns("9223372036854774.9995") == 9223372036854775000);
  CHECK(ns("-9223372036854774") == -9223372036854774000);
  CHECK_FALSE(ns("9223372036854775"));
  CHECK_FALSE(ns("99999999999999999999999"));
  CHECK_FALSE(ns("-99999999999999999999999"));
}

TEST_CASE("micros_to_ns: non-numbers are rejected") {
  for (const char* bad : {"", "-", "NaN", "nan", "Infinity", "-Infinity", "inf", "abc", "1.", ".5", "1.2.3", "1x",
                          "\"12\"", "+1", "0x10", "true", "null", "1,2"}) {
    CAPTURE(bad);
    CHECK_FALSE(ns(bad));
  }
}

TEST_CASE("parse_int") {
  CHECK(integer("0") == 0);
  CHECK(integer("-0") == 0);
  CHECK(integer("123") == 123);
  CHECK(integer("-42") == -42);
  CHECK(integer("7 \t") == 7);
  CHECK(integer("9223372036854775807") == INT64_MAX);
  CHECK(integer("-9223372036854775808") == INT64_MIN);
  for (const char* bad : {"", "-", "9223372036854775808", "-9223372036854775809", "18446744073709551616",
                          "99999999999999999999999999", "1.0", "1e3", "abc", "12a", "--1", "+1"}) {
    CAPTURE(bad);
    CHECK_FALSE(integer(bad));
  }
}

TEST_CASE("value_end: strings with escapes") {
  CHECK(end_of(R"("abc")") == 5);
  CHECK(end_of(R"("")") == 2);
  CHECK(end_of(R"("a\"b",)") == 6);
  CHECK(end_of(R"("a\\",1)") == 5);        // an escaped backslash, then the closing quote
  CHECK(end_of(R"("a\\\"b")") == 8);      // backslash, then an escaped quote
  CHECK(end_of(R"("\\\\")") == 6);
  CHECK(end_of(R"(x"ab")", 1) == 5);
  CHECK(end_of(R"(\"ab")", 1) == 5);      // a backslash before the opening quote is not an escape
  CHECK(end_of(R"("abc)") == -1);
  CHECK(end_of(R"("abc\")") == -1);
}

TEST_CASE("value_end: objects and arrays, braces inside strings") {
  CHECK(end_of(R"({})") == 2);
  CHECK(end_of(R"([])") == 2);
  std::string s = R"({"a":"}{","b":[1,{"c":"]"}],"d":"\"}"} tail)";
  CHECK(end_of(s) == (long long)s.find(" tail"));
  CHECK(end_of(R"([1,[2,[3]],4],5)") == 13);
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  CHECK(end_of(deep + ",") == (long long)deep.size());
}

TEST_CASE("value_end: truncation and malformed starts") {
  CHECK(end_of(R"({"a":1)") == -1);
  CHECK(end_of(R"([1,2)") == -1);
  CHECK(end_of(R"({"a":"}")") == -1);
  CHECK(end_of(std::string(1000, '{')) == -1);
  CHECK(end_of("") == -1);
  CHECK(end_of("1", 1) == -1);
  CHECK(end_of("123") == -1);  // a number running into the end may continue
  CHECK(end_of("123,") == 3);
  CHECK(end_of("true}") == 4);
  CHECK(end_of("-1.5e3 ") == 6);
  CHECK(end_of(",") == -2);
  CHECK(end_of("]") == -2);
  CHECK(end_of(" 1") == -2);  // must start at the value
}

TEST_CASE("next_event_start") {
  std::string s = R"([{"a":1}, {"b":2},{"c":3}])";
  CHECK(next_event_start(s.data(), 0, s.size()) == s.find(R"({"b")"));
  CHECK(next_event_start(s.data(), s.find(R"({"b")"), s.size()) == s.find(R"({"c")"));
  CHECK(next_event_start(s.data(), s.find(R"({"c")"), s.size()) == s.size());
  std::string ws = "{\"a\":1}\n ,\r\n\t{\"b\":2}";
  CHECK(next_event_start(ws.data(), 0, ws.size()) == ws.find("{\"b"));
  std::string not_after_object = R"([1, {"a":1}])";
  CHECK(next_event_start(not_after_object.data(), 0, not_after_object.size()) == not_after_object.size());
  // The '}' must lie at or after `from`: starting on a comma skips the '{' right after it.
  CHECK(next_event_start(s.data(), s.find(", {"), s.size()) == s.find(R"({"c")"));
  // Only a likely start: a "}, {" inside a string is found too (the loader verifies cuts).
  std::string in_string = R"({"a":"}, {x"})";
  CHECK(next_event_start(in_string.data(), 0, in_string.size()) == in_string.find("{x"));
  CHECK(next_event_start("", 0, 0) == 0);
}

TEST_CASE("unescape: simple escapes, appending to the output") {
  CHECK(unesc(R"(a\"b)") == "a\"b");
  CHECK(unesc(R"(\\)") == "\\");
  CHECK(unesc(R"(\/\b\f\n\r\t)") == "/\b\f\n\r\t");
  std::string out = "x";
  CHECK(unescape(R"(\n)", out));
  CHECK(out == "x\n");
}

TEST_CASE("unescape: \\u escapes and surrogate pairs") {
  CHECK(unesc(R"(\u0041)") == "A");
  CHECK(unesc(R"(\u00e9)") == "\xC3\xA9");
  CHECK(unesc(R"(\u20AC)") == "\xE2\x82\xAC");
  CHECK(unesc(R"(\ud83d\ude00)") == "\xF0\x9F\x98\x80");
  CHECK(unesc(R"(\uD83D\uDE00!)") == "\xF0\x9F\x98\x80!");
  CHECK(unesc(R"(\ud83d)") == "\xEF\xBF\xBD");              // lone high surrogate
  CHECK(unesc(R"(\ude00)") == "\xEF\xBF\xBD");              // lone low surrogate
  CHECK(unesc(R"(\ud83d\u0041)") == "\xEF\xBF\xBD" "A");    // high followed by a non-surrogate
  CHECK(unesc(R"(\ud83dx)") == "\xEF\xBF\xBDx");
  CHECK(unesc(R"(\u0000)") == std::string(1, '\0'));
}

TEST_CASE("unescape: bad escapes fail") {
  for (const char* bad : {R"(\x)", R"(\u12)", R"(\u12G4)", R"(abc\)", R"(\U0041)", R"(\ud83d\u12)"}) {
    CAPTURE(bad);
    CHECK_FALSE(unesc(bad));
  }
}

TEST_CASE("repair_utf8") {
  CHECK(repaired("plain ascii") == std::pair<std::string, size_t>("plain ascii", 0));
  CHECK(repaired("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80").second == 0);
  CHECK(repaired("a\x80z") == std::pair<std::string, size_t>("a?z", 1));                 // lone continuation
  CHECK(repaired("\xC0\x80") == std::pair<std::string, size_t>("??", 2));                // overlong
  CHECK(repaired("\xE0\x80\xAF") == std::pair<std::string, size_t>("???", 3));           // overlong 3-byte
  CHECK(repaired("\xED\xA0\x80") == std::pair<std::string, size_t>("???", 3));           // surrogate
  CHECK(repaired("ok\xE2\x82") == std::pair<std::string, size_t>("ok??", 2));            // truncated at the end
  CHECK(repaired("\xF4\x90\x80\x80") == std::pair<std::string, size_t>("????", 4));      // beyond U+10FFFF
  CHECK(repaired("\xF5\xFF\xFE") == std::pair<std::string, size_t>("???", 3));
  CHECK(repaired("\xE2(\xA1") == std::pair<std::string, size_t>("?(?", 2));              // broken sequence
  CHECK(repaired("").second == 0);
}

TEST_CASE("JsonWriter: doubles read back exactly, non-finite ones are null") {
  strata::JsonWriter w;
  w.begin_array().value(1.5).value(18594312345678.0).value(0.1).value(std::nan("")).end_array();
  CHECK(w.str() == "[1.5,18594312345678,0.1,null]");
}
