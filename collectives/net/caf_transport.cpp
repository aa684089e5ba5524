// join_processes(): the CAF io::middleman implementation of net_transport, and the
// rendezvous that forms a job. The only file of collectives/ that includes CAF.
#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include "collectives/net/job_admission.hpp"
#include "collectives/net/link_door.hpp"
#include "collectives/net/net_packet_wire.hpp"
#include "collectives/net/process_group.hpp"
#include "collectives/net/socket_link.hpp"
#include "collectives/process_backend.hpp"
#include "core/error.hpp"
#include "core/steady_clock.hpp"
#include "crypto/openssl_io_guard.hpp"
#include "crypto/random_bytes.hpp"
#include "devices/progress.hpp"

namespace pe {

namespace {

using hello_atom = caf::atom_constant<caf::atom("pe_hello")>;
using peers_atom = caf::atom_constant<caf::atom("pe_peers")>;
using clock_atom = caf::atom_constant<caf::atom("pe_clock")>;
using mesh_atom = caf::atom_constant<caf::atom("pe_mesh")>;
using challenge_atom = caf::atom_constant<caf::atom("pe_chall")>;
using link_atom = caf::atom_constant<caf::atom("pe_link")>;

/// Packets held before the job is formed, at most: a stranger's flood is dropped, not kept.
constexpr std::size_t max_early_packets = 4096;
/// Warnings about strangers' packets, at most (the first ones say all there is to say).
constexpr int max_stranger_warnings = 5;

/// "2.5 s".
std::string seconds(std::chrono::milliseconds t) {
  std::ostringstream text;
  text << static_cast<double>(t.count()) / 1000 << " s";
  return text.str();
}

/// "name=value" lines: how fingerprints travel.
std::vector<std::string> flatten(const std::vector<std::pair<std::string, std::string>>& fingerprint) {
  std::vector<std::string> out;
  for (const auto& [name, value] : fingerprint) out.push_back(name + "=" + value);
  return out;
}

/// The first difference between rank 0's fingerprint and another's, or "".
std::string difference(const std::vector<std::string>& mine, const std::vector<std::string>& theirs,
                       int rank) {
  auto value_of = [](const std::vector<std::string>& lines, const std::string& name) {
    for (const auto& l : lines)
      if (l.compare(0, name.size() + 1, name + "=") == 0) return l.substr(name.size() + 1);
    return std::string("(missing)");
  };
  for (std::size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
    const std::string& line = i < mine.size() ? mine[i] : theirs[i];
    const std::string name = line.substr(0, line.find('='));
    const std::string a = value_of(mine, name), b = value_of(theirs, name);
    if (a != b)
      return "process rank " + std::to_string(rank) + " differs from rank 0 in " + name + ": " + b +
             " there, " + a + " on rank 0";
  }
  return "";
}

/// What a hello says of the process that sends it, as its proof covers it: the rank, the
/// port it listens on and its fingerprint.
std::string claim_of(int rank, std::uint16_t port, const std::vector<std::string>& fingerprint) {
  std::string claim = "rank=" + std::to_string(rank) + "\nport=" + std::to_string(port) + "\n";
  for (const auto& line : fingerprint) claim += line + "\n";
  return claim;
}

/// Whether `host` is this machine (a job that never leaves it needs no token to be safe
/// from other machines).
bool loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

/// What the mailbox actor and the threads of this process share.
struct node_state {
  node_state(int rank, int size, std::string token)
      : inbox(rank, size, [] { notify_progress(); }), admission(std::move(token)),
        peers(static_cast<std::size_t>(size)), endpoints(static_cast<std::size_t>(size)) {
    const std::string key = random_bytes(sizeof local_key);
    std::memcpy(&local_key, key.data(), sizeof local_key);
  }

