#include "actors/runtime.hpp"

#include <caf/all.hpp>

namespace pe {

executor_runtime::executor_runtime(std::vector<place> places, int threads) : num_threads(threads) {
  if (places.empty()) throw error("parallel_executor: no places given");
  ranks.local_places = std::move(places);
  for (const place& p : ranks.local_places) {
    devices.push_back(open_device(p));
    scopes.push_back(std::make_unique<scope>());
  }
  config = std::make_unique<caf::actor_system_config>();
  config->set("scheduler.max-threads", num_threads);
  // Idle workers back off to short sleeps rather than CAF's default 10 ms, which would
  // put milliseconds of latency between the steps of a training loop.
  config->set("work-stealing.relaxed-sleep-duration", caf::timespan{std::chrono::microseconds(500)});
  system = std::make_unique<caf::actor_system>(*config);
}

executor_runtime::~executor_runtime() {
  system.reset();
  for (auto& d : devices) d->stop();
}

std::vector<scope*> executor_runtime::scope_list() const {
  std::vector<scope*> out;
  for (const auto& s : scopes) out.push_back(s.get());
  return out;
}

std::vector<device*> executor_runtime::device_list() const {
  std::vector<device*> out;
  for (const auto& d : devices) out.push_back(d.get());
  return out;
}

} // namespace pe
