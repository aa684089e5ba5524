#include "core/device_kind.hpp"

#include <deque>
#include <mutex>

#include "core/error.hpp"

namespace pe {

namespace {

struct kind_entry {
  std::string name;
  place_form form;
  std::string hardware;
};

/// The table of kinds: entries are only appended and never move (a deque), so name() may
/// hand out references without holding the lock.
struct kind_table {
  std::mutex mutex;
  std::deque<kind_entry> entries{{"cpu", place_form::replicas, "CPU place"},
                                 {"gpu", place_form::devices, "CUDA device"}};
};

kind_table& table() {
  static auto* t = new kind_table; // never destroyed: kinds are read during exit
  return *t;
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.front() < 'a' || name.front() > 'z') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

const kind_entry& entry(int id) {
  kind_table& t = table();
  std::lock_guard<std::mutex> guard(t.mutex);
  return t.entries.at(static_cast<std::size_t>(id));
}

} // namespace

device_kind device_kind::define(std::string_view name, place_form form, std::string_view hardware) {
  if (!valid_name(name))
    throw error("device kind '" + std::string(name) + "': a kind's name is [a-z][a-z0-9_]*");
  kind_table& t = table();
  std::lock_guard<std::mutex> guard(t.mutex);
  for (std::size_t i = 0; i < t.entries.size(); ++i)
    if (t.entries[i].name == name) {
      if (t.entries[i].form != form)
        throw error("device kind '" + std::string(name) + "' is defined already, with another place form");
      return device_kind(static_cast<int>(i));
    }
  t.entries.push_back({std::string(name), form, std::string(hardware)});
  return device_kind(static_cast<int>(t.entries.size() - 1));
}

std::optional<device_kind> device_kind::find(std::string_view name) {
  kind_table& t = table();
  std::lock_guard<std::mutex> guard(t.mutex);
  for (std::size_t i = 0; i < t.entries.size(); ++i)
    if (t.entries[i].name == name) return device_kind(static_cast<int>(i));
  return std::nullopt;
}

std::vector<device_kind> device_kind::all() {
  kind_table& t = table();
  std::lock_guard<std::mutex> guard(t.mutex);
  std::vector<device_kind> kinds;
  for (std::size_t i = 0; i < t.entries.size(); ++i) kinds.push_back(device_kind(static_cast<int>(i)));
  return kinds;
}

const std::string& device_kind::name() const { return entry(id_).name; }
place_form device_kind::form() const { return entry(id_).form; }
const std::string& device_kind::hardware() const { return entry(id_).hardware; }

std::string to_string(device_kind kind) { return kind.name(); }

} // namespace pe
