// Executor overhead: programs of 1000 `scale` ops on a 1-element FP32 tensor (the cheapest
// kernel we have), so that a step's time is almost all scheduling. The time per op firing of
// the actor executor (1 place, 1 and 2 threads) and of the reference executor is compared
// with a plain loop calling the same ops' bound_op::run() in program order, and the firing
// groups (the default) with an actor message per op.
#include <string>
#include <vector>

#include "graph/exec/bound_op.hpp"
#include "actors/parallel_executor.hpp"
#include "actors/trace.hpp"
#include "graph/exec/reference_executor.hpp"
#include "bench/report.hpp"
#include "graph/builder.hpp"

namespace {

using namespace pe;

constexpr int ops_per_program = 1000;

struct programs {
  proto::ProgramDesc startup;
  proto::ProgramDesc main;
};

/// `lanes` independent chains of scale ops (by 1, so values stay finite), each
/// ops_per_program / lanes deep, all starting from x: a persistable 1-element tensor set by
/// the startup program, so steps need no feed and fetch nothing. One lane is a chain (no
/// parallelism); ten lanes a 10-wide, 100-deep graph with ten ops ready at a time. Ops are
/// appended layer by layer.
programs scale_graph(int lanes) {
  programs p;
  program_builder b(p.main, p.startup, 1);
  std::vector<std::string> heads(static_cast<std::size_t>(lanes), b.constant_state("x", {1}, 1.f));
  for (int layer = 0; layer < ops_per_program / lanes; ++layer)
    for (std::string& head : heads) {
      std::string out = b.unique_name("scale");
      b.append_op("scale", {{"X", {head}}}, {{"Out", {out}}}, {{"scale", 1.f}});
      head = std::move(out);
    }
  return p;
}

/// Reports the real time per op firing as the counter op_time (seconds).
void count_ops(benchmark::State& state) {
  state.counters["op_time"] = benchmark::Counter(
      ops_per_program, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// The baseline: every op of the program run in program order by a plain loop.
void direct_loop(benchmark::State& state, const programs& p) {
  scope vars;
  reference_executor(p.startup, vars).run({}, {});
  std::vector<bound_op> ops;
  const auto& block = p.main.blocks(0);
  for (int i = 0; i < block.ops_size(); ++i) ops.emplace_back(block.ops(i), vars, place::cpu(), i);
  for (bound_op& op : ops) op.run(); // first run allocates the outputs
  for (auto _ : state)
    for (bound_op& op : ops) op.run();
  count_ops(state);
}

void reference(benchmark::State& state, const programs& p) {
  scope vars;
  reference_executor(p.startup, vars).run({}, {});
  reference_executor exe(p.main, vars);
  exe.run({}, {});
  for (auto _ : state) exe.run({}, {});
  count_ops(state);
}

/// The actor executor; with `traced`, every firing is recorded (the recorder's buffers are
/// dropped every 100 steps so memory stays bounded); with `per_op`, without firing groups
/// (execution_strategy::actor_per_op).
void actor(benchmark::State& state, const programs& p, int threads, bool traced, bool per_op) {
  execution_strategy exec{threads};
  exec.actor_per_op = per_op;
  parallel_executor exe({place::cpu()}, p.startup, p.main, {}, exec);
  exe.run({}, {}); // the first run builds the graph and spawns the actors
  auto recorder = std::make_unique<trace_recorder>();
  if (traced) exe.trace(recorder.get());
  int steps = 0;
  for (auto _ : state) {
    exe.run({}, {});
    if (traced && ++steps % 100 == 0) {
      state.PauseTiming();
      recorder = std::make_unique<trace_recorder>();
      exe.trace(recorder.get());
      state.ResumeTiming();
    }
  }
  exe.trace(nullptr);
  count_ops(state);
}

} // namespace

int main(int argc, char** argv) {
  if (!bench::initialize(argc, argv)) return 1;

  struct graph_case {
    std::string name;
    std::string description;
    programs program;
  };
  const std::vector<graph_case> cases = {{"chain", "1000-op chain", scale_graph(1)},
                                         {"wide", "10 wide x 100 deep", scale_graph(10)}};
  const bench::metric op_time{"op_time", "ns/op", 1e9};
  std::vector<bench::comparison> rows;
  for (const graph_case& c : cases) {
    const std::string direct = c.name + "/direct", reference_name = c.name + "/reference";
    benchmark::RegisterBenchmark(direct.c_str(), direct_loop, c.program)->UseRealTime();
    benchmark::RegisterBenchmark(reference_name.c_str(), reference, c.program)->UseRealTime();
    for (int threads : {1, 2}) {
      const std::string name = c.name + "/actor/threads:" + std::to_string(threads);
      const std::string setup = c.description + ", actor executor, 1 place, " +
                                std::to_string(threads) + (threads == 1 ? " thread" : " threads");
      benchmark::RegisterBenchmark(name.c_str(), actor, c.program, threads, false, false)->UseRealTime();
      rows.push_back({"executor overhead", setup, name, direct, "direct bound_op::run loop", op_time});
      // Tracing on against tracing off, both measured here.
      const std::string traced = name + "/traced";
      benchmark::RegisterBenchmark(traced.c_str(), actor, c.program, threads, true, false)->UseRealTime();
      rows.push_back({"executor overhead", setup + ", tracing on", traced, name, "tracing off",
                      op_time});
    }
    // Firing groups (the default) against an actor message per op, both measured here.
    const std::string per_op = c.name + "/actor/threads:1/per-op";
    benchmark::RegisterBenchmark(per_op.c_str(), actor, c.program, 1, false, true)->UseRealTime();
    rows.push_back({"executor overhead", c.description + ", actor executor, 1 place, 1 thread, firing groups",
                    c.name + "/actor/threads:1", per_op, "an actor message per op (--actor-per-op)", op_time});
    rows.push_back({"executor overhead", c.description + ", reference executor", reference_name,
                    direct, "direct bound_op::run loop", op_time});
  }
  bench::run_and_report(rows);
}
