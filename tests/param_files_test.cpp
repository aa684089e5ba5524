// Paddle's parameter files: the format, byte-identical round trips of files Paddle wrote
// (tests/data/paddle_params, scripts/make_paddle_fixture.py), every read error, and training
// a Paddle program from Paddle's initial parameters.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "actors/parallel_executor.hpp"
#include "graph/exec/param_files.hpp"
#include "graph/program_io.hpp"
#include "idx_files.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/paddle_fixtures.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::paddle_fixture;
using testing::slurp;
using testing::temp_dir;

proto::ProgramDesc main_program() {
  return load_program(paddle_fixture("main.pb"));
}

std::vector<std::string> names_of(const std::vector<param_spec>& specs) {
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  return names;
}

const param_spec& spec_of(const std::vector<param_spec>& specs, const std::string& name) {
  for (const auto& s : specs)
    if (s.name == name) return s;
  throw error("no spec " + name);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

template <class T>
void put(std::string& bytes, std::size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

/// The batch make_paddle_fixture.py's fixed_batch(rows, width) feeds.
feed_map fixed_batch(std::int64_t rows, std::int64_t width) {
  std::vector<float> image;
  std::vector<std::int64_t> label;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < width; ++j)
      image.push_back(
          static_cast<float>(static_cast<double>((31 * i + 17 * j) % 101) / 101.0 - 0.5));
    label.push_back(i % 10);
  }
  return {{"image", tensor::from_vector(image, {rows, width})},
          {"label", tensor::from_vector(label, {rows, 1})}};
}

TEST(ParamFiles, SpecsAreTheSortedPersistablesAndTheForwardParameters) {
  auto main = main_program();
  const auto all = persistable_specs(main);
  EXPECT_EQ(names_of(all),
            (std::vector<std::string>{"fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0",
                                      "learning_rate_0"}));
  EXPECT_EQ(names_of(forward_param_specs(main)),
            (std::vector<std::string>{"fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"}));
  const auto& w = spec_of(all, "fc_0.w_0");
  EXPECT_EQ(w.type, dtype::fp32);
  EXPECT_EQ(w.dims, (shape_t{16, 8}));
  EXPECT_EQ(spec_of(all, "learning_rate_0").dims, shape_t{});
  auto inference = load_program(paddle_fixture("model.pdmodel"));
  EXPECT_EQ(names_of(persistable_specs(inference)), names_of(forward_param_specs(inference)));
  EXPECT_EQ(persistable_specs(inference).size(), 4u);
}

TEST(ParamFiles, PaddleFilesReadAndSaveByteIdentical) {
  temp_dir dir("param_files_round_trip");
  for (const auto& spec : persistable_specs(main_program())) {
    const std::string path = paddle_fixture("init/" + spec.name);
    tensor t = read_param_file(path, spec);
    EXPECT_EQ(t.type(), spec.type) << spec.name;
    EXPECT_EQ(t.shape(), spec.dims) << spec.name;
    EXPECT_EQ(serialize_param(t), slurp(path)) << spec.name;
    write_param_file(dir.file(spec.name), t);
    EXPECT_EQ(slurp(dir.file(spec.name)), slurp(path)) << spec.name;
  }
  // The header as lod_tensor.cc writes it: versions, no LoD, the TensorDesc size.
  const std::string lr = slurp(paddle_fixture("init/learning_rate_0"));
  ASSERT_EQ(lr.size(), 26u);
  EXPECT_EQ(lr.substr(0, 16), std::string(16, '\0'));
  float value = 0;
  std::memcpy(&value, lr.data() + 22, 4);
  EXPECT_FLOAT_EQ(value, 0.1f);
  EXPECT_FLOAT_EQ(read_param_file(paddle_fixture("init/learning_rate_0"),
                                  spec_of(persistable_specs(main_program()), "learning_rate_0"))
                      .values<float>()[0],
                  0.1f);
}

TEST(ParamFiles, CombinedFileHoldsThePerVariableFilesInNameOrder) {
  auto main = main_program();
  auto all = persistable_specs(main);
  auto values = read_combined_params(paddle_fixture("init.combined"), {all, forward_param_specs(main)});
  ASSERT_EQ(values.size(), 5u);
  for (const auto& spec : all)
    EXPECT_EQ(serialize_param(values.at(spec.name)), slurp(paddle_fixture("init/" + spec.name)));
  temp_dir dir("param_files_combined");
  write_combined_params(dir.file("all"), values);
  EXPECT_EQ(slurp(dir.file("all")), slurp(paddle_fixture("init.combined")));
}

