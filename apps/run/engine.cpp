#include "apps/run/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <optional>

#include "actors/parallel_executor.hpp"
#include "apps/run/job_stall_reports.hpp"
#include "collectives/net/process_group.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/program_io.hpp"
#include "kernels/cpu/blas.hpp"
#include "core/error.hpp"

namespace pe {

namespace {

/// `vars` after running `startup` on it.
scope& initialised(scope& vars, const proto::ProgramDesc& startup, std::int64_t max_tensor_bytes) {
  reference_executor(startup, vars, place::cpu(), max_tensor_bytes).run({}, {});
  return vars;
}

/// Ops in program order on one CPU place.
class reference_engine final : public engine {
 public:
  reference_engine(const model_programs& m, bool eval, std::int64_t max_tensor_bytes,
                   bool check_nan_inf)
    : train_(m.main, initialised(vars_, m.startup, max_tensor_bytes), place::cpu(),
             max_tensor_bytes, check_nan_inf) {
    if (eval)
      test_.emplace(m.test, vars_, place::cpu(), max_tensor_bytes, check_nan_inf);
  }

  std::vector<tensor> train(const feed_map& feeds,
                            const std::vector<std::string>& fetch_list) override {
    return train_.run(feeds, fetch_list);
  }

  std::vector<tensor> test(const feed_map& feeds,
                           const std::vector<std::string>& fetch_list) override {
    return test_.value().run(feeds, fetch_list);
  }

  void set_persistable(const std::string& name, const tensor& value) override {
    vars_.var(name) = value.clone();
  }

  void set_steps_done(std::int64_t steps) override { train_.set_steps_done(static_cast<std::uint64_t>(steps)); }

  tensor persistable(const std::string& name) const override { return vars_.get(name); }

  std::string training_graph_dot() const override {
    throw error("the reference executor runs the program as it is; it builds no SSA graph");
  }

  void trace(trace_recorder*) override { throw no_actors(); }

  trace_source training_trace_source() const override { throw no_actors(); }

 private:
  static error no_actors() {
    return error("the reference executor runs no actors; only --executor actor is traced");
  }

  scope vars_; // declared before the executors bound to it
  reference_executor train_;
  std::optional<reference_executor> test_;
};

build_strategy strategy_of(const run_options& o) {
  build_strategy build;
  build.reduce = o.reduce;
  build.fuse_all_reduce_bytes = o.fuse_allreduce_bytes();
  build.all_reduce_groups = o.allreduce_groups;
  build.sparse_exchange_mode = o.sparse_exchange_mode;
  build.max_tensor_bytes = o.max_tensor_bytes;
  build.sync_batch_norm = o.sync_batch_norm;
  return build;
}

/// With --nnodes > 1: this process joined to the others, after checking that they run the
/// same job (the flags that change the math first, so a mismatch names the flag).
std::unique_ptr<process_group> join_job(const run_options& o, const model_programs& m) {
  if (!o.multi_process()) return nullptr;
  process_group_options g;
  g.rank = o.node_rank;
  g.size = o.nnodes;
  g.master_host = o.master_host;
  g.master_port = o.master_port;
  g.peer_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.peer_timeout * 1000));
  g.join_timeout = std::max(std::chrono::milliseconds(60000), 3 * g.peer_timeout);
  g.collective_backend = o.collective_backend;
  g.job_token = o.job_token;
  g.tls = o.tls;
  g.fingerprint = {
      {"build", PE_BUILD_ID},
      {"places per process", std::to_string(o.places.size())},
      // CPU and GPU processes would build different communicators and never meet in them.
      {"place kind", o.places.front().type == place::kind::gpu ? "gpu" : "cpu"},
      {"--batch-size", std::to_string(o.batch_size)},
      {"--steps/--epochs", o.epochs ? std::to_string(*o.epochs) + " epochs" : std::to_string(o.steps)},
      {"--model", o.model},
      {"--data", o.data},
      {"--normalize", o.normalize ? "on" : "off"},
      {"--no-shuffle", o.shuffle ? "off" : "on"},
      {"--seed", std::to_string(o.seed)},
      {"--optimizer", o.optimizer},
      {"--lr", std::to_string(o.learning_rate)},
      {"--reduce", spelling(o.reduce)},
      {"--collective-backend", o.collective_backend},
      {"--fuse-allreduce-mb", std::to_string(o.fuse_allreduce_mb)},
      {"--allreduce-groups", spelling(o.allreduce_groups)},
      {"--sparse-exchange", spelling(o.sparse_exchange_mode)},
      {"--sync-batch-norm", o.sync_batch_norm ? "on" : "off"},
      {"--eval", o.eval ? "on" : "off"},
      {"--load-params", o.load_params},
      {"startup program", program_fingerprint(m.startup)},
      {"main program", program_fingerprint(m.main)},
  };
  return join_processes(g);
}

