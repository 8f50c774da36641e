// shoal/containers/detail/owner_table.hpp — the owner-computes engine shared by dist_map and dist_multimap.
//
// One owner_table per container instance and rank. It holds this rank's shard (a shoal::local table), decides the
// owner of a key, ships operations to owners as active messages and routes their replies to futures, and implements
// CSE_Hash's completion vocabulary:
//   wait()   completes every operation this rank issued (HASH_Wait): one fence message to every owner this rank
//            addressed since the last wait; per-pair FIFO order means the fence's reply comes after the replies of
//            every earlier operation, and it carries the number of fire-and-forget inserts the owner had to reject
//            (full) and the first error a fire-and-forget operation raised there.
//   flush()  collective (HASH_Flush): wait() on every rank, then a barrier.
//   blocking factor L: after L requests (one per single operation, one per owner of a batch) the next one first
//            waits, bounding what an origin has outstanding.
// An operation is a struct with `using wire = <result type on the wire>` and
// `static wire apply(owner_table&, int origin, args...)`; it runs at the owner (inline when the owner is this rank).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/am.hpp"
#include "shoal/core/detail/registry.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/hash.hpp"
#include "shoal/core/team.hpp"
#include "shoal/local/table.hpp"

namespace shoal {

/// How keys are spread over the owners.
enum class key_placement {
  hashed,  ///< XXH3 of the key, modulo the number of owners (any key type)
  cyclic,  ///< key modulo the number of owners (integral keys; CSE_Hash's k % p, row-cyclic matrix scatter)
};

/// Settings of dist_map and dist_multimap (all ranks must pass the same).
struct dist_map_options {
  /// Entries (key-value pairs) each owner may hold; 0 = unlimited. Inserts that do not fit are reported, never
  /// dropped silently: a batch returns how many went in, a single insert fails with container_full.
  std::size_t capacity_per_rank = 0;
  /// CSE_Hash's blocking factor L: requests a rank may have outstanding before it waits; 0 = unlimited.
  std::size_t blocking_factor = 0;
  /// Empty: co-located layout (every rank owns a shard). Otherwise the service layout: these ranks own the data
  /// and run serve(); every other rank is a client and ends with close().
  std::vector<int> servers;
  key_placement placement = key_placement::hashed;
  /// Seed of the hash that picks the owner.
  std::uint64_t seed = 0x73686f616c646d70ull;
};

/// Outcome of a batch insert: how many entries went in, how many keys were already present (dist_map only), and
/// how many did not fit under capacity_per_rank.
struct batch_insert_result {
  std::size_t inserted = 0;
  std::size_t existing = 0;
  std::size_t rejected = 0;
  batch_insert_result& operator+=(const batch_insert_result& o) {
    inserted += o.inserted;
    existing += o.existing;
    rejected += o.rejected;
    return *this;
  }
  friend bool operator==(const batch_insert_result&, const batch_insert_result&) = default;
};

}  // namespace shoal

