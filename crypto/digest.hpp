#pragma once

#include <string>
#include <string_view>

namespace pe {

/// SHA-256 of `bytes`, as 32 raw bytes.
std::string sha256(std::string_view bytes);

/// SHA-256 of the file at `path`, read in pieces, as 64 lowercase hex digits. Throws
/// pe::error naming the path when it cannot be opened or read.
std::string sha256_file_hex(const std::string& path);

/// HMAC-SHA256 of `message` under `key`, as 32 raw bytes.
std::string hmac_sha256(std::string_view key, std::string_view message);

/// Whether `a` and `b` are equal, in time that depends on their length only: comparing a
/// proof an attacker sent with the expected one must not tell him how many bytes matched.
bool constant_time_equal(std::string_view a, std::string_view b);

/// `bytes` as lowercase hex digits.
std::string to_hex(std::string_view bytes);

} // namespace pe