  net_inbox inbox;
  job_admission admission;
  std::vector<std::string> fingerprint;
  std::chrono::milliseconds peer_timeout{0};
  std::function<void(const std::string&)> warn;
  /// Proves that a message to the mailbox came from this process's own threads (CAF gives a
  /// remote anon_send no sender either).
  std::uint64_t local_key = 0;

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<caf::actor> peers; // by rank; empty handles until known
  bool formed = false;           // every peer known
  std::optional<std::string> join_error;
  std::vector<std::pair<caf::strong_actor_ptr, net_packet>> early; // before the peers were known
  std::map<int, caf::response_promise> waiting;                    // rank 0: joined, unanswered
  std::vector<std::string> endpoints; // rank 0: "host:port" where each rank listens, as seen here
  std::vector<caf::response_promise> meshed; // rank 0: ranks connected to all, unanswered
  std::set<int> meshed_ranks;                // rank 0: who said so
  std::map<int, std::string> welcomes;       // rank 0: its proof for each admitted rank
  int stranger_warnings = 0;
  /// Data links by rank (socket_link): set while joining, before any packet is sent; each
  /// packet to a peer with one goes over it instead of CAF's connection.
  std::vector<std::unique_ptr<socket_link>> links;
  /// Where the lower ranks' doors are and the secret each gave this process (link_door).
  std::map<int, std::pair<std::uint16_t, std::string>> offers;
  std::vector<std::tuple<caf::strong_actor_ptr, std::uint16_t, std::string>> early_offers;

  /// The rank whose mailbox `who` is, or -1; call with mutex held.
  int rank_of(const caf::strong_actor_ptr& who) const {
    if (!who) return -1;
    for (std::size_t r = 0; r < peers.size(); ++r)
      if (peers[r] && peers[r]->node() == who->node() && peers[r]->id() == who->id())
        return static_cast<int>(r);
    return -1;
  }

  /// Says that a packet from an actor of no process of the job was dropped (the first few).
  void drop_stranger(const net_packet& p) {
    int count = 0;
    {
      std::lock_guard<std::mutex> guard(mutex);
      count = ++stranger_warnings;
    }
    if (count > max_stranger_warnings) return;
    warn("dropped a packet claiming to come from process rank " + std::to_string(p.from) +
         " from an actor of no process of this job (a stranger on the master's or a rank's "
         "port)" + (count == max_stranger_warnings ? "; further ones are dropped silently" : ""));
  }

  /// Files a packet after checking that it came from the rank it names. A packet from an
  /// actor that is no process of the job is dropped: a stranger cannot break the job.
  void receive(const caf::strong_actor_ptr& sender, net_packet p) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!formed) {
      if (early.size() < max_early_packets) early.emplace_back(sender, std::move(p));
      return;
    }
    const int actual = rank_of(sender);
    lock.unlock();
    if (actual < 0) {
      drop_stranger(p);
      return;
    }
    if (actual != p.from) {
      inbox.fail("a packet claiming to come from process rank " + std::to_string(p.from) +
                 " came from rank " + std::to_string(actual));
      return;
    }
    inbox.deliver(std::move(p));
  }

  /// Every peer is known: files the packets and door offers that came before.
  void form(caf::event_based_actor* self, std::vector<caf::actor> all) {
    std::vector<std::pair<caf::strong_actor_ptr, net_packet>> before;
    std::vector<std::tuple<caf::strong_actor_ptr, std::uint16_t, std::string>> offers_before;
    {
      std::lock_guard<std::mutex> guard(mutex);
      peers = std::move(all);
      for (std::size_t r = 0; r < peers.size(); ++r)
        if (static_cast<int>(r) != inbox.rank()) self->monitor(peers[r]);
      formed = true;
      before.swap(early);
      offers_before.swap(early_offers);
    }
    changed.notify_all();
    for (auto& [sender, p] : before) receive(sender, std::move(p));
    for (auto& [sender, port, secret] : offers_before) offer(sender, port, std::move(secret));
  }

  /// A lower rank's door is open at `port` for this process, which must show `secret`
  /// (open_data_links). Only a process of the job may offer, once.
  void offer(const caf::strong_actor_ptr& sender, std::uint16_t port, std::string secret) {
    {
      std::lock_guard<std::mutex> guard(mutex);
      if (!formed) {
        // Bounded as early packets are: a stranger's flood before the job forms is dropped.
        if (early_offers.size() < max_early_packets) early_offers.emplace_back(sender, port, std::move(secret));
        return;
      }
      const int from = rank_of(sender);
      if (from < 0 || from >= inbox.rank() || offers.count(from) != 0) return;
      offers[from] = {port, std::move(secret)};
    }
    changed.notify_all();
  }