namespace shoal::detail {

/// Result of one insert at its owner.
enum class insert_status : std::uint8_t { existing, inserted, rejected };

/// Inserts a result reports as rejected (counted for fire-and-forget operations).
inline std::uint64_t rejected_in(insert_status s) { return s == insert_status::rejected ? 1 : 0; }
inline std::uint64_t rejected_in(const batch_insert_result& r) { return r.rejected; }
template <class W>
std::uint64_t rejected_in(const W&) {
  return 0;
}

/// Something waiting for replies.
struct receiver_base {
  virtual ~receiver_base() = default;
  virtual void fail(std::exception_ptr e) = 0;
};
template <class Wire>
struct receiver : receiver_base {
  virtual void arrive(Wire&& w, std::uint32_t part) = 0;
};

/// One reply completes one future; Convert turns the wire result into the future's value (or throws).
template <class Wire, class R, class Convert>
struct single_receiver final : receiver<Wire>, future_state<future_value_t<R>> {
  void arrive(Wire&& w, std::uint32_t) override {
    try {
      this->set_value(Convert{}(std::move(w)));
    } catch (...) {
      this->set_error(std::current_exception());
    }
  }
  void fail(std::exception_ptr e) override { this->set_error(std::move(e)); }
};

/// One reply per owner of a batch; Merge(result, wire, positions of that owner's part) combines them.
template <class Wire, class R, class Merge>
struct batch_receiver final : receiver<Wire>, future_state<R> {
  R result;
  std::vector<std::vector<std::size_t>> positions;  // per part
  std::size_t remaining = 0;
  void arrive(Wire&& w, std::uint32_t part) override {
    Merge{}(result, std::move(w), positions[part]);
    if (--remaining == 0) finish();
  }
  void fail(std::exception_ptr e) override {
    if (!this->error) this->error = std::move(e);
    if (--remaining == 0) finish();
  }
  void finish() {
    if (this->error) this->set_error(this->error);
    else this->set_value(std::move(result));
  }
};

struct identity {
  template <class T>
  T operator()(T&& v) const {
    return std::forward<T>(v);
  }
};

/// Batch merges: add the counts of every owner; or put each owner's results back at their input positions.
struct merge_counts {
  void operator()(batch_insert_result& total, batch_insert_result&& part, const std::vector<std::size_t>&) const {
    total += part;
  }
};
struct scatter_back {
  template <class T>
  void operator()(std::vector<T>& out, std::vector<T>&& part, const std::vector<std::size_t>& positions) const {
    for (std::size_t i = 0; i < positions.size(); ++i) out[positions[i]] = std::move(part[i]);
  }
};

/// The elements of `range` at `positions`, projected by `get`.
template <class T, class Range, class Get>
std::vector<T> gather(const Range& range, const std::vector<std::size_t>& positions, Get get) {
  std::vector<T> out;
  out.reserve(positions.size());
  for (std::size_t i : positions) out.push_back(static_cast<T>(get(range[i])));
  return out;
}
inline constexpr auto first_of = [](const auto& e) -> decltype(auto) { return std::get<0>(e); };
inline constexpr auto second_of = [](const auto& e) -> decltype(auto) { return std::get<1>(e); };
inline constexpr auto itself = [](const auto& e) -> decltype(auto) { return e; };

/// A user function run at the owner: a lambda without captures or another empty function object (it is rebuilt
/// there from its type; pass what it needs as arguments).
template <class F>
concept owner_function = std::is_empty_v<F> && std::default_initializable<F>;

/// A batch of one single-key operation: runs Single at the owner for every key it received, results in order.
template <class Single>
struct per_key_batch_op {
  using wire = std::vector<typename Single::wire>;
  template <class Engine, class K>
  static wire apply(Engine& t, int, std::vector<K> keys) {
    wire out;
    out.reserve(keys.size());
    for (auto& k : keys) out.push_back(Single::apply(t, 0, std::move(k)));
    return out;
  }
};

template <class K, class Stored, class Family>
class owner_table {
 public:
  using shard_type = typename Family::template table<K, Stored>;
  static_assert(local::table<shard_type>, "the local-table family must provide a shoal::local::table");

  /// Collective over `team`; owners, servers and origins are team ranks.
  owner_table(const dist_map_options& opts, std::string name, const shoal::team& team)
      : reg_(team, name), name_(std::move(name)), me_(team.rank()), capacity_(opts.capacity_per_rank),
        blocking_factor_(opts.blocking_factor), placement_(opts.placement), seed_(opts.seed) {
    const int np = team.size();
    if (opts.servers.empty()) {
      for (int r = 0; r < np; ++r) owners_.push_back(r);
      service_ = false;
    } else {
      owners_ = opts.servers;
      service_ = true;
      std::vector<char> seen(static_cast<std::size_t>(np), 0);
      for (int s : owners_) {
        if (s < 0 || s >= np || seen[static_cast<std::size_t>(s)]) {
          throw usage_error(name_ + ": dist_map_options::servers must list distinct ranks in 0.." +
                            std::to_string(np - 1) + " (got rank " + std::to_string(s) + ")");
        }
        seen[static_cast<std::size_t>(s)] = 1;
      }
      clients_ = np - static_cast<int>(owners_.size());
    }
    if constexpr (!std::is_integral_v<K>) {
      if (placement_ == key_placement::cyclic) {
        throw usage_error(name_ + ": key_placement::cyclic needs an integral key type; use key_placement::hashed");
      }
    }
    for (int s : owners_) owns_shard_ = owns_shard_ || s == me_;
    touched_.assign(static_cast<std::size_t>(np), 0);
    from_origin_.resize(static_cast<std::size_t>(np));
    reg_.register_target(this);
    id_ = reg_.slot();
    team.barrier();  // every rank registered before anyone sends
  }

