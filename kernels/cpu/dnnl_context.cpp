#include "kernels/cpu/dnnl_context.hpp"

#include <omp.h>

#include <utility>
#include <vector>

#include "core/host_block_cache.hpp"
#include "kernels/cpu/blas.hpp"
#include "kernels/cpu/dnnl_cache.hpp"
#include "kernels/cpu/cpu_kernels.hpp"

namespace pe {

namespace {

struct dnnl_thread {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  int threads = 0; ///< the OpenMP team size last applied on this thread
};

/// The blocks dnnl_scratch took on this thread inside the innermost dnnl_scratch_scope.
thread_local std::vector<std::pair<void*, std::size_t>>* scratch_blocks = nullptr;

dnnl_thread& this_thread() {
  thread_local dnnl_thread t;
  const int wanted = blas_threads();
  if (t.threads != wanted) {
    omp_set_num_threads(wanted);
    t.threads = wanted;
  }
  return t;
}

} // namespace

void register_dnnl_kernels(kernel_registry& r) {
  register_dnnl_conv_kernels(r);
  register_dnnl_pool_kernels(r);
  register_dnnl_norm_kernels(r);
  register_dnnl_eltwise_kernels(r);
}

int dnnl_threads() { return omp_get_max_threads(); }

int dnnl_team_size() { return this_thread().threads; }

const dnnl::engine& dnnl_engine() { return this_thread().engine; }

void dnnl_run(const dnnl::primitive& primitive, const std::unordered_map<int, dnnl::memory>& args) {
  dnnl_thread& t = this_thread();
  primitive.execute(t.stream, args);
  t.stream.wait();
}

dnnl::memory::desc dnnl_plain_desc(const shape_t& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return {dnnl::memory::dims(dims.begin(), dims.end()), dnnl::memory::data_type::f32, strides};
}

dnnl::memory dnnl_memory(const dnnl::memory::desc& md, const tensor& t) {
  return {md, dnnl_engine(), const_cast<void*>(t.raw())};
}

dnnl_scratch_scope::dnnl_scratch_scope() : outer_(scratch_blocks) { scratch_blocks = &blocks_; }

dnnl_scratch_scope::~dnnl_scratch_scope() {
  for (const auto& [block, bytes] : blocks_) host_block_cache::instance().give(block, bytes);
  scratch_blocks = outer_;
}

dnnl::memory dnnl_scratch(const dnnl::memory::desc& md) {
  if (scratch_blocks == nullptr) return {md, dnnl_engine()}; // owned by oneDNN
  const std::size_t bytes = md.get_size();
  void* block = host_block_cache::instance().take(bytes);
  scratch_blocks->emplace_back(block, bytes);
  return {md, dnnl_engine(), block};
}

dnnl::memory::desc dnnl_any(const dnnl::memory::desc& plain) {
  return {plain.dims(), plain.data_type(), dnnl::memory::format_tag::any};
}

dnnl::memory::desc dnnl_blocked(const dnnl::memory::desc& plain) {
  const auto avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
  const bool wide =
      (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & avx512) == avx512;
  return {plain.dims(), plain.data_type(),
          wide ? dnnl::memory::format_tag::nChw16c : dnnl::memory::format_tag::nChw8c};
}

namespace {

/// The reorder from layout `from` to layout `to`, from the thread's cache.
dnnl::reorder reorder_of(const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  return dnnl_cached<dnnl::reorder>(dnnl_key('R').add(from).add(to), [&] {
    const dnnl::engine& engine = dnnl_engine();
    return dnnl::reorder(dnnl::reorder::primitive_desc(engine, from, engine, to));
  });
}

} // namespace

dnnl::memory dnnl_reordered(const dnnl::memory& plain, const dnnl::memory::desc& md) {
  const dnnl::memory::desc from = plain.get_desc();
  if (from == md) return plain;
  dnnl::memory copy = dnnl_scratch(md);
  dnnl_run(reorder_of(from, md), {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, copy}});
  return copy;
}

dnnl::memory dnnl_result(const dnnl::memory& plain, const dnnl::memory::desc& md) {
  return plain.get_desc() == md ? plain : dnnl_scratch(md);
}

void dnnl_store(const dnnl::memory& result, const dnnl::memory& plain) {
  if (result == plain) return;
  dnnl_run(reorder_of(result.get_desc(), plain.get_desc()),
           {{DNNL_ARG_FROM, result}, {DNNL_ARG_TO, plain}});
}

} // namespace pe
