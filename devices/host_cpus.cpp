#include "devices/host_cpus.hpp"

#include <sched.h>

#include "devices/device.hpp"

namespace pe {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

int pin_places(const std::vector<device*>& devices, int first) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.empty() || first < 0) return 0;
  int pinned = 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const int cpu = cpus[(static_cast<std::size_t>(first) + i) % cpus.size()];
    if (devices[i]->pin_host_thread(cpu)) ++pinned;
  }
  return pinned;
}

} // namespace pe
