// A guard around CAF 0.17's use of OpenSSL: one stranger's failed TLS handshake must not
// break the job's other connections.
//
// OpenSSL keeps one error queue per thread, and SSL_get_error() reports SSL_ERROR_SSL for any
// I/O call that returns <= 0 while the queue holds an error, whatever that call's own reason
// ("the current thread's error queue must be empty before the TLS/SSL I/O operation is
// attempted"). CAF 0.17's OpenSSL session (libcaf_openssl, openssl/session.cpp) never clears
// it: a handshake that fails (a peer whose certificate the CA did not sign, a port scanner)
// leaves its errors queued on the multiplexer thread, and the next read on a healthy
// connection that would merely block (SSL_ERROR_WANT_READ) is then taken for a failure and
// the connection closed: the job's processes lose each other (remote_link_unreachable).
// Measured: ten `openssl s_client` connections to rank 0's port broke a 2-process TLS job
// within seconds.
//
// The fix without patching CAF: this program defines the four I/O entry points CAF calls
// (SSL_read, SSL_write, SSL_accept, SSL_connect). The dynamic linker binds libcaf_openssl's
// calls to these definitions of the executable; each clears the calling thread's queue and
// calls OpenSSL's own function (the next definition, dlsym(RTLD_NEXT)). Nothing else changes.
#include "crypto/openssl_io_guard.hpp"

#include <cstdio>
#include <cstdlib>

#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace {

/// OpenSSL's own definition of `name`, the one after this program's.
template <class Function>
Function openssl_function(const char* name) {
  void* found = ::dlsym(RTLD_NEXT, name);
  if (found == nullptr) {
    std::fprintf(stderr, "pe-actor: cannot find OpenSSL's %s (libssl not loaded?)\n", name);
    std::abort();
  }
  return reinterpret_cast<Function>(found);
}

} // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buffer, int size) {
  static const auto next = openssl_function<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return next(ssl, buffer, size);
}

int SSL_write(SSL* ssl, const void* buffer, int size) {
  static const auto next = openssl_function<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return next(ssl, buffer, size);
}

int SSL_accept(SSL* ssl) {
  static const auto next = openssl_function<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return next(ssl);
}

int SSL_connect(SSL* ssl) {
  static const auto next = openssl_function<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return next(ssl);
}

} // extern "C"

namespace pe {

bool openssl_io_guard_installed() {
  // Interposed only when this program's definitions come first: true when OpenSSL's
  // SSL_read as the program resolves it is this file's.
  return ::dlsym(RTLD_DEFAULT, "SSL_read") == reinterpret_cast<void*>(&SSL_read);
}

} // namespace pe
