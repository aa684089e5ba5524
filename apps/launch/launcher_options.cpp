#include "apps/launch/launcher_options.hpp"

#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <string_view>

#include "core/error.hpp"

namespace pe {

namespace {

/// The flags that tell a pe-actor-run its place in the job: the launcher sets them per rank.
constexpr std::array<std::string_view, 3> rank_flags = {"--nnodes", "--node-rank", "--master"};

/// The longest --grace accepted: a day, far beyond any shutdown and far from overflowing a
/// clock's duration.
constexpr double max_grace_s = 86400;

/// The flag part of "--name" or "--name=value".
std::string_view flag_name(std::string_view arg) {
  return arg.substr(0, arg.find('='));
}

/// Refuses a pe-actor-run argument that sets one of rank_flags, spelled out or abbreviated
/// (pe-actor-run's option parser accepts any unambiguous prefix of a long flag).
void refuse_rank_flag(std::string_view arg) {
  auto name = flag_name(arg);
  if (!name.starts_with("--") || name.size() <= 2)
    return;
  for (auto flag : rank_flags) {
    if (!flag.starts_with(name))
      continue;
    auto spelled = name == flag ? std::string(flag)
                                : std::string(name) + " (pe-actor-run reads it as " +
                                    std::string(flag) + ")";
    throw error(spelled +
                " is set by pe-actor-launch for each rank (--nnodes N --node-rank R --master "
                "127.0.0.1:PORT); leave it out");
  }
}

/// `value` as an integer in [min, max]; the error names `flag`.
long long parse_integer(std::string_view flag, std::string_view value, long long min,
                        long long max) {
  long long number = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (ec != std::errc() || end != value.data() + value.size() || number < min || number > max)
    throw error(std::string(flag) + ": expected an integer from " + std::to_string(min) +
                " to " + std::to_string(max) + ", got '" + std::string(value) + "'");
  return number;
}

/// `value` as a number of seconds in [0, max_grace_s]; the error names `flag`.
double parse_seconds(std::string_view flag, std::string_view value) {
  double seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(seconds) ||
      seconds < 0 || seconds > max_grace_s)
    throw error(std::string(flag) + ": expected seconds from 0 to " +
                std::to_string(static_cast<int>(max_grace_s)) + ", got '" + std::string(value) +
                "'");
  return seconds;
}

} // namespace

std::string launcher_usage() {
  return "Usage: pe-actor-launch --nproc N [--master-port P] [--grace SECONDS] [--]\n"
         "                       [pe-actor-run flags...]\n"
         "Starts N pe-actor-run processes on this machine that train one job together: rank R\n"
         "runs with the given pe-actor-run flags followed by\n"
         "  --nnodes N --node-rank R --master 127.0.0.1:P\n"
         "\n"
         "Options\n"
         "  --nproc N           the number of processes to start (required, 1 or more)\n"
         "  --master-port P     the port of rank 0 (default: a port that is free on 127.0.0.1\n"
         "                      when the launcher starts; another program may take it before\n"
         "                      rank 0 listens, so give one where that matters)\n"
         "  --grace SECONDS     after a rank fails, how long the other ranks have between\n"
         "                      SIGTERM and SIGKILL (default: 10)\n"
         "  -h, --help          print this help and exit\n"
         "Every other argument, and every argument after \"--\" (e.g. -- --help for\n"
         "pe-actor-run's help), is passed to each pe-actor-run in the given order. It must not\n"
         "set --nnodes, --node-rank or --master.\n"
         "\n"
         "The program started is $PE_ACTOR_RUN when that is set, else the pe-actor-run in the\n"
         "directory of pe-actor-launch. Each rank gets the launcher's environment without\n"
         "PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS and\n"
         "PADDLE_CURRENT_ENDPOINT (its flags say where it is), stdin from /dev/null, and its\n"
         "own process group; it gets SIGKILL if the launcher dies. Unless the launcher's\n"
         "environment has PE_ACTOR_JOB_TOKEN, the ranks get a fresh random one there (32\n"
         "bytes, hex), so that only the processes of this launch can join the job.\n"
         "\n"
         "Output: every line a rank writes to stdout (stderr) is written to the launcher's\n"
         "stdout (stderr) prefixed with \"[rank R] \", whole lines only: a line is held until its\n"
         "newline or the end of the rank's output.\n"
         "\n"
         "Exit status: 0 when every rank exits with status 0. When a rank exits with another\n"
         "status or is killed by a signal, the launcher says which and how, sends SIGTERM to the\n"
         "other ranks, SIGKILL to those still running --grace seconds later, and exits with that\n"
         "rank's status (128 + the signal's number for a signal). SIGINT or SIGTERM to the\n"
         "launcher (a Ctrl-C in its terminal included) is forwarded once to every rank; a second\n"
         "one sends SIGKILL to every rank; the launcher then exits with 130 (SIGINT) or 143\n"
         "(SIGTERM) once every rank has ended. A signal the launcher was started ignoring (as a\n"
         "background job of a non-interactive shell is, for SIGINT) stays ignored. Bad flags\n"
         "and a missing pe-actor-run print one line starting with \"pe-actor-launch: error:\"\n"
         "and exit with status 2.\n";
}

std::optional<launcher_options> parse_launcher_options(int argc, const char* const* argv) {
  launcher_options options;
  bool has_nproc = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      options.run_args.insert(options.run_args.end(), argv + i + 1, argv + argc);
      break;
    }
    if (arg == "--help" || arg == "-h")
      return std::nullopt;
    auto name = flag_name(arg);
    if (name != "--nproc" && name != "--master-port" && name != "--grace") {
      options.run_args.emplace_back(arg);
      continue;
    }
    std::string_view value;
    if (name.size() < arg.size())
      value = arg.substr(name.size() + 1);
    else if (i + 1 < argc)
      value = argv[++i];
    else
      throw error(std::string(name) + " needs a value");
    if (name == "--nproc") {
      options.nproc = static_cast<int>(parse_integer(name, value, 1, INT_MAX));
      has_nproc = true;
    } else if (name == "--master-port") {
      options.master_port = static_cast<std::uint16_t>(parse_integer(name, value, 1, 65535));
    } else {
      options.grace_s = parse_seconds(name, value);
    }
  }
  if (!has_nproc)
    throw error("--nproc N is required: the number of pe-actor-run processes to start");
  for (const auto& arg : options.run_args)
    refuse_rank_flag(arg);
  return options;
}

std::vector<std::string> rank_arguments(const launcher_options& options, int rank,
                                        std::uint16_t master_port) {
  auto args = options.run_args;
  args.insert(args.end(), {"--nnodes", std::to_string(options.nproc), "--node-rank",
                           std::to_string(rank), "--master",
                           "127.0.0.1:" + std::to_string(master_port)});
  return args;
}

} // namespace pe
