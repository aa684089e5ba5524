#include "collectives/net/job_admission.hpp"

#include <algorithm>
#include <cstdint>

#include "crypto/digest.hpp"
#include "crypto/random_bytes.hpp"

namespace pe {

namespace {

/// `field` with its length before it, so that no two different field lists make one message.
void append_field(std::string& message, const std::string& field) {
  const auto size = static_cast<std::uint64_t>(field.size());
  for (int shift = 0; shift < 64; shift += 8)
    message += static_cast<char>((size >> shift) & 0xff);
  message += field;
}

} // namespace

job_admission::job_admission(std::string token) : token_(std::move(token)) {}

std::string job_admission::challenge() {
  std::string fresh = random_bytes(challenge_bytes);
  std::lock_guard<std::mutex> guard(mutex_);
  if (outstanding_.size() == max_outstanding)
    outstanding_.pop_front();
  outstanding_.push_back(fresh);
  return fresh;
}

std::string job_admission::admit(const std::string& challenge, const std::string& nonce,
                                 const std::string& claim, const std::string& proof) {
  bool issued = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    const auto found = std::find(outstanding_.begin(), outstanding_.end(), challenge);
    if (found != outstanding_.end()) {
      issued = true;
      outstanding_.erase(found);
    }
  }
  if (!closed())
    return proof.empty() ? "" : "it has a job token and this job has none (give both processes "
                                "the same --job-token-file, or neither)";
  if (proof.empty())
    return "it has no job token (--job-token-file or PE_ACTOR_JOB_TOKEN_FILE)";
  if (!issued)
    return "its hello answers a challenge rank 0 did not issue or that was already used (a "
           "replayed hello)";
  if (nonce.size() != challenge_bytes)
    return "its nonce is " + std::to_string(nonce.size()) + " bytes, not " +
           std::to_string(challenge_bytes);
  if (!constant_time_equal(proof, mac("pe-actor join v1", challenge, nonce, claim)))
    return "it did not prove that it holds the job token (a wrong token)";
  return "";
}

std::string job_admission::welcome(const std::string& challenge, const std::string& nonce,
                                   const std::string& claim) const {
  return closed() ? mac("pe-actor welcome v1", challenge, nonce, claim) : std::string();
}

std::string job_admission::nonce() {
  return random_bytes(challenge_bytes);
}

std::string job_admission::prove(const std::string& challenge, const std::string& nonce,
                                 const std::string& claim) const {
  return closed() ? mac("pe-actor join v1", challenge, nonce, claim) : std::string();
}

std::string job_admission::check_welcome(const std::string& challenge, const std::string& nonce,
                                         const std::string& claim, const std::string& welcome) const {
  if (!closed())
    return welcome.empty() ? "" : "rank 0 answered with a job token's proof, and this process has no token";
  if (welcome.empty())
    return "rank 0 did not prove that it holds the job token (it runs without one)";
  if (!constant_time_equal(welcome, mac("pe-actor welcome v1", challenge, nonce, claim)))
    return "rank 0 did not prove that it holds the job token (a wrong token, or not rank 0 of this job)";
  return "";
}

std::string job_admission::mac(const char* label, const std::string& challenge,
                               const std::string& nonce, const std::string& claim) const {
  std::string message;
  append_field(message, label);
  append_field(message, challenge);
  append_field(message, nonce);
  append_field(message, claim);
  return hmac_sha256(token_, message);
}

} // namespace pe
