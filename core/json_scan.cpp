#include "core/json_scan.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace strata::json {

namespace {

// Index of the closing quote of a string whose opening quote is at p[i], or n.
size_t string_end(const char* p, size_t i, size_t n) {
  size_t j = i + 1;
  while (j < n) {
    const void* q = std::memchr(p + j, '"', n - j);
    if (!q) return n;
    size_t k = size_t(static_cast<const char*>(q) - p);
    size_t slashes = 0;
    while (k - slashes > i + 1 && p[k - 1 - slashes] == '\\') ++slashes;
    if (slashes % 2 == 0) return k;
    j = k + 1;
  }
  return n;
}

}  // namespace

namespace {

// Bit k set when p[k] is one of " \ { } [ ] (`len` ≤ 16 bytes from p).
inline uint32_t special_mask(const char* p, size_t len) {
#if defined(__SSE2__)
  if (len == 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    m = _mm_or_si128(m, _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('{')), _mm_cmpeq_epi8(v, _mm_set1_epi8('}'))));
    m = _mm_or_si128(m, _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('[')), _mm_cmpeq_epi8(v, _mm_set1_epi8(']'))));
    return uint32_t(_mm_movemask_epi8(m));
  }
#endif
  uint32_t m = 0;
  for (size_t k = 0; k < len; ++k) {
    char c = p[k];
    if (c == '"' || c == '\\' || c == '{' || c == '}' || c == '[' || c == ']') m |= 1u << k;
  }
  return m;
}

}  // namespace

ScanError value_end(const char* p, size_t i, size_t n, size_t& end) {
  if (i >= n) return ScanError::Truncated;
  char c = p[i];
  if (c == '"') {
    size_t k = string_end(p, i, n);
    if (k >= n) return ScanError::Truncated;
    end = k + 1;
    return ScanError::None;
  }
  if (c == '{' || c == '[') {
    // Visit only the structural characters, found 16 bytes at a time.
    size_t depth = 0, skip = SIZE_MAX;
    bool in_string = false;
    for (size_t block = i; block < n; block += 16) {
      uint32_t mask = special_mask(p + block, std::min<size_t>(16, n - block));
      while (mask) {
        size_t j = block + size_t(__builtin_ctz(mask));
        mask &= mask - 1;
        if (j == skip) continue;  // escaped by the backslash before it
        char d = p[j];
        if (in_string) {
          if (d == '\\') skip = j + 1;
          else if (d == '"') in_string = false;
          continue;
        }
        if (d == '"') {
          in_string = true;
        } else if (d == '{' || d == '[') {
          ++depth;
        } else if (d == '}' || d == ']') {
          if (--depth == 0) {
            end = j + 1;
            return ScanError::None;
          }
        }
      }
    }
    return ScanError::Truncated;
  }
  // A scalar: runs to the next delimiter.
  size_t j = i;
  while (j < n && p[j] != ',' && p[j] != '}' && p[j] != ']' && !is_ws(p[j])) ++j;
  if (j == i) return ScanError::Malformed;
  if (j >= n) return ScanError::Truncated;
  end = j;
  return ScanError::None;
}

size_t next_event_start(const char* p, size_t from, size_t n) {
  for (size_t j = from; j < n; ++j) {
    const void* q = std::memchr(p + j, '{', n - j);
    if (!q) return n;
    j = size_t(static_cast<const char*>(q) - p);
    size_t k = j;
    while (k > from && is_ws(p[k - 1])) --k;
    if (k == from || p[k - 1] != ',') continue;
    --k;
    while (k > from && is_ws(p[k - 1])) --k;
    if (k > from && p[k - 1] == '}') return j;
  }
  return n;
}

