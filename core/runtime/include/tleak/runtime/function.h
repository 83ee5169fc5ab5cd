// A user function that runs in any of the three modes. In graph and JIT mode it is traced once per
// input signature (the shapes, dtypes and placements of the tensor arguments plus the values of the
// non-tensor arguments) into a graph that is cached; a new signature traces again and adds a cache
// entry. Values the function captures from outside are frozen into the trace as constants, so a
// later change to them is not seen until something forces a new trace. In JIT mode each cached
// graph is compiled into an Executable (so, per input shape).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tleak/runtime/graph.h"
#include "tleak/runtime/jit.h"

namespace tleak::runtime {

enum class Mode { kEager, kGraph, kJit };
const char* to_string(Mode mode);

class Function {
 public:
  using Body = std::function<std::vector<Tensor>(const std::vector<Tensor>& args,
                                                 const std::vector<std::int64_t>& statics)>;
  Function(Runtime& rt, std::string name, Body body, Mode mode, JitOptions jit = {});
  ~Function();

  std::vector<Tensor> operator()(const std::vector<Tensor>& args, const std::vector<std::int64_t>& statics = {});

  Mode mode() const { return mode_; }
  std::size_t cache_size() const { return cache_.size(); }
  std::size_t trace_count() const { return traces_; }
  // The executable of the most recent call's signature; null outside JIT mode.
  const Executable* last_executable() const { return last_ != nullptr ? last_->executable.get() : nullptr; }
  // Drops every trace and executable (and what they hold: constants, arenas).
  void clear_cache();

 private:
  struct Concrete {
    std::unique_ptr<Graph> graph;
    std::vector<int> outputs;
    std::unique_ptr<Executable> executable;
  };
  std::string signature(const std::vector<Tensor>& args, const std::vector<std::int64_t>& statics) const;
  std::unique_ptr<Concrete> trace(const std::vector<Tensor>& args, const std::vector<std::int64_t>& statics);

  Runtime& rt_;
  std::string name_;
  Body body_;
  Mode mode_;
  JitOptions jit_;
  std::map<std::string, std::unique_ptr<Concrete>> cache_;
  const Concrete* last_ = nullptr;
  std::size_t traces_ = 0;
};

}  // namespace tleak::runtime
