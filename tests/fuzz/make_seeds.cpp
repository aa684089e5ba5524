// Writes the fuzz targets' seed corpora into OUT/<target>/ (scripts/fuzz.sh runs it):
// - programs (binary and text): the builder's MLP and CNN (main, startup, test) with each
//   optimizer, plus a one-op program for every registered op type the models do not use,
//   found by trying shape families until validation accepts it; the grad ops through a
//   mean loss and append_backward. Exits 1 naming any op type no seed covers.
// - checkpoint.json records (format 2 with digests, format 1 without);
// - parameter files matching param_specs.hpp, .npy files of every dtype, idx files plain
//   and gzipped, tensor messages, inbox scripts and packets as CAF encodes them.
// Usage: make_seeds OUT
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <caf/binary_serializer.hpp>

#include "collectives/net/net_packet_wire.hpp"
#include "collectives/net/packet_frame.hpp"
#include "collectives/net/row_payload.hpp"
#include "collectives/net/tensor_bytes.hpp"
#include "core/error.hpp"
#include "core/selected_rows.hpp"
#include "data/npy.hpp"
#include "graph/backward.hpp"
#include "graph/attributes.hpp"
#include "graph/builder.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/models/cnn.hpp"
#include "graph/sync_batch_norm.hpp"
#include "graph/touched_rows.hpp"
#include "graph/models/mlp.hpp"
#include "graph/op_registry.hpp"
#include "graph/program_io.hpp"
#include "graph/validate.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/fuzz/param_specs.hpp"

namespace fs = std::filesystem;

