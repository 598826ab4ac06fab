#include "trace_sink.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#ifdef STRATA_HAVE_ZLIB
#include <zlib.h>
#endif

namespace strata::collector {

namespace {
constexpr size_t kChunk = 1 << 16;  // batch small event lines into few syscalls

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

FileSink::~FileSink() { close(); }

bool FileSink::open(const std::string& path, bool exclusive) {
  path_ = path;
  error_.clear();
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0) {
    errno_ = errno;
    error_ = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  if (ends_with(path, ".gz")) {
#ifdef STRATA_HAVE_ZLIB
    gz_ = gzdopen(fd_, "wb6");
#endif
    if (gz_ == nullptr) {
      ::close(fd_);
      fd_ = -1;
      error_ = "cannot write gzip output to " + path + " (built without zlib?)";
      return false;
    }
  }
  return true;
}

void FileSink::fail(const std::string& what) {
  if (error_.empty()) errno_ = errno;
  if (error_.empty()) error_ = what + " " + path_ + ": " + std::strerror(errno);
}

void FileSink::write(std::string_view text) {
  if (fd_ < 0 || !error_.empty()) return;
  pending_.append(text);
  if (pending_.size() >= kChunk) flush();
}

void FileSink::flush() {
  if (fd_ < 0 || !error_.empty() || pending_.empty()) return;
  if (gz_ != nullptr) {
#ifdef STRATA_HAVE_ZLIB
    auto* gz = static_cast<gzFile>(gz_);
    if (gzwrite(gz, pending_.data(), static_cast<unsigned>(pending_.size())) <= 0) fail("gzip write failed for");
    else gzflush(gz, Z_SYNC_FLUSH);
#endif
  } else {
    const char* p = pending_.data();
    size_t left = pending_.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fail("write failed for");
        break;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  pending_.clear();
}

bool FileSink::close() {
  if (fd_ < 0) return error_.empty();
  flush();
  if (gz_ != nullptr) {
#ifdef STRATA_HAVE_ZLIB
    if (gzclose(static_cast<gzFile>(gz_)) != Z_OK) fail("gzip close failed for");
#endif
    gz_ = nullptr;  // gzclose closed fd_ too
  } else if (::close(fd_) != 0) {
    fail("close failed for");
  }
  fd_ = -1;
  return error_.empty();
}

}  // namespace strata::collector
