// shoal/core/team.hpp — a group of ranks and its collectives.
//
// shoal::world() is every rank of the environment's communicator; shoal::node_team() the ranks of this node.
// Collectives (barrier, broadcast, allreduce, allgather) must be called by every rank of the team; while they
// wait they make progress, so active messages keep flowing. At SHOAL_CHECKS=2 (the Debug default,
// shoal/core/checks.hpp) every collective first verifies that all ranks entered the same collective and reports a
// mismatch as shoal::usage_error naming the calls of both sides.
//
// Cost: barrier B; broadcast / allreduce / allgather one MPI collective each (log p latency).
#pragma once

#include <mpi.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "shoal/core/checks.hpp"
#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/detail/mpi_type.hpp"
#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/progress.hpp"

namespace shoal {

/// Built-in reduction operations; any stateless callable (T, T) -> T works as well.
namespace op {
struct sum {
  template <class T>
  T operator()(const T& a, const T& b) const { return a + b; }
};
struct min {
  template <class T>
  T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
struct max {
  template <class T>
  T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
struct bit_or {
  template <class T>
  T operator()(const T& a, const T& b) const { return a | b; }
};
struct bit_and {
  template <class T>
  T operator()(const T& a, const T& b) const { return a & b; }
};
}  // namespace op

/// A user reduction must be stateless (a captureless lambda or an empty function object): MPI applies it
/// wherever the reduction tree puts it, so it cannot carry state from the caller.
template <class Op, class T>
concept reduction_op = std::is_trivially_copyable_v<T> && std::default_initializable<Op> && std::is_empty_v<Op> &&
                       std::convertible_to<std::invoke_result_t<Op, const T&, const T&>, T>;

namespace detail {

template <class Op>
MPI_Op builtin_mpi_op() {
  if constexpr (std::is_same_v<Op, op::sum> || std::is_same_v<Op, std::plus<>>) return MPI_SUM;
  else if constexpr (std::is_same_v<Op, op::min>) return MPI_MIN;
  else if constexpr (std::is_same_v<Op, op::max>) return MPI_MAX;
  else if constexpr (std::is_same_v<Op, op::bit_or>) return MPI_BOR;
  else if constexpr (std::is_same_v<Op, op::bit_and>) return MPI_BAND;
  else return MPI_OP_NULL;
}

template <class T, class Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  Op op{};
  for (int i = 0; i < *len; ++i) b[i] = op(a[i], b[i]);  // MPI: inout = in (op) inout, in rank order
}

/// A committed contiguous-bytes datatype for T, freed when the call ends.
struct bytes_type {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  explicit bytes_type(std::size_t bytes) {
    SHOAL_MPI(MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &type));
    SHOAL_MPI(MPI_Type_commit(&type));
  }
  ~bytes_type() { SHOAL_MPI_CLEANUP(MPI_Type_free(&type)); }
  bytes_type(const bytes_type&) = delete;
  bytes_type& operator=(const bytes_type&) = delete;
};

}  // namespace detail

namespace detail {

/// What a team is made of, shared by every copy of one team on this rank.
struct team_state {
  MPI_Comm comm = MPI_COMM_NULL;  // the team's own communicator (a duplicate: never matches the user's traffic)
  bool owns_comm = false;         // false for world() and node_team(), whose communicators the environment frees
  int rank = 0;
  int size = 1;
  std::uint32_t id = 0;           // 0: world(); see team::id
  std::uint64_t run = 0;          // the environment the team belongs to
  std::vector<int> to_world;      // team rank -> environment rank (empty: identity, i.e. world())
  std::vector<int> from_world;    // environment rank -> team rank or -1 (empty: identity)
  std::shared_ptr<const team_state> node;  // the node sub-team (null: the team is its own node sub-team)

