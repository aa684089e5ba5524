#include "kernels/kernel.hpp"

#include <mutex>

#include "kernels/cpu/cpu_kernels.hpp"
#if PE_WITH_CUDA_KERNELS
#include "kernels/cuda/cuda_kernels.hpp"
#endif

namespace pe {

const tensor& kernel_context::input(std::string_view slot, std::size_t i) const {
  auto it = inputs_.find(slot);
  if (it == inputs_.end() || i >= it->second.size())
    fail("missing input " + std::string(slot) + "[" + std::to_string(i) + "]");
  return *it->second[i];
}

tensor& kernel_context::output(std::string_view slot, std::size_t i) {
  auto it = outputs_.find(slot);
  if (it == outputs_.end() || i >= it->second.size())
    fail("missing output " + std::string(slot) + "[" + std::to_string(i) + "]");
  return *it->second[i];
}

void kernel_context::run_sub_block() const {
  if (!sub_block_) fail("no sub-block is bound to this op");
  sub_block_();
}

void kernel_context::fail(const std::string& message) const {
  throw error(op_type_ + ": " + message);
}

namespace {

/// What extend() was given, and whether global() has been built (then it is too late).
struct kernel_extensions {
  std::mutex mutex;
  std::vector<std::function<void(kernel_registry&)>> adds;
  bool built = false;
};

kernel_extensions& extensions() {
  static kernel_extensions e;
  return e;
}

} // namespace

void kernel_registry::extend(std::function<void(kernel_registry&)> add) {
  kernel_extensions& e = extensions();
  std::lock_guard<std::mutex> guard(e.mutex);
  if (e.built) throw error("kernel_registry::extend: the kernel registry is in use already; extend it before the first kernel is looked up");
  e.adds.push_back(std::move(add));
}

const kernel_registry& kernel_registry::global() {
  static const kernel_registry instance = [] {
    kernel_registry r;
    register_cpu_kernels(r);
#if PE_WITH_CUDA_KERNELS
    register_cuda_kernels(r);
#endif
    kernel_extensions& e = extensions();
    std::lock_guard<std::mutex> guard(e.mutex);
    for (const auto& add : e.adds) add(r);
    e.built = true;
    return r;
  }();
  return instance;
}

void kernel_registry::add(std::string op_type, place::kind kind, kernel_fn fn) {
  kernels_[{std::move(op_type), kind}] = std::move(fn);
}

const kernel_fn* kernel_registry::find(std::string_view op_type, place::kind kind) const {
  auto it = kernels_.find(std::pair<std::string, place::kind>(op_type, kind));
  return it == kernels_.end() ? nullptr : &it->second;
}

void kernel_registry::add_finite_check(place::kind kind, finite_check_fn fn) {
  finite_checks_[kind] = std::move(fn);
}

const finite_check_fn* kernel_registry::find_finite_check(place::kind kind) const {
  auto it = finite_checks_.find(kind);
  return it == finite_checks_.end() ? nullptr : &it->second;
}

} // namespace pe