namespace {

using namespace pe;

fs::path out_root;

void write_file(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = out_root / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw error("cannot write " + (dir / name).string());
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::set<std::string> covered;

void add_program(const std::string& name, const proto::ProgramDesc& program) {
  for (const auto& op : program.blocks(0).ops()) covered.insert(op.type());
  write_file("program_binary", name + ".pb", serialize_program(program, program_format::binary));
  write_file("program_text", name + ".txt", serialize_program(program, program_format::text));
}

void add_models() {
  for (const std::string optimizer : {"sgd", "momentum", "adam"}) {
    mlp_config mlp;
    mlp.input_width = 8;
    mlp.hidden = {6, 5};
    mlp.classes = 3;
    mlp.optimizer = optimizer;
    const model_programs m = build_mlp(mlp);
    add_program("mlp_" + optimizer + "_main", m.main);
    add_program("mlp_" + optimizer + "_startup", m.startup);
    add_program("mlp_" + optimizer + "_test", m.test);
    cnn_config cnn;
    cnn.image_side = 8;
    cnn.channels = {2, 3};
    cnn.fc = {4};
    cnn.classes = 3;
    cnn.optimizer = optimizer;
    const model_programs c = build_cnn(cnn);
    add_program("cnn_" + optimizer + "_main", c.main);
    add_program("cnn_" + optimizer + "_startup", c.startup);
    // As --sync-batch-norm runs it: the statistics' local sums, all-reduce and normalisation.
    if (optimizer == "momentum") add_program("cnn_sync_batch_norm_main", lower_sync_batch_norm(c.main, true));
  }
}

/// One shape family for single-op programs: the dtype and dims of an input by slot name.
struct family {
  shape_t dense;
  std::int64_t rows;
  std::int64_t channels;
};

std::pair<dtype, shape_t> input_for(const std::string& slot, const family& f) {
  if (slot == "Label" || slot == "Indices" || slot == "Ids") return {dtype::int64, {f.rows, 1}};
  if (slot == "LearningRate" || slot.ends_with("Pow")) return {dtype::fp32, {1}};
  if (slot == "Seed") return {dtype::int32, {1}};
  if (slot == "Scale" || slot == "Bias" || slot == "Mean" || slot == "Variance") return {dtype::fp32, {f.channels}};
  if (slot == "Filter") return {dtype::fp32, {f.channels, f.channels, 3, 3}};
  return {dtype::fp32, f.dense};
}

/// Required attributes need a value: the schema's typed placeholder, with list ones given
/// two elements (pool2d's ksize, ...), dtypes FP32, a permutation for transpose2's axis;
/// split gets num 2.
std::vector<std::pair<std::string, attribute>> attrs_for(const op_schema& schema) {
  std::vector<std::pair<std::string, attribute>> attrs;
  for (const auto& a : schema.attrs) {
    attribute value = a.value;
    if (a.name == "num") value = std::int32_t{2};
    else if (!a.required) continue;
    if (auto* ints = std::get_if<std::vector<std::int32_t>>(&value); ints && ints->empty())
      *ints = a.name == "axis" ? std::vector<std::int32_t>{1, 0} : std::vector<std::int32_t>{2, 2};
    if (a.name.ends_with("dtype")) value = static_cast<std::int32_t>(dtype::fp32);
    attrs.emplace_back(a.name, value);
  }
  return attrs;
}

struct op_seed {
  proto::ProgramDesc program;
  bool with_grad = false;
};

/// A program of one `type` op (with optional slots or without) over family `f`, validated;
/// with a mean loss and its backward when the op has a gradient. nullopt when refused.
std::optional<op_seed> single_op_program(const op_schema& schema, const family& f, bool optional_slots) {
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 1);
  slot_args inputs, outputs;
  for (const auto& slot : schema.inputs) {
    if (slot.dispensable && !optional_slots) continue;
    const auto [type, dims] = input_for(slot.name, f);
    const std::string name = b.unique_name("in_" + slot.name);
    // FP32 inputs are trainable parameters, so that append_backward emits the op's grad.
    const bool trainable = type == dtype::fp32 && slot.name != "LearningRate";
    proto::VarDesc& var = b.declare(b.main_block(), name, type, dims, trainable || slot.name == "LearningRate");
    var.set_is_parameter(trainable);
    var.set_stop_gradient(!trainable);
    inputs.push_back({slot.name, {name}});
  }
  for (const auto& slot : schema.outputs) {
    if (slot.dispensable && !optional_slots) continue;
    std::vector<std::string> names{b.unique_name("out_" + slot.name)};
    if (slot.duplicable) names.push_back(b.unique_name("out_" + slot.name)); // split's two parts
    outputs.push_back({slot.name, names});
  }
  try {
    proto::OpDesc& op = b.append_op(schema.type, inputs, outputs, attrs_for(schema));
    const std::string first_out = op.outputs_size() > 0 ? op.outputs(0).arguments(0) : "";
    validate_program(main);
    if (schema.make_grad && !first_out.empty()) {
      proto::ProgramDesc with_grad = main;
      try {
        proto::ProgramDesc grad_startup;
        program_builder g(with_grad, grad_startup, 1);
        append_backward(with_grad, g.mean(first_out));
        validate_program(with_grad);
        return op_seed{with_grad, true};
      } catch (const error&) {
        // The forward op alone still makes a seed.
      }
    }
    return op_seed{main, false};
  } catch (const error&) {
    return std::nullopt;
  }
}

void add_single_ops() {
  const std::vector<family> families = {
      {{4, 4}, 4, 4}, {{2, 4, 4, 4}, 2, 4}, {{4, 1}, 4, 1}, {{4}, 4, 4}, {{1}, 1, 1}, {{2, 4, 6, 6}, 2, 4}};
  const op_registry& registry = op_registry::global();
  for (const std::string& type : registry.types()) {
    if (covered.contains(type)) continue;
    const op_schema& schema = *registry.find(type);
    // The first program that validates, preferring one whose backward validates too.
    std::optional<std::pair<op_seed, std::string>> best;
    for (bool optional_slots : {false, true})
      for (const family& f : families) {
        if (best && best->first.with_grad) break;
        auto seed = single_op_program(schema, f, optional_slots);
        if (seed && (!best || seed->with_grad))
          best.emplace(std::move(*seed), "op_" + type + (optional_slots ? "_all_slots" : ""));
      }
    if (best) add_program(best->second, best->first.program);
  }
}

/// feed -> relu -> fetch, as a saved inference program holds them.
void add_feed_fetch() {
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 1);
  auto holder = [&](const char* name, proto::VarType::Type type) {
    auto& v = *b.main_block().add_vars();
    v.set_name(name);
    v.mutable_type()->set_type(type);
    v.set_persistable(true);
  };
  holder("feed", proto::VarType::FEED_MINIBATCH);
  holder("fetch", proto::VarType::FETCH_LIST);
  b.declare(b.main_block(), "x", dtype::fp32, {-1, 4}, false);
  b.append_op("feed", {{"X", {"feed"}}}, {{"Out", {"x"}}}, {{"col", std::int32_t{0}}});
  b.append_op("relu", {{"X", {"x"}}}, {{"Out", {"y"}}}, {});
  b.append_op("fetch", {{"X", {"y"}}}, {{"Out", {"fetch"}}}, {{"col", std::int32_t{0}}});
  validate_program(main);
  add_program("feed_relu_fetch", main);
}

