#include "collectives/gpu/distinct_gpus.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <utility>

#include <unistd.h>

#include "collectives/net/process_group.hpp"
#include "core/error.hpp"

namespace pe {

namespace {

constexpr std::size_t fields = 4; // place, machine, host, bus id

/// A process's places on the wire: "place\tmachine\thost\tbus id\n" each (none of them
/// holds a tab or a newline).
byte_buffer encode(const std::vector<gpu_of_place>& gpus) {
  std::string text;
  for (const gpu_of_place& g : gpus) text += g.place + '\t' + g.machine + '\t' + g.host + '\t' + g.bus_id + '\n';
  return {text.begin(), text.end()};
}

/// A process's places from the wire; throws pe::error naming `process` when a line is not
/// four non-empty fields.
std::vector<gpu_of_place> decode(const byte_buffer& bytes, int process) {
  const std::string text(bytes.begin(), bytes.end());
  std::vector<gpu_of_place> gpus;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::vector<std::string> field;
    for (std::size_t from = at; from <= end;) {
      std::size_t tab = text.find('\t', from);
      if (tab == std::string::npos || tab > end) tab = end;
      field.push_back(text.substr(from, tab - from));
      from = tab + 1;
    }
    const bool readable = field.size() == fields && std::none_of(field.begin(), field.end(),
                                                                 [](const std::string& f) { return f.empty(); });
    if (!readable)
      throw error("process rank " + std::to_string(process) + " sent an unreadable list of its GPUs (line " +
                  std::to_string(gpus.size() + 1) + ")");
    gpus.push_back({field[0], field[1], field[2], field[3]});
    at = end + 1;
  }
  return gpus;
}

std::string first_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

} // namespace

std::string this_host() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return host[0] != '\0' ? host : "unnamed host";
}

std::string this_machine() {
  if (const std::string boot = first_line_of("/proc/sys/kernel/random/boot_id"); !boot.empty()) return "boot " + boot;
  return "host " + this_host();
}

void refuse_shared_gpus(process_group& group, const std::vector<gpu_of_place>& mine) {
  const std::vector<byte_buffer> all = group.all_gather(encode(mine));
  // (machine, bus id) -> the first place of the job on that GPU, as "process rank R's P".
  std::map<std::pair<std::string, std::string>, std::string> owners;
  for (std::size_t process = 0; process < all.size(); ++process) {
    for (const gpu_of_place& g : decode(all[process], static_cast<int>(process))) {
      const std::string who = "process rank " + std::to_string(process) + "'s " + g.place;
      const auto [first, fresh] = owners.emplace(std::make_pair(g.machine, g.bus_id), who);
      if (!fresh)
        throw error(who + " is the GPU of " + first->second + " (PCI " + g.bus_id + " on " + g.host +
                    "): NCCL needs a GPU of its own for every place of a job of several processes. "
                    "Run one process per machine over its GPUs (--places gpu:all), or give each "
                    "process other GPUs (--places gpu:N, or CUDA_VISIBLE_DEVICES)");
    }
  }
}

} // namespace pe
