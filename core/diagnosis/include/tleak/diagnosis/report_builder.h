// Turns a finished Recording into a Report's totals, timeline, sites and summary: the step every
// event source shares (a scenario's trackers, a program's agent). The source says how to get a
// site's return addresses and with which symbolizer to name them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tleak/allocator_stats.h"
#include "tleak/diagnosis/classifier.h"
#include "tleak/diagnosis/recorder.h"
#include "tleak/diagnosis/report.h"
#include "tleak/symbolizer.h"

namespace tleak::diagnosis {

using SiteStack = std::function<std::vector<std::uintptr_t>(SiteId)>;
// Appends to a stack the frames a frame word of a site stands for (a return address: the functions
// inlined there, then its own; or a source's own encoding such as a Python frame).
using FrameResolver = std::function<void(std::uintptr_t, std::vector<Frame>&)>;

// `stats`: the allocators' own figures in AllocatorId order, or empty when the source has none
// (a program's malloc): rounded and reserved bytes are then reported as the live ones. Site labels
// take the user's Python code to be what `report.run.program` says (python_users_code).
// `max_sites`: bounded sites past this many (the smallest peaks) are added up in omitted_sites
// instead of listed; leak, growth and retained sites always are.
// A thousand: more than anyone reads, and a program that makes hundreds of thousands of stacks
// (importing PyTorch) would otherwise spend most of its report on sites of a few bytes.
inline constexpr std::size_t kDefaultMaxSites = 1000;
// A site's frames as a report shows them, innermost first, resolved up to main: the frames below
// it are process start-up, the same for every site, and resolving them would mean loading the C
// library's debug info for nothing.
std::vector<Frame> site_frames(const std::vector<std::uintptr_t>& addresses, const FrameResolver& resolve);

// `judged`: the recording's sites judged before its end (classify), or null.
void fill_report(Report& report, const Recording& recording, const ClassifierOptions& options,
                 const std::vector<AllocatorStats>& stats, const SiteStack& stack, const FrameResolver& resolve,
                 std::size_t max_sites = kDefaultMaxSites,
                 const SiteJudgements* judged = nullptr);

// The untracked baseline: only the allocators' own figures.
void fill_untracked_totals(Report& report, const std::vector<AllocatorInfo>& allocators,
                           const std::vector<AllocatorStats>& stats);

}  // namespace tleak::diagnosis
