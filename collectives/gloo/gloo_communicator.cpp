#include "collectives/gloo/gloo_communicator.hpp"

#include <array>
#include <atomic>
#include <cstring>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>
#include <gloo/math.h>
#include <gloo/reduce.h>

#include "collectives/net/process_group.hpp"
#include "core/error.hpp"
#include "devices/progress.hpp"

namespace pe {

namespace {

/// The handshake: what each process's lead is about to run, as 8-bit limbs summed across
/// the processes with their squares. Every process then knows whether all agree: limb j
/// is equal everywhere exactly when P * sum(x^2) == sum(x)^2 (the sums are integers far
/// below 2^24, so exact in fp32, for the at most 31 processes of a job).
struct signature {
  static constexpr int kind_limbs = 1, root_limbs = 3, count_limbs = 6, bad_limbs = 1;
  static constexpr int limbs = kind_limbs + root_limbs + count_limbs + bad_limbs;
  std::array<std::uint64_t, 4> fields{}; // kind, root, element count, a buffer not FP32

  static constexpr std::array<int, 4> widths = {kind_limbs, root_limbs, count_limbs, bad_limbs};

  /// The 2 x limbs floats this process contributes.
  void write(float* out) const {
    int at = 0;
    for (std::size_t f = 0; f < fields.size(); ++f)
      for (int l = 0; l < widths[f]; ++l, ++at) {
        const auto limb = static_cast<float>((fields[f] >> (8 * l)) & 0xff);
        out[at] = limb;
        out[limbs + at] = limb * limb;
      }
  }

  /// Whether every process contributed the same limbs, from the sums of `processes`.
  static bool agreed(const float* sums, int processes) {
    for (int at = 0; at < limbs; ++at) {
      const auto sum = static_cast<std::int64_t>(sums[at]);
      const auto squares = static_cast<std::int64_t>(sums[limbs + at]);
      if (processes * squares != sum * sum) return false;
    }
    return true;
  }

  /// Whether some process had a buffer that is missing or not FP32.
  static bool any_bad(const float* sums) { return sums[limbs - 1] != 0; }
};

using reduce_function = void (*)(void*, const void*, const void*, std::size_t);

} // namespace

/// The network stage of one collective on this process's lead place.
struct gloo_communicator::exchange {
  collective_call call;
  std::vector<tensor*> buffers; // the lead's
  tensor handshake;             // the signature, then its sums over the processes
  std::uint64_t elements = 0;
  enum stage_t { handshaking, queued, finished };
  std::atomic<stage_t> stage{handshaking};
  std::optional<std::string> failure; // written by the worker before stage = finished
};

gloo_communicator::gloo_communicator(process_group& group, std::shared_ptr<gloo::Context> context,
                                     std::unique_ptr<communicator> control, int local_ranks,
                                     std::chrono::milliseconds timeout)
    : staged_communicator(group.rank(), group.size(), local_ranks), group_(group),
      context_(std::move(context)), control_(std::move(control)), timeout_(timeout),
      worker_([this] { work(); }) {}

gloo_communicator::~gloo_communicator() {
  abort();
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  worker_.join(); // an operation in flight ends within the timeout, at the latest
}

void gloo_communicator::launch_exchange(const collective_call& call, std::vector<tensor*> buffers,
                                        stream& on) {
  // Gloo reads and writes the buffers as host memory.
  if (on.where().type != place::kind::cpu)
    throw error(call.label + ": the Gloo communicator runs on CPU places, not on " + to_string(on.where()));
  auto x = std::make_shared<exchange>();
  x->call = call;
  x->buffers = std::move(buffers);
  x->handshake = tensor::zeros(dtype::fp32, {2 * signature::limbs});
  // The signature is read when the work runs: earlier work on the stream may still
  // resize the buffers. Skipped on a failed stream; the handshake then spreads the failure.
  on.enqueue([x] {
    signature s;
    s.fields[0] = static_cast<std::uint64_t>(x->call.what);
    s.fields[1] = static_cast<std::uint64_t>(x->call.root);
    for (const tensor* t : x->buffers) {
      if (!t->initialized() || t->type() != dtype::fp32) s.fields[3] = 1;
      else x->elements += static_cast<std::uint64_t>(t->bytes() / sizeof(float));
    }
    s.fields[2] = x->elements;
    s.write(x->handshake.data<float>());
  });
  collective_call handshake = call;
  handshake.what = collective_call::kind::all_reduce;
  handshake.root = 0;
  handshake.label = call.label + " (handshake before Gloo)";
  handshake.timed = false;
  control_->launch(handshake, 0, {&x->handshake}, on, [x](const collective_span&, bool) {});
  on.enqueue_polled([this, x](bool failed) { return poll(x, failed); });
}

bool gloo_communicator::poll(const std::shared_ptr<exchange>& x, bool stream_failed) {
  switch (x->stage.load()) {
    case exchange::handshaking: {
      // A failed handshake failed this stream on every process: none enters Gloo.
      if (stream_failed) return true;
      const float* sums = x->handshake.data<float>();
      if (signature::any_bad(sums))
        throw error(x->call.label + ": a buffer is missing or not FP32 on some process");
      if (!signature::agreed(sums, group_.size()))
        throw error(x->call.label + ": the processes disagree on the collective (this one runs " +
                    to_string(x->call.what) + " to rank " + std::to_string(x->call.root) + " over " +
                    std::to_string(x->elements) + " floats)");
      {
        std::lock_guard<std::mutex> guard(mutex_);
        if (aborted_) throw error(x->call.label + ": " + *aborted_);
        x->stage = exchange::queued;
        queue_.push_back(x);
      }
      queued_.notify_one();
      return false;
    }
    case exchange::queued: return false; // the worker tells progress when it finished
    case exchange::finished: break;
  }
  if (x->failure) throw error(x->call.label + ": " + *x->failure);
  return true;
}

void gloo_communicator::abort() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!aborted_) aborted_ = "the communicator was aborted (the executor is being destroyed)";
  }
  control_->abort();
  abort_local_stages();
  notify_progress();
}