namespace {

// Eight ASCII digits at p (SWAR); false if any byte is not a digit.
bool eight_digits(const char* p, uint64_t& value) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if (((v & 0xF0F0F0F0F0F0F0F0ull) | (((v + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) !=
      0x3333333333333333ull)
    return false;
  v -= 0x3030303030303030ull;
  v = (v * 10) + (v >> 8);  // pairs of digits
  value = (((v & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
           (((v >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
  return true;
}

}  // namespace

bool parse_int(std::string_view t, int64_t& v) {
  t = trim_token(t);
  size_t i = 0;
  bool neg = false;
  if (i < t.size() && t[i] == '-') neg = true, ++i;
  size_t digits = t.size() - i;
  if (digits == 0 || digits > 19) return false;
  uint64_t acc = 0;
  for (; i < t.size(); ++i) {
    unsigned d = unsigned(t[i] - '0');
    if (d > 9) return false;
    acc = acc * 10 + d;  // 19 digits cannot overflow 64 bits
  }
  if (neg) {
    if (acc > uint64_t(INT64_MAX) + 1) return false;
    v = acc == uint64_t(INT64_MAX) + 1 ? INT64_MIN : -int64_t(acc);
  } else {
    if (acc > uint64_t(INT64_MAX)) return false;
    v = int64_t(acc);
  }
  return true;
}

bool micros_to_ns(std::string_view t, int64_t& ns) {
  t = trim_token(t);
  constexpr uint64_t kMaxMicros = uint64_t(INT64_MAX) / 1000 - 1;  // keeps ns inside int64
  size_t i = 0;
  bool neg = false;
  if (i < t.size() && t[i] == '-') neg = true, ++i;
  uint64_t whole = 0;
  size_t digits = 0;
  // Epoch microseconds have 16 digits: take them eight at a time while they last.
  uint64_t eight;
  while (digits < 16 && i + 8 <= t.size() && eight_digits(t.data() + i, eight)) {
    whole = whole * 100000000 + eight;
    i += 8;
    digits += 8;
  }
  for (; i < t.size() && unsigned(t[i] - '0') <= 9; ++i, ++digits) {
    whole = whole * 10 + unsigned(t[i] - '0');
    if (whole > kMaxMicros) return false;
  }
  if (digits == 0 || whole > kMaxMicros) return false;
  uint64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    size_t start = i;
    for (; i < t.size() && unsigned(t[i] - '0') <= 9; ++i) {
      if (frac_digits < 3) {
        frac = frac * 10 + unsigned(t[i] - '0');
        ++frac_digits;
      } else if (i == start + 3) {
        round_up = t[i] >= '5';
      }
    }
    if (i == start) return false;
  }
  if (i < t.size()) {
    if (t[i] != 'e' && t[i] != 'E') return false;
    // Exponent notation is rare in traces: take the slow, general path.
    std::string s(t);
    char* endp = nullptr;
    double d = std::strtod(s.c_str(), &endp);
    if (endp != s.c_str() + s.size() || !std::isfinite(d) || std::fabs(d) > double(kMaxMicros)) return false;
    ns = int64_t(std::llround(d * 1000.0));
    return true;
  }
  while (frac_digits < 3) frac *= 10, ++frac_digits;
  int64_t v = int64_t(whole * 1000 + frac + (round_up ? 1 : 0));
  ns = neg ? -v : v;
  return true;
}

namespace {

void put_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

bool hex4(std::string_view s, size_t i, uint32_t& v) {
  if (i + 4 > s.size()) return false;
  v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    char c = s[k];
    unsigned d = c >= '0' && c <= '9' ? unsigned(c - '0')
                 : c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? unsigned(c - 'A' + 10)
                                        : 16u;
    if (d > 15) return false;
    v = v * 16 + d;
  }
  return true;
}

}  // namespace

bool unescape(std::string_view s, std::string& out) {
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\') {
      out.push_back(c);
      continue;
    }
    if (++i >= s.size()) return false;
    switch (s[i]) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '/': out.push_back('/'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        uint32_t cp;
        if (!hex4(s, i + 1, cp)) return false;
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
          uint32_t lo;
          if (i + 2 < s.size() && s[i + 1] == '\\' && s[i + 2] == 'u' && hex4(s, i + 3, lo) && lo >= 0xDC00 &&
              lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          cp = 0xFFFD;
        }
        put_utf8(cp, out);
        break;
      }
      default: return false;
    }
  }
  return true;
}

size_t repair_utf8(char* p, size_t n) {
  size_t fixed = 0;
  auto* s = reinterpret_cast<unsigned char*>(p);
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xC0) == 0x80;
    if (ok && len == 2) ok = c >= 0xC2;
    if (ok && len == 3) {
      uint32_t cp = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
      ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);
    }
    if (ok && len == 4) {
      uint32_t cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
      ok = cp >= 0x10000 && cp <= 0x10FFFF;
    }
    if (ok) {
      i += len;
    } else {
      s[i++] = '?';
      ++fixed;
    }
  }
  return fixed;
}

}  // namespace strata::json
