// Admission to a job by its secret token: the challenge-and-response rules (job_admission),
// and processes meeting through CAF networking with tokens (on 127.0.0.1): a stranger with a
// wrong token, without one, or with one where the job has none is refused with a clear
// error while the job goes on waiting for its own processes, which then join and exchange.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "collectives/net/job_admission.hpp"
#include "collectives/net/net_packet_wire.hpp"
#include "collectives/net/process_group.hpp"
#include "crypto/digest.hpp"
#include "support/expect_error.hpp"
#include "support/free_port.hpp"
#include "support/two_process_options.hpp"

namespace {

using namespace pe;
using namespace std::chrono_literals;
using pe::testing::expect_error;
using pe::testing::free_port;

const std::string token = "0123456789abcdef0123456789abcdef";
const std::string claim = "rank=1\nport=4000\nprogram=a\n";

TEST(JobAdmission, AdmitsTheTokenOnceAndWelcomesBack) {
  job_admission master(token), joining(token);
  const std::string challenge = master.challenge(), nonce = job_admission::nonce();
  EXPECT_EQ(challenge.size(), job_admission::challenge_bytes);
  EXPECT_NE(challenge, master.challenge()); // fresh every time
  const std::string proof = joining.prove(challenge, nonce, claim);
  EXPECT_EQ(master.admit(challenge, nonce, claim, proof), "");
  EXPECT_EQ(joining.check_welcome(challenge, nonce, claim, master.welcome(challenge, nonce, claim)), "");
  // The same hello again, as an eavesdropper would replay it: the challenge is used up.
  EXPECT_NE(master.admit(challenge, nonce, claim, proof).find("replayed"), std::string::npos);
}

TEST(JobAdmission, RefusesAWrongTokenAndAnAlteredClaim) {
  job_admission master(token), stranger("a-different-token-of-32-bytes-xx");
  std::string challenge = master.challenge();
  const std::string nonce = job_admission::nonce();
  EXPECT_NE(master.admit(challenge, nonce, claim, stranger.prove(challenge, nonce, claim)).find("wrong token"),
            std::string::npos);
  // A proof for one claim does not carry another (rank 2 instead of 1).
  challenge = master.challenge();
  const std::string proof = job_admission(token).prove(challenge, nonce, claim);
  EXPECT_NE(master.admit(challenge, nonce, "rank=2\nport=4000\nprogram=a\n", proof).find("wrong token"),
            std::string::npos);
}

TEST(JobAdmission, RefusesAChallengeItNeverIssued) {
  job_admission master(token), joining(token);
  const std::string made_up(job_admission::challenge_bytes, 'x'), nonce = job_admission::nonce();
  EXPECT_NE(master.admit(made_up, nonce, claim, joining.prove(made_up, nonce, claim)).find("did not issue"),
            std::string::npos);
}

TEST(JobAdmission, ForgetsTheOldestOfTooManyChallenges) {
  job_admission master(token), joining(token);
  const std::string first = master.challenge(), nonce = job_admission::nonce();
  for (std::size_t i = 0; i < job_admission::max_outstanding; ++i) master.challenge();
  EXPECT_NE(master.admit(first, nonce, claim, joining.prove(first, nonce, claim)), "");
  const std::string last = master.challenge();
  EXPECT_EQ(master.admit(last, nonce, claim, joining.prove(last, nonce, claim)), "");
}

TEST(JobAdmission, TheTwoSidesProofsCannotBeSwapped) {
  job_admission master(token), joining(token);
  const std::string challenge = master.challenge(), nonce = job_admission::nonce();
  const std::string proof = joining.prove(challenge, nonce, claim);
  // The process's own proof reflected back as rank 0's welcome does not pass.
  EXPECT_NE(joining.check_welcome(challenge, nonce, claim, proof), "");
  EXPECT_NE(job_admission("another-token-of-at-least-16").check_welcome(
                challenge, nonce, claim, master.welcome(challenge, nonce, claim)),
            "");
}

TEST(JobAdmission, AnOpenJobAdmitsWithoutProofAndRefusesATokenHolder) {
  job_admission open(""), holder(token);
  EXPECT_FALSE(open.closed());
  const std::string challenge = open.challenge(), nonce = job_admission::nonce();
  EXPECT_EQ(open.prove(challenge, nonce, claim), "");
  EXPECT_EQ(open.admit(challenge, nonce, claim, ""), "");
  EXPECT_NE(open.admit(open.challenge(), nonce, claim, holder.prove(challenge, nonce, claim))
                .find("has a job token and this job has none"),
            std::string::npos);
  EXPECT_NE(job_admission(token).admit(challenge, nonce, claim, "").find("has no job token"), std::string::npos);
  EXPECT_NE(holder.check_welcome(challenge, nonce, claim, ""), "");
}

TEST(Digest, KnownAnswers) {
  // FIPS 180-2 and RFC 4231 test case 2.
  EXPECT_EQ(to_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "ab"));
}

// --- processes with tokens, through CAF networking -----------------------------------

process_group_options options(int rank, int port, std::string job_token,
                              std::vector<std::string>* warnings = nullptr,
                              std::mutex* warnings_mutex = nullptr) {
  process_group_options o = pe::testing::two_process_options(rank, port);
  o.job_token = std::move(job_token);
  if (warnings)
    o.on_warning = [warnings, warnings_mutex](const std::string& w) {
      std::lock_guard<std::mutex> guard(*warnings_mutex);
      warnings->push_back(w);
    };
  return o;
}

