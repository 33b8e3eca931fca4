// Conformance checks of the typed collectives (see conformance.h).
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "comm/broadcast_result.h"
#include "comm/conformance.h"
#include "comm/conformance_util.h"
#include "core/json_util.h"

namespace tessera::comm::testing {

// A small result type for BroadcastResult: ToJson is found by argument-dependent lookup.
struct ToyPlan {
  int64_t splits = 0;
  double makespan_s = 0;
};

core::Json ToJson(const ToyPlan& p) {
  return core::Json{{"splits", p.splits}, {"makespan_s", p.makespan_s}};
}

namespace {

StatusOr<ToyPlan> ToyPlanFromJson(const core::Json& j) {
  ToyPlan p;
  p.splits = j.value("splits", int64_t{-1});
  p.makespan_s = j.value("makespan_s", 0.0);
  if (p.splits < 0) {
    return core::InvalidArgument(
        fmt::format("plan.splits: got {}, must be >= 0 (e.g. \"splits\": 3)", p.splits));
  }
  return p;
}

// Calls f(T{}) for every supported element type.
template <typename F>
void ForEachDType(F&& f) {
  f(float{});
  f(Bf16{});
  f(int64_t{});
  f(double{});
}

template <typename T>
const char* Name() {
  return DTypeName(kDTypeOf<T>);
}

// Element k of the message (a -> b), for every dtype; i64 values are large (|v| < 2^50) so
// that sums over 4 ranks stay exact in double too.
template <typename T>
T Make(uint64_t seed, uint64_t a, uint64_t b, uint64_t k) {
  const double v = Value(seed, a, b, k);
  if constexpr (std::is_same_v<T, Bf16>) {
    return FloatToBf16(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<int64_t>(std::llround(v * 1e15));
  } else if constexpr (std::is_same_v<T, double>) {
    return v * 1e6;
  } else {
    return static_cast<float>(v);
  }
}

template <typename T>
T Sentinel() {
  if constexpr (std::is_same_v<T, Bf16>) {
    return FloatToBf16(kSentinel);
  } else {
    return static_cast<T>(kSentinel);
  }
}

// Relative tolerance (of sum |v|) of a sum of `T`: fp32 accumulation, then for bf16 one
// rounding to 8 significant bits; i64 is exact.
template <typename T>
double SumTolerance() {
  if constexpr (std::is_same_v<T, Bf16>) return std::ldexp(1.0, -8);
  if constexpr (std::is_same_v<T, float>) return 1e-6;
  if constexpr (std::is_same_v<T, double>) return 1e-14;
  return 0.0;
}

// Compares a sum with its reference: exact for i64 (int64 oracle), within tolerance otherwise.
template <typename T>
void ExpectSum(Failures& f, std::span<const T> got, std::span<const int64_t> exact,
               std::span<const double> want, std::span<const double> scale,
               const std::string& what) {
  if constexpr (std::is_same_v<T, int64_t>) {
    f.ExpectSame(got, exact, what);
  } else {
    f.ExpectNear(got, want, scale, SumTolerance<T>(), what);
  }
}

// Every rank must hold the same bits in `mine`.
template <typename T>
void ExpectIdenticalOnAllRanks(Communicator& comm, Failures& f, std::span<const T> mine,
                               const std::string& what) {
  const int64_t len = static_cast<int64_t>(mine.size());
  std::vector<T> all(comm.size() * len);
  f.ExpectOk(comm.AllGather(mine, std::span<T>(all)), what + " gather results");
  for (int i = 0; i < comm.size(); ++i) {
    f.ExpectSame(std::span<const T>(all).subspan(i * len, len), mine,
                 fmt::format("{} identical on rank {}", what, i));
  }
}

}  // namespace

Status CheckDTypeAllToAllV(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  ForEachDType([&]<typename T>(T) {
    core::Rng shared(seed);
    std::vector<std::vector<int64_t>> matrix(n, std::vector<int64_t>(n));
    for (auto& row : matrix) {
      for (int64_t& c : row) c = static_cast<int64_t>(shared.Below(7));
    }
    std::vector<int64_t> sc(n), rc(n);
    for (int j = 0; j < n; ++j) sc[j] = matrix[r][j];
    for (int i = 0; i < n; ++i) rc[i] = matrix[i][r];
    core::Rng local = core::Rng(seed).Fork(3000 + r);
    const Layout sl = MakeLayout(sc, local);
    const Layout rl = MakeLayout(rc, local);
    std::vector<T> send(sl.total, Sentinel<T>()), expected(rl.total, Sentinel<T>());
    for (int j = 0; j < n; ++j) {
      for (int64_t k = 0; k < sc[j]; ++k) send[sl.displs[j] + k] = Make<T>(seed, r, j, k);
    }
    for (int i = 0; i < n; ++i) {
      for (int64_t k = 0; k < rc[i]; ++k) expected[rl.displs[i] + k] = Make<T>(seed, i, r, k);
    }
    std::vector<T> got(rl.total, Sentinel<T>());
    const std::string what = fmt::format("AllToAllV({})", Name<T>());
    f.ExpectOk(
        comm.AllToAllV(C(send), sl.counts, sl.displs, std::span<T>(got), rl.counts, rl.displs),
        what);
    f.ExpectSame(C(got), C(expected), what + " vs oracle");
  });
  return f.Result();
}

Status CheckDTypeAllGatherV(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  ForEachDType([&]<typename T>(T) {
    core::Rng shared(seed);
    std::vector<int64_t> counts(n);
    for (int64_t& c : counts) c = static_cast<int64_t>(shared.Below(9));
    core::Rng local = core::Rng(seed).Fork(4000 + r);
    const Layout rl = MakeLayout(counts, local);
    std::vector<T> send(counts[r]), expected(rl.total, Sentinel<T>()), got(rl.total, Sentinel<T>());
    for (int64_t k = 0; k < counts[r]; ++k) send[k] = Make<T>(seed, r, 0, k);
    for (int j = 0; j < n; ++j) {
      for (int64_t k = 0; k < counts[j]; ++k) expected[rl.displs[j] + k] = Make<T>(seed, j, 0, k);
    }
    const std::string what = fmt::format("AllGatherV({})", Name<T>());
    f.ExpectOk(comm.AllGatherV(C(send), std::span<T>(got), rl.counts, rl.displs), what);
    f.ExpectSame(C(got), C(expected), what + " vs oracle");
  });
  return f.Result();
}

Status CheckDTypeAllGather(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  ForEachDType([&]<typename T>(T) {
    for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{13}, int64_t{3000}}) {
      std::vector<T> send(len), expected(n * len), got(n * len, Sentinel<T>());
      for (int64_t k = 0; k < len; ++k) send[k] = Make<T>(seed, r, len, k);
      for (int j = 0; j < n; ++j) {
        for (int64_t k = 0; k < len; ++k) expected[j * len + k] = Make<T>(seed, j, len, k);
      }
      const std::string what = fmt::format("AllGather({}, len {})", Name<T>(), len);
      f.ExpectOk(comm.AllGather(C(send), std::span<T>(got)), what);
      f.ExpectSame(C(got), C(expected), what + " vs oracle");
    }
  });
  return f.Result();
}