  team_state() = default;
  team_state(const team_state&) = delete;
  team_state& operator=(const team_state&) = delete;
  ~team_state() {
    // After the environment has ended MPI may be finalized: the communicator went with the run.
    if (owns_comm && comm != MPI_COMM_NULL && run_is_live(run)) MPI_Comm_free(&comm);
  }
};

/// Frees a temporary communicator at the end of its scope (also when an exception leaves it).
struct comm_freer {
  MPI_Comm& comm;
  ~comm_freer() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

/// The environment rank of every rank of `comm` (MPI_UNDEFINED for a process outside the environment).
inline void translate_ranks(MPI_Comm comm, std::vector<int>& out) {
  MPI_Group mine = MPI_GROUP_NULL, env = MPI_GROUP_NULL;
  SHOAL_MPI(MPI_Comm_group(comm, &mine));
  SHOAL_MPI(MPI_Comm_group(rt().comm, &env));
  std::vector<int> ranks(out.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) ranks[i] = static_cast<int>(i);
  const int rc = MPI_Group_translate_ranks(mine, static_cast<int>(ranks.size()), ranks.data(), env, out.data());
  MPI_Group_free(&mine);
  MPI_Group_free(&env);
  mpi_check(rc, "MPI_Group_translate_ranks");
}

/// Collective over the team's communicator: gives the team the lowest id no rank of it has used (every rank of the
/// team agrees on it; two teams that share a rank never share an id).
inline void assign_team_id(team_state& s) {
  std::uint32_t id = rt().next_team_id;
  MPI_Request req;
  SHOAL_MPI(MPI_Iallreduce(MPI_IN_PLACE, &id, 1, MPI_UINT32_T, MPI_MAX, s.comm, &req));
  wait_request(req);
  s.id = id;
  rt().next_team_id = id + 1;
}

/// Collective over comm: the state of a team of comm's ranks (a duplicate of comm, the rank maps, and with
/// `node_too` the node sub-team).
inline std::shared_ptr<const team_state> make_team_state(MPI_Comm comm, bool node_too) {
  auto& r = rt();
  if (comm == MPI_COMM_NULL) throw usage_error("shoal::team: MPI_COMM_NULL is not a communicator of any rank");
  int rank = 0, size = 0;
  SHOAL_MPI(MPI_Comm_rank(comm, &rank));
  SHOAL_MPI(MPI_Comm_size(comm, &size));
  std::vector<int> to(static_cast<std::size_t>(size));
  translate_ranks(comm, to);
  for (int i = 0; i < size; ++i) {
    if (to[static_cast<std::size_t>(i)] == MPI_UNDEFINED) {
      throw usage_error("shoal::team: rank " + std::to_string(i) + " of the communicator is not a rank of the "
                        "environment's communicator; a team can only hold ranks of the environment (make the "
                        "communicator from shoal::world().comm() or from the communicator passed to "
                        "shoal::environment, e.g. with MPI_Comm_split)");
    }
  }
  auto s = std::make_shared<team_state>();
  s->rank = rank;
  s->size = size;
  s->run = r.run;
  bool identity = size == r.size;
  for (int i = 0; identity && i < size; ++i) identity = to[static_cast<std::size_t>(i)] == i;
  if (!identity) {
    s->from_world.assign(static_cast<std::size_t>(r.size), -1);
    for (int i = 0; i < size; ++i) s->from_world[static_cast<std::size_t>(to[static_cast<std::size_t>(i)])] = i;
    s->to_world = std::move(to);
  }
  SHOAL_MPI(MPI_Comm_dup(comm, &s->comm));
  SHOAL_MPI(MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN));  // MPI errors come back as shoal exceptions
  s->owns_comm = true;
  assign_team_id(*s);
  if (node_too) {
    MPI_Comm node = MPI_COMM_NULL;
    SHOAL_MPI(MPI_Comm_split_type(s->comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    const comm_freer free_node{node};
    s->node = make_team_state(node, /*node_too=*/false);
  }
  return s;
}

}  // namespace detail

class team;
namespace detail {
inline team wrap_runtime_team(MPI_Comm comm, std::uint64_t run, bool world);
}  // namespace detail

/// A group of ranks of the environment. world() is every rank; node_team() the ranks of this node; a team is also
/// made from an MPI communicator whose ranks all belong to the environment (team(MPI_Comm)) or by splitting a team
/// (split). Ranks are numbered 0..size()-1 inside the team; to_world / from_world translate to and from the
/// environment's ranks (those of global_ptr, shoal::post and shoal::rank()). Copies share one communicator; a team
/// belongs to the environment (run) that was up when it was made and is inert after that environment ends.
class team {
 public:
  /// An empty team (no rank); what a moved-from container holds.
  team() = default;