/// paddle.static.nn.cond as Paddle lowers it: a conditional_block per branch, each running a
/// sub-block that writes a block-0 variable, and select_input taking the branch that ran.
void add_control_flow() {
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 1);
  b.data("x", {-1, 4}, dtype::fp32);
  auto& scopes = *b.main_block().add_vars();
  scopes.set_name("scopes");
  scopes.mutable_type()->set_type(proto::VarType::STEP_SCOPES);
  b.declare(b.main_block(), "a", dtype::fp32, {-1, 4}, false);
  b.declare(b.main_block(), "c", dtype::fp32, {-1, 4}, false);
  b.append_op("fill_constant", {}, {{"Out", {"flag"}}},
              {{"shape", std::vector<std::int64_t>{1}}, {"dtype", static_cast<std::int32_t>(dtype::boolean)},
               {"value", 1.f}});
  b.append_op("logical_not", {{"X", {"flag"}}}, {{"Out", {"other"}}}, {});
  const std::vector<std::pair<std::string, std::string>> branches = {{"flag", "a"}, {"other", "c"}};
  for (std::size_t k = 0; k < branches.size(); ++k) {
    proto::BlockDesc& sub = *main.add_blocks();
    sub.set_idx(static_cast<int>(k) + 1);
    sub.set_parent_idx(0);
    proto::OpDesc& op = *sub.add_ops();
    op.set_type(k == 0 ? "scale" : "relu");
    set_input(op, "X", {"x"});
    set_output(op, "Out", {branches[k].second});
    proto::OpDesc& cond = b.append_op("conditional_block", {{"Cond", {branches[k].first}}, {"Input", {"x"}}},
                                      {{"Out", {branches[k].second}}, {"Scope", {"scopes"}}},
                                      {{"is_scalar_condition", true}});
    auto& block = *cond.add_attrs();
    block.set_name("sub_block");
    block.set_type(proto::BLOCK);
    block.set_block_idx(static_cast<int>(k) + 1);
  }
  b.append_op("cast", {{"X", {"flag"}}}, {{"Out", {"mask"}}},
              {{"in_dtype", static_cast<std::int32_t>(dtype::boolean)}, {"out_dtype", static_cast<std::int32_t>(dtype::int32)}});
  b.append_op("select_input", {{"X", {"c", "a"}}, {"Mask", {"mask"}}}, {{"Out", {"y"}}}, {});
  validate_program(main);
  add_program("cond_select_input", main);
}

/// A sparse table's sgd in reduce mode: the touched rows packed, broadcast and scattered
/// (graph/touched_rows.hpp), the gradient a SELECTED_ROWS input.
void add_touched_rows() {
  proto::ProgramDesc main, startup;
  program_builder b(main, startup, 1);
  b.declare(b.main_block(), "table", dtype::fp32, {6, 3}, true).set_is_parameter(true);
  b.declare(b.main_block(), "lr", dtype::fp32, {1}, true);
  auto& grad = *b.main_block().add_vars();
  grad.set_name("table@GRAD");
  grad.mutable_type()->set_type(proto::VarType::SELECTED_ROWS);
  grad.mutable_type()->mutable_selected_rows()->set_data_type(proto::VarType::FP32);
  for (const std::int64_t d : {6, 3}) grad.mutable_type()->mutable_selected_rows()->add_dims(d);
  b.append_op("sgd", {{"Param", {"table"}}, {"Grad", {"table@GRAD"}}, {"LearningRate", {"lr"}}},
              {{"ParamOut", {"table"}}}, {});
  const proto::ProgramDesc lowered = broadcast_touched_rows(main);
  validate_program(lowered);
  add_program("sgd_touched_rows", lowered);
}

void add_params() {
  const auto& specs = fuzz::declared_params();
  auto matching = [&](std::size_t i) {
    shape_t dims = specs[i].dims;
    for (auto& d : dims)
      if (d == -1) d = 2;
    tensor t = tensor::zeros(specs[i].type, dims);
    auto* bytes = static_cast<std::uint8_t*>(t.raw());
    for (std::size_t k = 0; k < t.bytes(); ++k) bytes[k] = specs[i].type == dtype::boolean ? k % 2 : std::uint8_t(k * 37);
    return t;
  };
  const std::string& scratch = fuzz::scratch_path(".params");
  for (std::size_t i = 0; i < specs.size(); ++i) {
    write_file("param_file", "single_" + std::to_string(i), std::string(1, char(i << 1)) + serialize_param(matching(i)));
    const std::size_t j = (i + 3) % specs.size();
    param_map both{{"a", matching(i)}, {"b", matching(j)}};
    write_combined_params(scratch, both);
    write_file("param_file", "combined_" + std::to_string(i), std::string(1, char(1 | i << 1 | j << 4)) + read_file(scratch));
  }
}

