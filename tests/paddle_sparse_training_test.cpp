// Sparse gradients end to end, on programs paddlepaddle 2.6.2 wrote
// (tests/data/paddle_bow_<optimizer>/, scripts/make_paddle_sparse_fixture.py): a bag-of-words
// classifier, nn.Embedding(40, 8, sparse=True) -> mean over the 6 words -> Linear -> cross
// entropy, whose embedding gradient is a SELECTED_ROWS variable read by the optimizer.
//   - From Paddle's own initial parameters and one batch, 20 steps give Paddle's losses within
//     1e-6 on 1 place and on 2 places (against Paddle's own 2-place ParallelExecutor) with
//     SGD, Adam, lazy Adam and momentum with L2Decay; 2-place reruns are bit-identical, and so
//     are the replicas.
//   - The SSA graph gathers the sparse gradient (all_gather, named so in errors and traces)
//     and all-reduces the dense ones; reduce mode gathers it too, and the table's owner
//     alone updates it and broadcasts the touched rows (sgd, lazy adam) or the whole table,
//     equal to all-reduce mode bit for bit, across processes too; executors of 2 processes
//     joined in memory train as one process over the same places (bit for bit with one
//     place each, and Paddle's 2-place losses).
//   - What is refused, naming the problem: a SELECTED_ROWS variable in a slot that cannot take
//     one, is_sparse disagreeing with W@GRAD's declaration, SELECTED_ROWS that is not FP32
//     [height, width], and a fetched SELECTED_ROWS variable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "actors/hazard_check.hpp"
#include "actors/parallel_executor.hpp"
#include "actors/trace.hpp"
#include "actors/trace_export.hpp"
#include "core/selected_rows.hpp"
#include "data/npy.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/exec/reference_executor.hpp"
#include "graph/exec/scope.hpp"
#include "graph/program_info.hpp"
#include "graph/program_io.hpp"
#include "graph/ssa_graph.hpp"
#include "graph/attributes.hpp"
#include "graph/validate.hpp"
#include "collectives/net/process_group.hpp"
#include "support/loopback_transport.hpp"
#include "tests/support/expect_error.hpp"
#include "core/place_list.hpp"

namespace {

using namespace pe;
using pe::testing::contains;
using pe::testing::expect_error;

std::string fixture_dir(const std::string& name) {
  return std::string(PE_TEST_DATA_DIR) + "/paddle_bow_" + name;
}

const std::string embedding = "embedding_0.w_0", embedding_grad = "embedding_0.w_0@GRAD";

/// The fixture's executor on `places` CPU places with Paddle's initial parameters.
struct bow_run {
  bow_run(const std::string& name, int places, build_strategy build = {})
      : dir(fixture_dir(name)), startup(load_program(dir + "/startup.pb")), main(load_program(dir + "/main.pb")),
        exe(make_cpu_places(places), startup, main, build) {
    for (const auto& [var, value] : load_params(dir + "/params", main)) exe.set_persistable(var, value);
  }

  /// The losses of `steps` steps on the fixture's batch.
  std::vector<float> losses(int steps) {
    const feed_map feeds{{"ids", read_npy(dir + "/ids.npy")}, {"label", read_npy(dir + "/label.npy")}};
    const std::string loss = analyze_program(main).loss;
    std::vector<float> out;
    for (int s = 0; s < steps; ++s) out.push_back(exe.run(feeds, {loss}).at(0).values<float>()[0]);
    return out;
  }

  std::vector<float> on_place(const std::string& var, int p) {
    const tensor t = exe.host_value(var, p);
    return {t.values<float>().begin(), t.values<float>().end()};
  }

