#include "tests/support/paddle_fixtures.hpp"

#include "data/npy.hpp"
#include "data/npy_dir.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/program_info.hpp"
#include "graph/program_io.hpp"

namespace pe::testing {

feed_map paddle_fixture_feeds(const std::string& dir, const proto::ProgramDesc& main) {
  const dataset batch = read_npy_split(dir, analyze_program(main).feeds, false);
  feed_map feeds;
  for (const auto& f : batch.feeds()) feeds.emplace(f.name, f.rows);
  return feeds;
}

std::vector<float> paddle_fixture_losses(const std::string& dir, const std::vector<place>& where,
                                         std::int64_t steps) {
  const auto startup = load_program(dir + "/startup.pb");
  const auto main = load_program(dir + "/main.pb");
  const std::string loss = analyze_program(main).loss;
  parallel_executor exe(where, startup, main);
  for (const auto& [var, value] : load_params(dir + "/params", main)) exe.set_persistable(var, value);
  const feed_map feeds = paddle_fixture_feeds(dir, main);
  std::vector<float> out;
  for (std::int64_t s = 0; s < steps; ++s) {
    const tensor fetched = exe.run(feeds, {loss}).at(0);
    float sum = 0;
    for (float v : fetched.values<float>()) sum += v;
    out.push_back(sum / static_cast<float>(fetched.numel()));
  }
  return out;
}

std::vector<float> paddles_losses(const std::string& dir, int places) {
  const tensor t = read_npy(dir + "/losses_" + std::to_string(places) + "p.npy");
  const auto v = t.values<float>();
  return {v.begin(), v.end()};
}

fixture_losses paddle_and_gpu0_losses(const std::string& name, int places) {
  const std::string dir = paddle_training_fixture(name);
  fixture_losses l;
  l.paddle = paddles_losses(dir, places);
  std::vector<place> where;
  for (int p = 0; p < places; ++p) where.push_back(place::gpu(p, 0));
  l.ours = paddle_fixture_losses(dir, where, static_cast<std::int64_t>(l.paddle.size()));
  return l;
}

} // namespace pe::testing
