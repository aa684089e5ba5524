// pe-actor-run: trains a Paddle ProgramDesc (or a built-in MLP or CNN), or runs an inference model
// (--infer). See --help.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string_view>

#include <sys/ioctl.h>
#include <unistd.h>

#include "apps/run/inference.hpp"
#include "apps/run/options.hpp"
#include "apps/run/output_check.hpp"
#include "apps/run/progress_reporter.hpp"
#include "apps/run/trainer.hpp"

namespace {

/// Standard output as progress sees it: a terminal (a line rewritten in place) when isatty
/// says so and TERM is not "dumb" (a terminal that knows no escape codes), with its width;
/// anything else (a pipe, a file, a launcher's rank prefixes) gets plain lines.
pe::progress_display stdout_display() {
  pe::progress_display display;
  const char* term = std::getenv("TERM");
  display.terminal =
    ::isatty(STDOUT_FILENO) == 1 && !(term != nullptr && std::string_view(term) == "dumb");
  winsize size{};
  if (display.terminal && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0)
    display.columns = size.ws_col;
  return display;
}

} // namespace

int main(int argc, char** argv) {
  try {
    auto options = pe::parse_options(argc, argv, std::cout);
    if (!options)
      return 0; // --help
    pe::check_outputs(*options); // before any data is loaded
    if (options->infer) {
      pe::run_inference(*options, std::cout);
      return 0;
    }
    return pe::run_training(*options, std::cout, stdout_display());
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "pe-actor-run: error: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "pe-actor-run: error: unknown failure\n";
  }
  return 2;
}