  owner_table(const owner_table&) = delete;
  owner_table& operator=(const owner_table&) = delete;

  /// Collective over the team: completes this rank's operations, then reg_ waits for the team (other ranks' fences
  /// are still answered meanwhile) and frees the slot, before any member is destroyed. Nothing after the
  /// environment has ended.
  ~owner_table() {
    if (run_is_live(reg_.run())) {
      try {
        wait();
      } catch (const std::exception&) {
        // Destruction must not throw; the errors of fire-and-forget operations are reported by an explicit flush().
      }
    }
    reg_.release();
  }

  const shoal::team& team() const noexcept { return reg_.team(); }
  /// Throws usage_error when the container belongs to an ended environment.
  void check() const { reg_.check(); }

  // ---- placement ---------------------------------------------------------------------------------------------

  int owner_of(const K& key) const {
    std::size_t i;
    if constexpr (std::is_integral_v<K>) {
      i = placement_ == key_placement::cyclic
              ? static_cast<std::size_t>(static_cast<std::make_unsigned_t<K>>(key) % owners_.size())
              : static_cast<std::size_t>(hash_value(key, seed_) % owners_.size());
    } else {
      i = static_cast<std::size_t>(hash_value(key, seed_) % owners_.size());
    }
    return owners_[i];
  }
  const std::vector<int>& owners() const { return owners_; }
  bool owns_shard() const { return owns_shard_; }
  bool is_service() const { return service_; }

  // ---- the shard, as the operations see it ---------------------------------------------------------------------

  shard_type& shard() { return shard_; }
  const shard_type& shard() const { return shard_; }
  /// Entries (key-value pairs) this rank stores.
  std::size_t entries() const { return entries_; }
  void add_entries(std::size_t n) { entries_ += n; }
  void remove_entries(std::size_t n) { entries_ -= n; }
  /// How many more entries fit on this rank.
  std::size_t room() const { return capacity_ == 0 ? SIZE_MAX : capacity_ - entries_; }
  std::size_t capacity() const { return capacity_; }
  const std::string& name() const { return name_; }

  // ---- issuing operations --------------------------------------------------------------------------------------

  /// Runs Op at `owner`; the result arrives in the returned future (Convert: Op::wire -> R).
  template <class Op, class R, class Convert, class... Args>
  future<R> call(int owner, Args&&... args) {
    using wire = typename Op::wire;
    before_issue();
    auto state = std::make_shared<single_receiver<wire, R, Convert>>();
    if (owner == me_) {
      std::optional<wire> result;
      try {
        result.emplace(Op::apply(*this, me_, std::forward<Args>(args)...));
      } catch (const std::exception& e) {
        state->fail(std::make_exception_ptr(remote_error(failure_text(e))));
      }
      if (result) state->arrive(std::move(*result), 0);
    } else {
      const std::uint32_t slot = add_pending(state, 0);
      touch(owner);
      shoal::post(to_world(owner), &on_call<Op, std::decay_t<Args>...>, id_, slot, std::forward<Args>(args)...);
    }
    using base = future_state<future_value_t<R>>;
    return future<R>(std::shared_ptr<base>(state, static_cast<base*>(state.get())));
  }