  /// Collective over `comm`: a team of comm's ranks, ordered as in comm. Its communicator is a duplicate of comm
  /// (containers' collectives never match the caller's). Every rank of comm must belong to the environment, else
  /// usage_error on every rank of comm. A communicator from MPI_Comm_split of shoal::world().comm() (or of the
  /// communicator given to the environment) qualifies.
  explicit team(MPI_Comm comm) : team(detail::make_team_state(comm, /*node_too=*/true)) {}

  /// Collective over this team: the ranks with the same `color` form a new team, ordered by `key` then by rank in
  /// this team (MPI_Comm_split). A negative color leaves the calling rank out: it receives an empty team.
  team split(int color, int key = 0) const {
    check_collective("split");
    MPI_Comm part = MPI_COMM_NULL;
    SHOAL_MPI(MPI_Comm_split(comm(), color < 0 ? MPI_UNDEFINED : color, key, &part));
    if (part == MPI_COMM_NULL) return team();
    const detail::comm_freer free_part{part};
    return team(part);
  }

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  MPI_Comm comm() const noexcept { return comm_; }
  /// False for an empty team (a negative color of split, a moved-from container's team).
  bool valid() const noexcept { return state_ != nullptr; }
  /// True when the team is every rank of the environment in environment order.
  bool is_world() const noexcept { return state_ != nullptr && state_->to_world.empty(); }
  /// The environment (run) the team belongs to.
  std::uint64_t run() const noexcept { return state_ ? state_->run : 0; }
  /// True while the environment the team belongs to is up (false for an empty team): what a container's destructor
  /// asks before it frees memory of that environment.
  bool live() const noexcept { return state_ != nullptr && detail::run_is_live(state_->run); }
  /// The team's number, the same on each of its ranks and different from that of every other team a rank belongs
  /// to (0: world()). Active messages carry it, so that quiescence can be reached per team (docs/am.md).
  std::uint32_t id() const noexcept { return state_ ? state_->id : 0; }

  /// The environment rank of team rank `r` (0 <= r < size()): the rank global_ptr, post and rpc take.
  int to_world(int r) const {
    if (static_cast<unsigned>(r) >= static_cast<unsigned>(size_)) throw_rank(r);
    return state_->to_world.empty() ? r : state_->to_world[static_cast<std::size_t>(r)];
  }
  /// The team rank of environment rank `world_rank`, or -1 when that rank is not in the team.
  int from_world(int world_rank) const noexcept {
    if (state_ == nullptr) return -1;
    if (state_->from_world.empty()) return world_rank >= 0 && world_rank < size_ ? world_rank : -1;
    if (static_cast<std::size_t>(world_rank) >= state_->from_world.size()) return -1;
    return state_->from_world[static_cast<std::size_t>(world_rank)];
  }
  /// The ranks of this team on this rank's node (a sub-team).
  team node() const {
    if (state_ == nullptr) return team();
    return state_->node ? team(state_->node) : *this;
  }

  /// Collective. Returns when every rank of the team has entered; makes progress while waiting.
  void barrier() const {
    check_collective("barrier");
    MPI_Request req;
    SHOAL_MPI(MPI_Ibarrier(comm_, &req));
    detail::wait_request(req);
  }

  /// Collective. Every rank returns root's value (trivially copyable T).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  T broadcast(T value, int root = 0) const {
    check_collective("broadcast");
    check_root(root);
    MPI_Request req;
    SHOAL_MPI(MPI_Ibcast(&value, static_cast<int>(sizeof(T)), MPI_BYTE, root, comm_, &req));
    detail::wait_request(req);
    return value;
  }

  /// Collective. Every rank returns root's vector.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  std::vector<T> broadcast(std::vector<T> values, int root = 0) const {
    auto n = broadcast<std::uint64_t>(values.size(), root);
    values.resize(n);
    broadcast_bytes(values.data(), n * sizeof(T), root);
    return values;
  }

