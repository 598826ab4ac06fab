#include "core/source.h"

#include "core/big_alloc.h"
#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>
#include <zlib.h>

namespace strata {

SourceBuffer& SourceBuffer::operator=(SourceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    capacity_ = o.capacity_;
    mapped_ = o.mapped_;
    o.data_ = nullptr;
    o.size_ = o.capacity_ = o.mapped_ = 0;
  }
  return *this;
}

void SourceBuffer::release() {
  if (!data_) return;
  if (mapped_)
    munmap(data_, mapped_);
  else
    std::free(data_);
  data_ = nullptr;
}

SourceBuffer SourceBuffer::allocate(size_t capacity) {
  SourceBuffer b;
  b.data_ = static_cast<char*>(std::malloc(capacity + kSourcePadding));
  if (!b.data_) return b;
  b.capacity_ = capacity;
  std::memset(b.data_ + capacity, 0, kSourcePadding);
  return b;
}

bool SourceBuffer::grow(size_t capacity) {
  if (mapped_) return false;
  auto* p = static_cast<char*>(std::realloc(data_, capacity + kSourcePadding));
  if (!p) return false;
  data_ = p;
  capacity_ = capacity;
  std::memset(data_ + capacity, 0, kSourcePadding);
  return true;
}

SourceBuffer SourceBuffer::map_file(int fd, size_t size) {
  // Reserve room for the file plus padding, then map the file over its start: the bytes
  // after the end of the file are anonymous zero pages, so reads past the end are safe.
  SourceBuffer b;
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t total = (size + kSourcePadding + page - 1) / page * page;
  void* region = mmap(nullptr, total, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return b;
  void* file = mmap(region, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (file == MAP_FAILED) {
    munmap(region, total);
    return b;
  }
  b.data_ = static_cast<char*>(region);
  b.size_ = b.capacity_ = size;
  b.mapped_ = total;
  return b;
}

SourceBuffer SourceBuffer::allocate_pages(size_t size) {
  // Anonymous pages end zeroed past `size`: that is the padding.
  SourceBuffer b;
  constexpr size_t kHuge = size_t(2) << 20;
  size_t total = (size + kSourcePadding + kHuge - 1) / kHuge * kHuge;
  void* region = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return b;
  advise_huge_pages(region, total);
  b.data_ = static_cast<char*>(region);
  b.size_ = b.capacity_ = size;
  b.mapped_ = total;
  return b;
}

namespace {

// Whether nearly all of the mapped file is in the page cache.
bool mostly_resident(const SourceBuffer& mapped) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((mapped.size() + page - 1) / page);
  if (mincore(const_cast<char*>(mapped.data()), mapped.size(), in.data()) != 0) return false;
  size_t resident = 0;
  for (unsigned char c : in) resident += c & 1;
  return resident >= in.size() - in.size() / 16;
}

// Copies a cached file into huge pages with a few threads. Reading the mapping directly
// costs a first-touch fault per 4 KiB page, which on virtual machines is more than the
// copy; a cold file stays mapped so that the parse overlaps the disk reads.
void copy_to_huge_pages(int fd, const std::string& path, ReadResult& r, Progress* progress) {
  size_t size = r.buffer.size();
  long pages = sysconf(_SC_PHYS_PAGES);
  if (pages > 0 && size > size_t(pages) * size_t(sysconf(_SC_PAGESIZE)) / 4) return;
  if (!mostly_resident(r.buffer)) return;
  SourceBuffer copy = SourceBuffer::allocate_pages(size);
  if (!copy.data()) return;
  constexpr size_t kPiece = size_t(8) << 20;
  size_t pieces = (size + kPiece - 1) / kPiece;
  std::atomic<bool> failed{false};
  unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  parallel_for(threads, pieces, [&](size_t k) {
    if (failed || (progress && progress->cancelled())) return void(failed = true);
    size_t begin = k * kPiece, end = std::min(size, begin + kPiece);
    while (begin < end) {
      ssize_t got = pread(fd, copy.writable() + begin, end - begin, off_t(begin));
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        return void(failed = true);
      }
      begin += size_t(got);
      if (progress) progress->done.fetch_add(size_t(got), std::memory_order_relaxed);
    }
  });
  if (failed) {
    if (progress && progress->cancelled()) r.status = Status::cancelled(path + ": cancelled");
    return;
  }
  r.buffer = std::move(copy);
}

bool is_gzip(std::string_view b) { return b.size() >= 2 && uint8_t(b[0]) == 0x1f && uint8_t(b[1]) == 0x8b; }

Status errno_status(const std::string& path, const char* what) {
  const int e = errno;
  return {e == ENOENT ? StatusCode::NotFound : StatusCode::Io, path + ": " + what + ": " + std::strerror(e)};
}

void inflate_gzip(const std::string& path, const unsigned char* in, size_t in_size, ReadResult& r,
                  Progress* progress) {
  // The trailer's ISIZE (size mod 2^32) is a good first guess for the output size, when
  // it is plausible: deflate expands at most about 1032 to 1, and a damaged file's
  // trailer is arbitrary.
  size_t guess = in_size * 4;
  if (in_size >= 18) {
    uint32_t isize;
    std::memcpy(&isize, in + in_size - 4, 4);
    if (isize >= in_size && isize / 1032 <= in_size) guess = isize;
  }
  r.buffer = SourceBuffer::allocate(guess + 1);
  if (!r.buffer.data()) {
    r.status = {StatusCode::OutOfMemory, path + ": out of memory for " + std::to_string(guess) + " bytes"};
    return;
  }
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) {
    r.status = {StatusCode::Internal, path + ": cannot initialise zlib"};
    return;
  }
  size_t out = 0, consumed = 0;
  int rc = Z_OK;
  while (true) {
    if (out == r.buffer.capacity() && !r.buffer.grow(r.buffer.capacity() + r.buffer.capacity() / 2 + 4096)) {
      r.status = {StatusCode::OutOfMemory, path + ": out of memory inflating gzip at compressed byte " + std::to_string(consumed)};
      break;
    }
    size_t in_chunk = std::min<size_t>(in_size - consumed, 1u << 30);
    zs.next_in = const_cast<unsigned char*>(in + consumed);
    zs.avail_in = uInt(in_chunk);
    size_t out_chunk = std::min<size_t>(r.buffer.capacity() - out, 1u << 30);
    zs.next_out = reinterpret_cast<unsigned char*>(r.buffer.writable() + out);
    zs.avail_out = uInt(out_chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    consumed += in_chunk - zs.avail_in;
    out += out_chunk - zs.avail_out;
    if (progress) progress->done.store(consumed, std::memory_order_relaxed);
    if (progress && progress->cancelled()) {
      r.status = Status::cancelled(path + ": cancelled");
      break;
    }
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members form one stream; skip trailing zero padding.
      size_t rest = consumed;
      while (rest < in_size && in[rest] == 0) ++rest;
      if (rest >= in_size) break;
      consumed = rest;
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && consumed == in_size) {
      if (out == 0)
        r.status = Status::invalid(path + ": gzip stream is truncated or corrupt at compressed byte " +
                                   std::to_string(consumed) + " and holds no data");
      else
        r.warning = path + ": gzip stream is truncated at compressed byte " + std::to_string(consumed) +
                    "; reading the " + std::to_string(out) + " bytes it holds";
      break;
    }
    if (rc == Z_BUF_ERROR) continue;  // output full: grow and go on
    r.status = Status::invalid(path + ": corrupt gzip data at compressed byte " + std::to_string(consumed) + " (" +
                               (zs.msg ? zs.msg : "inflate error") + ")");
    break;
  }
  inflateEnd(&zs);
  r.buffer.set_size(out);
  if (r.buffer.capacity() > out) std::memset(r.buffer.writable() + out, 0, std::min<size_t>(r.buffer.capacity() - out, kSourcePadding));
  if (!r.status.is_ok()) r.buffer = SourceBuffer();
}

}  // namespace

