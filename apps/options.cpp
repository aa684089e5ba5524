#include "apps/options.hpp"

#include <charconv>
#include <ostream>
#include <string_view>

#include <boost/program_options.hpp>

#include "devices/error.hpp"

namespace po = boost::program_options;

namespace pe {

namespace {

/// The learning rate each optimizer gets when --lr is not given.
double default_learning_rate(const std::string& optimizer) {
  if (optimizer == "momentum")
    return 0.01;
  if (optimizer == "adam")
    return 0.001;
  return 0.1;
}

/// "256,128" -> {256, 128}; every width must be a positive integer.
std::vector<int> parse_widths(const std::string& text) {
  std::vector<int> widths;
  std::string_view rest = text;
  while (true) {
    auto comma = rest.find(',');
    auto item = rest.substr(0, comma);
    int width = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), width);
    if (ec != std::errc{} || end != item.data() + item.size() || width <= 0)
      throw error("--hidden: expected comma-separated positive widths such as 256,128, got '" +
                  text + "'");
    widths.push_back(width);
    if (comma == std::string_view::npos)
      return widths;
    rest.remove_prefix(comma + 1);
  }
}

/// A seed is an unsigned 64-bit integer; "-1" is rejected rather than wrapped around.
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw error("--seed: expected an unsigned 64-bit integer, got '" + text + "'");
  return seed;
}

po::options_description describe() {
  po::options_description d(
    "Usage: pe-actor-run [options]\n"
    "Trains a Paddle ProgramDesc (or the built-in MLP) on one CPU place with the reference\n"
    "executor. An error prints one line starting with \"pe-actor-run: error:\" and exits\n"
    "with status 2.\n\nOptions");
  // clang-format off
  d.add_options()
    ("help,h", "print this help and exit")
    ("model", po::value<std::string>()->value_name("mlp|PATH")->default_value("mlp"),
     "'mlp' for the built-in MLP (input width follows the data, 10 classes), or the PATH "
     "of a binary or text ProgramDesc training program (needs --startup); a loaded program "
     "must feed one FP32 image and one INT64 label and keeps its own optimizer")
    ("startup", po::value<std::string>()->value_name("PATH"),
     "PATH of the startup program (parameter initialisation) of a --model PATH; required "
     "with it, invalid with mlp")
    ("hidden", po::value<std::string>()->value_name("W1,W2,...")->default_value("256,128"),
     "hidden layer widths of the mlp, comma-separated")
    ("steps", po::value<std::int64_t>()->value_name("N")->default_value(200),
     "training steps (mini-batches)")
    ("epochs", po::value<std::int64_t>()->value_name("E"),
     "train for E passes over the training set instead of --steps (giving both is an error)")
    ("batch-size", po::value<std::int64_t>()->value_name("B")->default_value(64),
     "global mini-batch size; the last batch of an epoch keeps the remainder")
    ("lr", po::value<double>()->value_name("RATE"),
     "learning rate of the mlp (default: 0.1 for sgd, 0.01 for momentum, 0.001 for adam)")
    ("optimizer", po::value<std::string>()->value_name("NAME")->default_value("sgd"),
     "optimizer of the mlp: sgd | momentum (mu 0.9) | adam")
    ("seed", po::value<std::string>()->value_name("S")->default_value("1"),
     "seed of parameter initialisation, synthetic data and shuffling")
    ("data", po::value<std::string>()->value_name("SOURCE")->default_value("synthetic"),
     "'synthetic' (8192 training and 2048 test samples of width 784 around 10 gaussian "
     "class prototypes, generated from --seed), or idx:DIR with MNIST-format files "
     "train-images-idx3-ubyte, train-labels-idx1-ubyte and, for --eval, t10k-images-idx3-ubyte, "
     "t10k-labels-idx1-ubyte, each plain or .gz; samples are shuffled every epoch")
    ("normalize", po::bool_switch(), "scale idx pixels from 0..255 to 0..1")
    ("eval", po::bool_switch(),
     "after training, report the test set's mean loss and accuracy (the program's accuracy "
     "op), printed and in the metrics")
    ("save-program", po::value<std::string>()->value_name("DIR"),
     "write the startup and main programs that run to DIR/startup.pb, DIR/main.pb (binary) "
     "and DIR/startup.pbtxt, DIR/main.pbtxt (text)")
    ("metrics", po::value<std::string>()->value_name("FILE"),
     "write a JSON object to FILE: \"steps\" [{step, loss, samples_per_sec (from step 2)}], "
     "\"samples_per_sec\" over steps 2..N (step 1 is warm-up and excluded), \"wall_s\" "
     "(training loop), \"peak_rss_mb\", \"eval\" {loss, accuracy} with --eval, \"config\"")
    ("places", po::value<std::string>()->value_name("PLACES")->default_value("cpu:1"),
     "places to train on; only cpu:1 (one CPU place) until the actor executor lands")
    ("executor", po::value<std::string>()->value_name("NAME")->default_value("reference"),
     "executor: reference (ops in program order on one place) is the only one so far")
    ("blas-threads", po::value<int>()->value_name("N")->default_value(1),
     "OpenBLAS threads per place (default 1: places, not BLAS, occupy the cores; raise it "
     "when there are fewer places than cores)");
  // clang-format on
  return d;
}

