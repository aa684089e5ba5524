#include "bench/joined_processes.hpp"

#include <future>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/error.hpp"

namespace pe::bench {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw error("bench: cannot find a free port on 127.0.0.1");
  return ntohs(address.sin_port);
}

joined_processes::joined_processes(const job_options& options) {
  const int port = free_port();
  std::vector<std::future<std::unique_ptr<process_group>>> joining;
  for (int r = 0; r < options.processes; ++r)
    joining.push_back(std::async(std::launch::async, [=] {
      process_group_options o;
      o.rank = r;
      o.size = options.processes;
      o.master_port = port;
      o.fingerprint = {{"bench", options.backend}};
      o.collective_backend = options.backend;
      o.job_token = "bench-token-0123456789abcdef";
      o.tls = options.tls;
      o.data_links = options.data_links;
      return join_processes(o);
    }));
  for (auto& j : joining) groups_.push_back(j.get());
  // Every process makes its communicator at once: a backend's setup (Gloo's mesh) meets
  // the others.
  std::vector<std::future<std::unique_ptr<communicator>>> made;
  for (auto& g : groups_)
    made.push_back(std::async(std::launch::async, [&g] { return g->make_communicator(1); }));
  for (auto& m : made) comms_.push_back(m.get());
  for (int r = 0; r < options.processes; ++r) devices_.push_back(open_device(place::cpu(r)));
}

joined_processes::~joined_processes() {
  for (auto& c : comms_) c->abort();
  for (auto& d : devices_) d->stop();
  comms_.clear();
}

void joined_processes::all_reduce(std::vector<tensor>& buffers) {
  const collective_call call{collective_call::kind::all_reduce, 0, sequence_++, "all_reduce(bench)"};
  for (std::size_t r = 0; r < comms_.size(); ++r)
    comms_[r]->launch(call, 0, {&buffers[r]}, devices_[r]->get_stream(stream_kind::communication));
  for (auto& d : devices_)
    if (!d->get_stream(stream_kind::communication).synchronize())
      throw error("all-reduce failed: " + d->get_stream(stream_kind::communication).error().value_or("?"));
}

} // namespace pe::bench
