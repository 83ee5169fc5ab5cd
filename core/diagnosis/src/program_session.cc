#include "tleak/diagnosis/program_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "core_rotation.h"
#include "descriptor_limit.h"
#include "end_profile.h"
#include "killed_note.h"
#include "left_for_exit.h"
#include "message_slot_area.h"
#include "module_preparer.h"
#include "program_image.h"
#include "read_pacing.h"
#include "record_listener.h"
#include "thread_registers.h"
#include "unique_fd.h"
#include "unnamed_modules_note.h"
#include "tleak/agent/protocol.h"
#include "tleak/agent/python_files.h"
#include "tleak/diagnosis/agent_source.h"
#include "tleak/diagnosis/classifier.h"
#include "tleak/diagnosis/counted.h"
#include "tleak/diagnosis/report_builder.h"
#include "tleak/diagnosis/run_stamp.h"
#include "tleak/diagnosis/step_words.h"

namespace tleak::diagnosis {
namespace {

// The loader ignores LD_PRELOAD in a program that gains privileges as it starts ("secure
// execution"): set-user-ID or set-group-ID to someone else, or file capabilities for a user who
// does not hold them already. The agent would never load, and the program would run for nothing.
bool gains_privileges(const std::string& path, const struct stat& st) {
  if ((st.st_mode & S_ISUID) != 0 && st.st_uid != geteuid()) return true;
  if ((st.st_mode & S_ISGID) != 0 && st.st_gid != getegid()) return true;
  return geteuid() != 0 && getxattr(path.c_str(), "security.capability", nullptr, 0) > 0;
}

// Refuses what cannot run under the agent; returns what its file is. With `record_another`
// (--record), the command itself need not load it, only pass LD_PRELOAD on: a statically linked
// launcher is let be (it keeps its environment; a program that gains privileges does not, and one
// built with a sanitizer refuses to start behind the agent).
ProgramImage check_runnable(const std::string& name, const std::string& path, bool record_another) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) throw ProgramError("cannot run '" + name + "': " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw ProgramError("cannot run '" + name + "': it is a directory");
  if (access(path.c_str(), X_OK) != 0) throw ProgramError("cannot run '" + name + "': not executable");
  const ProgramImage image = inspect_program(path);
  if (image.is_static && !record_another) {
    throw ProgramError("cannot diagnose '" + name +
                       "': it is statically linked, so the interposer cannot be loaded into it");
  }
  if (!image.sanitizer.empty()) {
    throw ProgramError("cannot diagnose '" + name + "': it is built with " + image.sanitizer +
                       ", whose runtime replaces malloc before tleak's interposer can (run a build without "
                       "sanitizers under tleak; AddressSanitizer's LeakSanitizer reports its leaks itself)");
  }
  if (gains_privileges(path, st)) {
    throw ProgramError("cannot diagnose '" + name +
                       "': it runs with privileges it gains as it starts (set-user-ID, set-group-ID or file "
                       "capabilities), and the loader then ignores LD_PRELOAD, so the interposer cannot be loaded "
                       "into it");
  }
  return image;
}

// What the agents of the processes the program started (under --record, every one but the process
// recorded) wrote into the control page.
struct OtherProcesses {
  std::uint64_t count = 0;  // past the entries too
  std::string list;         // "sh, ls x2, python3 (forked, did not exec)", sorted: the same from run to run
  // --record: processes that ran its NAME but could not reach tleak (their parent closed the
  // descriptors they would have inherited, and tleak's listener was out of their reach).
  std::uint64_t without_stream = 0;
  // The programs they exec'd, by file name (not the forked copies, which run the program's own).
  std::set<std::string> programs;
};

OtherProcesses other_processes(const agent::ControlPage& control) {
  OtherProcesses out;
  out.count = control.other_processes;
  std::map<std::string, int> names;
  const std::uint64_t listed = std::min<std::uint64_t>(out.count, agent::ControlPage::kOtherProcessEntries);
  for (std::uint64_t i = 0; i < listed; ++i) {
    const auto& entry = control.other[i];
    if (entry.pid == 0) continue;
    const std::string path(entry.executable, strnlen(entry.executable, sizeof entry.executable));
    const auto slash = path.rfind('/');
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (entry.kind == agent::ControlPage::OtherKind::kExecd) out.programs.insert(name);
    if (entry.kind == agent::ControlPage::OtherKind::kForkedOnly) name += " (forked, did not exec)";
    if (entry.kind == agent::ControlPage::OtherKind::kNoDescriptors) {
      name += " (could not reach tleak)";
      ++out.without_stream;
    }
    ++names[name];
  }
  for (const auto& [name, n] : names) {
    if (!out.list.empty()) out.list += ", ";
    out.list += n > 1 ? name + " x" + std::to_string(n) : name;
  }
  if (out.count > listed) out.list += ", ...";
  return out;
}

// How long after the command ended tleak, still waiting under --record, says what for.
constexpr std::chrono::milliseconds kWaitingNoticeAfter{1000};
// Under --record, how long tleak still listens once the command has ended and no process holds its
// stream: a process may be between losing its descriptors and its agent's start (a launcher that
// started it without waiting has exited), or the recorded process may have exec'd, its new image
// about to connect. Both take milliseconds; nothing tells tleak of either.
constexpr std::chrono::milliseconds kReconnectGrace{1000};

// How the exit scan read a process holding blocks tleak never saw live (ThreadRoots::heap_roots).
constexpr const char* kHeapReadAsRoots =
    "its exit scan read its whole heap outside the blocks tleak saw as roots, so a block pointed to only from there, "
    "even from memory the program had freed, counts as reachable, not leaked";

// Why a process that ran --record's NAME could not be recorded.
constexpr const char* kUnreachable =
    " could not reach tleak: its parent had closed the descriptors it would have inherited (as Python's subprocess "
    "does), and tleak's socket, in the abstract namespace, was out of its reach (another network namespace)";

// The processes tleak did not record, as a note (empty if there were none): a wrapper script's
// report, with its work done in a child, must not read as if nothing had happened.
std::string other_processes_note(const OtherProcesses& others, const std::string& record, bool record_fork,
                                 pid_t recorded_pid) {
  if (record_fork) {
    std::string note = "tleak recorded process " + std::to_string(recorded_pid) + ", the first copy " +
                       (record.empty() ? std::string("of the command's process") : "of a process running " + record) +
                       " that it forked and that allocated (--record-fork), from its first allocation on; " +
                       (record.empty() ? "the command's own process was not recorded" : "the process that forked it was not recorded");
    if (others.count > 0) note += ", nor the command's other processes (" + others.list + ")";
    return note;
  }
  if (!record.empty()) {
    std::string note = "tleak recorded process " + std::to_string(recorded_pid) + ", the first to run " + record +
                       " (--record)";
    if (others.count > 0) {
      note += "; the command's other processes were not recorded (" + others.list + ")";
    }
    if (others.without_stream > 0) {
      note += "; " + counted(others.without_stream, "process", "processes") + " that ran " + record + kUnreachable;
    }
    return note;
  }
  if (others.count == 0) return {};
  // At least: a child started without fork's handlers (vfork, posix_spawn) that runs a program
  // without the agent (static, set-user-ID, environment cleared) never says so.
  const std::string started = "the program started at least " +
                              counted(others.count, "other process", "other processes") + " (" + others.list + ")";
  // What the processes ran is known only if every one found an entry in the control page.
  const bool all_listed = others.count <= agent::ControlPage::kOtherProcessEntries;
  // Only forked copies (a multiprocessing pool's workers): --record, which names a program started
  // anew, cannot record one.
  if (others.programs.empty() && all_listed) {
    return started + ", which tleak does not record: it records the process it starts and the programs that process "
                     "execs, not the copies of itself it forks (what they allocate after the fork is not seen); to "
                     "diagnose their work, record the first of them that allocates (--record-fork), or run it in the "
                     "program's own process (a PyTorch DataLoader with num_workers=0, a pool's function called "
                     "directly)";
  }
  // One program run by the others (a wrapper script's work): the option that records it, spelt out.
  const std::string record_it = others.programs.size() == 1 && all_listed ? *others.programs.begin() : "NAME";
  return started + ", which tleak does not record: it records the process it starts and the programs that process "
                   "execs; to diagnose another one, run tleak on its command, have the script exec it, or name its "
                   "program: --record " + record_it;
}

// Sends the live list the agent's exit scan needs, and what tleak read of the other threads, in
// messages the agent's buffer takes whole. Their stack pointers go only when every one of them was
// read, each with its stack pointer: the scan reads a stack from its thread's stack pointer up only
// where no other thread's could be (thread_registers.h), and a thread left out would have its
// frames below the stack pointer of another in the same mapping cut off.
void send_live_list(int fd, const std::vector<std::uint64_t>& pairs, OtherThreadsRegisters threads) {
  std::vector<std::uint64_t>& registers = threads.words;
  const bool every_thread_sent = threads.threads_unread == 0 && threads.stacks.size() == threads.threads_read &&
                                 registers.size() <= agent::kMaxRegisterWords &&
                                 threads.stacks.size() <= agent::kMaxThreadStacks;
  if (registers.size() > agent::kMaxRegisterWords) registers.resize(agent::kMaxRegisterWords);
  if (!every_thread_sent) threads.stacks.clear();
  const agent::LiveListHeader header{agent::kProtocolMagic, static_cast<std::uint32_t>(registers.size()),
                                     pairs.size() / 2, static_cast<std::uint32_t>(threads.stacks.size()),
                                     every_thread_sent ? agent::kEveryThreadRead : 0};
  const std::size_t stack_bytes = threads.stacks.size() * sizeof(agent::ThreadStack);
  std::vector<unsigned char> bytes(sizeof header + (pairs.size() + registers.size()) * 8 + stack_bytes);
  unsigned char* at = bytes.data();
  const auto put = [&at](const void* data, std::size_t n) {
    if (n > 0) std::memcpy(at, data, n);
    at += n;
  };
  put(&header, sizeof header);
  put(pairs.data(), pairs.size() * 8);
  put(registers.data(), registers.size() * 8);
  put(threads.stacks.data(), stack_bytes);
  constexpr std::size_t kPiece = 60 * 1024;
  for (std::size_t sent = 0; sent < bytes.size();) {
    const std::size_t n = std::min(kPiece, bytes.size() - sent);
    const ssize_t r = send(fd, bytes.data() + sent, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;  // the program is gone: finish() reports without a scan
    sent += n;
  }
}

struct Child {
  pid_t pid = -1;
  int status = 0;
  bool exited = false;
};

// fork + exec with the agent preloaded. The child gets the parent's signal mask and dispositions
// back before exec: what the program sees of its environment is the user's, plus tleak's variables.
pid_t start_child(const ProgramOptions& o, const std::string& path, int stream_fd, int control_fd, int slots_fd,
                  const std::string& stream_name, const sigset_t& original_mask, const DescriptorLimit& limit) {
  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) throw ProgramError(std::string("pipe: ") + std::strerror(errno));
  // The agent goes first: a malloc the user preloads (jemalloc, tcmalloc) would otherwise take
  // every call before it and tleak would see none. The agent's own calls go on to the next malloc
  // in the loader's order (dlsym RTLD_NEXT), the user's, which still serves every block.
  std::string preload = o.agent_path;
  if (const char* existing = std::getenv("LD_PRELOAD"); existing != nullptr && *existing != '\0') {
    preload = o.agent_path + ":" + existing;
  }
  std::string python_path = o.python_path;
  if (const char* existing = std::getenv("PYTHONPATH"); existing != nullptr && *existing != '\0') {
    python_path = o.python_path.empty() ? existing : std::string(existing) + ":" + o.python_path;
  }
  std::vector<char*> argv;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string depth = std::to_string(o.stack_depth);
  const std::string sample_us = std::to_string(static_cast<long long>(std::llround(o.sample_seconds * 1e6)));

  const pid_t pid = fork();
  if (pid < 0) throw ProgramError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(error_pipe[0]);
    // The stream's descriptor must survive exec; the control page too.
    fcntl(stream_fd, F_SETFD, 0);
    fcntl(control_fd, F_SETFD, 0);
    if (slots_fd >= 0) fcntl(slots_fd, F_SETFD, 0);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    // `import tleak` finds the marks module; the program's own PYTHONPATH entries come first.
    if (!python_path.empty()) setenv("PYTHONPATH", python_path.c_str(), 1);
    setenv(agent::kEnvStreamFd, std::to_string(stream_fd).c_str(), 1);
    setenv(agent::kEnvControlFd, std::to_string(control_fd).c_str(), 1);
    if (slots_fd >= 0) {
      setenv(agent::kEnvSlotsFd, std::to_string(slots_fd).c_str(), 1);
    } else {
      unsetenv(agent::kEnvSlotsFd);
    }
    // tleak's descriptors as a process that lost its own opens them (the agent's tleak_file_path.h).
    const auto tleak_file = [](int fd) { return "/proc/" + std::to_string(getppid()) + "/fd/" + std::to_string(fd); };
    setenv(agent::kEnvControlPath, tleak_file(control_fd).c_str(), 1);
    setenv(agent::kEnvPid, std::to_string(getpid()).c_str(), 1);
    setenv(agent::kEnvStackDepth, depth.c_str(), 1);
    setenv(agent::kEnvSampleMicros, sample_us.c_str(), 1);
    if (o.focus.empty()) {
      unsetenv(agent::kEnvPythonFocus);
    } else {
      setenv(agent::kEnvPythonFocus, o.focus.c_str(), 1);
    }
    if (o.record_fork) {
      setenv(agent::kEnvRecordFork, "1", 1);
    } else {
      unsetenv(agent::kEnvRecordFork);
    }
    if (!o.records_another()) {
      unsetenv(agent::kEnvRecordName);
      unsetenv(agent::kEnvStreamName);
      unsetenv(agent::kEnvSlotsPath);
    } else {
      if (o.record.empty()) {
        unsetenv(agent::kEnvRecordName);
      } else {
        setenv(agent::kEnvRecordName, o.record.c_str(), 1);
      }
      setenv(agent::kEnvStreamName, stream_name.c_str(), 1);
      if (slots_fd >= 0) {
        setenv(agent::kEnvSlotsPath, tleak_file(slots_fd).c_str(), 1);
      } else {
        unsetenv(agent::kEnvSlotsPath);
      }
    }
    sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    limit.give_back();
    execv(path.c_str(), argv.data());
    const int error = errno;
    (void)!write(error_pipe[1], &error, sizeof error);
    _exit(127);
  }
  close(error_pipe[1]);
  int error = 0;
  ssize_t got;
  while ((got = read(error_pipe[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  close(error_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof error)) {
    waitpid(pid, nullptr, 0);
    throw ProgramError("cannot run '" + o.command[0] + "': " + std::strerror(error));
  }
  return pid;
}

// Signals tleak handles itself while the program runs, read through a signalfd.
class SignalScope {
 public:
  explicit SignalScope(int snapshot_signal) {
    sigemptyset(&handled_);
    for (int s : {SIGCHLD, SIGTERM, SIGHUP, SIGINT, snapshot_signal}) sigaddset(&handled_, s);
    sigprocmask(SIG_BLOCK, &handled_, &original_);
    fd_.reset(signalfd(-1, &handled_, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~SignalScope() { sigprocmask(SIG_SETMASK, &original_, nullptr); }
  int fd() const { return fd_.get(); }
  const sigset_t& original() const { return original_; }

 private:
  sigset_t handled_{}, original_{};
  Fd fd_;
};

// Whether an entry of the PYTHONPATH the program inherits holds tleak.py (an empty entry is the
// working directory, the program's too).
bool marks_module_on_path() {
  const char* path = std::getenv("PYTHONPATH");
  if (path == nullptr) return false;
  for (const char* entry = path;; ++entry) {
    const char* end = std::strchr(entry, ':');
    const std::string dir(entry, end != nullptr ? end : entry + std::strlen(entry));
    if (access(((dir.empty() ? "." : dir) + "/tleak.py").c_str(), R_OK) == 0) return true;
    if (end == nullptr) return false;
    entry = end;
  }
}

// What the program's report is named by (run.scenario: the text's first line, the report's file):
// the script or -m module a Python program runs (python3.11 says nothing of which); the script the
// command names while the recording is of the process tleak started (a "#!" script runs its
// interpreter: a wrapper script is not "dash"); else the executable of the image the recording is
// about (the command, or what it exec'd into).
std::string program_name(const AgentSource& source, const std::vector<std::string>& command, bool command_is_script) {
  // A path's last part ("python3 app/" runs the directory's __main__.py: "app").
  const auto last_part = [](std::string_view path) {
    while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
    return std::string(file_name(path));
  };
  std::string name;
  if (!source.python_target().empty()) name = last_part(source.python_target());
  if (name.empty() && command_is_script && source.images() <= 1) name = last_part(command[0]);
  if (name.empty()) name = last_part(source.executable().empty() ? command[0] : source.executable());
  return name;
}

// Why the agent could not make its exit scan, and what that leaves of the report.
std::string scan_failure_note(agent::ScanFailure why) {
  const char* cause = "";
  switch (why) {
    case agent::ScanFailure::kNoMemory:
      cause = "its address space had no room left for the scan's work (a limit such as `ulimit -v`, reached by "
              "the program)";
      break;
    case agent::ScanFailure::kNoMemoryMap:
      cause = "its memory map (/proc/self/maps), which lists its roots, could not be read";
      break;
    case agent::ScanFailure::kReadRefused:
      cause = "the kernel refused it the reads of the process's memory (process_vm_readv: a seccomp filter, as "
              "a sandbox sets)";
      break;
    case agent::ScanFailure::kNone:
      break;
  }
  return std::string("the program's exit scan could not be made: ") + cause +
         ", so blocks left allocated are reported as unjudged, not as leaks";
}

// When a program without marks gave fewer time samples than growth needs, how to get them (its
// summary says only "growth not assessed (2 samples; at least 6 needed)"); empty otherwise, and for
// a program that ended within two periods without a sample (ls, true: growth is not what it was
// run for). Samples are taken only while the program allocates, so the period that gives enough
// is read from the samples it gave, not from the run's length (a program may sleep most of it).
std::string too_few_samples_note(const Report& report, const ClassifierOptions& thresholds) {
  const ProgramInfo& program = *report.run.program;
  if (program.clock != "time" || report.total_growth.assessed || program.sample_seconds <= 0) return {};
  const std::uint64_t needed = iterations_needed_for_growth(thresholds);
  const std::uint64_t samples = report.run.iterations;
  if (samples >= needed || (samples == 0 && report.run.duration_seconds < 2 * program.sample_seconds)) return {};
  const std::string mark = "mark the program's loop (tleak_mark_iteration() in C or C++, tleak.mark_iteration() in Python)";
  const std::string every = sample_words(program.sample_seconds).per;
  if (samples == 0) {
    // No time to divide, and sampling more often would not help: the program allocated and freed
    // in its first period only.
    return "growth not assessed: no time sample, at least " + std::to_string(needed) +
           " needed (one is taken by the first allocation or free after each " + every +
           ", and the program made none after its first " + every + "): " + mark;
  }
  // Twice the samples needed over the time the program gave samples in.
  const double ms = program.sample_seconds * 1000.0 * static_cast<double>(samples) / static_cast<double>(2 * needed);
  return "growth not assessed: " + counted(samples, "time sample", "time samples") + " of " + every + ", at least " +
         std::to_string(needed) + " needed: sample more often (--sample-every " +
         std::to_string(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(ms))) + "ms), or " + mark;
}

}  // namespace

std::optional<std::string> record_name_problem(const std::string& name) {
  if (!name.empty() && name.size() <= agent::kMaxRecordNameBytes && name.find('/') == std::string::npos &&
      name.find('\0') == std::string::npos && name != "." && name != "..") {
    return std::nullopt;
  }
  return "a program's file name (python3, not /usr/bin/python3), of at most " +
         std::to_string(agent::kMaxRecordNameBytes) + " bytes";
}

ResolvedCommand resolve_command(const std::string& name, bool record_another) {
  if (name.empty()) throw ProgramError("no command given after --");
  if (name.find('/') != std::string::npos) return {name, check_runnable(name, name, record_another).is_script};
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= path.size()) {
    const std::size_t end = std::min(path.find(':', begin), path.size());
    const std::string dir = end == begin ? "." : path.substr(begin, end - begin);
    const std::string candidate = dir + "/" + name;
    struct stat st{};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0) {
      return {candidate, check_runnable(name, candidate, record_another).is_script};
    }
    begin = end + 1;
  }
  throw ProgramError("cannot run '" + name + "': command not found in PATH");
}

Report run_program(const ProgramOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  if (o.command.empty()) throw ProgramError("no command given after --");
  if (o.focus.size() > agent::kMaxPythonFocusBytes) {
    throw ProgramError("--focus is " + std::to_string(o.focus.size()) + " bytes long, at most " +
                       std::to_string(agent::kMaxPythonFocusBytes) + " (the agent compares file names that far)");
  }
  if (!o.record.empty()) {
    if (const auto problem = record_name_problem(o.record)) throw ProgramError("--record takes " + *problem);
  }
  const ResolvedCommand resolved = resolve_command(o.command[0], !o.record.empty());
  const std::string& path = resolved.path;
  // tleak finds its agent, the program's threads and its own descriptors for --record there, and the
  // agent reads the program's memory map there.
  if (access("/proc/self/maps", R_OK) != 0) {
    throw ProgramError("/proc is not mounted here (or not readable): tleak and its agent need it to follow a program");
  }
  if (access(o.agent_path.c_str(), R_OK) != 0) {
    throw ProgramError("the agent library " + o.agent_path + " is missing (is tleak installed whole?)");
  }

  const DescriptorLimit descriptor_limit;
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0) {
    throw ProgramError(std::string("socketpair: ") + std::strerror(errno));
  }
  Fd ours(sockets[0]), theirs(sockets[1]);
  // Room for bursts: the program blocks only when tleak falls this far behind. Capped by the
  // system's net.core.wmem_max (208 KiB on a stock system) unless tleak may exceed it (root).
  ReadPacing pacing(set_send_buffer(theirs.get(), 8 << 20));
  Fd control_fd(static_cast<int>(syscall(SYS_memfd_create, "tleak-control", MFD_CLOEXEC)));
  if (control_fd.get() < 0 || ftruncate(control_fd.get(), 4096) != 0) {
    throw ProgramError(std::string("memfd_create: ") + std::strerror(errno));
  }
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, control_fd.get(), 0);
  if (page == MAP_FAILED) throw ProgramError(std::string("mmap: ") + std::strerror(errno));
  auto* control = static_cast<agent::ControlPage*>(page);
  control->magic = agent::kProtocolMagic;
  control->tleak_pid = static_cast<std::uint32_t>(getpid());

