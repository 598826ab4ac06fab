// core/base: JSON string escaping, microsecond text, plain and gzip output files.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/base/json_escape.h"
#include "core/base/output_file.h"
#include "core/base/us_text.h"
#include "core/base/utf8.h"

using namespace strata;

namespace {

std::string escaped(std::string_view s) {
  std::string out;
  append_json_escaped(out, s);
  return out;
}

const std::string kFffd = "\xef\xbf\xbd";

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/strata-base-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { [[maybe_unused]] int rc = std::system(("rm -rf '" + path + "'").c_str()); }
};

// The whole content of a plain or gzipped file, inflated.
std::string read_back(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string out;
  char buf[4096];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

bool is_gzip(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  unsigned char magic[2] = {};
  const size_t n = std::fread(magic, 1, 2, f);
  std::fclose(f);
  return n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

}  // namespace

TEST_CASE("JSON escaping: quotes, backslashes and control characters") {
  CHECK(escaped("plain text") == "plain text");
  CHECK(escaped("a\"b\\c") == "a\\\"b\\\\c");
  CHECK(escaped("\n\r\t\b\f") == "\\n\\r\\t\\b\\f");
  CHECK(escaped(std::string("\x01\x1f\x7f", 3)) == "\\u0001\\u001f\x7f");
  CHECK(escaped(std::string("a\0b", 3)) == "a\\u0000b");
}

TEST_CASE("JSON escaping: valid UTF-8 is kept, invalid UTF-8 becomes U+FFFD") {
  CHECK(escaped("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(escaped("\xff") == kFffd);                          // never a UTF-8 byte
  CHECK(escaped("\x80") == kFffd);                          // a lone continuation byte
  CHECK(escaped("\xc3") == kFffd);                          // cut short at the end
  CHECK(escaped("\xc3(") == kFffd + "(");                   // cut short by ASCII
  CHECK(escaped("\xc0\xaf") == kFffd + kFffd);              // overlong '/'
  CHECK(escaped("\xe0\x80\xaf") == kFffd + kFffd + kFffd);  // overlong, 3 bytes
  CHECK(escaped("\xed\xa0\x80") == kFffd + kFffd + kFffd);  // a UTF-16 surrogate
  CHECK(escaped("\xf4\x90\x80\x80") == kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
  CHECK(escaped("a\xfe\"") == "a" + kFffd + "\\\"");
}

TEST_CASE("printable text: no control characters and no invalid UTF-8 reach a terminal") {
  CHECK(printable_text("python train.py --lr 0.1") == "python train.py --lr 0.1");
  CHECK(printable_text("\x1b[2J\x1b]0;owned\x07") == kFffd + "[2J" + kFffd + "]0;owned" + kFffd);
  CHECK(printable_text("a\tb\nc\r\x7f") == "a" + kFffd + "b" + kFffd + "c" + kFffd + kFffd);
  CHECK(printable_text("\xc2\x9b" "31m") == kFffd + "31m");  // C1 CSI
  CHECK(printable_text("\x9b" "31m") == kFffd + "31m");      // the raw 8-bit CSI byte
  CHECK(printable_text("H100 \xc2\xa0 \xc3\xa9") == "H100 \xc2\xa0 \xc3\xa9");  // U+00A0 and é stay
  CHECK(printable_text(std::string("a\0b", 3)) == "a" + kFffd + "b");
  CHECK(utf8_sequence_length("\xf0\x9f\x98\x80", 0) == 4);
  CHECK(utf8_sequence_length("\xf0\x9f\x98", 0) == 0);
}

TEST_CASE("microsecond text of nanoseconds: exact, signed, every int64_t") {
  CHECK(us_text(0) == "0.000");
  CHECK(us_text(5) == "0.005");
  CHECK(us_text(1234567) == "1234.567");
  CHECK(us_text(-1) == "-0.001");
  CHECK(us_text(-1500) == "-1.500");
  CHECK(us_text(1'700'000'000'123'456'789) == "1700000000123456.789");
  CHECK(us_text(std::numeric_limits<int64_t>::max()) == "9223372036854775.807");
  CHECK(us_text(std::numeric_limits<int64_t>::min()) == "-9223372036854775.808");
  std::string s = "ts=";
  append_us(s, 42'000);
  CHECK(s == "ts=42.000");
}

TEST_CASE("output files: plain and gzip by name, read back whole") {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "{\"ph\": \"X\", \"name\": \"kernel " + std::to_string(i) + "\"},\n";
  for (const char* name : {"/t.json", "/t.json.gz"}) {
    CAPTURE(name);
    const std::string path = dir.path + name;
    OutputFile f;
    REQUIRE_MESSAGE(f.open(path, {}), f.status().message());
    for (size_t at = 0; at < text.size(); at += 1000) f.write(std::string_view(text).substr(at, 1000));
    CHECK(f.close());
    CHECK(f.bytes_written() == text.size());
    CHECK(is_gzip(path) == (std::string(name).find(".gz") != std::string::npos));
    CHECK(read_back(path) == text);
  }
}

TEST_CASE("output files: gzip flushes make the growing file readable, and count what reached it") {
  TempDir dir;
  const std::string path = dir.path + "/grow.json.gz";
  OutputFile f;
  REQUIRE(f.open(path, {}));
  f.write("first part\n");
  CHECK(f.bytes_written() == 0);  // still buffered
  REQUIRE(f.flush());
  CHECK(f.bytes_written() == 11);
  CHECK(read_back(path) == "first part\n");  // a reader inflates what is there so far
  CHECK(f.flush());                          // nothing new: nothing to do
  f.write("second\n");
  REQUIRE(f.close());
  CHECK(f.bytes_written() == 18);
  CHECK(read_back(path) == "first part\nsecond\n");
}

TEST_CASE("output files: exclusive creation, and sticky errors") {
  TempDir dir;
  const std::string path = dir.path + "/once.json";
  OutputFile a, b;
  REQUIRE(a.open(path, {.exclusive = true}));
  CHECK_FALSE(b.open(path, {.exclusive = true}));
  CHECK(b.error_number() == EEXIST);
  CHECK(b.status().message().find(path) != std::string::npos);
  CHECK(a.close());

  OutputFile none;
  CHECK_FALSE(none.open(dir.path + "/no/such/dir/x.json", {}));
  CHECK(none.error_number() == ENOENT);
  none.write("ignored");  // writing to a file that failed to open does nothing
  CHECK_FALSE(none.close());

  // /dev/full accepts the open and refuses every write: the first error sticks.
  OutputFile full;
  REQUIRE(full.open("/dev/full", {}));
  full.write(std::string(1 << 17, 'x'));
  CHECK(full.error_number() == ENOSPC);
  const std::string first = full.status().message();
  full.write("more");
  CHECK_FALSE(full.close());
  CHECK(full.status().message() == first);
  CHECK(full.bytes_written() == 0);
}

TEST_CASE("output files: regular_only refuses FIFOs, devices, directories and a final symlink, at once") {
  TempDir dir;
  const std::string fifo = dir.path + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // nobody reads it: a plain open would block
  const std::string target = dir.path + "/target.json";
  const std::string link = dir.path + "/link.json";
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  for (const std::string& path : {fifo, std::string("/dev/null"), std::string("/dev/full"), dir.path, link}) {
    CAPTURE(path);
    OutputFile f;
    CHECK_FALSE(f.open(path, {.regular_only = true}));
    CHECK(f.status().message().find("not a regular file") != std::string::npos);
  }
  struct stat st {};
  CHECK(::lstat(target.c_str(), &st) != 0);  // the symlink's target was not created
  OutputFile ok;
  CHECK(ok.open(dir.path + "/regular.json.gz", {.exclusive = true, .regular_only = true}));
  ok.write("{}");
  CHECK(ok.close());
  CHECK(read_back(dir.path + "/regular.json.gz") == "{}");
}
