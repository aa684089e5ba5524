#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>

namespace pe {

/// The environment variable that carries a job's token to its processes (the way launchers
/// pass secrets): pe-actor-launch sets it for the ranks it starts; --job-token-file wins
/// over it.
inline constexpr const char* job_token_variable = "PE_ACTOR_JOB_TOKEN";

/// Who may join a job: a process that proves it holds the job's secret token, by challenge
/// and response, without the token crossing the wire.
///
/// The joining process asks rank 0 for a challenge (32 random bytes, each accepted once),
/// draws a nonce of its own and sends HMAC-SHA256(token, "join" | challenge | nonce | claim)
/// with its hello, where the claim is what it says of itself (rank, port, fingerprint).
/// Rank 0 admits it only for a challenge it issued and nobody used (a recorded hello
/// replayed later is refused), then answers with HMAC-SHA256(token, "welcome" | ...), which
/// the process checks: a stranger posing as rank 0 is refused too. The two labels keep one
/// side's proof from being reflected as the other's.
///
/// What it does not do: hide or protect the traffic after the hello (that is TLS's job), or
/// stop someone who can rewrite packets in flight on a link without TLS.
class job_admission {
 public:
  /// `token`: the job's secret (any bytes); empty: an open job, in which anyone who knows
  /// the program and flags may join, as before tokens existed.
  explicit job_admission(std::string token);

  /// Whether the job needs its token.
  bool closed() const { return !token_.empty(); }

  // --- rank 0 -----------------------------------------------------------------------

  /// A fresh challenge, remembered until a hello uses it. At most max_outstanding are
  /// remembered (a stranger asking for many forgets the oldest, not the process's memory).
  std::string challenge();

  /// Why the hello proving `proof` over (`challenge`, `nonce`, `claim`) is refused, or ""
  /// when it is admitted. The challenge is used up either way. An open job admits a hello
  /// with no proof and refuses one with a proof (the two processes disagree on the token).
  std::string admit(const std::string& challenge, const std::string& nonce, const std::string& claim,
                    const std::string& proof);

  /// Rank 0's answer to an admitted hello: its own proof over the same fields ("" for an
  /// open job).
  std::string welcome(const std::string& challenge, const std::string& nonce, const std::string& claim) const;

  // --- a joining process ------------------------------------------------------------

  /// This process's nonce for one hello: 32 random bytes.
  static std::string nonce();

  /// The proof a hello carries ("" for an open job).
  std::string prove(const std::string& challenge, const std::string& nonce, const std::string& claim) const;

  /// Why rank 0's `welcome` does not prove that it holds this process's token, or "" when
  /// it does (or when both run an open job).
  std::string check_welcome(const std::string& challenge, const std::string& nonce,
                            const std::string& claim, const std::string& welcome) const;

  static constexpr std::size_t max_outstanding = 1024;
  static constexpr std::size_t challenge_bytes = 32;

 private:
  std::string mac(const char* label, const std::string& challenge, const std::string& nonce,
                  const std::string& claim) const;

  std::string token_;
  std::mutex mutex_;
  std::deque<std::string> outstanding_; // challenges issued, oldest first
};

} // namespace pe
