#include "collectives/net/socket_io.hpp"

#include <cerrno>
#include <cstring>

#include <sys/socket.h>

namespace pe {

bool send_all(int fd, iovec* parts, int count, std::string& why) {
  while (count > 0) {
    msghdr m{};
    m.msg_iov = parts;
    m.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t sent = ::sendmsg(fd, &m, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      why = std::string("its data connection broke: ") + std::strerror(errno);
      return false;
    }
    auto left = static_cast<std::size_t>(sent);
    while (count > 0 && left >= parts->iov_len) {
      left -= parts->iov_len;
      ++parts;
      --count;
    }
    if (count > 0) {
      parts->iov_base = static_cast<char*>(parts->iov_base) + left;
      parts->iov_len -= left;
    }
  }
  return true;
}

} // namespace pe
