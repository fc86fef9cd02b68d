// The registry of mm_cid implementations besides "off": one line each, MM_CID_IMPL(Enum,
// name). `name` is what `mm_cid=` takes; the implementation's table is `mm_cid_<name>_ops`
// (kernel/sched/mm_cid_<name>.cc, declared in kernel/sched/mm_cid.h). Expanded by
// kernel/config.h (the MmCid values) and kernel/sched/mm_cid.cc (mm_cid_select()). Which
// versions have which implementation is a rule of validate_config() (kernel/config.cc).
// No include guard: included once per expansion, with MM_CID_IMPL defined.
MM_CID_IMPL(Lazy, lazy)
MM_CID_IMPL(Batched, batched)
MM_CID_IMPL(Owner, owner)