  // The thread buffers' records come through it; the socket carries only which slot to read.
  MessageSlotArea slot_area;
  SignalScope signals(o.snapshot_signal);
  Child child;
  // --record: where the process that runs NAME connects if it lost the socket's descriptor.
  std::optional<RecordListener> listener;
  if (o.records_another()) listener.emplace();
  child.pid = start_child(o, path, theirs.get(), control_fd.get(), slot_area.fd(), listener ? listener->name() : "",
                          signals.original(), descriptor_limit);
  theirs.reset();
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, child.pid, 0)));

  Report report;
  report.thresholds = o.thresholds;
  ProgramInfo program;
  program.command = o.command;
  program.pid = child.pid;
  program.sample_seconds = o.sample_seconds;

  auto source_owner = std::make_unique<AgentSource>();
  AgentSource& source = *source_owner;
  // With --record, the process recorded, once its agent said hello (-1 before): a descendant of the
  // command's, which tleak waits for too (a wrapper may leave it running, or start it from a process
  // it left running), whose threads it reads at the exit scan and which --max-live stops.
  pid_t recorded_pid = o.records_another() ? -1 : child.pid;
  Fd recorded_pidfd;
  bool recorded_ended = false;  // the recorded process, another than the command's own, has ended
  bool recorded_exited = false;  // and it is gone (its pidfd said so): it writes in no slot
  const auto follow_recorded = [&] {
    if (recorded_pid >= 0 || !source.hello_seen()) return;
    recorded_pid = static_cast<pid_t>(source.pid());
    if (recorded_pid == child.pid) return;
    recorded_pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, recorded_pid, 0)));
    // Gone already, or no pidfd to wait on (a kernel before 5.3): its stream's end tells.
    if (recorded_pidfd.get() < 0) recorded_ended = recorded_exited = errno == ESRCH;
  };
  // The recorded process and the command's own, both (SIGKILL, --max-live).
  const auto kill_program = [&](int sig) {
    if (!child.exited) kill(child.pid, sig);
    if (recorded_pid > 0 && recorded_pid != child.pid && !recorded_ended) kill(recorded_pid, sig);
  };
  // The program's modules' symbol tables and debug info, read ahead on a thread while it runs: the
  // report at its end then does not wait for them. A new image (the program exec'd) starts over:
  // the map is another one.
  std::unique_ptr<ModulePreparer> preparer;
  std::uint64_t preparer_image = 0, noted_changes = 0;
  const auto note_modules = [&] {
    if (preparer != nullptr && source.module_changes() == noted_changes) return;
    noted_changes = source.module_changes();
    if (preparer == nullptr || preparer_image != source.images()) {
      preparer = std::make_unique<ModulePreparer>();
      preparer_image = source.images();
    }
    preparer->set_modules(source.modules());
  };
  bool answered_exit = false;
  // The program's other threads whose registers the exit scan went without, and why (the first).
  std::uint32_t unread_threads = 0;
  std::string why_unread;
  bool fence_asked = false;
  const auto make_report = [&](const Recording& rec, Report& out, const std::optional<std::string>& snapshot,
                               Symbolizer& symbolizer, const SiteJudgements* judged) {
    out.thresholds = o.thresholds;
    // Under --record the recording is not of the command's script.
    out.run.scenario = program_name(source, o.command, resolved.is_script && !o.records_another());
    out.run.variant = "program";
    out.run.mode = "native";
    out.run.iterations = rec.iterations;
    out.run.scale = 1.0;
    out.run.stack_depth = o.stack_depth;
    out.run.tleak_version = TLEAK_VERSION;
    out.run.started_at = utc_now();
    out.run.host = host_name();
    out.run.tracked = true;
    out.run.valgrind_annotations = false;
    ProgramInfo info = program;
    // The process recorded: under --record, not the command's own.
    if (source.hello_seen()) info.pid = source.pid();
    if (!o.record.empty()) info.record = o.record;
    info.forked_copy = o.record_fork;
    info.clock = source.clock_name();
    info.sample_seconds = source.sample_seconds();
    info.snapshot = snapshot;
    info.exit_scan = rec.end == RunEnd::kExitScan;
    info.exit_scan_root_bytes = info.exit_scan ? static_cast<std::int64_t>(source.reach_root_bytes()) : 0;
    if (!o.focus.empty()) info.focus = o.focus;
    if (source.python_main_code() != agent::PythonMainCode::kNone) {
      info.python_main_code = std::string(agent::python_main_code_name(source.python_main_code()));
    }
    out.run.program = info;
    fill_report(out, rec, o.thresholds, {}, [&source](SiteId s) { return source.stack(s); },
                [&](std::uintptr_t word, std::vector<Frame>& stack) { source.resolve(word, symbolizer, stack); }, o.max_sites, judged);
    if (std::string note = unnamed_modules_note(out.sites); !note.empty()) out.notes.push_back(std::move(note));
    out.run.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  source.on_snapshot = [&](const std::string& name) {
    if (!o.on_snapshot) return;
    Report snap;
    note_modules();
    preparer->with_symbolizer([&](Symbolizer& symbolizer) { make_report(source.snapshot(), snap, name, symbolizer, nullptr); });
    o.on_snapshot(snap);
  };
  source.on_fence = [&] {
    fence_asked = false;
    if (o.max_live_bytes > 0 && source.live_bytes() > o.max_live_bytes && program.stopped_by.empty()) {
      program.stopped_by = "max-live";
      kill_program(SIGKILL);
    }
  };

  // The program's other threads, held stopped while its exit scan reads the heap.
  std::unique_ptr<StoppedThreads> stopped_threads;
  bool hold_ran_out = false;  // they ran on before the scan was done
  const auto let_threads_go = [&] {
    if (stopped_threads == nullptr) return;
    stopped_threads->release();
    hold_ran_out = stopped_threads->hold_ran_out();
    stopped_threads.reset();
  };
  // The recorded process's connection to the listener (--record, when it lost its descriptor):
  // the stream from then on, in place of `ours`.
  Fd connected;
  const auto stream = [&] { return connected.get() >= 0 ? connected.get() : ours.get(); };
  std::vector<unsigned char> message(agent::kMaxMessageBytes * 8);
  // Set once the stream has ended (every copy of the program's end closed): nothing more to poll.
  bool stream_ended = false;
  auto stream_ended_at = std::chrono::steady_clock::now();
  // Returns the bytes read.
  const auto read_messages = [&](bool wait) {
    std::size_t total = 0;
    for (;;) {
      const ssize_t got = recv(stream(), message.data(), message.size(), wait ? 0 : MSG_DONTWAIT);
      if (got < 0 && errno == EINTR) continue;
      if (got == 0) {
        stream_ended = true;
        stream_ended_at = std::chrono::steady_clock::now();
      }
      if (got <= 0) return total;
      const std::span<const unsigned char> received{message.data(), static_cast<std::size_t>(got)};
      const auto named = slot_area.named_by(received);
      end_profile::message_read(named.has_value(), named ? named->records.size() : received.size());
      if (named) {
        total += named->records.size();
        source.consume(named->records);
        slot_area.release(named->slot);
      } else {
        total += received.size();
        source.consume(received);
      }
      if (source.exit_requested() && !answered_exit) {
        answered_exit = true;
        end_profile::time_aside("other threads' registers read", [&] {
          follow_recorded();
          stopped_threads = std::make_unique<StoppedThreads>(recorded_pid, static_cast<pid_t>(source.exiting_thread()),
                                                             kRegistersBudgetMs, kExitScanHoldMs);
        });
        OtherThreadsRegisters registers = std::move(stopped_threads->registers());
        unread_threads = registers.threads_unread;
        why_unread = registers.why_unread;
        send_live_list(stream(), source.live_list(), std::move(registers));
        end_profile::time_aside("sites judged during the exit scan",
                                [&] { source.judge_sites_at_exit(o.thresholds, o.max_sites); });
        // The frames of the sites the report will most likely list, resolved while the program
        // still scans: the symbolizer keeps their symbols (4-5 ms of a PyTorch loop's findings
        // otherwise).
        end_profile::time_aside("symbols looked up during the exit scan", [&] {
          note_modules();
          preparer->with_symbolizer([&](Symbolizer& symbolizer) {
            const FrameResolver resolve = [&](std::uintptr_t word, std::vector<Frame>& stack) { source.resolve(word, symbolizer, stack); };
            for (const SiteId site : likely_findings(*source.site_judgements(), o.max_sites)) {
              (void)site_frames(source.stack(site), resolve);
            }
          });
        });
      }
      // The scan has read the heap: the program's other threads go on.
      if (source.scan_done()) let_threads_go();
      // The budget guard wants an exact figure as soon as the unordered records may pass it; a
      // long backlog of them is ordered sooner rather than at the next sample.
      const bool may_pass_budget =
          o.max_live_bytes > 0 && source.live_bytes() + source.pending_allocated_bytes() > o.max_live_bytes;
      if (!fence_asked && (source.wants_flush() || may_pass_budget)) {
        fence_asked = true;
        control->fence_requests = control->fence_requests + 1;
      }
      wait = false;
    }
  };

  CoreRotation rotation;
  // --record: what tleak waits for once the command has ended, said after kWaitingNoticeAfter.
  auto child_exited_at = std::chrono::steady_clock::now();
  bool waiting_told = false;
  const auto waiting_notice = [&] {
    const std::string command = "'" + o.command[0] + "' ended; ";
    if (recorded_pid < 0) {
      return command + "waiting for the processes it left running, which hold tleak's socket: " +
             (o.record_fork ? std::string("a copy it forked may yet allocate") : "one may yet run " + o.record);
    }
    return command + "waiting for " + (o.record_fork ? std::string("its forked copy") : o.record) + " (pid " +
           std::to_string(recorded_pid) + "), which it left running";
  };
  // --record: how much longer a stream no process holds may yet be followed by a connection
  // (kReconnectGrace from the later of its end and the command's); zero once none will be waited for.
  const auto grace_left = [&] {
    if (!stream_ended || !child.exited) return std::chrono::milliseconds(0);
    const auto left = std::max(stream_ended_at, child_exited_at) + kReconnectGrace - std::chrono::steady_clock::now();
    return std::max(std::chrono::milliseconds(0), std::chrono::ceil<std::chrono::milliseconds>(left));
  };
  const auto stream_lost = [&] { return stream_ended && child.exited && grace_left().count() == 0; };
  // Serves the program (its stream, tleak's signals) until it has exited, or with `until_answer`
  // until its agent's reachability answer is in, whichever comes first.
  const auto serve = [&](bool until_answer) {
    // The command's own process and, under --record, the one recorded when it is another (a
    // wrapper's child may outlive it).
    const auto program_ended = [&] {
      if (!child.exited) return false;
      if (!o.records_another() || recorded_pid == child.pid) return true;
      // None has claimed the recording yet: a process the command left running that still holds
      // tleak's stream may yet run NAME, and one that lost it may be about to.
      if (recorded_pid < 0) return stream_lost();
      return recorded_ended || (recorded_pidfd.get() < 0 && stream_lost());
    };
    while (!program_ended() && !(until_answer && source.reach_complete())) {
      // A stream that ended before the program did (it took the agent's channel away) is not polled
      // again: an ended socket is always readable, and the loop would spin until the program ends.
      // Nor is the pidfd of a process that ended: it stays readable.
      pollfd fds[5] = {{stream_ended ? -1 : stream(), POLLIN, 0},
                       {signals.fd(), POLLIN, 0},
                       {child.exited ? -1 : pidfd.get(), POLLIN, 0},
                       {recorded_ended ? -1 : recorded_pidfd.get(), POLLIN, 0},
                       {listener && !recorded_ended ? listener->fd() : -1, POLLIN, 0}};
      // Without a pidfd for the command (a kernel before 5.3), its end is looked for every 100 ms.
      int timeout = child.exited || pidfd.get() >= 0 ? -1 : 100;
      // --record: a second after the command ended, if tleak still waits, it says for what (a
      // wrapper's background job may hold it for long); not for the short grace given a stream no
      // process holds.
      if (o.records_another() && stream_ended && child.exited) {
        const int left = static_cast<int>(grace_left().count());
        if (left > 0) timeout = timeout < 0 ? left : std::min(timeout, left);
      }
      if (child.exited && !waiting_told && !stream_ended) {
        const auto waited = std::chrono::steady_clock::now() - child_exited_at;
        if (waited >= kWaitingNoticeAfter) {
          waiting_told = true;
          if (o.on_notice) o.on_notice(waiting_notice());
        } else {
          timeout = static_cast<int>(
              std::chrono::ceil<std::chrono::milliseconds>(kWaitingNoticeAfter - waited).count());
        }
      }
      const int n = poll(fds, 5, timeout);
      if (n < 0 && errno != EINTR) break;
      if (fds[0].revents & POLLIN) {
        const std::size_t bytes = read_messages(false);
        note_modules();
        follow_recorded();
        const std::uint64_t now = ReadPacing::now_ns();
        rotation.tick(now, source.take_allocating_threads());
        // Not once the program is leaving (its exit scan asked for, or its stream at its end): then
        // what it sends is awaited, and a pause only delays the report.
        if (const std::uint64_t pause = pacing.pause_after(bytes, now);
            pause > 0 && !stream_ended && !source.exit_requested()) {
          ReadPacing::sleep(pause);
        }
      }
      if (fds[4].revents & POLLIN) {
        // The process that claimed the recording, connecting: an image of it before an exec had
        // connected too (its connection closed by the exec), and what it sent is read to its end
        // first. Records may already wait on the new one: its agent did not wait to be accepted.
        Fd connection = listener->accept_from(static_cast<pid_t>(control->recorded_pid));
        if (connection.get() >= 0) {
          while (connected.get() >= 0 && !stream_ended && read_messages(false) > 0) {
          }
          connected = std::move(connection);
          stream_ended = false;
        }
      }
      if (fds[3].revents & (POLLIN | POLLHUP)) {
        recorded_ended = recorded_exited = true;
        // No process claims the recording after it, whatever pid the system gives again.
        __atomic_store_n(&control->recorded_pid, agent::ControlPage::kRecordedEnded, __ATOMIC_RELEASE);
      }
      if (fds[1].revents & POLLIN) {
        signalfd_siginfo info{};
        while (read(signals.fd(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
          const int sig = static_cast<int>(info.ssi_signo);
          if (sig == o.snapshot_signal) {
            control->snapshot_requests = control->snapshot_requests + 1;
          } else if (sig == SIGTERM || sig == SIGHUP || (sig == SIGINT && info.ssi_code == SI_USER)) {
            // A terminal's Ctrl-C reaches the program itself (same process group); a signal sent to
            // tleak alone is passed on.
            kill_program(sig);
          }
        }
      }
      // A program gone before its scan said it was done (killed, or its agent lost its channel)
      // has no threads to hold.
      if (stream_ended) let_threads_go();
      int status = 0;
      // A stop of the program's first thread while tleak traces it (held for the exit scan, when
      // another thread exits) is reported here too: not an end.
      if (!child.exited && waitpid(child.pid, &status, WNOHANG) == child.pid && (WIFEXITED(status) || WIFSIGNALED(status))) {
        child.exited = true;
        child.status = status;
        child_exited_at = std::chrono::steady_clock::now();
      }
      // Once the stream has ended (and no new connection came in the grace) no agent is left to
      // record: a recorded process still running then (it closed its descriptors) is not waited for.
      if (stream_lost()) recorded_ended = true;
    }
    let_threads_go();
  };
  serve(true);
  // The recording, and the report on it with what the program's exit status does not decide.
  std::unique_ptr<Recording> finished;
  std::unique_ptr<Symbolizer> symbolizer;
  std::uint64_t stackless = 0;
  const auto build_report = [&] {
    note_modules();
    end_profile::start();
    symbolizer = preparer->finish();
    end_profile::lap("symbols");
    finished = std::make_unique<Recording>(source.finish());
    end_profile::lap("recording");
    // Allocations the agent recorded without their stacks although stacks were asked for.
    if (o.stack_depth > 0) {
      for (const std::uint32_t site : source.empty_stack_sites()) {
        if (site < finished->sites.size()) stackless += finished->sites[site].allocations;
      }
    }
    make_report(*finished, report, std::nullopt, *symbolizer, source.site_judgements());
  };
  const bool answered_before_exit = !child.exited;
  if (answered_before_exit) {
    // The reachability answer is the agent's last word: the source takes nothing after it. The
    // report is made while the program ends (its last exit handlers, the kernel's teardown of its
    // memory: 10 ms of a PyTorch program's), not after.
    build_report();
    serve(false);
    end_profile::lap("the program's exit waited for");
  }
  // Whatever the program sent before it ended is in the socket: nothing else can write to it.
  read_messages(false);
  const bool channel_lost = control->channel_lost != 0;
  const bool channel_refused = control->channel_lost == agent::kChannelRefused;
  const bool sandboxed = control->sandboxed != 0;
  const std::uint64_t untracked_threads = control->untracked_threads;
  const std::uint32_t deep_bound_unrebound = control->deep_bound_unrebound;
  const std::uint32_t deep_bound_rebound = control->deep_bound_rebound;
  const OtherProcesses others = other_processes(*control);
  munmap(page, 4096);

  if (WIFEXITED(child.status)) program.exit_status = WEXITSTATUS(child.status);
  if (WIFSIGNALED(child.status)) program.exit_signal = WTERMSIG(child.status);
  // The command's end, in a refusal's words.
  const auto ended = [&] {
    return program.exit_signal ? "killed by signal " + std::to_string(*program.exit_signal)
                               : "exit status " + std::to_string(program.exit_status.value_or(-1));
  };
  const std::string listener_failure = listener ? listener->failure() : std::string();
  if (!source.hello_seen() && o.record_fork) {
    const std::string forker = o.record.empty() ? "its process" : "a process running " + o.record;
    throw ProgramError("'" + o.command[0] + "' ended with " + ended() + " before any copy of " + forker +
                       " that it forked allocated (--record-fork records the first that does; copies made by vfork or "
                       "posix_spawn, and those that exec at once, are not such copies)");
  }
  if (!source.hello_seen() && !o.record.empty()) {
    const std::string why =
        !listener_failure.empty()
            ? "one did, but tleak could not take its connection (" + listener_failure + ")"
        : others.without_stream > 0
            ? std::string("one did, but") + kUnreachable
            : "--record names a program by its file name, as its executable or its command line has it (python3, "
              "python3.11)";
    // How the command ended: a script that failed before it reached the program says so here.
    throw ProgramError("no process '" + o.command[0] + "' started that tleak could record ran '" + o.record + "' (" +
                       (others.count == 0 ? std::string("tleak's agent started in none") : "it ran " + others.list) +
                       "; the command ended with " + ended() + "): " + why);
  }
  if (!source.hello_seen()) {
    throw ProgramError("'" + o.command[0] + "' ended before tleak's agent started in it (" + ended() +
                       "): the loader did not load the interposer (a statically linked program, or one that gains "
                       "privileges as it starts, or a script whose interpreter is such a program?)");
  }
  if (answered_before_exit) {
    report.run.program->exit_status = program.exit_status;
    report.run.program->exit_signal = program.exit_signal;
    report.run.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  } else {
    // A program that ended without sending its last records (killed, _exit, its channel taken
    // away) left them in the message slots: read once no process of it writes there.
    std::string unsent_problem;
    if (source.hello_seen() && (recorded_pid == child.pid ? child.exited : recorded_exited)) {
      try {
        for (const std::span<const unsigned char> records : slot_area.unsent()) source.consume(records);
      } catch (const StreamError& e) {
        unsent_problem = e.what();
      }
    }
    build_report();
    if (!unsent_problem.empty()) {
      report.notes.push_back("the records the program left unsent in tleak's message slots as it ended could not all "
                             "be read (" + unsent_problem + "): the last of its allocations and frees may be missing");
    }
  }
  // A malloc built into the executable: the agent saw none of the calls to it.
  if (const std::uint32_t shadowed = source.shadowed_functions(); shadowed != 0) {
    std::string names;
    for (std::uint32_t i = 0; i < agent::kInterposedFunctionCount; ++i) {
      if ((shadowed >> i & 1u) == 0) continue;
      names += (names.empty() ? "" : ", ") + std::string(agent::kInterposedFunctions[i]);
    }
    const std::string what = "the program's executable (" + source.executable() + ") defines " + names +
                             " itself, ahead of tleak's agent in the loader's order";
    if ((shadowed & agent::kShadowedMalloc) != 0 && report.totals.allocations == 0) {
      throw ProgramError("no allocation of '" + o.command[0] + "' reached tleak (it ended with " + ended() +
                         "): " + what + ", and tleak sees a program's blocks only through the calls it interposes");
    }
    report.notes.push_back(what + ": tleak sees only the blocks they take from a function it interposes (the next "
                                  "malloc, by dlsym RTLD_NEXT); the others are not in this report");
  }
  if (stackless > 0) {
    report.notes.push_back(counted(stackless, "allocation is", "allocations are") +
                           " in the site '(no stack recorded)': made with less than " +
                           std::to_string(agent::kUnwindStackRoom / 1024) +
                           " KiB of the thread's stack left, where walking it could have overflowed it, or where "
                           "the unwinder found no frame");
  }
  if (!listener_failure.empty()) {
    report.notes.push_back("tleak could not take a connection to its --record socket (" + listener_failure +
                           ") and stopped listening: a process that connected then (the one recorded, in an image it "
                           "exec'd) ran on unrecorded");
  }
  if (program.stopped_by == "max-live") {
    report.notes.push_back("tleak stopped the program: its live bytes passed --max-live (" +
                           std::to_string(o.max_live_bytes) + " bytes)");
  }
  if (untracked_threads > 0) {
    report.notes.push_back(std::to_string(untracked_threads) + " of the program's threads allocated while all " +
                           std::to_string(agent::kMaxThreadBuffers) +
                           " of the agent's thread buffers were taken by threads alive at once: their allocations "
                           "and frees are not in this report (a block one of them freed reads as still allocated)");
  }
  if (deep_bound_unrebound > 0) {
    report.notes.push_back(
        counted(deep_bound_unrebound, "dlopen call", "dlopen calls") +
        " with RTLD_DEEPBIND named a library the loader looks for from the calling object's place (a bare name "
        "with the caller's RUNPATH or an RPATH in play, or $ORIGIN; or a caller in another link-map namespace, or "
        "in code of no loaded object), so tleak's agent could not bind that "
        "library's calls to malloc and free to its own: a block it freed reads as still allocated (leaked, at "
        "exit), and the blocks it allocated are not in this report; loading it by its path has them seen");
  }
  if (source.stacks_overflowed()) {
    report.notes.push_back("the program made more than " + std::to_string(agent::kMaxSites - 1) +
                           " distinct allocation stacks, all tleak gives a site of their own: allocations from stacks first "
                           "seen after that are counted together in one site without a stack ('(no stack recorded)')");
  }
  if (std::string note = other_processes_note(others, o.record, o.record_fork, recorded_pid); !note.empty()) {
    report.notes.push_back(std::move(note));
  }
  if (std::string note = too_few_samples_note(report, o.thresholds); !note.empty() && !channel_lost) {
    report.notes.push_back(std::move(note));
  }
  if (o.python_path.empty() && source.python_seen() && !marks_module_on_path()) {
    report.notes.push_back("tleak's Python module (tleak.py) is neither beside tleak (../python, "
                           "../share/tleak/python) nor on PYTHONPATH: `import tleak` in the program finds no module; "
                           "install tleak whole, or put its python/ directory on PYTHONPATH");
  }
  if (sandboxed) {
    report.notes.push_back("the program entered a seccomp sandbox (prctl(PR_SET_SECCOMP) or the seccomp system call), "
                           "whose filter may forbid the calls tleak's agent makes to reach tleak: the agent sent what "
                           "it had recorded and stopped recording before it, so what the program did after that is "
                           "not in this report, and blocks left allocated are reported as unjudged, not as leaks");
  } else if (channel_refused) {
    report.notes.push_back("a seccomp filter the program installed refused tleak's agent its sends to tleak: what the "
                           "program did from then on is not in this report, and blocks left allocated are reported as "
                           "unjudged, not as leaks");
  } else if (channel_lost) {
    report.notes.push_back("the program took tleak's channel to its agent away while it ran (it closed or "
                           "replaced that descriptor with a system call tleak does not interpose): what it did "
                           "after that is not in this report, and blocks left allocated are reported as "
                           "unjudged, not as leaks");
  } else if (!report.run.program->exit_scan && source.scan_failed()) {
    report.notes.push_back(scan_failure_note(source.scan_failure()));
  } else if (!report.run.program->exit_scan && source.exit_requested()) {
    report.notes.push_back("the program's exit scan did not finish (the process ended during it), so blocks left "
                           "allocated are reported as unjudged, not as leaks");
  } else if (!report.run.program->exit_scan && !report.run.program->stopped_by.empty()) {
    report.notes.push_back("no exit scan: tleak stopped the program (--" + report.run.program->stopped_by +
                           "), so blocks left allocated are reported as unjudged, not as leaks");
  } else if (!report.run.program->exit_scan && program.exit_signal) {
    report.notes.push_back(killed_without_scan_note(*program.exit_signal));
  } else if (!report.run.program->exit_scan) {
    report.notes.push_back("no exit scan: the program ended without running its exit handlers (killed, _exit from a "
                           "signal handler, or the exit system call made directly), or exec'd a program that "
                           "tleak's agent was not loaded into (its environment had lost LD_PRELOAD: env -i, or a "
                           "program that clears its environment), so blocks left allocated are reported as "
                           "unjudged, not as leaks");
  } else if (report.totals.unjudged_at_exit_blocks > 0) {
    report.notes.push_back(counted(static_cast<std::uint64_t>(report.totals.unjudged_at_exit_blocks), "block was",
                                   "blocks were") +
                           " allocated by a thread still running as the program exited, after its exit scan's "
                           "list was made: reported as unjudged, not as leaks");
  }
  if (report.run.program->exit_scan && hold_ran_out && report.totals.leaked_bytes > 0) {
    report.notes.push_back("the program's other threads, held stopped for its exit scan, ran on after " +
                           std::to_string(kExitScanHoldMs / 1000) +
                           " s, before the scan was done: a pointer they moved meanwhile was not seen, and "
                           "a block only it pointed to counts as leaked");
  }
  if (report.run.program->exit_scan && o.record_fork) {
    report.notes.push_back("the process recorded is a copy the program forked, whose blocks from before its recording "
                           "began were not seen: " + std::string(kHeapReadAsRoots));
  }
  if (report.run.program->exit_scan && deep_bound_rebound > 0) {
    report.notes.push_back("the program loaded " + counted(deep_bound_rebound, "library", "libraries") +
                           " with RTLD_DEEPBIND, whose calls tleak's agent bound to its own once loaded: what their "
                           "constructors allocated while the loader ran them was not seen: " + kHeapReadAsRoots);
  }
  if (report.run.program->exit_scan && unread_threads > 0 && report.totals.leaked_bytes > 0) {
    report.notes.push_back("the registers of " + counted(unread_threads, "other thread", "other threads") +
                           " were not read as the program exited (" + why_unread +
                           "): a block only such a register pointed to counts as leaked");
  }
  // Last: what no Python program's report under pymalloc can tell, whatever else it says.
  if (source.python_seen() && source.python_small_objects_unseen()) {
    report.notes.push_back("Python objects of 512 B or less come from pymalloc, the interpreter's own allocator, which "
                           "tleak does not see: growth made of small objects (dict entries, tuples, short strs kept "
                           "per step) shows only in part; PYTHONMALLOC=malloc in the program's environment has every "
                           "object counted, at a higher cost");
  }
  if (o.last_in_process) {
    leave_for_exit(finished);
    leave_for_exit(source_owner);
    leave_for_exit(symbolizer);
  }
  return report;
}

}  // namespace tleak::diagnosis