void add_npy() {
  const std::string& scratch = fuzz::scratch_path(".npy");
  const std::vector<std::pair<dtype, shape_t>> kinds = {{dtype::fp32, {2, 3}}, {dtype::int64, {4}}, {dtype::int32, {}},
                                                         {dtype::uint8, {2, 2, 2}}, {dtype::boolean, {3}},
                                                         {dtype::fp64, {1, 2}}, {dtype::fp32, {0, 3}}};
  int k = 0;
  for (const auto& [type, dims] : kinds) {
    write_npy(scratch, tensor::zeros(type, dims));
    write_file("npy", "seed_" + std::to_string(k++) + ".npy", read_file(scratch));
  }
}

std::string big_endian(std::uint32_t v) {
  return {char(v >> 24), char(v >> 16 & 255), char(v >> 8 & 255), char(v & 255)};
}

std::string gzipped(const std::string& bytes) {
  const std::string& scratch = fuzz::scratch_path(".gz");
  gzFile f = gzopen(scratch.c_str(), "wb");
  if (!f) throw error("cannot write " + scratch);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  return read_file(scratch);
}

void add_idx() {
  const std::string images = big_endian(0x803) + big_endian(2) + big_endian(3) + big_endian(3) + std::string(18, '\x40');
  const std::string labels = big_endian(0x801) + big_endian(3) + std::string("\x01\x02\x09", 3);
  write_file("idx", "images", std::string(1, '\0') + images);
  write_file("idx", "images_normalized", std::string(1, '\2') + images);
  write_file("idx", "labels", std::string(1, '\1') + labels);
  write_file("idx", "images_gz", std::string(1, '\0') + gzipped(images));
  write_file("idx", "labels_gz", std::string(1, '\1') + gzipped(labels));
}

void add_tensor_messages() {
  const tensor a = tensor::zeros(dtype::fp32, {2, 3});
  const tensor b = tensor::zeros(dtype::int64, {4});
  const tensor c = tensor::zeros(dtype::fp32, {});
  const std::vector<std::vector<const tensor*>> messages = {{&a}, {&a, &b}, {&c, &b, &a}, {}};
  int k = 0;
  for (const auto& m : messages) {
    const byte_buffer bytes = encode_tensors(m);
    // The first byte chooses the mode: odd = a tensor message.
    write_file("net_message", "tensors_" + std::to_string(k++), '\1' + std::string(bytes.begin(), bytes.end()));
  }
  // A peer's sparse rows (2 rows of width 2 in a table of 10), as sent alone and with its
  // row counts (what a process that expects the gather sends at step 0).
  tensor rows = tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  rows.set_sparse_rows(std::make_shared<const selected_rows>(std::vector<std::int64_t>{7, 3}, 10));
  const std::vector<tensor*> buffers{&rows};
  for (const auto& [name, bytes] : {std::pair<std::string, byte_buffer>{"rows", encode_rows(buffers, "seed")},
                                    {"counts_and_rows", encode_row_counts(buffers, "seed", true)},
                                    {"counts", encode_row_counts(buffers, "seed")}})
    write_file("net_message", "sparse_" + name, '\1' + std::string(bytes.begin(), bytes.end()));
}

/// Inbox scripts in net_message_fuzz's byte layout: a step is channel, sequence, from (1 or
/// 2) and an action (0-2 deliver, 3 take, 4 header + piece, 5 notice, 6 wait), a delivered
/// packet its channel, sequence, from (+1), kind, root, offset and total (a 1 byte, then the
/// value), a failure choice (1: none) and its bytes (count, then the bytes).
void add_inbox_scripts() {
  auto deliver = [](char seq, char from, char offset, char total, std::string bytes) {
    return std::string{0, seq, from, 0, 0, seq, char(from + 1), 0, 0, 1, offset, 1, total, 1,
                       char(bytes.size())} + bytes;
  };
  auto act = [](char seq, char from, char action) { return std::string{0, seq, from, action}; };
  write_file("net_message", "inbox_whole",
             std::string(1, '\0') + deliver(0, 1, 0, 4, "abcd") + act(0, 1, 3) + deliver(1, 2, 0, 0, "") + act(1, 2, 6));
  write_file("net_message", "inbox_pieces",
             std::string(1, '\0') + deliver(0, 1, 2, 4, "cd") + deliver(0, 1, 0, 4, "ab") + act(0, 1, 4) + "\1\0" +
                 act(0, 1, 4) + "\1\2");
}

