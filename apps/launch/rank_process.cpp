#include "apps/launch/rank_process.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "core/error.hpp"

namespace pe {

namespace {

/// `strings` as the null-terminated array of C strings execve() takes.
std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings)
    out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

/// A pipe whose ends are closed on exec (the child's ends are dup2()ed to 1 and 2).
std::pair<unique_fd, unique_fd> make_pipe() {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0)
    throw error(std::string("cannot create a pipe for a rank's output: ") + std::strerror(errno));
  return {unique_fd(ends[0]), unique_fd(ends[1])};
}

/// The child's side of spawn_rank, from fork() to exec. The launcher is single-threaded,
/// so the child may use the C library freely.
[[noreturn]] void become_rank(const rank_command& command, char* const* argv, char* const* envp,
                              pid_t launcher, int in, int out, int err) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) // the launcher died before prctl: no signal will come
    ::_exit(127);
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0)
    ::_exit(127);
  ::signal(SIGPIPE, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &command.mask, nullptr);
  ::execve(command.binary.c_str(), argv, envp);
  auto message = "pe-actor-launch: cannot execute " + command.binary + ": " +
                 std::strerror(errno) + "\n";
  [[maybe_unused]] auto written = ::write(2, message.data(), message.size());
  ::_exit(127);
}

} // namespace

rank_process spawn_rank(const rank_command& command) {
  auto argv_strings = command.args;
  argv_strings.insert(argv_strings.begin(), command.binary);
  auto argv = c_strings(argv_strings);
  auto envp = c_strings(command.env);
  unique_fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null)
    throw error(std::string("cannot open /dev/null for a rank's stdin: ") + std::strerror(errno));
  auto [out_read, out_write] = make_pipe();
  auto [err_read, err_write] = make_pipe();
  auto launcher = ::getpid();
  auto pid = ::fork();
  if (pid < 0)
    throw error(std::string("cannot start a rank: fork: ") + std::strerror(errno));
  if (pid == 0)
    become_rank(command, argv.data(), envp.data(), launcher, null.get(), out_write.get(),
                err_write.get());
  // Also here, so that the rank's group exists before the launcher signals it with kill(-pid)
  // (EACCES once the child has exec'd: it moved itself before that).
  ::setpgid(pid, pid);
  for (int fd : {out_read.get(), err_read.get()})
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return {pid, std::move(out_read), std::move(err_read)};
}

} // namespace pe
