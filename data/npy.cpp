#include "data/npy.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

#include "core/error.hpp"

namespace pe {

namespace {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader and writer assume a little-endian host");

constexpr std::string_view magic = "\x93NUMPY";

struct descr_entry {
  std::string_view descr;
  dtype type;
};

/// numpy's descr for each engine dtype a .npy file may hold.
constexpr std::array<descr_entry, 6> descrs{{{"|b1", dtype::boolean},
                                             {"|u1", dtype::uint8},
                                             {"<i4", dtype::int32},
                                             {"<i8", dtype::int64},
                                             {"<f4", dtype::fp32},
                                             {"<f8", dtype::fp64}}};

/// The descr of `type`; nullptr for a dtype numpy's files cannot hold here.
const descr_entry* find_descr(dtype type) {
  auto it = std::find_if(descrs.begin(), descrs.end(),
                         [&](const descr_entry& e) { return e.type == type; });
  return it == descrs.end() ? nullptr : &*it;
}

/// The three fields of a .npy header.
struct npy_header {
  dtype type;
  bool fortran_order;
  shape_t shape;
};

/// "(3, 4)", numpy's spelling of a shape (a 1-tuple keeps its comma).
std::string python_tuple(const shape_t& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// Parses the header: a Python dict literal with exactly the keys 'descr' (a string),
/// 'fortran_order' (True or False) and 'shape' (a tuple of non-negative ints), as numpy
/// writes it (any key order, optional trailing commas, spaces and the final newline).
class header_parser {
 public:
  header_parser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  npy_header parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<shape_t> shape;
    expect('{');
    while (!accept('}')) {
      auto key = string_literal();
      expect(':');
      if (key == "descr" && !descr)
        descr = string_literal();
      else if (key == "fortran_order" && !fortran_order)
        fortran_order = boolean_literal();
      else if (key == "shape" && !shape)
        shape = tuple_literal();
      else
        fail("unexpected or repeated key '" + key + "'");
      if (!accept(','))
        expect_closing('}');
    }
    skip_space();
    if (pos_ != text_.size())
      fail("text after the dict");
    if (!descr || !fortran_order || !shape)
      fail("needs the keys 'descr', 'fortran_order' and 'shape'");
    return {to_dtype(*descr), *fortran_order, std::move(*shape)};
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    constexpr std::size_t shown = 200;
    auto text = std::string(text_.substr(0, shown)) + (text_.size() > shown ? "..." : "");
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
      text.pop_back();
    throw error(path_ + ": malformed .npy header: " + what + " in \"" + text + "\"");
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }

  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!accept(c))
      fail(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
  }

  /// After an item without a trailing comma, the container must close.
  void expect_closing(char c) {
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != c)
      fail(std::string("expected ',' or '") + c + "' at offset " + std::to_string(pos_));
  }

  std::string string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a string at offset " + std::to_string(pos_));
    char quote = text_[pos_++];
    auto end = text_.find(quote, pos_);
    if (end == std::string_view::npos)
      fail("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }

  bool boolean_literal() {
    skip_space();
    constexpr std::array<std::pair<std::string_view, bool>, 2> words{{{"True", true},
                                                                       {"False", false}}};
    for (auto [word, value] : words)
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    fail("expected True or False at offset " + std::to_string(pos_));
  }

  shape_t tuple_literal() {
    shape_t shape;
    expect('(');
    while (!accept(')')) {
      shape.push_back(integer_literal());
      if (!accept(','))
        expect_closing(')');
    }
    return shape;
  }

  /// A non-negative decimal int (Python 2's numpy wrote a trailing 'L').
  std::int64_t integer_literal() {
    skip_space();
    auto start = pos_;
    std::int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int digit = text_[pos_++] - '0';
      if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
        fail("dimension too large at offset " + std::to_string(start));
      value = value * 10 + digit;
    }
    if (pos_ == start)
      fail("expected a non-negative int at offset " + std::to_string(start));
    if (pos_ < text_.size() && text_[pos_] == 'L')
      ++pos_;
    return value;
  }