template <class T>
T take(const po::variables_map& vm, const char* name) {
  return vm[name].as<T>();
}

bool given(const po::variables_map& vm, const char* name) {
  return vm.count(name) != 0 && !vm[name].defaulted();
}

void require_positive(std::int64_t value, const char* flag) {
  if (value <= 0)
    throw error(std::string("--") + flag + " must be positive, got " + std::to_string(value));
}

run_options interpret(const po::variables_map& vm) {
  run_options o;
  o.model = take<std::string>(vm, "model");
  if (vm.count("startup"))
    o.startup = take<std::string>(vm, "startup");
  o.hidden = parse_widths(take<std::string>(vm, "hidden"));
  o.steps = take<std::int64_t>(vm, "steps");
  o.batch_size = take<std::int64_t>(vm, "batch-size");
  o.optimizer = take<std::string>(vm, "optimizer");
  o.seed = parse_seed(take<std::string>(vm, "seed"));
  o.data = take<std::string>(vm, "data");
  o.eval = take<bool>(vm, "eval");
  o.normalize = take<bool>(vm, "normalize");
  if (vm.count("save-program"))
    o.save_program = take<std::string>(vm, "save-program");
  if (vm.count("metrics"))
    o.metrics = take<std::string>(vm, "metrics");
  o.places = take<std::string>(vm, "places");
  o.executor = take<std::string>(vm, "executor");
  o.blas_threads = take<int>(vm, "blas-threads");

  require_positive(o.steps, "steps");
  require_positive(o.batch_size, "batch-size");
  require_positive(o.blas_threads, "blas-threads");
  if (vm.count("epochs")) {
    if (given(vm, "steps"))
      throw error("--steps and --epochs both given; use one");
    o.epochs = take<std::int64_t>(vm, "epochs");
    require_positive(*o.epochs, "epochs");
  }
  if (o.optimizer != "sgd" && o.optimizer != "momentum" && o.optimizer != "adam")
    throw error("--optimizer: unknown optimizer '" + o.optimizer + "' (sgd, momentum, adam)");
  o.learning_rate = vm.count("lr") ? take<double>(vm, "lr") : default_learning_rate(o.optimizer);
  if (!(o.learning_rate > 0))
    throw error("--lr must be positive, got " + std::to_string(o.learning_rate));

  if (o.builtin_model()) {
    if (!o.startup.empty())
      throw error("--startup is for a --model PATH; the mlp builds its own startup program");
  } else {
    if (o.startup.empty())
      throw error("--model " + o.model + " needs --startup PATH (its startup program)");
    if (given(vm, "hidden") || given(vm, "optimizer") || vm.count("lr"))
      throw error("--hidden, --optimizer and --lr configure the mlp; a loaded program "
                  "has its own layers and optimizer");
  }

  bool idx = o.data.starts_with("idx:");
  if (o.data != "synthetic" && !(idx && o.data.size() > 4))
    throw error("--data: expected synthetic or idx:DIR, got '" + o.data + "'");
  if (o.normalize && !idx)
    throw error("--normalize scales idx pixels; it does not apply to --data " + o.data);
  if (o.places != "cpu:1")
    throw error("--places " + o.places +
                ": only cpu:1 is supported until the actor executor lands");
  if (o.executor != "reference")
    throw error("--executor: unknown executor '" + o.executor + "' (only reference so far)");
  return o;
}

} // namespace

std::optional<run_options> parse_options(int argc, const char* const* argv,
                                         std::ostream& help_out) {
  auto description = describe();
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv)
                .options(description)
                .positional({}) // no positional arguments: a stray word is an error
                .run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw error(e.what());
  }
  if (vm.count("help")) {
    help_out << description << '\n';
    return std::nullopt;
  }
  return interpret(vm);
}

nlohmann::json to_json(const run_options& o) {
  nlohmann::json config = {
    {"model", o.model},
    {"batch_size", o.batch_size},
    {"seed", o.seed},
    {"data", o.data},
    {"eval", o.eval},
    {"normalize", o.normalize},
    {"places", o.places},
    {"executor", o.executor},
    {"blas_threads", o.blas_threads},
  };
  if (o.builtin_model()) {
    config["hidden"] = o.hidden;
    config["lr"] = o.learning_rate;
    config["optimizer"] = o.optimizer;
  } else {
    config["startup"] = o.startup;
  }
  if (o.epochs)
    config["epochs"] = *o.epochs;
  else
    config["steps"] = o.steps;
  if (!o.save_program.empty())
    config["save_program"] = o.save_program;
  if (!o.metrics.empty())
    config["metrics"] = o.metrics;
  return config;
}

} // namespace pe
