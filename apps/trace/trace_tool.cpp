#include "apps/trace/trace_tool.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "apps/trace/trace_file.hpp"
#include "apps/trace/trace_merge.hpp"
#include "apps/trace/trace_stragglers.hpp"
#include "apps/trace/trace_summary.hpp"
#include "apps/trace/trace_timeline.hpp"
#include "core/error.hpp"

namespace po = boost::program_options;

namespace pe {

namespace {

constexpr const char* usage =
  "Usage: pe-actor-trace summarize FILE.json [--step N] [--gap-us US]\n"
  "       pe-actor-trace timeline FILE.json -o FILE.svg [--step N] [--no-messages]\n"
  "       pe-actor-trace merge -o OUT.json IN.json...\n"
  "       pe-actor-trace stragglers MERGED.json [--top N]\n"
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

po::options_description merge_options() {
  po::options_description d(
    "pe-actor-trace merge -o OUT.json IN.json...: joins the traces the processes of one job\n"
    "wrote (pe-actor-run --nnodes N --trace t.json: t.rank0.json ... on each rank) into one\n"
    "Chrome trace: a process \"rank R\" per input, every time moved onto rank 0's clock by\n"
    "the clock offset each process estimated at rendezvous (off by up to half a round trip),\n"
    "and per collective an arrow from each process to every other one (up to " +
    std::to_string(max_processes_with_network_arrows) + " processes) and, on a process\n"
    "\"collective skew\", a span from the earliest process's arrival to the latest's.\n"
    "summarize and timeline read one process's trace, not a merged one\n\n"
    "Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("output,o", po::value<std::string>()->value_name("OUT.json"),
     "the merged trace to write (required)");
  // clang-format on
  return d;
}

po::options_description stragglers_options() {
  po::options_description d(
    "pe-actor-trace stragglers MERGED.json: how late each process came to the collectives of\n"
    "a job, from a trace pe-actor-trace merge wrote: per rank the median, 95th percentile and\n"
    "largest lateness (its arrival, the start of its span of a collective, after the earliest\n"
    "process's, on rank 0's clock) and how often it came last; then the latest arrivals with\n"
    "their collective and step. A process that is slow but moving shows here, not as a stall\n\n"
    "Options");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("top", po::value<std::size_t>()->value_name("N")->default_value(5), "the latest arrivals to list");
  // clang-format on
  return d;
}

/// Parses a subcommand's arguments (after its name); its positional arguments, at most
/// `max_files` (-1: any number), are trace files. Returns false after printing help.
bool parse(int argc, const char* const* argv, const po::options_description& options,
           int max_files, po::variables_map& vm, std::ostream& out) {
  po::options_description all;
  all.add(options).add_options()("file", po::value<std::vector<std::string>>());
  po::positional_options_description file;
  file.add("file", max_files);
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
  return true;
}

/// The one trace FILE.json summarize or timeline names.
std::string trace_path(const po::variables_map& vm, const std::string& command) {
  if (!vm.count("file"))
    throw error(command + ": expected the trace FILE.json");
  return vm["file"].as<std::vector<std::string>>().front();
}

/// read_trace for summarize or timeline. A merged trace (several processes' tracks under one
/// clock) fails read_trace; it is refused naming what to read instead.
trace_file read_one_trace(const std::string& path, const std::string& command) {
  try {
    return read_trace(path);
  } catch (const error&) {
    if (is_merged_trace(path))
      throw error(path + ": a trace that pe-actor-trace merge wrote; " + command +
                  " reads one process's trace (such as t.rank0.json)");
    throw;
  }
}

int summarize(int argc, const char* const* argv, std::ostream& out) {
  po::variables_map vm;
  if (!parse(argc, argv, summarize_options(), 1, vm, out))
    return 0;
  summary_options o;
  if (vm.count("step"))
    o.step = vm["step"].as<std::uint64_t>();
  if (vm.count("gap-us")) {
    o.gap_us = vm["gap-us"].as<double>();
    if (!(*o.gap_us >= 0))
      throw error("--gap-us must be a duration >= 0, got " + std::to_string(*o.gap_us));
  }
  print_summary(read_one_trace(trace_path(vm, "summarize"), "summarize"), o, out);
  return 0;
}

int timeline(int argc, const char* const* argv, std::ostream& out) {
  po::variables_map vm;
  if (!parse(argc, argv, timeline_options_description(), 1, vm, out))
    return 0;
  if (!vm.count("output"))
    throw error("timeline: expected -o FILE.svg");
  auto path = trace_path(vm, "timeline");
  auto trace = read_one_trace(path, "timeline");
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

int merge(int argc, const char* const* argv, std::ostream& out) {
  po::variables_map vm;
  if (!parse(argc, argv, merge_options(), -1, vm, out))
    return 0;
  if (!vm.count("output"))
    throw error("merge: expected -o OUT.json");
  auto inputs = vm.count("file") ? vm["file"].as<std::vector<std::string>>()
                                 : std::vector<std::string>{};
  auto path = vm["output"].as<std::string>();
  // Read every input before opening the output, which may be one of them.
  std::ostringstream merged;
  auto report = merge_traces(inputs, merged);
  std::ofstream file(path);
  if (!file)
    throw error("-o " + path + ": cannot open the file for writing");
  if (!(file << merged.str()).flush())
    throw error("-o " + path + ": cannot write the trace");
  out << "merged " << inputs.size() << " traces (ranks 0.." << inputs.size() - 1 << ") into "
      << path << ": " << report.events << " events, ";
  if (report.network_arrows_left_out)
    out << "no network arrows (more than " << max_processes_with_network_arrows << " processes)";
  else
    out << report.network_arrows << " network arrows";
  out << ", the arrival skew of " << report.skew_spans
      << (report.skew_spans == 1 ? " collective\n" : " collectives\n");
  return 0;
}

int stragglers(int argc, const char* const* argv, std::ostream& out) {
  po::variables_map vm;
  if (!parse(argc, argv, stragglers_options(), 1, vm, out))
    return 0;
  const std::string path = trace_path(vm, "stragglers");
  std::ifstream in(path);
  if (!in)
    throw error(path + ": cannot open the trace");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw error(path + ": not JSON: " + e.what());
  }
  try {
    print_stragglers(find_stragglers(doc, vm["top"].as<std::size_t>()), out);
  } catch (const nlohmann::json::exception& e) {
    throw error(path + ": not a pe-actor trace of the expected shape: " + e.what());
  } catch (const error& e) {
    throw error(path + ": " + e.what());
  }
  return 0;
}

} // namespace

int run_trace_tool(int argc, const char* const* argv, std::ostream& out) {
  std::string command = argc > 1 ? argv[1] : "";
  if (command == "--help" || command == "-h") {
    out << usage << '\n' << summarize_options() << '\n' << timeline_options_description() << '\n'
        << merge_options() << '\n' << stragglers_options() << '\n';
    return 0;
  }
  if (command == "summarize")
    return summarize(argc - 1, argv + 1, out);
  if (command == "timeline")
    return timeline(argc - 1, argv + 1, out);
  if (command == "merge")
    return merge(argc - 1, argv + 1, out);
  if (command == "stragglers")
    return stragglers(argc - 1, argv + 1, out);
  throw error((command.empty() ? std::string("expected a command") : "unknown command '" + command + "'") +
              " (summarize, timeline, merge, stragglers; see --help)");
}

} // namespace pe
