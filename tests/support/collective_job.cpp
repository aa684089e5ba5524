#include "tests/support/collective_job.hpp"

#include <chrono>
#include <future>

namespace pe::testing {

collective_job::collective_job(int processes, int local) : local(local) {
  for (int r = 0; r < processes * local; ++r) devices.push_back(open_device(place::cpu(r)));
}

collective_job::~collective_job() {
  for (auto& c : comms) c->abort();
  for (auto& d : devices) d->stop();
}

stream& collective_job::on(int rank) {
  return devices[static_cast<std::size_t>(rank)]->get_stream(stream_kind::communication);
}

void collective_job::launch(const collective_call& c, int rank, std::vector<tensor*> buffers,
                            communicator::completion done) {
  comms[static_cast<std::size_t>(rank / local)]->launch(c, rank % local, std::move(buffers), on(rank), std::move(done));
}

std::vector<std::optional<bool>> collective_job::sync_all(int limit_ms) {
  auto results = std::async(std::launch::async, [this] {
    std::vector<bool> ok;
    for (int r = 0; r < world(); ++r) ok.push_back(on(r).synchronize());
    return ok;
  });
  if (results.wait_for(std::chrono::milliseconds(limit_ms)) != std::future_status::ready) {
    for (auto& c : comms) c->abort();
    for (auto& d : devices) d->stop();
    return std::vector<std::optional<bool>>(static_cast<std::size_t>(world()), std::nullopt);
  }
  std::vector<std::optional<bool>> out;
  for (bool ok : results.get()) out.push_back(ok);
  return out;
}

std::string collective_job::error(int rank) {
  return on(rank).error().value_or("<no error>");
}

} // namespace pe::testing