byte_buffer bytes(const std::string& s) {
  return bytes_of(s.data(), s.size());
}

/// Rank 0 with `token` waits; `stranger` (rank 1's claim with another token) is refused
/// with an error containing `expected`; then the real rank 1 joins and the two exchange.
void stranger_is_refused_and_the_job_goes_on(const std::string& master_token, const std::string& stranger_token,
                                             const std::string& expected) {
  const int port = free_port();
  std::vector<std::string> warnings;
  std::mutex warnings_mutex;
  auto master = std::async(std::launch::async, [&] {
    return join_processes(options(0, port, master_token, &warnings, &warnings_mutex));
  });
  expect_error([&] { join_processes(options(1, port, stranger_token)); },
               {"the master", expected});
  auto member = std::async(std::launch::async, [&] { return join_processes(options(1, port, master_token)); });
  auto g0 = master.get();
  auto g1 = member.get();
  auto gathered = std::async(std::launch::async, [&] { return g1->all_gather(bytes("one")); });
  EXPECT_EQ(g0->all_gather(bytes("zero")), (std::vector<byte_buffer>{bytes("zero"), bytes("one")}));
  EXPECT_EQ(gathered.get().size(), 2u);
  if (!master_token.empty()) {
    std::lock_guard<std::mutex> guard(warnings_mutex);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("refused a process claiming rank 1"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("the job goes on waiting"), std::string::npos) << warnings[0];
  }
}

TEST(JobToken, AWrongTokenIsRefusedAndTheJobGoesOn) {
  stranger_is_refused_and_the_job_goes_on(token, "a-different-token-of-32-bytes-xx",
                                          "did not prove that it holds the job token");
}

TEST(JobToken, NoTokenIsRefusedAndTheJobGoesOn) {
  stranger_is_refused_and_the_job_goes_on(token, "", "admits only processes holding the job's token");
}

TEST(JobToken, ATokenHolderRefusesAnOpenJobsMaster) {
  const int port = free_port();
  auto master = std::async(std::launch::async, [&] { return join_processes(options(0, port, "")); });
  expect_error([&] { join_processes(options(1, port, token)); },
               {"the master refused this process", "has a job token and this job has none"});
  auto member = std::async(std::launch::async, [&] { return join_processes(options(1, port, "")); });
  auto g0 = master.get(); // both kept until both have joined
  auto g1 = member.get();
  EXPECT_EQ(g0->size(), 2);
  EXPECT_EQ(g1->size(), 2);
}

TEST(JobToken, PacketsFromAStrangerAreDroppedAndTheJobGoesOn) {
  const int port = free_port();
  std::vector<std::string> warnings;
  std::mutex warnings_mutex;
  auto master = std::async(std::launch::async, [&] {
    return join_processes(options(0, port, token, &warnings, &warnings_mutex));
  });
  auto member = std::async(std::launch::async, [&] { return join_processes(options(1, port, token)); });
  auto g0 = master.get();
  auto g1 = member.get();
  {
    // A stranger on rank 0's port, speaking CAF, sends packets that claim to be rank 1's.
    caf::actor_system_config config;
    config.load<caf::io::middleman>();
    config.add_message_type<net_packet>("pe_net_packet");
    caf::actor_system system(config);
    auto rank0 = system.middleman().remote_actor("127.0.0.1", static_cast<std::uint16_t>(port));
    ASSERT_TRUE(rank0) << system.render(rank0.error());
    caf::scoped_actor stranger(system);
    for (int k = 0; k < 8; ++k) {
      net_packet lie;
      lie.from = 1;
      lie.channel = 0;
      lie.sequence = static_cast<std::uint64_t>(k);
      lie.total = 4;
      lie.bytes = {'e', 'v', 'i', 'l'};
      stranger->send(*rank0, std::move(lie));
    }
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      {
        std::lock_guard<std::mutex> guard(warnings_mutex);
        if (warnings.size() >= 5 || std::chrono::steady_clock::now() > deadline) break;
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  {
    std::lock_guard<std::mutex> guard(warnings_mutex);
    ASSERT_EQ(warnings.size(), 5u) << "the first five are said, the rest dropped silently";
    EXPECT_NE(warnings[0].find("dropped a packet claiming to come from process rank 1 from an actor of no "
                               "process of this job"),
              std::string::npos)
        << warnings[0];
    EXPECT_NE(warnings[4].find("further ones are dropped silently"), std::string::npos) << warnings[4];
  }
  EXPECT_FALSE(g0->broken());
  auto gathered = std::async(std::launch::async, [&] { return g1->all_gather(bytes("one")); });
  EXPECT_EQ(g0->all_gather(bytes("zero")), (std::vector<byte_buffer>{bytes("zero"), bytes("one")}));
  EXPECT_EQ(gathered.get()[0], bytes("zero"));
}

TEST(JobToken, AMemberWithTheTokenButAnotherProgramStillFailsTheJob) {
  const int port = free_port();
  auto master = std::async(std::launch::async, [&] { return join_processes(options(0, port, token)); });
  auto other = options(1, port, token);
  other.fingerprint = {{"program", "b"}};
  expect_error([&] { join_processes(other); }, {"program: b there, a on rank 0"});
  expect_error([&] { master.get(); }, {"process rank 1 differs from rank 0 in program"});
}

} // namespace