TEST(ParamFiles, PdiparamsMatchesTheForwardParametersByCount) {
  auto main = main_program();
  auto values = load_params(paddle_fixture("model.pdiparams"), main);
  ASSERT_EQ(values.size(), 4u);
  EXPECT_FALSE(values.contains("learning_rate_0"));
  // save_inference_model saved the startup values: the same tensors as init/.
  for (const auto& [name, value] : values)
    EXPECT_EQ(serialize_param(value), slurp(paddle_fixture("init/" + name))) << name;
  temp_dir dir("param_files_pdiparams");
  write_combined_params(dir.file("model.pdiparams"), values);
  EXPECT_EQ(slurp(dir.file("model.pdiparams")), slurp(paddle_fixture("model.pdiparams")));
  EXPECT_EQ(
      load_params(paddle_fixture("model.pdiparams"), load_program(paddle_fixture("model.pdmodel"))).size(),
      4u);
}

TEST(ParamFiles, DirectoryHoldsEveryPersistableOrTheForwardParameters) {
  auto main = main_program();
  EXPECT_EQ(load_params(paddle_fixture("init"), main).size(), 5u);
  temp_dir dir("param_files_dir");
  for (const auto* name : {"fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"})
    fs::copy_file(paddle_fixture(std::string("init/") + name), dir.file(name));
  EXPECT_EQ(load_params(dir.path().string(), main).size(), 4u);
  fs::remove(dir.file("fc_1.w_0"));
  EXPECT_EQ(error_of([&] { load_params(dir.path().string(), main); }),
            dir.file("fc_1.w_0") +
                ": missing variable 'fc_1.w_0'; the directory must hold every persistable "
                "('fc_0.b_0', 'fc_0.w_0', 'fc_1.b_0', 'fc_1.w_0', 'learning_rate_0') or every "
                "parameter the forward ops read ('fc_0.b_0', 'fc_0.w_0', 'fc_1.b_0', 'fc_1.w_0')");
  EXPECT_EQ(error_of([&] { load_params(dir.file("nothing"), main); }),
            dir.file("nothing") + ": no such parameter file or directory");
}

TEST(ParamFiles, SaveParamsWritesOneFilePerVariable) {
  auto values = load_params(paddle_fixture("init.combined"), main_program());
  temp_dir dir("param_files_save");
  const std::string out = dir.file("nested/params");
  save_params(out, values);
  for (const auto& [name, value] : values)
    EXPECT_EQ(slurp(out + "/" + name), slurp(paddle_fixture("init/" + name))) << name;
  write_file(dir.file("blocker"), "");
  EXPECT_NE(error_of([&] { save_params(dir.file("blocker") + "/x", values); })
                .find("cannot create the parameter directory"),
            std::string::npos);
}

/// Every malformed single-variable file, by message.
class ParamFileErrors : public ::testing::Test {
 protected:
  std::string original = slurp(paddle_fixture("init/fc_0.w_0"));
  param_spec spec = spec_of(persistable_specs(main_program()), "fc_0.w_0");
  temp_dir dir{"param_file_errors"};

  /// The error reading `bytes` as fc_0.w_0, with the file's path replaced by "F".
  std::string read_error(const std::string& bytes, const param_spec& expected) {
    write_file(dir.file("f"), bytes);
    std::string message = error_of([&] { read_param_file(dir.file("f"), expected); });
    if (message.starts_with(dir.file("f"))) message.replace(0, dir.file("f").size(), "F");
    return message;
  }
  std::string read_error(const std::string& bytes) { return read_error(bytes, spec); }
};

TEST_F(ParamFileErrors, Truncated) {
  EXPECT_EQ(read_error(original.substr(0, 2)),
            "F: variable 'fc_0.w_0': truncated: the LoD version needs 4 bytes, 2 are left");
  EXPECT_EQ(read_error(original.substr(0, 10)),
            "F: variable 'fc_0.w_0': truncated: the LoD level count needs 8 bytes, 6 are left");
  EXPECT_EQ(read_error(original.substr(0, 22)),
            "F: variable 'fc_0.w_0': truncated: the TensorDesc needs 6 bytes, 2 are left");
  EXPECT_EQ(read_error(original.substr(0, original.size() - 1)),
            "F: variable 'fc_0.w_0': truncated: FP32 [16, 8] needs more than the 511 bytes left");
  EXPECT_EQ(error_of([&] { read_param_file(dir.file("absent"), spec); }),
            dir.file("absent") + ": cannot read the parameter file");
}