  void lost(const caf::actor_addr& who, const caf::error& reason) {
    int rank = -1;
    {
      std::lock_guard<std::mutex> guard(mutex);
      for (std::size_t r = 0; r < peers.size(); ++r)
        if (peers[r] && peers[r].address() == who) rank = static_cast<int>(r);
    }
    inbox.fail("lost process rank " + (rank < 0 ? std::string("?") : std::to_string(rank)) +
               ": it exited, was killed, froze or its connection broke (" +
               caf::to_string(reason) + "; peers are declared lost after " +
               seconds(peer_timeout) + " of silence, --peer-timeout)");
    std::lock_guard<std::mutex> guard(mutex);
    // Unblocks a data link's writer stuck on a frozen peer's full socket.
    if (rank >= 0 && static_cast<std::size_t>(rank) < links.size() && links[static_cast<std::size_t>(rank)])
      links[static_cast<std::size_t>(rank)]->cut();
  }

  void refuse(const std::string& why) {
    {
      std::lock_guard<std::mutex> guard(mutex);
      if (!join_error) join_error = why;
    }
    changed.notify_all();
  }
};

/// Rank 0 answers every hello once all processes have joined and their addresses are known:
/// the mailboxes of every rank and where each listens, or the reason it is refused.
void answer_when_complete(caf::event_based_actor* self, node_state& st) {
  const int size = st.inbox.size();
  if (static_cast<int>(st.waiting.size()) != size - 1) return;
  if (std::any_of(st.endpoints.begin() + 1, st.endpoints.end(), [](const std::string& e) { return e.empty(); }))
    return;
  std::vector<caf::actor> all;
  {
    std::lock_guard<std::mutex> guard(st.mutex);
    st.peers[0] = caf::actor_cast<caf::actor>(self);
    all = st.peers;
  }
  for (auto& [r, p] : st.waiting) p.deliver(all, st.endpoints, std::string{}, st.welcomes[r]);
  st.waiting.clear();
  st.form(self, all);
}

/// What a joining process sends with its hello to prove it holds the job's token.
struct hello_proof {
  std::string challenge;
  std::string nonce;
  std::string proof;
};

caf::response_promise hello(caf::event_based_actor* self, std::shared_ptr<node_state> st, int rank,
                            const std::vector<std::string>& fingerprint, const caf::actor& mailbox,
                            std::uint16_t port, const hello_proof& shown) {
  auto promise = self->make_response_promise();
  const int size = st->inbox.size();
  if (st->inbox.rank() != 0) {
    promise.deliver(std::vector<caf::actor>{}, std::vector<std::string>{},
                    "process rank " + std::to_string(st->inbox.rank()) + " is not the master", std::string{});
    return promise;
  }
  // The door first: a process that does not hold the job's token is turned away holding
  // nothing, and the job goes on waiting for its own (only a process proven to be one of
  // them can fail the job by disagreeing with it below).
  const std::string claim = claim_of(rank, port, fingerprint);
  const std::string turned_away = st->admission.admit(shown.challenge, shown.nonce, claim, shown.proof);
  if (!turned_away.empty()) {
    promise.deliver(std::vector<caf::actor>{}, std::vector<std::string>{}, turned_away, std::string{});
    st->warn("refused a process claiming rank " + std::to_string(rank) + (mailbox ? " from node " + caf::to_string(mailbox.node()) : std::string()) +
             ": " + turned_away + "; the job goes on waiting for its own processes");
    return promise;
  }
  std::string refusal;
  if (rank <= 0 || rank >= size)
    refusal = "a process claims rank " + std::to_string(rank) + " in a job of " + std::to_string(size);
  else if (st->waiting.count(rank) != 0 || st->formed)
    refusal = "two processes claim rank " + std::to_string(rank);
  else if (!mailbox)
    refusal = "process rank " + std::to_string(rank) + " sent no mailbox";
  else refusal = difference(st->fingerprint, fingerprint, rank);
  if (!refusal.empty()) {
    promise.deliver(std::vector<caf::actor>{}, std::vector<std::string>{}, refusal, std::string{});
    st->refuse("refused a process: " + refusal);
    return promise;
  }
  st->welcomes[rank] = st->admission.welcome(shown.challenge, shown.nonce, claim);
  {
    std::lock_guard<std::mutex> guard(st->mutex);
    st->peers[static_cast<std::size_t>(rank)] = mailbox;
  }
  st->waiting.emplace(rank, promise);
  // Where the others reach this process: the address its connection to rank 0 comes from
  // (the middleman knows it) and the port it listens on.
  self->request(self->home_system().middleman().actor_handle(), caf::infinite, caf::get_atom::value,
                mailbox.node())
      .then(
          [self, st, rank, port](const caf::node_id&, const std::string& host, std::uint16_t) {
            if (host.empty()) {
              st->refuse("process rank " + std::to_string(rank) + " has no direct connection to rank 0");
              return;
            }
            st->endpoints[static_cast<std::size_t>(rank)] = host + ":" + std::to_string(port);
            answer_when_complete(self, *st);
          },
          [st, rank](caf::error& e) {
            st->refuse("cannot find process rank " + std::to_string(rank) + "'s address: " + caf::to_string(e));
          });
  return promise;
}

