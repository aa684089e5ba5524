// numpy .npy files: reading numpy's files (committed fixtures and, where python3 has numpy,
// fresh ones), writing files numpy reads, and an error naming the file for every malformed
// input.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "data/npy.hpp"
#include "idx_files.hpp"
#include "tests/support/expect_error.hpp"
#include "tests/support/process.hpp"

namespace pe {
namespace {

using testing::expect_error;
using testing::temp_dir;
using testing::write_file;

std::string fixture(const std::string& name) {
  return std::string(PE_TEST_DATA_DIR) + "/npy/" + name;
}

template <class T>
std::vector<T> values_of(const tensor& t) {
  auto v = t.values<T>();
  return {v.begin(), v.end()};
}


/// A .npy file's bytes with the given header dict text (a newline is appended) and data.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  auto header = dict + "\n";
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + data;
}

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

const std::string f4_2x3 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
const std::vector<float> six_floats = {1, 2, 3, 4, 5, 6};

TEST(NpyRead, ReadsNumpysFilesOfEveryDtype) {
  auto f4 = read_npy(fixture("f4_2x3.npy"));
  EXPECT_EQ(f4.type(), dtype::fp32);
  EXPECT_EQ(f4.shape(), (shape_t{2, 3}));
  EXPECT_EQ(values_of<float>(f4), (std::vector<float>{0.5f, -1.25f, 2, 3, 4.75f, -1e30f}));

  auto f8 = read_npy(fixture("f8_scalar.npy"));
  EXPECT_EQ(f8.type(), dtype::fp64);
  EXPECT_EQ(f8.shape(), shape_t{});
  EXPECT_EQ(values_of<double>(f8), std::vector<double>{3.141592653589793});

  auto i4 = read_npy(fixture("i4_4.npy"));
  EXPECT_EQ(i4.type(), dtype::int32);
  EXPECT_EQ(i4.shape(), shape_t{4});
  EXPECT_EQ(values_of<std::int32_t>(i4),
            (std::vector<std::int32_t>{INT32_MIN, -1, 0, INT32_MAX}));

  auto i8 = read_npy(fixture("i8_3x1.npy"));
  EXPECT_EQ(i8.type(), dtype::int64);
  EXPECT_EQ(i8.shape(), (shape_t{3, 1}));
  EXPECT_EQ(values_of<std::int64_t>(i8), (std::vector<std::int64_t>{7, 0, -9000000000}));

  auto u1 = read_npy(fixture("u1_2x2x2.npy"));
  EXPECT_EQ(u1.type(), dtype::uint8);
  EXPECT_EQ(u1.shape(), (shape_t{2, 2, 2}));
  EXPECT_EQ(values_of<std::uint8_t>(u1),
            (std::vector<std::uint8_t>{250, 251, 252, 253, 254, 255, 0, 1}));

  auto b1 = read_npy(fixture("b1_5.npy"));
  EXPECT_EQ(b1.type(), dtype::boolean);
  EXPECT_EQ(b1.shape(), shape_t{5});
  EXPECT_EQ(values_of<bool>(b1), (std::vector<bool>{true, false, false, true, true}));

  auto empty = read_npy(fixture("f4_0x3.npy"));
  EXPECT_EQ(empty.type(), dtype::fp32);
  EXPECT_EQ(empty.shape(), (shape_t{0, 3}));
}

TEST(NpyRead, ReadsFormatVersions2And3) {
  for (const char* name : {"i8_2x3_v2.npy", "i8_2x3_v3.npy"}) {
    auto t = read_npy(fixture(name));
    EXPECT_EQ(t.shape(), (shape_t{2, 3})) << name;
    EXPECT_EQ(values_of<std::int64_t>(t), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6})) << name;
  }
}

TEST(NpyRead, RefusesNumpysFortranBigEndianAndInt16Files) {
  auto fortran = fixture("f4_2x3_fortran.npy");
  expect_error([&] { read_npy(fortran); }, {fortran, "fortran_order True"});
  auto big = fixture("f4_3_big_endian.npy");
  expect_error([&] { read_npy(big); }, {big, "big-endian", "'>f4'"});
  auto int16 = fixture("i2_3.npy");
  expect_error([&] { read_npy(int16); }, {int16, "unsupported dtype '<i2'", "<f4"});
}

TEST(NpyRead, AcceptsTheHeaderSpellingsPythonAllows) {
  temp_dir dir("npy_spellings");
  auto path = dir.file("a.npy");
  for (const char* dict :
       {"{\"shape\": (2,3),\"fortran_order\":False,'descr':\"<f4\"}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L)}",
        "  { 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }   "}) {
    write_file(path, npy_bytes(dict, raw_bytes(six_floats)));
    auto t = read_npy(path);
    EXPECT_EQ(t.shape(), (shape_t{2, 3})) << dict;
    EXPECT_EQ(values_of<float>(t), six_floats) << dict;
  }
}

struct bad_file {
  const char* name;
  std::string bytes;
  std::vector<std::string> message;
};