ReadResult read_source(const std::string& path, Progress* progress) {
  ReadResult r;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.status = errno_status(path, "cannot open");
    return r;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    r.status = errno_status(path, "cannot stat");
    ::close(fd);
    return r;
  }
  if (S_ISDIR(st.st_mode)) {
    r.status = Status::invalid(path + ": is a directory, not a trace file");
    ::close(fd);
    return r;
  }
  if (!S_ISREG(st.st_mode)) {
    r.status = Status::invalid(path + ": not a regular file");
    ::close(fd);
    return r;
  }
  size_t size = size_t(st.st_size);
  r.file_bytes = size;
  if (progress) progress->total.store(size, std::memory_order_relaxed);
  if (size == 0) {
    r.status = Status::invalid(path + ": empty file (0 bytes)");
    ::close(fd);
    return r;
  }
  SourceBuffer mapped = SourceBuffer::map_file(fd, size);
  if (!mapped.data()) {
    r.status = errno_status(path, "cannot map");
    ::close(fd);
    return r;
  }
  if (is_gzip(mapped.view())) {
    ::close(fd);
    r.gzip = true;
    madvise(mapped.writable(), size, MADV_SEQUENTIAL);
    inflate_gzip(path, reinterpret_cast<const unsigned char*>(mapped.data()), size, r, progress);
    return r;
  }
  r.buffer = std::move(mapped);
  copy_to_huge_pages(fd, path, r, progress);
  ::close(fd);
  return r;
}

ReadResult read_source_bytes(const std::string& name, std::string_view bytes, Progress* progress) {
  ReadResult r;
  r.file_bytes = bytes.size();
  if (progress) progress->total.store(bytes.size(), std::memory_order_relaxed);
  if (bytes.empty()) {
    r.status = Status::invalid(name + ": empty file (0 bytes)");
    return r;
  }
  if (is_gzip(bytes)) {
    r.gzip = true;
    inflate_gzip(name, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), r, progress);
    return r;
  }
  r.buffer = SourceBuffer::allocate(bytes.size());
  if (!r.buffer.data()) {
    r.status = {StatusCode::OutOfMemory, name + ": out of memory for " + std::to_string(bytes.size()) + " bytes"};
    return r;
  }
  std::memcpy(r.buffer.writable(), bytes.data(), bytes.size());
  r.buffer.set_size(bytes.size());
  return r;
}

}  // namespace strata
