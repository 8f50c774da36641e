// shoal/containers/detail/owner_table.hpp — the owner-computes engine shared by dist_map and dist_multimap.
//
// One owner_table per container instance and rank. It ships operations to the owner of their key as active messages
// and routes the owners' replies to futures, and implements CSE_Hash's completion vocabulary:
//   wait()   completes every operation this rank issued (HASH_Wait): operations with a result are complete when
//            their replies have come (it waits for every reply still out); fire-and-forget ones by one fence message
//            to every owner this rank posted to since the last wait — per-pair FIFO order means the fence's reply
//            comes after every earlier operation ran there, and it carries the number of fire-and-forget inserts the
//            owner had to reject (full) and the first error a fire-and-forget operation raised there.
//   flush()  collective (HASH_Flush): wait() on every rank, then a barrier.
//   blocking factor L: after L requests (one per single operation, one per owner of a batch) the next one first
//            waits, bounding what an origin has outstanding.
// An operation is a struct with `using wire = <result type on the wire>` and
// `static wire apply(owner_table&, int origin, args...)`; it runs at the owner (inline when the owner is this rank).
//
// Its parts, one job each (owner_table/): placement.hpp (which rank owns a key; the layout: cyclic placement takes key
// mod owners with ../fixed_divisor.hpp, no division instruction), shard.hpp (the owner's local table and its entry
// count), replies.hpp (receivers that turn replies into futures), groups.hpp (single operations to one owner that
// travel and complete together), held_posts.hpp (fire-and-forget operations of plain bytes held per owner in columns
// that travel, or run here, a column at a time), own_posts.hpp (this rank's other fire-and-forget operations on its own
// shard, held a few posts), batches.hpp (cutting a batch by owner, merging the replies, the prefetched loop at the
// owner), byte_batches.hpp (find and erase batches of plain bytes), completion.hpp (the bookkeeping of wait and
// fences). The public operations both containers share are in owner_container.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/am.hpp"
#include "shoal/containers/detail/owner_table/batches.hpp"
#include "shoal/containers/detail/owner_table/byte_batches.hpp"
#include "shoal/containers/detail/owner_table/completion.hpp"
#include "shoal/containers/detail/owner_table/groups.hpp"
#include "shoal/containers/detail/owner_table/held_posts.hpp"
#include "shoal/containers/detail/owner_table/own_posts.hpp"
#include "shoal/containers/detail/owner_table/placement.hpp"
#include "shoal/containers/detail/owner_table/replies.hpp"
#include "shoal/containers/detail/owner_table/shard.hpp"
#include "shoal/containers/dist_map_options.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/layer.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/team.hpp"

namespace shoal::detail {

/// The parameter an operation takes for an argument: its decayed type, or for a std::span the std::vector of its
/// elements (owner_table::post: a span travels as that vector, am::detail::span_for_vector).
template <class A>
struct parameter_of {
  using type = std::decay_t<A>;
};
template <class T, std::size_t N>
struct parameter_of<std::span<T, N>> {
  using type = std::vector<std::remove_const_t<T>>;
};
template <class A>
using parameter_t = typename parameter_of<std::decay_t<A>>::type;

/// An argument as the parameter it becomes (a span's elements copied into a vector; others forwarded).
template <class A>
decltype(auto) as_parameter(A&& a) {
  if constexpr (std::is_same_v<parameter_t<A>, std::decay_t<A>>) {
    return std::forward<A>(a);
  } else {
    return parameter_t<A>(a.begin(), a.end());
  }
}

/// The one way into an owner_table's handlers and request slots from outside: tests/dist_map_malformed_test.cpp
/// defines it to send the handlers malformed messages. Nothing in shoal names it.
struct owner_table_test_access;

template <class K, class Stored, class Family>
class owner_table {
  friend struct owner_table_test_access;

 public:
  using shard_type = typename owner_shard<K, Stored, Family>::table_type;

  /// Collective over `team`; owners, servers and origins are team ranks.
  owner_table(const dist_map_options& opts, std::string name, const shoal::team& team)
      : reg_(team, name), name_(std::move(name)), me_(team.rank()),
        placement_(opts, team.rank(), team.size(), name_), shard_(opts.capacity_per_rank),
        ledger_(team.size(), opts.blocking_factor), open_groups_(static_cast<std::size_t>(team.size())),
        unsent_(static_cast<std::size_t>(team.size()), nullptr), held_(static_cast<std::size_t>(team.size())) {
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
    for (unsent_group* g : unsent_) {  // only when the environment ended first (wait() sends every group)
      if (g != nullptr) {
        g->drop_unsent(std::make_exception_ptr(
            usage_error(name_ + ": destroyed after its environment ended, before this operation was sent")));
      }
    }
    reg_.release();
  }

  const shoal::team& team() const noexcept { return reg_.team(); }
  /// Throws usage_error when the container belongs to an ended environment.
  void check() const { reg_.check(); }

  // ---- placement ---------------------------------------------------------------------------------------------

  int owner_of(const K& key) const { return placement_.owner_of(key); }
  const std::vector<int>& owners() const { return placement_.owners(); }
  bool owns_shard() const { return placement_.owns_shard(); }
  bool is_service() const { return placement_.is_service(); }

  // ---- the shard, as the operations see it ---------------------------------------------------------------------

  shard_type& shard() { return shard_.table(); }
  const shard_type& shard() const { return shard_.table(); }
  /// Entries (key-value pairs) this rank stores.
  std::size_t entries() const { return shard_.entries(); }
  void add_entries(std::size_t n) { shard_.add_entries(n); }
  void remove_entries(std::size_t n) { shard_.remove_entries(n); }
  /// How many more entries fit on this rank.
  std::size_t room() const { return shard_.room(); }
  std::size_t capacity() const { return shard_.capacity(); }
  const std::string& name() const { return name_; }

  // ---- issuing operations --------------------------------------------------------------------------------------

