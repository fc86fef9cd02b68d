schedlab_test(tests/workloads/workloads_test.cc)