  /// Collective. Every rank returns root's string.
  std::string broadcast(std::string text, int root = 0) const {
    auto n = broadcast<std::uint64_t>(text.size(), root);
    text.resize(n);
    broadcast_bytes(text.data(), n, root);
    return text;
  }

  /// Collective. Combines every rank's value with `op` (op::sum, op::min, op::max, op::bit_or, op::bit_and, or a
  /// stateless user callable on a trivially copyable type) and returns the result on every rank.
  template <class T, class Op>
    requires reduction_op<Op, T>
  T allreduce(T value, Op) const {
    check_collective("allreduce");
    T out{};
    MPI_Request req;
    // MPICH 4.0.2 compares MPI_UINT32_T / MPI_UINT64_T as signed in MPI_MIN / MPI_MAX (min(5, 2^64-1) = 2^64-1),
    // so unsigned minima and maxima take the user-operation path, which is right on every MPI.
    constexpr bool unsigned_order = std::is_unsigned_v<T> && (std::is_same_v<Op, op::min> || std::is_same_v<Op, op::max>);
    if constexpr (detail::has_mpi_type<T> && !unsigned_order) {
      MPI_Op mop = detail::builtin_mpi_op<Op>();
      if (mop != MPI_OP_NULL) {
        SHOAL_MPI(MPI_Iallreduce(&value, &out, 1, detail::mpi_type<T>(), mop, comm_, &req));
        detail::wait_request(req);
        return out;
      }
    }
    detail::bytes_type type(sizeof(T));
    MPI_Op mop;
    SHOAL_MPI(MPI_Op_create(&detail::user_reduce<T, Op>, /*commute=*/0, &mop));
    int rc = MPI_Iallreduce(&value, &out, 1, type.type, mop, comm_, &req);
    if (rc == MPI_SUCCESS) detail::wait_request(req);
    SHOAL_MPI_CLEANUP(MPI_Op_free(&mop));
    detail::mpi_check(rc, "MPI_Iallreduce");
    return out;
  }

  /// Collective. Element i of the result is rank i's value.
  template <class T>
    requires std::is_trivially_copyable_v<T>
  std::vector<T> allgather(const T& value) const {
    check_collective("allgather");
    std::vector<T> out(static_cast<std::size_t>(size_));
    MPI_Request req;
    SHOAL_MPI(MPI_Iallgather(&value, static_cast<int>(sizeof(T)), MPI_BYTE, out.data(), static_cast<int>(sizeof(T)),
                             MPI_BYTE, comm_, &req));
    detail::wait_request(req);
    return out;
  }

 private:
  void broadcast_bytes(void* data, std::size_t bytes, int root) const {
    constexpr std::size_t chunk = 1u << 30;
    auto* p = static_cast<char*>(data);
    for (std::size_t done = 0; done < bytes; done += chunk) {
      const int n = static_cast<int>(std::min(chunk, bytes - done));
      MPI_Request req;
      SHOAL_MPI(MPI_Ibcast(p + done, n, MPI_BYTE, root, comm_, &req));
      detail::wait_request(req);
    }
  }

  void check_root(int root) const {
    if (root < 0 || root >= size_) throw_rank(root);
  }

