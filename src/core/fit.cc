#include "core/fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

namespace tessera::core {

namespace {

Status SizeMismatch(size_t x, size_t y) {
  return InvalidArgument("fit: got " + std::to_string(x) + " x values and " + std::to_string(y) +
                         " y values, must be equal");
}

}  // namespace

StatusOr<std::vector<double>> SolveWeightedLeastSquares(
    const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
    const std::vector<double>& weights) {
  if (rows.size() != y.size() || rows.size() != weights.size()) {
    return InvalidArgument("fit: got " + std::to_string(rows.size()) + " rows, " +
                           std::to_string(y.size()) + " values and " +
                           std::to_string(weights.size()) + " weights, must be equal");
  }
  if (rows.empty() || rows[0].empty()) {
    return InvalidArgument("fit: got no points or an empty basis, must have >= 1 of each");
  }
  const size_t k = rows[0].size();
  // Augmented normal equations [A^T W A | A^T W y], k x (k + 1).
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<double>& row = rows[i];
    if (row.size() != k) {
      return InvalidArgument("fit: rows[" + std::to_string(i) + "] has " +
                             std::to_string(row.size()) + " basis values, must have " +
                             std::to_string(k));
    }
    const double w = weights[i];
    if (!(w >= 0) || !std::isfinite(w)) {
      return InvalidArgument("fit: weights[" + std::to_string(i) + "]: got " + std::to_string(w) +
                             ", must be a finite number >= 0");
    }
    for (size_t r = 0; r < k; ++r) {
      for (size_t c = 0; c < k; ++c) m[r][c] += w * row[r] * row[c];
      m[r][k] += w * row[r] * y[i];
    }
  }
  // Gauss-Jordan elimination with partial pivoting.
  double norm = 0;
  for (const auto& row : m)
    for (size_t c = 0; c < k; ++c) norm = std::max(norm, std::abs(row[c]));
  for (size_t col = 0; col < k; ++col) {
    size_t piv = col;
    for (size_t r = col + 1; r < k; ++r)
      if (std::abs(m[r][col]) > std::abs(m[piv][col])) piv = r;
    if (!(std::abs(m[piv][col]) > 1e-13 * norm)) {
      return InvalidArgument("fit: the normal equations are singular (x values too close)");
    }
    std::swap(m[col], m[piv]);
    for (size_t r = 0; r < k; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (size_t c = col; c <= k; ++c) m[r][c] -= f * m[col][c];
    }
  }
  std::vector<double> out(k);
  for (size_t r = 0; r < k; ++r) {
    out[r] = m[r][k] / m[r][r];
    if (!std::isfinite(out[r])) return InvalidArgument("fit: coefficients are not finite");
  }
  return out;
}

StatusOr<std::vector<double>> FitPolynomial(const std::vector<double>& x,
                                            const std::vector<double>& y, int degree,
                                            FitWeighting weighting) {
  if (x.size() != y.size()) return SizeMismatch(x.size(), y.size());
  if (degree < 0) {
    return InvalidArgument("fit: degree: got " + std::to_string(degree) + ", must be >= 0");
  }
  const bool relative = weighting == FitWeighting::kRelative;
  std::vector<double> xs, ys;
  for (size_t i = 0; i < x.size(); ++i) {
    if ((!relative || y[i] > 0) && std::isfinite(y[i]) && std::isfinite(x[i])) {
      xs.push_back(x[i]);
      ys.push_back(y[i]);
    }
  }
  const size_t need = static_cast<size_t>(degree) + 1;
  const std::set<double> distinct(xs.begin(), xs.end());
  if (distinct.size() < need) {
    return InvalidArgument("fit: got " + std::to_string(distinct.size()) + " distinct x values" +
                           (relative ? " with y > 0" : "") +
                           ", must be >= " + std::to_string(need));
  }
  // Fit in t = x / scale, then map back: sum c'_j t^j = sum (c'_j / scale^j) x^j.
  double scale = 0;
  for (double v : xs) scale = std::max(scale, std::abs(v));
  if (scale == 0) scale = 1;
  std::vector<std::vector<double>> rows(xs.size(), std::vector<double>(need));
  std::vector<double> weights(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const double t = xs[i] / scale;
    double power = 1.0;
    for (size_t j = 0; j < need; ++j) {
      rows[i][j] = power;
      power *= t;
    }
    weights[i] = relative ? 1.0 / (ys[i] * ys[i]) : 1.0;
  }
  ASSIGN_OR_RETURN(std::vector<double> c, SolveWeightedLeastSquares(rows, ys, weights));
  double scale_power = 1.0;
  for (size_t j = 0; j < need; ++j) {
    c[j] = j == 0 ? c[j] : c[j] / scale_power;
    scale_power = j == 0 ? scale : scale_power * scale;
    if (!std::isfinite(c[j])) return InvalidArgument("fit: coefficients are not finite");
  }
  return c;
}

