// The registry of time slice extension designs: one line per design besides "none",
// SLICE_EXT_DESIGN(Enum, name). `name` is what `slice_ext=` and a workload's `ext=` take; the
// design's tables are `slice_ext_<name>_ops` (kernel side, kernel/slice_ext_<name>.cc) and
// `<name>_protocol` (user side, user/slice_ext.cc). Expanded by kernel/config.h (the
// SliceExtAbi values), kernel/slice_ext.cc (slice_ext_select()) and user/slice_ext.cc
// (slice_ext_protocol()); the order is the order names are listed in and extend-sched2's
// `mode` numbers (1, 2, 3).
// No include guard: included once per expansion, with SLICE_EXT_DESIGN defined.
SLICE_EXT_DESIGN(Rfc, rfc)
SLICE_EXT_DESIGN(Rseq2023, rseq2023)
SLICE_EXT_DESIGN(Mainline, mainline)
