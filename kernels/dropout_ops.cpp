#include "kernels/dropout_ops.hpp"

#include <cmath>
#include <string>

namespace pe {

dropout_attrs dropout_attrs_of(const kernel_context& ctx) {
  const float p = ctx.attrs().get<float>("dropout_prob");
  if (!(p >= 0.f && p <= 1.f)) ctx.fail("dropout_prob must be in [0, 1], got " + std::to_string(p));
  const auto& mode = ctx.attrs().get<std::string>("dropout_implementation");
  if (mode != "downgrade_in_infer" && mode != "upscale_in_train")
    ctx.fail("dropout_implementation must be downgrade_in_infer or upscale_in_train, got '" + mode + "'");
  return {p, mode == "upscale_in_train", ctx.attrs().get<bool>("is_test")};
}

const tensor* dropout_seed_input(const kernel_context& ctx) {
  if (!ctx.has_input("Seed")) return nullptr;
  const tensor& t = ctx.input("Seed");
  if (t.type() != dtype::int32 || t.numel() != 1)
    ctx.fail("Seed must be one INT32 element, got " + to_string(t.type()) + " " + to_string(t.shape()));
  return &t;
}

void expect_dropout_mask(const kernel_context& ctx, const tensor& mask, const tensor& out_grad) {
  if (mask.type() != dtype::uint8 || mask.shape() != out_grad.shape())
    ctx.fail("Mask is " + to_string(mask.type()) + " " + to_string(mask.shape()) + " but must be UINT8 " +
             to_string(out_grad.shape()) + " like Out@GRAD");
}

std::mt19937_64 dropout_generator(std::uint64_t step, int place_index, std::int32_t seed_attr, bool fix_seed,
                                  std::optional<std::int32_t> seed_input) {
  std::uint64_t seed = static_cast<std::uint32_t>(seed_attr);
  bool fixed = fix_seed;
  if (seed_input) {
    seed = static_cast<std::uint32_t>(*seed_input);
    fixed = true;
  }
  if (seed == 0 && !fixed) {
    std::random_device entropy;
    return std::mt19937_64((std::uint64_t{entropy()} << 32) | entropy());
  }
  const std::uint64_t draw = fixed ? 0 : step;
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(place_index),
                    static_cast<std::uint32_t>(draw), static_cast<std::uint32_t>(draw >> 32)};
  return std::mt19937_64(seq);
}

std::mt19937_64 dropout_generator(kernel_context& ctx, std::optional<std::int32_t> seed_input) {
  const std::uint64_t step = ctx.next_call();
  return dropout_generator(step, ctx.where().index, ctx.attrs().get<std::int32_t>("seed"),
                           ctx.attrs().get<bool>("fix_seed"), seed_input);
}

std::vector<std::uint8_t> draw_dropout_mask(std::mt19937_64& g, float prob, std::int64_t n) {
  const auto threshold = static_cast<std::uint64_t>(std::ldexp(static_cast<double>(prob), 53));
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(n));
  for (auto& m : mask) m = (g() >> 11) >= threshold ? 1 : 0;
  return mask;
}

} // namespace pe
