#include "kernels/slice_ops.hpp"

#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace pe {

slice_index slice_index::make(const kernel_context& ctx, const shape_t& in, const slice_box& box) {
  if (in.size() > max_rank)
    ctx.fail("Input has rank " + std::to_string(in.size()) + ", above the " + std::to_string(max_rank) +
             " slice supports");
  slice_index s;
  s.rank_ = static_cast<int>(in.size());
  std::int64_t stride = 1;
  for (std::size_t a = in.size(); a-- > 0;) {
    s.extents_[a] = box.extents[a];
    s.strides_[a] = stride;
    s.base_ += box.starts[a] * stride;
    stride *= in[a];
  }
  return s;
}

namespace {

/// The op's starts or ends (`attr`) for `axes` axes: from `tensor_slot`, else from
/// `list_slot`, else the attribute.
std::vector<std::int64_t> bounds_of(const kernel_context& ctx, const char* tensor_slot, const char* list_slot,
                                    const char* attr, std::size_t axes, const slice_bound_reader& read) {
  const auto integers = [&](const tensor& t, const std::string& what) {
    if (!t.initialized()) ctx.fail("input " + what + " is uninitialised");
    if (t.type() != dtype::int32 && t.type() != dtype::int64)
      ctx.fail("input " + what + " must be INT32 or INT64, got " + to_string(t.type()));
  };
  std::vector<std::int64_t> values;
  if (ctx.has_input(tensor_slot)) {
    const tensor& t = ctx.input(tensor_slot);
    integers(t, tensor_slot);
    if (static_cast<std::size_t>(t.numel()) != axes)
      ctx.fail(std::string(tensor_slot) + " holds " + std::to_string(t.numel()) + " values for " +
               std::to_string(axes) + " axes");
    for (std::int64_t i = 0; i < t.numel(); ++i) values.push_back(read(t, i));
    return values;
  }
  if (const std::size_t n = ctx.input_count(list_slot); n > 0) {
    if (n != axes)
      ctx.fail(std::string(list_slot) + " holds " + std::to_string(n) + " tensors for " + std::to_string(axes) +
               " axes");
    for (std::size_t k = 0; k < n; ++k) {
      const tensor& t = ctx.input(list_slot, k);
      const std::string what = std::string(list_slot) + "[" + std::to_string(k) + "]";
      integers(t, what);
      if (t.numel() != 1) ctx.fail(what + " holds " + std::to_string(t.numel()) + " values, not 1");
      values.push_back(read(t, 0));
    }
    return values;
  }
  return ctx.attrs().get<std::vector<std::int64_t>>(attr);
}

} // namespace

std::int64_t slice_bound_on_host(const tensor& values, std::int64_t i) {
  return values.type() == dtype::int32 ? values.data<std::int32_t>()[i] : values.data<std::int64_t>()[i];
}

slice_plan slice_plan_of(const kernel_context& ctx, const tensor& input, const slice_bound_reader& read) {
  const attribute_map& a = ctx.attrs();
  const auto& axes = a.get<std::vector<std::int32_t>>("axes");
  slice_box box = slice_box_of(ctx, input.shape(), axes,
                               bounds_of(ctx, "StartsTensor", "StartsTensorList", "starts", axes.size(), read),
                               bounds_of(ctx, "EndsTensor", "EndsTensorList", "ends", axes.size(), read),
                               a.get<std::vector<std::int32_t>>("decrease_axis"));
  const slice_index index = slice_index::make(ctx, input.shape(), box);
  return {input, std::move(box), index};
}

} // namespace pe
