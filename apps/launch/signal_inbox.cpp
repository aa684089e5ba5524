#include "apps/launch/signal_inbox.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include <sys/signalfd.h>
#include <unistd.h>

#include "core/error.hpp"

namespace pe {

namespace {

/// Whether the launcher was started with `sig` ignored.
bool ignored(int sig) {
  struct sigaction action {};
  return ::sigaction(sig, nullptr, &action) == 0 && action.sa_handler == SIG_IGN;
}

} // namespace

signal_inbox::signal_inbox() {
  sigset_t read, blocked;
  sigemptyset(&read);
  sigaddset(&read, SIGCHLD);
  for (int sig : {SIGINT, SIGTERM})
    if (!ignored(sig))
      sigaddset(&read, sig);
  blocked = read;
  sigaddset(&blocked, SIGPIPE);
  if (::sigprocmask(SIG_BLOCK, &blocked, &original_mask_) != 0)
    throw error(std::string("cannot block signals: ") + std::strerror(errno));
  fd_.reset(::signalfd(-1, &read, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd_) {
    auto why = std::strerror(errno);
    ::sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
    throw error(std::string("cannot open a signalfd: ") + why);
  }
}

std::vector<int> signal_inbox::take() {
  std::vector<int> signals;
  signalfd_siginfo info;
  while (::read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info))
    signals.push_back(static_cast<int>(info.ssi_signo));
  return signals;
}

} // namespace pe
