// A fixed pool of worker threads serving batches of requests: the serving-side remedy to a new
// thread per request. Requests go round robin to per-worker queues, so every worker serves in every
// batch whatever the scheduler does (the measured figures stay the same run to run).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tleak::scenarios {

class WorkerPool {
 public:
  // `serve` runs on a worker for each request; `on_exit` on each worker as it ends.
  WorkerPool(int workers, std::function<void(std::uint64_t)> serve, std::function<void()> on_exit = {})
      : serve_(std::move(serve)), on_exit_(std::move(on_exit)), queues_(static_cast<std::size_t>(workers)) {
    for (std::size_t w = 0; w < queues_.size(); ++w) threads_.emplace_back([this, w] { work(queues_[w]); });
  }
  ~WorkerPool() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Returns when every request of the batch has been served.
  void serve_batch(const std::vector<std::uint64_t>& requests) {
    std::unique_lock lock(mutex_);
    for (std::size_t r = 0; r < requests.size(); ++r) queues_[r % queues_.size()].push_back(requests[r]);
    const std::uint64_t target = done_ + requests.size();
    wake_.notify_all();
    wake_.wait(lock, [&] { return done_ == target; });
  }

 private:
  void work(std::deque<std::uint64_t>& queue) {
    for (;;) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue.empty(); });
      if (queue.empty()) break;
      const std::uint64_t request = queue.front();
      queue.pop_front();
      lock.unlock();
      serve_(request);
      lock.lock();
      ++done_;
      wake_.notify_all();
    }
    if (on_exit_) on_exit_();
  }

  std::function<void(std::uint64_t)> serve_;
  std::function<void()> on_exit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::deque<std::uint64_t>> queues_;
  std::uint64_t done_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tleak::scenarios