TEST(NpyRead, EveryMalformedFileIsAnErrorNamingIt) {
  auto data = raw_bytes(six_floats);
  auto good = npy_bytes(f4_2x3, data);
  auto header_of = [](const std::string& shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  const std::vector<bad_file> cases = {
    {"empty", "", {"truncated header: 0 bytes"}},
    {"bad_magic", "\x93NUMPX" + good.substr(6), {"not a .npy file (bad magic string)"}},
    {"text", "hello world, not numpy", {"not a .npy file"}},
    {"magic_only", "\x93NUMPY", {"truncated header"}},
    {"no_length", good.substr(0, 9), {"truncated header"}},
    {"short_header", good.substr(0, 40), {"truncated header", "needs"}},
    {"version_4", npy_bytes(f4_2x3, data, 4), {"unsupported .npy format version 4.0"}},
    {"version_1_1", good.substr(0, 7) + '\x01' + good.substr(8), {"version 1.1"}},
    {"truncated_data", good.substr(0, good.size() - 1),
     {"truncated data", "(2, 3)", "needs 24 data bytes, the file has 23"}},
    {"trailing_bytes", good + "x", {"trailing bytes", "the file has 25"}},
    {"overflow", npy_bytes(header_of("(4294967296, 4294967296)"), data),
     {"element count of shape (4294967296, 4294967296) overflows"}},
    {"overflow_bytes", npy_bytes(header_of("(3074457345618258603,)"), data), {"overflows"}},
    {"huge_dim", npy_bytes(header_of("(99999999999999999999,)"), data),
     {"malformed .npy header", "dimension too large"}},
    {"negative_dim", npy_bytes(header_of("(-2, 3)"), data),
     {"malformed .npy header", "non-negative int"}},
    {"big_endian", npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", data),
     {"big-endian dtype '>f4'"}},
    {"unknown_descr",
     npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }", data),
     {"unsupported dtype '<c8'"}},
    {"fortran", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data),
     {"fortran_order True"}},
    {"missing_key", npy_bytes("{'descr': '<f4', 'shape': (2, 3), }", data),
     {"malformed .npy header", "needs the keys"}},
    {"extra_key", npy_bytes(f4_2x3.substr(0, f4_2x3.size() - 1) + "'x': 1}", data),
     {"malformed .npy header", "unexpected or repeated key 'x'"}},
    {"repeated_key",
     npy_bytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", data),
     {"repeated key 'descr'"}},
    {"bad_fortran_order", npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (6,)}", data),
     {"expected True or False"}},
    {"unterminated", npy_bytes("{'descr': '<f4", data), {"unterminated string"}},
    {"not_a_dict", npy_bytes("['<f4', False, (6,)]", data), {"expected '{'"}},
    {"after_dict", npy_bytes(f4_2x3 + " 7", data), {"text after the dict"}},
    {"bool_value", npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                             std::string("\x01\x00\x02", 3)),
     {"bool element 2 is 2, not 0 or 1"}},
  };
  temp_dir dir("npy_malformed");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto path = dir.file(std::string(c.name) + ".npy");
    write_file(path, c.bytes);
    auto parts = c.message;
    parts.push_back(path);
    expect_error([&] { read_npy(path); }, parts);
  }
}

TEST(NpyRead, MissingFileOrDirectoryIsAnErrorNamingIt) {
  temp_dir dir("npy_missing");
  auto path = dir.file("absent.npy");
  expect_error([&] { read_npy(path); }, {path, "cannot open"});
  expect_error([&] { read_npy(dir.path().string()); }, {dir.path().string(), "cannot open"});
}

TEST(NpyWrite, RoundTripsEveryDtypeAndShape) {
  temp_dir dir("npy_round_trip");
  auto path = dir.file("t.npy");
  auto round_trip = [&](const tensor& t) {
    write_npy(path, t);
    auto back = read_npy(path);
    EXPECT_EQ(back.type(), t.type());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.bytes()), 0);
    EXPECT_EQ(std::filesystem::file_size(path) % 64, t.bytes() % 64) << "data 64-byte aligned";
  };
  round_trip(tensor::from_vector(six_floats, {2, 3}));
  round_trip(tensor::from_vector(std::vector<double>{-0.5}, {}));
  round_trip(tensor::from_vector(std::vector<std::int32_t>{1, -2, 3, -4}, {4, 1, 1}));
  round_trip(tensor::from_vector(std::vector<std::int64_t>{1LL << 40, -7}, {2}));
  round_trip(tensor::from_vector(std::vector<std::uint8_t>{0, 128, 255}, {1, 3}));
  round_trip(tensor::from_vector(std::vector<bool>{true, false}, {2}));
  round_trip(tensor::zeros(dtype::fp32, {0, 5}));
  // A slice writes its own rows, not its parent's first rows.
  auto rows = tensor::from_vector(six_floats, {3, 2}).slice(1, 3);
  write_npy(path, rows);
  EXPECT_EQ(values_of<float>(read_npy(path)), (std::vector<float>{3, 4, 5, 6}));
}

