schedlab_test(tests/report/report_test.cc)
schedlab_test(tests/report/stats_test.cc)
schedlab_test(tests/report/compare_test.cc)
schedlab_test(tests/report/csv_test.cc)
