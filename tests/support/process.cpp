#include "tests/support/process.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace pe::testing {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

run_result run_binary(const std::string& binary, const std::string& args,
                      const std::filesystem::path& scratch, const std::string& env) {
  auto out = (scratch / "stdout").string(), err = (scratch / "stderr").string();
  auto command = "env -u CPU_NUM " + env + " " + binary + " " + args + " >" + out + " 2>" + err;
  int raw = std::system(command.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out), slurp(err)};
}

} // namespace pe::testing
