// Embeds a trace file in the visualizer page.
#include "tools/rill/trace_view.h"

#include <filesystem>
#include <fstream>

#include "rill/error.h"
#include "tools/rill/trace_file.h"

namespace rill::trace {
namespace {

void ReplaceAll(std::string* text, const std::string& from, const std::string& to) {
  for (size_t at = text->find(from); at != std::string::npos;
       at = text->find(from, at + to.size())) {
    text->replace(at, from.size(), to);
  }
}

}  // namespace

std::string EscapeForScript(const std::string& json_text) {
  std::string out = json_text;
  ReplaceAll(&out, "</", "<\\/");
  ReplaceAll(&out, "<!--", "<\\u0021--");
  return out;
}

std::string EmbedTrace(const std::string& template_html, const std::string& template_path,
                       const std::string& json_text) {
  const std::string slot = kTraceSlot;
  const size_t at = template_html.find(slot);
  RILL_CHECK(at != std::string::npos, kInvalidArgument, template_path,
             ": not a visualizer page: it has no ", slot);
  RILL_CHECK(template_html.find(slot, at + 1) == std::string::npos, kInvalidArgument, template_path,
             ": has more than one ", slot);
  const size_t null_at = at + slot.find("null");
  std::string page = template_html.substr(0, null_at);
  page += EscapeForScript(json_text);
  page += template_html.substr(null_at + 4);
  return page;
}

void WriteTraceView(const std::string& trace_path, const std::string& template_path,
                    const std::string& out_path) {
  const std::string trace_text = ReadTextFile(trace_path);
  ParseTraceJson(trace_text, trace_path);
  std::error_code ec;
  RILL_CHECK(std::filesystem::is_regular_file(template_path, ec), kNotFound, "the visualizer page ",
             template_path,
             " does not exist; build it with `cmake --build build --target visualizer` (needs "
             "node and npm), or give its path with --template or RILL_VISUALIZER_HTML");
  const std::string page = EmbedTrace(ReadTextFile(template_path), template_path, trace_text);
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  RILL_CHECK(out, kIo, out_path, ": cannot open for writing");
  out << page;
  out.close();
  RILL_CHECK(out, kIo, out_path, ": write failed");
}

}  // namespace rill::trace
