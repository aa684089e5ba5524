#include "devices/cuda/cuda_capture.hpp"

#include <chrono>
#include <condition_variable>
#include <memory>

#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/cuda_stream.hpp"

namespace pe {

cuda_capture::~cuda_capture() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_); // at exit the context may be gone
}

void cuda_capture::fail(const std::string& why) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!failure_) failure_ = why;
}

std::optional<std::string> cuda_capture::failure() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return failure_;
}

void cuda_capture::begin(stream& origin) {
  const cudaStream_t handle = cuda_handle(origin);
  const std::string what = cuda_backend_of(origin).describe();
  origin.enqueue([this, handle, what] {
    const cudaError_t status = cudaStreamBeginCapture(handle, cudaStreamCaptureModeRelaxed);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      const std::string why = "cudaStreamBeginCapture on " + what + ": " + cuda_error_text(status);
      fail(why);
      throw error(why);
    }
  });
}

namespace {

/// A joiner's marker for the origin: made on the joiner's thread, waited for on the origin's.
struct rejoin_marker {
  std::mutex mutex;
  std::condition_variable made_cv;
  bool made = false;
  cudaEvent_t event = nullptr; // null when it could not be recorded
  cudaError_t status = cudaSuccess;

  void set(cudaEvent_t e, cudaError_t s) {
    std::lock_guard<std::mutex> guard(mutex);
    event = e;
    status = s;
    made = true;
    made_cv.notify_all();
  }
  bool wait_made(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mutex);
    return made_cv.wait_for(lock, limit, [this] { return made; });
  }
  ~rejoin_marker() {
    if (event != nullptr) (void)cudaEventDestroy(event); // a wait already made keeps its edge
  }
};

} // namespace

void cuda_capture::rejoin(stream& joiner, stream& origin) {
  auto marker = std::make_shared<rejoin_marker>();
  const cudaStream_t from = cuda_handle(joiner), to = cuda_handle(origin);
  const std::string what = cuda_backend_of(joiner).describe();
  joiner.enqueue_always([marker, from](bool) {
    cudaEvent_t e = nullptr;
    cudaError_t status = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (status == cudaSuccess) status = cudaEventRecord(e, from);
    if (status != cudaSuccess) (void)cudaGetLastError();
    marker->set(e, status);
  });
  origin.enqueue_always([this, marker, to, what](bool) {
    if (!marker->wait_made(std::chrono::seconds(10))) {
      fail(what + " did not rejoin the capture within 10 s");
      return;
    }
    cudaError_t status = marker->status;
    if (status == cudaSuccess) status = cudaStreamWaitEvent(to, marker->event, 0);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      fail(what + " could not rejoin the capture: " + cuda_error_text(status));
    }
  });
}

void cuda_capture::end(stream& origin) {
  const cudaStream_t handle = cuda_handle(origin);
  const std::string what = cuda_backend_of(origin).describe();
  origin.enqueue_always([this, handle, what](bool failed) {
    struct mark_ended {
      cuda_capture* self;
      ~mark_ended() {
        std::lock_guard<std::mutex> guard(self->mutex_);
        self->ended_ = true;
        self->ended_cv_.notify_all();
      }
    } notify_end{this};
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(handle, &capturing) != cudaSuccess || capturing == cudaStreamCaptureStatusNone) {
      (void)cudaGetLastError();
      fail("the capture on " + what + " never began");
      return;
    }
    cudaGraph_t graph = nullptr;
    // Ends the capture of every stream that joined it, also of one that was invalidated.
    const cudaError_t ended = cudaStreamEndCapture(handle, &graph);
    if (ended != cudaSuccess || graph == nullptr || failed) {
      (void)cudaGetLastError();
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      fail(ended != cudaSuccess ? "cudaStreamEndCapture on " + what + ": " + cuda_error_text(ended)
                                : "the captured step failed on " + what);
      return;
    }
    std::size_t nodes = 0;
    (void)cudaGraphGetNodes(graph, nullptr, &nodes);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    if (made != cudaSuccess) {
      (void)cudaGetLastError();
      fail("cudaGraphInstantiate of the step captured on " + what + ": " + cuda_error_text(made));
      return;
    }
    exec_ = exec;
    operations_.store(nodes);
  });
}

void cuda_capture::await_end(stream& joiner) {
  const std::string what = cuda_backend_of(joiner).describe();
  joiner.enqueue_always([this, what](bool) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ended_cv_.wait_for(lock, std::chrono::seconds(30), [this] { return ended_; })) {
      lock.unlock();
      fail("the capture did not end within 30 s (" + what + " waited for it)");
      throw error("the captured step did not end within 30 s");
    }
  });
}

void cuda_capture::replay(stream& origin) {
  const cudaStream_t handle = cuda_handle(origin);
  origin.enqueue([this, handle] {
    if (exec_ == nullptr) throw error("a captured step was replayed without a graph: " + failure().value_or("none made"));
    check_cuda(cudaGraphLaunch(exec_, handle), "cudaGraphLaunch of the captured step");
  });
}

} // namespace pe