TEST_F(ParamFileErrors, WrongVersionsAndLoD) {
  std::string bytes = original;
  put<std::uint32_t>(bytes, 0, 1);
  EXPECT_EQ(read_error(bytes), "F: variable 'fc_0.w_0': LoD version 1, expected 0");
  bytes = original;
  put<std::uint32_t>(bytes, 12, 7);
  EXPECT_EQ(read_error(bytes), "F: variable 'fc_0.w_0': tensor version 7, expected 0");
  bytes = original;
  put<std::uint64_t>(bytes, 4, 1);
  EXPECT_EQ(read_error(bytes), "F: variable 'fc_0.w_0': has 1 LoD levels; parameters carry none");
}

TEST_F(ParamFileErrors, BadTensorDesc) {
  std::string bytes = original;
  bytes.replace(20, 6, std::string(6, '\xff'));
  EXPECT_EQ(read_error(bytes), "F: variable 'fc_0.w_0': the TensorDesc does not parse");
  {
    // A TensorDesc without its required data_type is named, and protobuf prints nothing.
    proto::VarType::TensorDesc no_type;
    no_type.add_dims(2);
    const std::string desc = no_type.SerializePartialAsString();
    bytes = original.substr(0, 16);
    bytes.append(4, '\0');
    put<std::int32_t>(bytes, 16, static_cast<std::int32_t>(desc.size()));
    bytes += desc;
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(read_error(bytes), "F: variable 'fc_0.w_0': the TensorDesc lacks data_type");
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  }
  bytes = original;
  put<std::int32_t>(bytes, 16, -3);
  EXPECT_EQ(read_error(bytes),
            "F: variable 'fc_0.w_0': negative TensorDesc size -3");
  // Dims far beyond the file: rejected before anything is allocated.
  proto::VarType::TensorDesc huge;
  huge.set_data_type(proto::VarType::FP32);
  huge.add_dims(std::int64_t{1} << 40);
  huge.add_dims(std::int64_t{1} << 40);
  std::string desc = huge.SerializeAsString();
  bytes = original.substr(0, 16);
  std::string size(4, '\0');
  put<std::int32_t>(size, 0, static_cast<std::int32_t>(desc.size()));
  EXPECT_EQ(read_error(bytes + size + desc + std::string(64, '\0')),
            "F: variable 'fc_0.w_0': truncated: FP32 [1099511627776, 1099511627776] needs more "
            "than the 64 bytes left");
  huge.set_dims(0, -2);
  desc = huge.SerializeAsString();
  put<std::int32_t>(size, 0, static_cast<std::int32_t>(desc.size()));
  EXPECT_EQ(read_error(bytes + size + desc), "F: variable 'fc_0.w_0': negative dimension -2");
}

TEST_F(ParamFileErrors, MismatchWithTheProgram) {
  param_spec other = spec;
  other.type = dtype::fp64;
  EXPECT_EQ(read_error(original, other),
            "F: variable 'fc_0.w_0': holds FP32 [16, 8] but the program declares FP64 [16, 8]");
  other = spec;
  other.dims = {8, 16};
  EXPECT_EQ(read_error(original, other),
            "F: variable 'fc_0.w_0': holds FP32 [16, 8] but the program declares FP32 [8, 16]");
  other.dims = {-1, 8};
  EXPECT_EQ(read_error(original, other), "");
}

TEST_F(ParamFileErrors, TrailingBytes) {
  EXPECT_EQ(read_error(original + "xyz"),
            "F: variable 'fc_0.w_0': 3 trailing bytes after its data");
}