  // At SHOAL_CHECKS=2, verifies that every rank entered the same collective: the minimum and the maximum of a hash of
  // the call's name agree only if every rank called the same one. On a mismatch (every rank sees it) the names
  // themselves are exchanged, so the error says which rank called what.
  void check_collective([[maybe_unused]] const char* name) const {
    if (state_ == nullptr || !detail::run_is_live(state_->run)) [[unlikely]] throw_unusable(name);
#if SHOAL_CHECKS >= 2
    std::uint64_t h = 1469598103934665603ull;
    for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
    std::int64_t mine[2] = {static_cast<std::int64_t>(h >> 1), -static_cast<std::int64_t>(h >> 1)};
    std::int64_t agg[2];
    // Non-blocking and waited with progress: a rank in a collective must keep serving active messages.
    MPI_Request req;
    SHOAL_MPI(MPI_Iallreduce(mine, agg, 2, MPI_INT64_T, MPI_MIN, comm_, &req));
    detail::wait_request(req);
    if (agg[0] == -agg[1]) return;
    constexpr std::size_t width = 32;
    char own[width] = {};
    std::string(name).copy(own, width - 1);
    std::vector<char> all(width * static_cast<std::size_t>(size_));
    SHOAL_MPI(MPI_Iallgather(own, width, MPI_CHAR, all.data(), width, MPI_CHAR, comm_, &req));
    detail::wait_request(req);
    std::string other = "a different collective";
    for (int r = 0; r < size_; ++r) {
      const std::string theirs(all.data() + width * static_cast<std::size_t>(r));
      if (theirs != name) {
        other = theirs + " on rank " + std::to_string(r);
        break;
      }
    }
    throw usage_error(std::string("shoal: collective mismatch on a team of ") + std::to_string(size_) +
                      " ranks: rank " + std::to_string(rank_) + " called " + name + " while " + other +
                      " was called; every rank of a team must call the same collectives in the same order");
#endif
  }

  [[noreturn]] void throw_unusable(const char* name) const {
    if (state_ == nullptr) {
      throw usage_error(std::string("shoal::team::") + name + ": the team is empty (a rank that split itself out "
                        "with a negative color holds no team)");
    }
    detail::rt();  // "not initialized" / "finalized"
    throw usage_error(std::string("shoal::team::") + name + ": the team belongs to an environment that has ended; "
                      "make teams in the running one");
  }

  [[noreturn]] void throw_rank(int r) const {
    throw usage_error("shoal: rank " + std::to_string(r) + " is outside the team of " + std::to_string(size_) +
                      " ranks");
  }

  explicit team(std::shared_ptr<const detail::team_state> state)
      : state_(std::move(state)), comm_(state_->comm), rank_(state_->rank), size_(state_->size) {}
  friend team detail::wrap_runtime_team(MPI_Comm, std::uint64_t, bool);

  std::shared_ptr<const detail::team_state> state_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
};

namespace detail {

/// world() and node_team(): the environment's own communicators, not duplicated and not freed by the team.
inline team wrap_runtime_team(MPI_Comm comm, std::uint64_t run, bool world) {
  auto state = std::make_shared<team_state>();
  state->comm = comm;
  MPI_Comm_rank(comm, &state->rank);
  MPI_Comm_size(comm, &state->size);
  state->run = run;
  if (!world) {  // node_team(): translate like any sub-team
    assign_team_id(*state);
    state->to_world.resize(static_cast<std::size_t>(state->size));
    translate_ranks(comm, state->to_world);
    state->from_world.assign(static_cast<std::size_t>(rt().size), -1);
    for (int r = 0; r < state->size; ++r) state->from_world[static_cast<std::size_t>(state->to_world[static_cast<std::size_t>(r)])] = r;
  }
  return team(std::shared_ptr<const team_state>(std::move(state)));
}

inline team& world_team_storage() {
  static team t;
  return t;
}
inline team& node_team_storage() {
  static team t;
  return t;
}
}  // namespace detail

/// Every rank of the environment's communicator.
inline const team& world() {
  detail::rt();
  return detail::world_team_storage();
}
/// The ranks that share this rank's node (MPI_COMM_TYPE_SHARED).
inline const team& node_team() {
  detail::rt();
  return detail::node_team_storage();
}

/// This rank in world().
inline int rank() { return detail::rt().rank; }
/// Number of ranks in world().
inline int size() { return detail::rt().size; }

/// Collective over world(): see team::barrier.
inline void barrier() { world().barrier(); }
/// Collective over world(): see team::broadcast.
template <class T>
auto broadcast(T value, int root = 0) {
  return world().broadcast(std::move(value), root);
}
/// Collective over world(): see team::allreduce.
template <class T, class Op>
T allreduce(T value, Op op) {
  return world().allreduce(value, op);
}
/// Collective over world(): see team::allgather.
template <class T>
std::vector<T> allgather(const T& value) {
  return world().allgather(value);
}

}  // namespace shoal
