// Least-squares fits of measured prices: a general weighted linear least squares over a
// basis (normal equations), polynomials in x with absolute or relative residuals, and the
// straight line.
//
//   SolveWeightedLeastSquares: coefficients c minimising sum_i w_i (sum_j c_j A_ij - y_i)^2,
//     A given row by row (A_ij = basis function j at point i), by the normal equations
//     (A^T W A) c = A^T W y, Gauss-Jordan elimination with partial pivoting.
//   FitPolynomial: c_0 + c_1 x + ... + c_d x^d, computed in t = x / max|x| (so that the
//     normal equations stay well conditioned) and mapped back. kAbsolute minimises
//     sum (fit - y)^2; kRelative minimises sum ((fit - y) / y)^2 (weight 1 / y^2) over the
//     points with y > 0. Points with a non-finite x or y are dropped.
//   FitLine: m0 + m1 x by ordinary least squares (centred sums).
//
// Degenerate input (sizes differ, too few distinct x, singular equations, non-finite
// coefficients) is InvalidArgument, e.g. "fit: got 2 distinct x values with y > 0, must be
// >= 3". Coefficients may be negative; the caller checks the fit. Stateless; thread-safe.
#pragma once

#include <array>
#include <vector>

#include "core/status.h"

namespace tessera::core {

// `rows[i]` holds point i's k basis values (every row the same size k >= 1); `y` and
// `weights` (each >= 0) one value per point.
StatusOr<std::vector<double>> SolveWeightedLeastSquares(
    const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
    const std::vector<double>& weights);

enum class FitWeighting { kAbsolute, kRelative };

// Coefficients c_0 .. c_degree (degree >= 0); needs degree + 1 distinct x.
StatusOr<std::vector<double>> FitPolynomial(const std::vector<double>& x,
                                            const std::vector<double>& y, int degree,
                                            FitWeighting weighting);

// a + b x + c x^2 minimising the relative error (FitPolynomial, degree 2, kRelative).
StatusOr<std::array<double, 3>> FitQuadraticRelative(const std::vector<double>& x,
                                                     const std::vector<double>& y);

// The same relative fit with a, b, c >= 0, so it is >= 0 for every x >= 0: the best (least
// weighted squared relative error) of the fits on each subset of the three terms whose
// coefficients all come out >= 0. For noisy points whose unconstrained fit dips below zero.
StatusOr<std::array<double, 3>> FitQuadraticRelativeNonNegative(const std::vector<double>& x,
                                                                const std::vector<double>& y);

// m0 + m1 x by ordinary least squares; needs >= 2 distinct x.
StatusOr<std::array<double, 2>> FitLine(const std::vector<double>& x, const std::vector<double>& y);

// c_0 + c_1 x + ... by Horner's rule (no clamping).
double EvalPolynomial(const double* coefficients, int count, double x);
template <size_t N>
double EvalPolynomial(const std::array<double, N>& c, double x) {
  return EvalPolynomial(c.data(), static_cast<int>(N), x);
}
inline double EvalPolynomial(const std::vector<double>& c, double x) {
  return EvalPolynomial(c.data(), static_cast<int>(c.size()), x);
}

}  // namespace tessera::core
