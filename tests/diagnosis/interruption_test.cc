// What an interruption removes (the table the SIGINT/SIGTERM handler reads): the files and empty
// directories registered while their objects live, files before their directory; nothing once
// they are gone.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "scratch_dir.h"
#include "tleak/diagnosis/interruption.h"

namespace tleak::diagnosis {
namespace {

TEST(Interruption, RemovesWhatIsRegisteredAndNothingElse) {
  const tleak::testing::ScratchDir scratch("tleak-interruption-test-");
  const std::filesystem::path dir = scratch.path() / "private", log = dir / "memcheck.log";
  const std::filesystem::path kept = scratch.path() / "kept.json", forgotten = scratch.path() / "forgotten.json";
  std::filesystem::create_directories(dir);
  for (const auto& file : {log, kept, forgotten}) std::ofstream(file) << "x";
  {
    std::optional<RemovedOnInterrupt> gone(std::in_place, forgotten.string(), RemovedOnInterrupt::Kind::kFile);
    gone.reset();  // its write ended: the file is the user's now
    // The directory registered before its file: still emptied first.
    const RemovedOnInterrupt directory(dir.string(), RemovedOnInterrupt::Kind::kDirectory);
    const RemovedOnInterrupt file(log.string(), RemovedOnInterrupt::Kind::kFile);
    remove_registered_files();
  }
  EXPECT_FALSE(std::filesystem::exists(log));
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_TRUE(std::filesystem::exists(kept));
  EXPECT_TRUE(std::filesystem::exists(forgotten));
  // Past the table's room a registration is dropped; ending it leaves the others registered.
  std::vector<std::optional<RemovedOnInterrupt>> many(RemovedOnInterrupt::kMaxRemovedOnInterrupt + 1);
  for (auto& r : many) r.emplace(kept.string(), RemovedOnInterrupt::Kind::kFile);
  many.back().reset();
  remove_registered_files();
  EXPECT_FALSE(std::filesystem::exists(kept));
}

}  // namespace
}  // namespace tleak::diagnosis
