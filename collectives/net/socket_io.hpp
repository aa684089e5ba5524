#pragma once
// The one "write every byte" loop of the data links: socket_link's frames and link_door's
// hello and welcome.
#include <string>

#include <sys/uio.h>

namespace pe {

/// Writes every byte of `parts` (`count` of them; advanced in place) to the socket `fd`,
/// retrying after signals and never raising SIGPIPE; false on an error (`why` says which).
bool send_all(int fd, iovec* parts, int count, std::string& why);

} // namespace pe