  /// Runs Op at `owner`; the result arrives in the returned future (Convert: Op::wire -> R). Operations whose
  /// arguments and result are plain bytes join their owner's group (groups.hpp), the others go alone. This rank's
  /// own operations group too (run when their group leaves, keys prefetched) — except while its futures are waited
  /// for one at a time: after a group of one left because its future was waited for, they run at once until
  /// more than own_stream_futures of them are outstanding again.
  template <class Op, class R, class Convert, class... Args>
  future<R> call(int owner, Args&&... args) {
    before_issue();
    const void* alone = &future_chunk<typename Op::wire, R, Convert>::tag;  // the chunk of operations that go alone
    if constexpr (groupable<typename Op::wire, std::decay_t<Args>...>) {
      // own_at_once_ first: it is false while a stream is issued, so this branch predicts well, where `owner == me_`
      // alone (keys spread over owners) mispredicts about once per owner count.
      if (own_at_once_ && owner == me_) [[unlikely]] {
        layer::state_ptr<layer::counted>& open = open_chunk(alone);
        if (!open || open->use_count() - 1 <= own_stream_futures) {  // this rank's futures of that chunk still held
          send_unsent(me_);
          return call_alone<Op, R, Convert>(open, owner, std::forward<Args>(args)...);
        }
        own_at_once_ = false;
      }
      return call_grouped<Op, R, Convert>(owner, std::forward<Args>(args)...);
    } else {
      send_unsent(owner);  // earlier grouped operations for that owner go first
      return call_alone<Op, R, Convert>(open_chunk(alone), owner, std::forward<Args>(args)...);
    }
  }

  /// Runs Op at `owner` without a result (completed and reported by wait / flush). An argument may be a std::span of
  /// plain elements where Op takes a std::vector of them: to another owner it travels as that vector, made only there
  /// (here, for this rank's own shard, it is made here).
  template <class Op, class... Args>
  void post(int owner, Args&&... args) {
    before_issue();
    if constexpr (byte_postable<K, parameter_t<Args>...>) {  // held in the owner's column (held_posts.hpp)
      held_columns& h = held_[static_cast<std::size_t>(owner)];
      if (h.cursor.tag != &held_posts_tag<Op, parameter_t<Args>...>) [[unlikely]] {
        adopt_held<Op, parameter_t<Args>...>(owner);
      }
      hold_post(h.cursor, *h.current, args...);
    } else {
      if constexpr (holdable_posts<shard_type, K, parameter_t<Args>...>) {
        if (owner == me_) {  // held a few posts, key prefetched (own_posts.hpp)
          own_posts_of<Op, parameter_t<Args>...>().add(as_parameter(std::forward<Args>(args))...);
          return;
        }
      }
      send_unsent(owner);
      if (owner == me_) {
        run_own_post<Op>(as_parameter(std::forward<Args>(args))...);
      } else {
        ledger_.touch(owner);
        shoal::post(to_world(owner), on_post<Op, parameter_t<Args>...>{}, id_, std::forward<Args>(args)...);
      }
    }
  }

  /// A column of held posts leaves (held_posts.hpp): n records of Op's arguments Args..., in issue order, sent to
  /// `owner` as one message, or run here in one loop, keys prefetched, when this rank is the owner.
  template <class Op, class... Args>
  void leave_held(int owner, const std::byte* records, std::uint32_t n) {
    using record = post_record<Args...>;
    if (owner == me_) {
      for_each_prefetched(
          shard(), n, [&](std::size_t i) { return record::template load<0>(records + i * record::bytes); },
          [&](std::size_t i) {
            record::apply(records + i * record::bytes, [&](Args... a) { run_own_post<Op>(std::move(a)...); });
          });
    } else {
      ledger_.touch(owner);
      std::byte* p = am::detail::reserve_bytes(to_world(owner), &on_held_posts<Op, Args...>, id_, n * record::bytes);
      std::memcpy(p, records, n * record::bytes);
    }
    // A loop of posts runs for milliseconds without another MPI call: the buffers on their way move meanwhile (on
    // transports that move a large message only while both ranks call MPI; one call per column).
    am::progress_transfers();
  }

  /// Runs a fire-and-forget Op on this rank's own shard now; what it rejects or raises is reported by wait().
  template <class Op, class... Params>
  void run_own_post(Params&&... args) {
    try {
      ledger_.rejected_here(rejected_in(Op::apply(*this, me_, std::forward<Params>(args)...)));
    } catch (const std::exception& e) {
      ledger_.failed_here(failure_text(e));
    }
  }

  /// `g` left: it is no longer `owner`'s group not yet sent (held_posts.hpp; own_posts.hpp: this rank's).
  void forget_unsent(int owner, unsent_group* g) {
    if (unsent_[static_cast<std::size_t>(owner)] == g) unsent_[static_cast<std::size_t>(owner)] = nullptr;
  }
  void forget_unsent(unsent_group* g) { forget_unsent(me_, g); }

  /// Sends the operations of `chunk` from `first` on (its columns: their arguments) to its owner, as one message
  /// (one operation alone: as a single request, no columns), or runs them here when this rank owns them (groups.hpp;
  /// the chunk calls this when its group must leave).
  template <class Chunk, class... Columns>
  void send_group(Chunk& chunk, std::uint32_t first, const std::tuple<Columns...>& columns, bool waited) {
    using op = typename Chunk::op;
    const int owner = chunk.owner();
    if (unsent_[static_cast<std::size_t>(owner)] == &chunk) unsent_[static_cast<std::size_t>(owner)] = nullptr;
    std::apply(
        [&](const auto&... column) {
          const auto n = static_cast<std::uint32_t>(std::get<0>(std::tie(column...)).size());
          if (owner == me_) {
            if (waited && n == 1) own_at_once_ = true;
            const auto args_at = [&](std::size_t i) {
              return std::tuple<const typename Columns::value_type&...>(column[i]...);
            };
            run_each<op>(
                *this, me_, n, args_at, [&](std::uint32_t i, auto&& w) { chunk.arrive(std::move(w), first + i); },
                [&](std::uint32_t i, std::string what) {
                  chunk.fail(std::make_exception_ptr(remote_error(std::move(what))), first + i);
                });
            return;
          }
          const std::uint32_t slot = add_pending(&chunk, layer::state_ptr<layer::counted>(&chunk), first);
          if (n == 1) {
            shoal::post(to_world(owner), on_call<op, typename Columns::value_type...>{}, id_, slot, column[0]...);
            return;
          }
          std::byte* p =
              am::detail::reserve_bytes(to_world(owner), &on_group_bytes<op, typename Columns::value_type...>, id_,
                                        byte_batch_header::bytes + (column.size_bytes() + ...));
          byte_batch_header{slot, n}.write(p);
          p += byte_batch_header::bytes;
          ((std::memcpy(static_cast<void*>(p), column.data(), column.size_bytes()), p += column.size_bytes()), ...);
        },
        columns);
  }

