// Program files: text/binary parsing with located errors, saving, and the
// readable listing used by `rill print`.
#include "rill/program_io.h"

#include <fcntl.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "rill/data_type.h"
#include "rill/error.h"

namespace rill {
namespace {

// Keeps the first parse error (the parser stops there anyway) with its 1-based position.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!message_.empty()) return;
    message_ = line >= 0 ? StrCat(line + 1, ":", column + 1, ": ", message) : message;
  }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

std::string Prefix(const std::string& source) { return source.empty() ? "" : source + ": "; }

std::string Extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

bool IsBinaryProgramPath(const std::string& path) {
  const std::string ext = Extension(path);
  return ext == ".pb" || ext == ".bin";
}

std::string ErrnoText() { return std::strerror(errno); }

// Shortest text that reads back as the same float.
std::string FloatToString(float value) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, result.ptr);
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string DataTypeText(proto::DataType type) {
  switch (type) {
    case proto::FLOAT32:
    case proto::FLOAT64:
    case proto::INT32:
    case proto::INT64: return DataTypeName(FromProto(type));
    default: break;
  }
  return StrCat("<invalid dtype ", static_cast<int>(type), ">");
}

std::string AttrValueText(const proto::Attr& attr) {
  auto join = [](const auto& values, auto&& one) {
    std::string out = "[";
    bool first = true;
    for (const auto& v : values) {
      if (!first) out += ", ";
      first = false;
      out += one(v);
    }
    return out + "]";
  };
  switch (attr.value_case()) {
    case proto::Attr::kB: return attr.b() ? "true" : "false";
    case proto::Attr::kI: return std::to_string(attr.i());
    case proto::Attr::kF: return FloatToString(attr.f());
    case proto::Attr::kS: return Quoted(attr.s());
    case proto::Attr::kInts:
      return join(attr.ints().values(), [](int64_t v) { return std::to_string(v); });
    case proto::Attr::kFloats: return join(attr.floats().values(), FloatToString);
    case proto::Attr::kStrings: return join(attr.strings().values(), Quoted);
    case proto::Attr::kBlock: return StrCat("block ", attr.block());
    case proto::Attr::kBlocks:
      return "blocks " + join(attr.blocks().values(), [](int32_t v) { return std::to_string(v); });
    case proto::Attr::VALUE_NOT_SET: break;
  }
  return "<unset>";
}

std::string SlotsText(const google::protobuf::RepeatedPtrField<proto::Slot>& slots) {
  std::string out;
  for (int i = 0; i < slots.size(); ++i) {
    if (i) out += ", ";
    out += slots[i].name() + "=[";
    for (int j = 0; j < slots[i].vars_size(); ++j) {
      if (j) out += ", ";
      out += slots[i].vars(j);
    }
    out += "]";
  }
  return out;
}

// "pserver 1", "pserver (any)", "trainer 0".
std::string PlacementText(const proto::Placement& placement) {
  std::string role;
  switch (placement.role()) {
    case proto::Placement::ROLE_TRAINER: role = "trainer"; break;
    case proto::Placement::ROLE_PSERVER: role = "pserver"; break;
    default: role = StrCat("role ", static_cast<int>(placement.role())); break;
  }
  return placement.index() < 0 ? role + " (any)" : StrCat(role, " ", placement.index());
}

}  // namespace

proto::ProgramDesc ParseProgramText(const std::string& text, const std::string& source) {
  proto::ProgramDesc program;
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  google::protobuf::LogSilencer quiet;  // errors go to the collector, not stderr
  if (!parser.ParseFromString(text, &program)) {
    Fail(ErrorCode::kParse, Prefix(source),
         errors.message().empty() ? "not a text-format program" : errors.message());
  }
  return program;
}

proto::ProgramDesc ParseProgramBinary(const std::string& bytes, const std::string& source) {
  proto::ProgramDesc program;
  google::protobuf::LogSilencer quiet;  // proto3 UTF-8 complaints would go to stderr
  if (!program.ParseFromString(bytes)) {
    Fail(ErrorCode::kParse, Prefix(source), "not a binary ProgramDesc (", bytes.size(),
         " bytes could not be parsed)");
  }
  return program;
}

bool IsTextProgramPath(const std::string& path) {
  const std::string ext = Extension(path);
  return ext == ".pbtxt" || ext == ".txt" || ext == ".prototxt";
}

proto::ProgramDesc LoadProgram(const std::string& path) {
  const std::string contents = ReadFileToString(path);
  if (IsTextProgramPath(path)) return ParseProgramText(contents, path);
  if (IsBinaryProgramPath(path)) return ParseProgramBinary(contents, path);
  // Unknown extension: binary first. Text often parses as binary made only of
  // unknown fields, so a binary parse counts only when every field is known.
  try {
    proto::ProgramDesc program = ParseProgramBinary(contents, path);
    proto::ProgramDesc known = program;
    known.DiscardUnknownFields();
    if (known.ByteSizeLong() == program.ByteSizeLong()) return program;
  } catch (const Error&) {
    // Fall through to text.
  }
  try {
    return ParseProgramText(contents, path);
  } catch (const Error& e) {
    Fail(ErrorCode::kParse, e.message(), " (the file is not a binary program either)");
  }
}

