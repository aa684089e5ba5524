#include "apps/trainer.hpp"

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <ostream>

#include "apps/batcher.hpp"
#include "apps/dataset.hpp"
#include "apps/engine.hpp"
#include "apps/metrics.hpp"
#include "apps/model_data.hpp"
#include "apps/training_trace.hpp"
#include "devices/error.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/program_io.hpp"

namespace pe {

namespace {

/// Writes DIR/{startup,main}.pb (binary) and .pbtxt (text), creating DIR.
void save_programs(const model_programs& m, const std::string& dir) {
  std::error_code failure;
  std::filesystem::create_directories(dir, failure);
  if (failure)
    throw error("--save-program " + dir + ": cannot create the directory: " + failure.message());
  const std::filesystem::path root(dir);
  save_program(m.startup, (root / "startup.pb").string(), program_format::binary);
  save_program(m.main, (root / "main.pb").string(), program_format::binary);
  save_program(m.startup, (root / "startup.pbtxt").string(), program_format::text);
  save_program(m.main, (root / "main.pbtxt").string(), program_format::text);
}

/// --load-params: the persistables from `path` onto every place.
void load_parameters(engine& executor, const proto::ProgramDesc& main, const std::string& path,
                     std::ostream& out) {
  const auto loaded = load_params(path, main);
  for (const auto& [name, value] : loaded)
    executor.set_persistable(name, value);
  out << "loaded " << loaded.size() << " variables from " << path << '\n';
}

/// --save-params: every persistable, as place 0 holds it, one file each.
void save_parameters(const engine& executor, const proto::ProgramDesc& main,
                     const std::string& dir, std::ostream& out) {
  param_map values;
  for (const auto& spec : persistable_specs(main))
    values[spec.name] = executor.persistable(spec.name);
  save_params(dir, values);
  out << "saved " << values.size() << " variables to " << dir << '\n';
}

/// The value of a fetched one-element FP32 tensor such as a mean loss.
double scalar(const tensor& t, const std::string& name) {
  if (t.numel() != 1)
    throw error("fetched '" + name + "' has shape " + to_string(t.shape()) + ", expected a scalar");
  return t.values<float>()[0];
}

/// The image and label feeds of one batch.
feed_map feeds_of(const model_programs& m, const dataset& batch) {
  return {{m.image, batch.images}, {m.label, batch.labels}};
}

/// Mean loss and accuracy over `test`, in batches of `batch_size`, weighted by batch rows.
eval_result evaluate(engine& executor, const model_programs& m, const dataset& test,
                     std::int64_t batch_size) {
  eval_result r;
  for (std::int64_t begin = 0; begin < test.size(); begin += batch_size) {
    auto batch = test.slice(begin, std::min(begin + batch_size, test.size()));
    auto fetched = executor.test(feeds_of(m, batch), {m.loss, m.accuracy});
    auto rows = batch.size();
    r.loss += scalar(fetched[0], m.loss) * static_cast<double>(rows);
    r.accuracy += scalar(fetched[1], m.accuracy) * static_cast<double>(rows);
    r.samples += rows;
  }
  r.loss /= static_cast<double>(r.samples);
  r.accuracy /= static_cast<double>(r.samples);
  return r;
}

/// Writes the DOT text of the training graph to `path`.
void write_dot(const engine& executor, const std::string& path) {
  std::ofstream out(path);
  out << executor.training_graph_dot();
  if (!out.flush())
    throw error("--dot " + path + ": cannot write the graph");
}

/// What runs where, with the defaults resolved: places, executor, threads, gradient strategy.
void print_header(std::ostream& out, const run_options& o) {
  out << "training " << o.model << " on " << o.places_text() << " ("
      << o.places.size() << (o.places.size() == 1 ? " CPU place" : " CPU places") << ") with the "
      << o.executor << " executor";
  if (o.actor()) {
    out << ", " << o.threads << (o.threads == 1 ? " thread" : " threads") << ", " << o.reduce
        << ", --sync " << o.sync;
    if (o.reduce == "allreduce" && o.fuse_allreduce_mb > 0)
      out << " fused in " << o.fuse_allreduce_mb << " MiB buckets";
  }
  out << ", global batch " << o.batch_size << ", " << o.blas_threads << " BLAS thread"
      << (o.blas_threads == 1 ? "" : "s") << '\n';
}

/// Every step up to 50 steps; beyond that every 10th, always the first and the last.
bool should_print(std::int64_t step, std::int64_t steps) {
  std::int64_t every = steps > 50 ? 10 : 1;
  return step == 1 || step == steps || step % every == 0;
}

void print_step(std::ostream& out, const run_metrics::step_record& s, std::int64_t steps) {
  out << "step " << s.step << '/' << steps << "  loss " << std::setprecision(6) << s.loss;
  if (s.step > 1)
    out << "  " << std::fixed << std::setprecision(1)
        << s.samples_per_sec() << " samples/s" << std::defaultfloat;
  out << '\n';
}

void print_summary(std::ostream& out, const run_options& o, const run_metrics& metrics,
                   const std::optional<eval_result>& eval) {
  const auto& steps = metrics.steps();
  out << "trained " << steps.size() << " steps on " << o.places_text() << " (" << o.executor
      << " executor): loss " << std::setprecision(6)
      << steps.front().loss << " -> " << steps.back().loss << ", " << std::fixed
      << std::setprecision(1) << metrics.samples_per_sec()
      << " samples/s (step 1 excluded as warm-up), wall " << std::setprecision(3)
      << metrics.wall_seconds() << " s\n"
      << std::defaultfloat;
  if (eval)
    out << "eval: loss " << std::setprecision(6) << eval->loss << "  accuracy "
        << std::setprecision(4) << eval->accuracy << " on " << eval->samples
        << " test samples\n";
}

/// The metrics file: the run's timeline, eval and config, plus the effective setup.
nlohmann::json report(const run_options& o, const run_metrics& metrics,
                      const std::optional<eval_result>& eval, const trace_report& traced) {
  auto json = metrics.to_json(to_json(o), eval);
  json["places"] = o.places.size();
  json["sync"] = o.sync;
  json["executor"] = o.executor;
  json["threads"] = o.threads;
  json["reduce"] = o.reduce;
  json.update(traced.metrics);
  return json;
}

} // namespace

int run_training(const run_options& o, std::ostream& out) {
  if (!o.save_params.empty())
    check_param_dir(o.save_params); // fail now, not after training
  auto [model, data] = load_model_and_data(o);
  if (o.eval && !data.test)
    throw error("--eval: " + o.data + " has no test set (idx: t10k-images-idx3-ubyte and "
                "t10k-labels-idx1-ubyte; npy: a test/ directory)");
  if (!o.save_program.empty())
    save_programs(model, o.save_program);
  auto executor = make_engine(o, model);
  if (!o.load_params.empty())
    load_parameters(*executor, model.main, o.load_params, out);

  batcher batches(data.train, o.batch_size, o.seed);
  auto steps = o.epochs ? *o.epochs * batches.batches_per_epoch() : o.steps;
  std::optional<training_trace> traced; // attached before step 1, detached at the end
  if (o.tracing())
    traced.emplace(o, *executor, steps);
  print_header(out, o);
  run_metrics metrics;
  metrics.start();
  for (std::int64_t step = 1; step <= steps; ++step) {
    auto batch = batches.next();
    auto loss = scalar(executor->train(feeds_of(model, batch), {model.loss})[0], model.loss);
    if (step == 1 && !o.dot.empty())
      write_dot(*executor, o.dot); // timed with step 1, the warm-up
    const auto& record = metrics.record(loss, batch.size());
    if (should_print(step, steps))
      print_step(out, record, steps);
  }

  trace_report trace_result;
  if (traced)
    trace_result = traced->finish(out);

  if (!o.save_params.empty())
    save_parameters(*executor, model.main, o.save_params, out);

  std::optional<eval_result> eval;
  if (o.eval)
    eval = evaluate(*executor, model, *data.test, o.batch_size);
  print_summary(out, o, metrics, eval);
  if (!o.metrics.empty())
    write_json(report(o, metrics, eval, trace_result), o.metrics);
  return trace_result.violations == 0 ? 0 : hazards_found;
}

} // namespace pe
