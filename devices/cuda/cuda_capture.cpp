#include "devices/cuda/cuda_capture.hpp"

#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/cuda_stream.hpp"

namespace pe {

cuda_capture::~cuda_capture() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_); // at exit the context may be gone
  if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
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
      fail("cudaStreamBeginCapture on " + what + ": " + cuda_error_text(status));
      throw error("cudaStreamBeginCapture on " + what + ": " + cuda_error_text(status));
    }
  });
}

void cuda_capture::end(stream& origin) {
  const cudaStream_t handle = cuda_handle(origin);
  const std::string what = cuda_backend_of(origin).describe();
  origin.enqueue_always([this, handle, what](bool failed) {
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
    if (made != cudaSuccess) {
      (void)cudaGetLastError();
      (void)cudaGraphDestroy(graph);
      fail("cudaGraphInstantiate of the step captured on " + what + ": " + cuda_error_text(made));
      return;
    }
    graph_ = graph;
    exec_ = exec;
    operations_.store(nodes);
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
