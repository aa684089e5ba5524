#pragma once

#include <cstdint>
#include <string>

#include "apps/launch/launcher_options.hpp"

namespace pe {

/// The pe-actor-run that pe-actor-launch starts: $PE_ACTOR_RUN when set, else pe-actor-run in
/// the directory of the running executable. Throws pe::error naming the path when it is not an
/// executable file.
std::string find_run_binary();

/// A TCP port free on 127.0.0.1 now (bound with port 0, read back, closed again).
std::uint16_t pick_free_port();

/// pe-actor-launch: starts options.nproc ranks of `binary` (see rank_arguments) on
/// options.master_port or a free port, passes their output on line by line with a
/// "[rank R] " prefix, and ends them all when one fails or the launcher gets SIGINT or SIGTERM
/// (see launcher_usage). Returns the launcher's exit status. Every rank has ended when it
/// returns or throws.
int run_launcher(const launcher_options& options, const std::string& binary);

} // namespace pe
