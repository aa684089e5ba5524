#pragma once

#include <chrono>

#include "collectives/net/process_group.hpp"

namespace pe::testing {

/// Rank `rank` of a job of two processes meeting at 127.0.0.1:`port`, as the job-token and
/// TLS tests form them: short peer timeout, a join timeout that a refused stranger's wait
/// fits in, one fingerprint line.
inline process_group_options two_process_options(int rank, int port) {
  using namespace std::chrono_literals;
  process_group_options o;
  o.rank = rank;
  o.size = 2;
  o.master_port = port;
  o.peer_timeout = 2s;
  o.join_timeout = 20s;
  o.fingerprint = {{"program", "a"}};
  return o;
}

} // namespace pe::testing
