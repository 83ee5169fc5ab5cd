// tleak's decoder of the agent's stream (AgentSource) on arbitrary messages. The agent lives in the
// user's process, whose memory errors can reach its buffers: a malformed stream must end in
// StreamError (the run's report says the stream broke), never in a crash, a sanitizer error or
// another exception, and whatever it accepts must make a report whose figures add up, and the same
// diagnosis from the sites judged at the exit request as from every site read again.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "agent_stream.h"
#include "tleak/diagnosis/agent_source.h"
#include "tleak/diagnosis/report_builder.h"

using namespace tleak::diagnosis;

// One listed site: a fuzzed stream has few, and past the first they are added up (omitted), which
// the listing from the judgements must get right.
constexpr std::size_t kListed = 1;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  AgentSource source;
  try {
    bool listed = false;
    tleak::fuzz::for_each_message(data, size, [&](std::span<const unsigned char> message) {
      source.consume(message);
      // What tleak's program session does when the agent waits at exit: send the live list.
      // and judge the sites while the agent scans.
      if (source.exit_requested() && !listed) {
        (void)source.live_list();
        source.judge_sites_at_exit(ClassifierOptions{}, kListed);
        listed = true;
      }
    });
    const Recording recording = source.finish();
    const SiteJudgements* judged = source.site_judgements();
    if (judged != nullptr) {
      const Diagnosis early = classify(recording, ClassifierOptions{}, kListed, iteration_words(), *judged);
      const Diagnosis again =
          classify(recording, ClassifierOptions{}, kListed, iteration_words(), judge_sites(recording, ClassifierOptions{}, 0));
      if (early.sites.size() != again.sites.size() || !(early.omitted == again.omitted)) std::abort();
      for (std::size_t i = 0; i < early.sites.size(); ++i) {
        if (early.sites[i].site != again.sites[i].site || early.sites[i].verdict != again.sites[i].verdict) std::abort();
      }
    }
    tleak::Symbolizer no_files(std::vector<tleak::ModuleInfo>{});  // never opens the paths of the input
    Report report;
    fill_report(report, recording, ClassifierOptions{}, {}, [&](tleak::SiteId s) { return source.stack(s); },
                [&](std::uintptr_t word, std::vector<tleak::Frame>& stack) { source.resolve(word, no_files, stack); }, kListed, judged);
    std::int64_t leaked = 0, reachable = report.omitted_sites.reachable_at_exit_bytes;
    std::int64_t unjudged = report.omitted_sites.unjudged_at_exit_bytes;
    for (const SiteReport& site : report.sites) {
      leaked += site.leaked_bytes;
      reachable += site.reachable_at_exit_bytes;
      unjudged += site.unjudged_at_exit_bytes;
    }
    if (leaked != report.totals.leaked_bytes || reachable != report.totals.reachable_at_exit_bytes ||
        unjudged != report.totals.unjudged_at_exit_bytes) {
      std::abort();
    }
  } catch (const StreamError&) {
  }
  return 0;
}
