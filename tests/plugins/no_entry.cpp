// A shared library without the xfbench entry point.
extern "C" __attribute__((visibility("default"))) int not_a_plugin() { return 42; }
