#pragma once

namespace pe {

/// Makes sure that the process's TLS I/O starts every OpenSSL read, write and handshake with
/// an empty error queue (see openssl_io_guard.cpp), and says so. Call it where TLS links are
/// set up: the call is also what links the guard into the program.
bool openssl_io_guard_installed();

} // namespace pe
