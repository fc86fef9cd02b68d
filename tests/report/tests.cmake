schedlab_test(tests/report/report_test.cc)
