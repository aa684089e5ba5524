#include "graph/exec/param_files.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "graph/op_registry.hpp"
#include "graph/op_role.hpp"
#include "graph/sub_blocks.hpp"

namespace pe {

namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t format_version = 0;

std::string quoted(const std::string& name) {
  return "'" + name + "'";
}

/// Where a record is, for messages: "FILE: variable 'NAME'".
std::string where(const std::string& path, const std::string& var) {
  return path + ": variable " + var;
}

/// A record's header: the TensorDesc and where its elements start.
struct record {
  proto::VarType::TensorDesc desc;
  std::uint64_t data_offset = 0;
  std::uint64_t data_bytes = 0;
};

/// Reads records from a file whose size is known, checking every length against what is
/// left before reading or allocating anything.
class record_reader {
 public:
  explicit record_reader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    std::error_code failure;
    size_ = fs::file_size(path, failure);
    if (!in_ || failure || fs::is_directory(path))
      throw error(path + ": cannot read the parameter file");
  }

  std::uint64_t left() const { return size_ - pos_; }
  bool at_end() const { return pos_ == size_; }

  /// The next record's header; `var` names it in messages. Leaves the position at its data.
  record header(const std::string& var) {
    check_version(var, "LoD");
    const auto levels = take<std::uint64_t>(var, "the LoD level count");
    if (levels != 0)
      throw error(where(path_, var) + ": has " + std::to_string(levels) +
                  " LoD levels; parameters carry none");
    check_version(var, "tensor");
    const auto desc_size = take<std::int32_t>(var, "the TensorDesc size");
    if (desc_size < 0)
      throw error(where(path_, var) + ": negative TensorDesc size " + std::to_string(desc_size));
    if (static_cast<std::uint64_t>(desc_size) > left())
      throw error(where(path_, var) + ": truncated: the TensorDesc needs " +
                  std::to_string(desc_size) + " bytes, " + std::to_string(left()) + " are left");
    std::string bytes(static_cast<std::size_t>(desc_size), '\0');
    read(bytes.data(), bytes.size());
    record r;
    // ParsePartial and our own check: ParseFromString logs missing fields to stderr.
    if (!r.desc.ParsePartialFromString(bytes))
      throw error(where(path_, var) + ": the TensorDesc does not parse");
    if (!r.desc.IsInitialized())
      throw error(where(path_, var) + ": the TensorDesc lacks " + r.desc.InitializationErrorString());
    const auto type = static_cast<dtype>(r.desc.data_type());
    if (size_of(type) == 0)
      throw error(where(path_, var) + ": unknown data type " + std::to_string(r.desc.data_type()));
    for (auto d : r.desc.dims())
      if (d < 0) throw error(where(path_, var) + ": negative dimension " + std::to_string(d));
    // The element count, stopped once it exceeds what the bytes left hold: no overflow.
    const std::uint64_t most = left() / size_of(type);
    const auto& dims = r.desc.dims();
    std::uint64_t count = std::find(dims.begin(), dims.end(), 0) != dims.end() ? 0 : 1;
    for (auto d : dims) {
      if (count > most) break;
      const auto n = static_cast<std::uint64_t>(d);
      count = n != 0 && count > most / n ? most + 1 : count * n;
    }
    if (count > most)
      throw error(where(path_, var) + ": truncated: " + to_string(type) + " " +
                  to_string(dims_of(r.desc)) + " needs more than the " + std::to_string(left()) +
                  " bytes left");
    r.data_offset = pos_;
    r.data_bytes = count * size_of(type);
    return r;
  }

  void skip(std::uint64_t bytes) {
    pos_ += bytes;
    in_.seekg(static_cast<std::streamoff>(pos_));
  }

  /// Reads `r`'s elements, which header() checked to be in the file.
  tensor data(const record& r, const std::string& var) {
    tensor t(static_cast<dtype>(r.desc.data_type()), dims_of(r.desc));
    in_.seekg(static_cast<std::streamoff>(r.data_offset));
    pos_ = r.data_offset;
    if (!read(t.raw(), r.data_bytes))
      throw error(where(path_, var) + ": cannot read its " + std::to_string(r.data_bytes) +
                  " bytes of data");
    return t;
  }

