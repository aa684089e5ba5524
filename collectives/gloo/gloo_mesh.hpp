#pragma once

#include <chrono>
#include <memory>

namespace gloo {
class Context;
}

namespace pe {

class process_group;

/// A Gloo context with a TCP connection to every other process of `group`: each process
/// listens on the address through which it reaches the job's master, the processes swap
/// those addresses with the group's all_gather (no store, no file system), and connect.
/// `timeout` bounds the connecting and, later, every Gloo operation. Throws pe::error
/// naming the process whose address was malformed or that could not be reached.
std::shared_ptr<gloo::Context> connect_gloo_mesh(process_group& group, std::chrono::milliseconds timeout);

} // namespace pe