/// How long rank 0 waits for the other ranks' stall reports after its own: twice the stall
/// timeout (the others stall about when it does), from 1 to 10 seconds.
std::chrono::milliseconds gather_wait(double stall_timeout_s) {
  const double ms = std::clamp(2000 * stall_timeout_s, 1000.0, 10000.0);
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

/// Data parallelism over CPU places, every op an actor; with --nnodes, over the places of
/// every process.
class actor_engine final : public engine {
 public:
  actor_engine(const run_options& o, const model_programs& m, stall_hooks stalls)
    : main_(m.main), group_(join_job(o, m)),
      train_(o.places, m.startup, m.main, strategy_of(o),
             {o.threads, o.sync, group_.get(),
              o.check_nan_inf, o.stall_timeout, o.on_stall,
              gather_stall_reports(std::move(stalls.on_report), group_.get(), gather_wait(o.stall_timeout), std::cerr),
              stalls.report_request, o.cuda_graphs, o.pin_places, o.actor_per_op, o.overlap_steps}) {
    if (o.eval)
      test_.emplace(m.test, train_, strategy_of(o));
  }

  std::vector<tensor> train(const feed_map& feeds,
                            const std::vector<std::string>& fetch_list) override {
    return train_.run(feeds, fetch_list);
  }

  std::string cuda_graph_summary() const override {
    const auto c = train_.cuda_graph_statistics();
    if (!c.off_reason.empty()) return "CUDA graphs: off (" + c.off_reason + ")";
    return "CUDA graphs: " + std::to_string(c.captures) + " captured (" + std::to_string(c.operations) +
           " device operations in the last), " + std::to_string(c.replays) + " training steps replayed, " +
           std::to_string(c.dropped) + " dropped";
  }

  std::vector<tensor> test(const feed_map& feeds,
                           const std::vector<std::string>& fetch_list) override {
    return test_.value().run(feeds, fetch_list);
  }

  void set_persistable(const std::string& name, const tensor& value) override {
    train_.set_persistable(name, value);
  }

  void set_steps_done(std::int64_t steps) override { train_.set_steps_done(static_cast<std::uint64_t>(steps)); }

  tensor persistable(const std::string& name) const override { return train_.persistable_value(name); }

  std::string training_graph_dot() const override { return to_dot(train_.graph(), main_); }

  void trace(trace_recorder* recorder) override { train_.trace(recorder); }

  trace_source training_trace_source() const override {
    trace_source source{train_.graph(), train_.program(), train_.place_names()};
    if (group_) {
      source.process_rank = group_->rank();
      source.num_processes = group_->size();
      source.clock_offset_ns = group_->clock_offset_ns();
    }
    return source;
  }

  int process_rank() const override { return group_ ? group_->rank() : 0; }

  std::pair<std::int64_t, std::int64_t> share_of(std::int64_t global_batch) const override {
    return train_.share_of(global_batch);
  }

  std::vector<tensor> train_share(const feed_map& my_rows, std::int64_t global_batch,
                                  const std::vector<std::string>& fetch_list, int& stop_vote,
                                  const std::function<void(int)>& meanwhile, int pieces) override {
    if (meanwhile) train_.run_meanwhile(meanwhile, pieces);
    return train_.run_share(my_rows, global_batch, fetch_list, &stop_vote);
  }

  bool in_job() const override { return group_ != nullptr; }

  int agreed_signal(int mine) override {
    if (!group_) return mine;
    const auto* p = reinterpret_cast<const char*>(&mine);
    for (const auto& theirs : group_->all_gather(bytes_of(p, sizeof mine))) {
      int signal = 0;
      if (theirs.size() != sizeof signal)
        throw error("a process sent a malformed stop vote of " + std::to_string(theirs.size()) + " bytes");
      std::memcpy(&signal, theirs.data(), sizeof signal);
      if (signal != 0) return signal;
    }
    return 0;
  }

  void finish() override {
    if (group_) group_->barrier();
  }

  void finish_steps() override {
    train_.finish();
  }

  bool stalled() const override { return train_.stalled() || (test_ && test_->stalled()); }

 private:
  const proto::ProgramDesc& main_;
  std::unique_ptr<process_group> group_; // outlives the executors
  parallel_executor train_;
  std::optional<parallel_executor> test_; // shares train_'s runtime; destroyed first
};

} // namespace

std::unique_ptr<engine> make_engine(const run_options& o, const model_programs& m, stall_hooks stalls) {
  std::unique_ptr<engine> made;
  if (o.actor())
    made = std::make_unique<actor_engine>(o, m, std::move(stalls));
  else
    made = std::make_unique<reference_engine>(m, o.eval, o.max_tensor_bytes, o.check_nan_inf);
  set_blas_threads(o.blas_threads);
  return made;
}

} // namespace pe