std::string ProgramToText(const proto::ProgramDesc& program) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(program, &text);
  return text;
}

void SaveProgram(const proto::ProgramDesc& program, const std::string& path) {
  std::string contents;
  if (IsTextProgramPath(path)) {
    contents = ProgramToText(program);
  } else {
    RILL_CHECK(program.SerializeToString(&contents), kInternal, path,
               ": could not serialize the program");
  }
  WriteFileAtomically(path, contents);
}

std::string FormatProgram(const proto::ProgramDesc& program) {
  std::ostringstream out;
  if (program.random_seed() != 0) out << "random_seed " << program.random_seed() << "\n";
  for (int b = 0; b < program.blocks_size(); ++b) {
    const auto& block = program.blocks(b);
    if (b) out << "\n";
    out << "block " << block.idx() << " (parent " << block.parent_idx();
    if (block.has_placement() && block.placement().role() != proto::Placement::ROLE_NONE) {
      out << ", placed on " << PlacementText(block.placement());
    }
    out << ")\n";
    for (const auto& var : block.vars()) {
      out << "  var " << var.name() << ": " << DataTypeText(var.dtype()) << "[";
      for (int i = 0; i < var.shape_size(); ++i) out << (i ? ", " : "") << var.shape(i);
      out << "]";
      std::vector<std::string> flags;
      if (var.kind() != proto::DENSE_TENSOR) {
        flags.push_back(var.kind() == proto::CHANNEL       ? std::string("channel")
                        : var.kind() == proto::READER      ? std::string("reader")
                        : var.kind() == proto::STEP_SCOPES ? std::string("step_scopes")
                        : var.kind() == proto::SELECTED_ROWS
                            ? std::string("selected_rows")
                            : StrCat("kind ", static_cast<int>(var.kind())));
      }
      if (var.persistable()) flags.push_back("persistable");
      if (var.parameter()) flags.push_back("parameter");
      if (var.stop_gradient()) flags.push_back("stop_gradient");
      if (!flags.empty()) {
        out << "  (";
        for (size_t i = 0; i < flags.size(); ++i) out << (i ? ", " : "") << flags[i];
        out << ")";
      }
      out << "\n";
    }
    for (int i = 0; i < block.ops_size(); ++i) {
      const auto& op = block.ops(i);
      out << "  " << i << ": " << op.type() << "(" << SlotsText(op.inputs()) << ") -> ("
          << SlotsText(op.outputs()) << ")";
      if (op.attrs_size() > 0) {
        out << "  {";
        for (int a = 0; a < op.attrs_size(); ++a) {
          out << (a ? ", " : "") << op.attrs(a).name() << "=" << AttrValueText(op.attrs(a));
        }
        out << "}";
      }
      out << "\n";
    }
  }
  return out.str();
}

std::string ReadFileToString(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    Fail(ErrorCode::kIo, path, ": is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(ErrorCode::kIo, path, ": cannot open for reading: ", ErrnoText());
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) Fail(ErrorCode::kIo, path, ": read failed: ", ErrnoText());
  return contents.str();
}

void WriteFileAtomically(const std::string& path, const std::string& contents) {
  RILL_CHECK(!path.empty(), kIo, "cannot write a file with an empty path");
  static std::atomic<unsigned> counter{0};
  const std::string temp =
      StrCat(path, ".tmp.", static_cast<long>(::getpid()), ".", counter.fetch_add(1));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Fail(ErrorCode::kIo, path, ": cannot create ", temp, ": ", ErrnoText());
  auto abandon = [&](const std::string& what) {
    const std::string why = ErrnoText();
    ::close(fd);
    ::unlink(temp.c_str());
    Fail(ErrorCode::kIo, path, ": ", what, ": ", why);
  };
  const char* data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write failed");
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("flush to disk failed");
  if (::close(fd) != 0) {
    const std::string why = ErrnoText();
    ::unlink(temp.c_str());
    Fail(ErrorCode::kIo, path, ": close failed: ", why);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = ErrnoText();
    ::unlink(temp.c_str());
    Fail(ErrorCode::kIo, path, ": cannot rename ", temp, " into place: ", why);
  }
}

void CheckWritable(const std::string& path) {
  RILL_CHECK(!path.empty(), kIo, "cannot write a file with an empty path");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    Fail(ErrorCode::kIo, path, ": is a directory, not a file");
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  // The name WriteFileAtomically's temporary files take, so the probe fails
  // where they would.
  const std::string probe = StrCat(path, ".tmp.", static_cast<long>(::getpid()), ".probe");
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    Fail(ErrorCode::kIo, path, ": not writable: cannot create a file in ", dir, " (", ErrnoText(),
         ")");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace rill
