#include "crypto/random_bytes.hpp"

#include <limits>

#include <openssl/rand.h>

#include "core/error.hpp"

namespace pe {

std::string random_bytes(std::size_t count) {
  std::string out(count, '\0');
  if (count > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(count)) != 1)
    throw error("the system's random source (OpenSSL RAND_bytes) failed; no nonce or token "
                "can be made");
  return out;
}

} // namespace pe