/// Rank 0 answers every "connected to all" once all processes have said it (each of the
/// job's processes once, naming its mailbox: a stranger's word does not count).
caf::response_promise mesh(caf::event_based_actor* self, node_state& st, const caf::actor& mailbox) {
  int from = -1;
  {
    std::lock_guard<std::mutex> guard(st.mutex);
    from = st.rank_of(caf::actor_cast<caf::strong_actor_ptr>(mailbox));
  }
  auto promise = self->make_response_promise();
  if (from <= 0 || !st.meshed_ranks.insert(from).second) {
    promise.deliver(caf::make_error(caf::sec::invalid_argument));
    return promise;
  }
  st.meshed.push_back(promise);
  if (static_cast<int>(st.meshed.size()) == st.inbox.size() - 1) {
    for (auto& p : st.meshed) p.deliver(caf::unit);
    st.meshed.clear();
  }
  return promise;
}

caf::behavior mailbox(caf::event_based_actor* self, std::shared_ptr<node_state> st) {
  self->set_down_handler([st](caf::down_msg& m) { st->lost(m.source, m.reason); });
  return {
      [self, st](net_packet& p) { st->receive(self->current_sender(), std::move(p)); },
      [self, st](challenge_atom) {
        // Only rank 0 admits; anyone may ask (a challenge costs a stranger nothing and
        // gives him nothing).
        return caf::make_message(st->inbox.rank() == 0 ? st->admission.challenge() : std::string(),
                                 st->admission.closed());
      },
      [self, st](hello_atom, int rank, const std::vector<std::string>& fingerprint,
                 const caf::actor& peer, std::uint16_t port, const std::string& challenge,
                 const std::string& nonce, const std::string& proof) {
        return hello(self, st, rank, fingerprint, peer, port, {challenge, nonce, proof});
      },
      [self, st](mesh_atom, const caf::actor& from) { return mesh(self, *st, from); },
      [self, st](link_atom, std::uint16_t port, std::string& secret) {
        st->offer(self->current_sender(), port, std::move(secret));
      },
      [self, st](peers_atom, std::uint64_t key, std::vector<caf::actor>& all) {
        if (key == st->local_key) st->form(self, std::move(all));
      },
      [](clock_atom) { return steady_ns(); },
  };
}

