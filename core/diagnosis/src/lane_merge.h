// Visits, in order, a sequence made of a few sorted ones interleaved in chunks: the agent's
// records of one epoch, where each thread's records arrive in time order, one buffer at a time.
// The chunks (maximal sorted runs) are dealt onto lanes, each lane kept sorted, and the lanes
// merged as they are visited: for k threads about n*k comparisons with few lanes, n*log(lanes)
// with many, against a full sort's n*log(n) (which took 11% of all the time of a two-thread
// program under tleak run), and nothing copied. The order is exactly std::sort's for a strict
// total order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <queue>
#include <vector>

namespace tleak::diagnosis {

// visit_in_order (below) given where each maximal sorted run begins (ascending, the first at 0;
// each run's items in order): a source that finds them as items arrive spares a pass over items
// no longer in the cache (the pass was the merge's costliest line, two threads' records).
template <class T, class Less, class Visit>
void visit_runs_in_order(const std::vector<T>& items, const std::vector<std::size_t>& run_begins, Less before,
                         Visit visit) {
  const std::size_t n = items.size();
  struct Run {
    std::size_t begin, end;
  };
  // Each lane: the runs dealt to it, in order; a run joins the first lane whose last item comes
  // before the run's first.
  struct Lane {
    std::vector<Run> runs;
    std::size_t next_run = 0;
    std::size_t at = 0;  // next item of the current run
  };
  std::vector<Lane> lanes;
  for (std::size_t r = 0; r < run_begins.size() && run_begins[r] < n; ++r) {
    const std::size_t begin = run_begins[r];
    const std::size_t end = r + 1 < run_begins.size() ? std::min(run_begins[r + 1], n) : n;
    if (begin >= end) continue;
    Lane* home = nullptr;
    for (Lane& lane : lanes) {
      if (before(items[lane.runs.back().end - 1], items[begin])) {
        home = &lane;
        break;
      }
    }
    if (home == nullptr) home = &lanes.emplace_back();
    home->runs.push_back({begin, end});
  }
  if (lanes.size() <= 1) {  // already in order
    for (const T& item : items) visit(item);
    return;
  }
  for (Lane& lane : lanes) lane.at = lane.runs.front().begin;
  // A lane whose run is visited moves to its next run; false when it has none left.
  const auto next_run = [](Lane& lane) {
    if (++lane.next_run == lane.runs.size()) return false;
    lane.at = lane.runs[lane.next_run].begin;
    return true;
  };
  // Past the item visited; false when the lane is used up.
  const auto advance = [&](Lane& lane) { return ++lane.at < lane.runs[lane.next_run].end || next_run(lane); };
  if (lanes.size() == 2) {
    // Two threads' records, the common case past one: the comparison's result is the index of the
    // lane to take (no scan of open lanes through pointers for each record: which lane comes next
    // is a coin toss when two threads allocate at once); a lane's run ending is rare, and checked
    // apart.
    Lane* lane[2] = {&lanes[0], &lanes[1]};
    std::size_t end[2] = {lanes[0].runs.front().end, lanes[1].runs.front().end};
    for (;;) {
      const std::size_t at0 = lane[0]->at, at1 = lane[1]->at;
      const bool second = before(items[at1], items[at0]);
      visit(items[second ? at1 : at0]);
      Lane& taken = *lane[second];
      if (++taken.at < end[second]) continue;
      if (!next_run(taken)) {
        // Used up: the other lane's rest, in order.
        Lane& other = *lane[!second];
        for (;;) {
          for (; other.at < end[!second]; ++other.at) visit(items[other.at]);
          if (!next_run(other)) return;
          end[!second] = other.runs[other.next_run].end;
        }
      }
      end[second] = taken.runs[taken.next_run].end;
    }
  }
  if (lanes.size() <= 8) {
    std::vector<Lane*> open;
    for (Lane& lane : lanes) open.push_back(&lane);
    while (!open.empty()) {
      std::size_t best = 0;
      for (std::size_t i = 1; i < open.size(); ++i) {
        if (before(items[open[i]->at], items[open[best]->at])) best = i;
      }
      visit(items[open[best]->at]);
      if (!advance(*open[best])) {
        open[best] = open.back();
        open.pop_back();
      }
    }
  } else {
    const auto later = [&](const Lane* a, const Lane* b) { return before(items[b->at], items[a->at]); };
    std::priority_queue<Lane*, std::vector<Lane*>, decltype(later)> heads(later);
    for (Lane& lane : lanes) heads.push(&lane);
    while (!heads.empty()) {
      Lane* lane = heads.top();
      heads.pop();
      visit(items[lane->at]);
      if (advance(*lane)) heads.push(lane);
    }
  }
}

template <class T, class Less, class Visit>
void visit_in_order(const std::vector<T>& items, Less before, Visit visit) {
  std::vector<std::size_t> run_begins;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i == 0 || before(items[i], items[i - 1])) run_begins.push_back(i);
  }
  visit_runs_in_order(items, run_begins, before, visit);
}

}  // namespace tleak::diagnosis
