// pe-actor-run: trains a Paddle ProgramDesc (or a built-in MLP or CNN), or runs an inference model
// (--infer). See --help.
#include <exception>
#include <iostream>

#include "apps/inference.hpp"
#include "apps/options.hpp"
#include "apps/output_check.hpp"
#include "apps/trainer.hpp"

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
    return pe::run_training(*options, std::cout);
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "pe-actor-run: error: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "pe-actor-run: error: unknown failure\n";
  }
  return 2;
}
