#include "graph/program_io.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "core/error.hpp"

namespace pe {

namespace {

/// Text format is tried only for input that looks like text: garbage bytes must not be
/// half-parsed by the more lenient text parser.
bool looks_like_text(const std::string& bytes) {
  for (unsigned char c : bytes)
    if (c < 0x09 || (c > 0x0d && c < 0x20) || c == 0x7f) return false;
  return true;
}

/// Collects the text parser's complaints instead of letting protobuf log them to stderr.
class error_collector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (first_.empty())
      first_ = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) +
               ": " + message;
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

} // namespace

proto::ProgramDesc parse_program(const std::string& bytes, const std::string& origin) {
  proto::ProgramDesc program;
  if (bytes.empty()) throw error(origin + ": empty file, not a ProgramDesc");
  // ParsePartial and our own check: ParseFromString logs missing required fields to stderr.
  const bool parsed = program.ParsePartialFromString(bytes);
  if (parsed && program.IsInitialized()) return program;
  if (!looks_like_text(bytes))
    throw error(origin + ": not a valid binary ProgramDesc (" +
                (parsed ? "missing required fields: " + program.InitializationErrorString()
                        : std::string("truncated or corrupt")) +
                ")");
  program.Clear();
  google::protobuf::TextFormat::Parser parser;
  error_collector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(bytes, &program))
    throw error(origin + ": not a valid text ProgramDesc (" + errors.first() + ")");
  // Whitespace alone is a valid (empty) text message, but no program.
  if (program.blocks_size() == 0) throw error(origin + ": not a ProgramDesc (no blocks)");
  return program;
}

proto::ProgramDesc load_program(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot open program file '" + path + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw error("cannot read program file '" + path + "'");
  return parse_program(bytes.str(), "program file '" + path + "'");
}

std::string serialize_program(const proto::ProgramDesc& program, program_format format) {
  std::string out;
  bool ok = format == program_format::binary
                ? program.SerializeToString(&out)
                : google::protobuf::TextFormat::PrintToString(program, &out);
  if (!ok) throw error("cannot serialise the program (a required field is unset)");
  return out;
}

void save_program(const proto::ProgramDesc& program, const std::string& path,
                  program_format format) {
  std::string bytes = serialize_program(program, format);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw error("cannot open '" + path + "' for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw error("cannot write '" + path + "'");
}

std::string program_fingerprint(const proto::ProgramDesc& program) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : program.SerializeAsString()) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

} // namespace pe
