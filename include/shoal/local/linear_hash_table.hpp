// shoal/local/linear_hash_table.hpp — Litwin's linear hashing (VLDB 1980), the K-V storage paper's local table.
//
// The table has N = N0·2^level + split buckets. A key with hash h lives in bucket h mod N0·2^level, or, when that
// bucket has already been split in the current round (index < split), in bucket h mod N0·2^(level+1). When the
// average bucket holds more than `max_load` entries, exactly one bucket — the one under the split pointer — is split
// into itself and bucket N0·2^level + split; after N0·2^level splits the level rises and the pointer restarts at 0.
// Erasures below `min_load` merge the last bucket back (the reverse step, at most 1/min_load buckets per erase).
// So every insert or erase moves a bounded number of buckets' entries: there is never a full rehash, and the worst
// single insert stays small where a doubling table pauses for the whole table (shoal-bench `dist_map`, row
// "max insert latency").
//
// Buckets are small inline vectors (absl::InlinedVector) holding each entry with its hash, so a split never
// rehashes a key. Bucket storage is a directory of fixed-size segments: growing allocates one segment at a time
// and never moves existing buckets.
//
//   shoal::local::linear_hash_table<std::uint64_t, int> t;
//   t.try_emplace(7, 1);                 // {pointer to the value, true}
//   if (int* v = t.find(7)) ++*v;
//   std::optional<int> old = t.extract(7);
//
// Cost: find / insert / erase O(1) expected, each touching one bucket, plus at most one bucket split or merge.
// Not thread-safe (the owner of a dist_map shard is its only user).
#pragma once

#include <absl/container/inlined_vector.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "shoal/core/error.hpp"
#include "shoal/local/table.hpp"

namespace shoal::local {

template <class K, class V, class Hash = local_hash<K>, class Eq = std::equal_to<K>>
class linear_hash_table {
 public:
  using key_type = K;
  using mapped_type = V;

  /// `initial_buckets` is rounded up to a power of two; `max_load` is the mean bucket length that triggers a
  /// split, `min_load` the one that triggers a merge (0 disables shrinking).
  explicit linear_hash_table(std::size_t initial_buckets = 16, double max_load = 2.0, double min_load = 0.5)
      : max_load_(max_load), min_load_(min_load),
        merges_per_erase_(min_load > 0 ? static_cast<std::size_t>(std::ceil(1.0 / min_load)) : 0) {
    if (!(max_load > 0) || min_load < 0 || min_load >= max_load / 2) {
      throw usage_error("shoal::local::linear_hash_table: need max_load > 0 and 0 <= min_load < max_load / 2 (got " +
                        std::to_string(max_load) + ", " + std::to_string(min_load) + ")");
    }
    base_ = 1;
    while (base_ < initial_buckets) base_ <<= 1;
    round_size_ = base_;
    for (std::size_t b = 0; b < base_; ++b) add_bucket();
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Buckets in use: N0·2^level + split.
  std::size_t bucket_count() const { return round_size_ + split_; }
  /// The split pointer and the level (number of completed rounds), for tests and curious readers.
  std::size_t split_pointer() const { return split_; }
  unsigned level() const {
    unsigned l = 0;
    for (std::size_t r = base_; r < round_size_; r <<= 1) ++l;
    return l;
  }

  V* find(const K& key) { return lookup(key, hash_(key)); }
  const V* find(const K& key) const { return const_cast<linear_hash_table*>(this)->lookup(key, hash_(key)); }
  bool contains(const K& key) const { return find(key) != nullptr; }

  /// Inserts (key, V(args...)) unless the key is present. Returns the value and whether it was inserted.
  template <class... Args>
  std::pair<V*, bool> try_emplace(K key, Args&&... args) {
    const std::size_t h = hash_(key);
    if (V* v = lookup(key, h)) return {v, false};
    return {insert_new(h, std::move(key), V(std::forward<Args>(args)...)), true};
  }

  /// Inserts or overwrites. Returns the value and whether it was inserted (false: assigned).
  template <class M>
  std::pair<V*, bool> insert_or_assign(K key, M&& value) {
    const std::size_t h = hash_(key);
    if (V* v = lookup(key, h)) {
      *v = std::forward<M>(value);
      return {v, false};
    }
    return {insert_new(h, std::move(key), V(std::forward<M>(value))), true};
  }

  /// Removes the key and returns its value, or nullopt when absent.
  std::optional<V> extract(const K& key) {
    const std::size_t h = hash_(key);
    auto& b = bucket(address(h));
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (it->hash == h && eq_(it->key, key)) {
        std::optional<V> out(std::move(it->value));
        remove_at(b, it);
        return out;
      }
    }
    return std::nullopt;
  }

  bool erase(const K& key) { return extract(key).has_value(); }

  /// Splits buckets ahead of time so that n entries fit below max_load (never needed: growth is incremental).
  void reserve(std::size_t n) {
    while (static_cast<double>(n) > max_load_ * static_cast<double>(bucket_count())) split_one();
  }

