#pragma once

#include <optional>
#include <string>

namespace pe {

/// The flags that place a process in a multi-process job (torchrun's names), as given on
/// the command line; unset when not given.
struct launch_flags {
  std::optional<int> nnodes;         ///< --nnodes
  std::optional<int> node_rank;      ///< --node-rank
  std::optional<std::string> master; ///< --master HOST:PORT
};

/// This process's place in the job.
struct launch_config {
  int nnodes = 1;
  int node_rank = 0;
  std::string master_host; ///< empty in a one-process run without --master
  int master_port = 0;
};

/// A host and port parsed from "HOST:PORT" ("[IPv6]:PORT" for an IPv6 address).
struct endpoint {
  std::string host;
  int port = 0;

  bool operator==(const endpoint&) const = default;
  /// "HOST:PORT" again.
  std::string text() const;
};

/// Parses "HOST:PORT"; throws pe::error naming `what` (the flag or variable) for a missing
/// host or port, or a port outside 1..65535.
endpoint parse_endpoint(const std::string& text, const std::string& what);

/// Combines the flags with Paddle's launch environment, which can stand in for them:
/// PADDLE_TRAINERS_NUM (nnodes), PADDLE_TRAINER_ID (node rank), PADDLE_TRAINER_ENDPOINTS
/// (every process's HOST:PORT, comma-separated, in rank order; the first is the master's)
/// and PADDLE_CURRENT_ENDPOINT (this process's, which must be the one at its rank). Throws
/// pe::error naming the flag or variable for a malformed value, a node rank out of range,
/// a flag and a variable (or two variables) that disagree, and nnodes > 1 without a master.
launch_config resolve_launch(const launch_flags& flags);

} // namespace pe
