// The checks reader on arbitrary bytes: it reads the file or throws CheckError, never crashes.
#include <cstdint>

#include "fuzz_input_file.h"
#include "tleak/scenarios/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const tleak::fuzz::InputFile file(data, size);
  try {
    tleak::scenarios::read_checks_file(file.path());
  } catch (const tleak::scenarios::CheckError&) {
  }
  return 0;
}