  static shape_t dims_of(const proto::VarType::TensorDesc& desc) {
    return {desc.dims().begin(), desc.dims().end()};
  }

 private:
  bool read(void* into, std::uint64_t bytes) {
    in_.read(static_cast<char*>(into), static_cast<std::streamsize>(bytes));
    pos_ += bytes;
    return static_cast<bool>(in_);
  }

  template <class T>
  T take(const std::string& var, const char* what) {
    if (left() < sizeof(T))
      throw error(where(path_, var) + ": truncated: " + what + " needs " +
                  std::to_string(sizeof(T)) + " bytes, " + std::to_string(left()) + " are left");
    T value{};
    read(&value, sizeof(T));
    return value;
  }

  /// `part`: "LoD" or "tensor", the two headers that start with a version.
  void check_version(const std::string& var, const std::string& part) {
    const auto version = take<std::uint32_t>(var, ("the " + part + " version").c_str());
    if (version != format_version)
      throw error(where(path_, var) + ": " + part + " version " + std::to_string(version) +
                  ", expected " + std::to_string(format_version));
  }

  std::string path_;
  std::ifstream in_;
  std::uint64_t size_ = 0;
  std::uint64_t pos_ = 0;
};

/// Throws unless the record's dtype and dims are what the program declares.
void check_matches(const record& r, const param_spec& expected, const std::string& path) {
  const auto type = static_cast<dtype>(r.desc.data_type());
  const shape_t dims = record_reader::dims_of(r.desc);
  if (type != expected.type || !dims_compatible(dims, expected.dims))
    throw error(where(path, quoted(expected.name)) + ": holds " + to_string(type) + " " +
                to_string(dims) + " but the program declares " + to_string(expected.type) + " " +
                to_string(expected.dims));
}

/// "'a', 'b'".
std::string names_of(const std::vector<param_spec>& specs) {
  std::string text;
  for (const auto& s : specs) text += (text.empty() ? "" : ", ") + quoted(s.name);
  return text;
}

/// How a combined file's k-th record is named before the count tells which candidate holds:
/// "record 3 ('fc_1.b_0')", or "record 3 ('x' or 'y')" when the candidates disagree.
std::string record_name(std::size_t k, const std::vector<std::vector<param_spec>>& candidates) {
  std::set<std::string> names;
  for (const auto& c : candidates)
    if (k < c.size()) names.insert(quoted(c[k].name));
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : " or ") + n;
  return "record " + std::to_string(k + 1) + (text.empty() ? "" : " (" + text + ")");
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush())
    throw error(path + ": cannot write the parameter file: " + std::strerror(errno));
}

template <class T>
void append(std::string& bytes, T value) {
  bytes.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::vector<param_spec> specs_where(const proto::ProgramDesc& program,
                                    const std::function<bool(const std::string&)>& keep) {
  std::vector<param_spec> specs;
  for (const auto& v : program.blocks(0).vars()) {
    if (!v.persistable() || v.type().type() != proto::VarType::LOD_TENSOR || !keep(v.name()))
      continue;
    const auto& t = v.type().lod_tensor().tensor();
    specs.push_back(
        {v.name(), static_cast<dtype>(t.data_type()), {t.dims().begin(), t.dims().end()}});
  }
  std::sort(specs.begin(), specs.end(),
            [](const param_spec& a, const param_spec& b) { return a.name < b.name; });
  return specs;
}

} // namespace

std::vector<param_spec> persistable_specs(const proto::ProgramDesc& program) {
  return specs_where(program, [](const std::string&) { return true; });
}

std::vector<param_spec> forward_param_specs(const proto::ProgramDesc& program) {
  std::set<std::string, std::less<>> read;
  for (const auto& op : program.blocks(0).ops()) {
    const op_schema* schema = op_registry::global().find(op.type());
    if (role_of(op) != op_role::forward || (schema != nullptr && schema->host_op)) continue;
    for (const auto& name : accesses_of(program, 0, op).reads) read.insert(name); // a sub-block's too
  }
  return specs_where(program, [&read](const std::string& name) { return read.contains(name); });
}

