// pe-actor-trace: summarizes and draws the traces pe-actor-run --trace writes. See --help.
#include <exception>
#include <iostream>

#include "apps/trace/trace_tool.hpp"

int main(int argc, char** argv) {
  try {
    return pe::run_trace_tool(argc, argv, std::cout);
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "pe-actor-trace: error: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "pe-actor-trace: error: unknown failure\n";
  }
  return 2;
}
