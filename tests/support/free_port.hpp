#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pe::testing {

/// A TCP port on 127.0.0.1 that nobody listens on now (the OS's pick), for the master of a
/// multi-process job a test starts.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

} // namespace pe::testing
