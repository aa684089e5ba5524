#include "apps/trace_tool.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>

#include <boost/program_options.hpp>

#include "apps/trace_file.hpp"
#include "apps/trace_summary.hpp"
#include "apps/trace_timeline.hpp"
#include "devices/error.hpp"

namespace po = boost::program_options;

namespace pe {

namespace {

constexpr const char* usage =
  "Usage: pe-actor-trace summarize FILE.json [--step N] [--gap-us US]\n"
  "       pe-actor-trace timeline FILE.json -o FILE.svg [--step N] [--no-messages]\n"
  "       pe-actor-trace [COMMAND] --help\n"
  "Reads a Chrome trace that pe-actor-run --trace wrote. An error prints one line starting\n"
  "with \"pe-actor-trace: error:\" and exits with status 2.\n";

po::options_description summarize_options() {
  po::options_description d(
    "pe-actor-trace summarize FILE.json: prints the time per op type (total, count, mean;\n"
    "longest total first), each track's busy time over the traced steps' wall time, and per\n"
    "step (every step of up to 3, else the first and the slowest) the critical path (the\n"
    "chain of spans that ends last, each preceded by the sender of its last message, with\n"
    "the wait for that message) and the idle gaps of each place and of the collectives\n\n"
    "Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("step", po::value<std::uint64_t>()->value_name("N"), "detail only step N")
    ("gap-us", po::value<double>()->value_name("US"),
     "list idle gaps longer than US microseconds (default: 5% of the step)");
  // clang-format on
  return d;
}

po::options_description timeline_options_description() {
  po::options_description d(
    "pe-actor-trace timeline FILE.json -o FILE.svg: draws one step as an SVG: a lane per\n"
    "track (places, their extra lanes, collectives), a span per firing coloured by op kind\n"
    "(lighter: backward ops) with its label and duration as tooltip, idle time as the lane\n"
    "background, messages as thin lines, a time axis from the step's start, a legend\n\n"
    "Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("output,o", po::value<std::string>()->value_name("FILE.svg"), "the SVG file to write (required)")
    ("step", po::value<std::uint64_t>()->value_name("N"),
     "the step to draw (default: the first traced step)")
    ("no-messages", po::bool_switch(), "leave out the message lines");
  // clang-format on
  return d;
}

/// Parses a subcommand's arguments (after its name) with its one positional FILE.json.
/// Returns false after printing help.
bool parse(int argc, const char* const* argv, const po::options_description& options,
           po::variables_map& vm, std::ostream& out) {
  po::options_description all;
  all.add(options).add_options()("file", po::value<std::string>());
  po::positional_options_description file;
  file.add("file", 1);
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(file).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw error(e.what());
  }
  if (vm.count("help")) {
    out << options << '\n';
    return false;
  }
  if (!vm.count("file"))
    throw error(std::string(argv[0]) + ": expected the trace FILE.json");
  return true;
}

int summarize(int argc, const char* const* argv, std::ostream& out) {
  po::variables_map vm;
  if (!parse(argc, argv, summarize_options(), vm, out))
    return 0;
  summary_options o;
  if (vm.count("step"))
    o.step = vm["step"].as<std::uint64_t>();
  if (vm.count("gap-us")) {
    o.gap_us = vm["gap-us"].as<double>();
    if (!(*o.gap_us >= 0))
      throw error("--gap-us must be a duration >= 0, got " + std::to_string(*o.gap_us));
  }
  print_summary(read_trace(vm["file"].as<std::string>()), o, out);
  return 0;
}

int timeline(int argc, const char* const* argv, std::ostream& out) {
  po::variables_map vm;
  if (!parse(argc, argv, timeline_options_description(), vm, out))
    return 0;
  if (!vm.count("output"))
    throw error("timeline: expected -o FILE.svg");
  auto path = vm["file"].as<std::string>();
  auto trace = read_trace(path);
  if (trace.steps.empty())
    throw error(path + ": the trace records no steps");
  timeline_options o;
  o.step = vm.count("step") ? vm["step"].as<std::uint64_t>() : trace.steps.front().step;
  o.messages = !vm["no-messages"].as<bool>();
  o.title = std::filesystem::path(path).filename().string();
  auto svg_path = vm["output"].as<std::string>();
  std::ofstream svg(svg_path);
  if (!svg)
    throw error("-o " + svg_path + ": cannot open the file for writing");
  write_timeline_svg(trace, o, svg);
  if (!svg.flush())
    throw error("-o " + svg_path + ": cannot write the SVG");
  return 0;
}

} // namespace

int run_trace_tool(int argc, const char* const* argv, std::ostream& out) {
  std::string command = argc > 1 ? argv[1] : "";
  if (command == "--help" || command == "-h") {
    out << usage << '\n' << summarize_options() << '\n' << timeline_options_description() << '\n';
    return 0;
  }
  if (command == "summarize")
    return summarize(argc - 1, argv + 1, out);
  if (command == "timeline")
    return timeline(argc - 1, argv + 1, out);
  throw error((command.empty() ? std::string("expected a command") : "unknown command '" + command + "'") +
              " (summarize, timeline; see --help)");
}

} // namespace pe
