#pragma once

#include <optional>
#include <string>

namespace pe {

/// The job's secret token for this process: the contents of --job-token-file `file` when
/// given (trailing newlines dropped; the file must not be readable by other users, as ssh
/// asks of a private key), else $PE_ACTOR_JOB_TOKEN (pe-actor-launch sets it for the ranks
/// it starts), else "" (an open job). Throws pe::error naming the file or the variable for a
/// token that cannot be read, is empty, or is shorter than 16 bytes (guessable).
std::string read_job_token(const std::optional<std::string>& file);

} // namespace pe