Status CheckDTypeBroadcast(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  ForEachDType([&]<typename T>(T) {
    for (int root = 0; root < comm.size(); ++root) {
      const int64_t len = 1 + 501 * root;
      std::vector<T> expected(len), data(len, Sentinel<T>());
      for (int64_t k = 0; k < len; ++k) expected[k] = Make<T>(seed, root, 5, k);
      if (comm.rank() == root) data = expected;
      const std::string what = fmt::format("Broadcast({}, root {})", Name<T>(), root);
      f.ExpectOk(comm.Broadcast(std::span<T>(data), root), what);
      f.ExpectSame(C(data), C(expected), what + " data");
    }
  });
  return f.Result();
}

Status CheckDTypeAllReduceSum(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  ForEachDType([&]<typename T>(T) {
    for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1001}}) {
      std::vector<T> data(len);
      std::vector<int64_t> exact(len, 0);
      std::vector<double> want(len, 0.0), scale(len, 0.0);
      for (int64_t k = 0; k < len; ++k) data[k] = Make<T>(seed, r, len, k);
      for (int i = 0; i < n; ++i) {
        for (int64_t k = 0; k < len; ++k) {
          const T v = Make<T>(seed, i, len, k);
          if constexpr (std::is_same_v<T, int64_t>) exact[k] += v;
          want[k] += ToDouble(v);
          scale[k] += std::abs(ToDouble(v));
        }
      }
      const std::string what = fmt::format("AllReduceSum({}, len {})", Name<T>(), len);
      f.ExpectOk(comm.AllReduceSum(std::span<T>(data)), what);
      ExpectSum<T>(f, C(data), C(exact), C(want), C(scale), what + " vs oracle");
      ExpectIdenticalOnAllRanks<T>(comm, f, C(data), what);
    }
  });
  return f.Result();
}