  /// This rank's own grouped operations not run yet run now (before its shard is read directly).
  void settle_own() { send_unsent(me_); }

  /// Splits input positions 0..n-1 by owner rank (key_at(i) gives the key of position i): the owners with
  /// positions, and the positions of each.
  template <class KeyAt>
  batch_cut split_by_owner(std::size_t n, KeyAt&& key_at) const {
    batch_cut cut;
    const std::vector<int>& owners = placement_.owners();
    if (owners.size() == 1) {  // every position goes to the one owner
      if (n == 0) return cut;
      cut.owners.push_back(owners[0]);
      auto& all = cut.positions.emplace_back(n);
      for (std::size_t i = 0; i < n; ++i) all[i] = i;
      return cut;
    }
    std::vector<std::vector<std::size_t>> by_owner(static_cast<std::size_t>(team().size()));
    for (std::size_t i = 0; i < n; ++i) by_owner[static_cast<std::size_t>(owner_of(key_at(i)))].push_back(i);
    for (std::size_t r = 0; r < by_owner.size(); ++r) {
      if (!by_owner[r].empty()) {
        cut.owners.push_back(static_cast<int>(r));
        cut.positions.push_back(std::move(by_owner[r]));
      }
    }
    return cut;
  }

  /// Cuts inputs 0..n-1 by owner in one pass, for batches whose merge needs no positions: append(args, i) adds
  /// input i (key: key_at(i)) to the arguments of its owner's part, a tuple of vectors of Ts... Returns the cut (no
  /// positions) and each part's arguments, in the cut's order.
  template <class... Ts, class KeyAt, class Append>
  std::pair<batch_cut, std::vector<std::tuple<std::vector<Ts>...>>> cut_arguments_by_owner(std::size_t n,
                                                                                           KeyAt&& key_at,
                                                                                           Append&& append) const {
    std::pair<batch_cut, std::vector<std::tuple<std::vector<Ts>...>>> out;
    auto& [cut, args] = out;
    const std::vector<int>& owners = placement_.owners();
    if (owners.size() == 1) {
      if (n == 0) return out;
      cut.owners.push_back(owners[0]);
      auto& all = args.emplace_back();
      std::apply([&](auto&... v) { (v.reserve(n), ...); }, all);
      for (std::size_t i = 0; i < n; ++i) append(all, i);
    } else {
      std::vector<std::tuple<std::vector<Ts>...>> by_owner(static_cast<std::size_t>(team().size()));
      for (std::size_t i = 0; i < n; ++i) append(by_owner[static_cast<std::size_t>(owner_of(key_at(i)))], i);
      for (std::size_t r = 0; r < by_owner.size(); ++r) {
        if (!std::get<0>(by_owner[r]).empty()) {
          cut.owners.push_back(static_cast<int>(r));
          args.push_back(std::move(by_owner[r]));
        }
      }
    }
    cut.positions.resize(cut.owners.size());
    return out;
  }

  /// Runs Op once per part of `cut` (at its owner), with the arguments make_args(part, the part's positions) (a
  /// tuple), and merges the replies into one future (Merge: (R&, wire&&, the part's positions)). No parts: a ready
  /// future of init. The other owners' parts leave first (flushed when this rank has a part of its own), so they
  /// run at their owners while this rank runs its own part.
  template <class Op, class R, class Merge, class MakeArgs>
  future<R> call_batch(R init, batch_cut cut, MakeArgs&& make_args) {
    using wire = typename Op::wire;
    using state_type = batch_receiver<wire, R, Merge>;
    layer::state_ptr<state_type> state = layer::make_state<state_type>();
    state->result = std::move(init);
    state->positions = std::move(cut.positions);
    state->remaining = cut.owners.size();
    if (cut.owners.empty()) state->finish();
    issue_parts(
        cut.owners, state,
        [&](std::uint32_t part, int owner, std::uint32_t slot) {
          std::apply(
              [&](auto&&... a) {
                shoal::post(to_world(owner), on_call<Op, std::decay_t<decltype(a)>...>{}, id_, slot, std::move(a)...);
              },
              make_args(part, state->positions[part]));
        },
        [&](std::uint32_t part) {
          auto args = make_args(part, state->positions[part]);
          std::optional<wire> result;
          try {
            result.emplace(std::apply([&](auto&&... a) { return Op::apply(*this, me_, std::move(a)...); }, args));
          } catch (const std::exception& e) {
            state->fail(std::make_exception_ptr(remote_error(failure_text(e))), part);
          }
          if (result) state->arrive(std::move(*result), part);
        });
    return future<R>(layer::state_ptr<layer::future_state<R>>(std::move(state)));
  }

  /// A keyed batch of Single (a key in, a result out: find, erase) over inputs 0..n-1 (key_at(i): input i's key),
  /// keys and results travelling as their bytes (byte_batches.hpp; byte_batchable<K, Single::wire>, n within
  /// byte_batch_limit). The results come back in input order. Single::apply must not send: it runs while the
  /// owner's reply is being written in place.
  template <class Single, class KeyAt>
  future<std::vector<typename Single::wire>> call_keyed_bytes(std::size_t n, KeyAt&& key_at) {
    using W = typename Single::wire;
    keyed_cut<K> cut = cut_by_owner(n, key_at, [](std::uint32_t, std::size_t) {});
    layer::state_ptr<keyed_bytes_receiver<W>> state = layer::make_state<keyed_bytes_receiver<W>>();
    state->result.resize(n);
    state->remaining = cut.owners.size();
    state->order = std::move(cut.order);  // before the first send: replies may run inside it
    state->start = std::move(cut.start);
    if (cut.owners.empty()) state->finish();
    issue_parts(
        cut.owners, state,
        [&](std::uint32_t part, int owner, std::uint32_t slot) {
          const byte_batch_header h{slot, static_cast<std::uint32_t>(state->size(part))};
          std::byte* p = am::detail::reserve_bytes(to_world(owner), &on_keyed_bytes<Single>, id_,
                                                   byte_batch_header::bytes + h.word * sizeof(K));
          h.write(p);
          std::memcpy(static_cast<void*>(p + byte_batch_header::bytes), cut.buffers.keys.data() + state->start[part],
                      h.word * sizeof(K));
        },
        [&](std::uint32_t part) {
          const K* keys = cut.buffers.keys.data() + state->start[part];
          const std::uint32_t* at = state->order.data() + state->start[part];
          W* out = state->result.data();
          try {
            for_each_prefetched(shard(), state->size(part), [&](std::size_t i) -> const K& { return keys[i]; },
                                [&](std::size_t i) { out[at[i]] = Single::apply(*this, me_, keys[i]); });
            state->part_done();
          } catch (const std::exception& e) {
            state->part_failed(std::make_exception_ptr(remote_error(failure_text(e))));
          }
        });
    cut_buffers_ = std::move(cut.buffers);
    return future<std::vector<W>>(layer::state_ptr<layer::future_state<std::vector<W>>>(std::move(state)));
  }

