#include "apps/run/trainer.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <optional>
#include <set>
#include <ostream>

#include "apps/run/checkpoint.hpp"
#include "apps/run/engine.hpp"
#include "apps/run/metrics.hpp"
#include "apps/run/model_data.hpp"
#include "apps/run/progress_reporter.hpp"
#include "apps/run/signals.hpp"
#include "apps/run/stall_log.hpp"
#include "apps/run/training_trace.hpp"
#include "core/error.hpp"
#include "data/batcher.hpp"
#include "data/dataset.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/attributes.hpp"
#include "graph/op_role.hpp"
#include "graph/program_info.hpp"
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

/// The names of the main program's persistables: what a checkpoint directory may hold.
std::vector<std::string> persistable_names(const proto::ProgramDesc& main) {
  std::vector<std::string> names;
  for (const auto& spec : persistable_specs(main))
    names.push_back(spec.name);
  return names;
}

/// --load-params: the persistables from `path` onto every place. From a checkpoint (a
/// directory with checkpoint.json) of a run with the same `identity`, which must hold every
/// persistable, returns the step it reached; from parameters alone, 0.
std::int64_t load_parameters(engine& executor, const proto::ProgramDesc& main,
                             const std::string& path, const nlohmann::json& identity,
                             std::ostream& out) {
  const auto checkpoint = read_checkpoint(path);
  bool verified = false;
  if (checkpoint) {
    check_resumable(*checkpoint, identity, path);
    verified = verify_checkpoint_files(*checkpoint, path, persistable_names(main));
  }
  const auto loaded = load_params(path, main);
  if (checkpoint && loaded.size() != persistable_specs(main).size())
    throw error("--load-params " + path + ": the checkpoint holds " +
                std::to_string(loaded.size()) + " of the program's " +
                std::to_string(persistable_specs(main).size()) +
                " persistables; resuming needs the optimizer state too");
  for (const auto& [name, value] : loaded)
    executor.set_persistable(name, value);
  out << "loaded " << loaded.size() << " variables from " << path;
  if (checkpoint)
    out << " (checkpoint at step " << checkpoint->step << ", epoch "
        << checkpoint->epochs_completed + 1 << " batch " << checkpoint->batches_into_epoch + 1
        << " next; "
        << (verified ? "every file's SHA-256 checked"
                     : "written before checkpoints carried digests, so not checked")
        << ")";
  out << '\n';
  return checkpoint ? checkpoint->step : 0;
}

/// --save-params: every persistable, as the job holds it (place 0's, or in reduce mode the
/// owner's optimizer state: parallel_executor::persistable_value), and where training stands
/// in the data (`served` batches of `batches`' epochs: the steps done, not what `batches`
/// served, which may hold the next step's batch already), as the checkpoint `dir`.
void save_checkpoint(const engine& executor, const proto::ProgramDesc& main,
                     const std::string& dir, std::int64_t served, const batcher& batches,
                     const nlohmann::json& identity, std::ostream& out) {
  param_map values;
  for (const auto& spec : persistable_specs(main))
    values[spec.name] = executor.persistable(spec.name);
  write_checkpoint(dir, values,
                   {served, served / batches.batches_per_epoch(),
                    served % batches.batches_per_epoch(), identity, {}});
  out << "saved " << values.size() << " variables to " << dir << " (checkpoint at step "
      << served << ")" << std::endl;
}


/// The value of a fetched one-element FP32 tensor such as a mean loss.
double scalar(const tensor& t, const std::string& name) {
  if (t.numel() != 1)
    throw error("fetched '" + name + "' has shape " + to_string(t.shape()) + ", expected a scalar");
  return t.values<float>()[0];
}

/// Every feed of one batch, by its name; with `only`, just the feeds it names.
feed_map feeds_of(const dataset& batch, const std::vector<std::string>* only = nullptr) {
  feed_map feeds;
  for (const auto& f : batch.feeds())
    if (!only || std::find(only->begin(), only->end(), f.name) != only->end())
      feeds.emplace(f.name, f.rows);
  return feeds;
}