namespace {

// ReduceScatterV of seeded inputs against the plain reference: rank i's block of the
// element-wise sum over ranks. `counts` are the blocks (the same on every rank).
template <typename T>
void ReduceScatterCase(Communicator& comm, Failures& f, uint64_t seed,
                       const std::vector<int64_t>& counts, bool equal_blocks) {
  const int n = comm.size();
  const int r = comm.rank();
  int64_t total = 0, from = 0;
  for (int j = 0; j < n; ++j) {
    if (j == r) from = total;
    total += counts[j];
  }
  const int64_t len = counts[r];
  std::vector<T> send(total), got(len, Sentinel<T>());
  for (int64_t k = 0; k < total; ++k) send[k] = Make<T>(seed, r, 7, k);
  std::vector<int64_t> exact(len, 0);
  std::vector<double> want(len, 0.0), scale(len, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int64_t k = 0; k < len; ++k) {
      const T v = Make<T>(seed, i, 7, from + k);
      if constexpr (std::is_same_v<T, int64_t>) exact[k] += v;
      want[k] += ToDouble(v);
      scale[k] += std::abs(ToDouble(v));
    }
  }
  const std::string what = fmt::format(
      "{}({}, block {})", equal_blocks ? "ReduceScatter" : "ReduceScatterV", Name<T>(), len);
  f.ExpectOk(equal_blocks ? comm.ReduceScatter(C(send), std::span<T>(got))
                          : comm.ReduceScatterV(C(send), std::span<T>(got), counts),
             what);
  ExpectSum<T>(f, C(got), C(exact), C(want), C(scale), what + " vs reference");
}

}  // namespace

Status CheckReduceScatter(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  ForEachDType([&]<typename T>(T) {
    for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{333}}) {
      ReduceScatterCase<T>(comm, f, seed + len, std::vector<int64_t>(comm.size(), len), true);
    }
  });
  return f.Result();
}

Status CheckReduceScatterV(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  ForEachDType([&]<typename T>(T) {
    core::Rng shared(seed);
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<int64_t> counts(comm.size());
      for (int64_t& c : counts) c = static_cast<int64_t>(shared.Below(trial == 2 ? 200 : 6));
      ReduceScatterCase<T>(comm, f, seed + trial, counts, false);
    }
  });
  return f.Result();
}

Status CheckBf16SumRounding(Communicator& comm, uint64_t /*seed*/) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float max_bf16 = Bf16ToFloat(Bf16{0x7F7F});
  struct Case {
    float a, b;     // rank 0 adds a, rank 1 adds b (both exact in bf16), other ranks 0
    uint16_t want;  // bits of the bf16 sum with >= 2 ranks
    const char* name;
  };
  const float e8 = std::ldexp(1.0f, -8), e7 = std::ldexp(1.0f, -7);
  const Case cases[] = {
      {1.0f, e8, 0x3F80, "1 + 2^-8: tie, rounds down to even 1"},
      {1.0f + e7, e8, 0x3F82, "(1 + 2^-7) + 2^-8: tie, rounds up to even 1 + 2^-6"},
      {-1.0f, -e8, 0xBF80, "-1 - 2^-8: tie, rounds to even -1"},
      {-1.0f - e7, -e8, 0xBF82, "-(1 + 2^-7) - 2^-8: tie, rounds to even"},
      {1.0f, std::ldexp(1.0f, -9), 0x3F80, "1 + 2^-9: below half, rounds down"},
      {1.0f, 1.5f * e8, 0x3F81, "1 + 1.5 * 2^-8: above half, rounds up"},
      {inf, 1.0f, 0x7F80, "inf + 1 = inf"},
      {-inf, 1.0f, 0xFF80, "-inf + 1 = -inf"},
      {max_bf16, max_bf16, 0x7F80, "max + max overflows to inf"},
      {nan, 1.0f, 0x7FC0, "NaN + 1 is NaN"},
      {3.0f, -3.0f, 0x0000, "3 - 3 = +0"},
  };
  const int64_t len = static_cast<int64_t>(std::size(cases));
  std::vector<Bf16> mine(len, Bf16{}), want(len);
  for (int64_t k = 0; k < len; ++k) {
    const Case& c = cases[k];
    if (r == 0) mine[k] = FloatToBf16(c.a);
    if (r == 1) mine[k] = FloatToBf16(c.b);
    want[k] = n >= 2 ? Bf16{c.want} : FloatToBf16(c.a);
  }
  auto check = [&](std::span<const Bf16> got, const std::string& op) {
    for (int64_t k = 0; k < len; ++k) {
      const bool ok =
          std::isnan(Bf16ToFloat(want[k])) ? std::isnan(Bf16ToFloat(got[k])) : got[k] == want[k];
      f.Expect(ok, fmt::format("{} bf16 {}: got {}, expected {}", op, cases[k].name, Show(got[k]),
                               Show(want[k])));
    }
  };
  std::vector<Bf16> reduced = mine;
  f.ExpectOk(comm.AllReduceSum(std::span<Bf16>(reduced)), "AllReduceSum(bf16)");
  check(reduced, "AllReduceSum");
  // ReduceScatter: every rank's block holds the same cases.
  std::vector<Bf16> send(n * len), block(len);
  for (int j = 0; j < n; ++j) std::copy(mine.begin(), mine.end(), send.begin() + j * len);
  f.ExpectOk(comm.ReduceScatter(C(send), std::span<Bf16>(block)), "ReduceScatter(bf16)");
  check(block, "ReduceScatter");
  return f.Result();
}

