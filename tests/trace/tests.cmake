schedlab_test(tests/trace/trace_test.cc)
schedlab_test(tests/trace/tracepoints_test.cc)
