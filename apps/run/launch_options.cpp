#include "apps/run/launch_options.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace pe {

namespace {

/// The environment variable `name`, or nullopt when it is not set.
std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

/// `text` as an int >= `least`, or nullopt.
std::optional<int> number(std::string_view text, int least) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < least)
    return std::nullopt;
  return value;
}

/// The environment variable `name` as an int >= `least`; nullopt when it is not set.
std::optional<int> env_number(const char* name, int least, const char* expected) {
  const auto text = env(name);
  if (!text)
    return std::nullopt;
  const auto value = number(*text, least);
  if (!value)
    throw error(std::string(name) + "=" + *text + " in the environment: expected " + expected);
  return value;
}

/// PADDLE_TRAINER_ENDPOINTS, parsed; empty when it is not set.
std::vector<endpoint> env_endpoints() {
  const auto text = env("PADDLE_TRAINER_ENDPOINTS");
  std::vector<endpoint> endpoints;
  if (!text)
    return endpoints;
  std::string_view rest = *text;
  while (true) {
    const auto comma = rest.find(',');
    endpoints.push_back(parse_endpoint(std::string(rest.substr(0, comma)),
                                       "PADDLE_TRAINER_ENDPOINTS entry " +
                                           std::to_string(endpoints.size())));
    if (comma == std::string_view::npos)
      return endpoints;
    rest.remove_prefix(comma + 1);
  }
}

/// A value from a flag or from the environment, with the name of where it came from.
struct sourced {
  int value;
  std::string source; ///< "--nnodes 2", "PADDLE_TRAINERS_NUM=2"
};

/// The flag's value, else the environment's; they must agree when both are given.
std::optional<sourced> reconcile(const std::optional<int>& flag, const char* flag_name,
                                 const std::optional<sourced>& environment) {
  if (!flag)
    return environment;
  sourced given{*flag, std::string(flag_name) + " " + std::to_string(*flag)};
  if (environment && environment->value != *flag)
    throw error(given.source + " disagrees with " + environment->source + " in the environment");
  return given;
}

} // namespace

std::string endpoint::text() const {
  return (host.find(':') == std::string::npos ? host : "[" + host + "]") + ":" +
         std::to_string(port);
}

endpoint parse_endpoint(const std::string& text, const std::string& what) {
  const auto malformed = [&] {
    return error(what + ": expected HOST:PORT such as 10.0.0.1:29500 (an IPv6 host in "
                 "brackets: [::1]:29500), got '" + text + "'");
  };
  std::size_t colon;
  endpoint e;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw malformed();
    e.host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.find(':');
    if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
      throw malformed();
    e.host = text.substr(0, colon);
  }
  const std::string port = text.substr(colon + 1);
  if (e.host.empty() || port.empty())
    throw malformed();
  const auto value = number(port, 0);
  if (!value || *value < 1 || *value > 65535)
    throw error(what + " " + text + ": the port must be 1..65535, got '" + port + "'");
  e.port = *value;
  return e;
}

launch_config resolve_launch(const launch_flags& flags) {
  if (flags.nnodes && *flags.nnodes < 1)
    throw error("--nnodes must be positive, got " + std::to_string(*flags.nnodes));
  if (flags.node_rank && *flags.node_rank < 0)
    throw error("--node-rank must be 0 or more, got " + std::to_string(*flags.node_rank));

  // The environment's process count: PADDLE_TRAINERS_NUM, else the endpoints' count.
  const auto endpoints = env_endpoints();
  std::optional<sourced> env_nnodes;
  if (auto count = env_number("PADDLE_TRAINERS_NUM", 1, "a positive number of processes"))
    env_nnodes = sourced{*count, "PADDLE_TRAINERS_NUM=" + std::to_string(*count)};
  if (!endpoints.empty()) {
    const auto listed = static_cast<int>(endpoints.size());
    if (env_nnodes && env_nnodes->value != listed)
      throw error("PADDLE_TRAINER_ENDPOINTS lists " + std::to_string(listed) +
                  " endpoints in the environment, but " + env_nnodes->source);
    env_nnodes = sourced{listed, "PADDLE_TRAINER_ENDPOINTS (" + std::to_string(listed) +
                                     " endpoints)"};
  }
  std::optional<sourced> env_rank;
  if (auto rank = env_number("PADDLE_TRAINER_ID", 0, "a node rank, 0 or more"))
    env_rank = sourced{*rank, "PADDLE_TRAINER_ID=" + std::to_string(*rank)};

  launch_config c;
  const auto nnodes = reconcile(flags.nnodes, "--nnodes", env_nnodes);
  const auto rank = reconcile(flags.node_rank, "--node-rank", env_rank);
  c.nnodes = nnodes ? nnodes->value : 1;
  c.node_rank = rank ? rank->value : 0;
  if (c.node_rank >= c.nnodes)
    throw error(rank->source + " is out of range: " + std::to_string(c.nnodes) +
                (c.nnodes == 1 ? " process" : " processes") +
                (nnodes ? " (" + nnodes->source + ")" : std::string(" (no --nnodes)")) +
                " have ranks 0.." + std::to_string(c.nnodes - 1));

  std::optional<endpoint> master;
  if (flags.master)
    master = parse_endpoint(*flags.master, "--master");
  if (!endpoints.empty()) {
    if (master && *master != endpoints.front())
      throw error("--master " + *flags.master + " disagrees with PADDLE_TRAINER_ENDPOINTS in "
                  "the environment, whose first entry (the master's) is " +
                  endpoints.front().text());
    master = endpoints.front();
  }
  if (const auto current = env("PADDLE_CURRENT_ENDPOINT")) {
    if (endpoints.empty())
      throw error("PADDLE_CURRENT_ENDPOINT is set in the environment without "
                  "PADDLE_TRAINER_ENDPOINTS to find it in");
    const auto mine = endpoints[static_cast<std::size_t>(c.node_rank)];
    if (parse_endpoint(*current, "PADDLE_CURRENT_ENDPOINT") != mine)
      throw error("PADDLE_CURRENT_ENDPOINT=" + *current + " is not entry " +
                  std::to_string(c.node_rank) + " of PADDLE_TRAINER_ENDPOINTS (" + mine.text() +
                  "), this process's as node rank " + std::to_string(c.node_rank));
  }
  if (c.nnodes > 1 && !master)
    throw error(nnodes->source + " needs --master HOST:PORT, the address where rank 0 waits "
                "for the others (or PADDLE_TRAINER_ENDPOINTS in the environment)");
  if (master) {
    c.master_host = master->host;
    c.master_port = master->port;
  }
  return c;
}

} // namespace pe