/// Mean loss and accuracy over `test`, in batches of `batch_size`, weighted by batch rows.
/// The test program gets the feeds it reads (the forward part may not need them all).
eval_result evaluate(engine& executor, const model_programs& m, const dataset& test,
                     std::int64_t batch_size) {
  const std::vector<std::string> inputs = analyze_program(m.test).feeds;
  eval_result r;
  for (std::int64_t begin = 0; begin < test.size(); begin += batch_size) {
    auto batch = test.slice(begin, std::min(begin + batch_size, test.size()));
    auto fetched = executor.test(feeds_of(batch, &inputs), {m.loss, m.accuracy});
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

/// "CPU", "GPU" (a kind's name in capitals), or "CPU and GPU" for places of several kinds.
std::string place_kinds(const std::vector<place>& places) {
  std::vector<std::string> kinds;
  for (const place& p : places) {
    std::string name = to_string(p.type);
    for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (std::find(kinds.begin(), kinds.end(), name) == kinds.end()) kinds.push_back(name);
  }
  std::string out;
  for (std::size_t i = 0; i < kinds.size(); ++i) out += (i == 0 ? "" : " and ") + kinds[i];
  return out;
}

/// What runs where, with the defaults resolved: places, executor, threads, gradient strategy.
void print_header(std::ostream& out, const run_options& o) {
  out << "training " << o.model << " on " << o.places_text() << " ("
      << o.places.size() << ' ' << place_kinds(o.places) << (o.places.size() == 1 ? " place" : " places")
      << ") with the "
      << spelling(o.executor) << " executor";
  if (o.actor()) {
    out << ", " << o.threads << (o.threads == 1 ? " thread" : " threads") << ", " << spelling(o.reduce)
        << ", --sync " << spelling(o.sync);
    if (o.reduce == build_strategy::reduce_mode::all_reduce && o.fuse_allreduce_mb > 0)
      out << " fused in " << o.fuse_allreduce_mb << " MiB buckets";
    else if (o.reduce == build_strategy::reduce_mode::all_reduce)
      out << ", an all-reduce per " << spelling(o.allreduce_groups);
    if (o.pin_places == place_pinning::always) out << ", places pinned to cores";
    if (o.pin_places == place_pinning::never) out << ", places not pinned";
    if (o.actor_per_op) out << ", an actor message per op";
    if (!o.overlap_steps) out << ", steps not overlapped";
  }
  out << ", global batch " << o.batch_size << ", " << o.blas_threads << " BLAS thread"
      << (o.blas_threads == 1 ? "" : "s");
  if (o.multi_process())
    out << "; process " << o.node_rank << " of " << o.nnodes << " (world of "
        << o.nnodes * static_cast<int>(o.places.size()) << " places)";
  out << '\n';
}

void print_summary(std::ostream& out, const run_options& o, const run_metrics& metrics,
                   const std::optional<eval_result>& eval) {
  const auto& steps = metrics.steps();
  out << "trained " << steps.size() << " steps on " << o.places_text() << " (" << spelling(o.executor)
      << " executor)";
  if (!steps.empty())
    out << ": loss " << std::setprecision(6) << steps.front().loss << " -> " << steps.back().loss
        << ", " << std::fixed << std::setprecision(1) << metrics.samples_per_sec()
        << " samples/s (step 1 excluded as warm-up), wall " << std::setprecision(3)
        << metrics.wall_seconds() << " s" << std::defaultfloat;
  out << '\n';
  if (eval)
    out << "eval: loss " << std::setprecision(6) << eval->loss << "  accuracy "
        << std::setprecision(4) << eval->accuracy << " on " << eval->samples
        << " test samples\n";
}

/// How a training run went beyond its steps: where it started and whether a signal or a
/// non-finite loss ended it.
struct run_outcome {
  std::int64_t resumed_from = 0; ///< the checkpoint's step; 0 for a run from the start
  int signal = 0;                ///< the signal that interrupted it; 0 if none
  std::int64_t nonfinite_step = 0; ///< the step whose loss was NaN or infinite; 0 if none
  std::int64_t failed_step = 0;    ///< the step that failed (e.g. --check-nan-inf); 0 if none
  std::string failure;             ///< why it failed

  bool stopped_early() const { return signal != 0 || nonfinite_step != 0 || failed_step != 0; }
};

/// The metrics file: the run's timeline (steps numbered as the step lines are), eval and
/// config, plus the effective setup and the outcome.
nlohmann::json report(const run_options& o, const run_metrics& metrics,
                      const std::optional<eval_result>& eval, const trace_report& traced,
                      const run_outcome& outcome, const stall_log& stalls) {
  auto json = metrics.to_json(to_json(o), eval);
  for (auto& step : json["steps"])
    step["step"] = step["step"].get<std::int64_t>() + outcome.resumed_from;
  json["places"] = o.places.size();
  json["sync"] = spelling(o.sync);
  json["executor"] = spelling(o.executor);
  json["threads"] = o.threads;
  json["reduce"] = spelling(o.reduce);
  json["interrupted"] = outcome.signal != 0;
  if (outcome.signal != 0)
    json["signal"] = signal_name(outcome.signal);
  if (outcome.resumed_from > 0)
    json["resumed_from_step"] = outcome.resumed_from;
  if (outcome.nonfinite_step != 0)
    json["nonfinite_loss_step"] = outcome.nonfinite_step;
  if (outcome.failed_step != 0) {
    json["failed_step"] = outcome.failed_step;
    json["error"] = outcome.failure;
  }
  json.update(traced.metrics);
  if (!stalls.empty())
    json["stall_reports"] = stalls.to_json();
  return json;
}

} // namespace

/// The first persistable an optimizer op writes besides its parameter (a moment, a velocity, a
/// beta power), or "" when the optimizers keep no state of their own (sgd).
std::string optimizer_state(const proto::ProgramDesc& main) {
  const std::set<std::string> persistable = [&] {
    std::set<std::string> names;
    for (const auto& v : main.blocks(0).vars())
      if (v.persistable()) names.insert(v.name());
    return names;
  }();
  for (const auto& op : main.blocks(0).ops()) {
    if ((role_of(op) & op_role::optimize) == 0 || find_attr(op, "op_role_var") == nullptr) continue;
    for (const auto& slot : op.outputs())
      if (slot.parameter() != "ParamOut")
        for (const auto& name : slot.arguments())
          if (persistable.contains(name)) return name;
  }
  return "";
}

int run_training(const run_options& o, std::ostream& out, const progress_display& display) {
  interrupt_handler interrupts; // the first SIGINT/SIGTERM now ends training at a step boundary
  auto [model, data] = load_model_and_data(o);
  if (o.eval && !data.test)
    throw error("--eval: " + o.data + " has no test set (idx: t10k-images-idx3-ubyte and "
                "t10k-labels-idx1-ubyte; npy: a test/ directory with a file per feed)");
  // In a job of several processes, rank 0 writes the job's files; every process prints its
  // header and summary, rank 0 the steps.
  const bool lead = o.node_rank == 0;
  if (lead && !o.save_program.empty())
    save_programs(model, o.save_program);
  const auto identity = resume_identity(o, model.main, data.train.size());
  if (lead && !o.save_params.empty())
    check_checkpoint_target("--save-params", o.save_params, persistable_names(model.main));
  // Reduce mode updates a parameter's optimizer state on its owner place only, and rank 0,
  // which writes the checkpoint, cannot read another process's places: refused before training
  // rather than failing at the first save (every rank decides alike: flags and program).
  if (o.multi_process() && o.reduce == build_strategy::reduce_mode::reduce && !o.save_params.empty())
    if (const std::string state = optimizer_state(model.main); !state.empty())
      throw error("--save-params with --reduce reduce across processes: the optimizer state '" + state +
                  "' changes only in the process of its parameter's owner place, and rank 0 alone writes "
                  "the checkpoint; use --reduce allreduce for a job that saves (or sgd, which keeps no "
                  "state, or one process with several places)");
  // SIGUSR1 asks for a report of the running step (the executor takes the flag during its
  // next step); stall reports go to stderr, the metrics and the trace.
  report_signal report_asked;
  stall_log stalls(std::cerr);
  auto executor = make_engine(o, model, {stalls.sink(), &report_asked.flag()});
  run_outcome outcome;
  if (!o.load_params.empty()) {
    outcome.resumed_from = load_parameters(*executor, model.main, o.load_params, identity, out);
    executor->set_steps_done(outcome.resumed_from);
  }

  batcher batches(data.train, o.batch_size, o.seed, o.shuffle);
  batches.advance(outcome.resumed_from); // the data position of the checkpoint
  auto steps = o.epochs ? *o.epochs * batches.batches_per_epoch() : o.steps;
  if (outcome.resumed_from >= steps)
    throw error("--load-params " + o.load_params + ": the checkpoint is at step " +
                std::to_string(outcome.resumed_from) + ", this run has " + std::to_string(steps) +
                " steps in all; --steps and --epochs count from the first run's start");
  std::optional<training_trace> traced; // attached before step 1, detached at the end
  if (o.tracing())
    traced.emplace(o, *executor, steps);
  print_header(out, o);
  // Rank 0 shows the steps; finish() ends an in-place line before anything else is printed.
  std::optional<progress_reporter> progress;
  if (lead)
    progress.emplace(out,
                     progress_reporter::settings{
                       .first_step = outcome.resumed_from + 1,
                       .last_step = steps,
                       .steps_per_epoch = o.epochs ? batches.batches_per_epoch() : 0,
                       .log_every = o.log_every,
                       .display = display,
                     },
                     [] {
                       return std::chrono::duration<double>(
                                std::chrono::steady_clock::now().time_since_epoch())
                         .count();
                     });
  run_metrics metrics;
  metrics.start();
  std::int64_t step = outcome.resumed_from, saved = -1;
  // Every process stops at the same boundary, whichever of them got the signal: before the
  // first step by a vote of its own, after each step by the votes that travelled with its
  // fetches (no round trip of their own).
  outcome.signal = executor->agreed_signal(interrupts.signal());
  // The next step's batch, copied while the step before it runs (train_share's meanwhile):
  // copied between the steps, its rows gathered from the shuffled samples (~100 us for the
  // MLP at 128 rows, traces at 2 places) stood between every two steps with every place idle.
  // This process copies only its share of the global batch, in pieces, which the places'
  // own threads take in their idle moments where the places fill the cores
  // (parallel_executor::run_meanwhile).
  std::optional<batch_copy> next_share;
  std::int64_t next_rows = 0;
  const auto take_next_batch = [&] {
    next_rows = batches.next_rows();
    const auto [first, count] = executor->share_of(next_rows);
    next_share.emplace(batches.take(first, count));
  };
  const std::function<void(int)> copy_piece = [&next_share](int piece) { next_share->copy(piece); };
  while (outcome.signal == 0 && step < steps) {
    ++step;
    if (!next_share) { // the first step's
      take_next_batch();
      next_share->copy_all();
    }
    const std::int64_t rows = next_rows;
    const dataset share = std::move(next_share->rows());
    next_share.reset();
    double loss = 0;
    int vote = interrupts.signal();
    try {
      if (step < steps) take_next_batch();
      loss = scalar(executor->train_share(feeds_of(share), rows, {model.loss}, vote,
                                          next_share ? copy_piece : nullptr,
                                          next_share ? next_share->pieces() : 0)[0],
                    model.loss);
    } catch (const error& e) {
      // A failed step (--check-nan-inf, a kernel's refusal, a lost peer) still leaves the
      // metrics of the steps before it.
      outcome.failed_step = step;
      outcome.failure = e.what();
      break;
    }
    if (lead && step == outcome.resumed_from + 1 && !o.dot.empty())
      write_dot(*executor, o.dot); // timed with the first step, the warm-up
    metrics.record(loss, rows);
    // The loss is the global batch's on every process, so all of them stop here.
    if (!std::isfinite(loss)) outcome.nonfinite_step = step;
    if (progress)
      progress->step(step, loss, rows); // a non-finite loss is always shown
    if (outcome.nonfinite_step != 0) break;
    if (lead && o.save_every > 0 && step % o.save_every == 0 && step < steps) {
      progress->finish();
      save_checkpoint(*executor, model.main, o.save_params, step, batches, identity, out);
      saved = step;
    }
    // Alone, a signal that came during the step counts at once.
    outcome.signal = executor->in_job() ? vote : interrupts.signal();
  }
  // The last step's tail may still run (overlap_steps): it is part of that step, its failure
  // that step's.
  if (outcome.failed_step == 0) try {
      executor->finish_steps();
    } catch (const error& e) {
      outcome.failed_step = step;
      outcome.failure = e.what();
    }
  if (progress)
    progress->finish(); // the lines below start on a line of their own
  if (outcome.signal != 0)
    out << "training interrupted by " << signal_name(outcome.signal) << " at step " << step
        << " of " << steps << std::endl;

  trace_report trace_result;
  if (traced)
    trace_result = traced->finish(out, &stalls);

  // Parameters a non-finite loss or a failed step came from are not worth resuming from.
  if (lead && !o.save_params.empty() && saved != step && outcome.nonfinite_step == 0 &&
      outcome.failed_step == 0)
    save_checkpoint(*executor, model.main, o.save_params, step, batches, identity, out);

  std::optional<eval_result> eval;
  if (o.eval && !outcome.stopped_early())
    eval = evaluate(*executor, model, *data.test, o.batch_size);
  print_summary(out, o, metrics, eval);
  if (o.cuda_graphs) out << executor->cuda_graph_summary() << '\n';
  if (lead && !o.metrics.empty())
    write_json(report(o, metrics, eval, trace_result, outcome, stalls), o.metrics);
  // A failed step has failed the job's collectives on every process: nobody waits for this one.
  if (outcome.failed_step != 0 && executor->stalled()) {
    // The stalled work may hold a place's thread for good (a kernel that never returns):
    // destroying the engine would wait for it. Everything is written: leave now.
    out.flush();
    std::cerr << "pe-actor-run: error: " << outcome.failure << std::endl;
    std::_Exit(2);
  }
  if (outcome.failed_step != 0) throw error(outcome.failure);
  executor->finish(); // no process leaves while another still needs it
  if (outcome.nonfinite_step != 0)
    throw error("step " + std::to_string(outcome.nonfinite_step) + ": the loss is " +
                std::to_string(metrics.steps().back().loss) +
                ", not finite; training stopped (a smaller --lr may help)");
  if (outcome.signal != 0)
    return exit_status_for(outcome.signal);
  return trace_result.violations == 0 ? 0 : hazards_found;
}

} // namespace pe
