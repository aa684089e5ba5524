#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/attribute.hpp"
#include "core/place.hpp"
#include "core/tensor.hpp"
#include "devices/device.hpp"

namespace pe {

/// Everything a kernel sees of one op: its input and output tensors by slot, its
/// attributes, its place, and the device and stream it runs on. Executors build one per op
/// handle and reuse it every step; the tensors pointed to live in the executor's per-place
/// scope. A CPU kernel runs on its stream's thread; a GPU kernel's host code runs there
/// and launches onto stream().
class kernel_context {
 public:
  using slot_map = std::map<std::string, std::vector<tensor*>, std::less<>>;

  kernel_context(std::string op_type, slot_map inputs, slot_map outputs, attribute_map attrs,
                 place where)
      : op_type_(std::move(op_type)), inputs_(std::move(inputs)), outputs_(std::move(outputs)),
        attrs_(std::move(attrs)), place_(where) {}

  const std::string& op_type() const { return op_type_; }
  place where() const { return place_; }
  const attribute_map& attrs() const { return attrs_; }

  /// The device and stream the kernel runs on; null for a kernel called outside any
  /// device (the reference executor runs CPU kernels on its own thread).
  device* dev() const { return device_; }
  stream* on() const { return stream_; }
  void bind(device* d, stream* s) {
    device_ = d;
    stream_ = s;
  }

  /// Number of tensors bound to an input slot (0 when the slot is absent).
  std::size_t input_count(std::string_view slot) const { return count(inputs_, slot); }
  std::size_t output_count(std::string_view slot) const { return count(outputs_, slot); }
  bool has_input(std::string_view slot) const { return input_count(slot) > 0; }
  bool has_output(std::string_view slot) const { return output_count(slot) > 0; }

  /// The i-th tensor of a slot; throws pe::error naming op and slot when absent.
  const tensor& input(std::string_view slot, std::size_t i = 0) const;
  tensor& output(std::string_view slot, std::size_t i = 0);

  /// Throws pe::error prefixed with the op type: kernels report bad input through this.
  [[noreturn]] void fail(const std::string& message) const;

  /// 0 on the first call, then 1, 2, ...: how often the kernel asked before. Executors keep
  /// an op handle's context across steps, so this counts that op's runs on this place; a
  /// random kernel (dropout) mixes it and where().index into its seed, which gives every
  /// step and every data-parallel replica its own, reproducible draw.
  std::uint64_t next_call() { return calls_++; }

  /// Makes the next next_call() return `calls`. Executors set it to the steps run before
  /// each step, so that a rebuilt graph or a run resumed from a checkpoint draws what one
  /// uninterrupted run would.
  void set_calls(std::uint64_t calls) { calls_ = calls; }

  /// What runs the ops of the op's sub-block (conditional_block's), in block order on this
  /// place and stream: bound_op sets it for an op that has a sub-block, so that a control-flow
  /// kernel decides whether (or how often) the block runs while the block's ops stay bound
  /// ops of their own, with their own kernels and checks.
  using block_runner = std::function<void()>;
  void set_sub_block(block_runner run) { sub_block_ = std::move(run); }

  /// Runs the sub-block's ops once; throws pe::error when the op was bound without one.
  void run_sub_block() const;

 private:
  static std::size_t count(const slot_map& m, std::string_view slot) {
    auto i = m.find(slot);
    return i == m.end() ? 0 : i->second.size();
  }

  std::string op_type_;
  slot_map inputs_;
  slot_map outputs_;
  attribute_map attrs_;
  place place_;
  device* device_ = nullptr;
  stream* stream_ = nullptr;
  std::uint64_t calls_ = 0;
  block_runner sub_block_;
};

using kernel_fn = std::function<void(kernel_context&)>;

/// An element of an FP32 tensor that is NaN or an infinity: what --check-nan-inf reports.
struct nonfinite_element {
  std::int64_t index = 0;
  float value = 0;
};

/// Finds the first non-finite element of an initialised FP32 tensor on the context's place,
/// after the work already on the context's stream. A GPU place's check runs on that stream
/// and waits for it (the stream's host thread waits, not a CAF worker): it is a debugging
/// mode, like Paddle's FLAGS_check_nan_inf, which synchronises too.
using finite_check_fn = std::function<std::optional<nonfinite_element>(const kernel_context&, const tensor&)>;

/// Kernels by (op type, place kind). Filled explicitly at first use by the
/// register_*_kernels functions (no static-initialiser tricks that linkers drop).
class kernel_registry {
 public:
  /// The process-wide registry, with every built-in kernel registered.
  static const kernel_registry& global();

  /// Adds kernels of the caller's to global(), for a test binary's own ops: `add` runs once,
  /// when global() is first built, after the built-in kernels. Throws pe::error once
  /// global() was built.
  static void extend(std::function<void(kernel_registry&)> add);

  void add(std::string op_type, place::kind kind, kernel_fn fn);

  /// nullptr when no kernel exists for that op on that kind of place.
  const kernel_fn* find(std::string_view op_type, place::kind kind) const;

  /// The finite check of a kind of place's kernels (--check-nan-inf); one per kind.
  void add_finite_check(place::kind kind, finite_check_fn fn);
  /// nullptr when that kind of place has none.
  const finite_check_fn* find_finite_check(place::kind kind) const;

 private:
  std::map<std::pair<std::string, place::kind>, kernel_fn, std::less<>> kernels_;
  std::map<place::kind, finite_check_fn> finite_checks_;
};

} // namespace pe
