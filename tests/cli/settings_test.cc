// The declared lists of the configuration surfaces (kernel settings, machine costs) and the
// design registries: the parser, the errors, `schedlab list` and the docs tables come from
// them, so each test here walks a whole list.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "hw/machine.h"
#include "kernel/config.h"
#include "kernel/settings.h"
#include "kernel/sched/mm_cid.h"
#include "kernel/slice_ext.h"
#include "user/slice_ext.h"
#include "workloads/workload.h"

namespace {

std::string source_file(const std::string& rel) {
  const char* src = std::getenv("SCHEDLAB_SOURCE_DIR");
  std::ifstream in(std::string(src ? src : ".") + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string list_output(std::vector<std::string> args) {
  ::testing::internal::CaptureStdout();
  const int rc = cli::main_with_args(args);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  return out;
}

// docs/settings.md is `schedlab list settings --markdown`: regenerate it when the list changes.
TEST(Settings, DocsSettingsMdIsTheGeneratedTable) {
  const std::string doc = source_file("docs/settings.md");
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(doc, list_output({"list", "settings", "--markdown"}))
      << "regenerate: schedlab list settings --markdown > docs/settings.md";
}

// The cost table of docs/machines.md is `schedlab list costs --markdown`, between its markers.
TEST(Settings, DocsMachinesMdCostTableIsTheGeneratedTable) {
  const std::string doc = source_file("docs/machines.md");
  const std::string begin = "<!-- generated: schedlab list costs --markdown -->\n";
  const std::string end = "<!-- end of generated table -->";
  const size_t a = doc.find(begin), b = doc.find(end);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_EQ(doc.substr(a + begin.size(), b - a - begin.size()), list_output({"list", "costs", "--markdown"}))
      << "regenerate the table of docs/machines.md: schedlab list costs --markdown";
}

// A value of `s` other than its value in `d`, as text a scenario file would write, or "" if
// the setting has no other (a single-valued range).
std::string other_value(const kernel::Setting& s, const kernel::KernelConfig& d) {
  using kernel::SettingType;
  switch (s.type) {
    case SettingType::Bool: return s.get(d, s.arg) ? "false" : "true";
    case SettingType::Boot01: return s.get(d, s.arg) ? "0" : "1";
    case SettingType::Int:
    case SettingType::Duration: {
      const int64_t v = s.get(d, s.arg);
      const int64_t o = v != s.lo ? s.lo : s.hi;
      if (o == v) return "";
      return std::to_string(o) + (s.type == SettingType::Duration ? "ns" : "");
    }
    case SettingType::Enum: {
      const int64_t v = s.get(d, s.arg);
      for (int i = 0; s.choice(i); ++i)
        if (i != v) return s.choice(i);
      return "";
    }
    case SettingType::Double: {
      const double v = s.get_d(d);
      return std::to_string(v != s.dlo ? s.dlo : s.dhi);
    }
  }
  return "";
}

// Every setting takes a value other than its default and then the default back, on every
// version, changing no other setting; and it refuses nonsense with an error that starts with
// its name and quotes the value.
TEST(Settings, EverySettingTakesItsOwnValueAndNamesItselfOnBadInput) {
  for (kernel::KernelVersion v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18,
                                  kernel::KernelVersion::V7_0}) {
    const kernel::KernelConfig d = kernel::default_config(v);
    for (const kernel::Setting& s : kernel::kernel_settings()) {
      SCOPED_TRACE(s.name);
      EXPECT_TRUE(kernel::is_config_key(s.name));
      const std::string dv = kernel::setting_value(s, d);
      const std::string other = other_value(s, d);
      if (other.empty()) continue;
      kernel::KernelConfig c = d;
      const std::string err = kernel::set_config_key(&c, s.name, other);
      if (!err.empty()) {
        ADD_FAILURE() << "'" << other << "' refused: " << err;
        continue;
      }
      EXPECT_NE(kernel::setting_value(s, c), dv) << "set to '" << other << "'";
      for (const kernel::Setting& t : kernel::kernel_settings()) {
        if (&t == &s) continue;
        EXPECT_EQ(kernel::setting_value(t, c), kernel::setting_value(t, d)) << t.name;
      }
      if (s.type == kernel::SettingType::Duration && s.get(d, s.arg) == 0) continue;  // "0 = the design's"
      if (std::string(s.name) == "mm_cid.scan_batch") continue;  // 0 = the default, not settable
      EXPECT_EQ(kernel::set_config_key(&c, s.name, dv), "");
      EXPECT_EQ(kernel::setting_value(s, c), dv);
    }
  }
  for (const kernel::Setting& s : kernel::kernel_settings()) {
    kernel::KernelConfig c = kernel::default_config(kernel::KernelVersion::V7_0);
    const std::string err = kernel::set_config_key(&c, s.name, "x#1");
    EXPECT_EQ(err.rfind(std::string(s.name) + ": ", 0), 0u) << err;
    EXPECT_NE(err.find("'x#1'"), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// Bounds come from the list: the first value outside them is refused, the bound itself taken.
TEST(Settings, IntegerBoundsAreTheListsBounds) {
  for (const kernel::Setting& s : kernel::kernel_settings()) {
    if (s.type != kernel::SettingType::Int) continue;
    SCOPED_TRACE(s.name);
    kernel::KernelConfig c = kernel::default_config(kernel::KernelVersion::V7_0);
    EXPECT_EQ(kernel::set_config_key(&c, s.name, std::to_string(s.lo)), "");
    EXPECT_EQ(kernel::set_config_key(&c, s.name, std::to_string(s.hi)), "");
    EXPECT_NE(kernel::set_config_key(&c, s.name, std::to_string(s.lo - 1)), "");
    EXPECT_NE(kernel::set_config_key(&c, s.name, std::to_string(s.hi + 1)), "");
  }
}

// A family's unknown member is the kernel's to refuse (by name), not a workload parameter.
TEST(Settings, UnknownMembersOfAFamilyAreKernelKeys) {
  EXPECT_TRUE(kernel::is_config_key("slice_ext.nope"));
  EXPECT_TRUE(kernel::is_config_key("sched_feat.NOPE"));
  EXPECT_FALSE(kernel::is_config_key("threads"));
  kernel::KernelConfig c;
  EXPECT_EQ(kernel::set_config_key(&c, "slice_ext.nope", "1"), "unknown kernel parameter 'slice_ext.nope'");
  EXPECT_EQ(kernel::set_config_key(&c, "sched_feat.NOPE", "true"),
            "sched_feat.NOPE: unknown scheduler feature 'NOPE'");
}

// Every cost takes a value other than its default through `--set machine.KEY`, changing no
// other cost, and then its default back; a bad value names the key.
TEST(Settings, EveryCostTakesItsDefaultAndNamesItselfOnBadInput) {
  auto text_of = [](const hw::CostSetting& f, int64_t v) {
    return f.type == hw::CostType::Bool ? std::string(v ? "true" : "false") : std::to_string(v);
  };
  for (const hw::CostSetting& f : hw::cost_settings()) {
    SCOPED_TRACE(f.key);
    hw::Machine m;
    const int64_t d = f.get(hw::Costs{});
    const int64_t other = f.type == hw::CostType::Bool ? !d : d != f.lo ? f.lo : f.hi;
    ASSERT_NE(other, d);
    EXPECT_TRUE(hw::set_cost(&m, f.key, text_of(f, other)).ok());
    EXPECT_EQ(f.get(m.costs), other);
    for (const hw::CostSetting& g : hw::cost_settings()) {
      if (&g == &f) continue;
      EXPECT_EQ(g.get(m.costs), g.get(hw::Costs{})) << g.key;
    }
    EXPECT_TRUE(hw::set_cost(&m, f.key, text_of(f, d)).ok());
    EXPECT_EQ(f.get(m.costs), d);
    const hw::LoadResult bad = hw::set_cost(&m, f.key, "x#1");
    EXPECT_NE(bad.error.find(f.key), std::string::npos) << bad.error;
    if (f.type != hw::CostType::Bool) {
      EXPECT_FALSE(hw::set_cost(&m, f.key, std::to_string(f.hi + 1)).ok());
    }
  }
}

// Each registered slice extension design has its name both ways and a table on each side
// that agree on whether there is anything to request.
TEST(Registry, EverySliceExtDesignHasANameAndATablePerSide) {
  for (int i = 0; i < kernel::kNrSliceExtAbi; ++i) {
    const auto abi = static_cast<kernel::SliceExtAbi>(i);
    const char* name = kernel::slice_ext_abi_name(abi);
    SCOPED_TRACE(name);
    kernel::SliceExtAbi back = kernel::SliceExtAbi::None;
    EXPECT_EQ(kernel::parse_slice_ext_abi(name, &back), "");
    EXPECT_EQ(back, abi);
    ASSERT_NE(user::slice_ext_protocol(abi), nullptr);
    EXPECT_EQ(user::slice_ext_protocol(abi)->configured, kernel::slice_ext_select(abi)->configured);
  }
  kernel::SliceExtAbi a;
  EXPECT_EQ(kernel::parse_slice_ext_abi("nope", &a),
            "slice_ext: unknown variant 'nope' (choose none, rfc, rseq2023, mainline)");
}

// Each registered mm_cid implementation is selected by its name.
TEST(Registry, EveryMmCidImplementationIsSelectedByItsName) {
  for (int i = 2; i < kernel::kNrMmCid; ++i) {
    const auto m = static_cast<kernel::MmCid>(i);
    kernel::KernelConfig c = kernel::default_config(kernel::KernelVersion::V6_18);
    ASSERT_EQ(kernel::set_config_key(&c, "mm_cid", kernel::mm_cid_name(m)), "");
    EXPECT_EQ(c.mm_cid, m);
    EXPECT_STREQ(kernel::mm_cid_select(c)->name, kernel::mm_cid_name(m));
  }
}

}  // namespace

namespace {

// The rows of the first "| parameter | default | meaning |" table of section `## name`:
// (parameter, default) pairs; a row may name several (`nice`, `hog_nice` | `0`, `0`), and one
// default may stand for all of its names.
std::vector<std::pair<std::string, std::string>> doc_param_rows(const std::string& doc, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> rows;
  const size_t sec = doc.find("\n## " + name + "\n");
  if (sec == std::string::npos) return rows;
  const size_t next = doc.find("\n## ", sec + 1);
  const std::string header = "| parameter | default | meaning |\n|---|---|---|\n";
  size_t pos = doc.find(header, sec);
  if (pos == std::string::npos || pos > next) return rows;
  pos += header.size();
  auto split = [](const std::string& cell) {
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
      const size_t comma = cell.find(", ", start);
      std::string item = cell.substr(start, comma - start);
      if (item == "(empty)") item = "``";
      if (item.size() >= 2 && item.front() == '`' && item.back() == '`') item = item.substr(1, item.size() - 2);
      out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 2;
    }
    return out;
  };
  while (pos < doc.size() && doc[pos] == '|') {
    const size_t eol = doc.find('\n', pos);
    const std::string line = doc.substr(pos, eol - pos);
    const size_t c1 = line.find(" | ", 1), c2 = line.find(" | ", c1 + 3);
    const std::vector<std::string> names = split(line.substr(2, c1 - 2));
    const std::vector<std::string> defaults = split(line.substr(c1 + 3, c2 - c1 - 3));
    for (size_t i = 0; i < names.size(); ++i)
      rows.emplace_back(names[i], defaults.size() == names.size() ? defaults[i] : defaults[0]);
    pos = eol + 1;
  }
  return rows;
}

}  // namespace

// A workload's parameter table in docs/workloads.md names each parameter it declares, once,
// with the declared default.
TEST(Settings, WorkloadDocTablesNameEveryDeclaredParameterWithItsDefault) {
  const std::string doc = source_file("docs/workloads.md");
  for (const workloads::WorkloadInfo& w : workloads::registry()) {
    SCOPED_TRACE(w.name);
    const auto rows = doc_param_rows(doc, w.name);
    if (rows.empty()) continue;  // described in prose (see the section)
    for (const workloads::ParamSpec& p : w.params) {
      int found = 0;
      for (const auto& [name, def] : rows) {
        if (name != p.name) continue;
        ++found;
        EXPECT_EQ(def, p.default_value) << p.name;
      }
      EXPECT_EQ(found, 1) << p.name;
    }
    for (const auto& [name, def] : rows) {
      bool declared = false;
      for (const workloads::ParamSpec& p : w.params) declared |= p.name == name;
      EXPECT_TRUE(declared) << name;
    }
  }
}
