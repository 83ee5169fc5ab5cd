// Running tleak itself under Valgrind's memcheck and folding memcheck's printed figures into the
// report: `tleak run --valgrind`.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tleak/diagnosis/report.h"

namespace tleak::diagnosis {

struct MemcheckSummary {
  bool found = false;  // a LEAK SUMMARY was printed
  std::int64_t definitely_lost = 0, indirectly_lost = 0, possibly_lost = 0, still_reachable = 0;
  std::int64_t errors = -1;  // from ERROR SUMMARY; -1 if absent
};

// Reads memcheck's text output: the last LEAK SUMMARY and the last ERROR SUMMARY.
MemcheckSummary parse_memcheck_log(const std::string& log);

class MemcheckError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The valgrind program on PATH; throws MemcheckError saying how to install it when there is none.
std::string find_valgrind();

// Runs `self run <run_args> --format json --output <temp>` under memcheck with `suppressions`, and
// returns the child's report with memcheck's printed figures merged into report.memcheck. The
// memcheck log is kept at `log_path`. Throws MemcheckError if the child fails.
Report run_under_memcheck(const std::string& self, const std::vector<std::string>& run_args,
                          const std::string& suppressions, const std::string& log_path);

}  // namespace tleak::diagnosis
