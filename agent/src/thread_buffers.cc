#include "thread_buffers.h"

#include <pthread.h>

#include <new>

#include "agent.h"
#include "agent_memory.h"
#include "channel.h"
#include "ended_stacks.h"
#include "message_slots.h"
#include "stack_room.h"

namespace tleak::agent {
namespace {

constexpr std::uint32_t kMaxBuffers = kMaxThreadBuffers;

ThreadBuffer* g_buffers[kMaxBuffers];
std::atomic<std::uint32_t> g_buffer_count{0};
detail::SpinLock g_create_lock;
pthread_key_t g_exit_key;
// Set in a forked child: the buffers and their locks belong to the parent's image.
std::atomic<bool> g_forgotten{false};

// Initial-exec TLS: reading it never calls into the dynamic loader (which may allocate).
__thread ThreadBuffer* t_buffer __attribute__((tls_model("initial-exec"))) = nullptr;
// Set on a thread that found every buffer taken: it does not scan them again at each allocation.
__thread bool t_without_buffer __attribute__((tls_model("initial-exec"))) = false;
volatile std::uint64_t* g_untracked = nullptr;

// The thread that started the agent: the main thread (the agent is preloaded).
pthread_t g_main_thread;
std::atomic<bool> g_main_thread_ended{false};

void on_thread_exit(void* value) {
  // Thread-specific data ends with pthread_exit, never with exit(): the main thread that runs this
  // left with pthread_exit, and the process goes on without it.
  if (on_main_thread()) g_main_thread_ended.store(true, std::memory_order_release);
  auto* buffer = static_cast<ThreadBuffer*>(value);
  if (buffer == nullptr || g_forgotten.load(std::memory_order_acquire)) return;
  // Only while recording: after a sandbox stopped it, libunwind's own system calls (its checks of
  // memory) might be ones the filter kills for.
  if (!on_main_thread() && tracking()) {
    const PassThrough inside;  // what libunwind's walk might allocate is not the program's
    note_thread_ended(buffer->scratch.libunwind_state);
  }
  buffer->lock.lock();
  buffer->send();
  // An idle buffer holds no slot: threads that come and go would leave none for the others.
  buffer->give_back_slot();
  buffer->lock.unlock();
  t_buffer = nullptr;
  buffer->taken.store(false, std::memory_order_release);
}

ThreadBuffer* take_buffer() {
  const std::uint32_t count = g_buffer_count.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < count; ++i) {
    bool expected = false;
    if (g_buffers[i]->taken.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      return g_buffers[i];
    }
  }
  g_create_lock.lock();
  ThreadBuffer* buffer = nullptr;
  const std::uint32_t n = g_buffer_count.load(std::memory_order_relaxed);
  if (n < kMaxBuffers) {
    void* memory = map_pages(sizeof(ThreadBuffer));
    if (memory != nullptr) {
      buffer = new (memory) ThreadBuffer;
      buffer->index = n;
      buffer->taken.store(true, std::memory_order_relaxed);
      g_buffers[n] = buffer;
      g_buffer_count.store(n + 1, std::memory_order_release);
    }
  }
  g_create_lock.unlock();
  return buffer;
}

}  // namespace

unsigned char* ThreadBuffer::reserve(std::uint32_t bytes) {
  if (used + bytes > sizeof data) send();
  unsigned char* at = out + used;
  used += bytes;
  return at;
}

void ThreadBuffer::send() {
  if (used > 0) {
    if (slot >= 0) {
      const SlotRecord record = message_slot_sent(slot, used);
      slot = -1;
      channel_send(&record, sizeof record);
    } else {
      channel_send(data, used);
    }
  }
  used = 0;
  allocated_since_send = 0;
  take_slot();
}

void ThreadBuffer::take_slot() {
  if (slot >= 0) return;
  slot = message_slot_take();
  out = slot >= 0 ? message_slot_memory(slot) : data;
  filled = slot >= 0 ? message_slot_fill(slot) : &own_fill;
  publish();
}

void ThreadBuffer::give_back_slot() {
  if (slot < 0 || used != 0) return;
  message_slot_give_back(slot);
  slot = -1;
  out = data;
  filled = &own_fill;
}

ThreadBuffer* this_thread_buffer() {
  if (t_buffer != nullptr) return t_buffer;
  if (t_without_buffer || g_forgotten.load(std::memory_order_relaxed)) return nullptr;
  ThreadBuffer* buffer = take_buffer();
  if (buffer == nullptr) {
    t_without_buffer = true;
    if (g_untracked != nullptr) __atomic_fetch_add(g_untracked, 1, __ATOMIC_RELAXED);
    return nullptr;
  }
  t_buffer = buffer;
  buffer->lock.lock();
  buffer->take_slot();
  buffer->lock.unlock();
  // Not the main thread: its stack grows on demand to the size limit (8 MiB by default), and
  // glibc finds its bounds by reading /proc/self/maps with stdio, a descriptor and allocations in
  // the middle of the program's malloc.
  if (!on_main_thread()) {
    note_stack_start(reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)));
  }
  // The first keys live in a static array: setting one does not allocate.
  pthread_setspecific(g_exit_key, buffer);
  return buffer;
}

ThreadBuffer* current_thread_buffer() { return t_buffer; }

bool main_thread_ended() { return g_main_thread_ended.load(std::memory_order_acquire); }

bool on_main_thread() { return pthread_equal(pthread_self(), g_main_thread) != 0; }

std::uint32_t thread_buffer_count() { return g_buffer_count.load(std::memory_order_acquire); }
ThreadBuffer* thread_buffer(std::uint32_t index) { return g_buffers[index]; }

bool thread_buffers_init(volatile std::uint64_t* untracked) {
  g_untracked = untracked;
  g_main_thread = pthread_self();
  return pthread_key_create(&g_exit_key, on_thread_exit) == 0;
}

void thread_buffers_forget() {
  // Only the forking thread exists here; the memory stays mapped (copy-on-write) and unused.
  g_forgotten.store(true, std::memory_order_release);
  g_buffer_count.store(0, std::memory_order_release);
  t_buffer = nullptr;
  new (&g_create_lock) detail::SpinLock;
}

}  // namespace tleak::agent
