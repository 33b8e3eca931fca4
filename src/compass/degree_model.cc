#include "compass/degree_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace tessera::compass {

namespace {

// Solves the n x n system m x = v (n <= 3) by Gaussian elimination with partial pivoting;
// false when singular.
bool Solve(std::vector<std::vector<double>> m, std::vector<double> v, std::vector<double>* x) {
  const size_t n = v.size();
  for (size_t col = 0; col < n; ++col) {
    size_t piv = col;
    for (size_t r = col + 1; r < n; ++r)
      if (std::fabs(m[r][col]) > std::fabs(m[piv][col])) piv = r;
    if (std::fabs(m[piv][col]) < 1e-300) return false;
    std::swap(m[piv], m[col]);
    std::swap(v[piv], v[col]);
    for (size_t r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (size_t c = col; c < n; ++c) m[r][c] -= f * m[col][c];
      v[r] -= f * v[col];
    }
  }
  x->resize(n);
  for (size_t i = 0; i < n; ++i) (*x)[i] = v[i] / m[i][i];
  return true;
}

// Least squares: rows of features `f` against targets `y` (normal equations, scaled columns).
bool LeastSquares(const std::vector<std::vector<double>>& f, const std::vector<double>& y,
                  std::vector<double>* x) {
  const size_t p = f.empty() ? 0 : f[0].size();
  std::vector<double> scale(p, 0.0);
  for (const auto& row : f)
    for (size_t j = 0; j < p; ++j) scale[j] = std::max(scale[j], std::fabs(row[j]));
  for (double& s : scale)
    if (s == 0) s = 1;
  std::vector<std::vector<double>> m(p, std::vector<double>(p, 0.0));
  std::vector<double> v(p, 0.0);
  for (size_t i = 0; i < f.size(); ++i) {
    for (size_t a = 0; a < p; ++a) {
      v[a] += f[i][a] / scale[a] * y[i];
      for (size_t b = 0; b < p; ++b) m[a][b] += f[i][a] / scale[a] * f[i][b] / scale[b];
    }
  }
  if (!Solve(m, v, x)) return false;
  for (size_t j = 0; j < p; ++j) (*x)[j] /= scale[j];
  return true;
}

}  // namespace

core::StatusOr<DegreeFit> FitDegreeModel(const std::vector<std::pair<int, double>>& samples) {
  std::set<int> ds;
  std::vector<std::vector<double>> f;
  std::vector<double> y;
  for (const auto& [d, t] : samples) {
    if (d < 1 || !std::isfinite(t)) {
      return core::InvalidArgument("degree fit: sample d " + std::to_string(d) + " T " +
                                   std::to_string(t));
    }
    ds.insert(d);
    f.push_back({static_cast<double>(d), 1.0, 1.0 / d});
    y.push_back(t);
  }
  if (ds.size() < 3) {
    return core::InvalidArgument("degree fit: needs at least 3 distinct degrees, got " +
                                 std::to_string(ds.size()));
  }
  std::vector<double> x;
  if (!LeastSquares(f, y, &x)) return core::InvalidArgument("degree fit: singular system");
  return DegreeFit{x[0], x[1], x[2]};
}

int ChooseDegree(const DegreeFit& fit, const std::vector<int>& feasible, int max_d) {
  std::vector<int> d;
  for (int x : feasible)
    if (x <= max_d) d.push_back(x);
  if (d.empty()) d = feasible;
  std::sort(d.begin(), d.end());
  if (d.empty()) return 1;
  if (fit.a <= 0) return d.back();
  if (fit.c <= 0) return d.front();
  const double star = std::sqrt(fit.c / fit.a);
  int below = d.front(), above = d.back();
  for (int x : d) {
    if (x <= star) below = x;
  }
  for (auto it = d.rbegin(); it != d.rend(); ++it) {
    if (*it >= star) above = *it;
  }
  return fit.Predict(below) <= fit.Predict(above) ? below : above;
}

core::StatusOr<OperatorDegreeChoice> FitAndChooseDegree(const std::map<int, double>& t_by_d) {
  std::vector<std::pair<int, double>> fit_samples;
  std::vector<int> feasible;
  for (const auto& [d, t] : t_by_d) {
    feasible.push_back(d);
    if (d == 1 || d == 2 || d == 4 || d == 8) fit_samples.push_back({d, t});
  }
  ASSIGN_OR_RETURN(DegreeFit fit, FitDegreeModel(fit_samples));
  // fit_samples is in ascending d (a map's order): its last is the largest fitted degree.
  return OperatorDegreeChoice{fit, ChooseDegree(fit, feasible, fit_samples.back().first)};
}

DegreeFit AnalyticDegreeFit(double tc_s, double tm_s, double alpha_s, double delta_s,
                            double kappa) {
  if (kappa * tc_s >= tm_s) {
    return DegreeFit{kappa * delta_s, kappa * tc_s + alpha_s + (1 - kappa) * delta_s,
                     tm_s + (1 - kappa) * tc_s};
  }
  return DegreeFit{alpha_s, tm_s + delta_s, tc_s};
}

