schedlab_test(tests/workloads/workloads_test.cc)
schedlab_test(tests/workloads/mm_cid_compaction_workload_test.cc)
schedlab_test(tests/workloads/cyclictest_test.cc)
schedlab_test(tests/workloads/hackbench_test.cc)