/// The CAF side of a joined process: its actor system with the middleman, and its mailbox.
class caf_transport final : public net_transport {
 public:
  explicit caf_transport(const process_group_options& o)
      : state_(std::make_shared<node_state>(o.rank, o.size, o.job_token)), tls_(o.tls.any()) {
    state_->fingerprint = flatten(o.fingerprint);
    state_->peer_timeout = o.peer_timeout;
    state_->warn = [on_warning = o.on_warning](const std::string& text) { say_warning(on_warning, text); };
    config_.load<caf::io::middleman>();
    if (tls_) {
      // Every connection of this process, in and out, is then mutual TLS: CAF's OpenSSL
      // module presents the certificate and refuses a peer whose certificate the CA did
      // not sign (check_tls_files made sure ours passes the same check).
      if (!openssl_io_guard_installed())
        throw error("TLS between processes needs this program's guard around OpenSSL's I/O "
                    "(crypto/openssl_io_guard.cpp), and OpenSSL's own functions came first: "
                    "one stranger's failed handshake would break the job's connections");
      config_.load<caf::openssl::manager>();
      config_.openssl_certificate = o.tls.certificate;
      config_.openssl_key = o.tls.key;
      config_.openssl_cafile = o.tls.ca;
    }
    config_.add_message_type<net_packet>("pe_net_packet");
    config_.set("scheduler.max-threads", 2);
    // Workers that sleep on a condition variable when idle, as the executor's (runtime.cpp):
    // CAF's work-stealing workers poll and nap between packets, taking the core from the
    // middleman and the places. Measured with bench/process_allreduce_bench, 2 processes, 256
    // KiB to 16 MiB: 0.82-1.45 GB/s with sharing, 0.64-0.95 with work stealing (2 rounds each).
    config_.set("scheduler.policy", caf::atom("sharing"));
    // Without both, a frozen peer is never noticed (reference.md §9).
    const auto timeout = std::chrono::duration_cast<caf::timespan>(o.peer_timeout);
    config_.set("middleman.heartbeat-interval", timeout / 5);
    config_.set("middleman.connection-timeout", timeout);
    // No automatic connections: when two processes learn of each other at once, both connect,
    // and CAF 0.17 may close both connections as redundant, each side purging the other
    // (remote_link_unreachable mid-job). join() connects every pair once instead.
    config_.set("middleman.enable-automatic-connections", false);
    system_.emplace(config_);
    mailbox_ = system_->spawn(mailbox, state_);
  }

  ~caf_transport() override {
    std::vector<std::unique_ptr<socket_link>> links;
    {
      std::lock_guard<std::mutex> guard(state_->mutex);
      links.swap(state_->links);
    }
    links.clear(); // stops their threads, which deliver into the inbox
    {
      std::lock_guard<std::mutex> guard(state_->mutex);
      state_->peers.clear();
      state_->early.clear();
    }
    caf::anon_send_exit(mailbox_, caf::exit_reason::user_shutdown);
    mailbox_ = nullptr;
    system_.reset(); // waits for the mailbox; the middleman closes every connection
  }

  net_inbox& inbox() override { return state_->inbox; }

  int data_links() const override {
    std::lock_guard<std::mutex> guard(state_->mutex);
    return static_cast<int>(std::count_if(state_->links.begin(), state_->links.end(),
                                          [](const auto& l) { return l != nullptr; }));
  }

  void send(int to, net_packet packet) override {
    caf::actor peer;
    {
      std::lock_guard<std::mutex> guard(state_->mutex);
      const auto r = static_cast<std::size_t>(to);
      if (r < state_->links.size() && state_->links[r]) {
        // The link's queue takes it: send() returns at once and the link outlives the call
        // (links are removed only by the destructor, after every sender stopped).
        state_->links[r]->send(std::move(packet));
        return;
      }
      peer = state_->peers.at(r);
    }
    if (peer) caf::send_as(mailbox_, peer, std::move(packet));
  }

