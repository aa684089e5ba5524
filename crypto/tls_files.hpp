#pragma once

#include <string>

namespace pe {

/// The files a process presents and trusts on TLS links between the job's processes: its
/// certificate (PEM, chain allowed), its private key (PEM, unencrypted), and the job's CA
/// certificate that every peer's certificate must be signed by.
struct tls_files {
  std::string certificate;
  std::string key;
  std::string ca;

  /// Whether any of the three is given.
  bool any() const { return !certificate.empty() || !key.empty() || !ca.empty(); }
};

/// Checks, before any connection, what CAF's OpenSSL module would otherwise find out in the
/// middle of a handshake (where it can only drop the connection): that all three files are
/// given and readable as PEM, that the key belongs to the certificate, and that the
/// certificate is signed by the CA (so the peers, which check against the same CA, will
/// accept it). Throws pe::error naming the flag, the file and OpenSSL's reason.
void check_tls_files(const tls_files& files);

} // namespace pe