TEST(NpyWrite, RefusesWhatNpyCannotHold) {
  temp_dir dir("npy_write_errors");
  auto path = dir.file("t.npy");
  expect_error([&] { write_npy(path, tensor(dtype::int16, {2})); },
               {path, ".npy cannot hold dtype INT16"});
  expect_error([&] { write_npy(path, tensor()); }, {path, "uninitialised"});
  expect_error([&] { write_npy(path, tensor(dtype::fp32, shape_t(30000, 1))); },
               {path, "rank 30000 is too long"});
  auto unwritable = dir.file("no_such_dir/t.npy");
  expect_error([&] { write_npy(unwritable, tensor::zeros(dtype::fp32, {1})); },
               {unwritable, "cannot write"});
}

// --- numpy itself, where python3 has it ----------------------------------------------------

bool have_numpy() {
  static const bool found = std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return found;
}

/// Runs a python3 script (no single quotes in it) in `dir`, expecting success; its stdout.
std::string python(const std::string& script, const temp_dir& dir) {
  auto in_dir = "import os\nos.chdir(\"" + dir.path().string() + "\")\n" + script;
  auto r = testing::run_binary("python3", "-c '" + in_dir + "'", dir.path());
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

TEST(NpyNumpy, NumpyReadsWhatWeWrite) {
  if (!have_numpy())
    GTEST_SKIP() << "python3 with numpy is not installed: the committed fixtures cover reading";
  temp_dir dir("npy_numpy_reads");
  write_npy(dir.file("f4.npy"), tensor::from_vector(std::vector<float>{0.5f, -2, 1e-3f, 7,
                                                                        8, 9},
                                                    {3, 1, 2}));
  write_npy(dir.file("f8.npy"), tensor::from_vector(std::vector<double>{2.5}, {}));
  write_npy(dir.file("i4.npy"), tensor::from_vector(std::vector<std::int32_t>{-5, 6}, {2}));
  write_npy(dir.file("i8.npy"), tensor::from_vector(std::vector<std::int64_t>{1LL << 40}, {1, 1}));
  write_npy(dir.file("u1.npy"), tensor::from_vector(std::vector<std::uint8_t>{0, 255}, {2}));
  write_npy(dir.file("b1.npy"), tensor::from_vector(std::vector<bool>{false, true, true}, {3}));
  write_npy(dir.file("empty.npy"), tensor::zeros(dtype::int64, {0, 4}));
  auto out = python(
    "import numpy as np\n"
    "for n in [\"f4\", \"f8\", \"i4\", \"i8\", \"u1\", \"b1\", \"empty\"]:\n"
    "    a = np.load(n + \".npy\", allow_pickle=False)\n"
    "    print(n, a.dtype.str, a.shape, a.flatten().tolist())\n",
    dir);
  EXPECT_EQ(out,
            "f4 <f4 (3, 1, 2) [0.5, -2.0, 0.0010000000474974513, 7.0, 8.0, 9.0]\n"
            "f8 <f8 () [2.5]\n"
            "i4 <i4 (2,) [-5, 6]\n"
            "i8 <i8 (1, 1) [1099511627776]\n"
            "u1 |u1 (2,) [0, 255]\n"
            "b1 |b1 (3,) [False, True, True]\n"
            "empty <i8 (0, 4) []\n");
}

TEST(NpyNumpy, WeReadWhatNumpyWrites) {
  if (!have_numpy())
    GTEST_SKIP() << "python3 with numpy is not installed: the committed fixtures cover reading";
  temp_dir dir("npy_numpy_writes");
  python("import numpy as np\n"
         "np.save(\"f4.npy\", np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, ::2, :] / 4)\n"
         "np.save(\"i8.npy\", np.array([[3], [1], [4]]))\n"
         "np.save(\"b1.npy\", np.arange(5) % 2 == 0)\n"
         "np.save(\"u1.npy\", np.arange(6, dtype=np.uint8).reshape(3, 2).T)\n"
         "np.save(\"fortran.npy\", np.asfortranarray(np.ones((2, 2))))\n",
         dir);
  auto f4 = read_npy(dir.file("f4.npy"));
  EXPECT_EQ(f4.shape(), (shape_t{2, 2, 4}));
  EXPECT_EQ(values_of<float>(f4), (std::vector<float>{0, .25f, .5f, .75f, 2, 2.25f, 2.5f, 2.75f,
                                                      3, 3.25f, 3.5f, 3.75f, 5, 5.25f, 5.5f,
                                                      5.75f}));
  auto i8 = read_npy(dir.file("i8.npy"));
  EXPECT_EQ(i8.type(), dtype::int64);
  EXPECT_EQ(values_of<std::int64_t>(i8), (std::vector<std::int64_t>{3, 1, 4}));
  EXPECT_EQ(values_of<bool>(read_npy(dir.file("b1.npy"))),
            (std::vector<bool>{true, false, true, false, true}));
  // np.save writes a transposed (Fortran-contiguous) 2-d array with fortran_order True.
  expect_error([&] { read_npy(dir.file("u1.npy")); }, {"fortran_order True"});
  expect_error([&] { read_npy(dir.file("fortran.npy")); }, {dir.file("fortran.npy")});
}

} // namespace
} // namespace pe
