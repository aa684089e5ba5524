#pragma once

#include <string>
#include <vector>

#include <signal.h>
#include <sys/types.h>

#include "apps/launch/unique_fd.hpp"

namespace pe {

/// How to start one rank of pe-actor-launch, prepared before fork() so that the child only
/// makes system calls between fork() and exec.
struct rank_command {
  std::string binary;            ///< the program (a path: no $PATH search)
  std::vector<std::string> args; ///< its arguments, without argv[0]
  std::vector<std::string> env;  ///< its whole environment, NAME=VALUE
  sigset_t mask;                 ///< its signal mask
};

/// A started rank: its process, which leads its own process group, and the read ends
/// (non-blocking, close-on-exec) of the pipes that carry its stdout and stderr.
struct rank_process {
  pid_t pid;
  unique_fd out;
  unique_fd err;
};

/// Starts `command` as a rank: in a new process group (a Ctrl-C in the launcher's terminal
/// reaches the launcher only, which forwards it), stdin from /dev/null, stdout and stderr into
/// fresh pipes, SIGPIPE at its default, and SIGKILL when the launcher dies
/// (PR_SET_PDEATHSIG) so that no rank outlives it. Throws pe::error when a pipe or fork()
/// fails; a failing exec shows as a rank that writes why to its stderr and exits with
/// status 127.
rank_process spawn_rank(const rank_command& command);

} // namespace pe