void gloo_communicator::work() {
  for (;;) {
    std::shared_ptr<exchange> x;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      x = queue_.front();
      queue_.pop_front();
    }
    run(*x);
    x->stage = exchange::finished;
    notify_progress();
  }
}

void gloo_communicator::run(exchange& x) {
  using kind = collective_call::kind;
  if (x.elements == 0) return;
  const int me = group_.rank(), root = x.call.root / local_ranks();
  std::vector<float> data(x.elements);
  std::size_t at = 0;
  for (const tensor* t : x.buffers) {
    std::memcpy(data.data() + at, t->raw(), t->bytes());
    at += t->bytes() / sizeof(float);
  }
  const reduce_function sum = &gloo::sum<float>;
  // What every operation's options get: its tag and the timeout.
  auto common = [&](auto& o) {
    o.setTag(static_cast<std::uint32_t>(x.call.sequence));
    o.setTimeout(timeout_);
  };
  // The broadcast root's output: Gloo copies the input there while it sends from the
  // input, so the two must not be one buffer (ThreadSanitizer saw the copy race the send).
  std::vector<float> landing;
  try {
    switch (x.call.what) {
      case kind::all_reduce: {
        gloo::AllreduceOptions o(context_);
        common(o);
        o.setOutput(data.data(), data.size());
        o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
        o.setReduceFunction(sum);
        gloo::allreduce(o);
        break;
      }
      case kind::reduce: {
        gloo::ReduceOptions o(context_);
        common(o);
        o.setOutput(data.data(), data.size());
        o.setRoot(root);
        o.setReduceFunction(sum);
        gloo::reduce(o);
        break;
      }
      case kind::broadcast: {
        gloo::BroadcastOptions o(context_);
        common(o);
        if (me == root) {
          landing.resize(data.size());
          o.setInput(data.data(), data.size());
          o.setOutput(landing.data(), landing.size());
        } else {
          o.setOutput(data.data(), data.size());
        }
        o.setRoot(root);
        gloo::broadcast(o);
        break;
      }
      case kind::all_gather: break; // refused by expect_runs
    }
  } catch (const std::exception& e) {
    // A lost peer is what usually breaks a transfer; the group's heartbeats name it within
    // the peer timeout, which says more than Gloo's socket error.
    const auto until = std::chrono::steady_clock::now() + timeout_;
    while (!group_.broken() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    x.failure = group_.broken() ? *group_.broken() : std::string("Gloo: ") + e.what();
    return;
  }
  // A reduce leaves the other processes' leads with their local sums, as the CAF backend.
  if (x.call.what == kind::reduce && me != root) return;
  at = 0;
  for (tensor* t : x.buffers) {
    std::memcpy(t->raw(), data.data() + at, t->bytes());
    at += t->bytes() / sizeof(float);
  }
}

} // namespace pe