  /// Runs Op at `owner` without a result (completed and reported by wait / flush).
  template <class Op, class... Args>
  void post(int owner, Args&&... args) {
    before_issue();
    if (owner == me_) {
      try {
        rejected_ += rejected_in(Op::apply(*this, me_, std::forward<Args>(args)...));
      } catch (const std::exception& e) {
        if (error_.empty()) error_ = failure_text(e);
      }
    } else {
      touch(owner);
      shoal::post(to_world(owner), &on_post<Op, std::decay_t<Args>...>, id_, std::forward<Args>(args)...);
    }
  }

  /// Splits input positions 0..n-1 by owner rank (key_at(i) gives the key of position i).
  template <class KeyAt>
  std::vector<std::vector<std::size_t>> split_by_owner(std::size_t n, KeyAt&& key_at) const {
    std::vector<std::vector<std::size_t>> by_owner(static_cast<std::size_t>(team().size()));
    for (std::size_t i = 0; i < n; ++i) by_owner[static_cast<std::size_t>(owner_of(key_at(i)))].push_back(i);
    return by_owner;
  }

  /// Runs Op once per owner that has positions in `by_owner`, with the arguments make_args(positions) (a tuple),
  /// and merges the replies into one future (Merge: (R&, wire&&, positions)). Empty input: a ready future of init.
  template <class Op, class R, class Merge, class MakeArgs>
  future<R> call_batch(R init, std::vector<std::vector<std::size_t>> by_owner, MakeArgs&& make_args) {
    using wire = typename Op::wire;
    auto state = std::make_shared<batch_receiver<wire, R, Merge>>();
    state->result = std::move(init);
    std::vector<int> targets;
    for (std::size_t r = 0; r < by_owner.size(); ++r) {
      if (!by_owner[r].empty()) {
        targets.push_back(static_cast<int>(r));
        state->positions.push_back(std::move(by_owner[r]));
      }
    }
    state->remaining = targets.size();
    if (targets.empty()) state->finish();
    for (std::size_t part = 0; part < targets.size(); ++part) {
      const int owner = targets[part];
      auto args = make_args(state->positions[part]);
      before_issue();
      if (owner == me_) {
        std::optional<wire> result;
        try {
          result.emplace(std::apply([&](auto&&... a) { return Op::apply(*this, me_, std::move(a)...); }, args));
        } catch (const std::exception& e) {
          state->fail(std::make_exception_ptr(remote_error(failure_text(e))));
        }
        if (result) state->arrive(std::move(*result), static_cast<std::uint32_t>(part));
      } else {
        const std::uint32_t slot = add_pending(state, static_cast<std::uint32_t>(part));
        touch(owner);
        std::apply(
            [&](auto&&... a) {
              shoal::post(to_world(owner), &on_call<Op, std::decay_t<decltype(a)>...>, id_, slot, std::move(a)...);
            },
            args);
      }
    }
    return future<R>(std::shared_ptr<future_state<R>>(state, static_cast<future_state<R>*>(state.get())));
  }

  // ---- completion (CSE_Hash) -----------------------------------------------------------------------------------

  /// Completes every operation this rank issued (HASH_Wait). Not collective. Throws container_full if
  /// fire-and-forget inserts did not fit, remote_error if a fire-and-forget operation failed at its owner.
  void wait() {
    for (int o : touched_list_) {
      touched_[static_cast<std::size_t>(o)] = 0;
      ++fences_;
      shoal::post(to_world(o), &on_fence, id_);
    }
    touched_list_.clear();
    issued_ = 0;
    while (fences_ != 0) shoal::progress();
    report();
  }

  /// Collective: every rank's operations are complete when it returns (HASH_Flush).
  void flush() {
    std::exception_ptr failure;
    try {
      wait();
    } catch (...) {
      failure = std::current_exception();
    }
    team().barrier();
    if (failure) std::rethrow_exception(failure);
  }

  // ---- service layout ------------------------------------------------------------------------------------------

  /// Server ranks: answers requests until every client has called close(). Collective with close().
  void serve() {
    if (!service_ || !owns_shard_) {
      throw usage_error(name_ + ": serve() is for the server ranks of the service layout "
                        "(dist_map_options::servers); clients call close()");
    }
    while (clients_closed_ < clients_) shoal::progress();
    clients_closed_ = 0;
    team().barrier();
  }

