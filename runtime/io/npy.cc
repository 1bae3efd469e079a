// NumPy .npy reading and writing: the magic string and version, the header
// (a Python dict literal naming descr, fortran_order and shape), then the
// raw element bytes.
#include "rill/npy.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "rill/program_io.h"

namespace rill {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicSize = 6;
constexpr size_t kHeaderAlignment = 64;

std::string Where(const std::string& source) { return source.empty() ? "npy data" : source; }

// Copies `count` elements of `size` bytes between little-endian file order and memory.
void CopyLittleEndian(void* dst, const void* src, int64_t count, size_t size) {
  const size_t total = static_cast<size_t>(count) * size;
  if (total == 0) return;
  std::memcpy(dst, src, total);
  if constexpr (std::endian::native == std::endian::big) {
    auto* bytes = static_cast<unsigned char*>(dst);
    for (int64_t i = 0; i < count; ++i) std::reverse(bytes + i * size, bytes + (i + 1) * size);
  }
}

uint32_t ReadLittle(const std::string& bytes, size_t at, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    value |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return value;
}

struct Header {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<Shape> shape;
};

// A parser for the Python dict literal of an .npy header:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& where) : text_(text), where_(where) {}

  Header Parse() {
    Header header;
    SkipSpace();
    Expect('{');
    SkipSpace();
    while (!Peek('}')) {
      const std::string key = ParseString();
      SkipSpace();
      Expect(':');
      SkipSpace();
      if (key == "descr") {
        if (header.descr) Error("key 'descr' appears twice");
        header.descr = ParseString();
      } else if (key == "fortran_order") {
        if (header.fortran_order) Error("key 'fortran_order' appears twice");
        header.fortran_order = ParseBool();
      } else if (key == "shape") {
        if (header.shape) Error("key 'shape' appears twice");
        header.shape = ParseShape();
      } else {
        Error("unexpected key '" + key + "' (expected descr, fortran_order and shape)");
      }
      SkipSpace();
      if (Peek(',')) {
        ++pos_;
        SkipSpace();
      } else if (!Peek('}')) {
        Error("expected ',' or '}'");
      }
    }
    ++pos_;
    SkipSpace();
    if (pos_ != text_.size()) Error("unexpected text after the closing '}'");
    if (!header.descr) Error("the header has no 'descr'");
    if (!header.fortran_order) Error("the header has no 'fortran_order'");
    if (!header.shape) Error("the header has no 'shape'");
    return header;
  }

 private:
  [[noreturn]] void Error(const std::string& what) const {
    Fail(ErrorCode::kParse, where_, ": malformed .npy header at character ", pos_ + 1, ": ", what,
         " in ", text_.substr(0, 200));
  }
  bool Peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  void Expect(char c) {
    if (!Peek(c)) Error(std::string("expected '") + c + "'");
    ++pos_;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  std::string ParseString() {
    if (!Peek('\'') && !Peek('"')) Error("expected a quoted string");
    const char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out += text_[pos_++];
    }
    if (pos_ >= text_.size()) Error("unterminated string");
    ++pos_;
    return out;
  }
  bool ParseBool() {
    if (text_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (text_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    Error("expected True or False");
  }
  int64_t ParseDim() {
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
      Error("expected a non-negative integer dimension");
    }
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) Error("dimension too large");
      value = value * 10 + digit;
    }
    if (Peek('L')) ++pos_;  // Python 2 long literals: (3L, 4L)
    return value;
  }
  Shape ParseShape() {
    Expect('(');
    SkipSpace();
    Shape shape;
    while (!Peek(')')) {
      shape.push_back(ParseDim());
      SkipSpace();
      if (Peek(',')) {
        ++pos_;
        SkipSpace();
      } else if (!Peek(')')) {
        Error("expected ',' or ')' in the shape");
      }
    }
    ++pos_;
    return shape;
  }

  const std::string& text_;
  const std::string& where_;
  size_t pos_ = 0;
};

DataType ParseDescr(const std::string& descr, const std::string& where) {
  if (descr.size() >= 2 && descr[0] == '>') {
    Fail(ErrorCode::kUnimplemented, where, ": big-endian data ('", descr,
         "') is not supported; save it little-endian");
  }
  const std::string code =
      descr.size() >= 2 && (descr[0] == '<' || descr[0] == '=' || descr[0] == '|') ? descr.substr(1)
                                                                                   : descr;
  if (code == "f4") return DataType::kFloat32;
  if (code == "f8") return DataType::kFloat64;
  if (code == "i4") return DataType::kInt32;
  if (code == "i8") return DataType::kInt64;
  Fail(ErrorCode::kUnimplemented, where, ": element type '", descr,
       "' is not supported (expected <f4, <f8, <i4 or <i8)");
}

const char* Descr(DataType type) {
  switch (type) {
    case DataType::kFloat32: return "<f4";
    case DataType::kFloat64: return "<f8";
    case DataType::kInt32: return "<i4";
    case DataType::kInt64: return "<i8";
  }
  return "?";
}

}  // namespace