Status CheckDTypeValidation(Communicator& comm, uint64_t /*seed*/) {
  Failures f(comm);
  const int n = comm.size();
  const int r = comm.rank();
  constexpr auto kBad = core::StatusCode::kInvalidArgument;
  ForEachDType([&]<typename T>(T) {
    const std::string t = Name<T>();
    std::vector<T> send(4 * n), recv(4 * n), buf(8 * n);
    std::vector<int64_t> ones(n, 1), displs(n), fours(n, 4), too_many(n + 1, 0), negative(n, 4);
    PackedDispls(ones, displs);
    negative[0] = -4;
    std::vector<int64_t> more = fours;
    more[r] = 5;  // recv block of this rank != recv.size()
    f.ExpectCode(comm.AllGather(C(send), std::span<T>(recv).first(3)), kBad, t + " AllGather size");
    f.ExpectCode(comm.AllGatherV(C(send).first(2), std::span<T>(recv), ones, displs), kBad,
                 t + " AllGatherV send size");
    f.ExpectCode(comm.AllToAllV(C(send), too_many, displs, std::span<T>(recv), ones, displs), kBad,
                 t + " AllToAllV counts size");
    f.ExpectCode(comm.ReduceScatter(C(send), std::span<T>(recv).first(3)), kBad,
                 t + " ReduceScatter: send.size() != size() * recv.size()");
    f.ExpectCode(comm.ReduceScatterV(C(send), std::span<T>(recv).first(4), too_many), kBad,
                 t + " ReduceScatterV counts size");
    f.ExpectCode(comm.ReduceScatterV(C(send), std::span<T>(recv).first(4), negative), kBad,
                 t + " ReduceScatterV negative count");
    f.ExpectCode(comm.ReduceScatterV(C(send).first(4 * n - 1), std::span<T>(recv).first(4), fours),
                 kBad, t + " ReduceScatterV send != sum(recv_counts)");
    f.ExpectCode(comm.ReduceScatterV(C(buf).first(4 * n + 1), std::span<T>(recv).first(4), more),
                 kBad, t + " ReduceScatterV recv != recv_counts[rank]");
    f.ExpectCode(comm.ReduceScatter(std::span<const T>(buf).first(4 * n),
                                    std::span<T>(buf).subspan(4 * n - 1, 4)),
                 kBad, t + " ReduceScatter overlapping buffers");
    f.ExpectCode(comm.Broadcast(std::span<T>(send), n), kBad, t + " Broadcast root");
  });
  f.Expect(comm.broken().ok(), "argument errors must not break the communicator");
  f.ExpectOk(comm.Barrier(), "Barrier after argument errors");
  return f.Result();
}

Status CheckAllGatherValue(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  ForEachDType([&]<typename T>(T) {
    StatusOr<std::vector<T>> all = AllGatherValue(comm, Make<T>(seed, comm.rank(), 9, 0));
    f.ExpectOk(all.status(), fmt::format("AllGatherValue({})", Name<T>()));
    if (!all.ok()) return;
    std::vector<T> want(comm.size());
    for (int j = 0; j < comm.size(); ++j) want[j] = Make<T>(seed, j, 9, 0);
    f.ExpectSame(C(*all), C(want), fmt::format("AllGatherValue({}) values", Name<T>()));
  });
  return f.Result();
}

