// The hash that names a stack in the stream (SiteRecord::key_a, key_b): the agent keys each stack
// it sends with it, and tleak keys with it a stack it rewrites (one whose Python frame the agent
// sent under two ids, for two instructions of one expression, which tleak makes one frame). Both
// sides include this header, so the two keys of one stack are the same.
#pragma once

#include <bit>
#include <cstdint>

namespace tleak::agent {

struct StackHash {
  std::uint64_t a = 0;  // never 0
  std::uint64_t b = 0;
};

// MurmurHash3's finalizer: every input bit reaches every output bit.
inline std::uint64_t stack_hash_mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

inline StackHash stack_hash(const std::uint64_t* words, std::uint32_t count) {
  // Four independent lanes, word i into lane i % 4: one multiply per word, but four chains in
  // flight instead of one long dependent chain (this runs for every allocation and every Python
  // frame of it, and a chain's multiplies were most of its time). Each lane keeps its words' order;
  // distinct odd multipliers and seeds keep lanes and positions apart. Then a full mix into two
  // halves that each depend on every lane.
  std::uint64_t lane[4] = {0x9e3779b97f4a7c15ull ^ count, 0xc2b2ae3d27d4eb4full + count,
                           0x165667b19e3779f9ull ^ (std::uint64_t{count} << 32),
                           0x27d4eb2f165667c5ull - count};
  constexpr std::uint64_t kMultiplier[4] = {0xbf58476d1ce4e5b9ull, 0x9fb21c651e98df25ull,
                                            0x94d049bb133111ebull, 0xd6e8feb86659fd93ull};
  std::uint32_t i = 0;
  for (; i + 4 <= count; i += 4) {
    for (int k = 0; k < 4; ++k) {
      lane[k] = (lane[k] ^ words[i + k]) * kMultiplier[k];
      lane[k] ^= lane[k] >> 29;
    }
  }
  for (int k = 0; i < count; ++i, ++k) {
    lane[k] = (lane[k] ^ words[i]) * kMultiplier[k];
    lane[k] ^= lane[k] >> 29;
  }
  const std::uint64_t a = stack_hash_mix(lane[0] ^ stack_hash_mix(lane[1] + 0x632be59bd9b4e019ull) ^
                                         stack_hash_mix(lane[2] ^ std::rotl(lane[3], 23)));
  const std::uint64_t b = stack_hash_mix(lane[3] ^ stack_hash_mix(lane[2] + 0x8cb92ba72f3d8dd7ull) ^
                                         stack_hash_mix(lane[0] - std::rotl(lane[1], 41)));
  return {a | 1, b};
}

}  // namespace tleak::agent