core::StatusOr<DegreeClassModel> FitDegreeClass(const std::vector<DegreeSample>& samples) {
  if (samples.size() < 2) {
    return core::InvalidArgument("degree class fit: needs at least 2 samples, got " +
                                 std::to_string(samples.size()));
  }
  bool found = false;
  DegreeClassModel best;
  double best_sse = 0;
  for (int step = 0; step <= 200; ++step) {
    const double kappa = 1.0 + 0.01 * step;
    // Compute-bound: T - kappa Tc - (Tm + (1 - kappa) Tc) / d = alpha + delta (kappa d + 1 -
    // kappa); comm-bound: T - Tm - Tc / d = alpha d + delta.
    std::vector<std::vector<double>> f;
    std::vector<double> y;
    for (const DegreeSample& s : samples) {
      const double d = s.d;
      if (kappa * s.tc_s >= s.tm_s) {
        f.push_back({1.0, kappa * d + 1 - kappa});
        y.push_back(s.t_s - kappa * s.tc_s - (s.tm_s + (1 - kappa) * s.tc_s) / d);
      } else {
        f.push_back({d, 1.0});
        y.push_back(s.t_s - s.tm_s - s.tc_s / d);
      }
    }
    std::vector<double> x;
    if (!LeastSquares(f, y, &x)) continue;
    double sse = 0;
    for (const DegreeSample& s : samples) {
      const double pred = AnalyticDegreeFit(s.tc_s, s.tm_s, x[0], x[1], kappa).Predict(s.d);
      sse += (pred - s.t_s) * (pred - s.t_s) / (s.t_s * s.t_s);
    }
    if (!found || sse < best_sse) {
      found = true;
      best_sse = sse;
      best = DegreeClassModel{x[0], x[1], kappa};
    }
  }
  if (!found) return core::InvalidArgument("degree class fit: singular system");
  return best;
}

double PipelineModel::Predict(double part_gemm_s, double part_collective_s, int d) const {
  const double a = part_gemm_s + delta_s, b = part_collective_s + alpha_s;
  if (a <= 0 || b <= 0 || d < 1) return std::numeric_limits<double>::infinity();
  return a + b + (d - 1) * std::max(kappa * a, b);
}

PipelineModel MinimisePipelineParams(const std::function<double(const PipelineModel&)>& error,
                                     double unit, double* best_error) {
  PipelineModel best;
  double best_e = error(best);
  for (int ki = 0; ki <= 20; ++ki) {
    for (int ai = 0; ai <= 20; ++ai) {
      for (int di = -10; di <= 10; ++di) {
        const PipelineModel m{unit * 0.1 * ai, unit * 0.1 * di, 1.0 + 0.1 * ki};
        const double e = error(m);
        if (e < best_e) {
          best_e = e;
          best = m;
        }
      }
    }
  }
  // Pattern search: a step each way on each parameter; halve the steps when none helps.
  double step_t = unit * 0.05, step_k = 0.05;
  while (step_t > unit * 1e-5) {
    bool moved = false;
    for (int p = 0; p < 3; ++p) {
      for (int sign : {1, -1}) {
        PipelineModel m = best;
        if (p == 0) m.alpha_s += sign * step_t;
        if (p == 1) m.delta_s += sign * step_t;
        if (p == 2) m.kappa = std::clamp(m.kappa + sign * step_k, 1.0, 3.0);
        const double e = error(m);
        if (e < best_e) {
          best_e = e;
          best = m;
          moved = true;
        }
      }
    }
    if (!moved) {
      step_t /= 2;
      step_k /= 2;
    }
  }
  if (best_error != nullptr) *best_error = best_e;
  return best;
}

core::StatusOr<PipelineModel> FitPipelineModel(const std::vector<PipelineSample>& samples) {
  if (samples.size() < 3) {
    return core::InvalidArgument("pipeline model fit: needs at least 3 samples, got " +
                                 std::to_string(samples.size()));
  }
  std::vector<double> per_part;
  for (const PipelineSample& s : samples) {
    if (!(s.t_s > 0) || s.d < 1 || !std::isfinite(s.t_s)) {
      return core::InvalidArgument("pipeline model fit: sample d " + std::to_string(s.d) + " T " +
                                   std::to_string(s.t_s));
    }
    per_part.push_back(s.t_s / s.d);
  }
  std::sort(per_part.begin(), per_part.end());
  const double unit = per_part[per_part.size() / 2];  // a typical part time
  double best_e = 0;
  const PipelineModel best = MinimisePipelineParams(
      [&](const PipelineModel& m) {
        double e = 0;
        for (const PipelineSample& s : samples) {
          const double p = m.Predict(s.part_gemm_s, s.part_collective_s, s.d);
          if (!std::isfinite(p)) return std::numeric_limits<double>::infinity();
          e += (p - s.t_s) * (p - s.t_s) / (s.t_s * s.t_s);
        }
        return e;
      },
      unit, &best_e);
  if (!std::isfinite(best_e)) {
    return core::InvalidArgument("pipeline model fit: no parameters give finite predictions");
  }
  return best;
}

}  // namespace tessera::compass
