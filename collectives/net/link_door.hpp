#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace pe {

/// Where a process admits its peers' data links (socket_link): a listening TCP socket that
/// lets in each process it expects once, proven by the secret this door gave that process
/// through CAF's connection (link_proof: with a job token, the proof also needs the token,
/// so a stranger who read the secret off a plaintext connection still cannot use it). A stranger
/// that knocks (says nothing within a second, a wrong hello, a wrong secret, a rank not
/// expected or already in) is closed and told to `warn`; the door goes on waiting. Closed
/// once every expected process is in.
class link_door {
 public:
  /// Listens on an OS-chosen port at `bind_to` (nullptr: every interface) for the job
  /// holding `job_token` (may be empty). Throws pe::error.
  link_door(const char* bind_to, std::string job_token);
  ~link_door();
  link_door(const link_door&) = delete;
  link_door& operator=(const link_door&) = delete;

  std::uint16_t port() const { return port_; }

  /// Expects process `rank`; returns the secret it must show (link_secret_bytes).
  std::string expect(int rank);

  /// Accepts until every expected process is in; returns their sockets by rank (the caller
  /// owns them). Throws pe::error naming who is missing once `deadline` passes, or at once
  /// when `broken` says why the job broke.
  std::map<int, int> admit(std::chrono::steady_clock::time_point deadline,
                           const std::function<void(const std::string&)>& warn,
                           const std::function<std::optional<std::string>()>& broken);

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::string token_;
  std::map<int, std::string> proofs_; // expected, not yet in: the proof each must show
};

/// What process `rank` shows a door that gave it `secret`, in a job holding `job_token`
/// (link_secret_bytes): the secret itself in an open job, else an HMAC of it under the token.
std::string link_proof(const std::string& job_token, int rank, const std::string& secret);

/// Dials process `peer`'s door at `host`:`port` as process `me`, showing `proof`; returns
/// the socket once the door welcomed it. Throws pe::error naming the peer when it cannot
/// connect or is not welcomed by `deadline`.
int dial_link(const std::string& host, std::uint16_t port, int me, int peer, const std::string& proof,
              std::chrono::steady_clock::time_point deadline);

} // namespace pe
