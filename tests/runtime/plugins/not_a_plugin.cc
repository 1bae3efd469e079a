// A shared library with no RILL_PLUGIN block.
extern "C" __attribute__((visibility("default"))) int not_a_plugin_answer() { return 42; }
