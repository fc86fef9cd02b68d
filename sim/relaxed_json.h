// JSON as json-c reads it (rt-app's reader), made strict JSON for nlohmann's parser. Shared
// by the rt-app workload (workloads/rt_app_parse.cc) and the host runner (real/rt_app.cc).
#pragma once
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace sim {

// rt-app's inputs as its documentation writes them, made strict JSON for nlohmann's parser:
// json-c (rt-app's reader) takes a comma before '}' or ']', dropped here; and a key repeated
// in one object (two "run" events, two phases of one name) is renamed with a number as
// rt-app's workgen does before it runs rt-app ("run", "run1", ...): rt-app tells an event by
// the start of its key, so the events stay in the file's order. Strings and comments are kept.
inline std::string relaxed_json_to_strict(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  struct Level {
    bool object;
    std::set<std::string> keys;
  };
  std::vector<Level> stack;
  bool expect_key = false;
  // Skips white space and comments from i; returns the index of the next other character.
  auto skip = [&](size_t j) {
    for (;;) {
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j + 1 < s.size() && s[j] == '/' && s[j + 1] == '*') {
        const size_t e = s.find("*/", j + 2);
        j = e == std::string::npos ? s.size() : e + 2;
      } else if (j + 1 < s.size() && s[j] == '/' && s[j + 1] == '/') {
        const size_t e = s.find('\n', j);
        j = e == std::string::npos ? s.size() : e;
      } else {
        return j;
      }
    }
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {  // a string, escapes included
      size_t j = i + 1;
      while (j < s.size() && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      j = std::min(j, s.size() - 1);
      std::string tok = s.substr(i, j - i + 1);
      if (expect_key && !stack.empty() && stack.back().object && skip(j + 1) < s.size() && s[skip(j + 1)] == ':') {
        std::set<std::string>& keys = stack.back().keys;
        const std::string key = tok.size() >= 2 ? tok.substr(1, tok.size() - 2) : tok;
        std::string name = key;
        for (int n = 1; !keys.insert(name).second; ++n) name = key + std::to_string(n);
        tok = "\"" + name + "\"";
      }
      expect_key = false;
      out += tok;
      i = j;
    } else if (c == '/' && i + 1 < s.size() && (s[i + 1] == '/' || s[i + 1] == '*')) {
      const size_t stop = skip(i);
      out.append(s, i, stop - i);
      i = stop - 1;
    } else if (c == ',') {
      const size_t j = skip(i + 1);
      expect_key = !stack.empty() && stack.back().object;
      if (j < s.size() && (s[j] == '}' || s[j] == ']')) continue;
      out += c;
    } else {
      if (c == '{' || c == '[') {
        stack.push_back({c == '{', {}});
        expect_key = c == '{';
      } else if ((c == '}' || c == ']') && !stack.empty()) {
        stack.pop_back();
      }
      out += c;
    }
  }
  return out;
}

}  // namespace sim