  /// A pair batch of Single (a key and a value in, an insert_status out: insert, assign, upsert) over pairs 0..n-1
  /// (key_at(i), value_at(i)), keys and values travelling as their bytes (byte_batches.hpp; byte_batchable<K, V>, n
  /// within byte_batch_inputs(sizeof(K) + sizeof(V))). Each owner answers with its counts; the future holds their sum.
  template <class Single, class V, class KeyAt, class ValueAt>
  future<batch_insert_result> call_pair_bytes(std::size_t n, KeyAt&& key_at, ValueAt&& value_at) {
    cut_buffers_.values.resize(n * sizeof(V));
    std::byte* const value_records = cut_buffers_.values.data();  // the cut takes the array over, where it is
    keyed_cut<K> cut = cut_by_owner(n, key_at, [&](std::uint32_t j, std::size_t i) {
      store_record(value_records, j, static_cast<V>(value_at(i)));
    });
    using state_type = batch_receiver<batch_insert_result, batch_insert_result, merge_counts>;
    layer::state_ptr<state_type> state = layer::make_state<state_type>();
    state->positions.resize(cut.owners.size());  // (counts need none)
    state->remaining = cut.owners.size();
    if (cut.owners.empty()) state->finish();
    const K* keys = cut.buffers.keys.data();
    const std::byte* values = cut.buffers.values.data();
    const auto part_size = [&](std::uint32_t part) { return cut.start[part + 1] - cut.start[part]; };
    issue_parts(
        cut.owners, state,
        [&](std::uint32_t part, int owner, std::uint32_t slot) {
          const std::size_t first = cut.start[part];
          const byte_batch_header h{slot, part_size(part)};
          std::byte* p = am::detail::reserve_bytes(to_world(owner), &on_pair_bytes<Single, V>, id_,
                                                   byte_batch_header::bytes + h.word * (sizeof(K) + sizeof(V)));
          h.write(p);
          p += byte_batch_header::bytes;
          std::memcpy(static_cast<void*>(p), keys + first, h.word * sizeof(K));
          std::memcpy(p + h.word * sizeof(K), values + first * sizeof(V), h.word * sizeof(V));
        },
        [&](std::uint32_t part) {
          const K* own_keys = keys + cut.start[part];
          const std::byte* own_values = values + cut.start[part] * sizeof(V);
          std::optional<batch_insert_result> counts;
          try {
            counts = run_counted<Single>(
                *this, me_, part_size(part), [&](std::size_t i) -> const K& { return own_keys[i]; },
                [&](std::size_t i) { return load_record<V>(own_values, i); });
          } catch (const std::exception& e) {
            state->fail(std::make_exception_ptr(remote_error(failure_text(e))), part);
          }
          if (counts) state->arrive(std::move(*counts), part);
        });
    cut_buffers_ = std::move(cut.buffers);
    return future<batch_insert_result>(layer::state_ptr<layer::future_state<batch_insert_result>>(std::move(state)));
  }

  // ---- completion (CSE_Hash) -----------------------------------------------------------------------------------

  /// Completes every operation this rank issued (HASH_Wait). Not collective. Throws container_full if
  /// fire-and-forget inserts did not fit, remote_error if a fire-and-forget operation failed at its owner.
  void wait() {
    for (std::size_t owner = 0; owner < unsent_.size(); ++owner) send_unsent(static_cast<int>(owner));
    ledger_.send_fences([&](int o) { shoal::post(to_world(o), &on_fence, id_); });
    shoal::wait_until([&] { return !ledger_.fences_out() && !replies_out(); });
    ledger_.report(name_, shard_.capacity());
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
    if (!is_service() || !owns_shard()) {
      throw usage_error(name_ + ": serve() is for the server ranks of the service layout "
                        "(dist_map_options::servers); clients call close()");
    }
    shoal::wait_until([&] { return clients_closed_ >= placement_.clients(); });
    clients_closed_ = 0;
    team().barrier();
  }

  /// Client ranks: completes this rank's operations and tells the servers it is done. Collective with serve().
  void close() {
    if (!is_service() || owns_shard()) {
      throw usage_error(name_ + ": close() is for the client ranks of the service layout; servers call serve()");
    }
    std::exception_ptr failure;
    try {
      wait();
    } catch (...) {
      failure = std::current_exception();
    }
    for (int s : owners()) shoal::post(to_world(s), &on_client_closed, id_);
    shoal::am::flush();
    team().barrier();
    if (failure) std::rethrow_exception(failure);
  }

 private:
  struct pending {
    receiver_base* target = nullptr;
    layer::state_ptr<layer::counted> keep;  // target's owner: alive until the reply came, futures or not
    std::uint32_t part = 0;
    const void* kind = nullptr;  // kind_of<the target's type>: which replies may name this slot
  };

  std::string failure_text(const std::exception& e) const {
    return name_ + ": operation failed at its owner, rank " + std::to_string(me_) + ": " + e.what();
  }

  static owner_table& lookup(std::uint32_t id) { return *static_cast<owner_table*>(handler_target(id)); }

  /// The environment rank of team rank r (messages travel between environment ranks).
  int to_world(int r) const { return reg_.team().to_world(r); }
  /// Inside a handler: the team rank of the rank that sent the message (-1 outside handlers; read once per message,
  /// so without am::current_source()'s usage check).
  int origin() const { return reg_.team().from_world(am::detail::get().current_source()); }

  /// The chunk of futures being filled for operations whose chunk type has `tag` (future_chunk::tag).
  layer::state_ptr<layer::counted>& open_chunk(const void* tag) {
    for (auto& [t, c] : open_chunks_) {
      if (t == tag) return c;
    }
    return open_chunks_.emplace_back(tag, nullptr).second;
  }

