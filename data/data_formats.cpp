// The registry of data formats, and the one list of the built-in ones: adding a format is
// its reader plus one line below.
#include "core/error.hpp"
#include "core/named_registry.hpp"
#include "data/data_format.hpp"
#include "data/idx.hpp"
#include "data/npy_dir.hpp"
#include "data/synthetic.hpp"

namespace pe {

namespace {

/// The origin of a format whose files are not named by feed: the --data value itself.
std::string spec_origin(const std::string& name, const std::string& dir, bool test) {
  return name + (dir.empty() ? "" : ":" + dir) + (test ? " (test set)" : "");
}

std::vector<data_format> builtin_formats() {
  return {
      {"synthetic", false, false, false,
       "8192 training and 2048 test samples of width 784 around 10 gaussian class prototypes, "
       "generated from --seed",
       [](const std::string&, const data_load_options& o) { return make_synthetic({.seed = o.seed}); },
       [](const std::string& dir, const std::string&, bool test) { return spec_origin("synthetic", dir, test); }},
      {"idx", true, true, false, "MNIST-format files",
       [](const std::string& dir, const data_load_options& o) { return load_idx_dir(dir, o.normalize); },
       [](const std::string& dir, const std::string&, bool test) { return spec_origin("idx", dir, test); }},
      {"npy", true, false, true, "one numpy file per feed of the program, DIR/<feed name>.npy",
       [](const std::string& dir, const data_load_options& o) { return load_npy_dir(dir, o.feeds); },
       [](const std::string& dir, const std::string& feed, bool test) { return npy_feed_file(dir, feed, test); }},
  };
}

named_registry<data_format>& registry() {
  static auto* r = new named_registry<data_format>(builtin_formats()); // never destroyed: loaders may run during exit
  return *r;
}

} // namespace

void register_data_format(data_format format) {
  registry().add(std::move(format));
}

std::vector<data_format> data_formats() {
  return registry().entries();
}

std::string data_spec_forms() {
  const auto formats = data_formats();
  std::string forms;
  for (std::size_t i = 0; i < formats.size(); ++i) {
    if (i > 0) forms += i + 1 == formats.size() ? " or " : ", ";
    forms += formats[i].name + (formats[i].takes_dir ? ":DIR" : "");
  }
  return forms;
}

data_spec parse_data_spec(const std::string& text) {
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  for (auto& f : data_formats()) {
    if (f.name != name) continue;
    // NAME:DIR with a non-empty DIR, or NAME alone.
    if (!f.takes_dir && colon == std::string::npos) return {f, std::string(), text};
    if (f.takes_dir && colon != std::string::npos && colon + 1 < text.size())
      return {f, text.substr(colon + 1), text};
  }
  throw error("expected " + data_spec_forms() + ", got '" + text + "'");
}

data_splits load_data(const std::string& spec, std::uint64_t seed, bool normalize,
                      const std::vector<std::string>& feeds) {
  const data_spec d = parse_data_spec(spec);
  return d.format.load(d.dir, {seed, normalize, feeds});
}

} // namespace pe
