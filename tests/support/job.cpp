#include "tests/support/job.hpp"

#include <csignal>
#include <cstring>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/support/free_port.hpp"
#include "tests/support/process.hpp"

extern char** environ;

namespace pe::testing {

using namespace std::chrono_literals;

rank_process::rank_process(const std::vector<std::string>& args, const std::string& out, const std::string& err,
                           const std::string& binary)
    : out_(out), err_(err) {
  std::vector<std::string> words{binary};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (const int failed = posix_spawn(&pid_, argv[0], &files, nullptr, argv.data(), environ); failed != 0) {
    // Not "still running": the tests' messages would hide that nothing started.
    pid_ = -1;
    status_ = 127;
    std::ofstream(err) << "could not start " << binary << ": " << std::strerror(failed) << "\n";
  }
  posix_spawn_file_actions_destroy(&files);
}

rank_process::~rank_process() {
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::optional<int> rank_process::wait(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!status_ && pid_ > 0) {
    int s = 0;
    if (::waitpid(pid_, &s, WNOHANG) == pid_) status_ = WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
    else if (std::chrono::steady_clock::now() > deadline) break;
    else std::this_thread::sleep_for(20ms);
  }
  return status_;
}

std::string rank_process::out() const { return slurp(out_); }
std::string rank_process::err() const { return slurp(err_); }

bool rank_process::printed(const std::string& text, std::chrono::milliseconds limit) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (out().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

job::job(const temp_dir& dir, int n, const std::vector<std::string>& flags,
         const std::vector<std::vector<std::string>>& extra) {
  const std::string master = "127.0.0.1:" + std::to_string(free_port());
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> args = flags;
    args.insert(args.end(), {"--nnodes", std::to_string(n), "--node-rank", std::to_string(r), "--master", master});
    if (static_cast<std::size_t>(r) < extra.size()) args.insert(args.end(), extra[r].begin(), extra[r].end());
    ranks.push_back(std::make_unique<rank_process>(args, dir.file("out" + std::to_string(r)),
                                                   dir.file("err" + std::to_string(r))));
  }
}

std::string job::errors() const {
  std::string all;
  for (std::size_t r = 0; r < ranks.size(); ++r) all += "-- rank " + std::to_string(r) + "\n" + ranks[r]->err();
  return all;
}

std::vector<std::optional<int>> job::wait(std::chrono::milliseconds limit) {
  std::vector<std::optional<int>> out;
  for (auto& r : ranks) out.push_back(r->wait(limit));
  return out;
}

std::vector<double> losses(const std::string& metrics_file) {
  std::ifstream in(metrics_file);
  std::vector<double> out;
  if (!in) return out;
  const auto metrics = nlohmann::json::parse(in);
  for (const auto& s : metrics.at("steps")) out.push_back(s.at("loss").get<double>());
  return out;
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::string w;
  for (char c : text) {
    if (c == ' ') {
      if (!w.empty()) out.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

} // namespace pe::testing
