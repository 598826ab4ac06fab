#include "core/base/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

namespace strata {

namespace {

constexpr size_t kBufferBytes = size_t{1} << 16;  // batches small writes into few syscalls

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

struct OutputFile::Deflater {
  z_stream stream{};
  std::string out;
};

OutputFile::OutputFile() = default;

OutputFile::~OutputFile() { close(); }

void OutputFile::fail(const std::string& what, int err) {
  if (!status_.is_ok()) return;
  errno_ = err;
  status_ = Status::io(what + (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
}

bool OutputFile::open(const std::string& path, const OutputFileOptions& options) {
  close();
  path_ = path;
  status_ = Status::ok();
  errno_ = 0;
  written_ = 0;
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (options.exclusive ? O_EXCL : O_TRUNC);
  if (options.regular_only) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      fail("refusing to write to " + path + ": it is " + file_type(st.st_mode) + ", not a regular file", 0);
      errno_ = EINVAL;
      return false;
    }
    flags |= O_NONBLOCK | O_NOFOLLOW;  // the path may have changed since lstat: never block, never follow
  }
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0) {
    fail("cannot create " + path, errno);
    return false;
  }
  struct stat st {};
  if (options.regular_only && (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(fd_);
    fd_ = -1;
    fail("refusing to write to " + path + ": not a regular file", 0);
    errno_ = EINVAL;
    return false;
  }
  if (ends_with(path, ".gz")) {
    gzip_ = std::make_unique<Deflater>();
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
    if (deflateInit2(&gzip_->stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      gzip_.reset();
      ::close(fd_);
      fd_ = -1;
      fail("cannot start gzip output for " + path, 0);
      return false;
    }
  }
  buffer_.reserve(kBufferBytes);
  return true;
}

bool OutputFile::write_out(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // EAGAIN too: a regular file never asks to wait, so never spin on it
      fail("write failed for " + path_, n < 0 ? errno : EIO);
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
    if (!gzip_) written_ += static_cast<uint64_t>(n);
  }
  return true;
}

// Runs the buffer through deflate with `mode` (Z_SYNC_FLUSH or Z_FINISH) and writes what
// comes out.
bool OutputFile::deflate_buffer(int mode) {
  z_stream& z = gzip_->stream;
  z.next_in = reinterpret_cast<Bytef*>(buffer_.data());
  z.avail_in = static_cast<uInt>(buffer_.size());
  gzip_->out.resize(kBufferBytes);
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(gzip_->out.data());
    z.avail_out = static_cast<uInt>(gzip_->out.size());
    const int rc = deflate(&z, mode);
    if (rc == Z_STREAM_ERROR) {
      fail("gzip compression failed for " + path_, 0);
      return false;
    }
    if (!write_out(gzip_->out.data(), gzip_->out.size() - z.avail_out)) return false;
    if (z.avail_out != 0 && z.avail_in == 0 && (mode != Z_FINISH || rc == Z_STREAM_END)) return true;
  }
}

void OutputFile::write(std::string_view text) {
  if (fd_ < 0 || !status_.is_ok()) return;
  buffer_.append(text);
  if (buffer_.size() >= kBufferBytes) flush();
}

bool OutputFile::flush() {
  if (fd_ < 0 || !status_.is_ok()) return status_.is_ok();
  if (gzip_) {
    if (buffer_.empty() && gzip_->stream.total_in == written_) return true;
    if (deflate_buffer(Z_SYNC_FLUSH)) written_ = gzip_->stream.total_in;
  } else {
    write_out(buffer_.data(), buffer_.size());
  }
  buffer_.clear();
  return status_.is_ok();
}

bool OutputFile::close() {
  if (fd_ < 0) return status_.is_ok();
  if (gzip_) {
    if (status_.is_ok() && deflate_buffer(Z_FINISH)) written_ = gzip_->stream.total_in;
    deflateEnd(&gzip_->stream);
    gzip_.reset();
  } else {
    flush();
  }
  buffer_.clear();
  if (::close(fd_) != 0) fail("close failed for " + path_, errno);
  fd_ = -1;
  return status_.is_ok();
}

}  // namespace strata