/// Packets as CAF encodes them for the wire: a payload's piece, an empty one, a failure.
void add_wire_packets() {
  std::vector<net_packet> packets(3);
  packets[0].channel = 1;
  packets[0].sequence = 7;
  packets[0].from = 1;
  packets[0].kind = 2;
  packets[0].offset = 4;
  packets[0].total = 12;
  packets[0].bytes = {'a', 'b', 'c', 'd'};
  packets[0].label = "all_reduce(fc_0.w_0@GRAD)";
  packets[1].from = 2;
  packets[2].channel = 2;
  packets[2].sequence = 3;
  packets[2].from = 1;
  packets[2].failure = "rank 1 failed: out of memory";
  int k = 0;
  for (net_packet& p : packets) {
    std::vector<char> bytes;
    caf::binary_serializer sink(nullptr, bytes);
    if (sink(p)) throw error("cannot encode a seed packet");
    write_file("net_wire", "packet_" + std::to_string(k++), std::string(bytes.begin(), bytes.end()));
  }
}

/// Data-link streams (data_link_fuzz's layout: a first byte of 1, then frames) of the seed
/// packets, one after another and cut short; and a door's hello (a first byte of 0).
void add_link_frames() {
  net_packet p;
  p.channel = 1;
  p.sequence = 7;
  p.from = 1;
  p.kind = 2;
  p.offset = 0;
  p.total = 8;
  p.bytes = {'a', 'b', 'c', 'd'};
  p.label = "all_reduce(fc_0.w_0@GRAD)";
  net_packet rest = p;
  rest.offset = 4;
  rest.bytes = {'e', 'f', 'g', 'h'};
  net_packet failed;
  failed.channel = 2;
  failed.from = 1;
  failed.failure = "rank 1 failed: out of memory";
  const std::string stream = frame_bytes(p) + frame_bytes(rest) + frame_bytes(failed);
  write_file("data_link", "frames", '\1' + stream);
  write_file("data_link", "frames_cut", '\1' + stream.substr(0, stream.size() - 3));
  const auto hello = encode_link_hello(2, std::string(link_secret_bytes, 'p'));
  write_file("data_link", "hello", '\0' + std::string(hello.begin(), hello.end()));
}

/// checkpoint.json as pe-actor-run writes it (format 2, with digests) and as it did before
/// digests (format 1).
void add_checkpoint_records() {
  const std::string position =
      R"("step": 4, "data_position": {"batches_served": 4, "epochs_completed": 1, "batches_into_epoch": 0}, )"
      R"("run": {"model": "mlp", "batch_size": 64, "seed": 1, "program": "1f2e"})";
  write_file("checkpoint_record", "format2.json",
             R"({"format": "pe-actor-run checkpoint 2", )" + position +
                 R"(, "files": {"fc_0.w_0": {"bytes": 1024, "sha256": )"
                 R"("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}, )"
                 R"("learning_rate_0": {"bytes": 30, "sha256": )"
                 R"("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"}}})");
  write_file("checkpoint_record", "format1.json", R"({"format": "pe-actor-run checkpoint 1", )" + position + "}");
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT\n");
    return 2;
  }
  out_root = argv[1];
  try {
    add_models();
    add_feed_fetch();
    add_control_flow();
    add_touched_rows();
    add_single_ops();
    add_params();
    add_npy();
    add_idx();
    add_tensor_messages();
    add_inbox_scripts();
    add_wire_packets();
    add_link_frames();
    add_checkpoint_records();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 1;
  }
  std::vector<std::string> missing;
  for (const std::string& type : op_registry::global().types())
    if (!covered.contains(type)) missing.push_back(type);
  std::printf("make_seeds: %zu op types covered by program seeds in %s\n", covered.size(), argv[1]);
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += " " + m;
    std::fprintf(stderr, "make_seeds: no seed covers these registered op types:%s\n", list.c_str());
    return 1;
  }
  return 0;
}
