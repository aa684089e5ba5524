#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "graph/proto.hpp"

namespace pe {

/// Paddle's parameter files, read and written byte-compatibly.
///
/// One variable (lod_tensor.cc SerializeToStream, tensor_util.cc TensorToStream) is:
/// uint32 version 0; uint64 LoD level count, each level as uint64 byte size + size_t offsets;
/// uint32 version 0; int32 byte size of a TensorDesc proto (data_type, dims); the proto; the
/// raw little-endian elements. save_vars / save_persistables write one such file per variable,
/// named by the variable; save_combine (and a .pdiparams) concatenates the variables in
/// sorted-name order and stores no names. Parameters carry no LoD: a file with LoD levels is
/// rejected.
///
/// Every read is checked against what the program declares and against the file's size
/// before anything is allocated; every error names the file and the variable.

/// One persistable as the program declares it: what its file must hold.
struct param_spec {
  std::string name;
  dtype type;
  shape_t dims; ///< -1 matches any size
};

using param_map = std::map<std::string, tensor, std::less<>>;

/// The persistable LoD tensors of block 0 (not the feed and fetch holders), sorted by name:
/// what save_persistables writes.
std::vector<param_spec> persistable_specs(const proto::ProgramDesc& program);

/// The persistables that forward ops read, sorted by name: what save_inference_model writes
/// (for an inference program, every persistable).
std::vector<param_spec> forward_param_specs(const proto::ProgramDesc& program);

/// One variable's bytes in Paddle's format.
std::string serialize_param(const tensor& value);

/// Reads one variable's file; throws pe::error naming `path` and `expected.name` when it
/// is truncated, has another version, LoD levels, a TensorDesc that fails to parse, another
/// dtype or dims than `expected`, or trailing bytes.
tensor read_param_file(const std::string& path, const param_spec& expected);

/// Writes one variable's file; throws pe::error naming the file when it cannot be written.
void write_param_file(const std::string& path, const tensor& value);

/// Reads a combined file (save_combine, .pdiparams). It has no names: the candidate whose
/// variable count equals the file's gives them, in its (sorted) order. Throws pe::error
/// saying what was found and what was expected when no candidate fits, and as
/// read_param_file for a bad variable.
param_map read_combined_params(const std::string& path,
                               const std::vector<std::vector<param_spec>>& candidates);

/// Writes `values` as one combined file, in sorted-name order.
void write_combined_params(const std::string& path, const param_map& values);

/// The persistables of `program` from `path`: a directory with one file per variable, or a
/// combined file. Either holds every persistable (persistable_specs) or only the ones the
/// forward ops read (forward_param_specs); the others keep their values. Throws pe::error
/// for a missing variable or a bad file.
param_map load_params(const std::string& path, const proto::ProgramDesc& program);

/// Writes DIR/<name> for every value (Paddle's load_vars and paddle.static.load read the
/// directory), creating DIR. Throws pe::error naming the file that cannot be written.
void save_params(const std::string& dir, const param_map& values);

} // namespace pe
