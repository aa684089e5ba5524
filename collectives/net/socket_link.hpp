#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "collectives/net/net_packet.hpp"

namespace pe {

/// One process's data connection to one peer: a TCP socket, admitted by link_door, that
/// carries net_packets as frames (packet_frame.hpp) beside CAF's connection. A packet's
/// bytes go from its buffer to the socket and from the socket into the receiver's buffer,
/// with no serializer, broker buffer or actor between (what CAF's path costs: three more
/// copies and three thread hand-offs per packet).
///
/// Two threads: a writer, which sends what send() queued in order (send never blocks, as
/// CAF's send did not), and a reader, which hands every frame to `deliver`. When the
/// connection ends (the peer exited or its socket broke) or the peer sends a malformed
/// frame, `broken` is told once why, unless stop() came first.
class socket_link {
 public:
  /// Takes `fd`, connected and admitted, to process `peer`. `deliver` and `broken` run on
  /// the reader thread (broken may run on the writer's).
  socket_link(int fd, int peer, std::function<void(net_packet)> deliver,
              std::function<void(const std::string&)> broken);
  ~socket_link(); ///< stop()
  socket_link(const socket_link&) = delete;
  socket_link& operator=(const socket_link&) = delete;

  /// Queues `p` for the peer; returns at once. Dropped once the link is cut or broken.
  void send(net_packet p);

  /// Shuts the socket down: both threads end, the reader reports the end as a break (what
  /// a lost peer's link does: CAF noticed first).
  void cut();

  /// Ends the link without a report: what send() queued before still goes out, then the
  /// socket closes in order, so the peer reads every byte before the end. A process that
  /// finished its job's closing barrier and exits must not drop its last packet: the peer
  /// still waits for it, and would report this process lost. Bounded by `drain_limit`: a
  /// peer that stopped reading cannot hold this process. Idempotent.
  void stop();

  /// How long stop() waits for the queue to drain and the peer to receive it.
  static constexpr std::chrono::milliseconds drain_limit{1000};

 private:
  void write_loop();
  void read_loop();
  void report(const std::string& why);

  int fd_;
  int peer_;
  std::function<void(net_packet)> deliver_;
  std::function<void(const std::string&)> broken_;
  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<net_packet> queue_;
  bool stopping_ = false; // stop(): no more reports, threads end
  bool dead_ = false;     // the socket failed or was cut: sends are dropped
  bool reported_ = false;
  bool writer_done_ = false; // the writer returned: nothing more goes out
  std::condition_variable writer_ended_;
  std::thread writer_;
  std::thread reader_;
};

} // namespace pe