  std::string dir;
  proto::ProgramDesc startup, main;
  parallel_executor exe;
};

class paddle_sparse_training : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(paddle_sparse_training, twenty_steps_equal_paddles_losses_within_1e_6) {
  const auto& [name, places] = GetParam();
  const tensor expected = read_npy(fixture_dir(name) + "/losses_" + std::to_string(places) + "p.npy");
  ASSERT_EQ(expected.numel(), 20);
  const auto paddle = expected.values<float>();
  const std::vector<float> ours = bow_run(name, places).losses(20);
  for (std::size_t s = 0; s < ours.size(); ++s)
    EXPECT_NEAR(ours[s], paddle[s], 1e-6) << name << " on " << places << " place(s), step " << s + 1;
}

INSTANTIATE_TEST_SUITE_P(fixtures, paddle_sparse_training,
                         ::testing::Combine(::testing::Values("sgd", "adam", "adam_lazy", "momentum"), ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "p";
                         });

TEST(paddle_sparse_training_runs, two_place_reruns_and_replicas_are_bit_identical) {
  bow_run first("adam_lazy", 2), second("adam_lazy", 2);
  const auto a = first.losses(5), b = second.losses(5);
  EXPECT_EQ(a, b);
  EXPECT_EQ(first.on_place(embedding, 0), second.on_place(embedding, 0));
  EXPECT_EQ(first.on_place(embedding, 0), first.on_place(embedding, 1));
  EXPECT_EQ(first.on_place(embedding + "_moment2_0", 0), first.on_place(embedding + "_moment2_0", 1));
}

build_strategy reduce_mode() {
  build_strategy reduce;
  reduce.reduce = build_strategy::reduce_mode::reduce;
  return reduce;
}

class reduce_mode_tables : public ::testing::TestWithParam<std::string> {};

TEST_P(reduce_mode_tables, the_owner_updates_the_table_and_every_place_trains_as_in_all_reduce_mode) {
  // The table's owner alone runs its optimizer op and sends the touched rows (sgd, lazy adam)
  // or the whole table (adam, momentum): the same update as every place computing it, so the
  // losses and every place's table are all-reduce mode's bit for bit, on 2 and 3 places.
  for (int places : {2, 3}) {
    bow_run reduced(GetParam(), places, reduce_mode()), all_reduced(GetParam(), places);
    EXPECT_EQ(reduced.losses(8), all_reduced.losses(8)) << places << " places";
    for (int p = 0; p < places; ++p)
      EXPECT_EQ(reduced.on_place(embedding, p), all_reduced.on_place(embedding, 0)) << "place " << p << " of " << places;
  }
}

INSTANTIATE_TEST_SUITE_P(fixtures, reduce_mode_tables, ::testing::Values("sgd", "adam", "adam_lazy", "momentum"));

TEST(paddle_sparse_graph, in_reduce_mode_the_owner_broadcasts_only_the_touched_rows_when_only_they_change) {
  for (const std::string name : {"sgd", "adam_lazy", "momentum", "adam"}) {
    SCOPED_TRACE(name);
    const auto main = lower_for_strategy(load_program(fixture_dir(name) + "/main.pb"), reduce_mode());
    const ssa_graph g = build_ssa_graph(main, 2, reduce_mode(), {});
    std::vector<std::string> broadcasts;
    int table_updates = 0;
    for (const auto& op : g.ops) {
      if (op.what == op_handle::kind::broadcast) broadcasts.push_back(op.vars.at(0));
      if (op.what == op_handle::kind::computation) {
        const auto& desc = main.blocks(0).ops(op.op_index);
        const auto params = input_args(desc, "Param");
        if (desc.type() == (name.starts_with("adam") ? "adam" : name) && !params.empty() && params[0] == embedding)
          ++table_updates;
      }
    }
    EXPECT_EQ(table_updates, 1) << "the table's optimizer op runs on its owner only";
    const bool rows_only = name == "sgd" || name == "adam_lazy";
    EXPECT_EQ(std::count(broadcasts.begin(), broadcasts.end(), embedding + "@TOUCHED_ROWS"), rows_only ? 1 : 0);
    EXPECT_EQ(std::count(broadcasts.begin(), broadcasts.end(), embedding), rows_only ? 0 : 1);
  }
}

TEST(paddle_sparse_training_runs, the_touched_rows_broadcast_carries_one_row_per_distinct_id) {
  // What crosses between places for the table: k x 8 values, k the batch's distinct ids, not
  // the 40 x 8 table.
  bow_run reduced("sgd", 2, reduce_mode());
  const tensor ids = read_npy(reduced.dir + "/ids.npy");
  const feed_map feeds{{"ids", ids}, {"label", read_npy(reduced.dir + "/label.npy")}};
  // Fetched per place: each place's copy of the rows the owner sent.
  const auto fetched = reduced.exe.run_per_place(feeds, {embedding + "@TOUCHED_ROWS"});
  std::vector<std::int64_t> distinct(ids.values<std::int64_t>().begin(), ids.values<std::int64_t>().end());
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  ASSERT_LT(distinct.size(), 40u);
  const tensor table = reduced.exe.host_value(embedding, 0);
  for (int p = 0; p < 2; ++p) {
    const tensor& rows = fetched.at(0).at(static_cast<std::size_t>(p));
    ASSERT_EQ(rows.shape(), (shape_t{static_cast<std::int64_t>(distinct.size()), 8})) << "place " << p;
    // The updated table's rows, ascending.
    for (std::size_t k = 0; k < distinct.size(); ++k)
      for (int j = 0; j < 8; ++j)
        EXPECT_EQ(rows.values<float>()[k * 8 + j], table.values<float>()[distinct[k] * 8 + j]) << "row " << distinct[k];
  }
}

TEST(paddle_sparse_graph, the_sparse_gradient_is_gathered_and_the_dense_ones_all_reduced) {
  const auto main = load_program(fixture_dir("adam") + "/main.pb");
  const ssa_graph g = build_ssa_graph(main, 2, {}, {});
  std::vector<std::string> gathers, all_reduces;
  for (const auto& op : g.ops) {
    if (op.what == op_handle::kind::all_gather) gathers.push_back(describe(op, main, {"cpu:0", "cpu:1"}));
    if (op.what == op_handle::kind::all_reduce) all_reduces.insert(all_reduces.end(), op.vars.begin(), op.vars.end());
  }
  EXPECT_EQ(gathers, std::vector<std::string>{"all_gather(" + embedding_grad + ")"});
  EXPECT_EQ(all_reduces.size(), 2u); // the Linear's weight and bias
  EXPECT_EQ(std::count(all_reduces.begin(), all_reduces.end(), embedding_grad), 0);
}

TEST(paddle_sparse_graph, the_trace_names_the_all_gather_every_step_and_shows_no_hazard) {
  bow_run run("adam_lazy", 2);
  trace_recorder recorder;
  run.exe.trace(&recorder);
  run.losses(3);
  run.exe.trace(nullptr);
  const ssa_graph& g = run.exe.graph();
  const auto events = recorder.events();
  EXPECT_EQ(events.size(), 3 * g.ops.size());
  int gathers = 0;
  for (const trace_event& e : events)
    if (g.ops[static_cast<std::size_t>(e.op)].what == op_handle::kind::all_gather) {
      ++gathers;
      EXPECT_EQ(op_type_name(g.ops[static_cast<std::size_t>(e.op)], run.main), "all_gather");
      EXPECT_LE(e.start_ns, e.end_ns);
    }
  EXPECT_EQ(gathers, 3);
  for (const auto& v : check_hazards({g, run.exe.program(), run.exe.place_names()}, events)) ADD_FAILURE() << v.message;
}

TEST(paddle_sparse_graph, the_reference_executor_returns_a_fetched_sparse_gradient_with_its_rows) {
  const std::string dir = fixture_dir("sgd");
  const auto startup = load_program(dir + "/startup.pb"), main = load_program(dir + "/main.pb");
  scope vars;
  reference_executor(startup, vars).run({}, {});
  const tensor ids = read_npy(dir + "/ids.npy");
  const auto fetched = reference_executor(main, vars).run({{"ids", ids}, {"label", read_npy(dir + "/label.npy")}},
                                                          {embedding_grad});
  const tensor& g = fetched.at(0);
  ASSERT_NE(g.sparse_rows(), nullptr);
  const auto id_values = ids.values<std::int64_t>();
  EXPECT_EQ(g.sparse_rows()->rows(), std::vector<std::int64_t>(id_values.begin(), id_values.end()));
  EXPECT_EQ(g.sparse_rows()->height(), 40);
  EXPECT_EQ(g.shape(), (shape_t{ids.numel(), 8}));
}

/// The fixture's main program, changed by `edit`, through validation.
template <class Edit>
void expect_invalid(Edit edit, const std::vector<std::string>& parts) {
  auto main = load_program(fixture_dir("sgd") + "/main.pb");
  edit(main);
  expect_error([&] { validate_program(main); }, parts);
}

proto::VarDesc& var_named(proto::ProgramDesc& p, const std::string& name) {
  for (auto& v : *p.mutable_blocks(0)->mutable_vars())
    if (v.name() == name) return v;
  throw error("no variable " + name);
}

proto::OpDesc& op_typed(proto::ProgramDesc& p, const std::string& type) {
  for (auto& op : *p.mutable_blocks(0)->mutable_ops())
    if (op.type() == type) return op;
  throw error("no op " + type);
}

TEST(paddle_sparse_validation, paddles_program_is_valid_and_its_gradient_selected_rows) {
  const auto main = load_program(fixture_dir("sgd") + "/main.pb");
  const var_table vars = validate_program(main);
  EXPECT_TRUE(vars.at(embedding_grad).selected_rows);
  EXPECT_EQ(vars.at(embedding_grad).dims, (shape_t{40, 8}));
  EXPECT_FALSE(vars.at(embedding).selected_rows);
}

TEST(paddle_sparse_validation, a_selected_rows_variable_elsewhere_than_grad_is_refused_naming_slot_and_variable) {
  expect_invalid(
      [](auto& p) {
        for (auto& slot : *op_typed(p, "sgd").mutable_inputs())
          if (slot.parameter() == "LearningRate") slot.set_arguments(0, embedding_grad);
      },
      {"(sgd)", "input LearningRate uses variable '" + embedding_grad + "', which is SELECTED_ROWS",
                  "only an optimizer's Grad"});
}

TEST(paddle_sparse_validation, is_sparse_disagreeing_with_the_declaration_is_refused) {
  expect_invalid(
      [](auto& p) {
        for (auto& a : *op_typed(p, "lookup_table_v2_grad").mutable_attrs())
          if (a.name() == "is_sparse") a.set_b(false);
      },
      {"(lookup_table_v2_grad)", "is_sparse is false but W@GRAD is declared SELECTED_ROWS"});
  expect_invalid(
      [](auto& p) {
        auto* type = var_named(p, embedding_grad).mutable_type();
        const auto desc = type->selected_rows();
        type->set_type(proto::VarType::LOD_TENSOR);
        *type->mutable_lod_tensor()->mutable_tensor() = desc;
      },
      {"is_sparse is true but W@GRAD is declared a dense tensor"});
}

TEST(paddle_sparse_validation, selected_rows_other_than_fp32_rows_of_a_table_are_refused) {
  expect_invalid([](auto& p) { var_named(p, embedding_grad).mutable_type()->mutable_selected_rows()->set_data_type(proto::VarType::INT64); },
                 {"variable '" + embedding_grad + "' is SELECTED_ROWS of INT64 [40, 8]", "only FP32 rows"});
  expect_invalid([](auto& p) { var_named(p, embedding_grad).mutable_type()->mutable_selected_rows()->add_dims(2); },
                 {"SELECTED_ROWS of FP32 [40, 8, 2]"});
}

TEST(paddle_sparse_validation, fetching_a_sparse_gradient_is_refused) {
  const auto main = load_program(fixture_dir("sgd") + "/main.pb");
  expect_error([&] { build_ssa_graph(main, 2, {}, {embedding_grad}); },
               {"fetch '" + embedding_grad + "' is a SELECTED_ROWS variable", "cannot be fetched"});
}

/// `processes` executors of `local` places each, joined in memory (as separate processes are
/// over the network backend), on the fixture `name` with Paddle's initial parameters: the
/// global losses of `steps` steps, checked to be the same on every process.
std::vector<float> process_losses(const std::string& name, int processes, int local, int steps,
                                  build_strategy build = {}) {
  const std::string dir = fixture_dir(name);
  const auto startup = load_program(dir + "/startup.pb"), main = load_program(dir + "/main.pb");
  pe::testing::loopback_network network(processes);
  std::vector<std::unique_ptr<process_group>> groups;
  for (int r = 0; r < processes; ++r) groups.push_back(std::make_unique<process_group>(network.transport(r)));
  std::vector<std::future<std::unique_ptr<parallel_executor>>> making;
  for (int r = 0; r < processes; ++r)
    making.push_back(std::async(std::launch::async, [&, r] {
      std::vector<place> mine;
      for (int p = 0; p < local; ++p) mine.push_back(place::cpu(r * local + p));
      return std::make_unique<parallel_executor>(mine, startup, main, build,
                                                 execution_strategy{1, sync_mode::event, groups[static_cast<std::size_t>(r)].get()});
    }));
  std::vector<std::unique_ptr<parallel_executor>> executors;
  for (auto& f : making) executors.push_back(f.get());
  const auto params = load_params(dir + "/params", main);
  for (auto& exe : executors)
    for (const auto& [var, value] : params) exe->set_persistable(var, value);
  const tensor ids = read_npy(dir + "/ids.npy"), label = read_npy(dir + "/label.npy");
  const std::string loss = analyze_program(main).loss;
  std::vector<float> out;
  for (int s = 0; s < steps; ++s) {
    std::vector<std::future<float>> losses;
    for (auto& exe : executors)
      losses.push_back(std::async(std::launch::async, [&, e = exe.get()] {
        const auto [first, count] = e->share_of(ids.dim(0));
        const feed_map mine{{"ids", ids.slice(first, first + count)}, {"label", label.slice(first, first + count)}};
        return e->run_share(mine, ids.dim(0), {loss})[0].values<float>()[0];
      }));
    std::vector<float> got;
    for (auto& f : losses) got.push_back(f.get());
    for (float l : got) EXPECT_EQ(l, got[0]) << "the processes disagree at step " << s + 1;
    out.push_back(got[0]);
  }
  return out;
}

TEST(paddle_sparse_processes, two_processes_equal_one_process_over_the_same_places) {
  // One place each: the same sums in the same order as one process of two places, bit for
  // bit, and Paddle's 2-place losses.
  const auto two_by_one = process_losses("adam", 2, 1, 20);
  EXPECT_EQ(two_by_one, bow_run("adam", 2).losses(20));
  const tensor paddle = read_npy(fixture_dir("adam") + "/losses_2p.npy");
  for (std::size_t s = 0; s < two_by_one.size(); ++s) EXPECT_NEAR(two_by_one[s], paddle.values<float>()[s], 1e-6) << s;
  // Two places each: the sparse rows are gathered in global rank order as on four places of
  // one process; the dense gradients' fp32 sums are grouped per process.
  const auto two_by_two = process_losses("sgd", 2, 2, 10), four = bow_run("sgd", 4).losses(10);
  for (std::size_t s = 0; s < four.size(); ++s) EXPECT_NEAR(two_by_two[s], four[s], 1e-6) << s;
}

TEST(paddle_sparse_processes, in_reduce_mode_the_owners_touched_rows_reach_the_other_process) {
  // The table's owner is in one process; the other gets the touched rows over the network.
  for (const std::string name : {"sgd", "adam_lazy"})
    EXPECT_EQ(process_losses(name, 2, 1, 10, reduce_mode()), bow_run(name, 2).losses(10)) << name;
}

/// The build strategy exchanging sparse gradients as `mode`.
build_strategy exchanging(sparse_exchange mode) {
  build_strategy b;
  b.sparse_exchange_mode = mode;
  return b;
}

class sparse_exchange_modes : public ::testing::TestWithParam<std::string> {};

TEST_P(sparse_exchange_modes, sparse_dense_and_auto_give_equal_losses_on_two_places_and_two_processes) {
  // The fixture's 48 ids over 40 rows of 8: gathered 1,920 bytes, densely 1,440, so auto
  // takes the dense all-reduce here; forced sparse gathers. Lazy Adam still updates only the
  // touched rows (the dense result hands the optimizer those rows alone).
  const std::string name = GetParam();
  const auto sparse = bow_run(name, 2, exchanging(sparse_exchange::sparse)).losses(20);
  const auto dense = bow_run(name, 2, exchanging(sparse_exchange::dense)).losses(20);
  const auto automatic = bow_run(name, 2, exchanging(sparse_exchange::automatic)).losses(20);
  EXPECT_EQ(automatic, dense);
  for (std::size_t s = 0; s < sparse.size(); ++s) EXPECT_NEAR(dense[s], sparse[s], 1e-6) << name << " step " << s + 1;
  const auto processes_sparse = process_losses(name, 2, 1, 20, exchanging(sparse_exchange::sparse));
  const auto processes_dense = process_losses(name, 2, 1, 20, exchanging(sparse_exchange::dense));
  const auto processes_auto = process_losses(name, 2, 1, 20, exchanging(sparse_exchange::automatic));
  // One place per process: the same sums as one process's two places, bit for bit, either way.
  EXPECT_EQ(processes_sparse, sparse);
  EXPECT_EQ(processes_dense, dense);
  EXPECT_EQ(processes_auto, dense);
}

INSTANTIATE_TEST_SUITE_P(fixtures, sparse_exchange_modes, ::testing::Values("sgd", "adam", "adam_lazy", "momentum"));

TEST(paddle_sparse_exchange, dense_reruns_are_bit_identical_and_lazy_adam_leaves_untouched_rows_alone) {
  bow_run first("adam_lazy", 2, exchanging(sparse_exchange::dense)), second("adam_lazy", 2, exchanging(sparse_exchange::dense));
  const auto before = first.on_place(embedding, 0);
  EXPECT_EQ(first.losses(5), second.losses(5));
  EXPECT_EQ(first.on_place(embedding, 0), second.on_place(embedding, 0));
  EXPECT_EQ(first.on_place(embedding, 0), first.on_place(embedding, 1));
  // Rows no id touches keep their values under lazy Adam, as with the gather.
  const tensor ids = read_npy(fixture_dir("adam_lazy") + "/ids.npy");
  const auto id_values = ids.values<std::int64_t>();
  const auto after = first.on_place(embedding, 0);
  int untouched = 0;
  for (std::int64_t row = 0; row < 40; ++row) {
    if (std::find(id_values.begin(), id_values.end(), row) != id_values.end()) continue;
    ++untouched;
    for (int j = 0; j < 8; ++j) EXPECT_EQ(after[static_cast<std::size_t>(row * 8 + j)], before[static_cast<std::size_t>(row * 8 + j)]) << row;
  }
  EXPECT_GT(untouched, 0) << "the fixture touches every row: the check would prove nothing";
}

TEST(paddle_sparse_exchange, the_trace_names_the_exchange_that_ran) {
  for (sparse_exchange mode : {sparse_exchange::sparse, sparse_exchange::dense}) {
    bow_run run("sgd", 2, exchanging(mode));
    trace_recorder recorder;
    run.exe.trace(&recorder);
    run.losses(2);
    run.exe.trace(nullptr);
    const ssa_graph& g = run.exe.graph();
    std::ostringstream json;
    write_chrome_trace(json, {g, run.exe.program(), run.exe.place_names()}, recorder.events());
    int gathers = 0;
    for (const trace_event& e : recorder.events())
      if (g.ops[static_cast<std::size_t>(e.op)].what == op_handle::kind::all_gather) {
        ++gathers;
        EXPECT_EQ(e.dense_fallback, mode == sparse_exchange::dense);
      }
    EXPECT_EQ(gathers, 2);
    const std::string text = json.str();
    if (mode == sparse_exchange::dense) {
      EXPECT_TRUE(contains(text, "all_reduce (dense fallback)")) << text.substr(0, 2000);
      EXPECT_TRUE(contains(text, "all_reduce(" + embedding_grad + ") (dense fallback of all_gather)"));
      EXPECT_FALSE(contains(text, "\"all_gather(" + embedding_grad + ")\""));
    } else {
      EXPECT_TRUE(contains(text, "\"all_gather(" + embedding_grad + ")\""));
      EXPECT_FALSE(contains(text, "dense fallback"));
    }
  }
}

} // namespace
