#include "collectives/net/process_group.hpp"

#include <algorithm>
#include <iostream>
#include <thread>

#include "collectives/process_backend.hpp"
#include "collectives/net/tensor_bytes.hpp"

namespace pe {

process_group::process_group(std::unique_ptr<net_transport> transport, std::int64_t clock_offset_ns,
                             std::chrono::milliseconds exchange_timeout,
                             process_group_options options)
    : transport_(std::move(transport)), clock_offset_ns_(clock_offset_ns),
      exchange_timeout_(exchange_timeout), options_(std::move(options)) {
  options_.rank = rank();
  options_.size = size();
}

process_group::~process_group() = default;

int process_group::rank() const {
  return transport_->inbox().rank();
}

int process_group::size() const {
  return transport_->inbox().size();
}

std::unique_ptr<communicator> process_group::make_communicator(int local_ranks) {
  return make_communicator(local_ranks, find_process_backend(options_.collective_backend));
}

std::unique_ptr<communicator> process_group::make_communicator(int local_ranks, const process_backend& backend) {
  return backend.make({*this, *transport_, ++channels_, local_ranks});
}

void say_warning(const std::function<void(const std::string&)>& on_warning, const std::string& text) {
  if (on_warning) on_warning(text);
  else std::cerr << "pe-actor: warning: " << text << std::endl;
}

void process_group::warn(const std::string& text) const { say_warning(options_.on_warning, text); }

std::optional<std::string> process_group::broken() const { return transport_->inbox().broken(); }

std::vector<byte_buffer> process_group::all_gather(const byte_buffer& mine) {
  return all_gather(mine, nullptr, exchange_timeout_);
}

std::vector<byte_buffer> process_group::all_gather(const byte_buffer& mine,
                                                   const std::function<void(int, std::chrono::milliseconds)>& waiting,
                                                   std::chrono::milliseconds every) {
  const std::uint64_t sequence = exchanges_++;
  if (exchange_path_)
    if (auto all = exchange_path_->all_gather(mine, waiting, every, exchange_timeout_)) return std::move(*all);
  net_packet header;
  header.sequence = sequence;
  header.from = rank();
  for (int p = 0; p < size(); ++p)
    if (p != rank()) send_payload(*transport_, p, header, mine);
  std::vector<byte_buffer> all(static_cast<std::size_t>(size()));
  const auto slice = waiting ? std::max(every, std::chrono::milliseconds(1)) : exchange_timeout_;
  for (int p = 0; p < size(); ++p) {
    if (p == rank()) {
      all[static_cast<std::size_t>(p)] = bytes_of(mine.data(), mine.size());
      continue;
    }
    for (std::chrono::milliseconds waited{0};;) {
      const auto wait = std::min(slice, exchange_timeout_ - waited);
      try {
        all[static_cast<std::size_t>(p)] = transport_->inbox().wait_take(0, sequence, p, wait).bytes;
        break;
      } catch (const error&) {
        // Only a wait that merely ran out goes on; a broken job or the exchange timeout ends it.
        waited += wait;
        if (!waiting || transport_->inbox().broken() || waited >= exchange_timeout_) throw;
        waiting(p, waited);
      }
    }
  }
  return all;
}

namespace {

/// The channel of notes to rank 0: apart from the host exchanges (0) and the communicators
/// (1, 2, ... in creation order), numbered by each sender's own count.
constexpr std::uint32_t notes_channel = 0xffffffffu;
constexpr std::size_t note_bytes = std::size_t{64} << 10;

} // namespace

void process_group::send_note_to_rank0(const std::string& text) {
  if (rank() == 0) return;
  net_packet header;
  header.channel = notes_channel;
  header.sequence = notes_sent_++;
  header.from = rank();
  const std::string cut = text.substr(0, note_bytes);
  send_payload(*transport_, 0, header, bytes_of(cut.data(), cut.size()));
}

std::vector<std::vector<std::string>> process_group::take_notes(std::chrono::milliseconds wait) {
  std::vector<std::vector<std::string>> notes(static_cast<std::size_t>(size()));
  if (rank() != 0) return notes;
  notes_taken_.resize(static_cast<std::size_t>(size()), 0);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    bool all = true;
    for (int p = 1; p < size(); ++p) {
      auto& taken = notes_taken_[static_cast<std::size_t>(p)];
      while (auto note = transport_->inbox().take_notice(notes_channel, taken, p)) {
        notes[static_cast<std::size_t>(p)].emplace_back(note->bytes.begin(), note->bytes.end());
        ++taken;
      }
      all = all && !notes[static_cast<std::size_t>(p)].empty();
    }
    if (all || std::chrono::steady_clock::now() >= deadline) return notes;
    std::this_thread::sleep_for(std::chrono::milliseconds(10)); // a rare path: polling will do
  }
}

byte_buffer process_group::broadcast(const byte_buffer& bytes, int root) {
  const std::uint64_t sequence = exchanges_++;
  if (rank() != root) return transport_->inbox().wait_take(0, sequence, root, exchange_timeout_).bytes;
  net_packet header;
  header.sequence = sequence;
  header.from = rank();
  for (int p = 0; p < size(); ++p)
    if (p != rank()) send_payload(*transport_, p, header, bytes);
  return bytes;
}

std::vector<tensor> process_group::broadcast_tensors(const std::vector<const tensor*>& tensors,
                                                     int root) {
  auto bytes = broadcast(rank() == root ? encode_tensors(tensors) : byte_buffer{}, root);
  return decode_tensors(bytes, "process rank " + std::to_string(root));
}

} // namespace pe
