#include "apps/launch/launcher.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apps/launch/line_prefixer.hpp"
#include "apps/launch/rank_process.hpp"
#include "apps/launch/signal_inbox.hpp"
#include "collectives/net/job_admission.hpp"
#include "core/error.hpp"
#include "crypto/digest.hpp"
#include "crypto/random_bytes.hpp"

extern char** environ;

namespace pe {

namespace {

using steady = std::chrono::steady_clock;

/// Paddle's launch variables, which pe-actor-run also reads: left out of the ranks'
/// environment so that their flags alone say where they are.
constexpr std::array<std::string_view, 4> paddle_launch_env = {
  "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ENDPOINTS",
  "PADDLE_CURRENT_ENDPOINT"};

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

/// Writes all of `data` to `fd`, waiting while it is full. Output `fd` refuses (a closed pipe)
/// is dropped: the ranks' training goes on without it.
void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
    } else if (errno == EAGAIN) {
      pollfd writable{fd, POLLOUT, 0};
      ::poll(&writable, 1, -1);
    } else if (errno != EINTR) {
      return;
    }
  }
}

/// One line of the launcher's own on its stderr.
void say(const std::string& message) {
  write_all(2, "pe-actor-launch: " + message + "\n");
}

std::string signal_name(int sig) {
  auto* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

/// The ranks' environment: the launcher's without paddle_launch_env, with a job token of
/// this job's own in PE_ACTOR_JOB_TOKEN (unless the launcher's environment has one), so
/// that only the processes this launcher starts can join the job.
std::vector<std::string> rank_environment() {
  std::vector<std::string> env;
  bool has_token = false;
  for (auto** var = environ; *var; ++var) {
    std::string_view entry(*var);
    auto name = entry.substr(0, entry.find('='));
    bool paddle = false;
    for (auto launch : paddle_launch_env)
      paddle = paddle || name == launch;
    has_token = has_token || name == job_token_variable;
    if (!paddle)
      env.emplace_back(entry);
  }
  if (!has_token)
    env.push_back(std::string(job_token_variable) + "=" + to_hex(random_bytes(32)));
  return env;
}

/// One of a rank's output streams: the pipe it is read from and where its lines go.
struct rank_stream {
  unique_fd pipe;
  int sink; ///< the launcher's stdout or stderr
  line_prefixer lines;
};

struct rank {
  int number;
  pid_t pid;
  bool running;
  std::array<rank_stream, 2> streams; ///< stdout, stderr
};

/// Reads once from `stream`'s pipe, without waiting, and passes the whole lines on. At the end
/// of the stream (or a read error) passes the unterminated tail on and closes the pipe.
/// Returns whether there may be more to read now.
bool pump(rank_stream& stream) {
  std::array<char, 64 * 1024> buffer;
  auto n = ::read(stream.pipe.get(), buffer.data(), buffer.size());
  if (n > 0) {
    write_all(stream.sink, stream.lines.feed({buffer.data(), static_cast<std::size_t>(n)}));
    return true;
  }
  if (n < 0 && errno == EINTR)
    return true;
  if (n < 0 && errno == EAGAIN)
    return false;
  write_all(stream.sink, stream.lines.finish());
  stream.pipe.reset();
  return false;
}

/// Starts the ranks, passes their output on and ends them as launcher_usage says. The
/// destructor kills (SIGKILL) and reaps every rank still running, so that an error in the
/// launcher leaves no process behind.
class supervisor {
 public:
  supervisor(const launcher_options& options, std::string binary)
    : options_(options), binary_(std::move(binary)) {}
  supervisor(const supervisor&) = delete;
  supervisor& operator=(const supervisor&) = delete;

  ~supervisor() {
    for (auto& r : ranks_)
      if (r.running) {
        ::kill(-r.pid, SIGKILL);
        ::waitpid(r.pid, nullptr, 0);
      }
  }

  int run() {
    start();
    while (any_running()) {
      std::vector<pollfd> fds{{inbox_.fd(), POLLIN, 0}};
      std::vector<rank_stream*> streams;
      for (auto& r : ranks_)
        for (auto& s : r.streams)
          if (s.pipe) {
            fds.push_back({s.pipe.get(), POLLIN, 0});
            streams.push_back(&s);
          }
      if (::poll(fds.data(), fds.size(), poll_timeout_ms()) < 0 && errno != EINTR)
        throw error(errno_text("poll"));
      for (std::size_t i = 0; i < streams.size(); ++i)
        if (fds[i + 1].revents != 0)
          pump(*streams[i]);
      if (fds[0].revents != 0)
        for (int sig : inbox_.take())
          sig == SIGCHLD ? reap() : on_signal(sig);
      if (kill_at_ && steady::now() >= *kill_at_)
        kill_after_grace();
    }
    return exit_status_.value_or(0);
  }

 private:
  void start() {
    auto port = options_.master_port ? *options_.master_port : pick_free_port();
    rank_command command{binary_, {}, rank_environment(), inbox_.original_mask()};
    for (int r = 0; r < options_.nproc; ++r) {
      command.args = rank_arguments(options_, r, port);
      auto process = spawn_rank(command);
      auto prefix = "[rank " + std::to_string(r) + "] ";
      ranks_.push_back({r,
                        process.pid,
                        true,
                        {rank_stream{std::move(process.out), 1, line_prefixer(prefix)},
                         rank_stream{std::move(process.err), 2, line_prefixer(prefix)}}});
    }
  }

  bool any_running() const {
    for (const auto& r : ranks_)
      if (r.running)
        return true;
    return false;
  }

  int poll_timeout_ms() const {
    if (!kill_at_)
      return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*kill_at_ - steady::now());
    return static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, left.count()));
  }

  /// Collects every rank that has ended.
  void reap() {
    for (auto& r : ranks_) {
      int status = 0;
      if (r.running && ::waitpid(r.pid, &status, WNOHANG) == r.pid)
        ended(r, status);
    }
  }

  /// Passes on the rest of `r`'s output (everything it wrote is in its pipes now), then acts
  /// on how it ended.
  void ended(rank& r, int status) {
    r.running = false;
    for (auto& s : r.streams) {
      while (s.pipe && pump(s)) {
      }
      if (s.pipe) { // still open: a process the rank started holds it
        write_all(s.sink, s.lines.finish());
        s.pipe.reset();
      }
    }
    if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || stopping_)
      return; // success, or the launcher is ending the ranks itself
    std::string how;
    if (WIFSIGNALED(status)) {
      how = "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
            signal_name(WTERMSIG(status)) + ")";
      exit_status_ = 128 + WTERMSIG(status);
    } else {
      how = "exited with status " + std::to_string(WEXITSTATUS(status));
      exit_status_ = WEXITSTATUS(status);
    }
    stopping_ = true;
    if (!any_running()) {
      say("rank " + std::to_string(r.number) + " " + how);
      return;
    }
    say("rank " + std::to_string(r.number) + " " + how + "; sending SIGTERM to the other ranks");
    signal_running(SIGTERM);
    kill_at_ = steady::now() + std::chrono::duration_cast<steady::duration>(
                                std::chrono::duration<double>(options_.grace_s));
  }

  /// SIGINT or SIGTERM to the launcher: the first is forwarded, another one kills.
  void on_signal(int sig) {
    if (!stopping_) {
      say("got " + signal_name(sig) + "; forwarding it to every rank (another one kills them)");
      exit_status_ = 128 + sig;
      stopping_ = true;
      signal_running(sig);
      return;
    }
    say("got " + signal_name(sig) + " while the ranks are stopping; sending SIGKILL to every rank");
    signal_running(SIGKILL);
    kill_at_.reset();
  }

  void kill_after_grace() {
    std::ostringstream grace;
    grace << options_.grace_s;
    for (const auto& r : ranks_)
      if (r.running)
        say("rank " + std::to_string(r.number) + " did not stop within " + grace.str() +
            " s of SIGTERM; sending SIGKILL");
    signal_running(SIGKILL);
    kill_at_.reset();
  }

  /// Sends `sig` to the process group of every running rank.
  void signal_running(int sig) {
    for (const auto& r : ranks_)
      if (r.running)
        ::kill(-r.pid, sig);
  }

  const launcher_options& options_;
  std::string binary_;
  signal_inbox inbox_; ///< before any rank starts, so that no signal is missed
  std::vector<rank> ranks_;
  bool stopping_ = false; ///< the launcher has begun ending the ranks
  std::optional<steady::time_point> kill_at_; ///< when the ranks get SIGKILL after SIGTERM
  std::optional<int> exit_status_;          ///< the failing rank's, or 128 + the signal's
};

} // namespace

