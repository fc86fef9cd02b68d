// The schedlab command line: parsing and the run / list / bench commands, as a function
// tests can call. Exit codes: 0 success, 1 internal failure, 2 bad input or an output file
// that cannot be written (one line on stderr naming the parameter or file and the value
// given; no output file written).
#pragma once
#include <string>
#include <vector>

namespace cli {

int main_with_args(const std::vector<std::string>& args);

}  // namespace cli