  /// Client ranks: completes this rank's operations and tells the servers it is done. Collective with serve().
  void close() {
    if (!service_ || owns_shard_) {
      throw usage_error(name_ + ": close() is for the client ranks of the service layout; servers call serve()");
    }
    std::exception_ptr failure;
    try {
      wait();
    } catch (...) {
      failure = std::current_exception();
    }
    for (int s : owners_) shoal::post(to_world(s), &on_client_closed, id_);
    shoal::am::flush();
    team().barrier();
    if (failure) std::rethrow_exception(failure);
  }

 private:
  struct origin_report {
    std::uint64_t rejected = 0;
    std::string error;
  };
  struct pending {
    std::shared_ptr<receiver_base> target;
    std::uint32_t part = 0;
  };

  std::string failure_text(const std::exception& e) const {
    return name_ + ": operation failed at its owner, rank " + std::to_string(me_) + ": " + e.what();
  }

  static owner_table& lookup(std::uint32_t id) { return *static_cast<owner_table*>(handler_target(id)); }

  /// The environment rank of team rank r (messages travel between environment ranks).
  int to_world(int r) const { return reg_.team().to_world(r); }
  /// Inside a handler: the team rank of the rank that sent the message.
  int origin() const { return reg_.team().from_world(am::current_source()); }

  void before_issue() {
    if (blocking_factor_ != 0 && issued_ >= blocking_factor_) wait();
    ++issued_;
  }

  void touch(int owner) {
    auto& t = touched_[static_cast<std::size_t>(owner)];
    if (!t) {
      t = 1;
      touched_list_.push_back(owner);
    }
  }