  /// One operation, its future in `open`, the chunk of this operation type (owner: this rank, run inline; another
  /// rank: one message, one reply).
  template <class Op, class R, class Convert, class... Args>
  future<R> call_alone(layer::state_ptr<layer::counted>& open, int owner, Args&&... args) {
    using wire = typename Op::wire;
    using chunk = future_chunk<wire, R, Convert>;
    if (!open || static_cast<chunk&>(*open).full()) open = layer::make_state<chunk>();
    auto& c = static_cast<chunk&>(*open);
    const std::uint32_t index = c.next();
    future<R> f = c.future_of(index);
    if (owner == me_) {
      std::optional<wire> result;
      try {
        result.emplace(Op::apply(*this, me_, std::forward<Args>(args)...));
      } catch (const std::exception& e) {
        c.fail(std::make_exception_ptr(remote_error(failure_text(e))), index);
      }
      if (result) c.arrive(std::move(*result), index);
    } else {
      const std::uint32_t slot = add_pending(&c, open, index);
      shoal::post(to_world(owner), on_call<Op, std::decay_t<Args>...>{}, id_, slot, std::forward<Args>(args)...);
    }
    return f;
  }

  /// Cuts a byte batch's inputs 0..n-1 by owner (cut_keys; place(j, i) as input i takes record j). The cut's working
  /// arrays are this table's, taken for the call and given back by the caller (a batch issued from a handler that runs
  /// inside this one finds none and makes its own).
  template <class KeyAt, class Place>
  keyed_cut<K> cut_by_owner(std::size_t n, KeyAt&& key_at, Place&& place) {
    const std::vector<int>& servers = placement_.owners();
    const auto owners_of = [&](std::size_t m, auto&& at, std::uint32_t* out) { placement_.owners_of(m, at, out); };
    return cut_keys<K>(n, team().size(), servers.size() == 1 ? servers[0] : -1, key_at, owners_of,
                       std::move(cut_buffers_), place);
  }

  /// Issues a batch's parts (owners: one per part): every other owner's part through send(part, owner, slot) — its
  /// reply completes `state`'s part — then, after those have left, this rank's own part through run_own(part).
  template <class State, class Send, class RunOwn>
  void issue_parts(const std::vector<int>& owners, const layer::state_ptr<State>& state, Send&& send,
                   RunOwn&& run_own) {
    std::optional<std::uint32_t> own_part;
    for (std::uint32_t part = 0; part < owners.size(); ++part) {
      const int owner = owners[part];
      if (owner == me_) {
        own_part = part;
        continue;
      }
      before_issue();
      send_unsent(owner);
      send(part, owner, add_pending(state.get(), state, part));
    }
    if (!own_part) return;
    if (owners.size() > 1) shoal::am::flush();  // the other parts are on their way meanwhile
    before_issue();
    settle_own();  // this rank's earlier grouped operations first
    run_own(*own_part);
  }

  /// The open group of single operations for `owner` whose chunk type has `tag` (groups.hpp).
  layer::state_ptr<layer::counted>& open_group(int owner, const void* tag) {
    owner_groups& open = open_groups_[static_cast<std::size_t>(owner)];
    if (open.tag == tag) [[likely]] return open.chunk;
    if (open.tag == nullptr) {
      open.tag = tag;
      return open.chunk;
    }
    for (auto& [t, c] : open.more) {
      if (t == tag) return c;
    }
    return open.more.emplace_back(tag, nullptr).second;
  }

  /// Op joins `owner`'s open group of Op; a group of another operation type for that owner leaves first (issue
  /// order), a full group leaves at once.
  template <class Op, class R, class Convert, class... Args>
  future<R> call_grouped(int owner, Args&&... args) {
    using chunk = group_chunk<owner_table, Op, R, Convert, std::decay_t<Args>...>;
    layer::state_ptr<layer::counted>& open = open_group(owner, &chunk::tag);
    unsent_group*& unsent = unsent_[static_cast<std::size_t>(owner)];
    send_unsent_except(owner, [&](unsent_group* g) { return open && g == &static_cast<chunk&>(*open); });
    if (!open || static_cast<chunk&>(*open).full()) open = layer::make_state<chunk>(*this, owner);
    auto& c = static_cast<chunk&>(*open);
    future<R> f = c.add(std::forward<Args>(args)...);
    unsent = &c;
    if (c.full()) c.send_unsent();
    return f;
  }

  /// The holder of this rank's own posts of Op, made this rank's unsent group (a group of another kind leaves first,
  /// issue order); a holder of another operation type leaves before this one takes its place.
  template <class Op, class... Params>
  own_posts<owner_table, Op, Params...>& own_posts_of() {
    using holder = own_posts<owner_table, Op, Params...>;
    const void* tag = &own_posts_tag<Op, Params...>;
    unsent_group*& unsent = unsent_[static_cast<std::size_t>(me_)];
    if (own_posts_type_ == tag && unsent == own_posts_.get()) return static_cast<holder&>(*own_posts_);  // the stream
    send_unsent_except(me_, [&](unsent_group* g) { return g == own_posts_.get() && own_posts_type_ == tag; });
    if (own_posts_type_ != tag) {
      own_posts_ = std::make_unique<holder>(*this);
      own_posts_type_ = tag;
    }
    unsent = own_posts_.get();
    return static_cast<holder&>(*own_posts_);
  }

  /// Makes the column of posts of Op for `owner` that owner's unsent group and opens it (a group of another kind
  /// leaves first, issue order). Columns are kept per owner and operation type, made at an owner's first post of that
  /// type; the posts then write through held_[owner].cursor until the column closes.
  template <class Op, class... Params>
  [[gnu::noinline]] void adopt_held(int owner) {
    using column = held_posts<owner_table, Op, Params...>;
    held_columns& h = held_[static_cast<std::size_t>(owner)];
    unsent_group*& unsent = unsent_[static_cast<std::size_t>(owner)];
    send_unsent_except(owner, [&](unsent_group* g) { return g == h.current && h.cursor.tag == column::tag; });
    if (h.cursor.tag == column::tag) return;  // opened by a handler's post meanwhile
    if (h.tag != column::tag) {
      auto kind = std::find_if(h.kinds.begin(), h.kinds.end(), [&](const auto& k) { return k.first == column::tag; });
      if (kind == h.kinds.end()) {
        const std::size_t records = held_column_records(column::record::bytes, team().size());
        kind = h.kinds.emplace(h.kinds.end(), column::tag, std::make_unique<column>(*this, owner, h.cursor, records));
      }
      h.current = kind->second.get();
      h.tag = column::tag;
    }
    unsent = h.current;
    static_cast<column&>(*h.current).open();
  }