  /// Forms the job (see join_processes); returns this process's clock offset to rank 0.
  std::int64_t join(const process_group_options& o) {
    const auto deadline = std::chrono::steady_clock::now() + o.join_timeout;
    const std::string master = o.master_host + ":" + std::to_string(o.master_port);
    // Rank 0 listens where the others look for it; the others listen on a port of the
    // OS's choosing, so that peers can connect to them directly.
    const auto listen_port = static_cast<std::uint16_t>(o.rank == 0 ? o.master_port : 0);
    const char* bind_to = bind_address(o);
    auto port = tls_ ? caf::openssl::publish(mailbox_, listen_port, bind_to, true)
                     : system_->middleman().publish(mailbox_, listen_port, bind_to, true);
    if (!port)
      throw error("cannot listen on port " + std::to_string(o.rank == 0 ? o.master_port : 0) +
                  (o.rank == 0 ? " (--master " + master + ")" : std::string()) + ": " +
                  system_->render(port.error()));
    if (o.rank == 0) {
      wait_for_peers(deadline, o.join_timeout);
      open_data_links(o, {}, deadline);
      return 0;
    }

    caf::actor root;
    for (auto pause = std::chrono::milliseconds(50);; pause = std::min(pause * 2, std::chrono::milliseconds(1000))) {
      auto found = connect(o.master_host, static_cast<std::uint16_t>(o.master_port));
      if (found) {
        root = *found;
        break;
      }
      if (std::chrono::steady_clock::now() + pause > deadline)
        throw error("cannot reach the master at " + master + " within " +
                    seconds(o.join_timeout) + ": " +
                    system_->render(found.error()) +
                    (tls_ ? " (with TLS: a master whose certificate this process's --tls-ca did "
                            "not sign, or that refused this process's certificate, looks the same)"
                          : std::string()));
      std::this_thread::sleep_for(pause);
    }
    caf::scoped_actor self{*system_};
    std::optional<std::string> failure;
    std::string challenge;
    std::string tokenless; // said after the hello, which rank 0 then refuses and records
    self->request(root, remaining_until(deadline), challenge_atom::value)
        .receive(
            [&](std::string& given, bool master_closed) {
              challenge = std::move(given);
              if (master_closed && !state_->admission.closed())
                tokenless = "the master at " + master + " admits only processes holding the job's "
                            "token, and this process has none: give it the job's --job-token-file "
                            "(or PE_ACTOR_JOB_TOKEN)";
            },
            [&](caf::error& e) {
              failure = "the master at " + master + " did not answer within " +
                        seconds(o.join_timeout) + " (" + system_->render(e) + ")";
            });
    if (failure) throw error(*failure);
    const std::string nonce = job_admission::nonce();
    const std::string claim = claim_of(o.rank, *port, state_->fingerprint);
    std::vector<caf::actor> all;
    std::vector<std::string> endpoints;
    self->request(root, remaining_until(deadline), hello_atom::value, o.rank, state_->fingerprint, mailbox_,
                  *port, challenge, nonce, state_->admission.prove(challenge, nonce, claim))
        .receive(
            [&](std::vector<caf::actor>& peers, std::vector<std::string>& where, std::string& refusal,
                std::string& welcome) {
              if (!refusal.empty())
                failure = tokenless.empty() ? "the master refused this process: " + refusal : tokenless;
              else if (auto why = state_->admission.check_welcome(challenge, nonce, claim, welcome); !why.empty())
                failure = "this process refuses the master at " + master + ": " + why;
              else if (static_cast<int>(peers.size()) != o.size || static_cast<int>(where.size()) != o.size)
                failure = "the master sent " + std::to_string(peers.size()) + " peers and " +
                          std::to_string(where.size()) + " addresses for a job of " + std::to_string(o.size);
              all = std::move(peers);
              endpoints = std::move(where);
            },
            [&](caf::error& e) {
              failure = "the processes did not all join within " + seconds(o.join_timeout) + " (" +
                        system_->render(e) + ")";
            });
    if (failure) throw error(*failure);
    caf::anon_send(mailbox_, peers_atom::value, state_->local_key, all);
    {
      // Nothing may be sent before the mailbox knows every peer.
      std::unique_lock<std::mutex> lock(state_->mutex);
      state_->changed.wait(lock, [this] { return state_->formed; });
    }
    connect_mesh(self, o, all, endpoints, deadline);
    open_data_links(o, endpoints, deadline);
    return clock_offset(self, root);
  }

 private:
  /// Where this process listens (CAF's port, its data-link door): a job whose master is on
  /// this machine's loopback address listens there only, so no other machine can reach it
  /// (the other ranks too when it is 127.0.0.1, the source address of their connections to
  /// it, which is where rank 0 tells the others to find them). Any other master address
  /// means every interface (nullptr).
  static const char* bind_address(const process_group_options& o) {
    return o.rank == 0 && loopback(o.master_host) ? o.master_host.c_str()
           : o.master_host == "127.0.0.1"         ? "127.0.0.1"
                                                  : nullptr;
  }

  /// The host and port of "host:port" (a rank's address as rank 0 sent it); throws when
  /// malformed.
  static std::pair<std::string, std::uint16_t> split_endpoint(const std::string& at, int rank) {
    const auto colon = at.rfind(':');
    std::uint16_t port = 0;
    const char* digits = colon == std::string::npos ? at.data() + at.size() : at.data() + colon + 1;
    const auto [end, failed] = std::from_chars(digits, at.data() + at.size(), port);
    if (colon == std::string::npos || failed != std::errc() || end != at.data() + at.size() || port == 0)
      throw error("the master sent '" + at + "' as process rank " + std::to_string(rank) + "'s address");
    return {at.substr(0, colon), port};
  }