std::string serialize_param(const tensor& value) {
  proto::VarType::TensorDesc desc;
  desc.set_data_type(static_cast<proto::VarType::Type>(value.type()));
  for (auto d : value.shape()) desc.add_dims(d);
  const std::string proto_bytes = desc.SerializeAsString();
  std::string bytes;
  append(bytes, format_version);
  append(bytes, std::uint64_t{0}); // no LoD levels
  append(bytes, format_version);
  append(bytes, static_cast<std::int32_t>(proto_bytes.size()));
  bytes += proto_bytes;
  bytes.append(static_cast<const char*>(value.raw()), value.bytes());
  return bytes;
}

tensor read_param_file(const std::string& path, const param_spec& expected) {
  record_reader in(path);
  const std::string var = quoted(expected.name);
  const record r = in.header(var);
  check_matches(r, expected, path);
  if (r.data_bytes != in.left())
    throw error(where(path, var) + ": " + std::to_string(in.left() - r.data_bytes) +
                " trailing bytes after its data");
  return in.data(r, var);
}

void write_param_file(const std::string& path, const tensor& value) {
  write_bytes(path, serialize_param(value));
}

param_map read_combined_params(const std::string& path,
                               const std::vector<std::vector<param_spec>>& candidates) {
  std::size_t most = 0;
  for (const auto& c : candidates) most = std::max(most, c.size());
  record_reader in(path);
  std::vector<record> records;
  while (!in.at_end()) {
    if (records.size() < most) {
      records.push_back(in.header(record_name(records.size(), candidates)));
    } else {
      // More than any candidate holds: whole records are counted for the message below,
      // anything else is trailing bytes.
      const std::uint64_t left = in.left();
      try {
        records.push_back(in.header(""));
      } catch (const error&) {
        throw error(path + ": " + std::to_string(left) + " trailing bytes after " +
                    std::to_string(records.size()) + " variables");
      }
    }
    in.skip(records.back().data_bytes);
  }
  auto fits = std::find_if(candidates.begin(), candidates.end(),
                           [&](const auto& c) { return c.size() == records.size(); });
  if (fits == candidates.end()) {
    std::string expected;
    for (const auto& c : candidates)
      expected += (expected.empty() ? "" : " or ") + std::to_string(c.size()) + " (" +
                  names_of(c) + ")";
    throw error(path + ": holds " + std::to_string(records.size()) +
                " variables; expected " + expected);
  }
  for (std::size_t k = 0; k < records.size(); ++k) check_matches(records[k], (*fits)[k], path);
  param_map values;
  for (std::size_t k = 0; k < records.size(); ++k)
    values[(*fits)[k].name] = in.data(records[k], quoted((*fits)[k].name));
  return values;
}

void write_combined_params(const std::string& path, const param_map& values) {
  std::string bytes;
  for (const auto& [name, value] : values) bytes += serialize_param(value);
  write_bytes(path, bytes);
}

param_map load_params(const std::string& path, const proto::ProgramDesc& program) {
  const auto all = persistable_specs(program);
  const auto forward = forward_param_specs(program);
  std::error_code failure;
  if (!fs::is_directory(path, failure)) {
    if (!fs::exists(path, failure)) throw error(path + ": no such parameter file or directory");
    // forward is a subset of all: the same count means the same list.
    if (forward.size() == all.size()) return read_combined_params(path, {all});
    return read_combined_params(path, {all, forward});
  }
  // A directory: every persistable's file, or else every forward parameter's.
  auto present = [&path](const param_spec& s) { return fs::exists(fs::path(path) / s.name); };
  const bool whole = std::all_of(all.begin(), all.end(), present);
  if (!whole)
    for (const auto& s : forward)
      if (!present(s))
        throw error((fs::path(path) / s.name).string() + ": missing variable " + quoted(s.name) +
                    "; the directory must hold every persistable (" + names_of(all) +
                    ") or every parameter the forward ops read (" + names_of(forward) + ")");
  param_map values;
  for (const auto& s : whole ? all : forward)
    values[s.name] = read_param_file((fs::path(path) / s.name).string(), s);
  return values;
}

void save_params(const std::string& dir, const param_map& values) {
  std::error_code failure;
  fs::create_directories(dir, failure);
  if (failure) throw error(dir + ": cannot create the parameter directory: " + failure.message());
  for (const auto& [name, value] : values) write_param_file((fs::path(dir) / name).string(), value);
}

} // namespace pe