Status CheckBroadcastResult(Communicator& comm, uint64_t seed) {
  Failures f(comm);
  const int n = comm.size();
  auto expect_error = [&](const Status& got, const Status& want, const std::string& what) {
    f.Expect(got.code() == want.code() && got.message() == want.message(),
             fmt::format("{}: got {}, expected {}", what, got.ToString(), want.ToString()));
  };
  for (int root : {0, n - 1}) {
    const bool on_root = comm.rank() == root;
    const std::string w = fmt::format("BroadcastResult(root {})", root);
    // A string with every byte value, and a large one.
    std::string bytes;
    for (int c = 0; c < 256; ++c) bytes.push_back(static_cast<char>(c));
    std::string big(100003, 'x');
    for (size_t k = 0; k < big.size(); k += 7) big[k] = static_cast<char>('a' + (seed + k) % 26);
    for (const std::string* want : {&bytes, &big}) {
      StatusOr<std::string> got =
          BroadcastResult(comm, root, on_root ? StatusOr<std::string>(*want) : NotOnRoot());
      f.Expect(got.ok() && *got == *want, w + " string value: " + got.status().ToString());
    }
    // An error: code and message reach every rank.
    const Status error = core::Infeasible(
        fmt::format("zellige.plan: no plan fits 16 GiB on rank {} (seed {})", root, seed));
    StatusOr<std::string> got_error =
        BroadcastResult(comm, root, on_root ? StatusOr<std::string>(error) : NotOnRoot());
    expect_error(got_error.status(), error, w + " string error");
    // JSON value and error.
    const core::Json plan = {{"ranks", n}, {"t_s", 0.1 + 1e-17 * root}, {"name", "ring\n\"x\""}};
    StatusOr<core::Json> got_json =
        BroadcastResult(comm, root, on_root ? StatusOr<core::Json>(plan) : NotOnRoot());
    f.Expect(got_json.ok() && *got_json == plan, w + " JSON value");
    const Status unavailable = core::Unavailable("");
    StatusOr<core::Json> got_json_error =
        BroadcastResult(comm, root, on_root ? StatusOr<core::Json>(unavailable) : NotOnRoot());
    expect_error(got_json_error.status(), unavailable, w + " JSON error (empty message)");
    // A type with ToJson and a parse function; a value that fails to parse fails everywhere.
    StatusOr<ToyPlan> toy = BroadcastResult(
        comm, root, on_root ? StatusOr<ToyPlan>(ToyPlan{3, 1.25}) : NotOnRoot(), ToyPlanFromJson);
    f.Expect(toy.ok() && toy->splits == 3 && toy->makespan_s == 1.25, w + " ToyPlan value");
    StatusOr<ToyPlan> bad = BroadcastResult(
        comm, root, on_root ? StatusOr<ToyPlan>(ToyPlan{-2, 0}) : NotOnRoot(), ToyPlanFromJson);
    expect_error(bad.status(), ToyPlanFromJson(ToJson(ToyPlan{-2, 0})).status(),
                 w + " ToyPlan parse error");
  }
  f.ExpectCode(BroadcastResult(comm, n, StatusOr<std::string>("x")).status(),
               core::StatusCode::kInvalidArgument, "BroadcastResult root out of range");
  // The old string broadcast keeps working.
  std::string s = comm.rank() == 0 ? "P{\"ok\":1}" : "";
  f.ExpectOk(BroadcastString(comm, &s, 0), "BroadcastString");
  f.Expect(s == "P{\"ok\":1}", "BroadcastString value: " + s);
  return f.Result();
}

std::vector<NamedCheck> DTypeChecks() {
  return {
      {"DTypeAllToAllV", CheckDTypeAllToAllV},       {"DTypeAllGatherV", CheckDTypeAllGatherV},
      {"DTypeAllGather", CheckDTypeAllGather},       {"DTypeBroadcast", CheckDTypeBroadcast},
      {"DTypeAllReduceSum", CheckDTypeAllReduceSum}, {"ReduceScatter", CheckReduceScatter},
      {"ReduceScatterV", CheckReduceScatterV},       {"Bf16SumRounding", CheckBf16SumRounding},
      {"DTypeValidation", CheckDTypeValidation},     {"AllGatherValue", CheckAllGatherValue},
      {"BroadcastResult", CheckBroadcastResult},
  };
}

}  // namespace tessera::comm::testing