  /// Gives every pair of processes a data link (socket_link) beside CAF's connection: each
  /// process opens a door (link_door) for the higher ranks and tells each, through CAF, its
  /// port and a secret; each dials the lower ranks' doors. From then on packets between
  /// them travel as frames, not CAF messages (see socket_link for what that saves); CAF
  /// keeps the job's forming, its heartbeats and the news of a lost peer. Not with TLS
  /// (CAF's OpenSSL connections then carry everything: the links are plain TCP) nor when
  /// the options turn them off.
  void open_data_links(const process_group_options& o, const std::vector<std::string>& endpoints,
                       std::chrono::steady_clock::time_point deadline) {
    if (tls_ || !o.data_links) return;
    std::vector<caf::actor> peers;
    {
      std::lock_guard<std::mutex> guard(state_->mutex);
      peers = state_->peers;
      state_->links.resize(static_cast<std::size_t>(o.size));
    }
    std::optional<link_door> door;
    if (o.rank < o.size - 1) {
      door.emplace(bind_address(o), o.job_token);
      for (int k = o.rank + 1; k < o.size; ++k)
        caf::send_as(mailbox_, peers[static_cast<std::size_t>(k)], link_atom::value, door->port(), door->expect(k));
    }
    auto broken = [this] { return state_->inbox.broken(); };
    for (int i = 0; i < o.rank; ++i) {
      std::pair<std::uint16_t, std::string> offer;
      {
        std::unique_lock<std::mutex> lock(state_->mutex);
        // In slices: a broken inbox (a peer lost meanwhile) does not notify `changed`.
        while (state_->offers.count(i) == 0) {
          if (auto why = broken()) throw error(*why);
          if (std::chrono::steady_clock::now() >= deadline)
            throw error("process rank " + std::to_string(i) + " did not open its data-link door to this process within " +
                        seconds(o.join_timeout));
          state_->changed.wait_for(lock, std::chrono::milliseconds(100));
        }
        offer = state_->offers[i];
      }
      const std::string host = i == 0 ? o.master_host : split_endpoint(endpoints.at(static_cast<std::size_t>(i)), i).first;
      install_link(i, dial_link(host, offer.first, o.rank, i, link_proof(o.job_token, o.rank, offer.second), deadline));
    }
    if (door)
      for (auto [rank, fd] : door->admit(deadline, state_->warn, broken)) install_link(rank, fd);
  }

  /// Packets to and from process `rank` go over `fd` from now on.
  void install_link(int rank, int fd) {
    node_state* st = state_.get(); // outlives the link: the destructor stops links first
    auto link = std::make_unique<socket_link>(
        fd, rank, [st](net_packet p) { st->inbox.deliver(std::move(p)); },
        [st](const std::string& why) { st->inbox.fail(why); });
    std::lock_guard<std::mutex> guard(state_->mutex);
    state_->links[static_cast<std::size_t>(rank)] = std::move(link);
  }

  /// The mailbox published at `host`:`port`, over TLS when this process has certificates.
  caf::expected<caf::actor> connect(const std::string& host, std::uint16_t port) {
    return tls_ ? caf::openssl::remote_actor(*system_, host, port)
                : system_->middleman().remote_actor(host, port);
  }

