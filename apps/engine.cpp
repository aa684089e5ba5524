#include "apps/engine.hpp"

#include <optional>

#include "actors/parallel_executor.hpp"
#include "graph/exec/reference_executor.hpp"
#include "devices/cpu/blas.hpp"
#include "devices/error.hpp"

namespace pe {

namespace {

/// `vars` after running `startup` on it.
scope& initialised(scope& vars, const proto::ProgramDesc& startup) {
  reference_executor(startup, vars).run({}, {});
  return vars;
}

/// Ops in program order on one CPU place.
class reference_engine final : public engine {
 public:
  reference_engine(const model_programs& m, bool eval)
    : train_(m.main, initialised(vars_, m.startup)) {
    if (eval)
      test_.emplace(m.test, vars_);
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

  const tensor& persistable(const std::string& name) const override { return vars_.get(name); }

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
  build.reduce = o.reduce == "reduce" ? build_strategy::reduce_mode::reduce
                                      : build_strategy::reduce_mode::all_reduce;
  build.fuse_all_reduce_bytes = o.fuse_allreduce_bytes();
  return build;
}

/// Data parallelism over CPU places, every op an actor.
class actor_engine final : public engine {
 public:
  actor_engine(const run_options& o, const model_programs& m)
    : main_(m.main),
      train_(o.places, m.startup, m.main, strategy_of(o),
             {o.threads, o.sync == "wait" ? sync_mode::wait : sync_mode::event}) {
    if (o.eval)
      test_.emplace(m.test, train_, strategy_of(o));
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
    train_.set_persistable(name, value);
  }

  const tensor& persistable(const std::string& name) const override {
    return train_.place_scope(0).get(name);
  }

  std::string training_graph_dot() const override { return to_dot(train_.graph(), main_); }

  void trace(trace_recorder* recorder) override { train_.trace(recorder); }

  trace_source training_trace_source() const override {
    return {train_.graph(), train_.program(), train_.place_names()};
  }

 private:
  const proto::ProgramDesc& main_;
  parallel_executor train_;
  std::optional<parallel_executor> test_; // shares train_'s runtime; destroyed first
};

} // namespace

std::unique_ptr<engine> make_engine(const run_options& o, const model_programs& m) {
  std::unique_ptr<engine> made;
  if (o.actor())
    made = std::make_unique<actor_engine>(o, m);
  else
    made = std::make_unique<reference_engine>(m, o.eval);
  set_blas_threads(o.blas_threads);
  return made;
}

} // namespace pe
