// Unix-domain sockets of the control protocol: the per-user directory that holds one
// socket per agent (<dir>/<pid>.sock), the agent's listener with its peer-uid check, and
// the client's one-shot request.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "message.h"

namespace strata::collector {

// $STRATA_SOCKET_DIR, else $XDG_RUNTIME_DIR/strata, else /tmp/strata-<uid>.
std::string socket_dir();
// Creates the directory with mode 0700, or checks that an existing one is ours and
// private: a directory others can write to would let them plant fake agents.
bool ensure_private_dir(const std::string& dir, std::string* error);
std::string agent_socket_path(const std::string& dir, pid_t pid);

class ControlListener {
 public:
  ControlListener() = default;
  ControlListener(const ControlListener&) = delete;
  ControlListener& operator=(const ControlListener&) = delete;
  ~ControlListener() { close(); }

  bool listen(const std::string& path, uid_t allowed_uid, std::string* error);
  int fd() const { return fd_; }
  // Accepts one pending connection. Returns its fd, or -1 when none is pending or the
  // peer is another user (that peer gets an error reply and is closed).
  int accept_peer(std::string* error);
  void close();          // stops listening and removes the socket file
  void forget();         // after fork(): close our copy, leave the parent's file alone

 private:
  int fd_ = -1;
  uid_t allowed_uid_ = 0;
  std::string path_;
};

// Reads one '\n'-terminated line of at most kMaxMessageBytes before the deadline.
std::optional<std::string> read_line(int fd, int timeout_ms, std::string* error);
bool write_all(int fd, std::string_view data, int timeout_ms);
void send_reply(int fd, const Message& reply);

// Connects to `path`, sends `req`, and returns the reply (nullopt with `error` on failure).
std::optional<Message> request(const std::string& path, const Message& req, int timeout_ms, std::string* error);

}  // namespace strata::collector
