#include "test_pki.hpp"

#include <cstdlib>
#include <stdexcept>

namespace pe::testing {

namespace {

void openssl(const std::string& args, const std::filesystem::path& dir) {
  const std::string command = "cd '" + dir.string() + "' && openssl " + args + " >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0)
    throw std::runtime_error("test PKI: `openssl " + args + "` failed");
}

/// A CA named `name`: name.pem, name.key.
void make_ca(const std::string& name, const std::filesystem::path& dir) {
  openssl("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -subj /CN=" +
              name + " -keyout " + name + ".key -out " + name + ".pem",
          dir);
}

/// A certificate `name`.pem with key `name`.key signed by `ca`.
tls_files make_cert(const std::string& name, const std::string& ca, const std::filesystem::path& dir) {
  openssl("req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + name + " -keyout " +
              name + ".key -out " + name + ".csr",
          dir);
  openssl("x509 -req -days 3650 -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
              ".key -CAcreateserial -out " + name + ".pem",
          dir);
  return {(dir / (name + ".pem")).string(), (dir / (name + ".key")).string(), (dir / (ca + ".pem")).string()};
}

} // namespace

test_pki make_test_pki(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  make_ca("job-ca", dir);
  make_ca("other-ca", dir);
  test_pki pki;
  pki.rank0 = make_cert("rank0", "job-ca", dir);
  pki.rank1 = make_cert("rank1", "job-ca", dir);
  pki.stranger = make_cert("stranger", "other-ca", dir);
  pki.job_ca_key = (dir / "job-ca.key").string();
  return pki;
}

} // namespace pe::testing
