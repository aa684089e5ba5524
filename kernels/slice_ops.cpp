#include "kernels/slice_ops.hpp"

#include <string>

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

slice_plan slice_plan_of(const kernel_context& ctx, const tensor& input) {
  for (const char* slot : {"StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList"})
    if (ctx.has_input(slot))
      ctx.fail(std::string("the ") + slot + " input is not supported; give the starts and ends attributes");
  const attribute_map& a = ctx.attrs();
  slice_box box = slice_box_of(ctx, input.shape(), a.get<std::vector<std::int32_t>>("axes"),
                               a.get<std::vector<std::int64_t>>("starts"),
                               a.get<std::vector<std::int64_t>>("ends"),
                               a.get<std::vector<std::int32_t>>("decrease_axis"));
  const slice_index index = slice_index::make(ctx, input.shape(), box);
  return {input, std::move(box), index};
}

} // namespace pe
