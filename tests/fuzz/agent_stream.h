// The fuzz input format of agent_stream_fuzz: the agent's messages one after another, each a
// 2-byte little-endian length and that many bytes (a message longer than what is left is cut).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tleak::fuzz {

template <class OnMessage>
void for_each_message(const std::uint8_t* data, std::size_t size, OnMessage on_message) {
  std::size_t at = 0;
  while (at + 2 <= size) {
    std::size_t length = data[at] | static_cast<std::size_t>(data[at + 1]) << 8;
    at += 2;
    if (length > size - at) length = size - at;
    on_message(std::span<const unsigned char>(data + at, length));
    at += length;
  }
}

inline void append_message(std::vector<std::uint8_t>& out, const std::vector<std::uint8_t>& message) {
  out.push_back(static_cast<std::uint8_t>(message.size() & 0xff));
  out.push_back(static_cast<std::uint8_t>(message.size() >> 8));
  out.insert(out.end(), message.begin(), message.end());
}

}  // namespace tleak::fuzz