  void clear() {
    segments_.clear();
    size_ = 0;
    split_ = 0;
    round_size_ = base_;
    allocated_ = 0;
    for (std::size_t b = 0; b < base_; ++b) add_bucket();
  }

  /// Calls f(const K&, V&) for every entry, in bucket order.
  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < bucket_count(); ++i)
      for (auto& e : bucket(i)) f(static_cast<const K&>(e.key), e.value);
  }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < bucket_count(); ++i)
      for (const auto& e : bucket(i)) f(e.key, e.value);
  }

 private:
  struct entry {
    std::size_t hash;
    K key;
    V value;
  };
  using bucket_type = absl::InlinedVector<entry, 2>;
  static constexpr std::size_t segment_bits = 10;
  static constexpr std::size_t segment_size = std::size_t{1} << segment_bits;

  bucket_type& bucket(std::size_t i) { return segments_[i >> segment_bits][i & (segment_size - 1)]; }
  const bucket_type& bucket(std::size_t i) const { return segments_[i >> segment_bits][i & (segment_size - 1)]; }

  std::size_t address(std::size_t h) const {
    std::size_t b = h & (round_size_ - 1);
    if (b < split_) b = h & (2 * round_size_ - 1);
    return b;
  }

  V* lookup(const K& key, std::size_t h) {
    for (auto& e : bucket(address(h)))
      if (e.hash == h && eq_(e.key, key)) return &e.value;
    return nullptr;
  }

  V* insert_new(std::size_t h, K&& key, V&& value) {
    ++size_;
    if (static_cast<double>(size_) > max_load_ * static_cast<double>(bucket_count())) split_one();
    auto& b = bucket(address(h));
    b.push_back(entry{h, std::move(key), std::move(value)});
    return &b.back().value;
  }

  void remove_at(bucket_type& b, typename bucket_type::iterator it) {
    if (it != b.end() - 1) *it = std::move(b.back());
    b.pop_back();
    --size_;
    // Each erase lowers the size by one while the bucket count must fall by 1/min_load to keep up: merge up to
    // that many buckets (a bounded amount of work, never a full rehash).
    for (std::size_t i = 0; i < merges_per_erase_ && bucket_count() > base_ &&
                            static_cast<double>(size_) < min_load_ * static_cast<double>(bucket_count());
         ++i) {
      merge_one();
    }
  }

  /// Makes bucket index `allocated_` usable (allocating its segment if it starts one).
  void add_bucket() {
    if ((allocated_ & (segment_size - 1)) == 0) segments_.push_back(std::make_unique<bucket_type[]>(segment_size));
    ++allocated_;
  }

  // Splits the bucket under the split pointer: entries whose next hash bit is set move to the new bucket.
  void split_one() {
    const std::size_t from = split_;
    const std::size_t to = round_size_ + split_;
    if (to == allocated_) add_bucket();
    auto& src = bucket(from);
    auto& dst = bucket(to);
    std::size_t keep = 0;
    for (std::size_t i = 0; i < src.size(); ++i) {
      if (src[i].hash & round_size_) {
        dst.push_back(std::move(src[i]));
      } else {
        if (keep != i) src[keep] = std::move(src[i]);
        ++keep;
      }
    }
    src.erase(src.begin() + static_cast<std::ptrdiff_t>(keep), src.end());
    if (++split_ == round_size_) {
      round_size_ *= 2;
      split_ = 0;
    }
  }

  // The reverse of split_one: the last bucket goes back into its partner.
  void merge_one() {
    if (split_ == 0) {
      round_size_ /= 2;
      split_ = round_size_;
    }
    --split_;
    const std::size_t into = split_;
    const std::size_t last = round_size_ + split_;
    auto& src = bucket(last);
    auto& dst = bucket(into);
    for (auto& e : src) dst.push_back(std::move(e));
    // Emptied and its heap storage released. (Not `src = bucket_type()`: GCC 12 at -O2 warned that the moved-from
    // temporary's storage "may be used uninitialized" inside absl::InlinedVector's move assignment.)
    src.clear();
    src.shrink_to_fit();
    // Free a segment once the bucket that started it is gone.
    if ((last & (segment_size - 1)) == 0) {
      segments_.pop_back();
      allocated_ = last;
    }
  }

  std::vector<std::unique_ptr<bucket_type[]>> segments_;
  std::size_t base_ = 16;        // N0, a power of two
  std::size_t round_size_ = 16;  // N0·2^level
  std::size_t split_ = 0;
  std::size_t size_ = 0;
  std::size_t allocated_ = 0;  // buckets with storage (>= bucket_count())
  double max_load_;
  double min_load_;
  std::size_t merges_per_erase_;
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] Eq eq_;
};

/// The linear-hashing family, for dist_map<K, V, shoal::local::linear>.
struct linear {
  template <class K, class V>
  using table = linear_hash_table<K, V>;
};

}  // namespace shoal::local