  std::uint32_t add_pending(std::shared_ptr<receiver_base> target, std::uint32_t part) {
    std::uint32_t slot;
    if (free_slots_.empty()) {
      slot = static_cast<std::uint32_t>(pending_.size());
      pending_.emplace_back();
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
    pending_[slot] = {std::move(target), part};
    return slot;
  }

  pending take_pending(std::uint32_t slot) {
    pending p = std::move(pending_[slot]);
    free_slots_.push_back(slot);
    return p;
  }

  void report() {
    const std::uint64_t rejected = std::exchange(rejected_, 0);
    std::string error = std::exchange(error_, {});
    if (!error.empty()) throw remote_error(error);
    if (rejected != 0) {
      throw container_full(name_ + ": " + std::to_string(rejected) + " fire-and-forget insert(s) (post_*) " +
                           "did not fit (an owner reached dist_map_options::capacity_per_rank = " +
                           std::to_string(capacity_) + "); raise capacity_per_rank, or use the batch or future " +
                           "forms, which report exactly what went in");
    }
  }

  // ---- handlers (run at the owner, or back at the origin) ------------------------------------------------------

  template <class Op, class... Args>
  static void on_call(std::uint32_t id, std::uint32_t slot, Args... args) {
    auto& self = lookup(id);
    const int origin = self.origin();
    std::optional<typename Op::wire> result;
    std::string what;
    try {
      result.emplace(Op::apply(self, origin, std::move(args)...));
    } catch (const std::exception& e) {
      what = self.failure_text(e);
    }
    if (result) shoal::post(self.to_world(origin), &on_reply<typename Op::wire>, id, slot, std::move(*result));
    else shoal::post(self.to_world(origin), &on_reply_error, id, slot, std::move(what));
  }

  template <class Wire>
  static void on_reply(std::uint32_t id, std::uint32_t slot, Wire w) {
    pending p = lookup(id).take_pending(slot);
    static_cast<receiver<Wire>*>(p.target.get())->arrive(std::move(w), p.part);
  }

  static void on_reply_error(std::uint32_t id, std::uint32_t slot, std::string what) {
    pending p = lookup(id).take_pending(slot);
    p.target->fail(std::make_exception_ptr(remote_error(what)));
  }

  template <class Op, class... Args>
  static void on_post(std::uint32_t id, Args... args) {
    auto& self = lookup(id);
    const int origin = self.origin();
    auto& report = self.from_origin_[static_cast<std::size_t>(origin)];
    try {
      report.rejected += rejected_in(Op::apply(self, origin, std::move(args)...));
    } catch (const std::exception& e) {
      if (report.error.empty()) {
        report.error = self.failure_text(e);
      }
    }
  }

  static void on_fence(std::uint32_t id) {
    auto& self = lookup(id);
    const int origin = self.origin();
    origin_report r = std::exchange(self.from_origin_[static_cast<std::size_t>(origin)], {});
    shoal::post(self.to_world(origin), &on_fence_reply, id, r.rejected, std::move(r.error));
  }

  static void on_fence_reply(std::uint32_t id, std::uint64_t rejected, std::string error) {
    auto& self = lookup(id);
    self.rejected_ += rejected;
    if (self.error_.empty()) self.error_ = std::move(error);
    --self.fences_;
  }

  static void on_client_closed(std::uint32_t id) { ++lookup(id).clients_closed_; }

  registration reg_;  // the team, the run and the handler slot (released last, after the destructor's wait)
  std::string name_;
  std::uint32_t id_ = 0;
  int me_;
  std::size_t capacity_;
  std::size_t blocking_factor_;
  key_placement placement_;
  std::uint64_t seed_;
  std::vector<int> owners_;
  bool service_ = false;
  bool owns_shard_ = false;
  int clients_ = 0;
  int clients_closed_ = 0;

  shard_type shard_;
  std::size_t entries_ = 0;

  std::vector<pending> pending_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<char> touched_;
  std::vector<int> touched_list_;
  std::size_t issued_ = 0;
  std::size_t fences_ = 0;
  std::uint64_t rejected_ = 0;  // fire-and-forget inserts of this rank that did not fit (reported by wait)
  std::string error_;           // first failure of a fire-and-forget operation of this rank
  std::vector<origin_report> from_origin_;  // as an owner: per origin, since its last fence
};


/// The public operations dist_map and dist_multimap share (completion, layout, the local shard, collectives, update
/// and batch insert), and the helpers both use to issue their operations. `Stored` is what a key maps to in the
/// shard; `Derived` (CRTP) supplies the operations whose meaning differs: `update_op<F, Args...>` and
/// `insert_batch_op`, and its `mapped_type`.
template <class Derived, class K, class Stored, class Family>
class owner_container {
 public:
  /// Runs fn at the owner if the key is present (dist_map: fn(V& value, args...); dist_multimap: fn(std::vector<V>&
  /// values, args...)). Returns whether the key was present (fn returning void) or fn's result (nullopt: absent).
  template <owner_function F, class... Args>
  auto update(const K& key, F fn, Args&&... args) {
    return async_update(key, fn, std::forward<Args>(args)...).get();
  }
  template <owner_function F, class... Args>
  auto async_update(K key, F, Args&&... args) {
    using op = typename Derived::template update_op<F, std::decay_t<Args>...>;
    return call<op, typename op::wire, identity>(std::move(key), std::forward<Args>(args)...);
  }
  /// Fire and forget: no result; completed (and a throwing fn reported) by wait() / flush().
  template <owner_function F, class... Args>
  void post_update(K key, F, Args&&... args) {
    post<typename Derived::template update_op<F, std::decay_t<Args>...>>(std::move(key), std::forward<Args>(args)...);
  }

  /// Inserts every (key, value) of a random-access range of pairs, one message per owner (dist_map: keys already
  /// present keep their value; dist_multimap: values are appended). The counts of every owner, summed.
  template <std::ranges::random_access_range Range>
  batch_insert_result insert_batch(const Range& pairs) {
    return async_insert_batch(pairs).get();
  }
  template <std::ranges::random_access_range Range>
  future<batch_insert_result> async_insert_batch(const Range& pairs) {
    return pair_batch<typename Derived::insert_batch_op, typename Derived::mapped_type>(pairs);
  }