  /// Sends `owner`'s group of operations not sent yet, if there is one.
  void send_unsent(int owner) {
    if (unsent_group* g = unsent_[static_cast<std::size_t>(owner)]) g->send_unsent();
  }

  /// Before another group becomes `owner`'s unsent one: sends the unsent group unless keep(group) (the one about to
  /// be used), then any group that a handler run meanwhile (a send may wait for room, and run handlers) made that
  /// owner's unsent one — so none is left behind, unsent, when the caller's group takes its place.
  template <class Keep>
  void send_unsent_except(int owner, Keep&& keep) {
    unsent_group*& unsent = unsent_[static_cast<std::size_t>(owner)];
    for (unsent_group* g = unsent; g != nullptr && !keep(g); g = unsent != g ? unsent : nullptr) g->send_unsent();
  }

  void before_issue() {
    if (ledger_.must_wait()) wait();
    ledger_.issued();
  }

  template <class Receiver>
  std::uint32_t add_pending(Receiver* target, layer::state_ptr<layer::counted> keep, std::uint32_t part) {
    std::uint32_t slot;
    if (free_slots_.empty()) {
      slot = static_cast<std::uint32_t>(pending_.size());
      pending_.emplace_back();
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
    pending_[slot] = {target, std::move(keep), part, kind_of<Receiver>};
    return slot;
  }

  /// True while a request of this rank waits for its reply.
  bool replies_out() const { return pending_.size() != free_slots_.size(); }

  /// The request waiting in `slot`, which a reply or an error message names, for a reply delivered through one of
  /// `Interfaces` (none given: through receiver_base alone, which every kind has). A slot out of range, one not waiting
  /// (free, or its reply already came) or one waiting for another kind of reply means a corrupt stream: an error
  /// before anything is touched.
  template <class... Interfaces>
  pending& waiting(std::uint32_t slot) {
    if (slot >= pending_.size() || pending_[slot].target == nullptr) [[unlikely]] throw_not_waiting(slot);
    pending& p = pending_[slot];
    if constexpr (sizeof...(Interfaces) > 0) {
      if (((p.kind != &receiver_kind<Interfaces>)&&...)) [[unlikely]] throw_other_kind(slot);
    }
    return p;
  }
  /// Takes the request waiting in `slot` (waiting()); the slot is free again, and a second reply naming it is refused.
  template <class... Interfaces>
  pending take_pending(std::uint32_t slot) {
    pending p = std::exchange(waiting<Interfaces...>(slot), pending{});
    free_slots_.push_back(slot);
    return p;
  }
  [[noreturn]] void throw_not_waiting(std::uint32_t slot) const {
    throw error(name_ + ": reply for request slot " + std::to_string(slot) +
                ", which no request of this rank waits in (corrupt stream)");
  }
  [[noreturn]] void throw_other_kind(std::uint32_t slot) const {
    throw error(name_ + ": reply for request slot " + std::to_string(slot) +
                ", whose request waits for another kind of reply (corrupt stream)");
  }

  // ---- handlers (run at the owner, or back at the origin) ------------------------------------------------------
  // Function objects, not function pointers: the AM layer runs a group of messages for one handler type in one loop,
  // and a handler type's call is inlined there (a function pointer costs an indirect call per message). Requests
  // whose first argument is a key give the AM layer a prefetch hint (its place in the shard), so a group of requests
  // overlaps its lookups' cache misses.

  /// Starts loading where `key` lives in table `id`'s shard, when the local table offers prefetch.
  template <class... Rest>
  static void prefetch_key(std::uint32_t id, const K& key, const Rest&...) {
    if constexpr (requires(const shard_type& t) { t.prefetch(key); }) lookup(id).shard().prefetch(key);
  }
  template <class... Rest>
  static void prefetch_key(std::uint32_t, const Rest&...) {}

  template <class Op, class... Args>
  struct on_call {
    static void prefetch(std::uint32_t id, std::uint32_t, const Args&... args) { prefetch_key(id, args...); }
    void operator()(std::uint32_t id, std::uint32_t slot, Args... args) const {
      auto& self = lookup(id);
      const int origin = self.origin();
      std::optional<typename Op::wire> result;
      std::string what;
      try {
        result.emplace(Op::apply(self, origin, std::move(args)...));
      } catch (const std::exception& e) {
        what = self.failure_text(e);
      }
      if (result) shoal::post(self.to_world(origin), on_reply<typename Op::wire>{}, id, slot, std::move(*result));
      else shoal::post(self.to_world(origin), &on_reply_error, id, slot, std::move(what));
    }
  };

  template <class Wire>
  struct on_reply {
    void operator()(std::uint32_t id, std::uint32_t slot, Wire w) const {
      // A group's receiver takes single replies too (a group of one leaves as a single request).
      pending p = lookup(id).template take_pending<receiver<Wire>, group_receiver<Wire>>(slot);
      static_cast<receiver<Wire>*>(p.target)->arrive(std::move(w), p.part);
    }
  };

  /// A byte batch's part (byte_batches.hpp): runs Single for each key where it arrived and writes each result
  /// straight into the reply.
  template <class Single>
  static void on_keyed_bytes(std::uint32_t id, std::span<const std::byte> bytes) {
    using W = typename Single::wire;
    auto& self = lookup(id);
    const int origin = self.origin();
    byte_batch_header h = byte_batch_header::read(bytes.data(), bytes.size());
    const std::size_t n = h.word;
    if (bytes.size() != byte_batch_header::bytes + n * sizeof(K)) {
      throw error("shoal::dist_map: malformed batch request (corrupt stream)");
    }
    const std::byte* keys = bytes.data() + byte_batch_header::bytes;
    std::byte* reply = am::detail::reserve_bytes(self.to_world(origin), &on_keyed_reply<W>, id,
                                                 byte_batch_header::bytes + n * result_codec<W>::bytes);
    std::byte* out = reply + byte_batch_header::bytes;
    std::string what;
    h.word = 0;
    try {
      for_each_prefetched(self.shard(), n, [&](std::size_t i) { return load_record<K>(keys, i); },
                          [&](std::size_t i) {
                            result_codec<W>::write(out, n, i, Single::apply(self, origin, load_record<K>(keys, i)));
                          });
    } catch (const std::exception& e) {
      what = self.failure_text(e);
      h.word = 1;
      std::memset(out, 0, n * result_codec<W>::bytes);  // no stale bytes travel
    } catch (...) {  // not a std::exception: the AM layer reports it to the origin; the reply stays well formed
      h.word = 1;
      std::memset(out, 0, n * result_codec<W>::bytes);
      h.write(reply);
      throw;
    }
    h.write(reply);
    if (h.word != 0) shoal::post(self.to_world(origin), &on_reply_error, id, h.slot, std::move(what));
  }

  /// The reply to a byte batch's part: its results, to their input positions (a failed part: the error message that
  /// follows completes it).
  template <class W>
  static void on_keyed_reply(std::uint32_t id, std::span<const std::byte> bytes) {
    auto& self = lookup(id);
    const byte_batch_header h = byte_batch_header::read(bytes.data(), bytes.size());
    if (h.word != 0) return;
    const pending& p = self.template waiting<keyed_bytes_receiver<W>>(h.slot);
    auto& target = *static_cast<keyed_bytes_receiver<W>*>(p.target);
    if (bytes.size() != byte_batch_header::bytes + target.size(p.part) * result_codec<W>::bytes) {
      throw error("shoal::dist_map: malformed batch reply (corrupt stream)");
    }
    pending taken = self.template take_pending<keyed_bytes_receiver<W>>(h.slot);
    static_cast<keyed_bytes_receiver<W>*>(taken.target)->arrive_bytes(bytes.data() + byte_batch_header::bytes,
                                                                        taken.part);
  }

  /// A pair batch's part (byte_batches.hpp): runs Single for each pair where it arrived; answers with the counts.
  template <class Single, class V>
  static void on_pair_bytes(std::uint32_t id, std::span<const std::byte> bytes) {
    auto& self = lookup(id);
    const int origin = self.origin();
    const byte_batch_header h = byte_batch_header::read(bytes.data(), bytes.size());
    const std::size_t n = h.word;
    if (bytes.size() != byte_batch_header::bytes + n * (sizeof(K) + sizeof(V))) {
      throw error("shoal::dist_map: malformed batch request (corrupt stream)");
    }
    const std::byte* keys = bytes.data() + byte_batch_header::bytes;
    const std::byte* values = keys + n * sizeof(K);
    std::optional<batch_insert_result> counts;
    std::string what;
    try {
      counts = run_counted<Single>(
          self, origin, n, [&](std::size_t i) { return load_record<K>(keys, i); },
          [&](std::size_t i) { return load_record<V>(values, i); });
    } catch (const std::exception& e) {
      what = self.failure_text(e);
    }
    if (counts) shoal::post(self.to_world(origin), on_reply<batch_insert_result>{}, id, h.slot, *counts);
    else shoal::post(self.to_world(origin), &on_reply_error, id, h.slot, std::move(what));
  }

  static void on_reply_error(std::uint32_t id, std::uint32_t slot, std::string what) {
    pending p = lookup(id).take_pending(slot);
    p.target->fail(std::make_exception_ptr(remote_error(what)), p.part);
  }

  /// A group of single operations (groups.hpp): runs them in order where their arguments arrived, keys prefetched,
  /// and answers with one message (an operation that throws is answered first, by its own message). The results are
  /// gathered on the stack and the reply reserved after the loop: an operation may itself send (a user's update).
  template <class Op, class... Args>
  static void on_group_bytes(std::uint32_t id, std::span<const std::byte> bytes) {
    using codec = result_codec<typename Op::wire>;
    constexpr std::size_t most = future_chunk_size;
    auto& self = lookup(id);
    const int origin = self.origin();
    const byte_batch_header h = byte_batch_header::read(bytes.data(), bytes.size());
    const std::size_t n = h.word;
    if (n > most || bytes.size() != byte_batch_header::bytes + n * (sizeof(Args) + ...)) {
      throw error("shoal::dist_map: malformed group request (corrupt stream)");
    }
    std::array<const std::byte*, sizeof...(Args)> columns;
    const std::byte* at = bytes.data() + byte_batch_header::bytes;
    std::size_t c = 0;
    ((columns[c++] = at, at += n * sizeof(Args)), ...);
    // Written in full below (failed operations as empty results); on the stack unless a group's results are large.
    constexpr bool on_stack = most * codec::bytes <= 16384;
    std::conditional_t<on_stack, std::array<std::byte, on_stack ? most * codec::bytes : 1>, std::vector<std::byte>>
        results;
    if constexpr (!on_stack) results.resize(n * codec::bytes);
    run_each<Op>(
        self, origin, n,
        [&](std::size_t i) {
          return [&]<std::size_t... C>(std::index_sequence<C...>) {
            return std::tuple<Args...>(load_record<Args>(columns[C], i)...);
          }(std::index_sequence_for<Args...>{});
        },
        [&](std::uint32_t i, auto&& w) { codec::write(results.data(), n, i, w); },
        [&](std::uint32_t i, std::string what) {
          codec::write(results.data(), n, i, typename Op::wire{});
          shoal::post(self.to_world(origin), &on_group_error<typename Op::wire>, id, h.slot, i, std::move(what));
        });
    std::byte* reply = am::detail::reserve_bytes(self.to_world(origin), &on_group_reply<typename Op::wire>, id,
                                                 byte_batch_header::bytes + n * codec::bytes);
    byte_batch_header{h.slot, h.word}.write(reply);
    std::memcpy(reply + byte_batch_header::bytes, results.data(), n * codec::bytes);
  }

  /// Runs n operations of a group in order for `origin` (args_at(i): the arguments of operation i, a tuple whose
  /// first is its key, prefetched as a batch's): done(i, result) for each that returned, failed(i, what) for each
  /// that threw.
  template <class Op, class ArgsAt, class Done, class Failed>
  static void run_each(owner_table& self, int origin, std::size_t n, ArgsAt&& args_at, Done&& done,
                       Failed&& failed) {
    using wire = typename Op::wire;  // default-constructible: groups hold only such results (groups.hpp)
    for_each_prefetched(
        self.shard(), n, [&](std::size_t i) { return std::get<0>(args_at(i)); },
        [&](std::size_t at) {
          const auto i = static_cast<std::uint32_t>(at);
          bool threw = false;
          // The result is returned, not emplaced into an optional beside a flag: a small one (std::optional<V>) then
          // stays whole in a register, where an optional around it was written in parts on the stack and read back
          // in one load, which the store buffer cannot forward (a stall per operation).
          wire result = [&]() -> wire {
            try {
              return std::apply([&](const auto&... a) { return Op::apply(self, origin, a...); }, args_at(at));
            } catch (const std::exception& e) {
              failed(i, self.failure_text(e));
              threw = true;
              return wire{};
            }
          }();
          if (!threw) [[likely]] done(i, std::move(result));
        });
  }

  /// A group's reply (groups.hpp): its results, read where they arrived into the group's futures.
  template <class Wire>
  static void on_group_reply(std::uint32_t id, std::span<const std::byte> bytes) {
    auto& self = lookup(id);
    const byte_batch_header h = byte_batch_header::read(bytes.data(), bytes.size());
    if (bytes.size() != byte_batch_header::bytes + std::size_t{h.word} * result_codec<Wire>::bytes) {
      throw error("shoal::dist_map: malformed group reply (corrupt stream)");
    }
    pending p = self.template take_pending<group_receiver<Wire>>(h.slot);
    static_cast<group_receiver<Wire>*>(p.target)->arrive_group(bytes.data() + byte_batch_header::bytes, h.word,
                                                                p.part);
  }

  /// Operation `index` of a group failed at its owner (the group's reply follows).
  template <class Wire>
  static void on_group_error(std::uint32_t id, std::uint32_t slot, std::uint32_t index, std::string what) {
    const pending& p = lookup(id).template waiting<group_receiver<Wire>>(slot);
    static_cast<group_receiver<Wire>*>(p.target)->fail_member(std::make_exception_ptr(remote_error(what)), p.part,
                                                               index);
  }

  template <class Op, class... Args>
  struct on_post {
    /// The hint sees every argument (plain ones), or the leading plain ones (before a vector of values).
    template <class... A>
    static void prefetch(std::uint32_t id, const A&... args) {
      prefetch_key(id, args...);
    }
    void operator()(std::uint32_t id, Args... args) const {
      auto& self = lookup(id);
      const int origin = self.origin();
      try {
        self.ledger_.record(origin, rejected_in(Op::apply(self, origin, std::move(args)...)));
      } catch (const std::exception& e) {
        self.ledger_.record_error(origin, self.failure_text(e));
      }
    }
  };

  /// A column of posts (held_posts.hpp): runs Op for each record, in order, keys prefetched; what they reject or
  /// raise is kept for the origin's next fence, as for a single post.
  template <class Op, class... Args>
  static void on_held_posts(std::uint32_t id, std::span<const std::byte> bytes) {
    using record = post_record<Args...>;
    auto& self = lookup(id);
    if (bytes.size() % record::bytes != 0) throw error("shoal::dist_map: malformed post column (corrupt stream)");
    const int origin = self.origin();
    const std::byte* records = bytes.data();
    std::uint64_t rejected = 0;
    for_each_prefetched(
        self.shard(), bytes.size() / record::bytes,
        [&](std::size_t i) { return record::template load<0>(records + i * record::bytes); },
        [&](std::size_t i) {
          try {
            rejected += rejected_in(record::apply(
                records + i * record::bytes, [&](Args... a) { return Op::apply(self, origin, std::move(a)...); }));
          } catch (const std::exception& e) {
            self.ledger_.record_error(origin, self.failure_text(e));
          }
        });
    self.ledger_.record(origin, rejected);
  }

  static void on_fence(std::uint32_t id) {
    auto& self = lookup(id);
    const int origin = self.origin();
    completion_ledger::origin_report r = self.ledger_.take(origin);
    shoal::post(self.to_world(origin), &on_fence_reply, id, r.rejected, std::move(r.error));
  }

  static void on_fence_reply(std::uint32_t id, std::uint64_t rejected, std::string error) {
    lookup(id).ledger_.fence_answered(rejected, std::move(error));
  }

  static void on_client_closed(std::uint32_t id) { ++lookup(id).clients_closed_; }

  registration reg_;  // the team, the run and the handler slot (released last, after the destructor's wait)
  std::string name_;
  std::uint32_t id_ = 0;
  int me_;
  owner_placement<K> placement_;
  owner_shard<K, Stored, Family> shard_;
  completion_ledger ledger_;
  int clients_closed_ = 0;
  std::vector<pending> pending_;
  std::vector<std::uint32_t> free_slots_;
  // Per operation type (future_chunk::tag): the chunk of futures being filled for this rank's own operations
  // (replies.hpp).
  std::vector<std::pair<const void*, layer::state_ptr<layer::counted>>> open_chunks_;
  // Per owner: per operation type (group_chunk::tag), the open group (groups.hpp); and the group holding operations
  // not sent yet (at most one per owner: a group of another type leaves before one is added).
  struct owner_groups {
    const void* tag = nullptr;  // the first operation type grouped for the owner, its group inline
    layer::state_ptr<layer::counted> chunk;
    std::vector<std::pair<const void*, layer::state_ptr<layer::counted>>> more;  // the other types'
  };
  std::vector<owner_groups> open_groups_;
  std::vector<unsent_group*> unsent_;
  // Per owner: the columns of held posts (held_posts.hpp), one per operation type, the cursor of the open one, and
  // the column last opened (`current`, of operation type `tag`).
  struct held_columns {
    held_cursor cursor;  // a column refers to it: held_ never grows
    held_posts_base* current = nullptr;
    const void* tag = nullptr;
    std::vector<std::pair<const void*, std::unique_ptr<held_posts_base>>> kinds;
  };
  std::vector<held_columns> held_;
  cut_buffers<K> cut_buffers_;  // the working arrays of byte batches' cuts, kept between batches
  // This rank's own operations run at once (not grouped) while their futures are waited for one at a time.
  static constexpr std::uint32_t own_stream_futures = 4;
  bool own_at_once_ = false;
  // This rank's held own posts of one operation type (own_posts.hpp), kept between posts.
  std::unique_ptr<own_posts_base> own_posts_;
  const void* own_posts_type_ = nullptr;  // own_posts_tag of own_posts_'s operation type (nullptr: none yet)
};

}  // namespace shoal::detail
