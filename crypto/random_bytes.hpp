#pragma once

#include <cstddef>
#include <string>

namespace pe {

/// `count` bytes from the operating system's cryptographic random source (OpenSSL's
/// RAND_bytes): nonces and job tokens, which an attacker must not predict. Throws pe::error
/// when the source fails (never falls back to a weaker one).
std::string random_bytes(std::size_t count);

} // namespace pe
