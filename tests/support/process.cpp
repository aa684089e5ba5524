#include "tests/support/process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace pe::testing {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string pe_actor_run_binary() {
  const char* path = std::getenv("PE_RUN_BINARY");
  return path != nullptr && *path != '\0' ? path : PE_RUN_BINARY;
}

run_result run_binary(const std::string& binary, const std::string& args,
                      const std::filesystem::path& scratch, const std::string& env) {
  auto out = (scratch / "stdout").string(), err = (scratch / "stderr").string();
  auto command = "env -u CPU_NUM " + env + " " + binary + " " + args + " >" + out + " 2>" + err;
  int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

exec_command::exec_command(const std::string& binary, const std::vector<std::string>& args,
                           const std::vector<std::string>& set)
    : words_{binary}, env_words_(set) {
  words_.insert(words_.end(), args.begin(), args.end());
  const auto dropped = [&](const char* entry) {
    if (std::strncmp(entry, "CPU_NUM=", 8) == 0) return true;
    return std::any_of(set.begin(), set.end(), [&](const std::string& word) {
      const auto name = word.substr(0, word.find('=') + 1); // "NAME="
      return std::strncmp(entry, name.c_str(), name.size()) == 0;
    });
  };
  for (char** e = environ; *e != nullptr; ++e)
    if (!dropped(*e)) env_words_.emplace_back(*e);
  for (auto& w : words_)
    argv_.push_back(w.data());
  argv_.push_back(nullptr);
  for (auto& w : env_words_)
    envp_.push_back(w.data());
  envp_.push_back(nullptr);
}

void exec_command::exec() const noexcept { ::execve(argv_[0], argv_.data(), envp_.data()); }

} // namespace pe::testing
