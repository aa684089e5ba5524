#pragma once

#include <string>

#include "graph/proto.hpp"

namespace pe {

enum class program_format { binary, text };

/// Reads a ProgramDesc saved by Paddle (`__model__`, `.pdmodel`, serialize_to_string) or by
/// us, in binary or protobuf text format (detected). Throws pe::error naming the file when it
/// cannot be read or parsed. Does not validate: see validate_program.
proto::ProgramDesc load_program(const std::string& path);

/// Parses bytes in either format; throws pe::error with `origin` in the message.
proto::ProgramDesc parse_program(const std::string& bytes, const std::string& origin);

/// Writes `program`; throws pe::error when the file cannot be written.
void save_program(const proto::ProgramDesc& program, const std::string& path,
                  program_format format = program_format::binary);

/// Serialises in the given format.
std::string serialize_program(const proto::ProgramDesc& program, program_format format);

/// A program's identity: FNV-1a (64 bits, 16 hex digits) of its binary serialization, the
/// same in every process of one build (jobs and checkpoints compare it).
std::string program_fingerprint(const proto::ProgramDesc& program);

} // namespace pe