StatusOr<std::array<double, 3>> FitQuadraticRelative(const std::vector<double>& x,
                                                     const std::vector<double>& y) {
  ASSIGN_OR_RETURN(std::vector<double> c, FitPolynomial(x, y, 2, FitWeighting::kRelative));
  return std::array<double, 3>{c[0], c[1], c[2]};
}

StatusOr<std::array<double, 3>> FitQuadraticRelativeNonNegative(const std::vector<double>& x,
                                                                const std::vector<double>& y) {
  if (x.size() != y.size()) return SizeMismatch(x.size(), y.size());
  std::vector<double> xs, ys;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] > 0 && std::isfinite(y[i]) && std::isfinite(x[i])) {
      xs.push_back(x[i]);
      ys.push_back(y[i]);
    }
  }
  if (xs.empty()) return InvalidArgument("fit: no point with y > 0");
  double scale = 0;
  for (double v : xs) scale = std::max(scale, std::abs(v));
  if (scale == 0) scale = 1;
  std::array<double, 3> best{};
  double best_err = std::numeric_limits<double>::infinity();
  for (int mask = 1; mask < 8; ++mask) {  // subsets of {1, t, t^2}
    std::vector<int> terms;
    for (int j = 0; j < 3; ++j) {
      if (mask & (1 << j)) terms.push_back(j);
    }
    std::vector<std::vector<double>> rows(xs.size());
    std::vector<double> weights(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      const double t = xs[i] / scale;
      for (int j : terms) rows[i].push_back(std::pow(t, j));
      weights[i] = 1.0 / (ys[i] * ys[i]);
    }
    StatusOr<std::vector<double>> c = SolveWeightedLeastSquares(rows, ys, weights);
    if (!c.ok()) continue;  // e.g. too few distinct x for this subset
    std::array<double, 3> f{};
    bool ok = true;
    for (size_t k = 0; k < terms.size(); ++k) {
      const double v = (*c)[k] / std::pow(scale, terms[k]);
      if (!(v >= 0) || !std::isfinite(v)) ok = false;
      f[static_cast<size_t>(terms[k])] = v;
    }
    if (!ok) continue;
    double err = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double r = (EvalPolynomial(f, xs[i]) - ys[i]) / ys[i];
      err += r * r;
    }
    if (err < best_err) {
      best_err = err;
      best = f;
    }
  }
  if (!std::isfinite(best_err)) return InvalidArgument("fit: no non-negative fit");
  return best;
}

StatusOr<std::array<double, 2>> FitLine(const std::vector<double>& x,
                                        const std::vector<double>& y) {
  if (x.size() != y.size()) return SizeMismatch(x.size(), y.size());
  const std::set<double> distinct(x.begin(), x.end());
  if (distinct.size() < 2) {
    return InvalidArgument("fit: got " + std::to_string(distinct.size()) +
                           " distinct x values, must be >= 2");
  }
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 0)) return InvalidArgument("fit: x values have no spread");
  const double m1 = sxy / sxx;
  std::array<double, 2> out{my - m1 * mx, m1};
  for (double v : out)
    if (!std::isfinite(v)) return InvalidArgument("fit: coefficients are not finite");
  return out;
}

double EvalPolynomial(const double* coefficients, int count, double x) {
  if (count <= 0) return 0;
  double acc = coefficients[count - 1];
  for (int j = count - 2; j >= 0; --j) acc = coefficients[j] + x * acc;
  return acc;
}

}  // namespace tessera::core
