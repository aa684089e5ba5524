#include "crypto/digest.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/error.hpp"

namespace pe {

namespace {

using md_context = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

md_context sha256_context() {
  md_context context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
    throw error("OpenSSL cannot start a SHA-256 digest");
  return context;
}

std::string finish(EVP_MD_CTX* context) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context, out, &size) != 1)
    throw error("OpenSSL cannot finish a SHA-256 digest");
  return std::string(reinterpret_cast<const char*>(out), size);
}

} // namespace

std::string sha256(std::string_view bytes) {
  auto context = sha256_context();
  if (EVP_DigestUpdate(context.get(), bytes.data(), bytes.size()) != 1)
    throw error("OpenSSL cannot digest with SHA-256");
  return finish(context.get());
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw error(path + ": cannot open to check its digest: " + std::strerror(errno));
  auto context = sha256_context();
  std::vector<char> piece(1 << 20);
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    if (in.gcount() > 0 &&
        EVP_DigestUpdate(context.get(), piece.data(), static_cast<std::size_t>(in.gcount())) != 1)
      throw error("OpenSSL cannot digest with SHA-256");
  }
  if (in.bad())
    throw error(path + ": cannot read to check its digest");
  return to_hex(finish(context.get()));
}

std::string hmac_sha256(std::string_view key, std::string_view message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), out,
           &size) == nullptr)
    throw error("OpenSSL cannot compute an HMAC-SHA256");
  return std::string(reinterpret_cast<const char*>(out), size);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

} // namespace pe
