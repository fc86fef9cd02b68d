# tests/fuzz: replays the fuzzer's regression inputs through its entry point (fuzz/).
schedlab_test(tests/fuzz/replay_test.cc)
target_link_libraries(tests_fuzz_replay_test PRIVATE schedlab_fuzz_input)