TEST_F(ParamFileErrors, CombinedFiles) {
  auto main = main_program();
  const auto all = persistable_specs(main);
  const auto forward = forward_param_specs(main);
  const std::string combined = slurp(paddle_fixture("init.combined"));
  auto combined_error = [&](const std::string& bytes) {
    write_file(dir.file("c"), bytes);
    std::string message = error_of([&] { read_combined_params(dir.file("c"), {all, forward}); });
    if (message.starts_with(dir.file("c"))) message.replace(0, dir.file("c").size(), "C");
    return message;
  };
  const std::string first_three = slurp(paddle_fixture("init/fc_0.b_0")) +
                                  slurp(paddle_fixture("init/fc_0.w_0")) +
                                  slurp(paddle_fixture("init/fc_1.b_0"));
  EXPECT_EQ(combined_error(first_three),
            "C: holds 3 variables; expected 5 ('fc_0.b_0', 'fc_0.w_0', 'fc_1.b_0', 'fc_1.w_0', "
            "'learning_rate_0') or 4 ('fc_0.b_0', 'fc_0.w_0', 'fc_1.b_0', 'fc_1.w_0')");
  EXPECT_EQ(combined_error(combined + "ab"), "C: 2 trailing bytes after 5 variables");
  EXPECT_EQ(combined_error(combined + slurp(paddle_fixture("init/fc_1.b_0"))),
            "C: holds 6 variables; expected 5 ('fc_0.b_0', 'fc_0.w_0', 'fc_1.b_0', 'fc_1.w_0', "
            "'learning_rate_0') or 4 ('fc_0.b_0', 'fc_0.w_0', 'fc_1.b_0', 'fc_1.w_0')");
  EXPECT_EQ(combined_error(combined.substr(0, combined.size() - 2)),
            "C: variable record 5 ('learning_rate_0'): truncated: FP32 [] needs more than the 2 "
            "bytes left");
  // The count picks the candidate, then each variable must match it.
  std::string swapped = slurp(paddle_fixture("init/fc_0.w_0")) + slurp(paddle_fixture("init/fc_0.b_0")) +
                        slurp(paddle_fixture("init/fc_1.b_0")) + slurp(paddle_fixture("init/fc_1.w_0"));
  EXPECT_EQ(combined_error(swapped),
            "C: variable 'fc_0.b_0': holds FP32 [16, 8] but the program declares FP32 [8]");
}

/// Paddle's loss on its fixed batch, from its initial parameters (loss.txt).
double paddle_first_loss() {
  return std::stod(slurp(paddle_fixture("loss.txt")));
}

TEST(ParamFilesTraining, LoadedPaddleParametersGivePaddlesFirstLossAndStep) {
  const auto startup = load_program(paddle_fixture("startup.pb"));
  const auto main = main_program();
  const auto loaded = load_params(paddle_fixture("init.combined"), main);
  const auto loss_name = analyze_program(main).loss;
  for (int places : {1, 2}) {
    std::vector<place> where;
    for (int p = 0; p < places; ++p) where.push_back(place::cpu(p));
    parallel_executor exec(where, startup, main);
    for (const auto& [name, value] : loaded) exec.set_persistable(name, value);
    for (int p = 0; p < places; ++p)
      EXPECT_EQ(serialize_param(exec.place_scope(p).get("fc_1.w_0")),
                slurp(paddle_fixture("init/fc_1.w_0")))
          << "place " << p;
    auto loss = exec.run(fixed_batch(4, 16), {loss_name});
    EXPECT_NEAR(loss[0].values<float>()[0], paddle_first_loss(), 1e-5) << places << " places";
    // After that one SGD step, the parameters are Paddle's (trained/).
    for (const auto& spec : persistable_specs(main)) {
      tensor expected = read_param_file(paddle_fixture("trained/" + spec.name), spec);
      auto ours = exec.place_scope(0).get(spec.name).values<float>();
      auto theirs = expected.values<float>();
      ASSERT_EQ(ours.size(), theirs.size()) << spec.name;
      for (std::size_t i = 0; i < ours.size(); ++i)
        ASSERT_NEAR(ours[i], theirs[i], 1e-5)
            << spec.name << "[" << i << "], " << places << " places";
    }
  }
}

TEST(ParamFilesTraining, SetPersistableRejectsOtherVariables) {
  parallel_executor exec({place::cpu(0)}, load_program(paddle_fixture("startup.pb")), main_program());
  EXPECT_EQ(error_of([&] {
              exec.set_persistable("fc_0.tmp_0", tensor::zeros(dtype::fp32, {1}));
            }),
            "parallel_executor::set_persistable: 'fc_0.tmp_0' is not a persistable variable of "
            "the program");
  EXPECT_EQ(error_of([&] { exec.set_persistable("fc_0.w_0", tensor()); }),
            "parallel_executor::set_persistable: the value given for 'fc_0.w_0' holds no data");
}

} // namespace
} // namespace pe