std::string find_run_binary() {
  std::string path;
  const char* env = std::getenv("PE_ACTOR_RUN");
  if (env && *env) {
    path = env;
  } else {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
      throw error("cannot find pe-actor-run: /proc/self/exe: " + ec.message() +
                  " (set PE_ACTOR_RUN to its path)");
    path = (self.parent_path() / "pe-actor-run").string();
  }
  std::string source =
    env && *env ? " ($PE_ACTOR_RUN)" : " (set PE_ACTOR_RUN to the pe-actor-run to start)";
  if (::access(path.c_str(), X_OK) != 0)
    throw error("cannot run " + path + ": " + std::strerror(errno) + source);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw error("cannot run " + path + ": not a file" + source);
  return path;
}

std::uint16_t pick_free_port() {
  unique_fd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket)
    throw error(errno_text("cannot pick a free port: socket"));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  auto* generic = reinterpret_cast<sockaddr*>(&address);
  if (::bind(socket.get(), generic, sizeof address) != 0)
    throw error(errno_text("cannot pick a free port: bind 127.0.0.1:0"));
  if (::getsockname(socket.get(), generic, &length) != 0)
    throw error(errno_text("cannot pick a free port: getsockname"));
  return ntohs(address.sin_port);
}

int run_launcher(const launcher_options& options, const std::string& binary) {
  supervisor launcher(options, binary);
  return launcher.run();
}

} // namespace pe
