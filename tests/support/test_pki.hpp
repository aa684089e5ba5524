#pragma once

#include <filesystem>
#include <string>

#include "crypto/tls_files.hpp"

namespace pe::testing {

/// Two little certificate authorities made for a test with the openssl command (EC P-256
/// keys, valid ten years, made fresh so nothing expires in the tree): the job's CA with two
/// process certificates, and another CA with one, as a stranger would bring.
struct test_pki {
  tls_files rank0;    ///< signed by the job's CA
  tls_files rank1;    ///< signed by the job's CA
  tls_files stranger; ///< signed by the other CA, trusting the other CA
  std::string job_ca_key;
};

/// Makes the files under `dir` (created). Throws std::runtime_error when openssl fails.
test_pki make_test_pki(const std::filesystem::path& dir);

} // namespace pe::testing
