#include "collectives/gpu/nccl_communicator.hpp"

#include <chrono>
#include <cstring>
#include <mutex>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "collectives/gpu/gpu_communicators.hpp"
#include "core/error.hpp"
#include "devices/cuda/cuda_stream.hpp"

namespace pe {

namespace {

void check_nccl(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw error(what + " failed: " + ncclGetErrorString(r));
}

/// The buffers of every rank sized for a broadcast from `root` (allocation happens here,
/// before any NCCL group starts).
void size_for_broadcast(const collective_call& call, std::vector<collective_rendezvous::arrival>& by_rank,
                        const std::vector<device*>& devices, int root_local) {
  if (call.what != collective_call::kind::broadcast || root_local < 0) return;
  const auto& root = by_rank[static_cast<std::size_t>(root_local)].buffers;
  for (std::size_t r = 0; r < by_rank.size(); ++r) {
    if (static_cast<int>(r) == root_local) continue;
    for (std::size_t v = 0; v < root.size(); ++v)
      by_rank[r].buffers[v]->resize(dtype::fp32, root[v]->shape(), devices[r]->where(), devices[r]->memory());
  }
}

} // namespace

struct nccl_communicator::comms {
  std::vector<ncclComm_t> handles;
  bool non_blocking = false;
};

nccl_communicator::nccl_communicator(const std::vector<device*>& devices)
    : devices_(devices), world_(static_cast<int>(devices.size())), first_rank_(0),
      comms_(std::make_unique<comms>()), meeting_(static_cast<int>(devices.size())) {
  std::vector<int> ordinals;
  for (device* d : devices_) ordinals.push_back(d->where().device);
  comms_->handles.resize(devices_.size());
  check_nccl(ncclCommInitAll(comms_->handles.data(), static_cast<int>(ordinals.size()), ordinals.data()),
             "ncclCommInitAll over " + std::to_string(ordinals.size()) + " GPUs");
  start_watchdog();
}

nccl_communicator::nccl_communicator(const std::vector<device*>& devices, const std::vector<char>& nccl_id,
                                     int world, int first_rank, health_fn health)
    : devices_(devices), world_(world), first_rank_(first_rank), comms_(std::make_unique<comms>()),
      meeting_(static_cast<int>(devices.size()), first_rank), health_(std::move(health)) {
  comms_->non_blocking = true;
  comms_->handles.resize(devices_.size(), nullptr);
  try {
    join(nccl_id);
  } catch (...) {
    // A peer lost while the ranks meet would leave the others waiting in NCCL's bootstrap for
    // ever: the join gave up, and what it created is aborted (the destructor will not run).
    abort_nccl("joining the job's NCCL communicator failed");
    throw;
  }
  start_watchdog();
}

void nccl_communicator::start_watchdog() {
  watchdog_ = std::thread([this] {
    while (!stopping_) {
      std::optional<std::string> why = health_ ? health_() : std::nullopt;
      if (!why) why = async_error();
      if (why) {
        abort_nccl(*why);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

std::optional<std::string> nccl_communicator::async_error() {
  std::lock_guard lock(nccl_mutex_);
  if (aborted_) return std::nullopt;
  for (std::size_t r = 0; r < comms_->handles.size(); ++r) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t asked = ncclCommGetAsyncError(comms_->handles[r], &state);
    const ncclResult_t found = asked != ncclSuccess ? asked : state;
    if (found != ncclSuccess && found != ncclInProgress)
      return "NCCL reported an error on " + to_string(devices_[r]->where()) + ": " + ncclGetErrorString(found) +
             " (" + ncclGetLastError(comms_->handles[r]) + ")";
  }
  return std::nullopt;
}

nccl_communicator::~nccl_communicator() {
  stopping_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  if (aborted_) return; // ncclCommAbort freed them
  // Across processes each communicator is finalized first (NCCL then finishes what its
  // proxies still send to the peers), but only while the job is whole and for at most 30 s:
  // a peer that is gone would make it wait for ever, and then they are aborted instead.
  if (comms_->non_blocking && !finalize_or_abort()) return;
  for (ncclComm_t c : comms_->handles) ncclCommDestroy(c);
}

bool nccl_communicator::finalize_or_abort() {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  const health_fn whole_and_in_time = [&]() -> std::optional<std::string> {
    if (auto why = health_ ? health_() : std::nullopt) return why;
    if (std::chrono::steady_clock::now() > give_up) return std::string("it took over 30 s");
    return std::nullopt;
  };
  std::unique_lock lock(nccl_mutex_); // the watchdog has stopped: nobody else takes it
  try {
    // Non-blocking: each call returns at once, so no local rank's finalize waits for another's.
    for (ncclComm_t c : comms_->handles) check_nccl(ncclCommFinalize(c), "ncclCommFinalize");
    for (std::size_t r = 0; r < comms_->handles.size(); ++r)
      wait_nccl(lock, r, "finalizing the NCCL communicator", whole_and_in_time);
    return true;
  } catch (const std::exception& e) {
    lock.unlock();
    abort_nccl(std::string("the communicator is being destroyed; ") + e.what());
    return false;
  }
}

void nccl_communicator::launch(const collective_call& call, int local_rank, std::vector<tensor*> buffers,
                               stream& on, completion done) {
  expect_no_all_gather(call, "NCCL");
  meeting_.enqueue_part(local_rank, call, std::move(buffers), on, cuda_stream_of(on, call.label).handle(),
                        std::move(done), [this](auto& by_rank) { issue(by_rank); });
}

void nccl_communicator::issue(std::vector<collective_rendezvous::arrival>& by_rank) {
  const collective_call& call = by_rank.front().call;
  const int root_local = call.root - first_rank_;
  size_for_broadcast(call, by_rank, devices_, root_local >= 0 && root_local < meeting_.ranks() ? root_local : -1);
  // Every buffer exists before the group starts: an error inside a group hangs every rank.
  for (std::size_t r = 0; r < by_rank.size(); ++r)
    for (const tensor* t : by_rank[r].buffers)
      if (!t->initialized() || t->type() != dtype::fp32)
        throw error("the buffer on " + to_string(devices_[r]->where()) + " is missing or not FP32 (a broadcast "
                    "from another process needs it allocated with the root's size)");
  // The watchdog's ncclCommAbort frees the communicators: no call on them may run beside it.
  std::unique_lock lock(nccl_mutex_);
  if (aborted_) throw error("the NCCL communicator was aborted: " + failure().value_or("(no reason)"));
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  // The group always ends, also after a failed call (NCCL's group depth is the thread's, and
  // this stream thread issues the next collectives); then the communicators are aborted, as
  // NCCL requires after an error in a group.
  std::string failed;
  for (std::size_t r = 0; r < by_rank.size() && failed.empty(); ++r) {
    ncclComm_t comm = comms_->handles[r];
    auto stream = static_cast<cudaStream_t>(by_rank[r].stream);
    for (tensor* t : by_rank[r].buffers) {
      void* data = t->raw();
      const auto count = static_cast<std::size_t>(t->numel());
      ncclResult_t status = ncclSuccess;
      switch (call.what) {
      case collective_call::kind::all_reduce:
        status = ncclAllReduce(data, data, count, ncclFloat32, ncclSum, comm, stream);
        break;
      case collective_call::kind::reduce:
        status = ncclReduce(data, data, count, ncclFloat32, ncclSum, call.root, comm, stream);
        break;
      case collective_call::kind::broadcast:
        status = ncclBroadcast(data, data, count, ncclFloat32, call.root, comm, stream);
        break;
      case collective_call::kind::all_gather: break; // refused by launch
      }
      if (status != ncclSuccess && status != ncclInProgress) {
        failed = "the NCCL call on " + to_string(devices_[r]->where()) + " failed: " + ncclGetErrorString(status);
        break;
      }
    }
  }
  if (const ncclResult_t ended = ncclGroupEnd(); failed.empty() && ended != ncclSuccess && ended != ncclInProgress)
    failed = std::string("ncclGroupEnd failed: ") + ncclGetErrorString(ended);
  if (failed.empty() && comms_->non_blocking) {
    try {
      for (std::size_t r = 0; r < comms_->handles.size(); ++r) wait_nccl(lock, r, "issuing the NCCL group");
    } catch (const std::exception& e) {
      failed = e.what();
    }
  }
  if (failed.empty()) return;
  lock.unlock();
  abort_nccl(failed);
  throw error(failed);
}

void nccl_communicator::join(const std::vector<char>& nccl_id) {
  ncclUniqueId id;
  if (nccl_id.size() != sizeof id.internal)
    throw error("an NCCL id of " + std::to_string(nccl_id.size()) + " bytes, not " + std::to_string(sizeof id.internal));
  std::memcpy(id.internal, nccl_id.data(), sizeof id.internal);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0; // a lost peer must not block a thread beyond ncclCommAbort's reach
  int caller = -1;
  if (cudaGetDevice(&caller) != cudaSuccess) caller = -1;
  std::unique_lock lock(nccl_mutex_);
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  std::string failed; // the first rank that could not start joining; the group still ends
  for (std::size_t r = 0; r < devices_.size() && failed.empty(); ++r) {
    const std::string place = to_string(devices_[r]->where());
    if (const cudaError_t e = cudaSetDevice(devices_[r]->where().device); e != cudaSuccess)
      failed = place + ": cudaSetDevice failed: " + cudaGetErrorString(e);
    else if (const ncclResult_t n = ncclCommInitRankConfig(&comms_->handles[r], world_, id,
                                                           first_rank_ + static_cast<int>(r), &config);
             n != ncclSuccess && n != ncclInProgress)
      failed = place + ": ncclCommInitRankConfig failed: " + ncclGetErrorString(n);
  }
  const ncclResult_t ended = ncclGroupEnd();
  if (caller >= 0) (void)cudaSetDevice(caller); // the caller's current device stays
  if (!failed.empty()) throw error(failed);
  check_nccl(ended, "ncclGroupEnd");
  for (std::size_t r = 0; r < comms_->handles.size(); ++r)
    wait_nccl(lock, r, "joining the job's NCCL communicator", health_);
}

void nccl_communicator::wait_nccl(std::unique_lock<std::mutex>& lock, std::size_t rank, const std::string& what,
                                  const health_fn& health) {
  ncclResult_t state = ncclInProgress;
  for (;;) {
    if (aborted_) throw error(what + ": the NCCL communicator was aborted");
    check_nccl(ncclCommGetAsyncError(comms_->handles[rank], &state), what);
    if (state != ncclInProgress) break;
    if (health)
      if (auto why = health()) throw error(what + ": " + *why);
    lock.unlock(); // lets an abort in
    if (health) std::this_thread::sleep_for(std::chrono::milliseconds(1)); // joining takes a while
    else std::this_thread::yield();
    lock.lock();
  }
  check_nccl(state, what);
}

void nccl_communicator::abort() {
  abort_nccl("the communicator was aborted (the executor is being destroyed)");
}

std::optional<std::string> nccl_communicator::failure() const {
  std::lock_guard lock(reason_mutex_);
  return abort_reason_;
}

void nccl_communicator::abort_nccl(const std::string& why) {
  {
    std::lock_guard lock(reason_mutex_);
    if (!abort_reason_) abort_reason_ = why;
  }
  meeting_.abort(why);
  // Non-blocking communicators never block inside a call, so the lock is free soon.
  std::lock_guard lock(nccl_mutex_);
  if (aborted_.exchange(true)) return;
  for (ncclComm_t c : comms_->handles)
    if (c != nullptr) ncclCommAbort(c); // null: a rank whose join never started
}

} // namespace pe
