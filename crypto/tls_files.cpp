#include "crypto/tls_files.hpp"

#include <memory>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "core/error.hpp"

namespace pe {

namespace {

/// OpenSSL's queued reasons, oldest first, then cleared.
std::string openssl_reason() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(code, line, sizeof line);
    text += (text.empty() ? "" : "; ") + std::string(line);
  }
  return text.empty() ? "no reason given" : text;
}

} // namespace

void check_tls_files(const tls_files& f) {
  const auto missing = [](const char* flag) {
    throw error(std::string("TLS between processes needs --tls-cert, --tls-key and --tls-ca "
                            "together; ") + flag + " is not given");
  };
  if (f.certificate.empty()) missing("--tls-cert");
  if (f.key.empty()) missing("--tls-key");
  if (f.ca.empty()) missing("--tls-ca");
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context(SSL_CTX_new(TLS_method()), &SSL_CTX_free);
  if (!context)
    throw error("OpenSSL cannot make a TLS context: " + openssl_reason());
  const auto fail = [](const std::string& flag, const std::string& path, const std::string& what) {
    throw error(flag + " " + path + ": " + what + " (" + openssl_reason() + ")");
  };
  // The key first: loaded alone it is only read; the certificate after it replaces a key
  // that does not match, which check_private_key then names.
  if (SSL_CTX_use_PrivateKey_file(context.get(), f.key.c_str(), SSL_FILETYPE_PEM) != 1)
    fail("--tls-key", f.key, "not a readable unencrypted PEM private key");
  if (SSL_CTX_use_certificate_chain_file(context.get(), f.certificate.c_str()) != 1)
    fail("--tls-cert", f.certificate, "not a readable PEM certificate");
  if (SSL_CTX_check_private_key(context.get()) != 1)
    fail("--tls-key", f.key, "is not the key of the certificate " + f.certificate);
  if (SSL_CTX_load_verify_locations(context.get(), f.ca.c_str(), nullptr) != 1)
    fail("--tls-ca", f.ca, "not a readable PEM CA certificate");
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> check(X509_STORE_CTX_new(),
                                                                        &X509_STORE_CTX_free);
  STACK_OF(X509)* chain = nullptr; // the intermediates after the leaf in --tls-cert
  SSL_CTX_get0_chain_certs(context.get(), &chain);
  if (!check || X509_STORE_CTX_init(check.get(), SSL_CTX_get_cert_store(context.get()),
                                    SSL_CTX_get0_certificate(context.get()), chain) != 1)
    throw error("OpenSSL cannot check a certificate: " + openssl_reason());
  if (X509_verify_cert(check.get()) != 1)
    throw error("--tls-cert " + f.certificate + " is not accepted by --tls-ca " + f.ca + ": " +
                X509_verify_cert_error_string(X509_STORE_CTX_get_error(check.get())) +
                " (the peers check this process's certificate against the same CA and would "
                "refuse it)");
}

} // namespace pe
