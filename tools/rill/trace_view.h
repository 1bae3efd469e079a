// A self-contained HTML page of a trace (`rill trace view`): the built
// visualizer page (tools/visualizer/) with the trace file embedded in it.
#pragma once

#include <string>

namespace rill::trace {

// Where the page reads its trace; a template holds it exactly once.
inline constexpr const char* kTraceSlot =
    R"(<script id="rill-trace" type="application/json">null</script>)";

// The JSON text made safe inside a <script> element: every "</" becomes
// "<\/" and every "<!--" becomes "<\u0021--". Both can only occur inside JSON
// strings, where the escapes read back as the same characters.
std::string EscapeForScript(const std::string& json_text);

// `template_html` with the slot's `null` replaced by the escaped trace.
// Throws rill::Error kInvalidArgument, naming `template_path`, when the slot
// is missing or there is more than one.
std::string EmbedTrace(const std::string& template_html, const std::string& template_path,
                       const std::string& json_text);

// Reads the trace (checked to be a trace file) and the template, writes the
// page to `out_path`. A missing template fails with how to build it.
void WriteTraceView(const std::string& trace_path, const std::string& template_path,
                    const std::string& out_path);

}  // namespace rill::trace
