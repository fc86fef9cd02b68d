schedlab_test(tests/hw/machine_test.cc)
schedlab_test(tests/hw/host_test.cc)
