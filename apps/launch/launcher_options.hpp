#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pe {

/// What pe-actor-launch was asked to do.
struct launcher_options {
  int nproc = 0;                            ///< processes to start (--nproc, required)
  std::optional<std::uint16_t> master_port; ///< --master-port; none: a free port is picked
  double grace_s = 10;                      ///< --grace: seconds from SIGTERM to SIGKILL
  std::vector<std::string> run_args;        ///< the flags every pe-actor-run gets, in order
};

/// pe-actor-launch --help: what it does, every flag with its default, the exit statuses.
std::string launcher_usage();

/// Parses pe-actor-launch's command line: its own flags anywhere before "--", every other
/// argument (and all after "--") passed on to pe-actor-run in order. Returns nothing for
/// --help. Throws pe::error naming the flag for a missing or bad value, a missing --nproc and
/// pe-actor-run flags the launcher sets itself (--nnodes, --node-rank, --master).
std::optional<launcher_options> parse_launcher_options(int argc, const char* const* argv);

/// Rank `rank`'s pe-actor-run arguments: the user's flags, then --nnodes, --node-rank and
/// --master 127.0.0.1:`master_port`.
std::vector<std::string> rank_arguments(const launcher_options& options, int rank,
                                        std::uint16_t master_port);

} // namespace pe
