// CUDA kernels of the shape ops: assign, reshape2, flatten_contiguous_range, squeeze2,
// unsqueeze2 (device copies into the new dims), transpose2 (permute_index.hpp's gather),
// concat and split (one strided 2-D copy per part), cast (cast_fn per element pair of types)
// and the grads. Dims, attribute checks and failures come from kernels/shape_ops.hpp's
// fronts, shared with the CPU kernels.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernel_groups.hpp"
#include "kernels/cuda/elementwise_functors.hpp"
#include "kernels/cuda/gpu_maps.cuh"
#include "kernels/cuda/permute_index.hpp"
#include "kernels/math_shapes.hpp"
#include "kernels/shape_ops.hpp"

namespace pe::cuda {

namespace {

constexpr auto gpu = place::kind::gpu;

/// Writes `in`'s elements, in order, to output `slot` with `dims` (same element count).
void copy_as(kernel_context& ctx, const tensor& in, std::string_view slot, const shape_t& dims) {
  write_unaliased(ctx.output(slot), {&in}, [&](tensor& out) {
    resize_output(ctx, out, in.type(), dims);
    copy_on_device(ctx, out.raw(), in.raw(), in.bytes());
  });
}

void write_permuted(kernel_context& ctx, const tensor& in, const std::vector<std::size_t>& perm,
                    std::string_view slot) {
  permute_geometry g;
  try {
    g = permute_geometry::make(in.shape(), perm);
  } catch (const error& e) {
    ctx.fail(e.what());
  }
  write_unaliased(ctx.output(slot), {&in}, [&](tensor& out) {
    resize_output(ctx, out, in.type(), permuted(in.shape(), perm));
    visit_transpose_word(ctx, in.type(), [&](auto word) {
      using w = decltype(word);
      for_each(ctx, in.numel(), permute_map<w>{static_cast<const w*>(in.raw()), static_cast<w*>(out.raw()), g});
    });
  });
}

/// Copies between the whole of `cut` and its parts: part i is `outer` blocks, a whole row
/// (`pitch`) apart in the whole. One cudaMemcpy2DAsync per part; `gather` copies parts into
/// the whole (concat), else out of it.
void copy_blocks(const kernel_context& ctx, const block_cut& cut, char* whole_data,
                 const std::vector<char*>& parts, bool gather) {
  const auto pitch = static_cast<std::size_t>(cut.whole[cut.axis] * cut.row_bytes);
  const auto rows = static_cast<std::size_t>(cut.outer);
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < cut.sizes.size(); ++i) {
    const auto width = static_cast<std::size_t>(cut.sizes[i] * cut.row_bytes);
    if (width > 0 && rows > 0) {
      char* at = whole_data + offset;
      const cudaStream_t s = cuda_stream_of(ctx);
      check(ctx,
            gather ? cudaMemcpy2DAsync(at, pitch, parts[i], width, width, rows, cudaMemcpyDeviceToDevice, s)
                   : cudaMemcpy2DAsync(parts[i], width, at, pitch, width, rows, cudaMemcpyDeviceToDevice, s),
            "cudaMemcpy2DAsync");
    }
    offset += static_cast<std::int64_t>(width);
  }
}

void write_split(kernel_context& ctx, const tensor& whole, std::size_t axis,
                 const std::vector<shape_t>& parts, std::string_view slot) {
  expect_split_outputs(ctx, slot, parts.size());
  std::vector<tensor> outs;
  std::vector<char*> data;
  for (const shape_t& dims : parts) {
    outs.push_back(scratch(ctx, whole.type(), dims));
    data.push_back(static_cast<char*>(outs.back().raw()));
  }
  copy_blocks(ctx, block_cut_of(whole.shape(), axis, parts, size_of(whole.type())),
              const_cast<char*>(static_cast<const char*>(whole.raw())), data, false);
  for (std::size_t i = 0; i < outs.size(); ++i) ctx.output(slot, i) = std::move(outs[i]);
}

/// Input dims, for concat_grad: X is read for its dims only there (it may hold no data yet
/// on this place, as on the CPU's kernel it is not read either).
std::vector<shape_t> dims_of(const kernel_context& ctx) {
  std::vector<shape_t> dims;
  for (std::size_t i = 0; i < ctx.input_count("X"); ++i) dims.push_back(ctx.input("X", i).shape());
  return dims;
}

void concat(kernel_context& ctx) {
  const concat_plan p = concat_plan_of(ctx, gpu_input);
  std::vector<char*> data;
  for (const tensor* x : p.xs) data.push_back(const_cast<char*>(static_cast<const char*>(x->raw())));
  tensor out = scratch(ctx, p.xs.front()->type(), p.cut.whole);
  copy_blocks(ctx, p.cut, static_cast<char*>(out.raw()), data, true);
  ctx.output("Out") = std::move(out);
}

void concat_grad(kernel_context& ctx) {
  const tensor& dout = gpu_input(ctx, "Out@GRAD");
  const std::vector<shape_t> parts = dims_of(ctx);
  write_split(ctx, dout, concat_grad_axis(ctx, dout, parts), parts, "X@GRAD");
}

void cast(kernel_context& ctx) {
  const tensor& x = gpu_input(ctx, "X");
  const cast_plan p = cast_plan_of(ctx, x);
  write_unaliased(ctx.output("Out"), {&x}, [&](tensor& out) {
    resize_output(ctx, out, p.to, x.shape());
    visit_element_type(p.from, [&](auto from_type) {
      using from = decltype(from_type);
      visit_element_type(p.to, [&](auto to_type) {
        using target = decltype(to_type);
        for_each(ctx, x.numel(),
                 unary_map<cast_fn<target>, from, target>{x.data<from>(), out.data<target>(), {}});
      });
    });
  });
}

} // namespace

void register_shape_kernels(kernel_registry& r) {
  register_shape_ops(r, gpu,
                     {gpu_input, copy_as,
                      [](const kernel_context& ctx, tensor& t, dtype type, const shape_t& dims) {
                        resize_output(ctx, t, type, dims);
                      },
                      write_permuted, write_split, concat, concat_grad, cast});
}

} // namespace pe::cuda
