schedlab_test(tests/scenario/compare_share_test.cc)
