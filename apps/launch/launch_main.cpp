// pe-actor-launch: starts N pe-actor-run processes that train one job together. See --help.
#include <exception>
#include <iostream>

#include "apps/launch/launcher.hpp"

int main(int argc, char** argv) {
  try {
    auto options = pe::parse_launcher_options(argc, argv);
    if (!options) {
      std::cout << pe::launcher_usage();
      return 0;
    }
    return pe::run_launcher(*options, pe::find_run_binary());
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "pe-actor-launch: error: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "pe-actor-launch: error: unknown failure\n";
  }
  return 2;
}