  /// Time left until `deadline`, at least 1 ms (a request's timeout).
  static std::chrono::milliseconds remaining_until(std::chrono::steady_clock::time_point deadline) {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()),
                    std::chrono::milliseconds(1));
  }

  /// Connects this process to every process of a lower rank but 0 (one connection per pair,
  /// opened by the higher rank: see the constructor), waits until the middleman has a direct
  /// connection to every peer, then until rank 0 says that every process has: from then on no
  /// packet goes through rank 0, so none can overtake another.
  void connect_mesh(caf::scoped_actor& self, const process_group_options& o, const std::vector<caf::actor>& all,
                    const std::vector<std::string>& endpoints, std::chrono::steady_clock::time_point deadline) {
    for (int k = 1; k < o.rank; ++k) {
      const std::string& at = endpoints[static_cast<std::size_t>(k)];
      const auto [host, port] = split_endpoint(at, k);
      auto found = connect(host, port);
      if (!found)
        throw error("cannot connect to process rank " + std::to_string(k) + " at " + at + ": " +
                    system_->render(found.error()));
      if (*found != all[static_cast<std::size_t>(k)])
        throw error("the process listening at " + at + " is not process rank " + std::to_string(k));
    }
    for (int k = 1; k < o.size; ++k) {
      if (k == o.rank) continue;
      while (!directly_connected(self, all[static_cast<std::size_t>(k)].node(), deadline)) {
        if (auto why = state_->inbox.broken()) throw error(*why); // a peer was lost meanwhile
        if (std::chrono::steady_clock::now() > deadline)
          throw error("process rank " + std::to_string(k) + " did not connect to this process within " +
                      seconds(o.join_timeout));
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    std::optional<std::string> failure;
    self->request(all[0], remaining_until(deadline), mesh_atom::value, mailbox_)
        .receive([] {},
                 [&](caf::error& e) {
                   failure = "the processes did not all connect to one another within " +
                             seconds(o.join_timeout) + " (" + system_->render(e) + ")";
                 });
    if (failure) throw error(*failure);
  }

  /// Whether the middleman has a connection of its own to `node` (not a route through rank 0).
  bool directly_connected(caf::scoped_actor& self, const caf::node_id& node,
                          std::chrono::steady_clock::time_point deadline) {
    bool direct = false;
    self->request(system_->middleman().actor_handle(), remaining_until(deadline), caf::get_atom::value, node)
        .receive([&](const caf::node_id&, const std::string& host, std::uint16_t) { direct = !host.empty(); },
                 [](caf::error&) {});
    return direct;
  }

  std::int64_t wait_for_peers(std::chrono::steady_clock::time_point deadline,
                              std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    if (!state_->changed.wait_until(lock, deadline,
                                    [this] { return state_->formed || state_->join_error; }))
      throw error("only " + std::to_string(1 + std::count_if(state_->peers.begin() + 1, state_->peers.end(),
                                                          [](const caf::actor& a) { return bool(a); })) +
                  " of " + std::to_string(state_->inbox.size()) + " processes joined within " +
                  seconds(timeout));
    if (state_->join_error) throw error(*state_->join_error);
    return 0;
  }

  /// This process's steady clock minus rank 0's, from the round trip with the least delay.
  std::int64_t clock_offset(caf::scoped_actor& self, const caf::actor& root) {
    std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max(), offset = 0;
    for (int i = 0; i < 5; ++i) {
      const std::int64_t sent = steady_ns();
      self->request(root, std::chrono::seconds(10), clock_atom::value)
          .receive(
              [&](std::int64_t theirs) {
                const std::int64_t back = steady_ns();
                if (back - sent < best_rtt) {
                  best_rtt = back - sent;
                  offset = (sent + back) / 2 - theirs;
                }
              },
              [&](caf::error&) {});
    }
    return offset;
  }

  std::shared_ptr<node_state> state_;
  bool tls_ = false;
  caf::actor_system_config config_;
  std::optional<caf::actor_system> system_;
  caf::actor mailbox_;
};

} // namespace

std::unique_ptr<process_group> join_processes(const process_group_options& o) {
  if (o.size < 2) throw error("join_processes: a job of " + std::to_string(o.size) + " processes");
  if (o.rank < 0 || o.rank >= o.size)
    throw error("join_processes: rank " + std::to_string(o.rank) + " outside a job of " +
                std::to_string(o.size));
  find_process_backend(o.collective_backend); // a name this build lacks fails before joining
  if (o.tls.any()) check_tls_files(o.tls);
  if (o.job_token.empty() && !loopback(o.master_host) && o.rank == 0) {
    const std::string text =
        "this job has no job token: any process that can reach " + o.master_host + ":" +
        std::to_string(o.master_port) + " and knows the program and flags can join it as a "
        "rank, send it gradients and receive its parameters; give every process the same "
        "--job-token-file (pe-actor-launch makes one for the processes it starts)";
    say_warning(o.on_warning, text);
  }
  auto transport = std::make_unique<caf_transport>(o);
  const std::int64_t offset = transport->join(o);
  return std::make_unique<process_group>(std::move(transport), offset, std::chrono::minutes(5), o);
}

} // namespace pe