  dtype to_dtype(const std::string& descr) const {
    for (const auto& entry : descrs)
      if (entry.descr == descr)
        return entry.type;
    if (descr.starts_with('>'))
      throw error(path_ + ": big-endian dtype '" + descr +
                  "' is not supported (save it little-endian: a.astype(a.dtype.newbyteorder('<')))");
    std::string known;
    for (const auto& entry : descrs)
      known += (known.empty() ? "" : ", ") + std::string(entry.descr);
    throw error(path_ + ": unsupported dtype '" + descr + "' (supported: " + known + ")");
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

/// A binary input file that knows its size and reports short reads naming the file.
class npy_input {
 public:
  explicit npy_input(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    std::error_code ec;
    if (!in_ || std::filesystem::is_directory(path, ec))
      throw error(path + ": cannot open for reading");
    size_ = std::filesystem::file_size(path, ec);
    if (ec)
      throw error(path + ": cannot read the file size: " + ec.message());
  }

  std::uint64_t size() const { return size_; }

  /// Reads exactly `count` bytes; `what` names them in the truncation message.
  void read(void* out, std::uint64_t count, const char* what) {
    if (count == 0)
      return;
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(count));
    if (static_cast<std::uint64_t>(in_.gcount()) != count)
      throw error(path_ + ": truncated " + what + ": needs " + std::to_string(count) +
                  " bytes, got " + std::to_string(in_.gcount()));
  }

 private:
  const std::string& path_;
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

std::uint64_t little_endian(const unsigned char* bytes, int count) {
  std::uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i)
    value = value << 8 | bytes[i];
  return value;
}

/// Reads and checks the magic string, version and header, leaving `in` at the data.
/// Returns the header and the number of bytes before the data.
std::pair<npy_header, std::uint64_t> read_header(npy_input& in, const std::string& path) {
  std::array<unsigned char, 12> prefix{};
  auto have = static_cast<std::size_t>(std::min<std::uint64_t>(in.size(), 8));
  in.read(prefix.data(), have, "header");
  auto magic_seen = std::min(have, magic.size());
  if (std::memcmp(prefix.data(), magic.data(), magic_seen) != 0)
    throw error(path + ": not a .npy file (bad magic string)");
  if (have < 8)
    throw error(path + ": truncated header: " + std::to_string(in.size()) + " bytes");
  int major = prefix[6], minor = prefix[7];
  if (!(major >= 1 && major <= 3 && minor == 0))
    throw error(path + ": unsupported .npy format version " + std::to_string(major) + "." +
                std::to_string(minor) + " (1.0, 2.0 and 3.0 are)");
  int length_bytes = major == 1 ? 2 : 4;
  if (in.size() < 8u + length_bytes)
    throw error(path + ": truncated header: " + std::to_string(in.size()) + " bytes");
  in.read(prefix.data() + 8, static_cast<std::uint64_t>(length_bytes), "header");
  auto header_length = little_endian(prefix.data() + 8, length_bytes);
  std::uint64_t data_offset = 8u + length_bytes + header_length;
  if (data_offset > in.size())
    throw error(path + ": truncated header: it needs " + std::to_string(data_offset) +
                " bytes, the file has " + std::to_string(in.size()));
  std::string text(static_cast<std::size_t>(header_length), '\0');
  in.read(text.data(), header_length, "header");
  return {header_parser(text, path).parse(), data_offset};
}

} // namespace

tensor read_npy(const std::string& path) {
  npy_input in(path);
  auto [header, data_offset] = read_header(in, path);
  if (header.fortran_order)
    throw error(path + ": fortran_order True is not supported (save a C-ordered array: "
                       "np.ascontiguousarray(a))");
  auto element_size = size_of(header.type);
  std::uint64_t limit = std::numeric_limits<std::int64_t>::max() / element_size, numel = 1;
  for (auto d : header.shape) {
    if (d != 0 && numel > limit / static_cast<std::uint64_t>(d))
      throw error(path + ": the element count of shape " + python_tuple(header.shape) +
                  " overflows");
    numel *= static_cast<std::uint64_t>(d);
  }
  std::uint64_t data_bytes = numel * element_size, file_data = in.size() - data_offset;
  if (data_bytes != file_data)
    throw error(path + ": " + (data_bytes > file_data ? "truncated data" : "trailing bytes") +
                ": shape " + python_tuple(header.shape) + " of '" +
                std::string(find_descr(header.type)->descr) + "' needs " + std::to_string(data_bytes) + " data bytes, the file has " +
                std::to_string(file_data));
  tensor t(header.type, header.shape);
  in.read(t.raw(), data_bytes, "data");
  if (header.type == dtype::boolean) {
    auto bytes = static_cast<const unsigned char*>(t.raw());
    auto bad = std::find_if(bytes, bytes + data_bytes, [](unsigned char b) { return b > 1; });
    if (bad != bytes + data_bytes)
      throw error(path + ": bool element " + std::to_string(bad - bytes) + " is " +
                  std::to_string(*bad) + ", not 0 or 1");
  }
  return t;
}

void write_npy(const std::string& path, const tensor& t) {
  if (!t.initialized())
    throw error(path + ": cannot write an uninitialised tensor as .npy");
  if (t.where().type != place::kind::cpu)
    throw error(path + ": cannot write a tensor on " + to_string(t.where()) + " as .npy");
  const auto* entry = find_descr(t.type());
  if (!entry)
    throw error(path + ": .npy cannot hold dtype " + to_string(t.type()));
  std::string header = "{'descr': '" + std::string(entry->descr) +
                       "', 'fortran_order': False, 'shape': " + python_tuple(t.shape()) + ", }";
  // numpy pads the header with spaces and a newline so the data starts 64-byte aligned.
  header += std::string((64 - (magic.size() + 4 + header.size() + 1) % 64) % 64, ' ') + '\n';
  if (header.size() > std::numeric_limits<std::uint16_t>::max())
    throw error(path + ": shape of rank " + std::to_string(t.rank()) +
                " is too long for a .npy 1.0 header");
  std::string prefix(magic);
  prefix += {'\x01', '\x00', static_cast<char>(header.size() & 0xff),
             static_cast<char>(header.size() >> 8)};
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << prefix << header;
  out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.bytes()));
  out.close();
  if (!out)
    throw error(path + ": cannot write");
}

} // namespace pe