  /// Completes every operation this rank issued (CSE_Hash HASH_Wait). Not collective.
  void wait() { t_.wait(); }
  /// Collective: completes every rank's operations (CSE_Hash HASH_Flush).
  void flush() { t_.flush(); }
  /// Service layout, server ranks: answers requests until every client has closed (collective with close()).
  void serve() { t_.serve(); }
  /// Service layout, client ranks: completes this rank's operations, then ends the service (collective with serve()).
  void close() { t_.close(); }
  /// True on the ranks that store data (every rank co-located; the servers in the service layout).
  bool is_owner() const { return t_.owns_shard(); }
  /// The team rank that owns `key`.
  int owner(const K& key) const { return t_.owner_of(key); }
  /// The team the container lives on.
  const shoal::team& team() const noexcept { return t_.team(); }

  /// Entries (key-value pairs) stored on this rank.
  std::size_t local_size() const { return t_.entries(); }
  /// Calls fn(const K&, Stored&) for every key of this rank's shard.
  template <class F>
  void local_for_each(F&& fn) {
    t_.shard().for_each(fn);
  }
  /// Collective: flush(), then fn(const K&, Stored&) over every rank's shard, then a barrier.
  template <class F>
  void for_all(F&& fn) {
    flush();
    local_for_each(fn);
    t_.team().barrier();
  }
  /// Collective: flush(), then op-combines map(k, stored) over every key of every rank (identity: op's neutral
  /// element; op as for shoal::allreduce).
  template <class T, class Map, class Op>
  T reduce(T identity, Map map, Op op) {
    flush();
    T acc = identity;
    t_.shard().for_each([&](const K& k, Stored& v) { acc = op(acc, map(k, v)); });
    return t_.team().allreduce(acc, op);
  }
  /// Collective: the number of entries on every rank.
  std::size_t size() {
    flush();
    return t_.team().allreduce(local_size(), op::sum{});
  }

 protected:
  using engine = owner_table<K, Stored, Family>;

  owner_container(const dist_map_options& options, std::string name, const shoal::team& team)
      : t_(options, std::move(name), team) {}

  template <class Op, class R, class Convert, class... Args>
  future<R> call(K key, Args&&... args) {
    t_.check();
    const int owner = t_.owner_of(key);
    return t_.template call<Op, R, Convert>(owner, std::move(key), std::forward<Args>(args)...);
  }
  template <class Op, class... Args>
  void post(K key, Args&&... args) {
    t_.check();
    const int owner = t_.owner_of(key);
    t_.template post<Op>(owner, std::move(key), std::forward<Args>(args)...);
  }
  /// One Op per owner over the keys of a random-access range; results (a vector per owner) back in input order.
  template <class Op, class Range>
  future<typename Op::wire> keyed_batch(const Range& keys) {
    using result = typename Op::wire;
    const std::size_t n = std::ranges::size(keys);
    auto by_owner = t_.split_by_owner(n, [&](std::size_t i) -> decltype(auto) { return keys[i]; });
    return t_.template call_batch<Op, result, scatter_back>(result(n), std::move(by_owner),
                                                            [&](const std::vector<std::size_t>& at) {
                                                              return std::make_tuple(gather<K>(keys, at, itself));
                                                            });
  }
  /// One Op per owner over the (key, value) pairs of a random-access range; the counts summed.
  template <class Op, class V, class Range>
  future<batch_insert_result> pair_batch(const Range& pairs) {
    auto by_owner = t_.split_by_owner(std::ranges::size(pairs),
                                      [&](std::size_t i) -> decltype(auto) { return std::get<0>(pairs[i]); });
    return t_.template call_batch<Op, batch_insert_result, merge_counts>(
        batch_insert_result{}, std::move(by_owner), [&](const std::vector<std::size_t>& at) {
          return std::make_tuple(gather<K>(pairs, at, first_of), gather<V>(pairs, at, second_of));
        });
  }

  engine t_;
};

}  // namespace shoal::detail
