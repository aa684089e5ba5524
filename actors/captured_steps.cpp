#include "actors/captured_steps.hpp"

#include "actors/step_graph.hpp"
#include "core/error.hpp"

namespace pe {

namespace {

/// Eager steps of one signature before it is captured: the first warms the kernels'
/// libraries (handles, workspaces, algorithm searches), the second the allocator's cache.
constexpr int eager_steps_before_capture = 2;

/// Graphs made at most per executor: a program whose buffers keep moving runs eagerly
/// rather than capturing every few steps.
constexpr std::uint64_t most_captures = 16;

} // namespace

std::string joined_dims(const std::vector<std::int64_t>& values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::to_string(values[i]);
  return s;
}

std::unique_ptr<captured_steps> captured_steps::make(const std::vector<device*>& devices, std::string& why_not) {
  if (devices.empty()) {
    why_not = "no places";
    return nullptr;
  }
  const place first = devices.front()->where();
  for (device* d : devices) {
    if (d->where().type != place::kind::gpu) {
      why_not = to_string(d->where()) + " is not a GPU place";
      return nullptr;
    }
    if (d->where().device != first.device) {
      why_not = to_string(d->where()) + " and " + to_string(first) +
                " are on different GPUs (one graph holds the places of one GPU)";
      return nullptr;
    }
  }
  if (!devices.front()->make_capture()) {
    why_not = "the places' device cannot capture (GPU places simulated on the host)";
    return nullptr;
  }
  return std::make_unique<captured_steps>(devices);
}

captured_steps::captured_steps(std::vector<device*> devices) : devices_(std::move(devices)) {
  join_ = devices_.front()->make_event();
  after_ = devices_.front()->make_event();
}

captured_steps::~captured_steps() = default;

stream& captured_steps::origin() const {
  return devices_.front()->get_stream(stream_kind::compute);
}

std::vector<stream*> captured_steps::joiners() const {
  std::vector<stream*> out;
  for (device* d : devices_)
    for (auto kind : {stream_kind::compute, stream_kind::communication, stream_kind::copy})
      if (&d->get_stream(kind) != &origin()) out.push_back(&d->get_stream(kind));
  return out;
}

captured_steps::mode captured_steps::next(const std::string& signature, bool traced) {
  if (off_ || traced) return mode::eager;
  if (capture_ && signature == signature_) {
    if (buffers_unchanged()) return mode::replay;
    // Something between steps gave a variable another buffer (a load of other shapes, an
    // executor sharing the variables): the graph would use the old one.
    drop();
    ++counts_.dropped;
  }
  if (signature != last_signature_) {
    last_signature_ = signature;
    same_in_a_row_ = 0;
  }
  if (same_in_a_row_ >= eager_steps_before_capture && !capture_ && counts_.captures < most_captures) {
    // The holds first, before the step's feeds are copied: a place whose memory cannot hold
    // (another executor on these places holds it) leaves graphs off rather than half made.
    try {
      for (device* d : devices_) holds_.push_back(d->memory().hold_frees());
    } catch (const std::exception& e) {
      holds_.clear();
      off_ = true;
      off_reason_ = e.what();
      return mode::eager;
    }
    signature_ = signature;
    return mode::capture;
  }
  ++same_in_a_row_;
  return mode::eager;
}

void captured_steps::note_feed(std::size_t place, const std::string& name, tensor& var) {
  if (feeds_.size() <= place) feeds_.resize(devices_.size());
  // The variable's own buffer is freed after the step's last reader and the next eager copy
  // gets another: the graph keeps reading this one, so replays copy into it.
  devices_.at(place)->get_stream(stream_kind::copy).enqueue([&target = feeds_[place][name], &var] { target = var; });
}

tensor& captured_steps::feed_target(std::size_t place, const std::string& name) {
  return feeds_.at(place).at(name);
}

void captured_steps::begin_capture() {
  capture_ = devices_.front()->make_capture();
  stream& o = origin();
  capture_->begin(o);
  o.record(*join_);
  for (stream* s : joiners()) s->wait(*join_);
}

void captured_steps::copy_fetches_after_graph(const std::vector<std::vector<tensor>>& sources, step_inputs& in) {
  for (std::size_t p = 0; p < devices_.size(); ++p) {
    device& d = *devices_[p];
    stream& copies = d.get_stream(stream_kind::copy);
    if (&copies != &origin()) copies.wait(*after_);
    for (std::size_t k = 0; k < sources.size(); ++k) {
      tensor& out = in.fetched[k][p];
      out = tensor(); // uninitialised: the copy brings the value to the host
      d.copy(copies, out, sources[k][p]);
    }
  }
}

void captured_steps::end_capture(step_inputs& in) {
  stream& o = origin();
  const std::vector<stream*> others = joiners();
  for (stream* s : others) capture_->rejoin(*s, o);
  capture_->end(o);
  capture_->replay(o);
  o.record(*after_);
  // Nothing more on the joined streams until the capture has ended, failed ones included:
  // their next work (the executor's drains, the fetch copies) must reach the device, not
  // the graph.
  for (stream* s : others) capture_->await_end(*s);
  copy_fetches_after_graph(in.fetch_sources, in);
}

bool captured_steps::finish_capture(step_inputs& in, const std::vector<scope*>& scopes, std::string& why) {
  for (auto& h : holds_)
    if (h) h->close();
  if (auto failed = capture_ ? capture_->failure() : std::optional<std::string>("no capture was made")) {
    why = *failed;
    if (auto e = in.first_error()) why = *e + " (" + why + ")";
    drop();
    off_ = true;
    off_reason_ = why;
    return false;
  }
  sources_ = std::move(in.fetch_sources);
  in.fetch_sources.clear();
  buffers_.clear();
  for (scope* s : scopes)
    for (const std::string& name : s->names()) {
      const tensor* t = s->find(name);
      if (t != nullptr && t->initialized()) buffers_.push_back({t, t->raw()});
    }
  ++counts_.captures;
  ++counts_.replays;
  counts_.operations = capture_->operations();
  return true;
}

void captured_steps::replay(const std::vector<std::unique_ptr<event>>& feeds_ready, step_inputs& in) {
  stream& o = origin();
  for (const auto& e : feeds_ready)
    if (e != nullptr) o.wait(*e);
  capture_->replay(o);
  o.record(*after_);
  copy_fetches_after_graph(sources_, in);
  ++counts_.replays;
}

bool captured_steps::buffers_unchanged() const {
  for (const noted_buffer& b : buffers_)
    if (b.var->raw() != b.data) return false;
  return true;
}

void captured_steps::abandon() {
  for (auto& h : holds_) // what they hold stays; other executors on these places may hold again
    if (h) h->close();
  off_ = true;
  off_reason_ = "a step stalled while captured or replayed";
}

void captured_steps::drop() {
  capture_.reset();
  holds_.clear(); // after the graph: the blocks go back behind the next fence
  sources_.clear();
  feeds_.clear();
  buffers_.clear();
  signature_.clear();
  same_in_a_row_ = 0;
  counts_.operations = 0;
}

} // namespace pe
