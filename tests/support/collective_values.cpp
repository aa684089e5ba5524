#include "tests/support/collective_values.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "collectives/cpu/inproc_communicator.hpp"
#include "core/selected_rows.hpp"
#include "devices/device.hpp"

namespace pe::testing {

std::vector<std::vector<tensor>> random_buffers(int ranks, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::vector<tensor>> out(static_cast<std::size_t>(ranks));
  for (auto& rank : out)
    for (std::int64_t n : {1, 1000, 1100003}) {
      std::vector<float> v(static_cast<std::size_t>(n));
      for (auto& x : v) x = u(rng);
      rank.push_back(tensor::from_vector(v, {n}));
    }
  return out;
}

tensor rank_rows(int r) {
  const std::int64_t n = 1 + r % 3;
  std::vector<std::int64_t> rows;
  std::vector<float> values;
  for (std::int64_t k = 0; k < n; ++k) {
    rows.push_back((3 * r + 7 * k) % 10);
    for (int j = 0; j < 2; ++j) values.push_back(static_cast<float>(10 * r + k) + static_cast<float>(j) / 10.f);
  }
  tensor t = tensor::from_vector(values, {n, 2});
  t.set_sparse_rows(std::make_shared<const selected_rows>(std::move(rows), 10));
  return t;
}

std::vector<tensor*> pointers(std::vector<tensor>& ts) {
  std::vector<tensor*> out;
  for (auto& t : ts) out.push_back(&t);
  return out;
}

std::vector<std::vector<tensor>> clone_all(const std::vector<std::vector<tensor>>& in) {
  std::vector<std::vector<tensor>> out;
  for (const auto& rank : in) {
    out.emplace_back();
    for (const auto& t : rank) out.back().push_back(t.clone());
  }
  return out;
}

bool bit_identical(const tensor& a, const tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

double relative_difference(const tensor& a, const tensor& b) {
  double worst = 0;
  auto x = a.values<float>(), y = b.values<float>();
  for (std::size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::abs(double(x[i]) - y[i]) / std::max(1.0, std::abs(double(y[i]))));
  return worst;
}

std::vector<std::vector<tensor>> single_process(const collective_call& c, std::vector<std::vector<tensor>> in) {
  const int n = static_cast<int>(in.size());
  inproc_communicator comm(n);
  std::vector<std::unique_ptr<device>> devices;
  for (int r = 0; r < n; ++r) devices.push_back(open_device(place::cpu(r)));
  for (int r = 0; r < n; ++r)
    comm.launch(c, r, pointers(in[static_cast<std::size_t>(r)]),
                devices[static_cast<std::size_t>(r)]->get_stream(stream_kind::communication));
  for (auto& d : devices) EXPECT_TRUE(d->get_stream(stream_kind::communication).synchronize());
  for (auto& d : devices) d->stop();
  return in;
}

} // namespace pe::testing