Tensor ParseNpy(const std::string& bytes, const std::string& source) {
  const std::string where = Where(source);
  if (bytes.size() < kNpyMagicSize + 2 ||
      bytes.compare(0, kNpyMagicSize, kNpyMagic, kNpyMagicSize) != 0) {
    Fail(ErrorCode::kParse, where, ": not a .npy file (no \\x93NUMPY magic string)");
  }
  const int major = static_cast<unsigned char>(bytes[kNpyMagicSize]);
  const int minor = static_cast<unsigned char>(bytes[kNpyMagicSize + 1]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    Fail(ErrorCode::kParse, where, ": unsupported .npy format version ", major, ".", minor,
         " (expected 1.0, 2.0 or 3.0)");
  }
  const size_t length_width = major == 1 ? 2 : 4;
  const size_t header_start = kNpyMagicSize + 2 + length_width;
  if (bytes.size() < header_start) {
    Fail(ErrorCode::kParse, where, ": truncated .npy header (", bytes.size(), " bytes)");
  }
  const size_t header_length = ReadLittle(bytes, kNpyMagicSize + 2, length_width);
  if (header_length > bytes.size() - header_start) {
    Fail(ErrorCode::kParse, where, ": truncated .npy header: it says ", header_length,
         " bytes but the file has ", bytes.size() - header_start, " after the preamble");
  }
  const std::string header_text = bytes.substr(header_start, header_length);
  const Header header = HeaderParser(header_text, where).Parse();
  const DataType dtype = ParseDescr(*header.descr, where);
  if (*header.fortran_order) {
    Fail(ErrorCode::kUnimplemented, where,
         ": Fortran-order arrays are not supported; save a C-order array (np.ascontiguousarray)");
  }
  const Shape& shape = *header.shape;
  int64_t nonzero_product = 1;
  for (int64_t d : shape) {
    if (d == 0) continue;
    if (nonzero_product > std::numeric_limits<int64_t>::max() / d) {
      Fail(ErrorCode::kParse, where, ": .npy shape ", ShapeToString(shape), " is too large");
    }
    nonzero_product *= d;
  }
  // Overflow-safe element count: the data must fit in the file anyway.
  const size_t data_size = bytes.size() - header_start - header_length;
  const size_t item = SizeOf(dtype);
  uint64_t numel = 1;
  bool too_big = false;
  for (int64_t d : shape) {
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      too_big = true;
      break;
    }
    numel *= static_cast<uint64_t>(d);
  }
  too_big = too_big || numel > data_size / item + 1;
  const std::string described = StrCat(DataTypeName(dtype), ShapeToString(shape));
  if (too_big || numel * item > data_size) {
    Fail(ErrorCode::kParse, where, ": truncated .npy data: the header says ", described,
         too_big ? std::string(" (more bytes than the file has)")
                 : StrCat(" (", numel * item, " bytes)"),
         " but only ", data_size, " bytes follow the header");
  }
  if (numel * item < data_size) {
    Fail(ErrorCode::kParse, where, ": .npy data is ", data_size - numel * item,
         " bytes longer than the header's ", described, " (", numel * item, " bytes)");
  }
  Tensor tensor(dtype, shape);
  CopyLittleEndian(tensor.raw_data(), bytes.data() + header_start + header_length,
                   static_cast<int64_t>(numel), item);
  return tensor;
}

Tensor ReadNpy(const std::string& path) { return ParseNpy(ReadFileToString(path), path); }

std::string SerializeNpy(const Tensor& tensor) {
  RILL_CHECK(tensor.initialized(), kInvalidArgument, "cannot save a tensor that holds no value");
  RILL_CHECK(tensor.place().is_cpu(), kUnimplemented, "cannot save a tensor on ",
             tensor.place().ToString(), " as .npy; copy it to the CPU first");
  std::string dims;
  for (size_t i = 0; i < tensor.shape().size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(tensor.shape()[i]);
  }
  if (tensor.shape().size() == 1) dims += ",";
  std::string header = StrCat("{'descr': '", Descr(tensor.dtype()),
                              "', 'fortran_order': False, 'shape': (", dims, "), }");
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends
  // in '\n'. Version 1.0 stores the header length in 2 bytes, 2.0 in 4.
  auto padded = [&](size_t preamble) {
    const size_t unpadded = preamble + header.size() + 1;
    return header.size() + 1 + (kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment;
  };
  const bool v2 = padded(kNpyMagicSize + 4) > 0xffff;
  const size_t padded_size = padded(kNpyMagicSize + (v2 ? 6 : 4));
  header.append(padded_size - header.size() - 1, ' ');
  header += '\n';

  std::string out(kNpyMagic, kNpyMagicSize);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const uint32_t length = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
  out += header;
  const size_t data_start = out.size();
  out.resize(data_start + tensor.bytes());
  CopyLittleEndian(out.data() + data_start, tensor.raw_data(), tensor.numel(),
                   SizeOf(tensor.dtype()));
  return out;
}

void WriteNpy(const std::string& path, const Tensor& tensor) {
  std::string bytes;
  try {
    bytes = SerializeNpy(tensor);
  } catch (const Error& e) {
    Fail(e.code(), path, ": ", e.message());
  }
  WriteFileAtomically(path, bytes);
}

}  // namespace rill
