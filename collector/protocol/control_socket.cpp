#include "control_socket.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace strata::collector {

namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

bool make_address(const std::string& path, sockaddr_un& addr, std::string* error) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    if (error != nullptr) *error = "socket path too long: " + path;
    return false;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool wait_fd(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    const int64_t left = deadline_ms - now_ms();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

}  // namespace

std::string socket_dir() {
  if (const char* d = std::getenv("STRATA_SOCKET_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0') return std::string(x) + "/strata";
  return "/tmp/strata-" + std::to_string(::getuid());
}

bool ensure_private_dir(const std::string& dir, std::string* error) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (error != nullptr) *error = errno_text("cannot create " + dir);
    return false;
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (error != nullptr) *error = errno_text("cannot stat " + dir);
    return false;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0) {
    if (error != nullptr)
      *error = "refusing to use " + dir + ": it must be a directory owned by uid " + std::to_string(::getuid()) +
               " with mode 0700";
    return false;
  }
  return true;
}

std::string agent_socket_path(const std::string& dir, pid_t pid) {
  return dir + "/" + std::to_string(pid) + ".sock";
}

bool ControlListener::listen(const std::string& path, uid_t allowed_uid, std::string* error) {
  sockaddr_un addr{};
  if (!make_address(path, addr, error)) return false;
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) {
    if (error != nullptr) *error = errno_text("socket");
    return false;
  }
  ::unlink(path.c_str());  // a leftover from a dead process that had our pid
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 8) != 0) {
    if (error != nullptr) *error = errno_text("cannot listen on " + path);
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  path_ = path;
  allowed_uid_ = allowed_uid;
  return true;
}

int ControlListener::accept_peer(std::string* error) {
  const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) {
    if (error != nullptr && errno != EAGAIN && errno != EWOULDBLOCK) *error = errno_text("accept");
    return -1;
  }
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != allowed_uid_) {
    send_reply(c, error_reply("permission denied: peer uid " + std::to_string(cred.uid) + " is not the job's user"));
    ::close(c);
    return -1;
  }
  return c;
}

void ControlListener::close() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(path_.c_str());
}

void ControlListener::forget() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::optional<std::string> read_line(int fd, int timeout_ms, std::string* error) {
  const int64_t deadline = now_ms() + timeout_ms;
  std::string line;
  char buf[512];
  while (line.find('\n') == std::string::npos) {
    if (line.size() > kMaxMessageBytes) {
      if (error != nullptr) *error = "message too long";
      return std::nullopt;
    }
    if (!wait_fd(fd, POLLIN, deadline)) {
      if (error != nullptr) *error = "timed out waiting for a message";
      return std::nullopt;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      if (error != nullptr) *error = n == 0 ? "connection closed before a full line" : errno_text("recv");
      return std::nullopt;
    }
    line.append(buf, static_cast<size_t>(n));
  }
  line.resize(line.find('\n') + 1);
  return line;
}

bool write_all(int fd, std::string_view data, int timeout_ms) {
  const int64_t deadline = now_ms() + timeout_ms;
  while (!data.empty()) {
    // MSG_NOSIGNAL: a peer that hung up must not SIGPIPE the job.
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_fd(fd, POLLOUT, deadline)) continue;
    return false;
  }
  return true;
}

void send_reply(int fd, const Message& reply) { write_all(fd, encode_message(reply), 1000); }

std::optional<Message> request(const std::string& path, const Message& req, int timeout_ms, std::string* error) {
  sockaddr_un addr{};
  if (!make_address(path, addr, error)) return std::nullopt;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (error != nullptr) *error = errno_text("socket");
    return std::nullopt;
  }
  std::optional<Message> reply;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (error != nullptr) *error = errno_text("cannot connect to " + path);
  } else {
    // Read even when sending failed: a server that refuses a peer replies and closes first.
    const bool sent = write_all(fd, encode_message(req), timeout_ms);
    const std::string send_error = errno_text("cannot send to " + path);
    if (auto line = read_line(fd, sent ? timeout_ms : 1000, error)) reply = decode_message(*line, error);
    else if (!sent && error != nullptr) *error = send_error;
  }
  ::close(fd);
  return reply;
}

}  // namespace strata::collector
