# tests/real: the time slice extension library and the real-kernel runner. Each test also
# links schedlab_real (the runner), which the schedlab_test helper does not know about.
schedlab_test(tests/real/slice_ext_select_test.cc)
target_link_libraries(tests_real_slice_ext_select_test PRIVATE schedlab_real)
schedlab_test(tests/real/slice_ext_host_test.cc)
target_link_libraries(tests_real_slice_ext_host_test PRIVATE schedlab_real)
schedlab_test(tests/real/slice_lock_test.cc)
target_link_libraries(tests_real_slice_lock_test PRIVATE schedlab_real)
schedlab_test(tests/real/runner_test.cc)
target_link_libraries(tests_real_runner_test PRIVATE schedlab_real)
schedlab_test(tests/real/runner_window_test.cc)
target_link_libraries(tests_real_runner_window_test PRIVATE schedlab_real)
schedlab_test(tests/real/hog_process_test.cc)
target_link_libraries(tests_real_hog_process_test PRIVATE schedlab_real)
